//! Stale-read protection for a controller's own writes (upstream's v1.36
//! "consistency store"): remember the resourceVersion each of our writes of an object returned,
//! and refuse to sync from a cached copy that is older than that write.
//!
//! Why: informer caches lag behind the API server. A sync that starts right after our own
//! status write would compute from (and PUT with) the version before that write; the PUT then
//! fails with 409 and costs a GET and a second PUT, or, for a field such as `collisionCount`,
//! would write back an older value. Deferring the sync until the cache has caught up costs
//! nothing: the watch event of our own write enqueues the key again.
//!
//! Only writes of the object itself are tracked (pods are guarded by expectations). Versions are
//! compared only when both parse as integers, as upstream compares them only when comparable;
//! a record for a different UID (a deleted namesake) is ignored. Deferred syncs are counted in
//! `<controller>_stale_sync_skips_total{group,resource}` ([`StaleSyncSkips`]).
//!
//! Dependents are guarded two ways: [`DependentWrites`] compares the dependents' informer's
//! last synced resourceVersion with our writes of them, and [`PendingCreates`] waits until the
//! owner's cached dependents include the one we created (exact even while that informer has
//! seen no watch event yet, when its last synced version is unknown).

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use prometheus::{IntCounterVec, Opts, Registry};

/// The cached object is older than one we wrote.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "read version: {read} is not as new as written version: {wrote} for group resource {}",
    group_resource(.resource, .group)
)]
pub struct StaleRead {
    /// The version in the cache.
    pub read: String,
    /// The version we wrote.
    pub wrote: String,
    /// The written objects' API group, e.g. `apps`.
    pub group: &'static str,
    /// The written objects' resource, e.g. `replicasets`.
    pub resource: &'static str,
}

/// `resource.group`, or just `resource` for the core group (as `schema.GroupResource` prints).
fn group_resource(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// `<subsystem>_stale_sync_skips_total{group,resource}` (ALPHA, v1.36): syncs deferred because
/// the cache had not caught up with the controller's own writes.
#[derive(Debug, Clone)]
pub struct StaleSyncSkips(IntCounterVec);

impl StaleSyncSkips {
    /// Creates the counter under `subsystem` (e.g. `replicaset_controller`) and registers it.
    pub fn register(registry: &Registry, subsystem: &str) -> Result<Self, prometheus::Error> {
        let counter = IntCounterVec::new(
            Opts::new(
                "stale_sync_skips_total",
                "[ALPHA] Number of syncs skipped because the informer cache had not caught up with the controller's own writes",
            )
            .subsystem(subsystem),
            &["group", "resource"],
        )?;
        registry.register(Box::new(counter.clone()))?;
        Ok(Self(counter))
    }

    /// Counts one deferred sync.
    pub fn observe(&self, stale: &StaleRead) {
        self.0
            .with_label_values(&[stale.group, stale.resource])
            .inc();
    }
}

/// The version we last wrote of one object, with the UID it was written for.
#[derive(Debug)]
struct Written {
    uid: String,
    resource_version: String,
}

/// Written versions of one kind of object, by object key (`namespace/name`).
#[derive(Debug)]
pub struct WrittenVersions {
    group: &'static str,
    resource: &'static str,
    written: Mutex<HashMap<String, Written>>,
    skips: Option<StaleSyncSkips>,
}

impl WrittenVersions {
    /// An empty record for objects of `resource` in API `group` (for the error and metric).
    pub fn new(group: &'static str, resource: &'static str) -> Self {
        Self {
            group,
            resource,
            written: Mutex::new(HashMap::new()),
            skips: None,
        }
    }

    /// Counts every stale read found by [`check`](Self::check) in `skips`, when the manager
    /// registered the counter (`RuntimeOptions::stale_sync_skips`).
    pub fn counting(mut self, skips: Option<StaleSyncSkips>) -> Self {
        self.skips = skips;
        self
    }

    /// Records that our write of object `key` returned `written` (its UID and new version).
    pub fn record(&self, key: &str, written: &ObjectMeta) {
        let (Some(uid), Some(resource_version)) =
            (written.uid.as_ref(), written.resource_version.as_ref())
        else {
            return;
        };
        self.written.lock().insert(
            key.to_owned(),
            Written {
                uid: uid.clone(),
                resource_version: resource_version.clone(),
            },
        );
    }

    /// Forgets object `key` (deleted or gone).
    pub fn forget(&self, key: &str) {
        self.written.lock().remove(key);
    }

    /// Whether the cached copy `cached` of object `key` is at least as new as our last write of
    /// it. A satisfied (or no longer applicable) record is dropped.
    pub fn check(&self, key: &str, cached: &ObjectMeta) -> Result<(), StaleRead> {
        let mut written = self.written.lock();
        let Some(last) = written.get(key) else {
            return Ok(());
        };
        let read = cached.resource_version.as_deref().unwrap_or_default();
        if cached.uid.as_deref() == Some(last.uid.as_str())
            && let (Ok(read_version), Ok(wrote_version)) =
                (read.parse::<u64>(), last.resource_version.parse::<u64>())
            && read_version < wrote_version
        {
            let stale = StaleRead {
                read: read.to_owned(),
                wrote: last.resource_version.clone(),
                group: self.group,
                resource: self.resource,
            };
            if let Some(skips) = &self.skips {
                skips.observe(&stale);
            }
            return Err(stale);
        }
        written.remove(key);
        Ok(())
    }
}

/// The highest resourceVersion our writes of an owner's dependents (its pods) returned, per
/// owner key; a sync is deferred until the dependents' informer has applied a watch event at
/// least that new (upstream's consistency store for group-resource `pods`). Without it a sync right after
/// a pod create can miss that pod in the cache and create it again (409 AlreadyExists).
#[derive(Debug)]
pub struct DependentWrites {
    group: &'static str,
    resource: &'static str,
    written: Mutex<HashMap<String, u64>>,
}

impl DependentWrites {
    /// An empty record for dependents of `resource` in API `group` (`""` for core).
    pub fn new(group: &'static str, resource: &'static str) -> Self {
        Self {
            group,
            resource,
            written: Mutex::new(HashMap::new()),
        }
    }

    /// Records that a write of a dependent of `owner_key` returned `written`.
    pub fn record(&self, owner_key: &str, written: &ObjectMeta) {
        let Some(version) = written
            .resource_version
            .as_deref()
            .and_then(|version| version.parse::<u64>().ok())
        else {
            return;
        };
        let mut records = self.written.lock();
        let highest = records.entry(owner_key.to_owned()).or_default();
        *highest = (*highest).max(version);
    }

    /// Forgets `owner_key` (deleted or gone).
    pub fn forget(&self, owner_key: &str) {
        self.written.lock().remove(owner_key);
    }

    /// Whether the informer, whose last synced version is `last_synced` (`None` when unknown,
    /// which is not checked), has applied every write recorded for `owner_key`. A satisfied
    /// record is dropped.
    pub fn check(&self, owner_key: &str, last_synced: Option<u64>) -> Result<(), StaleRead> {
        let mut records = self.written.lock();
        let (Some(&wrote), Some(read)) = (records.get(owner_key), last_synced) else {
            return Ok(());
        };
        if read < wrote {
            return Err(StaleRead {
                read: read.to_string(),
                wrote: wrote.to_string(),
                group: self.group,
                resource: self.resource,
            });
        }
        records.remove(owner_key);
        Ok(())
    }
}

/// The dependent each owner last created, until a sync of the owner finds it among the
/// dependents its cache holds: a sync before that would not find it and create it again, only
/// to get 409 AlreadyExists. A record is dropped once satisfied, when the owner is forgotten,
/// or after upstream's expectations timeout (5 minutes), should the dependent be deleted before
/// the cache ever held it.
#[derive(Debug)]
pub struct PendingCreates {
    group: &'static str,
    resource: &'static str,
    timeout: Duration,
    pending: Mutex<HashMap<String, PendingCreate>>,
}

#[derive(Debug)]
struct PendingCreate {
    uid: String,
    resource_version: String,
    created: Instant,
}

impl PendingCreates {
    /// An empty record for dependents of `resource` in API `group` (for the error and metric).
    pub fn new(group: &'static str, resource: &'static str) -> Self {
        Self {
            group,
            resource,
            timeout: expectations::EXPECTATIONS_TIMEOUT,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// The same, with records expiring after `timeout` instead of 5 minutes.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Records that we created `created` (a dependent) for the owner `owner_key`.
    pub fn record(&self, owner_key: &str, created: &ObjectMeta) {
        let Some(uid) = created.uid.clone() else {
            return;
        };
        self.pending.lock().insert(
            owner_key.to_owned(),
            PendingCreate {
                uid,
                resource_version: created.resource_version.clone().unwrap_or_default(),
                created: Instant::now(),
            },
        );
    }

    /// Forgets the owner `owner_key` (deleted or gone).
    pub fn forget(&self, owner_key: &str) {
        self.pending.lock().remove(owner_key);
    }

    /// Whether the owner's `cached` dependents include the one we last created for it (or the
    /// record expired). A satisfied record is dropped.
    pub fn check<'a>(
        &self,
        owner_key: &str,
        cached: impl IntoIterator<Item = &'a ObjectMeta>,
    ) -> Result<(), StaleRead> {
        let mut pending = self.pending.lock();
        let Some(create) = pending.get(owner_key) else {
            return Ok(());
        };
        let held = cached
            .into_iter()
            .any(|meta| meta.uid.as_deref() == Some(create.uid.as_str()));
        if held || create.created.elapsed() > self.timeout {
            pending.remove(owner_key);
            return Ok(());
        }
        Err(StaleRead {
            read: "none".to_owned(),
            wrote: create.resource_version.clone(),
            group: self.group,
            resource: self.resource,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uid: &str, resource_version: &str) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.to_owned()),
            resource_version: Some(resource_version.to_owned()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn stale_until_the_cache_catches_up() {
        let registry = Registry::new();
        let skips = StaleSyncSkips::register(&registry, "replicaset_controller").unwrap();
        let versions = WrittenVersions::new("apps", "replicasets").counting(Some(skips));
        assert_eq!(versions.check("ns/web", &meta("u1", "5")), Ok(()));
        versions.record("ns/web", &meta("u1", "10"));
        let stale = versions.check("ns/web", &meta("u1", "9"));
        assert_eq!(
            stale,
            Err(StaleRead {
                read: "9".into(),
                wrote: "10".into(),
                group: "apps",
                resource: "replicasets",
            })
        );
        assert_eq!(
            stale.unwrap_err().to_string(),
            "read version: 9 is not as new as written version: 10 for group resource replicasets.apps"
        );
        assert_eq!(versions.check("ns/web", &meta("u1", "10")), Ok(()));
        // Satisfied records are dropped.
        assert_eq!(versions.check("ns/web", &meta("u1", "1")), Ok(()));
        let families = registry.gather();
        let skips = families
            .iter()
            .find(|family| family.name() == "replicaset_controller_stale_sync_skips_total")
            .expect("registered");
        let metric = &skips.get_metric()[0];
        let labels: Vec<(&str, &str)> = metric
            .get_label()
            .iter()
            .map(|label| (label.name(), label.value()))
            .collect();
        assert_eq!(labels, vec![("group", "apps"), ("resource", "replicasets")]);
        assert_eq!(metric.get_counter().value(), 1.0);
    }

    #[test]
    fn other_uids_incomparable_versions_and_forgotten_keys_are_ignored() {
        let versions = WrittenVersions::new("apps", "statefulsets");
        let cases = [
            ("namesake with another UID", meta("u2", "3")),
            ("incomparable version", meta("u1", "abc")),
            (
                "no version",
                ObjectMeta {
                    uid: Some("u1".into()),
                    ..ObjectMeta::default()
                },
            ),
        ];
        for (case, cached) in cases {
            versions.record("ns/web", &meta("u1", "10"));
            assert_eq!(versions.check("ns/web", &cached), Ok(()), "{case}");
        }
        versions.record("ns/web", &meta("u1", "10"));
        versions.forget("ns/web");
        assert_eq!(versions.check("ns/web", &meta("u1", "3")), Ok(()));
    }

    #[test]
    fn dependents_are_stale_until_the_informer_applied_the_highest_write() {
        let pods = DependentWrites::new("", "pods");
        let written = |version: &str| meta("p", version);
        assert_eq!(pods.check("ns/web", Some(1)), Ok(()));
        pods.record("ns/web", &written("12"));
        pods.record("ns/web", &written("10"));
        assert_eq!(
            pods.check("ns/web", Some(11))
                .map_err(|stale| stale.to_string()),
            Err(
                "read version: 11 is not as new as written version: 12 for group resource pods"
                    .to_owned()
            )
        );
        // Unknown (just relisted): not checked, and the record stays.
        assert_eq!(pods.check("ns/web", None), Ok(()));
        assert!(pods.check("ns/web", Some(11)).is_err());
        assert_eq!(pods.check("ns/web", Some(12)), Ok(()));
        // Satisfied records are dropped; forgotten ones too.
        assert_eq!(pods.check("ns/web", Some(1)), Ok(()));
        pods.record("ns/db", &written("20"));
        pods.forget("ns/db");
        assert_eq!(pods.check("ns/db", Some(1)), Ok(()));
    }

    #[test]
    fn writes_without_uid_or_version_are_not_recorded() {
        let versions = WrittenVersions::new("apps", "deployments");
        versions.record("ns/web", &ObjectMeta::default());
        assert_eq!(versions.check("ns/web", &meta("u1", "1")), Ok(()));
    }

    #[test]
    fn a_pending_create_holds_its_owner_back_until_cached() {
        let pending = PendingCreates::new("apps", "replicasets");
        let created = meta("rs-2", "12");
        let older = meta("rs-1", "7");
        pending.record("ns/web", &created);
        assert_eq!(
            pending.check("ns/web", [&older]),
            Err(StaleRead {
                read: "none".to_owned(),
                wrote: "12".to_owned(),
                group: "apps",
                resource: "replicasets",
            })
        );
        assert_eq!(
            pending.check("ns/other", []),
            Ok(()),
            "only its owner waits"
        );
        assert_eq!(pending.check("ns/web", [&older, &created]), Ok(()));
        assert_eq!(
            pending.check("ns/web", []),
            Ok(()),
            "a satisfied record is dropped"
        );

        pending.record("ns/web", &meta("rs-3", "15"));
        pending.forget("ns/web");
        assert_eq!(
            pending.check("ns/web", []),
            Ok(()),
            "a forgotten owner is free"
        );
    }

    #[test]
    fn a_pending_create_expires() {
        let pending =
            PendingCreates::new("apps", "controllerrevisions").with_timeout(Duration::ZERO);
        pending.record("ns/web", &meta("cr-1", "3"));
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(
            pending.check("ns/web", []),
            Ok(()),
            "a dependent deleted before the cache held it blocks its owner no longer"
        );
    }
}
