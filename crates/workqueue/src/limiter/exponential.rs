//! Per-item exponential backoff: the n-th consecutive failure of an item waits base * 2^n.

use std::time::Duration;

use super::failures::FailureCounts;
use super::{RateLimiter, history_kept_by};
use crate::WorkItem;

/// Upstream's `ItemExponentialFailureRateLimiter`: `when` returns `min(base * 2^n, max)` where `n`
/// is the number of earlier failures of that item, so a persistently failing key backs off
/// while other keys are unaffected.
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: FailureCounts<T>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<T: WorkItem> ItemExponentialFailureRateLimiter<T> {
    /// Backoff starting at `base_delay`, doubling per failure, never above `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            failures: FailureCounts::new(),
            base_delay,
            max_delay,
        }
    }

    /// `base * 2^exponent` computed in floating point like upstream, so huge exponents saturate
    /// to `max_delay` instead of overflowing.
    fn backoff(&self, exponent: usize) -> Duration {
        if self.base_delay.is_zero() {
            return Duration::ZERO;
        }
        let exponent = i32::try_from(exponent).unwrap_or(i32::MAX);
        let nanos = self.base_delay.as_nanos() as f64 * 2f64.powi(exponent);
        if nanos > i64::MAX as f64 {
            return self.max_delay;
        }
        Duration::from_nanos(nanos as u64).min(self.max_delay)
    }
}

impl<T: WorkItem> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.backoff(self.failures.record(item))
    }

    history_kept_by!(failures);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn delays_double_per_failure_up_to_the_cap() {
        struct Case {
            base: Duration,
            max: Duration,
            expected: Vec<Duration>,
        }
        let cases = [
            Case {
                base: MS,
                max: Duration::from_secs(1000),
                expected: vec![MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS],
            },
            Case {
                base: 5 * MS,
                max: 30 * MS,
                expected: vec![5 * MS, 10 * MS, 20 * MS, 30 * MS, 30 * MS],
            },
            Case {
                base: Duration::ZERO,
                max: Duration::from_secs(1),
                expected: vec![Duration::ZERO; 3],
            },
        ];
        for case in cases {
            let limiter = ItemExponentialFailureRateLimiter::new(case.base, case.max);
            let got: Vec<Duration> = case.expected.iter().map(|_| limiter.when(&"a")).collect();
            assert_eq!(
                got, case.expected,
                "base {:?} max {:?}",
                case.base, case.max
            );
            assert_eq!(limiter.num_requeues(&"a"), case.expected.len());
        }
    }

    #[test]
    fn items_are_tracked_separately_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        assert_eq!(limiter.when(&"a"), MS);
        assert_eq!(limiter.when(&"a"), 2 * MS);
        assert_eq!(limiter.when(&"b"), MS);
        assert_eq!(limiter.num_requeues(&"a"), 2);
        assert_eq!(limiter.num_requeues(&"b"), 1);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), MS);
        assert_eq!(limiter.num_requeues(&"b"), 1);
    }

    #[test]
    fn overflowing_exponent_returns_the_cap() {
        let max = Duration::from_secs(1000);
        let limiter = ItemExponentialFailureRateLimiter::new(MS, max);
        limiter.failures.counts.lock().insert("a", 5000);
        assert_eq!(limiter.when(&"a"), max);
        // 2^62 ms overflows int64 nanoseconds even with a cap above it.
        let huge_cap = Duration::from_secs(u64::MAX / 2);
        let uncapped = ItemExponentialFailureRateLimiter::new(MS, huge_cap);
        uncapped.failures.counts.lock().insert("a", 62);
        assert_eq!(uncapped.when(&"a"), huge_cap);
    }
}
