//! maxSurge / maxUnavailable resolution and the new ReplicaSet's next size.
//!
//! The rounding rules are what keep a rollout inside its bounds: surge rounds up, unavailable
//! rounds down, and both zero is turned into "one unavailable" so a rollout can always move.

use informer::{CachedDeployment, CachedReplicaSet};

use k8s_openapi::api::apps::v1::RollingUpdateDeployment;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::constants::{STRATEGY_RECREATE, STRATEGY_ROLLING_UPDATE};
use crate::error::Error;
use crate::replica_set::{deployment_replicas, rs_spec_replicas, rs_status_replicas};

/// GetScaledValueFromIntOrPercent: an integer is itself; `"<p>%"` is
/// `ceil(p*total/100)` (round up) or `floor(p*total/100)` in float64 arithmetic.
pub fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> Result<i32, Error> {
    match value {
        IntOrString::Int(v) => Ok(*v),
        IntOrString::String(s) => {
            let digits = s.strip_suffix('%').ok_or(Error::NotAPercentage)?;
            let percent: i64 =
                digits
                    .parse()
                    .map_err(|e: std::num::ParseIntError| Error::InvalidPercentage {
                        value: s.clone(),
                        reason: e.to_string(),
                    })?;
            let exact = percent as f64 * f64::from(total) / 100.0;
            let rounded = if round_up {
                exact.ceil()
            } else {
                exact.floor()
            };
            // Go converts int(math.Ceil(..)) to int32, which wraps for absurd percentages
            // ("99999999999%"); kcm-rs saturates so no bound can turn negative.
            Ok(rounded as i32)
        }
    }
}

/// The deployment's strategy type ("" when absent, as Go's zero value).
pub fn strategy_type(d: &CachedDeployment) -> &str {
    d.spec
        .as_ref()
        .and_then(|spec| spec.strategy.as_ref())
        .and_then(|strategy| strategy.type_.as_deref())
        .unwrap_or_default()
}

/// IsRollingUpdate.
pub fn is_rolling_update(d: &CachedDeployment) -> bool {
    strategy_type(d) == STRATEGY_ROLLING_UPDATE
}

fn rolling_params(d: &CachedDeployment) -> Option<&RollingUpdateDeployment> {
    d.spec
        .as_ref()
        .and_then(|spec| spec.strategy.as_ref())
        .and_then(|strategy| strategy.rolling_update.as_ref())
}

/// ResolveFenceposts: `(surge, unavailable)` for `desired` replicas. Missing values
/// count as 0; if both resolve to 0, unavailable becomes 1.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    desired: i32,
) -> Result<(i32, i32), Error> {
    let zero = IntOrString::Int(0);
    let surge = scaled_value(max_surge.unwrap_or(&zero), desired, true)?;
    let unavailable = scaled_value(max_unavailable.unwrap_or(&zero), desired, false)?;
    if surge == 0 && unavailable == 0 {
        return Ok((0, 1));
    }
    Ok((surge, unavailable))
}

fn deployment_fenceposts(d: &CachedDeployment) -> (i32, i32) {
    let params = rolling_params(d);
    resolve_fenceposts(
        params.and_then(|p| p.max_surge.as_ref()),
        params.and_then(|p| p.max_unavailable.as_ref()),
        deployment_replicas(d),
    )
    // Upstream discards the error: both values read as 0.
    .unwrap_or((0, 0))
}

/// MaxSurge: resolved surge, 0 when not a rolling update (or on a bad value). A
/// negative value (the API server rejects it; a cache can still hold one) counts as 0.
pub fn max_surge(d: &CachedDeployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    deployment_fenceposts(d).0.max(0)
}

/// `spec.replicas + MaxSurge`: the most replicas a rollout may run, saturating at int32's
/// maximum (a surge of 2147483647 is valid API input, and upstream's sum wraps negative).
pub fn max_total_replicas(d: &CachedDeployment) -> i32 {
    deployment_replicas(d).saturating_add(max_surge(d))
}

/// MaxUnavailable: resolved unavailable clamped to `[0, spec.replicas]`; 0 when not a
/// rolling update or when the Deployment has 0 replicas.
pub fn max_unavailable(d: &CachedDeployment) -> i32 {
    let replicas = deployment_replicas(d);
    if !is_rolling_update(d) || replicas == 0 {
        return 0;
    }
    deployment_fenceposts(d).1.clamp(0, replicas)
}

/// `spec.replicas - MaxUnavailable`: the fewest available replicas a rolling update keeps.
pub fn min_available(d: &CachedDeployment) -> i32 {
    deployment_replicas(d).saturating_sub(max_unavailable(d))
}

/// NewRSNewReplicas: how many replicas the new ReplicaSet may have now.
/// `all` are every ReplicaSet of the Deployment including `new_rs`.
pub fn new_rs_new_replicas(
    d: &CachedDeployment,
    all: &[&CachedReplicaSet],
    new_rs: &CachedReplicaSet,
) -> Result<i32, Error> {
    let replicas = deployment_replicas(d);
    let new_replicas = rs_spec_replicas(new_rs);
    match strategy_type(d) {
        STRATEGY_ROLLING_UPDATE => {
            let surge_value = rolling_params(d)
                .and_then(|p| p.max_surge.as_ref())
                .ok_or(Error::MissingIntOrString)?;
            let surge = scaled_value(surge_value, replicas, true)?.max(0);
            // Upstream sums spec.replicas only, so while an old ReplicaSet's scale-down is still
            // deleting pods the new one may already create more, and the pod count briefly
            // exceeds replicas + maxSurge. kcm-rs also counts the pods an old ReplicaSet still
            // reports (status.replicas above its spec), so the pod count never exceeds the
            // bound; the rollout only waits for those deletions to be observed.
            let current = all.iter().fold(0i32, |sum, rs| {
                sum.saturating_add(rs_spec_replicas(rs).max(rs_status_replicas(rs)))
            });
            let max_total = replicas.saturating_add(surge);
            if current >= max_total {
                return Ok(new_replicas);
            }
            let scale_up = max_total
                .saturating_sub(current)
                .min(replicas.saturating_sub(new_replicas));
            Ok(new_replicas.saturating_add(scale_up))
        }
        STRATEGY_RECREATE => Ok(replicas),
        other => Err(Error::UnsupportedStrategy(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica_set::test_support::{olds, pct, recreate, rolling, rs};

    #[test]
    fn scaled_value_table() {
        let cases = [
            (IntOrString::Int(3), 10, true, Ok(3)),
            (pct("25%"), 10, true, Ok(3)),
            (pct("25%"), 10, false, Ok(2)),
            (pct("39%"), 10, true, Ok(4)),
            (pct("39%"), 10, false, Ok(3)),
            (pct("100%"), 7, false, Ok(7)),
            (pct("0%"), 0, true, Ok(0)),
            (pct("25"), 10, true, Err(Error::NotAPercentage)),
        ];
        for (value, total, up, want) in cases {
            assert_eq!(
                scaled_value(&value, total, up),
                want,
                "{value:?} of {total}"
            );
        }
        assert!(matches!(
            scaled_value(&pct("x%"), 10, true),
            Err(Error::InvalidPercentage { .. })
        ));
    }

    #[test]
    fn resolve_fenceposts_spec_examples() {
        let cases = [
            (Some(pct("39%")), Some(pct("39%")), 10, (4, 3)),
            (Some(pct("0%")), Some(pct("0%")), 0, (0, 1)),
            (None, None, 10, (0, 1)),
            (
                Some(IntOrString::Int(1)),
                Some(IntOrString::Int(0)),
                10,
                (1, 0),
            ),
            (Some(pct("25%")), Some(pct("25%")), 10, (3, 2)),
        ];
        for (surge, unavailable, desired, want) in cases {
            assert_eq!(
                resolve_fenceposts(surge.as_ref(), unavailable.as_ref(), desired),
                Ok(want),
                "{surge:?}/{unavailable:?} of {desired}"
            );
        }
    }

    #[test]
    fn max_surge_and_unavailable() {
        let d = rolling(10, pct("25%"), pct("25%"));
        assert_eq!((max_surge(&d), max_unavailable(&d)), (3, 2));
        // Clamped to spec.replicas.
        let d = rolling(2, IntOrString::Int(0), IntOrString::Int(5));
        assert_eq!(max_unavailable(&d), 2);
        // Zero replicas: no unavailability allowed.
        let d = rolling(0, IntOrString::Int(1), IntOrString::Int(1));
        assert_eq!(max_unavailable(&d), 0);
        // Recreate: neither.
        let d = recreate(5);
        assert_eq!((max_surge(&d), max_unavailable(&d)), (0, 0));
        // Bad value: upstream ignores the error and reads 0.
        let d = rolling(10, pct("x"), pct("25%"));
        assert_eq!((max_surge(&d), max_unavailable(&d)), (0, 0));
    }

    #[test]
    fn new_rs_new_replicas_table() {
        // (deployment replicas, surge, old RSs as (spec, available), new RS size, want)
        let cases = [
            (10, IntOrString::Int(3), vec![(10, 10)], 0, 3),
            (10, IntOrString::Int(3), vec![(8, 8)], 3, 5),
            (10, IntOrString::Int(3), vec![(10, 10)], 3, 3),
            (10, IntOrString::Int(30), vec![], 2, 10),
            (10, pct("25%"), vec![(5, 5)], 5, 8),
        ];
        for (replicas, surge, sizes, new_size, want) in cases {
            let d = rolling(replicas, surge.clone(), IntOrString::Int(0));
            let old = olds(&sizes);
            let new_rs = rs("new", 100, new_size, 0);
            let all: Vec<&CachedReplicaSet> = old.iter().chain([&new_rs]).collect();
            assert_eq!(
                new_rs_new_replicas(&d, &all, &new_rs),
                Ok(want),
                "{replicas} {surge:?} {sizes:?} {new_size}"
            );
        }
        let d = recreate(4);
        let new_rs = rs("new", 0, 0, 0);
        assert_eq!(new_rs_new_replicas(&d, &[&new_rs], &new_rs), Ok(4));

        // An old ReplicaSet scaled to 9 still reports 10 pods (a deletion in flight): the new
        // one stays at 1 until the deletion is observed, so pods never exceed 10 + 1.
        let d = rolling(10, IntOrString::Int(1), IntOrString::Int(0));
        let mut old = rs("old", 0, 9, 9);
        if let Some(status) = old.status.as_mut() {
            status.replicas = 10;
        }
        let new_rs = rs("new", 100, 1, 1);
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new_rs], &new_rs), Ok(1));
        if let Some(status) = old.status.as_mut() {
            status.replicas = 9;
        }
        assert_eq!(new_rs_new_replicas(&d, &[&old, &new_rs], &new_rs), Ok(2));
    }
}
