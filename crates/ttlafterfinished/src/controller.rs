//! The TTL-after-finished controller: its construction and its sync, upstream's `processJob`
//! as numbered steps.
//!
//! A finished Job with `spec.ttlSecondsAfterFinished` is deleted once that many seconds have
//! passed since its `Complete` or `Failed` condition. The cache decides first; before the
//! delete, a fresh read decides again (a user may have extended the TTL or the Job may have
//! been recreated since the cache saw it), and the delete carries the fresh Job's UID as a
//! precondition, with foreground propagation so its pods go before it. A Job not yet due is
//! requeued for exactly the time it has left.

use controller_toolkit::{
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync, Reconciler,
        RetryBackoff, RuntimeOptions,
    },
    writes::{Propagation, Writer},
};
use informer::{Lister, SharedInformerFactory};
use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use kube::{Api, Client};
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    decide::{Expiry, ExpiryError, expiry, time_left},
    handlers::JobHandler,
    metrics::TtlAfterFinishedMetrics,
};

/// Canonical controller name (`names.TTLAfterFinishedController`): event source, health check,
/// log field.
pub const CONTROLLER_NAME: &str = "ttl-after-finished-controller";
/// The API client's name, as upstream's `NewClient` names it (its user agent).
pub const CLIENT_NAME: &str = "ttl-after-finished-controller";
/// The work queue's name (the `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "ttl_jobs_to_delete";

/// Upstream's queue retries with client-go's default controller rate limiter.
const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::ControllerDefault,
};

/// The TTL-after-finished controller: build it with `TtlAfterFinishedController::new` (client,
/// informer factory, options) and run it with `run(workers, shutdown)`.
pub type TtlAfterFinishedController = Controller<TtlAfterFinishedSync>;

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone, Default)]
pub struct TtlAfterFinishedOptions {
    /// Metrics and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// The `ttl_after_finished_controller_*` family, when registered.
    pub metrics: Option<TtlAfterFinishedMetrics>,
}

/// Why a sync failed; every failure is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The key is not `namespace/name`.
    #[error("invalid job key {0:?}: either namespace or name is missing")]
    InvalidKey(String),
    /// The Job's TTL could not be measured (a terminal condition without its time).
    #[error(transparent)]
    Expiry(#[from] ExpiryError),
    /// The fresh read or the delete failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl SyncFailure for SyncError {}

/// The sync: the Job cache, a client for the fresh read, the write layer for the delete.
pub struct TtlAfterFinishedSync {
    jobs: Lister<Job>,
    client: Client,
    writer: Writer,
    queue: RateLimitingQueue<String>,
    metrics: Option<TtlAfterFinishedMetrics>,
}

impl ControllerSync for TtlAfterFinishedSync {
    type Options = TtlAfterFinishedOptions;

    /// upstream `New`: the Job informer's add and update handlers, the queue.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: TtlAfterFinishedOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let job_informer = informers.informer::<Job>();
        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        runtime.handles(&job_informer, JobHandler::new(runtime.queue()));
        let sync = TtlAfterFinishedSync {
            jobs: job_informer.lister(),
            writer: runtime.writer().clone(),
            queue: runtime.queue().clone(),
            client,
            metrics: options.metrics,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for TtlAfterFinishedSync {
    type Error = SyncError;

    /// upstream `processJob`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        // 1. The key names a namespace and a Job.
        let Some((namespace, name)) = key
            .split_once('/')
            .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
        else {
            return Err(SyncError::InvalidKey(key.to_owned()));
        };

        // 2. The Job from the cache; gone means nothing to do.
        let Some(cached) = self.jobs.get_by_key(key) else {
            return Ok(());
        };
        tracing::debug!(key, "checking if Job is ready for cleanup");

        // 3. Due according to the cache? If not, requeued for when it will be.
        if self.process_ttl(key, &cached)?.is_none() {
            return Ok(());
        }

        // 4. The TTL and the finished state may have changed since the cache was filled:
        //    read the Job afresh from the API server.
        let api: Api<Job> = Api::namespaced(self.client.clone(), namespace);
        let Some(fresh) = api.get_opt(name).await? else {
            return Ok(());
        };

        // 5. Due according to the fresh Job? (An extended TTL requeues it instead.)
        let Some(expired_at) = self.process_ttl(key, &fresh)? else {
            return Ok(());
        };

        // 6. Delete it: only the Job read (its UID), its pods first. A failure (the Job gone
        //    or recreated meanwhile included) is retried; the retry ends at step 2 or 4.
        tracing::info!(key, "cleaning up Job");
        self.writer
            .delete_propagating::<Job>(
                &fresh.metadata,
                true,
                Propagation::Foreground,
                "ttl expired",
            )
            .await?;

        // 7. How long after its TTL passed the Job was deleted.
        if let Some(metrics) = &self.metrics {
            let late = Timestamp::now().duration_since(expired_at);
            metrics
                .job_deletion_duration
                .observe(late.as_secs_f64().max(0.0));
        }
        Ok(())
    }
}

impl TtlAfterFinishedSync {
    /// upstream `processTTL`: when the Job's TTL passed, if it has; a Job not yet due is
    /// requeued for the time it has left.
    fn process_ttl(&self, key: &str, job: &Job) -> Result<Option<Timestamp>, SyncError> {
        let now = Timestamp::now();
        if let Ok(left) = time_left(job, now)
            && left.finished_in_the_future(now)
        {
            tracing::info!(
                key,
                finished_at = %left.finished_at,
                "Warning: Found Job finished in the future. This is likely due to time skew in \
                 the cluster. Job cleanup will be deferred."
            );
        }
        match expiry(job, now)? {
            Expiry::NotApplicable => Ok(None),
            Expiry::Expired { expired_at } => Ok(Some(expired_at)),
            Expiry::Pending { remaining } => {
                tracing::debug!(key, ?remaining, "Job not due for cleanup yet");
                self.queue.add_after(key.to_owned(), remaining);
                Ok(None)
            }
        }
    }
}
