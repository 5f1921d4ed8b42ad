//! Rate limiters deciding how long an item waits before it is retried (client-go
//! `default_rate_limiters.go`), and the default one every workload controller uses.

mod bucket;
mod exponential;
mod failures;
mod fast_slow;
mod max_of;
mod max_wait;

use std::sync::Arc;
use std::time::Duration;

pub use bucket::{BucketRateLimiter, RateLimiterError};
pub use exponential::ItemExponentialFailureRateLimiter;
pub use fast_slow::ItemFastSlowRateLimiter;
pub use max_of::MaxOfRateLimiter;
pub use max_wait::WithMaxWaitRateLimiter;

/// Decides the retry delay of failed items and remembers their failures.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` must wait before its next attempt; records the attempt.
    fn when(&self, item: &T) -> Duration;

    /// Drops the failure history of `item` (it succeeded or was given up on).
    fn forget(&self, item: &T);

    /// How many failures of `item` are recorded.
    fn num_requeues(&self, item: &T) -> usize;
}

/// The `forget` and `num_requeues` of a [`RateLimiter`] impl whose failure history is kept by
/// its field `$history` (a `FailureCounts`, or the limiter it wraps): both pass straight to it,
/// so only `when` differs between such limiters.
macro_rules! history_kept_by {
    ($history:ident) => {
        fn forget(&self, item: &T) {
            self.$history.forget(item);
        }

        fn num_requeues(&self, item: &T) -> usize {
            self.$history.num_requeues(item)
        }
    };
}
use history_kept_by;

/// Implements [`RateLimiter`] for a pointer to a limiter by delegating to the pointee.
macro_rules! delegate_through_pointer {
    ($($pointer:ident),+) => {$(
        impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for $pointer<L> {
            fn when(&self, item: &T) -> Duration {
                (**self).when(item)
            }

            fn forget(&self, item: &T) {
                (**self).forget(item);
            }

            fn num_requeues(&self, item: &T) -> usize {
                (**self).num_requeues(item)
            }
        }
    )+};
}

// A shared limiter is still a limiter, so one limiter can be observed (or shared between
// queues) while a [`MaxOfRateLimiter`] consults it; a boxed one is how `MaxOfRateLimiter`
// holds its parts.
delegate_through_pointer!(Arc, Box);

/// Upstream's `DefaultControllerRateLimiter`: the larger of a per-item exponential backoff
/// (5 ms doubling up to 1000 s) and a queue-wide token bucket (10 qps, burst 100).
pub fn default_controller_rate_limiter<T: crate::WorkItem>() -> MaxOfRateLimiter<T> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(bucket::DEFAULT_CONTROLLER_QUOTA)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limiter_doubles_per_item_from_5ms_and_caps_at_1000s() {
        let limiter = default_controller_rate_limiter::<&str>();
        let delays: Vec<Duration> = (0..20).map(|_| limiter.when(&"a")).collect();
        assert_eq!(delays[0], Duration::from_millis(5));
        assert_eq!(delays[1], Duration::from_millis(10));
        assert_eq!(delays[2], Duration::from_millis(20));
        assert_eq!(delays[17], Duration::from_millis(655_360));
        assert_eq!(delays[18], Duration::from_secs(1000));
        assert_eq!(delays[19], Duration::from_secs(1000));
        assert_eq!(limiter.num_requeues(&"a"), 20);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
    }

    #[test]
    fn default_limiter_paces_the_whole_queue_after_a_burst_of_100() {
        let limiter = default_controller_rate_limiter::<u32>();
        // 100 first failures of distinct keys fit in the burst: only the 5 ms exponential term.
        for key in 0..100 {
            assert_eq!(limiter.when(&key), Duration::from_millis(5), "key {key}");
        }
        // The 101st key's first failure waits for a token (~100 ms at 10 qps), far above 5 ms.
        let paced = limiter.when(&100);
        assert!(
            paced > Duration::from_millis(50) && paced <= Duration::from_millis(100),
            "{paced:?}"
        );
    }
}
