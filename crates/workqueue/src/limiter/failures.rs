//! The failure history the per-item limiters keep: how often each item has failed since it
//! was last forgotten.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::WorkItem;

/// Failures per item, behind a lock shared by `when`, `forget` and `num_requeues`.
pub(super) struct FailureCounts<T> {
    pub(super) counts: Mutex<HashMap<T, usize>>,
}

impl<T: WorkItem> FailureCounts<T> {
    pub(super) fn new() -> Self {
        Self {
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Records one more failure of `item`; returns how many it had before this one.
    pub(super) fn record(&self, item: &T) -> usize {
        let mut counts = self.counts.lock();
        let count = counts.entry(item.clone()).or_insert(0);
        let before = *count;
        *count += 1;
        before
    }

    /// Drops the history of `item`.
    pub(super) fn forget(&self, item: &T) {
        self.counts.lock().remove(item);
    }

    /// How many failures of `item` are recorded (named like [`super::RateLimiter`]'s method,
    /// which `history_kept_by!` passes on to it).
    pub(super) fn num_requeues(&self, item: &T) -> usize {
        self.counts.lock().get(item).copied().unwrap_or(0)
    }
}
