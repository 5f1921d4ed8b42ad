//! Events the Deployment controller emits, with upstream's reasons and message
//! formats, which `kubectl describe` users and tests read.

use std::fmt;

use crate::constants::REASON_FAILED_RS_CREATE;
use EventType::{Normal, Warning};

/// Normal or Warning, as in `core/v1` Event `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Something expected happened.
    Normal,
    /// Something needs attention.
    Warning,
}

/// An event to record on the Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Normal or Warning.
    pub type_: EventType,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// Reason of scaling events.
pub const REASON_SCALING_REPLICA_SET: &str = "ScalingReplicaSet";
/// Reason of the empty-selector warning.
pub const REASON_SELECTING_ALL: &str = "SelectingAll";
/// Reason of a performed rollback.
pub const REASON_ROLLBACK_DONE: &str = "DeploymentRollback";
/// Reason of a rollback to a revision that does not exist.
pub const REASON_ROLLBACK_REVISION_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
/// Reason of a rollback to the current template.
pub const REASON_ROLLBACK_TEMPLATE_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";

fn event(type_: EventType, reason: &'static str, message: impl Into<String>) -> Event {
    Event {
        type_,
        reason,
        message: message.into(),
    }
}

/// `Scaled up replica set <rs> to <n>` after creating a ReplicaSet with `n > 0` replicas.
pub fn scaled_up_on_creation(replica_set: &str, replicas: i32) -> Event {
    let message = format!("Scaled up replica set {replica_set} to {replicas}");
    event(Normal, REASON_SCALING_REPLICA_SET, message)
}

/// `Scaled <op> replica set <rs> from <old> to <n>` after a successful resize (the order
/// since v1.32, kubernetes#125118; before: "to <n> from <old>").
pub fn scaled(operation: impl fmt::Display, replica_set: &str, to: i32, from: i32) -> Event {
    let message = format!("Scaled {operation} replica set {replica_set} from {from} to {to}");
    event(Normal, REASON_SCALING_REPLICA_SET, message)
}

/// The message of a failed ReplicaSet creation (event and Progressing condition).
pub fn replica_set_create_error_message(replica_set: &str, error: impl fmt::Display) -> String {
    format!("Failed to create new replica set {replica_set:?}: {error}")
}

/// Warning after a failed ReplicaSet creation.
pub fn replica_set_create_error(replica_set: &str, error: impl fmt::Display) -> Event {
    let message = replica_set_create_error_message(replica_set, error);
    event(Warning, REASON_FAILED_RS_CREATE, message)
}

/// Warning for a Deployment whose selector is empty.
pub fn selecting_all() -> Event {
    let message = "This deployment is selecting all pods. A non-empty selector is required.";
    event(Warning, REASON_SELECTING_ALL, message)
}

/// Normal event after a performed rollback.
pub fn rollback_done(deployment: &str, revision: i64) -> Event {
    let message = format!("Rolled back deployment {deployment:?} to revision {revision}");
    event(Normal, REASON_ROLLBACK_DONE, message)
}

/// Warning when rollback-to-previous finds no previous revision.
pub fn rollback_last_revision_not_found() -> Event {
    let message = "Unable to find last revision.";
    event(Warning, REASON_ROLLBACK_REVISION_NOT_FOUND, message)
}

/// Warning when no ReplicaSet has the requested revision.
pub fn rollback_revision_not_found() -> Event {
    let message = "Unable to find the revision to rollback to.";
    event(Warning, REASON_ROLLBACK_REVISION_NOT_FOUND, message)
}

/// Warning when the requested revision has the current template.
pub fn rollback_template_unchanged(deployment: &str) -> Event {
    let message = format!(
        "The rollback revision contains the same template as current deployment {deployment:?}"
    );
    event(Warning, REASON_ROLLBACK_TEMPLATE_UNCHANGED, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_upstream() {
        let cases = [
            (
                scaled_up_on_creation("web-abc", 3),
                EventType::Normal,
                "ScalingReplicaSet",
                "Scaled up replica set web-abc to 3",
            ),
            (
                scaled("down", "web-abc", 1, 3),
                EventType::Normal,
                "ScalingReplicaSet",
                "Scaled down replica set web-abc from 3 to 1",
            ),
            (
                replica_set_create_error("web-abc", "boom"),
                EventType::Warning,
                "ReplicaSetCreateError",
                "Failed to create new replica set \"web-abc\": boom",
            ),
            (
                selecting_all(),
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            ),
            (
                rollback_done("web", 2),
                EventType::Normal,
                "DeploymentRollback",
                "Rolled back deployment \"web\" to revision 2",
            ),
            (
                rollback_last_revision_not_found(),
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Unable to find last revision.",
            ),
            (
                rollback_revision_not_found(),
                EventType::Warning,
                "DeploymentRollbackRevisionNotFound",
                "Unable to find the revision to rollback to.",
            ),
            (
                rollback_template_unchanged("web"),
                EventType::Warning,
                "DeploymentRollbackTemplateUnchanged",
                "The rollback revision contains the same template as current deployment \"web\"",
            ),
        ];
        for (event, type_, reason, message) in cases {
            assert_eq!(
                (event.type_, event.reason, event.message.as_str()),
                (type_, reason, message)
            );
        }
    }
}
