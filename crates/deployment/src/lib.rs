#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod annotations;
pub mod cleanup;
pub mod conditions;
pub mod constants;
mod controller;
mod descriptor;
pub mod error;
pub mod events;
mod handlers;
pub mod new_replica_set;
#[cfg(test)]
mod planner_bounds;
pub mod progress;
pub mod proportional;
pub mod recreate;
pub mod replica_set;
pub mod revision;
pub mod rollback;
pub mod rolling;
pub mod rollout_limits;
pub mod rollout_path;
pub mod scaling;
pub mod semantic;
pub mod status;
pub mod status_coalescing;
mod sync;
pub mod template;
mod writes;

pub use controller::{CONTROLLER_NAME, DeploymentController, DeploymentError, DeploymentOptions};
pub use controller_toolkit::runtime::RuntimeOptions;
pub use descriptor::DESCRIPTOR;
pub use error::Error;
pub use workqueue::ControllerMetrics;
