//! The combination of several limiters: the strictest one decides.

use std::time::Duration;

use super::RateLimiter;

/// Upstream's `MaxOfRateLimiter`: asks **every** limiter (so each records the attempt, e.g. a
/// token bucket reserves a token even when a per-item backoff is longer) and returns the
/// largest delay.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU32;
    use std::sync::Arc;

    use governor::Quota;
    use governor::clock::FakeRelativeClock;

    use super::*;
    use crate::{BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter};

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn returns_the_largest_delay_and_the_largest_requeue_count() {
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemFastSlowRateLimiter::new(5 * MS, 3 * MS, 3)),
            Box::new(ItemExponentialFailureRateLimiter::new(
                MS,
                Duration::from_secs(1),
            )),
        ]);
        let got: Vec<Duration> = (0..5).map(|_| limiter.when(&"a")).collect();
        assert_eq!(got, vec![5 * MS, 5 * MS, 5 * MS, 8 * MS, 16 * MS]);
        assert_eq!(limiter.num_requeues(&"a"), 5);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), 5 * MS);
    }

    #[test]
    fn empty_combination_never_waits() {
        let limiter = MaxOfRateLimiter::<&str>::new(Vec::new());
        assert_eq!(limiter.when(&"a"), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&"a"), 0);
    }

    #[test]
    fn every_limiter_records_the_attempt_even_when_another_wins() {
        let clock = FakeRelativeClock::default();
        let one_per_100ms = Quota::per_second(NonZeroU32::MIN.saturating_add(9));
        let bucket = Arc::new(BucketRateLimiter::with_clock(one_per_100ms, clock));
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_secs(1),
                Duration::from_secs(1000),
            )),
            Box::new(bucket.clone()),
        ]);
        // The exponential term (1 s) wins both times, yet each call takes a bucket token:
        // burst 10, so after 10 calls the bucket alone asks for 100 ms.
        for key in 0..10 {
            assert_eq!(limiter.when(&key), Duration::from_secs(1));
        }
        assert_eq!(RateLimiter::<i32>::when(&bucket, &0), 100 * MS);
    }
}
