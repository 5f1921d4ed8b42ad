//! The basic queue (client-go `queue.go`): a FIFO plus a *dirty* set (items that need
//! processing) and a *processing* set (items handed to a worker). Together they give the
//! workqueue guarantees: adds of a waiting item collapse, an item is never handed to two workers
//! at once, and an add during processing causes exactly one more processing after `done`.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::WorkItem;
use crate::metrics::QueueMetrics;

/// The basic queue. Everything lives under one mutex; two `Notify`s stand in for Go's condition
/// variable: one wakes workers waiting in `get`, the other wakes `shut_down_with_drain`.
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    item_available: Notify,
    processing_changed: Notify,
    metrics: Option<Arc<QueueMetrics<T>>>,
}

struct State<T> {
    /// Items waiting to be handed out, in order; every element is also in `dirty`.
    fifo: VecDeque<T>,
    /// Items that need processing (waiting, or re-added while being processed).
    dirty: HashSet<T>,
    /// Items currently handed to a worker.
    processing: HashSet<T>,
    shutting_down: bool,
    /// Set by `shut_down_with_drain`, cleared by `shut_down` (which cancels the wait).
    drain: bool,
}

impl<T: WorkItem> Queue<T> {
    pub(crate) fn new(metrics: Option<Arc<QueueMetrics<T>>>) -> Self {
        Self {
            state: Mutex::new(State {
                fifo: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                shutting_down: false,
                drain: false,
            }),
            item_available: Notify::new(),
            processing_changed: Notify::new(),
            metrics,
        }
    }

    /// Marks `item` as needing processing (see `RateLimitingQueue::add`).
    pub(crate) fn add(&self, item: T) {
        let mut state = self.state.lock();
        if state.shutting_down || state.dirty.contains(&item) {
            return;
        }
        if let Some(metrics) = &self.metrics {
            metrics.add(&item);
        }
        state.dirty.insert(item.clone());
        if state.processing.contains(&item) {
            return;
        }
        state.fifo.push_back(item);
        drop(state);
        self.item_available.notify_one();
    }

    /// Number of items waiting in the FIFO.
    pub(crate) fn len(&self) -> usize {
        self.state.lock().fifo.len()
    }

    /// Waits for the next item; `None` once the queue is shutting down and the FIFO is empty.
    pub(crate) async fn get(&self) -> Option<T> {
        loop {
            // Register interest before looking at the state so that a wake-up sent between the
            // check and the await is not lost.
            let notified = self.item_available.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.state.lock();
                if let Some(item) = state.fifo.pop_front() {
                    if let Some(metrics) = &self.metrics {
                        metrics.get(&item);
                    }
                    state.dirty.remove(&item);
                    state.processing.insert(item.clone());
                    return Some(item);
                }
                if state.shutting_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks the end of processing `item`; re-queues it if it was added meanwhile.
    ///
    /// Unlike client-go, `done` on an item that is not being processed does nothing (upstream
    /// would push a second copy of a waiting item into the FIFO).
    pub(crate) fn done(&self, item: &T) {
        let mut state = self.state.lock();
        if !state.processing.remove(item) {
            return;
        }
        if let Some(metrics) = &self.metrics {
            metrics.done(item);
        }
        let requeued = state.dirty.contains(item);
        if requeued {
            state.fifo.push_back(item.clone());
        }
        let idle = state.processing.is_empty();
        drop(state);
        if requeued {
            self.item_available.notify_one();
        }
        if idle {
            self.processing_changed.notify_waiters();
        }
    }

    /// Stops accepting adds and wakes every waiting worker; cancels a pending drain.
    pub(crate) fn shut_down(&self) {
        self.state.lock().drain = false;
        self.begin_shutdown();
    }

    /// Like `shut_down`, then waits until no item is being processed (unless a later
    /// `shut_down` cancels the wait).
    pub(crate) async fn shut_down_with_drain(&self) {
        self.state.lock().drain = true;
        self.begin_shutdown();
        loop {
            let notified = self.processing_changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.state.lock();
                if state.processing.is_empty() || !state.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    fn begin_shutdown(&self) {
        self.state.lock().shutting_down = true;
        self.item_available.notify_waiters();
        self.processing_changed.notify_waiters();
    }

    pub(crate) fn shutting_down(&self) -> bool {
        self.state.lock().shutting_down
    }
}
