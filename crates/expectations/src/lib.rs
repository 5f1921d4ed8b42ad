#![doc = include_str!("../README.md")]

mod clock;
mod controller;
mod uid_tracking;

pub use clock::{Clock, ManualClock, SystemClock};
pub use controller::{ControllerExpectations, EXPECTATIONS_TIMEOUT, Expectation};
pub use uid_tracking::UidTrackingExpectations;
