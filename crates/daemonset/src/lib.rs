#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod controller;
pub mod decide;
mod descriptor;
mod features;
mod nodes;
mod revisions;
mod sync_nodes;

pub use controller::{
    CLIENT_NAME, CONTROLLER_NAME, DaemonSetController, DaemonSetError, DaemonSetOptions,
    NODE_QUEUE_NAME, QUEUE_NAME, RawDaemonSet,
};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::{DESCRIPTOR, TAINT_COMPARISON_GATE};
pub use features::FeatureGates;
pub use workqueue::ControllerMetrics;
