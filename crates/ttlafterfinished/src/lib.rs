#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod controller;
pub mod decide;
mod descriptor;
mod handlers;
pub mod metrics;

pub use controller::{
    CLIENT_NAME, CONTROLLER_NAME, QUEUE_NAME, SyncError, TtlAfterFinishedController,
    TtlAfterFinishedOptions, TtlAfterFinishedSync,
};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::DESCRIPTOR;
pub use metrics::TtlAfterFinishedMetrics;
