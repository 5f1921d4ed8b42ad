//! The queue controllers use (client-go `rate_limiting_queue.go`): the delaying queue plus a
//! [`RateLimiter`] deciding how long a failed item waits before its retry.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::delaying::DelayingQueue;
use crate::limiter::{RateLimiter, default_controller_rate_limiter};
use crate::metrics::{WorkqueueMetrics, spawn_unfinished_work_ticker};
use crate::{QueueError, WorkItem};

/// How to build a [`RateLimitingQueue`] (upstream's `TypedRateLimitingQueueConfig`).
pub struct QueueConfig<T> {
    name: String,
    rate_limiter: Box<dyn RateLimiter<T>>,
    metrics: Option<WorkqueueMetrics>,
}

impl<T: WorkItem> QueueConfig<T> {
    /// A queue called `name` (the `name` label of its metrics; empty means no metrics) using
    /// [`default_controller_rate_limiter`] and no metrics until [`Self::with_metrics`].
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            rate_limiter: Box::new(default_controller_rate_limiter()),
            metrics: None,
        }
    }

    /// Replaces the rate limiter consulted by `add_rate_limited`, `forget` and `num_requeues`.
    pub fn with_rate_limiter(mut self, rate_limiter: impl RateLimiter<T> + 'static) -> Self {
        self.rate_limiter = Box::new(rate_limiter);
        self
    }

    /// Reports the queue's metrics through `metrics` (ignored when the name is empty, as
    /// upstream gives unnamed queues no metrics).
    pub fn with_metrics(mut self, metrics: WorkqueueMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

/// A rate-limiting work queue with client-go semantics; a cheap-to-clone handle, so the event
/// handlers and every worker can share one queue.
///
/// Dropping the last handle stops the background tasks; waiting workers should be released
/// with [`Self::shut_down`] or [`Self::shut_down_with_drain`] first.
pub struct RateLimitingQueue<T> {
    delaying: Arc<DelayingQueue<T>>,
    rate_limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            delaying: self.delaying.clone(),
            rate_limiter: self.rate_limiter.clone(),
        }
    }
}

impl<T: WorkItem> RateLimitingQueue<T> {
    /// Builds the queue and starts its background tasks on the current Tokio runtime: the delay
    /// loop, and for a named queue with metrics the 500 ms unfinished-work ticker.
    pub fn new(config: QueueConfig<T>) -> Result<Self, QueueError> {
        let runtime = tokio::runtime::Handle::try_current()?;
        let stop = CancellationToken::new();
        let metrics = match config.metrics {
            Some(metrics) if !config.name.is_empty() => {
                let queue_metrics = Arc::new(metrics.for_queue(&config.name));
                spawn_unfinished_work_ticker(&runtime, queue_metrics.clone(), stop.clone());
                Some(queue_metrics)
            }
            _ => None,
        };
        Ok(Self {
            delaying: DelayingQueue::start(&runtime, metrics, stop),
            rate_limiter: Arc::from(config.rate_limiter),
        })
    }

    /// Marks `item` as needing processing. Adds of an item that is already waiting collapse into
    /// one; an item being processed is queued again once its worker calls [`Self::done`].
    /// Ignored after shutdown.
    pub fn add(&self, item: T) {
        self.delaying.queue.add(item);
    }

    /// Adds `item` after `delay` (at once for a zero delay). If the item is already waiting for
    /// a delay, the earlier ready time wins. Counts one `workqueue_retries_total`. Ignored after
    /// shutdown; still-waiting items are dropped by shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.delaying.add_after(item, delay);
    }

    /// Adds `item` after the delay the rate limiter assigns to it (a failed sync's retry).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.rate_limiter.when(&item);
        self.delaying.add_after(item, delay);
    }

    /// Clears the rate limiter's failure history for `item` (a successful sync). Does not touch
    /// the queue itself.
    pub fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    /// How many times `item` has been rate limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.rate_limiter.num_requeues(item)
    }

    /// Waits for the next item to process, in FIFO order. Returns `None` once the queue is shut
    /// down and everything queued before that has been handed out. The caller must call
    /// [`Self::done`] when finished with the item.
    pub async fn get(&self) -> Option<T> {
        self.delaying.queue.get().await
    }

    /// Tells the queue that processing `item` has finished, so a re-add that arrived meanwhile
    /// can be handed out.
    pub fn done(&self, item: &T) {
        self.delaying.queue.done(item);
    }

    /// Number of items waiting to be handed out (not counting items being processed).
    pub fn len(&self) -> usize {
        self.delaying.queue.len()
    }

    /// Whether no item is waiting to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items and releases waiting workers once the queued items are handed out.
    /// Cancels a pending [`Self::shut_down_with_drain`] wait.
    pub fn shut_down(&self) {
        self.delaying.shut_down();
    }

    /// Shuts down like [`Self::shut_down`], then waits until every item being processed has
    /// been marked [`Self::done`].
    pub async fn shut_down_with_drain(&self) {
        self.delaying.shut_down_with_drain().await;
    }

    /// Whether shutdown has begun; workers use it to stop early.
    pub fn shutting_down(&self) -> bool {
        self.delaying.queue.shutting_down()
    }
}
