//! Step 14: the rolling update's deletions, one path per `MaxUnavailableStatefulSet` gate
//! value; a later sync's replica pass recreates the deleted pods at the update revision.

use std::sync::Arc;

use informer::CachedPod;
use k8s_openapi::{api::apps::v1::StatefulSet, jiff::Timestamp};

use super::{
    PodAction, Revisions,
    pod_state::{is_running_and_available, is_terminating, is_unavailable},
    slots::{ReplicaSlots, Run},
    spec::{current_revision_slots, max_unavailable, partition},
};

use crate::identity::pod_revision;

/// Upstream `updateStatefulSetAfterInvariantEstablished` (`MaxUnavailableStatefulSet` on):
/// which outdated pods to delete, from the highest ordinal down to the partition, within the
/// `maxUnavailable` budget.
pub(super) fn rolling_update_deletions(
    set: &StatefulSet,
    slots: &ReplicaSlots<'_>,
    revisions: Revisions<'_>,
    monotonic: bool,
    min_ready: i32,
    now: Timestamp,
) -> Vec<PodAction> {
    let update_revision = revisions.update;
    let max_unavailable = max_unavailable(set);
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    let outdated = |pod: &CachedPod| pod_revision(pod) != update_revision;
    let unavailable = slots.unavailable(min_ready, now);
    let unavailable_needing_update = if monotonic {
        0
    } else {
        // An empty slot's in-memory pod is outdated when built from the current revision.
        let empty_outdated = if revisions.current == update_revision {
            0
        } else {
            current_revision_slots(set).map_or(0, |count| {
                slots.empty_below(usize::try_from(count.max(0)).unwrap_or(usize::MAX))
            })
        };
        empty_outdated
            + slots
                .pods()
                .filter(|pod| {
                    is_unavailable(pod, min_ready, now) && outdated(pod) && !is_terminating(pod)
                })
                .count()
    };
    let max_unavailable = usize::try_from(max_unavailable).unwrap_or(1);
    if unavailable >= max_unavailable && unavailable_needing_update == 0 {
        return Vec::new();
    }
    // Only pods that exist can be deleted; highest index first, down to the partition.
    let candidates: Vec<&Arc<CachedPod>> = slots
        .filled_from(update_min)
        .rev()
        .filter(|pod| outdated(pod) && !is_terminating(pod))
        .collect();
    let delete = |pod: &Arc<CachedPod>| PodAction::Delete {
        pod: pod.clone(),
        for_update: true,
    };
    if monotonic {
        let budget = max_unavailable.saturating_sub(unavailable);
        return candidates.into_iter().take(budget).map(delete).collect();
    }
    let (unavailable_outdated, available_outdated): (Vec<&Arc<CachedPod>>, Vec<&Arc<CachedPod>>) =
        candidates
            .into_iter()
            .partition(|pod| !is_running_and_available(pod, min_ready, now));
    let budget = max_unavailable.saturating_sub(unavailable);
    unavailable_outdated
        .into_iter()
        .chain(available_outdated.into_iter().take(budget))
        .map(delete)
        .collect()
}

/// Rolling update with `MaxUnavailableStatefulSet` off (the v1.36 default, kubernetes#137904; upstream
/// `updateStatefulSet`'s own loop): from the highest index down to the partition, delete the
/// first outdated pod that is not terminating, at most one per sync, and stop at the first
/// updated or terminating pod that is unavailable. `maxUnavailable` is ignored and the policy
/// does not matter: only pods at or above the current target block.
///
/// Upstream's slots all hold a pod by now (missing ones were created earlier in the sync); an
/// empty slot here is one created this sync (or held back by a stale claim), which is
/// unavailable, so the loop waits there as upstream's `isUnavailable` check does.
pub(super) fn rolling_update_one_at_a_time(
    set: &StatefulSet,
    slots: &ReplicaSlots<'_>,
    update_revision: &str,
    min_ready: i32,
    now: Timestamp,
) -> Vec<PodAction> {
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    for run in slots.runs().into_iter().rev() {
        let pod = match run {
            Run::Filled(index, pod) if index >= update_min => pod,
            // An empty slot at or above the partition waits; one below it ends the loop too.
            Run::Empty(_) | Run::Filled(..) => return Vec::new(),
        };
        if pod_revision(pod) != update_revision && !is_terminating(pod) {
            return vec![PodAction::Delete {
                pod: pod.clone(),
                for_update: true,
            }];
        }
        if is_unavailable(pod, min_ready, now) {
            return Vec::new();
        }
    }
    Vec::new()
}
