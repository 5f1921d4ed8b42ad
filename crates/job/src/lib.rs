#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod context;
mod controller;
pub mod decide;
mod descriptor;
mod expectations;
mod handlers;
mod manage;
pub mod metrics;
mod orphans;
#[cfg(feature = "testing")]
pub mod testing;
mod tracking;

pub use context::{JobOptions, SyncError};
pub use controller::{
    CLIENT_NAME, CONTROLLER_NAME, JobController, JobError, JobSync, ORPHAN_QUEUE_NAME, QUEUE_NAME,
};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::DESCRIPTOR;
pub use metrics::JobMetrics;
pub use workqueue::ControllerMetrics;
