#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod delaying;
mod error;
mod limiter;
mod metrics;
mod queue;
mod rate_limiting;
mod worker;

pub use error::QueueError;
/// The token-bucket crate behind [`BucketRateLimiter`], re-exported so callers can build a
/// [`governor::Quota`] or inject a [`governor::clock::FakeRelativeClock`] without a separate,
/// version-matched dependency.
pub use governor;
pub use limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, RateLimiterError, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
};
pub use metrics::{WorkqueueMetrics, histogram_vec, registered};
pub use rate_limiting::{QueueConfig, RateLimitingQueue};
pub use worker::{AfterSync, ControllerMetrics, SyncFailure, SyncMetrics, WorkerPool, after_sync};

/// What a queue can hold: the bounds every layer needs (hash-set membership, cheap copies into
/// the dirty/processing sets, and sharing with the background tasks).
///
/// Blanket-implemented; controllers use `String` keys (`namespace/name`).
pub trait WorkItem: Clone + Eq + std::hash::Hash + Send + Sync + 'static {}

impl<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static> WorkItem for T {}
