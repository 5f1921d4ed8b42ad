//! Property tests: whatever a user (or a third party) writes into a Deployment and its
//! ReplicaSets — annotations, intstr fenceposts, replica counts, strategy — the planners never
//! panic and never plan a ReplicaSet size below 0 or above
//! `max(spec.replicas + maxSurge, the ReplicaSet's current size)`.
//!
//! Upstream has had this class of bug (kubernetes#128535: a `max-replicas: "0"` annotation
//! made proportional scaling ask for two billion pods), so the bound is checked over arbitrary
//! input rather than over the cases someone thought of.

use controller_toolkit::hostile_values::{self, int_or_string, one_of_two_or_garbage};
use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::api::apps::v1::{DeploymentStatus, DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;

use crate::constants::{DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION};
use crate::new_replica_set::build_new_replica_set;
use crate::proportional::{plan_scale, plan_sync};
use crate::recreate::{RecreatePlan, plan_recreate};
use crate::replica_set::deployment_replicas;
use crate::replica_set::test_support::{annotate, rolling, rs};
use crate::rolling::{RollingStep, plan_rolling_update};
use crate::rollout_limits::max_surge;
use crate::scaling::ScaleAction;

/// A replica count as the property tests draw it.
fn count() -> impl Strategy<Value = i32> {
    hostile_values::count(30)
}

/// A desired/max-replicas annotation value, or none.
fn replicas_annotation() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        2 => Just(None),
        3 => (0..40i32).prop_map(|n| Some(n.to_string())),
        1 => Just(Some("0".to_owned())),
        1 => any::<i64>().prop_map(|n| Some(n.to_string())),
        1 => "[-+]?[0-9]{0,12}".prop_map(Some),
        1 => ".{0,8}".prop_map(Some),
    ]
}

/// `strategy.type`: the two values, unset, or garbage.
fn strategy_type() -> impl Strategy<Value = Option<String>> {
    one_of_two_or_garbage([(4, "RollingUpdate"), (2, "Recreate")], "[A-Za-z]{0,6}")
}

prop_compose! {
    fn deployment()(
        replicas in count(),
        surge in proptest::option::of(int_or_string()),
        unavailable in proptest::option::of(int_or_string()),
        type_ in strategy_type(),
        status_replicas in proptest::option::of(count()),
        paused in any::<bool>(),
    ) -> CachedDeployment {
        let mut d = rolling(replicas, IntOrString::Int(0), IntOrString::Int(0));
        if let Some(spec) = d.spec.as_mut() {
            spec.strategy = Some(DeploymentStrategy {
                type_,
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: surge,
                    max_unavailable: unavailable,
                }),
            });
            spec.paused = Some(paused);
        }
        d.status = Some(DeploymentStatus {
            replicas: status_replicas,
            ..Default::default()
        });
        d
    }
}

prop_compose! {
    fn replica_set(name: &'static str)(
        created in 0..5i64,
        replicas in count(),
        status_replicas in count(),
        available in count(),
        desired in replicas_annotation(),
        max in replicas_annotation(),
    ) -> CachedReplicaSet {
        let mut r = rs(name, created, replicas, available);
        if let Some(status) = r.status.as_mut() {
            status.replicas = status_replicas;
        }
        if let Some(desired) = desired {
            r = annotate(r, DESIRED_REPLICAS_ANNOTATION, &desired);
        }
        if let Some(max) = max {
            r = annotate(r, MAX_REPLICAS_ANNOTATION, &max);
        }
        r
    }
}

fn old_replica_sets() -> impl Strategy<Value = Vec<CachedReplicaSet>> {
    (
        replica_set("old-a"),
        replica_set("old-b"),
        replica_set("old-c"),
        0..=3usize,
    )
        .prop_map(|(a, b, c, n)| [a, b, c].into_iter().take(n).collect())
}

/// The most replicas any ReplicaSet may be planned to have: `spec.replicas + maxSurge`, or
/// its size now when that is larger (a planner may leave a ReplicaSet alone or shrink it).
fn upper_bound(d: &CachedDeployment, current: i32) -> i64 {
    let surge = max_surge(d);
    assert!(surge >= 0, "maxSurge resolved to {surge}");
    (i64::from(deployment_replicas(d)) + i64::from(surge)).max(i64::from(current))
}

fn check(
    d: &CachedDeployment,
    planner: &str,
    actions: &[ScaleAction],
) -> Result<(), TestCaseError> {
    for action in actions {
        let bound = upper_bound(d, action.from);
        prop_assert!(
            action.to >= 0 && i64::from(action.to) <= bound,
            "{planner}: {action:?} outside [0, {bound}]"
        );
    }
    Ok(())
}

prop_compose! {
    /// A Deployment, maybe a new ReplicaSet, and up to three old ones.
    fn scenario()(
        d in deployment(),
        new_rs in proptest::option::of(replica_set("new")),
        old in old_replica_sets(),
    ) -> (CachedDeployment, Option<CachedReplicaSet>, Vec<CachedReplicaSet>) {
        (d, new_rs, old)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn proportional_scaling_stays_within_bounds((d, new_rs, old) in scenario()) {
        let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
        check(&d, "plan_scale", &plan_scale(&d, new_rs.as_ref(), &old_refs))?;
        check(&d, "plan_sync", &plan_sync(&d, new_rs.as_ref(), &old_refs).actions)?;
    }

    #[test]
    fn rolling_update_stays_within_bounds(
        d in deployment(),
        new_rs in replica_set("new"),
        old in old_replica_sets(),
    ) {
        let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
        if let Ok(plan) = plan_rolling_update(&d, &new_rs, &old_refs) {
            match plan.step {
                RollingStep::ScaleNew(action) => check(&d, "reconcile new", &[action])?,
                RollingStep::ScaleOld { actions, .. } => check(&d, "reconcile old", &actions)?,
                RollingStep::Settled => {}
            }
        }
    }

    #[test]
    fn recreate_stays_within_bounds((d, new_rs, old) in scenario()) {
        let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
        match plan_recreate(&d, new_rs.as_ref(), &old_refs, &[]) {
            RecreatePlan::ScaleDownOld(actions) => check(&d, "recreate scale down", &actions)?,
            RecreatePlan::ScaleUp(up) => check(&d, "recreate scale up", up.scale.as_slice())?,
            RecreatePlan::WaitForOldPods | RecreatePlan::CreateNewReplicaSet => {}
        }
    }

    #[test]
    fn a_new_replica_set_is_created_within_bounds(d in deployment(), old in old_replica_sets()) {
        let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
        if let Ok(new_rs) = build_new_replica_set(&d, &old_refs) {
            let size = new_rs.spec.as_ref().and_then(|spec| spec.replicas).unwrap_or(-1);
            let bound = upper_bound(&d, 0);
            prop_assert!(size >= 0 && i64::from(size) <= bound, "created at {size}, bound {bound}");
        }
    }
}
