//! What the Job sync's modules share: the machinery every step writes and records through
//! ([`Shared`]), the counters a sync carries from step to step ([`PodCounts`]), why a sync
//! fails ([`SyncError`]) and how a Job key is enqueued.
//!
//! These live apart from `controller.rs` so that the steps (`manage.rs`, `tracking.rs`,
//! `orphans.rs`) and the handlers import this module and never the controller, and the
//! controller imports them: no two modules import each other.

use std::{sync::Arc, time::Duration};

use controller_toolkit::api_errors::is_not_found;
use controller_toolkit::{
    events::EventRecorder,
    pod_control::{PodControl, PodControlError},
    runtime::{ControllerRuntime, RuntimeOptions},
    stale_reads::{DependentWrites, StaleRead, StaleSyncSkips, WrittenVersions},
    writes::Writer,
};
use expectations::UidTrackingExpectations;
use informer::CachedPod;
use parking_lot::Mutex;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    decide::{backoff::BackoffStore, spec::JOB_TRACKING_FINALIZER},
    expectations::{FinalizerExpectations, FinishedJobs},
    metrics::JobMetrics,
};

/// `SyncJobBatchPeriod`: the delay of every batched enqueue (pod events), so a burst of pod
/// changes of one Job is one sync; also the shortest requeue after a pod failure.
pub const SYNC_JOB_BATCH_PERIOD: Duration = Duration::from_secs(1);
/// `DefaultJobApiBackOff`: the first retry of a failed sync.
pub const DEFAULT_JOB_API_BACKOFF: Duration = Duration::from_secs(1);
/// `MaxJobApiBackOff`: the longest retry of a failed sync.
pub const MAX_JOB_API_BACKOFF: Duration = Duration::from_secs(60);

/// Why one sync failed; the key is retried with backoff. Messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The caches have not caught up with the controller's own writes (deferred, counted).
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
    /// The key is not `namespace/name`.
    #[error("invalid job key {0:?}: either namespace or name is missing")]
    InvalidKey(String),
    /// The selector does not convert.
    #[error("couldn't convert Job selector: {0}")]
    Selector(String),
    /// Claiming the pods failed.
    #[error("{0}")]
    Claim(#[from] controller_toolkit::controller_ref::ClaimErrors),
    /// Creating or deleting pods failed (the first error).
    #[error(transparent)]
    Pods(#[from] PodControlError),
    /// Removing the finalizer of a pod to delete failed (the pod is not deleted).
    #[error("removing completion finalizer: {0}")]
    RemoveCompletionFinalizer(#[source] kube::Error),
    /// Removing a tracking finalizer failed.
    #[error("removing tracking finalizer: {0}")]
    RemoveFinalizer(#[source] kube::Error),
    /// A status write failed.
    #[error("tracking status: {context}: {source}")]
    Status {
        /// What the write was for (`adding uncounted pods to status`, `removing uncounted pods
        /// from status`).
        context: &'static str,
        /// The failure.
        source: kube::Error,
    },
    /// An orphan key does not parse.
    #[error("{0}")]
    OrphanKey(String),
}

impl SyncFailure for SyncError {
    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_))
    }
}

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone, Default)]
pub struct JobOptions {
    /// Metrics, stale-read counter and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// The `job_controller_*` families, when registered.
    pub metrics: Option<JobMetrics>,
}

/// What every step of a Job sync writes and records through, shared by the workers.
pub struct Shared {
    /// Every API write.
    pub writer: Writer,
    /// Pod creates and deletes, with their events.
    pub pod_control: PodControl,
    /// The controller's events.
    pub recorder: EventRecorder,
    /// The Job queue.
    pub queue: RateLimitingQueue<String>,
    /// The orphan-pod queue (`job_orphan_pod`).
    pub orphan_queue: RateLimitingQueue<String>,
    /// Pod creations (counted) and deletions (by pod) not yet observed, per Job.
    pub expectations: Arc<UidTrackingExpectations>,
    /// Finalizer removals not yet observed, per Job.
    pub finalizers: Arc<FinalizerExpectations>,
    /// Jobs written finished whose copy in the cache is not.
    pub finished_jobs: Arc<FinishedJobs>,
    /// The pod-failure backoff records, per Job.
    pub backoff: Arc<Mutex<BackoffStore>>,
    /// The `job_controller_*` families, when registered.
    pub metrics: Option<JobMetrics>,
    /// Our status writes per Job: a sync waits until the cache holds them.
    pub written: WrittenVersions,
    /// Our pod writes per Job: a sync waits until the pod cache has applied them.
    pub pod_writes: DependentWrites,
    /// Counts the syncs deferred for pods.
    pub dependent_skips: Option<StaleSyncSkips>,
}

impl Shared {
    /// The machinery of a controller built on `runtime` (its queue, writer and recorder), with
    /// `orphan_queue` and the metrics and stale-read counter of `options`.
    pub fn new(
        runtime: &ControllerRuntime,
        orphan_queue: RateLimitingQueue<String>,
        options: &JobOptions,
    ) -> Self {
        let writer = runtime.writer().clone();
        Self {
            pod_control: PodControl::new(writer.clone(), runtime.recorder().clone()),
            recorder: runtime.recorder().clone(),
            writer,
            queue: runtime.queue().clone(),
            orphan_queue,
            expectations: Arc::new(UidTrackingExpectations::new()),
            finalizers: Arc::new(FinalizerExpectations::new()),
            finished_jobs: Arc::new(FinishedJobs::new()),
            backoff: Arc::new(Mutex::new(BackoffStore::new())),
            metrics: options.metrics.clone(),
            written: WrittenVersions::new("batch", "jobs")
                .counting(options.runtime.stale_sync_skips.clone()),
            pod_writes: DependentWrites::new("", "pods"),
            dependent_skips: options.runtime.stale_sync_skips.clone(),
        }
    }

    /// `enqueueSyncJobWithDelay`: `key` after `delay`, at least [`SYNC_JOB_BATCH_PERIOD`].
    pub fn enqueue_with_delay(&self, key: &str, delay: Duration) {
        self.queue
            .add_after(key.to_owned(), delay.max(SYNC_JOB_BATCH_PERIOD));
    }

    /// The pods' stale-read check, counted in `job_controller_stale_sync_skips_total`.
    pub fn check_pod_writes(&self, key: &str, last_synced: Option<u64>) -> Result<(), SyncError> {
        self.pod_writes.check(key, last_synced).map_err(|stale| {
            if let Some(skips) = &self.dependent_skips {
                skips.observe(&stale);
            }
            stale.into()
        })
    }

    /// `removeTrackingFinalizerPatch` sent through `podControl.PatchPod`: removes the tracking
    /// finalizer from `pod` (a strategic-merge `$deleteFromPrimitiveList`, so no other
    /// finalizer is touched and no resourceVersion is needed). A pod already gone counts as
    /// done. The write is recorded for the stale-read check of the Job `key`, if the pod has
    /// one (an orphan has none).
    pub async fn remove_tracking_finalizer(
        &self,
        key: Option<&str>,
        pod: &CachedPod,
    ) -> Result<(), kube::Error> {
        let patch = serde_json::json!({
            "metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}
        });
        let result = self
            .writer
            .strategic_patch::<CachedPod>(
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default(),
                patch,
                "remove tracking finalizer",
            )
            .await;
        match result {
            Ok(patched) => {
                if let Some(key) = key {
                    self.pod_writes.record(key, &patched.metadata);
                }
                Ok(())
            }
            Err(error) if is_not_found(&error) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Forgets everything kept for the Job `key` (deleted or gone).
    pub fn forget(&self, key: &str) {
        self.expectations.delete_expectations(key);
        self.finalizers.delete_expectations(key);
        self.backoff.lock().remove_backoff_record(key);
        self.written.forget(key);
        self.pod_writes.forget(key);
    }
}

/// `jobCtx`'s pod counters as a sync moves them: deleting a pod turns it from active to
/// terminating; creating one makes it active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodCounts {
    /// Active pods (`status.active`).
    pub active: i32,
    /// Ready active pods (`status.ready`).
    pub ready: i32,
    /// Terminating pods (`status.terminating`).
    pub terminating: i32,
}

impl PodCounts {
    /// `deleted` pods (of which `deleted_ready` were ready) left the active ones.
    pub fn deleted(&mut self, deleted: i32, deleted_ready: i32) {
        self.active = self.active.wrapping_sub(deleted);
        self.terminating = self.terminating.wrapping_add(deleted);
        self.ready = self.ready.wrapping_sub(deleted_ready);
    }
}
