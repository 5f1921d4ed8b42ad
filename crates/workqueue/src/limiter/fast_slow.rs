//! Per-item two-speed retry: a few quick attempts, then a slow steady pace.

use std::time::Duration;

use super::failures::FailureCounts;
use super::{RateLimiter, history_kept_by};
use crate::WorkItem;

/// Upstream's `ItemFastSlowRateLimiter`: the first `max_fast_attempts` failures of an item wait
/// `fast_delay`, later ones `slow_delay`.
pub struct ItemFastSlowRateLimiter<T> {
    failures: FailureCounts<T>,
    fast_delay: Duration,
    slow_delay: Duration,
    max_fast_attempts: usize,
}

impl<T: WorkItem> ItemFastSlowRateLimiter<T> {
    /// `max_fast_attempts` retries after `fast_delay`, then `slow_delay` for every retry.
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: usize) -> Self {
        Self {
            failures: FailureCounts::new(),
            fast_delay,
            slow_delay,
            max_fast_attempts,
        }
    }
}

impl<T: WorkItem> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let failures = self.failures.record(item) + 1;
        if failures <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    history_kept_by!(failures);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_attempts_then_slow() {
        let fast = Duration::from_millis(5);
        let slow = Duration::from_secs(10);
        let cases = [
            (0, vec![slow, slow]),
            (1, vec![fast, slow, slow]),
            (3, vec![fast, fast, fast, slow, slow]),
        ];
        for (max_fast, expected) in cases {
            let limiter = ItemFastSlowRateLimiter::new(fast, slow, max_fast);
            let got: Vec<Duration> = expected.iter().map(|_| limiter.when(&"a")).collect();
            assert_eq!(got, expected, "max_fast_attempts {max_fast}");
            assert_eq!(limiter.num_requeues(&"a"), expected.len());
        }
    }

    #[test]
    fn items_are_tracked_separately_and_forget_resets() {
        let fast = Duration::from_millis(5);
        let slow = Duration::from_secs(10);
        let limiter = ItemFastSlowRateLimiter::new(fast, slow, 1);
        assert_eq!(limiter.when(&"a"), fast);
        assert_eq!(limiter.when(&"a"), slow);
        assert_eq!(limiter.when(&"b"), fast);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), fast);
        assert_eq!(limiter.num_requeues(&"b"), 1);
    }
}
