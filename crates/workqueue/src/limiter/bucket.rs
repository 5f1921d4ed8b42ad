//! A queue-wide token bucket (upstream's `BucketRateLimiter` over `golang.org/x/time/rate`),
//! built on governor's GCRA.
//!
//! Go's limiter *reserves* a token: when none is free it still takes one and tells the caller
//! how long to wait for it, so every retry pushes later retries back. Governor's `check` only
//! takes a token that is free now and reports when the next one would be. We give governor a
//! state store we can also write to: when `check` refuses, its `NotUntil` is the wait, and we
//! reserve the token ourselves by moving the bucket's theoretical arrival time one emission
//! interval later, exactly what an accepted `check` at that future instant would have done.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::Quota;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{NotKeyed, StateStore};
use parking_lot::Mutex;

use super::RateLimiter;

/// 10 tokens per second, burst 100: the bucket of `DefaultControllerRateLimiter`.
pub(crate) const DEFAULT_CONTROLLER_QUOTA: Quota = match (NonZeroU32::new(10), NonZeroU32::new(100))
{
    (Some(per_second), Some(burst)) => Quota::per_second(per_second).allow_burst(burst),
    _ => panic!("constant quota parameters are non-zero"),
};

/// Why a token bucket could not be built from the given numbers.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RateLimiterError {
    /// The refill rate must be a positive, finite number of tokens per second whose interval
    /// fits in a `Duration`.
    #[error("token bucket rate must be positive and finite, got {0} per second")]
    InvalidRate(f64),
    /// A bucket that holds no token would never let anything through.
    #[error("token bucket burst must be at least 1")]
    ZeroBurst,
}

/// A shared token bucket: the first `burst` calls return zero, after which calls are paced at
/// the quota's rate; each call reserves a token and returns how long until it is available.
/// Item-independent, so `forget` does nothing and `num_requeues` is always 0.
pub struct BucketRateLimiter<C: Clock = DefaultClock> {
    limiter: governor::RateLimiter<NotKeyed, ReservableState, C, NoOpMiddleware<C::Instant>>,
    state: ReservableState,
    clock: C,
    emission_interval: Nanos,
    /// Makes "check, and reserve if refused" one step.
    reserving: Mutex<()>,
}

impl BucketRateLimiter {
    /// A bucket with `quota` on the monotonic clock.
    pub fn new(quota: Quota) -> Self {
        Self::with_clock(quota, DefaultClock::default())
    }

    /// A bucket refilled at `qps` tokens per second holding up to `burst` tokens (upstream's
    /// `rate.NewLimiter(rate.Limit(qps), burst)`).
    pub fn from_qps(qps: f64, burst: u32) -> Result<Self, RateLimiterError> {
        let burst = NonZeroU32::new(burst).ok_or(RateLimiterError::ZeroBurst)?;
        let interval = (qps.is_finite() && qps > 0.0)
            .then(|| Duration::try_from_secs_f64(1.0 / qps).ok())
            .flatten()
            .ok_or(RateLimiterError::InvalidRate(qps))?;
        let quota = Quota::with_period(interval).ok_or(RateLimiterError::InvalidRate(qps))?;
        Ok(Self::new(quota.allow_burst(burst)))
    }
}

impl<C: Clock + Clone> BucketRateLimiter<C> {
    /// A bucket with `quota` reading time from `clock` (e.g. governor's `FakeRelativeClock` to
    /// make tests deterministic).
    pub fn with_clock(quota: Quota, clock: C) -> Self {
        let state = ReservableState::default();
        Self {
            limiter: governor::RateLimiter::new(quota, state.clone(), clock.clone()),
            state,
            clock,
            emission_interval: quota
                .replenish_interval()
                .max(Duration::from_nanos(1))
                .into(),
            reserving: Mutex::new(()),
        }
    }

    /// Takes a token now or reserves the next one; returns the wait until it is available.
    fn reserve(&self) -> Duration {
        let _reserving = self.reserving.lock();
        match self.limiter.check() {
            Ok(()) => Duration::ZERO,
            Err(not_until) => {
                self.state.push_back(self.emission_interval);
                not_until.wait_time_from(self.clock.now())
            }
        }
    }
}

impl<T, C> RateLimiter<T> for BucketRateLimiter<C>
where
    C: Clock + Clone + Send + Sync,
{
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// Governor's GCRA state (the theoretical arrival time of the next token), shared between the
/// governor limiter and the reservation step.
#[derive(Clone, Default)]
struct ReservableState {
    theoretical_arrival: Arc<Mutex<Option<Nanos>>>,
}

impl ReservableState {
    /// Reserves one token beyond what is free, as Go's `Reserve` does when it goes into debt.
    fn push_back(&self, interval: Nanos) {
        if let Some(arrival) = self.theoretical_arrival.lock().as_mut() {
            *arrival = *arrival + interval;
        }
    }
}

impl StateStore for ReservableState {
    type Key = NotKeyed;

    fn measure_and_replace<T, F, E>(&self, _key: &NotKeyed, decide: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        let mut arrival = self.theoretical_arrival.lock();
        let (outcome, next) = decide(*arrival)?;
        *arrival = Some(next);
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use governor::clock::FakeRelativeClock;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// The burst of the scenarios' bucket, taken at once without waiting.
    const BURST: usize = 3;

    #[test]
    fn reserves_tokens_like_go_rate_limiter() {
        // 10 qps, burst 3: one token per 100 ms.
        let quota = Quota::per_second(NonZeroU32::MIN.saturating_add(9))
            .allow_burst(NonZeroU32::MIN.saturating_add(2));
        // After the burst, each step advances the fake clock by `.0` ms, then calls `when` and
        // expects a wait of `.1` ms.
        let scenarios: [(&str, &[(u64, u64)]); 4] = [
            (
                "burst then paced by reservations",
                &[(0, 100), (0, 200), (0, 300)],
            ),
            (
                "time passing pays the debt back",
                &[(0, 100), (0, 200), (100, 200)],
            ),
            (
                "an idle bucket refills to its burst and no further",
                &[(0, 100), (10_000, 0), (0, 0), (0, 0), (0, 100)],
            ),
            (
                "a token refills every 100 ms, fractions included",
                &[(100, 0), (0, 100), (150, 50), (300, 0), (0, 0), (0, 50)],
            ),
        ];
        for (name, after_burst) in scenarios {
            let clock = FakeRelativeClock::default();
            let bucket = BucketRateLimiter::with_clock(quota, clock.clone());
            let steps = [(0, 0); BURST].iter().chain(after_burst);
            for (index, &(advance_ms, wait_ms)) in steps.enumerate() {
                clock.advance(Duration::from_millis(advance_ms));
                let wait = RateLimiter::<&str>::when(&bucket, &"any");
                assert_eq!(wait, Duration::from_millis(wait_ms), "{name}: step {index}");
            }
        }
    }

    #[test]
    fn bucket_has_no_item_history() {
        let bucket = BucketRateLimiter::with_clock(
            Quota::per_second(NonZeroU32::MIN),
            FakeRelativeClock::default(),
        );
        RateLimiter::<&str>::when(&bucket, &"a");
        RateLimiter::<&str>::forget(&bucket, &"a");
        assert_eq!(RateLimiter::<&str>::num_requeues(&bucket, &"a"), 0);
        // Forget does not refill the bucket.
        assert_eq!(
            RateLimiter::<&str>::when(&bucket, &"a"),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn from_qps_validates_its_inputs() {
        let cases = [
            (10.0, 100, None),
            (0.5, 1, None),
            (0.0, 1, Some(RateLimiterError::InvalidRate(0.0))),
            (-1.0, 1, Some(RateLimiterError::InvalidRate(-1.0))),
            (
                f64::INFINITY,
                1,
                Some(RateLimiterError::InvalidRate(f64::INFINITY)),
            ),
            (10.0, 0, Some(RateLimiterError::ZeroBurst)),
        ];
        for (qps, burst, expected_error) in cases {
            let result = BucketRateLimiter::from_qps(qps, burst);
            assert_eq!(result.err(), expected_error, "qps {qps} burst {burst}");
        }
    }

    #[test]
    fn from_qps_sets_rate_and_burst() {
        let bucket = BucketRateLimiter::from_qps(10.0, 2).map_err(|e| e.to_string());
        let Ok(bucket) = bucket else {
            panic!(
                "valid parameters rejected: {bucket:?}",
                bucket = bucket.err()
            );
        };
        assert_eq!(RateLimiter::<&str>::when(&bucket, &"a"), Duration::ZERO);
        assert_eq!(RateLimiter::<&str>::when(&bucket, &"a"), Duration::ZERO);
        let wait = RateLimiter::<&str>::when(&bucket, &"a");
        assert!(wait > 50 * MS && wait <= 100 * MS, "{wait:?}");
    }

    #[test]
    fn default_controller_quota_is_10_qps_burst_100() {
        assert_eq!(DEFAULT_CONTROLLER_QUOTA.replenish_interval(), 100 * MS);
        assert_eq!(DEFAULT_CONTROLLER_QUOTA.burst_size().get(), 100);
    }
}
