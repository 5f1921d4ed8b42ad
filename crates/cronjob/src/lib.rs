#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod clock;
mod context;
mod controller;
pub mod decide;
mod descriptor;
mod handlers;
pub mod metrics;

pub use clock::{Clock, SystemClock};
pub use context::{CLIENT_NAME, CONTROLLER_NAME, CronJobOptions, QUEUE_NAME, SyncError};
pub use controller::{CronJobController, CronJobSync};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::DESCRIPTOR;
pub use metrics::CronJobMetrics;
