#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod client_throttle;
pub mod configz;
pub mod context;
pub mod controller_flags;
pub mod controller_selection;
pub mod controllers;
pub mod delegated_auth;
pub mod feature_gates;
pub mod fenced_connection;
pub mod go_duration;
pub mod health;
pub mod leader_election;
pub mod options;
pub mod rbac;
pub mod registry;
pub mod rest_client;
pub mod run;
pub mod server;
pub mod write_fence;

pub use context::ControllerContext;
pub use controller_selection::ControllerSelection;
pub use controllers::default_registry;
pub use options::Options;
pub use registry::{ControllerDescriptor, ControllerRegistry, InitError};
pub use run::{RunError, run};
