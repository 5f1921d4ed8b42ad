//! The Deployment controller: construction, workers, and the sync (`Reconciler::sync`),
//! which follows upstream's `syncDeployment` step by step and applies the plans of the pure
//! modules: every decision is made there, this file only reads the caches, writes through the
//! API in the order each plan's contract prescribes, records events and requeues.

use std::sync::Arc;

use controller_toolkit::{
    api_errors::{NAMESPACE_TERMINATING_CAUSE, error_message, has_status_cause},
    controller_ref::{ClaimErrors, ControllerRefManager},
    events::{EventRecorder, EventType},
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync,
        OwnerRouting, PrimaryHandler, Reconciler, RetryBackoff, RuntimeOptions,
    },
    write_holds::WriteHolds,
};
use informer::{
    CachedDeployment, CachedPod, CachedReplicaSet, LabelMatcher, Lister, POD_CONTROLLER_UID_INDEX,
    SharedInformerFactory, owner_index_key,
};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    constants::{MAX_RETRIES, QUEUE_NAME},
    events::{self, Event},
    handlers::PodHandler,
    progress::check_paused_conditions,
    rollout_path::{RolloutPath, choose_rollout_path, is_being_deleted, selecting_all},
    status::FeatureGates,
    template::split_replica_sets,
    writes::Writes,
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "deployment-controller";
/// Upstream drops a Deployment key after 15 failed retries (until its next event).
const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: Some(MAX_RETRIES as usize),
    retry_backoff: RetryBackoff::ControllerDefault,
};

/// Construction failed (the queue or an informer index could not be set up).
pub type DeploymentError = BuildError;

/// Why one sync failed; the key is retried with backoff up to [`MAX_RETRIES`] times.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("deployment {key} has invalid label selector: {reason}")]
    InvalidSelector { key: String, reason: String },
    #[error("{0}")]
    Claim(#[from] ClaimErrors),
    #[error(transparent)]
    Decision(#[from] crate::Error),
    #[error("{}", error_message(.0))]
    Api(#[from] kube::Error),
    #[error(transparent)]
    StaleRead(#[from] controller_toolkit::stale_reads::StaleRead),
}

impl SyncError {
    /// Upstream forgets keys whose sync failed because the namespace is being deleted.
    fn is_namespace_terminating(&self) -> bool {
        matches!(self, SyncError::Api(error) if has_status_cause(error, NAMESPACE_TERMINATING_CAUSE))
    }
}

impl SyncFailure for SyncError {
    /// Retries (up to [`MAX_RETRIES`]) unless the namespace is being deleted (`handleErr`).
    fn retryable(&self) -> bool {
        !self.is_namespace_terminating()
    }

    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_))
    }
}

/// The Deployment controller: build it with `DeploymentController::new` (client, informer factory,
/// options) before the informer factory starts, then `run(workers, shutdown)` it. It is the
/// toolkit's [`Controller`], whose construction and run loop every controller shares.
pub type DeploymentController = Controller<DeploymentSync>;

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone, Default)]
pub struct DeploymentOptions {
    /// Metrics, stale-read counter and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// Feature gates; `Default` is upstream v1.36's.
    pub gates: FeatureGates,
}

/// The Deployment controller's syncing side, shared by its workers: the caches it reads, the
/// write layer and recorder it acts through, and the queue it requeues on. Its `Reconciler::sync`
/// (below) is upstream's `syncDeployment`; the executors in `crate::sync` are its methods.
pub struct DeploymentSync {
    pub(crate) deployments: Lister<CachedDeployment>,
    pub(crate) replica_sets: Lister<CachedReplicaSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) writes: Writes,
    pub(crate) recorder: EventRecorder,
    pub(crate) gates: FeatureGates,
    /// kcm-rs only: counts-only status changes held back to go out as one.
    pub(crate) status_holds: WriteHolds,
}

impl ControllerSync for DeploymentSync {
    type Options = DeploymentOptions;

    /// Wires the Deployment, ReplicaSet and pod informers (pod index and handlers) and the
    /// queue. Must be called inside a tokio runtime; starts no informer.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: DeploymentOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let deployment_informer = informers.informer::<CachedDeployment>();
        let replica_set_informer = informers.informer::<CachedReplicaSet>();
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_controller_indexer()?;
        replica_set_informer.add_controller_indexer()?;

        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        runtime.watches(&deployment_informer, PrimaryHandler::new(runtime.queue()));
        runtime.owns(
            &replica_set_informer,
            OwnerRouting::new(deployment_informer.lister(), runtime.queue()),
        );
        runtime.handles(
            &pod_informer,
            PodHandler {
                client: client.clone(),
                deployments: deployment_informer.lister(),
                replica_sets: replica_set_informer.lister(),
                pods: pod_informer.lister(),
                queue: runtime.queue().clone(),
            },
        );
        let sync = DeploymentSync {
            deployments: deployment_informer.lister(),
            replica_sets: replica_set_informer.lister(),
            pods: pod_informer.lister(),
            queue: runtime.queue().clone(),
            writes: Writes::new(runtime.writer().clone(), options.runtime.stale_sync_skips),
            recorder: runtime.recorder().clone(),
            gates: options.gates,
            status_holds: WriteHolds::default(),
        };
        Ok((runtime, sync))
    }
}

/// What a sync path works on once the ReplicaSets are claimed (upstream passes `d` and
/// `rsList` to each of `sync`, `rollback`, `rolloutRecreate`, `rolloutRolling` and
/// `syncStatusOnly`).
pub(crate) struct Claimed<'a> {
    /// The queue key of the Deployment.
    pub(crate) key: &'a str,
    /// The Deployment; a path that writes its status leaves the written copy here.
    pub(crate) d: &'a mut CachedDeployment,
    /// The ReplicaSets it owns after the claim.
    pub(crate) rs_list: &'a [Arc<CachedReplicaSet>],
}

/// A Deployment's claimed ReplicaSets resolved into the new one and the old ones.
pub(crate) struct Resolved {
    pub(crate) new: Option<Arc<CachedReplicaSet>>,
    pub(crate) old: Vec<Arc<CachedReplicaSet>>,
}

impl Resolved {
    /// The old ReplicaSets, and those followed by the new one (upstream's `allRSs`).
    pub(crate) fn old_and_all(&self) -> (Vec<&CachedReplicaSet>, Vec<&CachedReplicaSet>) {
        let old = borrowed(&self.old);
        let all = old_and_new(&old, self.new.as_deref());
        (old, all)
    }
}

pub(crate) fn borrowed(rss: &[Arc<CachedReplicaSet>]) -> Vec<&CachedReplicaSet> {
    rss.iter().map(AsRef::as_ref).collect()
}

/// old + new, the order upstream's `allRSs` has.
pub(crate) fn old_and_new<'a>(
    old: &[&'a CachedReplicaSet],
    new: Option<&'a CachedReplicaSet>,
) -> Vec<&'a CachedReplicaSet> {
    old.iter().copied().chain(new).collect()
}

impl Reconciler for DeploymentSync {
    type Error = SyncError;

    /// upstream `syncDeployment`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        // 1. Get the Deployment from the cache and work on a copy.
        let Some(cached) = self.deployments.get_by_key(key) else {
            tracing::debug!(key, "deployment has been deleted");
            self.writes.forget_deployment(key);
            self.status_holds.release(key);
            return Ok(());
        };
        let mut d = cached.as_ref().clone();

        // 2. An empty selector would select every pod: warn and only record the generation.
        if let Some(selecting) = selecting_all(&d) {
            self.record(&d, selecting.event);
            if let Some(status) = selecting.status {
                d.status = Some(status);
                if let Err(error) = self.writes.update_status(&d).await {
                    tracing::debug!(key, %error, "updating observedGeneration");
                }
            }
            return Ok(());
        }

        // 3. Claim the namespace's ReplicaSets (adopt matching orphans, release the rest).
        let rs_list = self.claim_replica_sets(&d, key).await?;
        // Copies older than our own last writes would only produce 409s; the watch events of
        // those writes enqueue the key again (upstream's v1.36 stale-read protection).
        self.writes.check_fresh(key, &cached, &rs_list)?;

        // 4. The pod map is read only by Recreate, which builds it (`pod_map`).

        // 5. A Deployment being deleted only gets its status synced.
        if is_being_deleted(&d) {
            let claimed = Claimed {
                key,
                d: &mut d,
                rs_list: &rs_list,
            };
            return self.sync_status_only(claimed).await;
        }

        // 6. Paused/resumed Progressing condition.
        if let Some(status) = check_paused_conditions(&d, Timestamp::now()) {
            d.status = Some(status);
            d = self.writes.update_status(&d).await?;
        }

        // 7-10. Paused, rollback, scaling event, or a rollout by strategy.
        let path = {
            let list = borrowed(&rs_list);
            let split = split_replica_sets(&d, &list);
            choose_rollout_path(&d, split.new, &split.old)?
        };
        let claimed = Claimed {
            key,
            d: &mut d,
            rs_list: &rs_list,
        };
        match path {
            RolloutPath::Sync => self.sync_scaling_or_paused(claimed).await,
            RolloutPath::Rollback => self.rollback(claimed).await,
            RolloutPath::Recreate => self.rollout_recreate(claimed).await,
            RolloutPath::RollingUpdate => self.rollout_rolling(claimed).await,
        }
    }
}

impl DeploymentSync {
    /// Step 3: the ReplicaSets of the namespace, claimed with the Deployment's selector.
    /// Upstream lists the whole namespace; only the ReplicaSets this Deployment controls and
    /// the orphans can be claimed or released, so those come from the controller-UID index.
    pub(crate) async fn claim_replica_sets(
        &self,
        d: &CachedDeployment,
        key: &str,
    ) -> Result<Vec<Arc<CachedReplicaSet>>, SyncError> {
        let label_selector = d
            .spec
            .as_ref()
            .map(|spec| spec.selector.decode())
            .unwrap_or_default();
        let selector =
            LabelMatcher::try_from(label_selector).map_err(|error| SyncError::InvalidSelector {
                key: key.to_owned(),
                reason: error.to_string(),
            })?;
        let candidates = self.replica_sets.controlled_by_or_orphaned(d);
        let manager = ControllerRefManager::for_owner(self.writes.writer().clone(), d, selector);
        Ok(manager.claim(&candidates).await.into_result()?)
    }

    /// Step 4: pods controlled by one of the claimed ReplicaSets (found through the pod
    /// controller-UID index, no selector check, as upstream v1.3x).
    pub(crate) fn pod_map(&self, rs_list: &[Arc<CachedReplicaSet>]) -> Vec<Arc<CachedPod>> {
        rs_list
            .iter()
            .flat_map(|rs| {
                self.pods
                    .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(rs.as_ref()))
            })
            .collect()
    }

    /// Records one of upstream's events on the Deployment.
    pub(crate) fn record(&self, d: &CachedDeployment, event: Event) {
        let event_type = match event.type_ {
            events::EventType::Normal => EventType::Normal,
            events::EventType::Warning => EventType::Warning,
        };
        self.recorder
            .record(d, event_type, event.reason, event.message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_terminating_is_read_from_the_status_cause() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "replicasets.apps \"web-1\" is forbidden: unable to create new content in namespace gone because it is being terminated",
            "details": {"causes": [{"reason": "NamespaceTerminating", "message": "namespace gone is being terminated", "field": "metadata.namespace"}]}
        }))
        .expect("status");
        let terminating = SyncError::Api(kube::Error::Api(Box::new(status)));
        assert!(terminating.is_namespace_terminating());
        assert!(!terminating.retryable(), "handleErr forgets such keys");
        let other = SyncError::Decision(crate::Error::UnexpectedStrategy("Canary".to_owned()));
        assert!(!other.is_namespace_terminating());
        assert!(other.retryable());
        assert_eq!(
            other.to_string(),
            "unexpected deployment strategy type: Canary"
        );
    }
}
