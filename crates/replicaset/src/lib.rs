#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod controller;
pub mod decide;
mod descriptor;
mod manage;
mod metrics;

pub use controller::{
    CONTROLLER_NAME, INVALID_SELECTOR_REASON, QUEUE_NAME, ReplicaSetController, ReplicaSetError,
    ReplicaSetOptions,
};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::{DESCRIPTOR, STATUS_HOLD_FLAG};
pub use metrics::StatusWritesHeld;
pub use workqueue::ControllerMetrics;
