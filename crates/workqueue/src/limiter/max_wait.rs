//! A cap on another limiter's delay.

use std::time::Duration;

use super::{RateLimiter, history_kept_by};

/// Upstream's `WithMaxWaitRateLimiter`: the wrapped limiter's delay, but never more than
/// `max_delay`; failure history is the wrapped limiter's.
pub struct WithMaxWaitRateLimiter<L> {
    limiter: L,
    max_delay: Duration,
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Caps `limiter`'s delays at `max_delay`.
    pub fn new(limiter: L, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }

    history_kept_by!(limiter);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ItemExponentialFailureRateLimiter;

    #[test]
    fn caps_the_delay_and_delegates_history() {
        let ms = Duration::from_millis(1);
        let limiter = WithMaxWaitRateLimiter::new(
            ItemExponentialFailureRateLimiter::new(ms, Duration::from_secs(1000)),
            5 * ms,
        );
        let got: Vec<Duration> = (0..5).map(|_| limiter.when(&"a")).collect();
        assert_eq!(got, vec![ms, 2 * ms, 4 * ms, 5 * ms, 5 * ms]);
        assert_eq!(limiter.num_requeues(&"a"), 5);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), ms);
    }
}
