//! Deployment condition helpers (upstream `deploymentutil` conditions): the rules that decide when
//! `lastTransitionTime` and `lastUpdateTime` move, which `kubectl rollout status` and the
//! progress deadline depend on.

use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus, ReplicaSetCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// NewDeploymentCondition: `lastUpdateTime = lastTransitionTime = now`.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.into()),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition's reason ("" when absent).
pub fn reason(condition: &DeploymentCondition) -> &str {
    condition.reason.as_deref().unwrap_or_default()
}

/// GetDeploymentCondition: the first condition of that type.
pub fn get_condition<'a>(
    status: Option<&'a DeploymentStatus>,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status?
        .conditions
        .as_ref()?
        .iter()
        .find(|condition| condition.type_ == type_)
}

/// SetDeploymentCondition: no-op when a condition of that type has the same status and
/// reason; otherwise replace it (appended at the end), keeping the old
/// `lastTransitionTime` when only the reason changed.
pub fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    if let Some(current) = get_condition(Some(status), &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &condition.type_);
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
}

/// RemoveDeploymentCondition: drop every condition of that type.
pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|condition| condition.type_ != type_);
    }
}

/// ReplicaSetToDeploymentCondition: both times are the ReplicaSet condition's
/// `lastTransitionTime`.
pub fn replica_set_to_deployment_condition(condition: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: condition.type_.clone(),
        status: condition.status.clone(),
        reason: condition.reason.clone(),
        message: condition.message.clone(),
        last_update_time: condition.last_transition_time.clone(),
        last_transition_time: condition.last_transition_time.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica_set::test_support::at;

    fn types(status: &DeploymentStatus) -> Vec<(String, String, String)> {
        status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone(), reason(c).to_owned()))
            .collect()
    }

    #[test]
    fn set_condition_rules() {
        let mut status = DeploymentStatus::default();
        set_condition(
            &mut status,
            new_condition("Progressing", "True", "A", "m", at(0)),
        );
        set_condition(
            &mut status,
            new_condition("Available", "True", "X", "m", at(0)),
        );
        // Same status and reason: no-op (times untouched).
        set_condition(
            &mut status,
            new_condition("Progressing", "True", "A", "other", at(5)),
        );
        let p = get_condition(Some(&status), "Progressing").expect("present");
        assert_eq!(p.last_update_time, Some(Time(at(0))));
        assert_eq!(p.message.as_deref(), Some("m"));
        // Reason change with same status: moved to the end, transition time kept.
        set_condition(
            &mut status,
            new_condition("Progressing", "True", "B", "m", at(10)),
        );
        let p = get_condition(Some(&status), "Progressing").expect("present");
        assert_eq!(p.last_transition_time, Some(Time(at(0))));
        assert_eq!(p.last_update_time, Some(Time(at(10))));
        assert_eq!(types(&status)[1].0, "Progressing");
        // Status change: both times new.
        set_condition(
            &mut status,
            new_condition("Progressing", "False", "C", "m", at(20)),
        );
        let p = get_condition(Some(&status), "Progressing").expect("present");
        assert_eq!(p.last_transition_time, Some(Time(at(20))));
        remove_condition(&mut status, "Progressing");
        assert_eq!(
            types(&status),
            [("Available".into(), "True".into(), "X".into())]
        );
    }

    #[test]
    fn replica_failure_conversion_uses_transition_time() {
        let rs_condition = ReplicaSetCondition {
            type_: "ReplicaFailure".to_owned(),
            status: "True".to_owned(),
            reason: Some("FailedCreate".to_owned()),
            message: Some("quota".to_owned()),
            last_transition_time: Some(Time(at(7))),
        };
        let converted = replica_set_to_deployment_condition(&rs_condition);
        assert_eq!(converted.last_update_time, Some(Time(at(7))));
        assert_eq!(converted.last_transition_time, Some(Time(at(7))));
        assert_eq!(converted.reason.as_deref(), Some("FailedCreate"));
    }
}
