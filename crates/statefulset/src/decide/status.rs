//! The status of a sync (upstream `computeReplicaStatus` and the steps of `sync` around the
//! status write): the counters, when the update revision becomes current, whether to write,
//! and when to look again for pods turning available.

use std::{sync::Arc, time::Duration};

use controller_toolkit::availability::availability_requeue;
use informer::CachedPod;
use k8s_openapi::{
    api::apps::v1::{StatefulSet, StatefulSetStatus},
    jiff::Timestamp,
};

use super::{
    pod_state::{is_created, is_running_and_available, is_running_and_ready, is_terminating},
    spec::{is_on_delete, min_ready_seconds},
};

use crate::identity::{OrdinalRange, pod_revision};

/// The status counters over `pods` (upstream `computeReplicaStatus`).
pub fn count_replicas<'a>(
    pods: impl IntoIterator<Item = &'a CachedPod>,
    revisions: (&str, &str),
    min_ready_seconds: i32,
    now: Timestamp,
) -> StatefulSetStatus {
    let mut status = StatefulSetStatus::default();
    let (mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0);
    for pod in pods {
        if !is_created(pod) {
            continue;
        }
        status.replicas += 1;
        if is_running_and_ready(pod) {
            ready += 1;
            if is_running_and_available(pod, min_ready_seconds, now) {
                available += 1;
            }
        }
        if !is_terminating(pod) {
            if pod_revision(pod) == revisions.0 {
                current += 1;
            }
            if pod_revision(pod) == revisions.1 {
                updated += 1;
            }
        }
    }
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
    status
}
/// Step 7 of upstream `sync` (v1.36, kubernetes#135428): when to look again so that ready
/// pods turning available are counted, given the status just written, the set's claimed
/// `pods`, the sync's `now` and the clock `after_write` the status write returned at. The
/// earliest moment a ready pod passes `minReadySeconds`, as the ReplicaSet controller does,
/// instead of always the full `minReadySeconds`; `None` when no re-check is needed.
pub fn availability_recheck(
    set: &StatefulSet,
    status: &StatefulSetStatus,
    pods: &[Arc<CachedPod>],
    now: Timestamp,
    after_write: Timestamp,
) -> Option<Duration> {
    availability_requeue(
        min_ready_seconds(set),
        status.ready_replicas.unwrap_or(0),
        status.available_replicas.unwrap_or(0),
        pods,
        now,
        after_write,
    )
}

/// Step 1: once every replica is updated and ready, the update revision becomes current.
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    if is_on_delete(set) {
        return;
    }
    let wanted = OrdinalRange::of(set).replicas;
    let updated = status.updated_replicas.unwrap_or(0);
    if updated == status.ready_replicas.unwrap_or(0)
        && updated == status.replicas
        && status.replicas == wanted
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision.clone_from(&status.update_revision);
    }
}

/// Step 3: whether `new` differs from the stored status in a field that warrants a write
/// (collisionCount alone does not).
pub fn status_needs_write(stored: Option<&StatefulSetStatus>, new: &StatefulSetStatus) -> bool {
    let Some(stored) = stored else {
        return true;
    };
    new.observed_generation.unwrap_or(0) > stored.observed_generation.unwrap_or(0)
        || new.replicas != stored.replicas
        || new.current_replicas.unwrap_or(0) != stored.current_replicas.unwrap_or(0)
        || new.ready_replicas.unwrap_or(0) != stored.ready_replicas.unwrap_or(0)
        || new.updated_replicas.unwrap_or(0) != stored.updated_replicas.unwrap_or(0)
        || new.available_replicas.unwrap_or(0) != stored.available_replicas.unwrap_or(0)
        || new.current_revision != stored.current_revision
        || new.update_revision != stored.update_revision
}
