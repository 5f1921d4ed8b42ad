//! kcm-rs only: a Deployment's counts-only status writes coalesced over a short window.
//!
//! Why (issue 21): during a rollout every ReplicaSet status change (a pod created, ready,
//! available, deleted) syncs the Deployment, and nearly each changes one of its counters, so a
//! 5-replica rollout PUT the Deployment's status about 12 times. The counters only report;
//! nothing in the controllers decides on them, and a client reading them (`kubectl rollout
//! status`) waits for the final state, which carries a condition change and is written at once.
//! So a write that changes only counters (and refreshes the Progressing condition's
//! `lastUpdateTime`, as progress does) waits up to [`COALESCE_WINDOW`] for the next ones and
//! goes out as one. Everything else — `observedGeneration`, a condition's status, reason or
//! message, the collision count — is written at once, as upstream does. The hold itself is
//! the toolkit's [`controller_toolkit::write_holds::WriteHolds`].

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};

/// How long a counts-only status change may wait for the next ones.
pub const COALESCE_WINDOW: Duration = Duration::from_secs(1);

/// Whether `new` differs from `stored` only in its counters and in conditions'
/// `lastUpdateTime`: a change nobody decides on, which may wait.
pub fn counts_only_change(stored: Option<&DeploymentStatus>, new: &DeploymentStatus) -> bool {
    let Some(stored) = stored else {
        return false;
    };
    /// A condition without its `lastUpdateTime`.
    fn essence(c: &DeploymentCondition) -> impl PartialEq + '_ {
        (
            &c.type_,
            &c.status,
            &c.reason,
            &c.message,
            &c.last_transition_time,
        )
    }
    let (before, after) = (
        stored.conditions.as_deref().unwrap_or_default(),
        new.conditions.as_deref().unwrap_or_default(),
    );
    stored.observed_generation == new.observed_generation
        && stored.collision_count.unwrap_or(0) == new.collision_count.unwrap_or(0)
        && before.len() == after.len()
        && before
            .iter()
            .zip(after)
            .all(|(a, b)| essence(a) == essence(b))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn progressing(reason: &str, updated: i64) -> DeploymentCondition {
        DeploymentCondition {
            type_: "Progressing".to_owned(),
            status: "True".to_owned(),
            reason: Some(reason.to_owned()),
            message: Some("ReplicaSet \"web-1\" is progressing.".to_owned()),
            last_transition_time: Some(Time(Timestamp::UNIX_EPOCH)),
            last_update_time: Some(Time(
                Timestamp::from_second(updated).expect("a valid second"),
            )),
        }
    }

    fn status(generation: i64, available: i32, condition: DeploymentCondition) -> DeploymentStatus {
        DeploymentStatus {
            observed_generation: Some(generation),
            replicas: Some(6),
            updated_replicas: Some(3),
            available_replicas: Some(available),
            conditions: Some(vec![condition]),
            ..Default::default()
        }
    }

    #[test]
    fn only_counter_and_progress_time_changes_may_wait() {
        let stored = status(2, 4, progressing("ReplicaSetUpdated", 10));
        #[rustfmt::skip]
        let cases = [
            ("a counter", status(2, 5, progressing("ReplicaSetUpdated", 10)), true),
            ("progress refreshed", status(2, 5, progressing("ReplicaSetUpdated", 11)), true),
            ("observedGeneration", status(3, 4, progressing("ReplicaSetUpdated", 10)), false),
            ("condition reason", status(2, 5, progressing("NewReplicaSetAvailable", 11)), false),
            ("a condition added", DeploymentStatus { conditions: Some(vec![progressing("ReplicaSetUpdated", 10), progressing("ReplicaSetUpdated", 10)]), ..stored.clone() }, false),
            ("collision count", DeploymentStatus { collision_count: Some(1), ..stored.clone() }, false),
        ];
        for (what, new, want) in cases {
            assert_eq!(counts_only_change(Some(&stored), &new), want, "{what}");
        }
        assert!(!counts_only_change(None, &stored), "the first status");
    }
}
