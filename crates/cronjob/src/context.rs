//! What the sync's modules share: the controller's names, its options, why a sync fails, and
//! the handles a sync works with. They live apart from `controller.rs` so that the handlers and
//! the sync's steps import this module and never the controller: no two modules import each
//! other.

use std::sync::Arc;

use controller_toolkit::{
    events::EventRecorder,
    runtime::{ControllerIdentity, RetryBackoff, RuntimeOptions},
    stale_reads::{StaleRead, WrittenVersions},
    writes::Writer,
};
use k8s_openapi::jiff::{Zoned, tz::TimeZone};
use kube::Client;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    clock::{Clock, SystemClock},
    metrics::CronJobMetrics,
};

/// Canonical controller name (`names.CronJobController`): event source, health check, log
/// field.
pub const CONTROLLER_NAME: &str = "cronjob-controller";
/// The API client's name, as upstream's `NewClient` names it (its user agent).
pub const CLIENT_NAME: &str = "cronjob-controller";
/// The work queue's name (the `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "cronjob";

/// Upstream's queue retries with client-go's default controller rate limiter.
pub(crate) const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::ControllerDefault,
};

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone)]
pub struct CronJobOptions {
    /// Metrics and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// The `cronjob_controller_*` family, when registered.
    pub metrics: Option<CronJobMetrics>,
    /// What "now" is (the system clock; tests run a faster one).
    pub clock: Arc<dyn Clock>,
}

impl Default for CronJobOptions {
    fn default() -> Self {
        Self {
            runtime: RuntimeOptions::default(),
            metrics: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Why a sync failed; every failure is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cache has not caught up with the controller's own status write (deferred, counted).
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
    /// The API server's copy lists a Job as active that the cached copy does not: the cache
    /// is behind a status write (another writer's); deferred until it has caught up, rather
    /// than computing and writing from the older copy.
    #[error("cronjob {0}: the cache is behind the server's status")]
    CacheBehind(String),
    /// The key is not `namespace/name`.
    #[error("invalid cronjob key {0:?}: either namespace or name is missing")]
    InvalidKey(String),
    /// An active Job could not be replaced (concurrencyPolicy Replace).
    #[error("could not replace job {0}")]
    Replace(String),
    /// The Job could not be built from the template (its time zone, its schedule).
    #[error("{0}")]
    Template(String),
    /// A read or a write failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl SyncFailure for SyncError {
    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_) | SyncError::CacheBehind(_))
    }
}

/// The handles every step of a sync and the handlers share.
pub(crate) struct Shared {
    pub client: Client,
    pub writer: Writer,
    pub recorder: EventRecorder,
    pub queue: RateLimitingQueue<String>,
    pub clock: Arc<dyn Clock>,
    pub metrics: Option<CronJobMetrics>,
    /// The versions our status writes returned, so no sync computes from an older copy.
    pub written: WrittenVersions,
}

impl Shared {
    /// Now, in the zone a schedule without one runs in (the manager's local zone, as
    /// upstream's).
    pub fn now(&self) -> Zoned {
        self.clock.now().to_zoned(TimeZone::system())
    }

    /// Requeues `key` after `delay` of the controller's clock.
    pub fn requeue_after(&self, key: &str, delay: std::time::Duration) {
        self.queue.add_after(key.to_owned(), self.clock.real(delay));
    }
}
