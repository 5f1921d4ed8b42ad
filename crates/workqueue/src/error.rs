//! Errors from building a queue. Queue operations themselves never fail: like client-go, adds
//! after shutdown are silently dropped.

/// Why a [`RateLimitingQueue`](crate::RateLimitingQueue) could not be built.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The queue spawns its delay loop (and, when named, its metrics ticker) on the current Tokio
    /// runtime, so it must be created from within one.
    #[error("a workqueue must be created inside a Tokio runtime: {0}")]
    NoRuntime(#[from] tokio::runtime::TryCurrentError),
}
