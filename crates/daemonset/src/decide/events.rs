//! The events the DaemonSet controller's decisions record on the DaemonSet, with upstream's
//! reasons and message texts (what `kubectl describe` users and scripts read). Pod creation
//! and deletion events come from the toolkit's pod control.

use controller_toolkit::EventType;

/// Reason of the empty-selector warning.
pub const SELECTING_ALL_REASON: &str = "SelectingAll";
/// Reason of the warning before a failed daemon pod is deleted.
pub const FAILED_DAEMON_POD_REASON: &str = "FailedDaemonPod";
/// Reason of the event before a succeeded daemon pod is deleted.
pub const SUCCEEDED_DAEMON_POD_REASON: &str = "SucceededDaemonPod";

/// An event to record on the DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub type_: EventType,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// Warning for a DaemonSet whose selector is empty (`syncDaemonSet` step 4).
pub fn selecting_all() -> Event {
    Event {
        type_: EventType::Warning,
        reason: SELECTING_ALL_REASON,
        message: "This daemon set is selecting all pods. A non-empty selector is required."
            .to_owned(),
    }
}

/// Warning for a failed daemon pod about to be deleted (`podsShouldBeOnNode`).
pub fn failed_daemon_pod(namespace: &str, pod: &str, node: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: FAILED_DAEMON_POD_REASON,
        message: format!(
            "Found failed daemon pod {namespace}/{pod} on node {node}, will try to kill it"
        ),
    }
}

/// Normal event for a succeeded daemon pod about to be deleted (`podsShouldBeOnNode`).
pub fn succeeded_daemon_pod(namespace: &str, pod: &str, node: &str) -> Event {
    Event {
        type_: EventType::Normal,
        reason: SUCCEEDED_DAEMON_POD_REASON,
        message: format!(
            "Found succeeded daemon pod {namespace}/{pod} on node {node}, will try to delete it"
        ),
    }
}
