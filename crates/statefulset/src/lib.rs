#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod controller;
pub mod decide;
mod features;
mod handlers;
pub mod identity;
mod metrics;
mod pod_control;
pub mod raw;
pub mod retention;
mod revisions;

pub use controller::{CONTROLLER_NAME, QUEUE_NAME, StatefulSetController, StatefulSetError};
pub use features::FeatureGates;
pub use metrics::StatefulSetMetrics;
pub use workqueue::ControllerMetrics;
