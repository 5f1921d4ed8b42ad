//! Which path syncDeployment takes: empty selector, deletion, paused, legacy
//! rollback, scaling event, or a rollout by strategy. Upstream's order matters: e.g. a
//! paused Deployment scales but never rolls, and a rollback request wins over a resize.

use informer::{CachedDeployment, CachedReplicaSet, CompactLabelSelector};

use k8s_openapi::api::apps::v1::DeploymentStatus;

use crate::annotations::rollback_to;
use crate::constants::{STRATEGY_RECREATE, STRATEGY_ROLLING_UPDATE};
use crate::error::Error;
use crate::events::{self, Event};
use crate::proportional::is_scaling_event;
use crate::replica_set::deployment_paused;
use crate::rollout_limits::strategy_type;

/// What syncDeployment does for a Deployment whose selector is empty (`{}`).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectingAll {
    /// Warning `SelectingAll` to record.
    pub event: Event,
    /// Status to PUT (error ignored) when `observedGeneration` lags `metadata.generation`.
    pub status: Option<DeploymentStatus>,
}

/// syncDeployment's empty-selector check: `Some` when the selector deep-equals an empty
/// selector; the sync then ends successfully. Compact selectors are equal when their JSON is,
/// and only a selector with neither `matchLabels` nor `matchExpressions` (an empty map or list
/// is not absent, as in Go's `DeepEqual`) is written as the default's `{}`, so no decode is
/// needed here.
pub fn selecting_all(d: &CachedDeployment) -> Option<SelectingAll> {
    if d.spec.as_ref()?.selector != CompactLabelSelector::default() {
        return None;
    }
    let generation = d.metadata.generation.unwrap_or(0);
    let observed = d
        .status
        .as_ref()
        .and_then(|status| status.observed_generation)
        .unwrap_or(0);
    let status = (observed < generation).then(|| DeploymentStatus {
        observed_generation: Some(generation),
        ..d.status.clone().unwrap_or_default()
    });
    Some(SelectingAll {
        event: events::selecting_all(),
        status,
    })
}

/// syncDeployment's deletion check: a Deployment being deleted only gets its status synced
/// (syncStatusOnly).
pub fn is_being_deleted(d: &CachedDeployment) -> bool {
    d.metadata.deletion_timestamp.is_some()
}

/// What to run after checkPausedConditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutPath {
    /// sync(): proportional scaling, cleanup if paused, status (paused or scaling event).
    Sync,
    /// rollback to the requested revision.
    Rollback,
    /// rolloutRecreate.
    Recreate,
    /// rolloutRolling.
    RollingUpdate,
}

/// syncDeployment's choice of path (paused, rollback, isScalingEvent, then the strategy), on
/// the ReplicaSets resolved *without* creating (the scaling-event test needs them).
pub fn choose_rollout_path(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
) -> Result<RolloutPath, Error> {
    if deployment_paused(d) {
        return Ok(RolloutPath::Sync);
    }
    if rollback_to(d).is_some() {
        return Ok(RolloutPath::Rollback);
    }
    if is_scaling_event(d, new_rs, old) {
        return Ok(RolloutPath::Sync);
    }
    match strategy_type(d) {
        STRATEGY_RECREATE => Ok(RolloutPath::Recreate),
        STRATEGY_ROLLING_UPDATE => Ok(RolloutPath::RollingUpdate),
        other => Err(Error::UnexpectedStrategy(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::constants::{DESIRED_REPLICAS_ANNOTATION, ROLLBACK_TO_ANNOTATION};
    use crate::replica_set::test_support::{annotate, at, recreate, rolling, rs};

    #[test]
    fn selecting_all_table() {
        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        assert_eq!(selecting_all(&d), None);
        if let Some(spec) = d.spec.as_mut() {
            spec.selector = CompactLabelSelector::default();
        }
        let got = selecting_all(&d).expect("empty selector");
        assert_eq!(got.event.reason, "SelectingAll");
        assert_eq!(got.status.and_then(|s| s.observed_generation), Some(1));
        d.status = Some(DeploymentStatus {
            observed_generation: Some(1),
            ..Default::default()
        });
        assert_eq!(selecting_all(&d).expect("empty selector").status, None);

        // An empty map or list is present, as in Go's DeepEqual: not the empty selector.
        for present_but_empty in [
            serde_json::json!({"matchLabels": {}}),
            serde_json::json!({"matchExpressions": []}),
        ] {
            if let Some(spec) = d.spec.as_mut() {
                spec.selector =
                    serde_json::from_value(present_but_empty.clone()).expect("selector");
            }
            assert_eq!(selecting_all(&d), None, "{present_but_empty}");
        }
    }

    #[test]
    fn rollout_path_table() {
        let rolling_d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let mut paused = rolling_d.clone();
        if let Some(spec) = paused.spec.as_mut() {
            spec.paused = Some(true);
        }
        let mut rollback = rolling_d.clone();
        rollback.metadata.annotations =
            BTreeMap::from([(ROLLBACK_TO_ANNOTATION.to_owned(), "0".to_owned())]).into();
        let mut other = rolling_d.clone();
        if let Some(strategy) = other.spec.as_mut().and_then(|s| s.strategy.as_mut()) {
            strategy.type_ = Some("Canary".to_owned());
        }
        let settled = annotate(rs("a", 0, 3, 3), DESIRED_REPLICAS_ANNOTATION, "3");
        let resized = annotate(rs("a", 0, 3, 3), DESIRED_REPLICAS_ANNOTATION, "2");
        let cases = [
            (&paused, &resized, Ok(RolloutPath::Sync)),
            (&rollback, &resized, Ok(RolloutPath::Rollback)),
            (&rolling_d, &resized, Ok(RolloutPath::Sync)),
            (&rolling_d, &settled, Ok(RolloutPath::RollingUpdate)),
            (&recreate(3), &settled, Ok(RolloutPath::Recreate)),
            (
                &other,
                &settled,
                Err(Error::UnexpectedStrategy("Canary".to_owned())),
            ),
        ];
        for (i, (d, r, want)) in cases.into_iter().enumerate() {
            assert_eq!(choose_rollout_path(d, Some(r), &[]), want, "case {i}");
        }
        let mut deleting = rolling_d.clone();
        assert!(!is_being_deleted(&deleting));
        deleting.metadata.deletion_timestamp = Some(Time(at(0)));
        assert!(is_being_deleted(&deleting));
    }
}
