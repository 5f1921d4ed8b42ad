#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod control;
mod controller;
pub mod decide;
mod descriptor;
mod features;
pub mod identity;
mod metrics;
#[cfg(test)]
mod plan_bounds;
mod pod_control;
pub mod retention;
mod revisions;

pub use controller::{
    CONTROLLER_NAME, QUEUE_NAME, RawStatefulSet, StatefulSetController, StatefulSetError,
    StatefulSetOptions,
};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use decide::BrokenRolloutRecovery;
pub use descriptor::{DESCRIPTOR, MAX_UNAVAILABLE_GATE, RECOVER_FLAG, RECOVER_GRACE_FLAG};
pub use features::FeatureGates;
pub use metrics::StatefulSetMetrics;
pub use workqueue::ControllerMetrics;
