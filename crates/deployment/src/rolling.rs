//! RollingUpdate planning: one sync's worth of scaling, as upstream's
//! reconcileNewReplicaSet then reconcileOldReplicaSets (cleanupUnhealthyReplicas and
//! scaleDownOldReplicaSetsForRollingUpdate), computed on plain data.
//!
//! Upstream scales ReplicaSets one by one and continues with the updated objects; the
//! planner does the same on copies, so later steps see the earlier resizes.

use informer::{CachedDeployment, CachedReplicaSet};

use crate::error::Error;
use crate::progress::deployment_complete_per_stored_status;
use crate::replica_set::{
    active, by_creation, deployment_replicas, rs_available_replicas, rs_name, rs_spec_replicas,
    sum_spec_replicas,
};
use crate::rollout_limits::{min_available, new_rs_new_replicas};
use crate::scaling::{ScaleAction, scale_and_record, with_spec_replicas};

/// What one rolling-update sync does after the new ReplicaSet exists.
///
/// Contract for the caller (upstream's control flow):
/// * [`RollingStep::ScaleNew`]: apply it; an API error is the sync's error; on success run
///   syncRolloutStatus and stop.
/// * [`RollingStep::ScaleOld`]: apply the actions in order and stop at the first API error.
///   If all succeeded and `scaled` is true, run syncRolloutStatus and stop. Otherwise
///   (upstream swallows these errors) continue as [`RollingStep::Settled`].
/// * [`RollingStep::Settled`]: if [`RollingPlan::cleanup`], run cleanupDeployment; then
///   syncRolloutStatus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollingStep {
    /// reconcileNewReplicaSet resizes the new ReplicaSet.
    ScaleNew(ScaleAction),
    /// reconcileOldReplicaSets scales old ReplicaSets down.
    ScaleOld {
        /// Resizes in upstream's order.
        actions: Vec<ScaleAction>,
        /// Whether upstream reports "scaled" once all actions succeed (false when it
        /// aborted on an invalid request after the listed actions).
        scaled: bool,
    },
    /// Nothing to scale.
    Settled,
}

/// The plan of one rolling-update sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollingPlan {
    /// The scaling step.
    pub step: RollingStep,
    /// Whether cleanupDeployment runs when the sync reaches the settled path (the Deployment
    /// is complete according to its *stored* status).
    pub cleanup: bool,
}

/// rolloutRolling after getAllReplicaSetsAndSyncRevision: `new_rs` is the (possibly just created) new
/// ReplicaSet, `old` every old ReplicaSet.
pub fn plan_rolling_update(
    d: &CachedDeployment,
    new_rs: &CachedReplicaSet,
    old: &[&CachedReplicaSet],
) -> Result<RollingPlan, Error> {
    let all: Vec<&CachedReplicaSet> = old.iter().copied().chain([new_rs]).collect();
    let cleanup = deployment_complete_per_stored_status(d);
    if let Some(action) = reconcile_new_replica_set(d, &all, new_rs)? {
        return Ok(RollingPlan {
            step: RollingStep::ScaleNew(action),
            cleanup,
        });
    }
    let active_old = active(old.iter().copied());
    let old_plan = reconcile_old_replica_sets(d, &all, &active_old, new_rs);
    let step = if old_plan.actions.is_empty() {
        RollingStep::Settled
    } else {
        RollingStep::ScaleOld {
            scaled: old_plan.scaled,
            actions: old_plan.actions,
        }
    };
    Ok(RollingPlan { step, cleanup })
}

/// reconcileNewReplicaSet: at `spec.replicas` nothing; above it scale down to
/// it; below it scale to NewRSNewReplicas.
pub fn reconcile_new_replica_set(
    d: &CachedDeployment,
    all: &[&CachedReplicaSet],
    new_rs: &CachedReplicaSet,
) -> Result<Option<ScaleAction>, Error> {
    let replicas = deployment_replicas(d);
    let current = rs_spec_replicas(new_rs);
    if current == replicas {
        return Ok(None);
    }
    if current > replicas {
        return Ok(scale_and_record(new_rs, replicas));
    }
    let target = new_rs_new_replicas(d, all, new_rs)?;
    Ok(scale_and_record(new_rs, target))
}

/// Outcome of reconcileOldReplicaSets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OldScalePlan {
    /// Resizes in upstream's order (cleanup of unhealthy replicas first).
    pub actions: Vec<ScaleAction>,
    /// Upstream's return value when every action succeeds.
    pub scaled: bool,
}

/// reconcileOldReplicaSets. `all` = old + new, `active_old` = old with
/// `spec.replicas > 0`.
pub fn reconcile_old_replica_sets(
    d: &CachedDeployment,
    all: &[&CachedReplicaSet],
    active_old: &[&CachedReplicaSet],
    new_rs: &CachedReplicaSet,
) -> OldScalePlan {
    let old_pods = sum_spec_replicas(active_old.iter().copied());
    if old_pods == 0 {
        return OldScalePlan::default();
    }
    let all_pods = sum_spec_replicas(all.iter().copied());
    let new_unavailable = rs_spec_replicas(new_rs).saturating_sub(rs_available_replicas(new_rs));
    let max_scaled_down = all_pods
        .saturating_sub(min_available(d))
        .saturating_sub(new_unavailable);
    if max_scaled_down <= 0 {
        return OldScalePlan::default();
    }
    let cleanup = cleanup_unhealthy_replicas(active_old, max_scaled_down);
    let mut actions = cleanup.actions;
    let Some(cleaned_old) = cleanup.updated else {
        // Invalid request: upstream returns (false, nil) after the resizes already made.
        return OldScalePlan {
            actions,
            scaled: false,
        };
    };
    let cleaned_refs: Vec<&CachedReplicaSet> = cleaned_old.iter().collect();
    let all_after: Vec<&CachedReplicaSet> = cleaned_refs.iter().copied().chain([new_rs]).collect();
    let (scale_down, scaled_down) = scale_down_old_for_rolling_update(d, &all_after, &cleaned_refs);
    actions.extend(scale_down);
    let scaled = cleanup.scaled_down.saturating_add(scaled_down) > 0;
    OldScalePlan { actions, scaled }
}

/// Result of cleanupUnhealthyReplicas.
#[derive(Debug, Clone, PartialEq)]
pub struct UnhealthyCleanup {
    /// Resizes made.
    pub actions: Vec<ScaleAction>,
    /// The old ReplicaSets sorted oldest first with the resizes applied; `None` when upstream
    /// aborted with "got invalid request to scale down".
    pub updated: Option<Vec<CachedReplicaSet>>,
    /// Replicas removed.
    pub scaled_down: i32,
}

/// cleanupUnhealthyReplicas: oldest first, remove replicas that are not
/// available, at most `max_cleanup` in total.
pub fn cleanup_unhealthy_replicas(old: &[&CachedReplicaSet], max_cleanup: i32) -> UnhealthyCleanup {
    let mut sorted: Vec<CachedReplicaSet> = old.iter().map(|rs| (*rs).clone()).collect();
    sorted.sort_by(by_creation);
    let mut actions = Vec::new();
    let mut total = 0i32;
    for rs in sorted.iter_mut() {
        if total >= max_cleanup {
            break;
        }
        let replicas = rs_spec_replicas(rs);
        let available = rs_available_replicas(rs);
        if replicas == 0 || replicas == available {
            continue;
        }
        let count = max_cleanup
            .saturating_sub(total)
            .min(replicas.saturating_sub(available));
        let target = replicas.saturating_sub(count);
        if target > replicas {
            tracing::info!(
                replica_set = rs_name(rs),
                from = replicas,
                to = target,
                "when cleaning up unhealthy replicas, got invalid request to scale down"
            );
            return UnhealthyCleanup {
                actions,
                updated: None,
                scaled_down: total,
            };
        }
        actions.extend(scale_and_record(rs, target));
        *rs = with_spec_replicas(rs, target);
        total = total.saturating_add(count);
    }
    UnhealthyCleanup {
        actions,
        updated: Some(sorted),
        scaled_down: total,
    }
}

/// scaleDownOldReplicaSetsForRollingUpdate: remove available old replicas beyond
/// `spec.replicas - MaxUnavailable`, oldest ReplicaSet first (none when availability is not
/// above that); the resizes and the replicas removed. Upstream's "invalid request to scale
/// down" abort cannot happen here: each step removes between 1 and the ReplicaSet's
/// (non-negative) size.
///
/// kcm-rs only: each ReplicaSet counts at most its `spec.replicas` of available pods.
/// Upstream sums `status.availableReplicas`, which, while a scale-down's pod deletions are
/// pending, still counts the pods above the spec that are about to go. Its cleanup step
/// aborts on such a ReplicaSet only when it reaches it first; after a failover, a newer
/// ReplicaSet whose status the dead controller never wrote sorts first on a creation-time
/// tie, its ready pods are cleaned up as unhealthy, and the over-counted scale-down then
/// leaves fewer than `replicas - maxUnavailable` available (`make chaos`: 3 of 5 with
/// maxUnavailable 1).
pub fn scale_down_old_for_rolling_update(
    d: &CachedDeployment,
    all: &[&CachedReplicaSet],
    old: &[&CachedReplicaSet],
) -> (Vec<ScaleAction>, i32) {
    let available = all.iter().fold(0i32, |sum, rs| {
        sum.saturating_add(rs_available_replicas(rs).min(rs_spec_replicas(rs)))
    });
    let budget = available.saturating_sub(min_available(d));
    let mut sorted = old.to_vec();
    sorted.sort_by(|a, b| by_creation(a, b));
    let (mut actions, mut total) = (Vec::new(), 0i32);
    for rs in sorted {
        if total >= budget {
            break;
        }
        let replicas = rs_spec_replicas(rs);
        if replicas == 0 {
            continue;
        }
        let count = replicas.min(budget.saturating_sub(total));
        actions.extend(scale_and_record(rs, replicas.saturating_sub(count)));
        total = total.saturating_add(count);
    }
    (actions, total)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentStatus;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::replica_set::test_support::{olds as old_replica_sets, pct, rolling, rs};

    #[test]
    fn reconcile_new_replica_set_table() {
        // (replicas, surge, old (spec, avail), new spec, want target)
        type Case = (i32, IntOrString, Vec<(i32, i32)>, i32, Option<i32>);
        let cases: [Case; 5] = [
            (10, pct("25%"), vec![(10, 10)], 0, Some(3)),
            (10, pct("25%"), vec![(10, 10)], 3, None),
            (10, pct("25%"), vec![(5, 5)], 5, Some(8)),
            (10, pct("25%"), vec![], 12, Some(10)),
            (10, pct("25%"), vec![], 10, None),
        ];
        for (replicas, surge, olds, new_size, want) in cases {
            let d = rolling(replicas, surge, pct("25%"));
            let old = old_replica_sets(&olds);
            let new_rs = rs("new", 50, new_size, 0);
            let all: Vec<&CachedReplicaSet> = old.iter().chain([&new_rs]).collect();
            let got = reconcile_new_replica_set(&d, &all, &new_rs).expect("no error");
            assert_eq!(got.map(|a| a.to), want, "{olds:?} new={new_size}");
        }
    }

    #[test]
    fn reconcile_old_replica_sets_table() {
        // (replicas, maxUnavailable, old ReplicaSets "a", "b" as (spec, available), the new
        // one as (spec, available)) -> (resizes as (name, from, to), scaled).
        type Resizes = &'static [(&'static str, i32, i32)];
        type Case = (i32, i32, &'static [(i32, i32)], (i32, i32), Resizes, bool);
        let cases: [Case; 8] = [
            // Scale down by the availability budget: all = 10 + 3 = 13; minAvailable =
            // 10 - 2 = 8; new unavailable = 3; maxScaledDown = 13 - 8 - 3 = 2; nothing
            // unhealthy; available 10 > 8 -> 2.
            (10, 2, &[(10, 10)], (3, 0), &[("a", 10, 8)], true),
            // Unhealthy replicas go first, oldest first: maxScaledDown = 12 - 9 - 2 = 1 ->
            // cleanup removes one unavailable from "a"; then available 6 <= 9 so no further
            // scale down.
            (10, 1, &[(5, 3), (5, 3)], (2, 0), &[("a", 5, 4)], true),
            // Both steps, budget split: all = 10, minAvailable = 9, new unavailable = 0 ->
            // maxScaledDown = 1: cleanup "a" 4 -> 3. Scale down: available = 2 + 4 + 2 = 8
            // <= 9 -> nothing.
            (10, 1, &[(4, 2), (4, 4)], (2, 2), &[("a", 4, 3)], true),
            // No room: new replicas are unavailable.
            (10, 0, &[(10, 10)], (1, 0), &[], false),
            // No old pods.
            (3, 1, &[(0, 0)], (3, 3), &[], false),
            // Over-available old ReplicaSet not reached (availableReplicas > spec.replicas
            // makes upstream abort with an invalid request): all = 6, minAvailable = 3, new
            // unavailable = 2 -> 1: cleanup "a" 2 -> 1 (budget used) and never reaches "b".
            // Scale down counts "b" at its spec (kcm-rs only): available 1 + 2 + 0 = 3, not
            // above 3, so nothing more (upstream counts 3 for "b" and scales "a" to 0,
            // leaving 2 available pods once "b"'s extra pod is gone).
            (4, 1, &[(2, 1), (2, 3)], (2, 0), &[("a", 2, 1)], true),
            // After a failover: "a" (the previous rollout's ReplicaSet, its status never
            // written) has 2 ready pods it reports as unavailable, "b" was scaled 5 -> 4 and
            // still reports 5. maxScaledDown = 6 - 4 - 0 = 2: cleanup "a" 2 -> 0. Counting "b"
            // at 4, available 4 is not above 4 (upstream counts 5 and scales "b" to 3: 3
            // available for 5 replicas with maxUnavailable 1).
            (5, 1, &[(2, 0), (4, 5)], (0, 0), &[("a", 2, 0)], true),
            // Over-available old ReplicaSet first: cleanup aborts.
            (4, 1, &[(2, 3), (2, 1)], (2, 0), &[], false),
        ];
        for (replicas, unavailable, olds, (new_spec, new_available), want, scaled) in cases {
            let d = rolling(replicas, IntOrString::Int(1), IntOrString::Int(unavailable));
            let old: Vec<_> = ["a", "b"]
                .iter()
                .zip(olds)
                .enumerate()
                .map(|(created, (name, (spec, available)))| {
                    rs(name, created as i64, *spec, *available)
                })
                .collect();
            let new_rs = rs("new", 100, new_spec, new_available);
            let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
            let mut all = old_refs.clone();
            all.push(&new_rs);
            let active_old = active(old_refs.iter().copied());
            let plan = reconcile_old_replica_sets(&d, &all, &active_old, &new_rs);
            let want: Vec<ScaleAction> = want
                .iter()
                .map(|(name, from, to)| ScaleAction::resize(name, *from, *to))
                .collect();
            let case = format!("{replicas}/{unavailable} {olds:?} new {new_spec}/{new_available}");
            assert_eq!(plan.actions, want, "{case}");
            assert_eq!(plan.scaled, scaled, "{case}");
        }
    }

    /// Sets `spec.replicas` and the status a ReplicaSet controller and kubelet would report
    /// right after: `replicas` pods, of which `available` are available.
    fn resize(rs: &mut CachedReplicaSet, replicas: i32, available: i32) {
        if let Some(spec) = rs.spec.as_mut() {
            spec.replicas = Some(replicas);
        }
        if let Some(status) = rs.status.as_mut() {
            status.replicas = replicas;
            status.available_replicas = Some(available.min(replicas));
        }
    }

    #[test]
    fn simulated_rollouts_of_ten_stay_in_bounds() {
        // Sync after sync, with new pods becoming available `per_sync` at a time (old pods are
        // all available and deleted at once): every step must keep the total at most
        // replicas + surge and availability at least replicas - unavailable, and the rollout
        // must finish with the new ReplicaSet full and the old one at 0.
        // (surge, unavailable, resolved surge, resolved unavailable, new pods ready per sync)
        let cases = [
            (pct("25%"), pct("25%"), 3, 2, 10),
            (pct("25%"), pct("25%"), 3, 2, 1),
            (IntOrString::Int(1), IntOrString::Int(0), 1, 0, 1),
            (IntOrString::Int(0), IntOrString::Int(1), 0, 1, 1),
            (IntOrString::Int(0), IntOrString::Int(1), 0, 1, 3),
        ];
        for (surge, unavailable, max_surge, max_unavailable, per_sync) in cases {
            let label = format!("{surge:?}/{unavailable:?} +{per_sync}");
            let d = rolling(10, surge, unavailable);
            let mut old = rs("old", 0, 10, 10);
            let mut new_rs = rs("new", 10, 0, 0);
            let mut syncs = 0;
            loop {
                syncs += 1;
                assert!(syncs < 100, "{label}: no convergence");
                let plan = plan_rolling_update(&d, &new_rs, &[&old]).expect("plan");
                let actions = match plan.step {
                    RollingStep::ScaleNew(a) => vec![a],
                    RollingStep::ScaleOld { actions, scaled } => {
                        assert!(scaled, "{label}");
                        actions
                    }
                    RollingStep::Settled if rs_available_replicas(&new_rs) == 10 => break,
                    RollingStep::Settled => vec![],
                };
                for a in actions {
                    let target = if a.replica_set == "old" {
                        &mut old
                    } else {
                        &mut new_rs
                    };
                    let available = rs_available_replicas(target);
                    resize(target, a.to, available);
                }
                let total = rs_spec_replicas(&old) + rs_spec_replicas(&new_rs);
                let available = rs_available_replicas(&old) + rs_available_replicas(&new_rs);
                assert!(total <= 10 + max_surge, "{label}: total {total}");
                assert!(
                    available >= 10 - max_unavailable,
                    "{label}: available {available}"
                );
                // Time passes: some new pods become available.
                let ready =
                    (rs_available_replicas(&new_rs) + per_sync).min(rs_spec_replicas(&new_rs));
                let replicas = rs_spec_replicas(&new_rs);
                resize(&mut new_rs, replicas, ready);
            }
            assert_eq!(
                (rs_spec_replicas(&old), rs_spec_replicas(&new_rs)),
                (0, 10),
                "{label}"
            );
        }
    }

    #[test]
    fn cleanup_flag_follows_stored_status() {
        let mut d = rolling(2, IntOrString::Int(1), IntOrString::Int(0));
        let new_rs = rs("new", 0, 2, 2);
        let plan = plan_rolling_update(&d, &new_rs, &[]).expect("plan");
        assert_eq!(
            plan,
            RollingPlan {
                step: RollingStep::Settled,
                cleanup: false
            }
        );
        d.status = Some(DeploymentStatus {
            observed_generation: Some(1),
            replicas: Some(2),
            updated_replicas: Some(2),
            available_replicas: Some(2),
            ..Default::default()
        });
        let plan = plan_rolling_update(&d, &new_rs, &[]).expect("plan");
        assert!(plan.cleanup);
    }
}
