#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub mod api_errors;
pub mod availability;
pub mod controller_ref;
pub mod descriptor;
pub mod events;
#[cfg(feature = "testing")]
pub mod hostile_values;
pub mod keys;
pub mod pod_control;
pub mod pod_predicates;
pub mod ranking;
pub mod runtime;
pub mod shadow_view;
pub mod stale_reads;
pub mod write_holds;
pub mod write_watermarks;
pub mod writes;

pub use controller_ref::{
    ClaimDecision, ClaimResult, ControllerRefError, ControllerRefManager, new_controller_ref,
    recheck_deletion,
};
pub use events::{EventRecorder, EventType, RecorderConfig};
pub use keys::pod_key;
pub use pod_control::{PodControl, PodControlError, pod_from_template};
