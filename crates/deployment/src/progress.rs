//! Rollout progress: completeness, progress, the progress deadline, the
//! syncRolloutStatus decision (new conditions, whether to write, when to look again) and
//! the paused/resumed condition.

use std::time::Duration;

use informer::{CachedDeployment, CachedReplicaSet};

use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};
use k8s_openapi::jiff::Timestamp;

use crate::conditions::{
    get_condition, new_condition, reason, remove_condition, replica_set_to_deployment_condition,
    set_condition,
};
use crate::constants::{
    CONDITION_PROGRESSING, CONDITION_REPLICA_FAILURE, REASON_NEW_RS_AVAILABLE, REASON_PAUSED,
    REASON_REPLICA_SET_UPDATED, REASON_RESUMED, REASON_TIMED_OUT, UNLIMITED,
};
use crate::replica_set::{deployment_name, deployment_paused, deployment_replicas, rs_name};
use crate::status::{FeatureGates, calculate_status, counter, status_equal};

const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// HasProgressDeadline: `progressDeadlineSeconds` set and not MaxInt32.
pub fn has_progress_deadline(d: &CachedDeployment) -> bool {
    progress_deadline_seconds(d).is_some()
}

fn progress_deadline_seconds(d: &CachedDeployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|spec| spec.progress_deadline_seconds)
        .filter(|seconds| *seconds != UNLIMITED)
}

/// DeploymentComplete: updated == replicas == available == `spec.replicas` and the
/// status observed the current generation.
pub fn deployment_complete(d: &CachedDeployment, status: Option<&DeploymentStatus>) -> bool {
    let replicas = deployment_replicas(d);
    let status = status.cloned().unwrap_or_default();
    counter(status.updated_replicas) == replicas
        && counter(status.replicas) == replicas
        && counter(status.available_replicas) == replicas
        && status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0)
}

/// DeploymentComplete on the stored status, the test that gates history cleanup.
pub fn deployment_complete_per_stored_status(d: &CachedDeployment) -> bool {
    deployment_complete(d, d.status.as_ref())
}

/// DeploymentProgressing: `new_status` shows progress over the stored status.
pub fn deployment_progressing(d: &CachedDeployment, new_status: &DeploymentStatus) -> bool {
    let old = d.status.clone().unwrap_or_default();
    let old_old_replicas = counter(old.replicas).saturating_sub(counter(old.updated_replicas));
    let new_old_replicas =
        counter(new_status.replicas).saturating_sub(counter(new_status.updated_replicas));
    counter(new_status.updated_replicas) > counter(old.updated_replicas)
        || new_old_replicas < old_old_replicas
        || counter(new_status.ready_replicas) > counter(old.ready_replicas)
        || counter(new_status.available_replicas) > counter(old.available_replicas)
}

/// `lastUpdateTime + deadline - now` in nanoseconds (a missing time is Go's zero time, long
/// past).
fn nanos_until_deadline(
    condition: &DeploymentCondition,
    deadline_seconds: i32,
    now: Timestamp,
) -> Option<i128> {
    let last_update = condition.last_update_time.as_ref()?.0;
    Some(
        last_update.as_nanosecond() + i128::from(deadline_seconds) * NANOS_PER_SECOND
            - now.as_nanosecond(),
    )
}

/// DeploymentTimedOut: a deadline, a Progressing condition in `new_status` not
/// `NewReplicaSetAvailable`, and either already timed out or `lastUpdateTime + deadline`
/// before `now`.
pub fn deployment_timed_out(
    d: &CachedDeployment,
    new_status: &DeploymentStatus,
    now: Timestamp,
) -> bool {
    let Some(deadline) = progress_deadline_seconds(d) else {
        return false;
    };
    let Some(condition) = get_condition(Some(new_status), CONDITION_PROGRESSING) else {
        return false;
    };
    match reason(condition) {
        REASON_NEW_RS_AVAILABLE => false,
        REASON_TIMED_OUT => true,
        _ => nanos_until_deadline(condition, deadline, now).is_none_or(|left| left < 0),
    }
}

/// When to look at the Deployment again although nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requeue {
    /// No requeue.
    Never,
    /// `AddRateLimited` (the deadline is less than a second away or past).
    RateLimited,
    /// `AddAfter` this long.
    After(Duration),
}

/// The outcome of syncRolloutStatus.
#[derive(Debug, Clone, PartialEq)]
pub struct RolloutStatusDecision {
    /// Status to PUT; `None` when it equals the stored one.
    pub update: Option<DeploymentStatus>,
    /// Requeue for a stuck rollout (only when nothing is written).
    pub requeue: Requeue,
}

/// getReplicaFailures: the new ReplicaSet's ReplicaFailure conditions, else those of all
/// ReplicaSets in order, converted to Deployment conditions.
pub fn replica_failures(
    all: &[&CachedReplicaSet],
    new_rs: Option<&CachedReplicaSet>,
) -> Vec<DeploymentCondition> {
    let failures = |rs: &CachedReplicaSet| -> Vec<DeploymentCondition> {
        rs.status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|condition| condition.type_ == CONDITION_REPLICA_FAILURE)
            .map(replica_set_to_deployment_condition)
            .collect()
    };
    let from_new = new_rs.map(failures).unwrap_or_default();
    if !from_new.is_empty() {
        return from_new;
    }
    all.iter().flat_map(|rs| failures(rs)).collect()
}

/// The Progressing condition syncRolloutStatus sets for `status`: complete, progressing or
/// timed out, in that order; `None` when none applies.
fn progressing_condition(
    d: &CachedDeployment,
    status: &DeploymentStatus,
    subject: &str,
    now: Timestamp,
) -> Option<DeploymentCondition> {
    let (state, why, what) = if deployment_complete(d, Some(status)) {
        (
            "True",
            REASON_NEW_RS_AVAILABLE,
            "has successfully progressed",
        )
    } else if deployment_progressing(d, status) {
        ("True", REASON_REPLICA_SET_UPDATED, "is progressing")
    } else if deployment_timed_out(d, status, now) {
        ("False", REASON_TIMED_OUT, "has timed out progressing")
    } else {
        return None;
    };
    let message = format!("{subject} {what}.");
    let condition = new_condition(CONDITION_PROGRESSING, state, why, message, now);
    Some(condition)
}

/// syncRolloutStatus. `all` includes `new_rs`.
pub fn sync_rollout_status(
    all: &[&CachedReplicaSet],
    new_rs: Option<&CachedReplicaSet>,
    d: &CachedDeployment,
    gates: FeatureGates,
    now: Timestamp,
) -> RolloutStatusDecision {
    let mut status = calculate_status(all, new_rs, d, gates, now);
    if !has_progress_deadline(d) {
        remove_condition(&mut status, CONDITION_PROGRESSING);
    }
    let current = get_condition(d.status.as_ref(), CONDITION_PROGRESSING);
    let complete_already = counter(status.replicas) == counter(status.updated_replicas)
        && current.is_some_and(|c| reason(c) == REASON_NEW_RS_AVAILABLE);
    let subject = match new_rs {
        Some(rs) => format!("ReplicaSet {:?}", rs_name(rs)),
        None => format!("Deployment {:?}", deployment_name(d)),
    };
    if has_progress_deadline(d)
        && !complete_already
        && let Some(mut condition) = progressing_condition(d, &status, &subject, now)
    {
        // Progress always refreshes lastUpdateTime: the stored condition is replaced even
        // with the same reason, keeping its lastTransitionTime while the status stays True.
        if reason(&condition) == REASON_REPLICA_SET_UPDATED
            && let Some(current) = current
        {
            if current.status == "True" {
                condition.last_transition_time = current.last_transition_time.clone();
            }
            remove_condition(&mut status, CONDITION_PROGRESSING);
        }
        set_condition(&mut status, condition);
    }
    match replica_failures(all, new_rs).into_iter().next() {
        Some(failure) => set_condition(&mut status, failure),
        None => remove_condition(&mut status, CONDITION_REPLICA_FAILURE),
    }
    if status_equal(d.status.as_ref(), Some(&status)) {
        return RolloutStatusDecision {
            update: None,
            requeue: requeue_stuck_deployment(d, &status, now),
        };
    }
    RolloutStatusDecision {
        update: Some(status),
        requeue: Requeue::Never,
    }
}

/// requeueStuckDeployment: with a deadline and a stored Progressing condition,
/// not complete and not timed out, look again just after the deadline passes.
pub fn requeue_stuck_deployment(
    d: &CachedDeployment,
    new_status: &DeploymentStatus,
    now: Timestamp,
) -> Requeue {
    let Some(deadline) = progress_deadline_seconds(d) else {
        return Requeue::Never;
    };
    let Some(current) = get_condition(d.status.as_ref(), CONDITION_PROGRESSING) else {
        return Requeue::Never;
    };
    if deployment_complete(d, Some(new_status)) || reason(current) == REASON_TIMED_OUT {
        return Requeue::Never;
    }
    match nanos_until_deadline(current, deadline, now) {
        Some(after) if after >= NANOS_PER_SECOND => {
            let after = after + NANOS_PER_SECOND;
            Requeue::After(Duration::from_nanos(
                u64::try_from(after).unwrap_or(u64::MAX),
            ))
        }
        _ => Requeue::RateLimited,
    }
}

/// checkPausedConditions: the status to PUT when the paused/resumed Progressing
/// condition must change, else `None`.
pub fn check_paused_conditions(d: &CachedDeployment, now: Timestamp) -> Option<DeploymentStatus> {
    if !has_progress_deadline(d) {
        return None;
    }
    let current = get_condition(d.status.as_ref(), CONDITION_PROGRESSING);
    if current.is_some_and(|c| reason(c) == REASON_TIMED_OUT) {
        return None;
    }
    let paused_condition_exists = current.is_some_and(|c| reason(c) == REASON_PAUSED);
    let (why, message) = match (deployment_paused(d), paused_condition_exists) {
        (true, false) => (REASON_PAUSED, "Deployment is paused"),
        (false, true) => (REASON_RESUMED, "Deployment is resumed"),
        _ => return None,
    };
    let mut status = d.status.clone().unwrap_or_default();
    let condition = new_condition(CONDITION_PROGRESSING, "Unknown", why, message, now);
    set_condition(&mut status, condition);
    Some(status)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::replica_set::test_support::{at, rolling, rs};

    fn gates() -> FeatureGates {
        FeatureGates::default()
    }

    fn progressing(status: &str, why: &str, updated_at: i64) -> DeploymentCondition {
        let mut c = new_condition(CONDITION_PROGRESSING, status, why, "m", at(updated_at));
        c.last_transition_time = Some(Time(at(0)));
        c
    }

    fn updated_at(seconds: i64) -> DeploymentCondition {
        progressing("True", REASON_REPLICA_SET_UPDATED, seconds)
    }

    fn stored(
        d: &mut CachedDeployment,
        replicas: i32,
        updated: i32,
        available: i32,
        conditions: Vec<DeploymentCondition>,
    ) {
        d.status = Some(DeploymentStatus {
            observed_generation: Some(1),
            replicas: Some(replicas),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            ready_replicas: Some(available),
            conditions: Some(conditions),
            ..Default::default()
        });
    }

    fn progressing_of(status: &DeploymentStatus) -> (String, String, String) {
        let c = get_condition(Some(status), CONDITION_PROGRESSING).expect("progressing");
        (
            c.status.clone(),
            reason(c).to_owned(),
            c.message.clone().unwrap_or_default(),
        )
    }

    #[test]
    fn complete_and_progressing_predicates() {
        let mut d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        stored(&mut d, 4, 1, 3, vec![]);
        let done = DeploymentStatus {
            observed_generation: Some(1),
            replicas: Some(3),
            updated_replicas: Some(3),
            available_replicas: Some(3),
            ..Default::default()
        };
        assert!(deployment_complete(&d, Some(&done)));
        let stale = DeploymentStatus {
            observed_generation: Some(0),
            ..done.clone()
        };
        assert!(!deployment_complete(&d, Some(&stale)));
        // (replicas, updated, ready, available) vs stored (4, 1, 3, 3)
        let cases = [
            ((4, 2, 3, 3), true),
            ((3, 1, 3, 3), true),
            ((4, 1, 4, 3), true),
            ((4, 1, 3, 4), true),
            ((4, 1, 3, 3), false),
            ((5, 1, 2, 2), false),
        ];
        for ((replicas, updated, ready, available), want) in cases {
            let s = DeploymentStatus {
                replicas: Some(replicas),
                updated_replicas: Some(updated),
                ready_replicas: Some(ready),
                available_replicas: Some(available),
                ..Default::default()
            };
            assert_eq!(
                deployment_progressing(&d, &s),
                want,
                "{replicas} {updated} {ready} {available}"
            );
        }
    }

    #[test]
    fn rollout_status_complete_sets_new_rs_available() {
        let mut d = rolling(2, IntOrString::Int(1), IntOrString::Int(0));
        stored(&mut d, 3, 2, 2, vec![updated_at(10)]);
        let new_rs = rs("web-new", 1, 2, 2);
        let decision = sync_rollout_status(&[&new_rs], Some(&new_rs), &d, gates(), at(20));
        let status = decision.update.expect("written");
        assert_eq!(
            progressing_of(&status),
            (
                "True".into(),
                REASON_NEW_RS_AVAILABLE.into(),
                "ReplicaSet \"web-new\" has successfully progressed.".into()
            )
        );
        let c = get_condition(Some(&status), CONDITION_PROGRESSING).expect("set");
        assert_eq!(c.last_transition_time, Some(Time(at(0))));
        // Stored again: nothing to write, and a complete rollout is not requeued.
        d.status = Some(status);
        let again = sync_rollout_status(&[&new_rs], Some(&new_rs), &d, gates(), at(30));
        assert_eq!(
            again,
            RolloutStatusDecision {
                update: None,
                requeue: Requeue::Never
            }
        );
    }

    #[test]
    fn rollout_status_progress_refreshes_update_time() {
        let mut d = rolling(2, IntOrString::Int(1), IntOrString::Int(0));
        stored(&mut d, 2, 0, 2, vec![updated_at(10)]);
        let old = rs("web-old", 0, 2, 2);
        let new_rs = rs("web-new", 1, 1, 0);
        let decision = sync_rollout_status(&[&old, &new_rs], Some(&new_rs), &d, gates(), at(20));
        let status = decision.update.expect("written");
        let c = get_condition(Some(&status), CONDITION_PROGRESSING).expect("set");
        assert_eq!(reason(c), REASON_REPLICA_SET_UPDATED);
        assert_eq!(c.last_update_time, Some(Time(at(20))));
        assert_eq!(c.last_transition_time, Some(Time(at(0))));
        assert_eq!(
            c.message.as_deref(),
            Some("ReplicaSet \"web-new\" is progressing.")
        );
    }

    #[test]
    fn rollout_status_times_out_and_requeues_before() {
        let mut d = rolling(2, IntOrString::Int(1), IntOrString::Int(0));
        let old = rs("web-old", 0, 2, 2);
        let new_rs = rs("web-new", 1, 1, 0);
        let mut new_rs_counted = new_rs.clone();
        new_rs_counted.status = Some(ReplicaSetStatus {
            replicas: 1,
            ..Default::default()
        });
        // Stored status equals what will be computed: no progress.
        stored(&mut d, 3, 1, 2, vec![updated_at(100)]);
        let all = [&old, &new_rs_counted];
        // Before the deadline (100 + 600 = 700): Available gets set, so compute once and store.
        let first = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(200));
        d.status = first.update.or(d.status);
        let waiting = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(200));
        assert_eq!(waiting.update, None);
        assert_eq!(waiting.requeue, Requeue::After(Duration::from_secs(501)));
        // One second left is not "under 1s": AddAfter(1s + 1s).
        let close = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(699));
        assert_eq!(close.requeue, Requeue::After(Duration::from_secs(2)));
        // Exactly at the deadline: not yet timed out (strictly before), rate-limited requeue.
        let at_deadline = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(700));
        assert_eq!(
            at_deadline,
            RolloutStatusDecision {
                update: None,
                requeue: Requeue::RateLimited
            }
        );
        // After the deadline: ProgressDeadlineExceeded.
        let late = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(701));
        let status = late.update.expect("written");
        assert_eq!(
            progressing_of(&status),
            (
                "False".into(),
                REASON_TIMED_OUT.into(),
                "ReplicaSet \"web-new\" has timed out progressing.".into()
            )
        );
        d.status = Some(status);
        let after = sync_rollout_status(&all, Some(&new_rs_counted), &d, gates(), at(800));
        assert_eq!(
            after,
            RolloutStatusDecision {
                update: None,
                requeue: Requeue::Never
            }
        );
    }

    #[test]
    fn without_deadline_progressing_is_removed() {
        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        if let Some(spec) = d.spec.as_mut() {
            spec.progress_deadline_seconds = Some(i32::MAX);
        }
        let complete = progressing("True", REASON_NEW_RS_AVAILABLE, 1);
        stored(&mut d, 1, 1, 1, vec![complete]);
        let r = rs("web-new", 0, 1, 1);
        let status = sync_rollout_status(&[&r], Some(&r), &d, gates(), at(5))
            .update
            .expect("written");
        assert!(get_condition(Some(&status), CONDITION_PROGRESSING).is_none());
    }

    #[test]
    fn replica_failure_prefers_new_replica_set() {
        let failing = |name: &str, message: &str| {
            let mut r = rs(name, 0, 1, 0);
            if let Some(s) = r.status.as_mut() {
                s.conditions = Some(vec![ReplicaSetCondition {
                    type_: CONDITION_REPLICA_FAILURE.to_owned(),
                    status: "True".to_owned(),
                    reason: Some("FailedCreate".to_owned()),
                    message: Some(message.to_owned()),
                    last_transition_time: Some(Time(at(3))),
                }]);
            }
            r
        };
        let old = failing("old", "from old");
        let new_rs = failing("new", "from new");
        let healthy = rs("new", 0, 1, 1);
        let got = replica_failures(&[&old, &new_rs], Some(&new_rs));
        assert_eq!(got[0].message.as_deref(), Some("from new"));
        let got = replica_failures(&[&old, &healthy], Some(&healthy));
        assert_eq!(got[0].message.as_deref(), Some("from old"));
        assert!(replica_failures(&[&healthy], Some(&healthy)).is_empty());
    }

    #[test]
    fn paused_conditions_table() {
        let cases = [
            (true, None, Some(REASON_PAUSED)),
            (true, Some(REASON_PAUSED), None),
            (false, Some(REASON_PAUSED), Some(REASON_RESUMED)),
            (false, Some(REASON_REPLICA_SET_UPDATED), None),
            (true, Some(REASON_TIMED_OUT), None),
        ];
        for (paused, existing, want) in cases {
            let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
            if let Some(spec) = d.spec.as_mut() {
                spec.paused = Some(paused);
            }
            let conditions = existing
                .map(|why| vec![progressing("Unknown", why, 0)])
                .unwrap_or_default();
            stored(&mut d, 1, 1, 1, conditions);
            let got = check_paused_conditions(&d, at(9));
            assert_eq!(
                got.as_ref().map(|s| progressing_of(s).1),
                want.map(str::to_owned),
                "{paused} {existing:?}"
            );
        }
        let mut no_deadline = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        if let Some(spec) = no_deadline.spec.as_mut() {
            spec.paused = Some(true);
            spec.progress_deadline_seconds = None;
        }
        assert_eq!(check_paused_conditions(&no_deadline, at(0)), None);
    }
}
