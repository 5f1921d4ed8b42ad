//! The controller's clock: what "now" is for its schedules, and how long a wait on it takes in
//! real time.
//!
//! Why: a CronJob's behaviour is a function of time. Upstream injects a clock into its sync for
//! unit tests; here the whole controller takes one, so an integration test can run a schedule of
//! every minute for five minutes in a few seconds (a clock running faster than the wall clock,
//! whose waits are shortened alike), against the sim and through the real client.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

/// Time as the controller sees it.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;

    /// The real time to wait for `duration` of this clock to pass.
    fn real(&self, duration: Duration) -> Duration {
        duration
    }
}

/// The system's clock (what the manager runs with).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}
