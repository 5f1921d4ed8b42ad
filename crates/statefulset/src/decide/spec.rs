//! The spec fields the plan reads (policy, update strategy, partition, `maxUnavailable`,
//! which slots get the current revision), resolved with upstream's defaults in one place so
//! that every phase resolves them alike.

use k8s_openapi::{api::apps::v1::StatefulSet, apimachinery::pkg::util::intstr::IntOrString};

use crate::identity::OrdinalRange;

/// `podManagementPolicy` value that lifts the ordering guarantees.
pub const PARALLEL_POLICY: &str = "Parallel";
/// `updateStrategy.type` value that leaves updates to the user.
pub const ON_DELETE_STRATEGY: &str = "OnDelete";

/// `spec.minReadySeconds`, 0 when unset.
pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|spec| spec.min_ready_seconds)
        .unwrap_or(0)
}

/// Whether pods are managed in order (anything but `Parallel`).
pub fn is_monotonic(set: &StatefulSet) -> bool {
    set.spec
        .as_ref()
        .and_then(|spec| spec.pod_management_policy.as_deref())
        != Some(PARALLEL_POLICY)
}

pub(super) fn is_on_delete(set: &StatefulSet) -> bool {
    set.spec
        .as_ref()
        .and_then(|spec| spec.update_strategy.as_ref())
        .and_then(|strategy| strategy.type_.as_deref())
        == Some(ON_DELETE_STRATEGY)
}

fn rolling_update(
    set: &StatefulSet,
) -> Option<&k8s_openapi::api::apps::v1::RollingUpdateStatefulSetStrategy> {
    set.spec
        .as_ref()
        .and_then(|spec| spec.update_strategy.as_ref())
        .and_then(|strategy| strategy.rolling_update.as_ref())
}

/// `rollingUpdate.partition`, 0 when unset.
pub fn partition(set: &StatefulSet) -> i32 {
    rolling_update(set).and_then(|r| r.partition).unwrap_or(0)
}

/// The resolved `rollingUpdate.maxUnavailable` (default 1): an integer as is, a percentage of
/// `spec.replicas` rounded down; at least 1.
pub fn max_unavailable(set: &StatefulSet) -> i32 {
    let replicas = OrdinalRange::of(set).replicas;
    let resolved = match rolling_update(set).and_then(|r| r.max_unavailable.as_ref()) {
        None => 1,
        Some(IntOrString::Int(value)) => *value,
        Some(IntOrString::String(text)) => text
            .strip_suffix('%')
            .and_then(|percent| percent.parse::<i64>().ok())
            .map_or(1, |percent| {
                // In i128 no percentage an i64 holds overflows with up to i32::MAX replicas
                // (`"99999999999%"` did in i64); past int32 either way is as good as its end.
                let scaled = i128::from(percent) * i128::from(replicas) / 100;
                let clamped = scaled.clamp(i128::from(i32::MIN), i128::from(i32::MAX));
                i32::try_from(clamped).unwrap_or(1)
            }),
    };
    resolved.max(1)
}

/// How many slots, from the first, get their in-memory pod built from the current revision
/// (upstream `newVersionedStatefulSetPod`): `rollingUpdate.partition` when `rollingUpdate` is
/// set, else `status.currentReplicas` for a rolling update; `None` (no slot) for `OnDelete`.
pub(super) fn current_revision_slots(set: &StatefulSet) -> Option<i64> {
    match rolling_update(set) {
        Some(_) => Some(i64::from(partition(set))),
        None if !is_on_delete(set) => Some(i64::from(
            set.status
                .as_ref()
                .and_then(|status| status.current_replicas)
                .unwrap_or(0),
        )),
        None => None,
    }
}

/// Whether the pod of `ordinal` is built from the current revision rather than the update
/// revision.
pub fn uses_current_revision(set: &StatefulSet, ordinal: i32) -> bool {
    let start = OrdinalRange::of(set).start;
    current_revision_slots(set).is_some_and(|slots| i64::from(ordinal) < i64::from(start) + slots)
}
