//! Time source for expectation records.
//!
//! Expectations expire after [`EXPECTATIONS_TIMEOUT`](crate::EXPECTATIONS_TIMEOUT); the clock is
//! injectable so that expiry can be tested (and reasoned about) without sleeping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A monotonic time source. Expectations only compare instants with each other, so a monotonic
/// clock is enough and immune to wall-clock jumps.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The real monotonic clock, used in production.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// `new()` on the [`SystemClock`] and `Default` for an expectations type built by
/// `with_clock(clock)`, so that production code never names a clock.
macro_rules! on_system_clock {
    ($expectations:ident, $new_doc:literal) => {
        impl $expectations<$crate::clock::SystemClock> {
            #[doc = $new_doc]
            pub fn new() -> Self {
                Self::with_clock($crate::clock::SystemClock)
            }
        }

        impl Default for $expectations<$crate::clock::SystemClock> {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}
pub(crate) use on_system_clock;

/// A clock that only moves when told to, so tests of controllers built on expectations can
/// step past the timeout deterministically. Clones share the same time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<Mutex<Instant>>,
}

impl ManualClock {
    /// A manual clock starting at the current real instant.
    pub fn new() -> Self {
        Self {
            now: Arc::new(Mutex::new(Instant::now())),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock();
        *now += by;
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.now.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced_and_clones_share_time() {
        let clock = ManualClock::new();
        let start = clock.now();
        assert_eq!(clock.now(), start);
        let shared = clock.clone();
        shared.advance(Duration::from_secs(7));
        assert_eq!(clock.now(), start + Duration::from_secs(7));
    }
}
