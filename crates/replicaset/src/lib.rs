#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod controller;
pub mod decide;
mod handlers;

pub use controller::{
    CONTROLLER_NAME, INVALID_SELECTOR_REASON, QUEUE_NAME, ReplicaSetController, ReplicaSetError,
};
pub use workqueue::ControllerMetrics;
