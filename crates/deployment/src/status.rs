//! calculateStatus: the Deployment status derived from its ReplicaSets, and Go's
//! notion of "the status did not change" over k8s-openapi's optional fields.

use informer::{CachedDeployment, CachedReplicaSet};

use k8s_openapi::api::apps::v1::DeploymentStatus;
use k8s_openapi::jiff::Timestamp;

use crate::conditions::{new_condition, set_condition};
use crate::constants::{
    CONDITION_AVAILABLE, REASON_MINIMUM_REPLICAS_AVAILABLE, REASON_MINIMUM_REPLICAS_UNAVAILABLE,
};
use crate::replica_set::{
    sum_available_replicas, sum_ready_replicas, sum_spec_replicas, sum_status_replicas,
};
use crate::rollout_limits::min_available;

/// Feature gates that change the Deployment status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGates {
    /// `DeploymentReplicaSetTerminatingReplicas` (beta and on by default since v1.35).
    pub deployment_replica_set_terminating_replicas: bool,
}

impl Default for FeatureGates {
    /// The v1.36 defaults.
    fn default() -> Self {
        FeatureGates {
            deployment_replica_set_terminating_replicas: true,
        }
    }
}

/// GetTerminatingReplicaCountForReplicaSets: the sum of RS `status.terminatingReplicas`;
/// never-synced ReplicaSets (observedGeneration 0, field null) count 0; any other null makes
/// the total unknown (`None`).
pub fn terminating_replicas<'a>(
    rss: impl IntoIterator<Item = &'a CachedReplicaSet>,
) -> Option<i32> {
    let mut total = 0i32;
    for rs in rss {
        let status = rs.status.as_ref();
        let terminating = status.and_then(|s| s.terminating_replicas);
        let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
        match terminating {
            Some(count) => total = total.saturating_add(count),
            None if observed == 0 => {}
            None => return None,
        }
    }
    Some(total)
}

/// Go's zero value of a non-pointer int: absent.
fn non_zero<T: PartialEq + Default>(value: T) -> Option<T> {
    (value != T::default()).then_some(value)
}

/// calculateStatus: a fresh status from all ReplicaSets (`all` includes `new_rs`).
/// Zero counters are left absent, as the API server returns them, so the result compares
/// equal to a stored status with the same values.
pub fn calculate_status(
    all: &[&CachedReplicaSet],
    new_rs: Option<&CachedReplicaSet>,
    d: &CachedDeployment,
    gates: FeatureGates,
    now: Timestamp,
) -> DeploymentStatus {
    let available = sum_available_replicas(all.iter().copied());
    let total = sum_spec_replicas(all.iter().copied());
    let unavailable = total.saturating_sub(available).max(0);
    let current = d.status.as_ref();
    let mut status = DeploymentStatus {
        observed_generation: d.metadata.generation.and_then(non_zero),
        replicas: non_zero(sum_status_replicas(all.iter().copied())),
        updated_replicas: non_zero(sum_status_replicas(new_rs)),
        ready_replicas: non_zero(sum_ready_replicas(all.iter().copied())),
        available_replicas: non_zero(available),
        unavailable_replicas: non_zero(unavailable),
        terminating_replicas: if gates.deployment_replica_set_terminating_replicas {
            terminating_replicas(all.iter().copied())
        } else {
            None
        },
        collision_count: current.and_then(|s| s.collision_count),
        conditions: current
            .and_then(|s| s.conditions.clone())
            .filter(|c| !c.is_empty()),
    };
    let (state, reason, message) = if available >= min_available(d) {
        let message = "Deployment has minimum availability.";
        ("True", REASON_MINIMUM_REPLICAS_AVAILABLE, message)
    } else {
        let message = "Deployment does not have minimum availability.";
        ("False", REASON_MINIMUM_REPLICAS_UNAVAILABLE, message)
    };
    let condition = new_condition(CONDITION_AVAILABLE, state, reason, message, now);
    set_condition(&mut status, condition);
    status
}

/// A status with Go's zero values made absent (non-pointer counters, empty lists, empty
/// condition strings), so that equal Go values compare equal.
pub fn normalized(status: &DeploymentStatus) -> DeploymentStatus {
    let conditions = status
        .conditions
        .iter()
        .flatten()
        .map(|condition| {
            let mut condition = condition.clone();
            condition.reason = condition.reason.filter(|r| !r.is_empty());
            condition.message = condition.message.filter(|m| !m.is_empty());
            condition
        })
        .collect::<Vec<_>>();
    DeploymentStatus {
        available_replicas: status.available_replicas.and_then(non_zero),
        collision_count: status.collision_count,
        conditions: non_zero(conditions),
        observed_generation: status.observed_generation.and_then(non_zero),
        ready_replicas: status.ready_replicas.and_then(non_zero),
        replicas: status.replicas.and_then(non_zero),
        terminating_replicas: status.terminating_replicas,
        unavailable_replicas: status.unavailable_replicas.and_then(non_zero),
        updated_replicas: status.updated_replicas.and_then(non_zero),
    }
}

/// Whether two statuses are the same Go value (reflect.DeepEqual after decoding).
pub fn status_equal(a: Option<&DeploymentStatus>, b: Option<&DeploymentStatus>) -> bool {
    let empty = DeploymentStatus::default();
    normalized(a.unwrap_or(&empty)) == normalized(b.unwrap_or(&empty))
}

/// syncDeploymentStatus's test: `status` when it differs from the stored one (the PUT to
/// make), else `None`.
pub fn changed_status(d: &CachedDeployment, status: DeploymentStatus) -> Option<DeploymentStatus> {
    (!status_equal(d.status.as_ref(), Some(&status))).then_some(status)
}

/// The non-pointer counter of a stored status (0 when absent).
pub(crate) fn counter(value: Option<i32>) -> i32 {
    value.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::ReplicaSetStatus;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::conditions::get_condition;
    use crate::replica_set::test_support::{at, rolling, rs};

    #[test]
    fn counts_and_available_condition() {
        let mut d = rolling(10, IntOrString::Int(3), IntOrString::Int(2));
        d.status = Some(DeploymentStatus {
            collision_count: Some(2),
            ..Default::default()
        });
        let old = rs("old", 0, 6, 6);
        let mut new_rs = rs("new", 1, 4, 1);
        if let Some(s) = new_rs.status.as_mut() {
            s.ready_replicas = Some(2);
        }
        let all = [&old, &new_rs];
        let status = calculate_status(
            &all,
            Some(&new_rs),
            &d,
            FeatureGates {
                deployment_replica_set_terminating_replicas: false,
            },
            at(0),
        );
        assert_eq!(status.observed_generation, Some(1));
        assert_eq!(status.replicas, Some(10));
        assert_eq!(status.updated_replicas, Some(4));
        assert_eq!(status.ready_replicas, Some(8));
        assert_eq!(status.available_replicas, Some(7));
        assert_eq!(status.unavailable_replicas, Some(3));
        assert_eq!(status.collision_count, Some(2));
        assert_eq!(status.terminating_replicas, None);
        // 7 < 10 - 2.
        let available = get_condition(Some(&status), "Available").expect("set");
        assert_eq!(
            (available.status.as_str(), available.reason.as_deref()),
            ("False", Some("MinimumReplicasUnavailable"))
        );
        let healthy = rs("new", 1, 4, 4);
        let status = calculate_status(
            &[&old, &healthy],
            Some(&healthy),
            &d,
            FeatureGates::default(),
            at(0),
        );
        let available = get_condition(Some(&status), "Available").expect("set");
        assert_eq!(
            available.message.as_deref(),
            Some("Deployment has minimum availability.")
        );
    }

    #[test]
    fn unavailable_is_never_negative_and_zeroes_are_absent() {
        let d = rolling(0, IntOrString::Int(1), IntOrString::Int(0));
        let over = rs("a", 0, 0, 2);
        let status = calculate_status(&[&over], None, &d, FeatureGates::default(), at(0));
        assert_eq!(status.unavailable_replicas, None);
        assert_eq!(status.updated_replicas, None);
        assert_eq!(status.replicas, None);
    }

    #[test]
    fn terminating_replicas_table() {
        let with = |terminating: Option<i32>, observed: Option<i64>| {
            let mut r = rs("x", 0, 1, 1);
            r.status = Some(ReplicaSetStatus {
                replicas: 1,
                terminating_replicas: terminating,
                observed_generation: observed,
                ..Default::default()
            });
            r
        };
        let cases = [
            (
                vec![with(Some(2), Some(1)), with(Some(1), Some(3))],
                Some(3),
            ),
            (vec![with(Some(2), Some(1)), with(None, None)], Some(2)),
            (vec![with(Some(2), Some(1)), with(None, Some(2))], None),
            (vec![], Some(0)),
        ];
        for (list, want) in cases {
            assert_eq!(terminating_replicas(&list), want);
        }
    }

    #[test]
    fn status_equality_treats_go_zero_values_as_absent() {
        let a = DeploymentStatus {
            replicas: Some(0),
            conditions: Some(vec![]),
            ..Default::default()
        };
        assert!(status_equal(Some(&a), None));
        let b = DeploymentStatus {
            collision_count: Some(0),
            ..Default::default()
        };
        assert!(!status_equal(Some(&b), None));
    }

    #[test]
    fn sync_deployment_status_skips_unchanged() {
        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        let r = rs("a", 0, 1, 1);
        let calculate = |d: &CachedDeployment, now| {
            calculate_status(&[&r], Some(&r), d, FeatureGates::default(), now)
        };
        let status = changed_status(&d, calculate(&d, at(0))).expect("first write");
        d.status = Some(status);
        assert_eq!(changed_status(&d, calculate(&d, at(9))), None);
    }
}
