//! The controller's API writes: every PUT carries the resourceVersion of the object it was
//! computed from, so a concurrent change answers 409 instead of being overwritten. Only the
//! Deployment status write re-reads and retries once on a conflict (like the ReplicaSet
//! controller's status write); every other conflict is the sync's error and the key is retried
//! with backoff on fresh caches, as upstream.
//!
//! The versions our writes returned are remembered ([`WrittenVersions`]): a sync whose cached
//! Deployment or ReplicaSets are older than our own last writes of them is deferred
//! ([`Writes::check_fresh`]), since every PUT it made would only answer 409. So is a sync
//! whose claimed ReplicaSets lack one we created for the Deployment ([`PendingCreates`]): it
//! would not find its new ReplicaSet and POST it again, only to get 409 AlreadyExists.

use std::sync::Arc;

use controller_toolkit::{
    api_errors::is_not_found,
    stale_reads::{PendingCreates, StaleRead, StaleSyncSkips, WrittenVersions},
    writes::{RetryOn, StatusRetry, Writer},
};
use informer::{CachedDeployment, CachedReplicaSet, object_key};

use crate::constants::REVISION_ANNOTATION;

/// Typed writes against one client (the controller's, so its user agent is on every request).
#[derive(Clone)]
pub(crate) struct Writes {
    writer: Writer,
    deployments_written: Arc<WrittenVersions>,
    replica_sets_written: Arc<WrittenVersions>,
    /// ReplicaSets created and not yet among the claimed ones, by the key of their Deployment.
    replica_sets_created: Arc<PendingCreates>,
    /// Counts deferred syncs (`deployment_controller_stale_sync_skips_total`).
    skips: Option<StaleSyncSkips>,
}

/// A status PUT that answers 409 is tried once more on a fresh read (kcm-rs: the Deployment
/// controller races the ReplicaSet controller's writes to the same ReplicaSets' owners).
const STATUS_RETRY: StatusRetry = StatusRetry {
    attempts: 2,
    on: RetryOn::Conflict,
};

impl Writes {
    pub(crate) fn new(writer: Writer, skips: Option<StaleSyncSkips>) -> Self {
        Self {
            writer,
            deployments_written: Arc::new(WrittenVersions::new("apps", "deployments")),
            replica_sets_written: Arc::new(WrittenVersions::new("apps", "replicasets")),
            replica_sets_created: Arc::new(PendingCreates::new("apps", "replicasets")),
            skips,
        }
    }

    /// Whether the cached Deployment `d` (key `key`) and its claimed ReplicaSets `rss` are at
    /// least as new as our own last writes of them, and `rss` holds the ReplicaSet we last
    /// created for `d`.
    pub(crate) fn check_fresh(
        &self,
        key: &str,
        d: &CachedDeployment,
        rss: &[Arc<CachedReplicaSet>],
    ) -> Result<(), StaleRead> {
        let fresh = self
            .deployments_written
            .check(key, &d.metadata)
            .and_then(|()| {
                self.replica_sets_created
                    .check(key, rss.iter().map(|rs| &*rs.metadata))
            })
            .and_then(|()| {
                rss.iter().try_for_each(|rs| {
                    self.replica_sets_written
                        .check(&object_key(rs.as_ref()), &rs.metadata)
                })
            });
        if let (Err(stale), Some(skips)) = (&fresh, &self.skips) {
            skips.observe(stale);
        }
        fresh
    }

    /// The write layer itself (for claims, whose adopt/release patches it sends).
    pub(crate) fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Forgets the Deployment `key` (deleted).
    pub(crate) fn forget_deployment(&self, key: &str) {
        self.deployments_written.forget(key);
        self.replica_sets_created.forget(key);
    }

    fn record_deployment(
        &self,
        written: Result<CachedDeployment, kube::Error>,
    ) -> Result<CachedDeployment, kube::Error> {
        if let Ok(d) = &written {
            self.deployments_written.record(&object_key(d), &d.metadata);
        }
        written
    }

    fn record_replica_set(
        &self,
        written: Result<CachedReplicaSet, kube::Error>,
    ) -> Result<CachedReplicaSet, kube::Error> {
        if let Ok(rs) = &written {
            self.replica_sets_written
                .record(&object_key(rs), &rs.metadata);
        }
        written
    }

    /// PUT `d` through the status subresource (its status and, on a real API server, its
    /// revision annotation). On 409 the Deployment is re-read and the status and revision
    /// annotation are put on the fresh copy once.
    pub(crate) async fn update_status(
        &self,
        d: &CachedDeployment,
    ) -> Result<CachedDeployment, kube::Error> {
        let revision = d.metadata.annotations.get(REVISION_ANNOTATION);
        let written = self
            .writer
            .update_status_retrying(d, STATUS_RETRY, |current| {
                current.status.clone_from(&d.status);
                if let Some(revision) = revision
                    && current.metadata.annotations.get(REVISION_ANNOTATION) != Some(revision)
                {
                    current.metadata.annotations.edit(|annotations| {
                        annotations.insert(REVISION_ANNOTATION.to_owned(), revision.to_owned())
                    });
                }
            })
            .await;
        self.record_deployment(written)
    }

    /// PUT the whole Deployment (rollback).
    pub(crate) async fn update_deployment(
        &self,
        d: &CachedDeployment,
    ) -> Result<CachedDeployment, kube::Error> {
        let written = self.writer.update(d, "rollback").await;
        self.record_deployment(written)
    }

    /// POST a new ReplicaSet for the Deployment `deployment_key`.
    pub(crate) async fn create_replica_set(
        &self,
        deployment_key: &str,
        rs: &CachedReplicaSet,
    ) -> Result<CachedReplicaSet, kube::Error> {
        let created = self.writer.create(rs, "new replica set").await;
        if let Ok(created) = &created {
            self.replica_sets_created
                .record(deployment_key, &created.metadata);
        }
        created
    }

    /// PUT a ReplicaSet (scale, annotations, minReadySeconds).
    pub(crate) async fn update_replica_set(
        &self,
        rs: &CachedReplicaSet,
        reason: &'static str,
    ) -> Result<CachedReplicaSet, kube::Error> {
        let written = self.writer.update(rs, reason).await;
        self.record_replica_set(written)
    }

    /// DELETE an old ReplicaSet (history cleanup); NotFound counts as done.
    pub(crate) async fn delete_replica_set(
        &self,
        rs: &CachedReplicaSet,
    ) -> Result<(), kube::Error> {
        self.replica_sets_written.forget(&object_key(rs));
        match self
            .writer
            .delete::<CachedReplicaSet>(&rs.metadata, false, "cleanup history")
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if is_not_found(&error) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica_set::test_support::{rolling, rs};
    use informer::CompactLabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// A ReplicaSet `name` of the test Deployment, as the controller would POST it.
    fn planned(name: &str) -> CachedReplicaSet {
        let mut planned = rs(name, 0, 2, 0);
        planned.metadata.uid = None;
        planned.metadata.creation_timestamp = None;
        planned.status = None;
        if let Some(spec) = planned.spec.as_mut() {
            let mut selector = spec.selector.decode();
            selector.match_labels = Some([("app".to_owned(), "web".to_owned())].into());
            spec.selector = CompactLabelSelector::encode(&selector).expect("a selector encodes");
        }
        planned
    }

    #[tokio::test]
    async fn a_sync_waits_until_its_claimed_replica_sets_hold_the_one_it_created() {
        let sim = sim::SimCluster::start(sim::SimConfig::default())
            .await
            .expect("sim starts");
        let writes = Writes::new(Writer::new(sim.client()), None);
        let d = rolling(2, IntOrString::Int(1), IntOrString::Int(0));
        let created = Arc::new(
            writes
                .create_replica_set("default/web", &planned("web-1"))
                .await
                .expect("created"),
        );
        let other = Arc::new(rs("web-0", 0, 0, 0));

        let stale = writes.check_fresh("default/web", &d, std::slice::from_ref(&other));
        assert!(
            stale.is_err(),
            "the cache does not hold the new ReplicaSet yet"
        );
        assert_eq!(
            writes.check_fresh("default/other", &d, &[]),
            Ok(()),
            "other Deployments are not held back"
        );
        assert_eq!(
            writes.check_fresh("default/web", &d, &[other, created]),
            Ok(())
        );
        assert_eq!(
            writes.check_fresh("default/web", &d, &[]),
            Ok(()),
            "a satisfied record is dropped"
        );

        writes
            .create_replica_set("default/web", &planned("web-2"))
            .await
            .expect("created");
        writes.forget_deployment("default/web");
        assert_eq!(
            writes.check_fresh("default/web", &d, &[]),
            Ok(()),
            "a deleted Deployment's record is gone"
        );
    }
}
