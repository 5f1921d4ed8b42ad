//! Proportional scaling: resizing a Deployment in the middle of a rollout (or while
//! paused) spreads the change over its active ReplicaSets in proportion to their size, so
//! the rollout's progress is kept and the surge bound holds.

use informer::{CachedDeployment, CachedReplicaSet};

use crate::annotations::{
    annotation, desired_replicas_annotation, max_replicas_annotation, rollback_to,
};
use crate::constants::DESIRED_REPLICAS_ANNOTATION;
use crate::replica_set::{
    active, by_creation, by_size_newer, by_size_older, deployment_paused, deployment_replicas,
    rs_available_replicas, rs_name, rs_spec_replicas, sum_spec_replicas,
};
use crate::rollout_limits::{is_rolling_update, max_total_replicas};
use crate::scaling::{ScaleAction, ScalingOperation, scale_and_record, scale_needs_update};

/// isScalingEvent: an active ReplicaSet's parseable desired-replicas annotation
/// differs from `spec.replicas`.
pub fn is_scaling_event(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
) -> bool {
    let replicas = deployment_replicas(d);
    active(old.iter().copied().chain(new_rs))
        .into_iter()
        .filter_map(desired_replicas_annotation)
        .any(|desired| desired != replicas)
}

/// `old` sorted newest first, as FindActiveOrLatest leaves upstream's slice.
fn newest_first<'a>(old: &[&'a CachedReplicaSet]) -> Vec<&'a CachedReplicaSet> {
    let mut sorted = old.to_vec();
    sorted.sort_by(|a, b| by_creation(b, a));
    sorted
}

/// FindActiveOrLatest: the only active ReplicaSet; with none active the new one,
/// else the newest old one; with several active, none.
pub fn find_active_or_latest<'a>(
    new_rs: Option<&'a CachedReplicaSet>,
    old: &[&'a CachedReplicaSet],
) -> Option<&'a CachedReplicaSet> {
    let old = newest_first(old);
    let active_all = active(old.iter().copied().chain(new_rs));
    match active_all.as_slice() {
        [] => new_rs.or(old.first().copied()),
        [only] => Some(only),
        _ => None,
    }
}

/// IsSaturated: the new ReplicaSet has `spec.replicas`, desired-replicas
/// annotation (parsed as int32) and available replicas all equal to the Deployment's size.
pub fn is_saturated(d: &CachedDeployment, rs: Option<&CachedReplicaSet>) -> bool {
    let Some(rs) = rs else {
        return false;
    };
    let Ok(desired) =
        annotation(&rs.metadata.annotations, DESIRED_REPLICAS_ANNOTATION).parse::<i32>()
    else {
        return false;
    };
    let replicas = deployment_replicas(d);
    rs_spec_replicas(rs) == replicas && desired == replicas && rs_available_replicas(rs) == replicas
}

/// integer.RoundToInt32: round half away from zero, then truncate to int32.
fn round_to_i32(value: f64) -> i32 {
    if value < 0.0 {
        (value - 0.5) as i32
    } else {
        (value + 0.5) as i32
    }
}

/// The Deployment's size when this ReplicaSet was last scaled (`spec.replicas + MaxSurge` then):
/// its max-replicas annotation, or, when that is missing, invalid or 0 (a third party tampered
/// with it), the Deployment's `status.replicas`. `None` when that is 0 too: the ReplicaSet's
/// proportion cannot be known and it is not scaled (kubernetes#128535, v1.32).
fn size_when_last_scaled(rs: &CachedReplicaSet, d: &CachedDeployment) -> Option<i32> {
    match max_replicas_annotation(rs) {
        Some(annotated) if annotated > 0 => Some(annotated),
        _ => d
            .status
            .as_ref()
            .and_then(|status| status.replicas)
            .filter(|replicas| *replicas > 0),
    }
}

/// getReplicaSetFraction: `-rs.replicas` for a Deployment scaled to 0, else
/// `round(rs.replicas * (replicas + MaxSurge) / sizeWhenLastScaled) - rs.replicas`, 0 when
/// that size is unknown. Upstream multiplies in int32 (wrapping past 2^31); here the product
/// is exact, so huge sizes give the proportion upstream means instead of a wrapped one.
fn replica_set_fraction(rs: &CachedReplicaSet, d: &CachedDeployment) -> i32 {
    let rs_replicas = rs_spec_replicas(rs);
    if deployment_replicas(d) == 0 {
        return -rs_replicas;
    }
    let Some(last_max) = size_when_last_scaled(rs, d) else {
        return 0;
    };
    let product = i64::from(rs_replicas) * i64::from(max_total_replicas(d));
    round_to_i32(product as f64 / f64::from(last_max)).saturating_sub(rs_replicas)
}

/// GetProportion: this ReplicaSet's share of `to_add`, bounded by what is left
/// (`to_add - added`): min when scaling up, max when scaling down. Arithmetic saturates: the
/// annotations it reads are user-editable, so nothing here may overflow.
pub fn get_proportion(rs: &CachedReplicaSet, d: &CachedDeployment, to_add: i32, added: i32) -> i32 {
    if rs_spec_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add.saturating_sub(added);
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// scale(): the resizes (and annotation refreshes) to apply in order; stop at
/// the first API error, which is the sync's error.
pub fn plan_scale(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
) -> Vec<ScaleAction> {
    let replicas = deployment_replicas(d);
    if let Some(only) = find_active_or_latest(new_rs, old) {
        return scale_and_record(only, replicas).into_iter().collect();
    }
    let old = newest_first(old);
    if is_saturated(d, new_rs) {
        return active(old.iter().copied())
            .into_iter()
            .filter_map(|rs| scale_and_record(rs, 0))
            .collect();
    }
    if !is_rolling_update(d) {
        return Vec::new();
    }
    let mut active_all = active(old.iter().copied().chain(new_rs));
    let current = sum_spec_replicas(active_all.iter().copied());
    let allowed = if replicas > 0 {
        max_total_replicas(d)
    } else {
        0
    };
    let to_add = allowed.saturating_sub(current);
    let operation = match to_add.signum() {
        1 => {
            active_all.sort_by(|a, b| by_size_newer(a, b));
            ScalingOperation::Up
        }
        -1 => {
            active_all.sort_by(|a, b| by_size_older(a, b));
            ScalingOperation::Down
        }
        _ => ScalingOperation::None,
    };
    let mut added = 0i32;
    let mut sizes: Vec<i32> = active_all
        .iter()
        .map(|rs| {
            let proportion = if to_add != 0 {
                get_proportion(rs, d, to_add, added)
            } else {
                0
            };
            added = added.saturating_add(proportion);
            rs_spec_replicas(rs).saturating_add(proportion)
        })
        .collect();
    if to_add != 0
        && let Some(first) = sizes.first_mut()
    {
        *first = first.saturating_add(to_add.saturating_sub(added));
    }
    active_all
        .iter()
        .zip(sizes)
        .map(|(rs, size)| (rs, within_rollout_bounds(size, rs, allowed)))
        .filter(|(rs, size)| scale_needs_update(rs, *size, d))
        .map(|(rs, size)| ScaleAction {
            replica_set: rs_name(rs).to_owned(),
            from: rs_spec_replicas(rs),
            to: size,
            operation,
        })
        .collect()
}

/// A planned size kept within `[0, max(allowed, current size)]`. With the annotations as the
/// controller writes them the plan is already inside; a tampered annotation (a max-replicas far
/// below the real one while scaling down) can make upstream grow a ReplicaSet past the surge
/// bound, which kcm-rs never does.
fn within_rollout_bounds(size: i32, rs: &CachedReplicaSet, allowed: i32) -> i32 {
    size.clamp(0, allowed.max(rs_spec_replicas(rs)))
}

/// The plan of sync(): scale, then cleanup, then syncDeploymentStatus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncPlan {
    /// From [`plan_scale`]; apply in order, the first error ends the sync.
    pub actions: Vec<ScaleAction>,
    /// Whether cleanupDeployment runs (paused and no rollback requested).
    pub cleanup: bool,
}

/// sync() for a paused Deployment or a scaling event.
pub fn plan_sync(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
) -> SyncPlan {
    SyncPlan {
        actions: plan_scale(d, new_rs, old),
        cleanup: deployment_paused(d) && rollback_to(d).is_none(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::apps::v1::DeploymentStatus;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::constants::{MAX_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION};
    use crate::replica_set::test_support::{annotate, pct, recreate, rolling, rs};

    /// An RS last scaled when the Deployment had `desired` replicas and `max` allowed.
    fn scaled_rs(
        name: &str,
        created: i64,
        replicas: i32,
        available: i32,
        desired: i32,
        max: i32,
    ) -> CachedReplicaSet {
        annotate(
            annotate(
                rs(name, created, replicas, available),
                DESIRED_REPLICAS_ANNOTATION,
                &desired.to_string(),
            ),
            MAX_REPLICAS_ANNOTATION,
            &max.to_string(),
        )
    }

    /// A rolling Deployment of `replicas` (maxSurge `surge`, maxUnavailable 1) whose status
    /// still reports `status_replicas`.
    fn resized(replicas: i32, surge: i32, status_replicas: i32) -> CachedDeployment {
        let mut d = rolling(replicas, IntOrString::Int(surge), IntOrString::Int(1));
        d.status = Some(DeploymentStatus {
            replicas: Some(status_replicas),
            ..Default::default()
        });
        d
    }

    fn sizes(actions: &[ScaleAction], name: &str, before: i32) -> i32 {
        actions
            .iter()
            .rfind(|a| a.replica_set == name)
            .map(|a| a.to)
            .unwrap_or(before)
    }

    #[test]
    fn round_half_away_from_zero() {
        let cases = [
            (1.5, 2),
            (2.5, 3),
            (1.4999, 1),
            (-1.5, -2),
            (-0.4, 0),
            (0.0, 0),
        ];
        for (value, want) in cases {
            assert_eq!(round_to_i32(value), want, "{value}");
        }
    }

    #[test]
    fn proportional_scaling_upstream_cases() {
        // Deployment resized from `from` to `to` with surge 0/unavailable 1 (surge 0 keeps
        // allowed == replicas): (name, from, to, new size, old sizes (oldest last), want new,
        // want olds).
        type Case = (&'static str, i32, i32, i32, Vec<i32>, i32, Vec<i32>);
        let cases: Vec<Case> = vec![
            // toAdd 5, by size newer [old 3, new 2]: old round(3*10/5)-3 = 3; new
            // round(2*10/5)-2 = 2 -> 6 and 4.
            ("5 -> 10", 5, 10, 2, vec![3], 4, vec![6]),
            // toAdd -2, by size older [old 3, new 2]: old round(9/5)-3 = 2-3 = -1;
            // new round(6/5)-2 = -1 (max(-1, -1)) -> 2 and 1.
            ("5 -> 3", 5, 3, 2, vec![3], 1, vec![2]),
            // toAdd -5: new round(32/9)-8 = 4-8 = -4; old round(4/9)-1 = -1 -> 4 and 0.
            ("9 -> 4", 9, 4, 8, vec![1], 4, vec![0]),
            // toAdd 3, by size newer [old 3, new 2 (newer), old 2]: 3 -> round(30/7)-3 = 1;
            // new round(20/7)-2 = 1; old2 min(1, 3-2) = 1 -> 3, [4, 3].
            ("7 -> 10", 7, 10, 2, vec![3, 2], 3, vec![4, 3]),
            // toAdd -5, by size older [8, 3, new 2]: 8 -> round(64/13)-8 = -3; 3 -> round(24/13)-3
            // = -1; new round(16/13)-2 = -1 -> 1, [5, 2].
            ("13 -> 8", 13, 8, 2, vec![8, 3], 1, vec![5, 2]),
            // toAdd 1: every proportion round(4/3)-1 = 0; the leftover 1 goes to the first
            // (newest of equal sizes = the new RS) -> 2, [1, 1].
            ("leftover 3 -> 4", 3, 4, 1, vec![1, 1], 2, vec![1, 1]),
            // toAdd -1, by size older [2, 1 (older), new 1]: 2 -> round(6/4)-2 = round(1.5)-2
            // = 0; others round(3/4)-1 = 0; the leftover -1 goes to the first -> 1, [1, 1].
            ("leftover 4 -> 3", 4, 3, 1, vec![2, 1], 1, vec![1, 1]),
            // Scaled to zero: fraction = -replicas everywhere.
            ("to zero", 6, 0, 2, vec![4], 0, vec![0]),
        ];
        for (name, from, to, new_size, olds, want_new, want_olds) in cases {
            let d = resized(to, 0, from);
            let new_rs = scaled_rs("new", 100, new_size, 0, from, from);
            let old: Vec<_> = olds
                .iter()
                .enumerate()
                .map(|(i, n)| scaled_rs(&format!("old{i}"), 50 - i as i64, *n, *n, from, from))
                .collect();
            let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
            assert!(is_scaling_event(&d, Some(&new_rs), &old_refs), "{name}");
            let actions = plan_scale(&d, Some(&new_rs), &old_refs);
            assert_eq!(
                sizes(&actions, "new", new_size),
                want_new,
                "{name}: {actions:?}"
            );
            let got_olds: Vec<i32> = olds
                .iter()
                .enumerate()
                .map(|(i, n)| sizes(&actions, &format!("old{i}"), *n))
                .collect();
            assert_eq!(got_olds, want_olds, "{name}: {actions:?}");
            // Every active RS gets its annotations refreshed.
            assert_eq!(
                actions.len(),
                1 + olds.iter().filter(|n| **n > 0).count(),
                "{name}"
            );
        }
    }

    #[test]
    fn ten_to_twenty_during_a_stuck_rollout() {
        // 10 replicas, 25%/25%: surge ceil(2.5) = 3, unavailable floor(2.5) = 2. The new
        // pods never become available, so the rolling update stops at: new 3 (surge), old
        // 10 -> 8 (maxScaledDown = 13 - 8 - 3 = 2), new 3 -> 5 (13 - 11 = 2 more), then old
        // budget 13 - 8 - 5 = 0. Both RSs carry desired=10, max=13.
        // Resize to 20: surge ceil(5) = 5, allowed 25, active 8 + 5 = 13, toAdd = 12 > 0,
        // sorted by size (newer on ties): [old 8, new 5].
        //   old: round(8 * 25 / 13) - 8 = round(15.38) - 8 = 7, min(7, 12) = 7 -> 15
        //   new: round(5 * 25 / 13) - 5 = round(9.62) - 5 = 5, min(5, 12 - 7) = 5 -> 10
        //   leftover 12 - 12 = 0. Total 25 = 20 + maxSurge.
        let d = rolling(20, pct("25%"), pct("25%"));
        let old = scaled_rs("web-old", 0, 8, 8, 10, 13);
        let new_rs = scaled_rs("web-new", 10, 5, 0, 10, 13);
        assert!(is_scaling_event(&d, Some(&new_rs), &[&old]));
        let actions = plan_scale(&d, Some(&new_rs), &[&old]);
        assert_eq!(
            actions,
            vec![
                ScaleAction {
                    replica_set: "web-old".into(),
                    from: 8,
                    to: 15,
                    operation: ScalingOperation::Up
                },
                ScaleAction {
                    replica_set: "web-new".into(),
                    from: 5,
                    to: 10,
                    operation: ScalingOperation::Up
                },
            ]
        );
        assert_eq!(
            actions[0].event().map(|e| e.message),
            Some("Scaled up replica set web-old from 8 to 15".to_owned())
        );
    }

    #[test]
    fn single_active_replica_set_is_scaled_directly() {
        let d = rolling(12, IntOrString::Int(1), IntOrString::Int(0));
        let new_rs = scaled_rs("new", 10, 10, 10, 10, 11);
        let idle = rs("old", 0, 0, 0);
        assert_eq!(
            find_active_or_latest(Some(&new_rs), &[&idle]).map(rs_name),
            Some("new")
        );
        let actions = plan_scale(&d, Some(&new_rs), &[&idle]);
        assert_eq!(
            actions
                .iter()
                .map(|a| (a.to, a.operation))
                .collect::<Vec<_>>(),
            [(12, ScalingOperation::Up)]
        );
        // None active: the newest old one when there is no new RS.
        let a = rs("a", 0, 0, 0);
        let b = rs("b", 5, 0, 0);
        assert_eq!(
            find_active_or_latest(None, &[&a, &b]).map(rs_name),
            Some("b")
        );
        assert_eq!(find_active_or_latest(None, &[]), None);
    }

    #[test]
    fn saturated_new_replica_set_scales_old_to_zero_newest_first() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let new_rs = scaled_rs("new", 10, 3, 3, 3, 4);
        assert!(is_saturated(&d, Some(&new_rs)));
        let older = rs("older", 0, 1, 1);
        let newer = rs("newer", 5, 2, 2);
        let actions = plan_scale(&d, Some(&new_rs), &[&older, &newer]);
        assert_eq!(
            actions
                .iter()
                .map(|a| (a.replica_set.as_str(), a.to))
                .collect::<Vec<_>>(),
            [("newer", 0), ("older", 0)]
        );
        let unsaturated = annotate(new_rs.clone(), DESIRED_REPLICAS_ANNOTATION, "2");
        assert!(!is_saturated(&d, Some(&unsaturated)));
    }

    #[test]
    fn recreate_with_several_active_does_nothing() {
        let d = recreate(5);
        let a = rs("a", 0, 2, 2);
        let b = rs("b", 1, 2, 2);
        assert!(plan_scale(&d, Some(&b), &[&a]).is_empty());
    }

    #[test]
    fn absurd_annotations_do_not_panic() {
        let d = rolling(20, IntOrString::Int(0), IntOrString::Int(1));
        for max in ["0", "-1", "2147483647", "-2147483648"] {
            let a = scaled_rs("a", 0, 2_000_000_000, 0, 1, 1);
            let a = annotate(a, MAX_REPLICAS_ANNOTATION, max);
            let b = scaled_rs("b", 1, 5, 0, 1, 1);
            let actions = plan_scale(&d, Some(&b), &[&a]);
            assert_eq!(actions.len(), 2, "{max}");
        }
    }

    #[test]
    fn fraction_upstream_cases_never_divide_by_zero() {
        // Upstream's table for kubernetes#128535: (d.spec.replicas, d.status.replicas,
        // maxSurge, rs.spec.replicas, max-replicas annotation) -> fraction.
        type Case = (i32, i32, i32, i32, Option<&'static str>, i32);
        let cases: [Case; 9] = [
            (10, 0, 0, 5, None, 0),
            (10, 0, 0, 5, Some("0"), 0),
            (120, 100, 0, 50, Some("0"), 10),
            (120, 100, 0, 50, None, 10),
            (120, 100, 0, 50, Some("-1"), 10),
            (120, 100, 0, 50, Some("2147483648"), 10),
            (120, 0, 10, 50, Some("110"), 9),
            (100, 0, 10, 50, Some("130"), -8),
            (0, 0, 0, 10, None, -10),
        ];
        for (replicas, status_replicas, surge, rs_replicas, max, want) in cases {
            let d = resized(replicas, surge, status_replicas);
            let mut r = rs("a", 0, rs_replicas, rs_replicas);
            if let Some(max) = max {
                r = annotate(r, MAX_REPLICAS_ANNOTATION, max);
            }
            assert_eq!(
                replica_set_fraction(&r, &d),
                want,
                "{replicas} {status_replicas} {surge} {rs_replicas} {max:?}"
            );
        }
    }

    #[test]
    fn tampered_max_replicas_never_asks_for_two_billion_pods() {
        // Scale-down from 10 to 5 (surge 0) while the old ReplicaSet's max-replicas was
        // tampered with to "0". Before kubernetes#128535 the old RS was planned at
        // 2,147,483,647. Now it falls back to status.replicas = 10: toAdd = -5, sorted by
        // size, older first [old 5, new 5]: old round(25/10)-5 = -2, new -2, the leftover -1
        // goes to the first -> old 2, new 3.
        let mut d = resized(5, 0, 10);
        let old = annotate(
            scaled_rs("old", 0, 5, 5, 10, 10),
            MAX_REPLICAS_ANNOTATION,
            "0",
        );
        let new_rs = scaled_rs("new", 10, 5, 5, 10, 10);
        let actions = plan_scale(&d, Some(&new_rs), &[&old]);
        assert_eq!(sizes(&actions, "old", 5), 2, "{actions:?}");
        assert_eq!(sizes(&actions, "new", 5), 3, "{actions:?}");
        // With status.replicas 0 too the tampered RS keeps its size through the proportion;
        // only the leftover (it sorts first) moves it, and never above its size.
        d.status = None;
        let actions = plan_scale(&d, Some(&new_rs), &[&old]);
        assert_eq!(sizes(&actions, "new", 5), 3, "{actions:?}");
        assert_eq!(sizes(&actions, "old", 5), 2, "{actions:?}");
    }

    #[test]
    fn missing_max_annotation_falls_back_to_status_replicas() {
        let d = resized(20, 0, 10);
        let r = rs("a", 0, 5, 5);
        // round(5 * 20 / 10) - 5 = 5.
        assert_eq!(get_proportion(&r, &d, 10, 0), 5);
        assert_eq!(get_proportion(&r, &d, 10, 8), 2);
        assert_eq!(get_proportion(&r, &d, 10, 10), 0);
    }

    #[test]
    fn sync_plan_cleanup_only_when_paused_without_rollback() {
        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        let r = rs("a", 0, 1, 1);
        assert!(!plan_sync(&d, Some(&r), &[]).cleanup);
        if let Some(spec) = d.spec.as_mut() {
            spec.paused = Some(true);
        }
        assert!(plan_sync(&d, Some(&r), &[]).cleanup);
        d.metadata.annotations =
            BTreeMap::from([(ROLLBACK_TO_ANNOTATION.to_owned(), "1".to_owned())]).into();
        assert!(!plan_sync(&d, Some(&r), &[]).cleanup);
    }
}
