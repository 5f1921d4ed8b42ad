//! The ReplicaSet controller: construction, workers, and the sync (`Reconciler::sync`),
//! which follows upstream's `syncReplicaSet` step by step, with `manage_replicas` and the
//! conflict-safe status write (held, kcm-rs only, while the sync's own creates and deletes
//! are unobserved: `decide::decide_status_write`).

use std::{sync::Arc, time::Duration};

use controller_toolkit::{
    availability::availability_requeue,
    controller_ref::ControllerRefManager,
    events::{EventRecorder, EventType},
    pod_control::{PodControl, PodControlError},
    pod_predicates::{filter_active_pods, is_pod_terminating},
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync,
        OwnerRouting, PrimaryHandler, Reconciler, RetryBackoff, RuntimeOptions,
    },
    stale_reads::{StaleRead, WrittenVersions},
    write_holds::WriteHolds,
    writes::{RetryOn, StatusRetry, Writer},
};
use expectations::UidTrackingExpectations;
use informer::{CachedPod, CachedReplicaSet, Lister, SharedInformerFactory};
use k8s_openapi::{api::apps::v1::ReplicaSetStatus, jiff::Timestamp};
use kube::{Client, ResourceExt};
use tokio::time::Instant;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    decide::{
        DEFAULT_STATUS_HOLD, StatusInputs, StatusWrite, StatusWriteInputs, calculate_status,
        decide_status_write, parse_selector, status_unchanged,
    },
    manage::ManageOutcome,
    metrics::StatusWritesHeld,
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "replicaset-controller";
/// Work queue name (and `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "replicaset";
/// upstream `updateReplicaSetStatus`: two attempts, any failure re-reads the ReplicaSet.
const STATUS_RETRY: StatusRetry = StatusRetry {
    attempts: 2,
    on: RetryOn::AnyError,
};
/// No retry ceiling for ReplicaSets, as upstream.
const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::ControllerDefault,
};
/// Warning event for a ReplicaSet whose selector cannot be parsed.
pub const INVALID_SELECTOR_REASON: &str = "InvalidSelector";

/// Construction failed (the queue or an informer index could not be set up).
pub type ReplicaSetError = BuildError;

/// Why one sync failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("claiming pods: {0}")]
    Claim(#[from] controller_toolkit::controller_ref::ClaimErrors),
    #[error(transparent)]
    PodControl(#[from] PodControlError),
    #[error("updating status: {0}")]
    Status(#[source] kube::Error),
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
}

impl SyncFailure for SyncError {
    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_))
    }
}

/// The ReplicaSet controller: build it with `ReplicaSetController::new` (client, informer factory,
/// options) before the informer factory starts, then `run(workers, shutdown)` it. It is the
/// toolkit's [`Controller`], whose construction and run loop every controller shares.
pub type ReplicaSetController = Controller<ReplicaSetSync>;

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone)]
pub struct ReplicaSetOptions {
    /// Metrics, stale-read counter and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// kcm-rs only (`--replicaset-status-hold`): how long at most a status write waits for
    /// the sync's own creates and deletes to be observed; zero writes on every sync, as
    /// upstream.
    pub status_hold: Duration,
    /// Counts the held writes, when registered.
    pub held_writes: Option<StatusWritesHeld>,
}

impl Default for ReplicaSetOptions {
    /// The manager's defaults: the hold at [`DEFAULT_STATUS_HOLD`], nothing registered.
    fn default() -> Self {
        Self {
            runtime: RuntimeOptions::default(),
            status_hold: DEFAULT_STATUS_HOLD,
            held_writes: None,
        }
    }
}

/// The ReplicaSet controller's sync (upstream `syncReplicaSet`) and what it reads and writes
/// through, shared by its workers; built by [`ReplicaSetController::new`].
pub struct ReplicaSetSync {
    pub(crate) writer: Writer,
    pub(crate) replica_sets: Lister<CachedReplicaSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) expectations: Arc<UidTrackingExpectations>,
    pub(crate) pod_control: PodControl,
    pub(crate) recorder: EventRecorder,
    /// Our own status writes, so a sync never starts from an older cached copy.
    pub(crate) written: WrittenVersions,
    /// `--replicaset-status-hold`.
    status_hold: Duration,
    /// Status writes held until the sync's own creates and deletes are observed.
    status_holds: WriteHolds,
    held_writes: Option<StatusWritesHeld>,
}

impl ControllerSync for ReplicaSetSync {
    type Options = ReplicaSetOptions;

    /// Wires the ReplicaSet and pod informers (with their indexes and handlers) and the queue.
    /// Must be called inside a tokio runtime; starts no informer.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: ReplicaSetOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let replica_set_informer = informers.informer::<CachedReplicaSet>();
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_controller_indexer()?;
        // Sibling ReplicaSets (same controller) for ranking.
        replica_set_informer.add_controller_indexer()?;

        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        let expectations = Arc::new(UidTrackingExpectations::new());
        let forget = expectations.clone();
        runtime.watches(
            &replica_set_informer,
            PrimaryHandler::new(runtime.queue())
                .on_gone(move |key| forget.delete_expectations(key)),
        );
        runtime.owns(
            &pod_informer,
            OwnerRouting::new(replica_set_informer.lister(), runtime.queue())
                .with_events(expectations.clone())
                .graceful_delete_is_delete(),
        );
        let writer = runtime.writer().clone();
        let sync = ReplicaSetSync {
            replica_sets: replica_set_informer.lister(),
            pods: pod_informer.lister(),
            queue: runtime.queue().clone(),
            expectations,
            pod_control: PodControl::new(writer.clone(), runtime.recorder().clone()),
            writer,
            recorder: runtime.recorder().clone(),
            written: WrittenVersions::new("apps", "replicasets")
                .counting(options.runtime.stale_sync_skips),
            status_hold: options.status_hold,
            status_holds: WriteHolds::default(),
            held_writes: options.held_writes,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for ReplicaSetSync {
    type Error = SyncError;

    /// upstream `syncReplicaSet`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        // 1-2. Get the ReplicaSet from the cache; gone means nothing is expected any more.
        let Some(replica_set) = self.replica_sets.get_by_key(key) else {
            tracing::debug!(key, "ReplicaSet has been deleted");
            self.written.forget(key);
            self.expectations.delete_expectations(key);
            self.status_holds.release(key);
            return Ok(());
        };
        // A copy older than our own last status write would only produce a 409; the watch
        // event of that write enqueues the key again.
        self.written.check(key, &replica_set.metadata)?;

        // 3. Decide whether creates/deletes may happen before looking at pods.
        let needs_sync = self.expectations.satisfied_expectations(key);

        // 4. An unusable selector is the user's to fix: warn, and do not retry hot.
        let selector = match parse_selector(&replica_set) {
            Ok(selector) => selector,
            Err(error) => {
                tracing::warn!(key, %error, "invalid selector");
                self.recorder.record(
                    replica_set.as_ref(),
                    EventType::Warning,
                    INVALID_SELECTOR_REASON,
                    format!("Invalid selector: {error}"),
                );
                return Ok(());
            }
        };

        // 5. Candidates: pods controlled by this ReplicaSet plus the namespace's orphans.
        // kcm-rs: a sync that may create counts the creations observed from just before its
        // read, so a pod another writer made while it claimed and decided lowers the creates
        // it then awaits (the expectations observe pods inline with the cache).
        if needs_sync {
            self.expectations.begin_read(key);
        }
        let uid = replica_set.uid().unwrap_or_default();
        let candidates = self.pods.controlled_by_or_orphaned(replica_set.as_ref());

        // 6. Claim the active candidates: adopt matching orphans, release non-matching pods.
        let active = filter_active_pods(&candidates);
        let manager = ControllerRefManager::for_owner(
            self.writer.clone(),
            replica_set.as_ref(),
            selector.clone(),
        );
        let active_pods = manager.claim(&active).await.into_result()?;

        // 7. Terminating pods that are already ours (no adoption for them).
        let terminating = candidates
            .iter()
            .filter(|pod| is_pod_terminating(pod))
            .filter(|pod| {
                controller_toolkit::controller_ref::controller_of(&pod.metadata)
                    .is_some_and(|owner| owner.uid == uid)
                    && selector.selects(pod.as_ref())
            })
            .count();

        // 8. Create or delete pods, unless earlier creates/deletes are still unobserved.
        let being_deleted = replica_set.metadata.deletion_timestamp.is_some();
        let manage = if needs_sync && !being_deleted {
            self.manage_replicas(&active_pods, &replica_set, key).await
        } else {
            ManageOutcome::default()
        };

        // 9. Compute the status, even if managing failed.
        let now = Timestamp::now();
        let new_status = calculate_status(&StatusInputs {
            replica_set: &replica_set,
            active_pods: &active_pods,
            terminating,
            manage_error: manage.error.as_ref().map(ToString::to_string),
            now,
        });
        let (ready, available) = (
            new_status.ready_replicas.unwrap_or(0),
            new_status.available_replicas.unwrap_or(0),
        );

        // 10. Write it, unless (kcm-rs only) it waits for this controller's own creates and
        // deletes to be observed, so that one write carries both the new observedGeneration
        // and the counts after them.
        let decision = decide_status_write(StatusWriteInputs {
            hold_limit: self.status_hold,
            acted: manage.accepted > 0,
            unobserved_at_read: !needs_sync,
            unobserved_now: !self.expectations.satisfied_expectations(key),
            manage_failed: manage.error.is_some(),
            being_deleted,
            held_for: self.status_holds.held_for(key, Instant::now()),
        });
        match decision {
            StatusWrite::Hold(wait) => {
                self.status_holds.hold(key, Instant::now());
                if !status_unchanged(&replica_set, &new_status)
                    && let Some(held) = &self.held_writes
                {
                    held.inc();
                }
                tracing::debug!(
                    key,
                    ?wait,
                    "status write held for the sync's own pod writes"
                );
                self.queue.add_after(key.to_string(), wait);
            }
            StatusWrite::Now => {
                self.status_holds.release(key);
                let written = self
                    .update_status(&replica_set, new_status)
                    .await
                    .map_err(SyncError::Status)?;
                // 11. Remember the version we wrote.
                if let Some(written) = &written {
                    self.written.record(key, &written.metadata);
                }
            }
        }

        // 12. A failed manage step is retried with backoff.
        if let Some(error) = manage.error {
            return Err(error);
        }

        // 13. Look again when a ready pod should have turned available.
        let min_ready_seconds = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.min_ready_seconds)
            .unwrap_or(0);
        if let Some(delay) = availability_requeue(
            min_ready_seconds,
            ready,
            available,
            &active_pods,
            now,
            Timestamp::now(),
        ) {
            self.queue.add_after(key.to_string(), delay);
        }
        Ok(())
    }
}

impl ReplicaSetSync {
    /// upstream `updateReplicaSetStatus`: skip when unchanged (`None`); otherwise PUT status with the object's
    /// resourceVersion, and on failure re-read the ReplicaSet once and try again. Returns the
    /// written ReplicaSet.
    async fn update_status(
        &self,
        replica_set: &Arc<CachedReplicaSet>,
        mut new_status: ReplicaSetStatus,
    ) -> Result<Option<CachedReplicaSet>, kube::Error> {
        if status_unchanged(replica_set, &new_status) {
            return Ok(None);
        }
        new_status.observed_generation = replica_set.metadata.generation;
        self.writer
            .update_status_retrying(replica_set.as_ref(), STATUS_RETRY, |current| {
                current.status = Some(new_status.clone());
            })
            .await
            .map(Some)
    }
}
