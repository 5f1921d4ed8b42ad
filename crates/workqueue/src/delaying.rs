//! The delaying layer (client-go `delaying_queue.go`): `add_after` parks an item until its ready
//! time, and one background task moves ready items into the basic queue.
//!
//! Instead of upstream's 1000-slot channel feeding the loop, callers insert straight into the
//! shared waiting list and poke the loop; this keeps `add_after` synchronous and non-blocking
//! while preserving the observable rules (dedup keeping the earlier ready time, already-due
//! entries added at once, pending entries dropped on shutdown).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::WorkItem;
use crate::metrics::QueueMetrics;
use crate::queue::Queue;

/// Upper bound on how long the loop sleeps without looking at the list (upstream's heartbeat).
const MAX_WAIT: Duration = Duration::from_secs(10);

/// The basic queue plus the items waiting for their ready time.
pub(crate) struct DelayingQueue<T> {
    pub(crate) queue: Queue<T>,
    waiting: Mutex<WaitingList<T>>,
    /// Pokes the loop when an entry is inserted (a stored permit covers a poke that arrives
    /// while the loop is busy).
    new_entry: Arc<Notify>,
    /// Stops the loop and the metrics ticker: fired on shutdown and when the last handle drops.
    stop: CancellationToken,
    metrics: Option<Arc<QueueMetrics<T>>>,
}

impl<T: WorkItem> DelayingQueue<T> {
    /// Builds the queue and starts its loop on `runtime`. The loop holds only a weak reference,
    /// so dropping every handle ends it.
    pub(crate) fn start(
        runtime: &tokio::runtime::Handle,
        metrics: Option<Arc<QueueMetrics<T>>>,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let delaying = Arc::new(Self {
            queue: Queue::new(metrics.clone()),
            waiting: Mutex::new(WaitingList::default()),
            new_entry: Arc::new(Notify::new()),
            stop: stop.clone(),
            metrics,
        });
        runtime.spawn(waiting_loop(
            Arc::downgrade(&delaying),
            delaying.new_entry.clone(),
            stop,
        ));
        delaying
    }

    /// Adds `item` once `delay` has passed; counts a retry on named queues.
    pub(crate) fn add_after(&self, item: T, delay: Duration) {
        if self.queue.shutting_down() {
            return;
        }
        if let Some(metrics) = &self.metrics {
            metrics.retry();
        }
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        // Woken only when the entry is due before the loop would look anyway: a controller that
        // re-adds a waiting key on every event (the Job controller's batched syncs) wakes no one.
        if self.waiting.lock().insert(item, Instant::now() + delay) {
            self.new_entry.notify_one();
        }
    }

    /// Shuts the basic queue down and stops the loop; waiting items are dropped.
    pub(crate) fn shut_down(&self) {
        self.queue.shut_down();
        self.stop.cancel();
    }

    /// Shuts down like [`Self::shut_down`] and waits for in-flight items to be done.
    pub(crate) async fn shut_down_with_drain(&self) {
        self.stop.cancel();
        self.queue.shut_down_with_drain().await;
    }

    /// Moves every due entry into the basic queue; returns when the loop is to look again:
    /// when the next entry is due, at most [`MAX_WAIT`] from `now`.
    fn add_ready(&self, now: Instant) -> Instant {
        let (ready, wake_at) = {
            let mut waiting = self.waiting.lock();
            let ready = waiting.pop_ready(now);
            let wake_at = waiting
                .next_ready_at()
                .map_or(now + MAX_WAIT, |at| at.min(now + MAX_WAIT));
            waiting.loop_wakes_at = Some(wake_at);
            (ready, wake_at)
        };
        for item in ready {
            self.queue.add(item);
        }
        wake_at
    }
}

impl<T> Drop for DelayingQueue<T> {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The background loop: add what is due, then sleep until the next entry is due, a new entry
/// arrives, the heartbeat passes, or the queue stops.
async fn waiting_loop<T: WorkItem>(
    delaying: Weak<DelayingQueue<T>>,
    new_entry: Arc<Notify>,
    stop: CancellationToken,
) {
    loop {
        let now = Instant::now();
        let wake_at = match delaying.upgrade() {
            Some(delaying) if !stop.is_cancelled() => delaying.add_ready(now),
            _ => break,
        };
        tokio::select! {
            biased;
            () = stop.cancelled() => break,
            () = new_entry.notified() => {}
            () = tokio::time::sleep_until(wake_at) => {}
        }
    }
    if let Some(delaying) = delaying.upgrade() {
        delaying.waiting.lock().clear();
    }
}

/// Items waiting for their ready time: ordered by ready time, at most one entry per item.
struct WaitingList<T> {
    /// Ready time plus an insertion counter (ties keep insertion order) -> item.
    by_ready_at: BTreeMap<(Instant, u64), T>,
    /// Item -> its key in `by_ready_at`, for dedup.
    entries: HashMap<T, (Instant, u64)>,
    next_sequence: u64,
    /// When the loop looks at the list next (`None` before it first did).
    loop_wakes_at: Option<Instant>,
}

impl<T> Default for WaitingList<T> {
    fn default() -> Self {
        Self {
            by_ready_at: BTreeMap::new(),
            entries: HashMap::new(),
            next_sequence: 0,
            loop_wakes_at: None,
        }
    }
}

impl<T: WorkItem> WaitingList<T> {
    /// Parks `item` until `ready_at`; an item already waiting keeps the earlier ready time.
    /// Returns whether the loop must be woken: the item is due before the loop looks again.
    fn insert(&mut self, item: T, ready_at: Instant) -> bool {
        if let Some(existing) = self.entries.get(&item).copied() {
            if existing.0 <= ready_at {
                return false;
            }
            self.by_ready_at.remove(&existing);
        }
        let key = (ready_at, self.next_sequence);
        self.next_sequence += 1;
        self.entries.insert(item.clone(), key);
        self.by_ready_at.insert(key, item);
        let wake = self.loop_wakes_at.is_none_or(|at| ready_at < at);
        if wake {
            self.loop_wakes_at = Some(ready_at);
        }
        wake
    }

    /// Removes and returns every item due at `now`, earliest first.
    fn pop_ready(&mut self, now: Instant) -> Vec<T> {
        let mut ready = Vec::new();
        while let Some(entry) = self.by_ready_at.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.entries.remove(&item);
            ready.push(item);
        }
        ready
    }

    fn next_ready_at(&self) -> Option<Instant> {
        self.by_ready_at
            .keys()
            .next()
            .map(|(ready_at, _)| *ready_at)
    }

    fn clear(&mut self) {
        self.by_ready_at.clear();
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_list_orders_by_ready_time_and_keeps_the_earlier_duplicate() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut list = WaitingList::default();
        list.insert("late", at(30));
        list.insert("early", at(10));
        list.insert("dup", at(20));
        list.insert("dup", at(50)); // later duplicate: ignored
        list.insert("late", at(5)); // earlier duplicate: moves up
        assert_eq!(list.next_ready_at(), Some(at(5)));
        assert_eq!(list.pop_ready(at(4)), Vec::<&str>::new());
        assert_eq!(list.pop_ready(at(20)), vec!["late", "early", "dup"]);
        assert_eq!(list.next_ready_at(), None);
        assert!(list.entries.is_empty());
    }

    #[test]
    fn the_loop_is_woken_only_for_an_entry_due_before_it_looks_again() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut list = WaitingList::default();
        assert!(list.insert("a", at(100)), "the loop has not looked yet");
        list.loop_wakes_at = Some(at(100));
        assert!(!list.insert("a", at(100)), "already waiting, same time");
        assert!(
            !list.insert("a", at(300)),
            "already waiting, earlier time kept"
        );
        assert!(!list.insert("b", at(200)), "due after the loop looks");
        assert!(list.insert("c", at(50)), "due before the loop looks");
        assert!(!list.insert("d", at(60)), "the loop looks at 50 now");
        assert!(list.insert("b", at(10)), "moved up before the loop looks");
    }
}
