//! The replica pass (steps 4, 5, 9 and 11 of upstream `updateStatefulSet`): create the pods
//! of empty slots, repair or replace the existing ones, then delete the condemned pods, each
//! cut where a monotonic pass would stop.

use std::sync::Arc;

use informer::CachedPod;
use k8s_openapi::{
    api::core::v1::{Pod, PodSpec, Volume},
    jiff::Timestamp,
};

use super::{
    PlanInput, PodAction,
    claims::{claim_writes, claims_to_create},
    pod_state::{
        is_finished, is_running_and_available, is_running_and_ready, is_terminating, phase,
    },
    slots::{MAX_CREATES_PER_SYNC, ReplicaSlots, Run},
    spec::{min_ready_seconds, uses_current_revision},
};

use crate::{
    identity::{
        identity_matches, new_pod, pod_claims, pod_ordinal, set_identity, set_storage,
        storage_matches,
    },
    retention::claim_is_stale,
};

/// Steps 4 and 9 for the empty slot `index`: the in-memory pod upstream's
/// `newVersionedStatefulSetPod` builds, to create after its claims; `None` when no pod can
/// carry the slot's ordinal ([`ReplicaSlots::ordinal`]) or when a stale claim of an earlier pod
/// holds the slot back.
fn create(input: &PlanInput<'_>, slots: &ReplicaSlots<'_>, index: usize) -> Option<PodAction> {
    let set = input.set;
    let revisions = input.revisions;
    let ordinal = slots.ordinal(index)?;
    let (template_set, revision) = if uses_current_revision(set, ordinal) {
        (revisions.current_set, revisions.current)
    } else {
        (revisions.update_set, revisions.update)
    };
    let pod = new_pod(set, template_set, input.controller_ref, ordinal, revision);
    let view = CachedPod::from(&pod);
    let stale = pod_claims(set, ordinal).iter().any(|wanted| {
        wanted
            .metadata
            .name
            .as_ref()
            .and_then(|name| input.claims.get(name))
            .is_some_and(|existing| claim_is_stale(set, &view, existing))
    });
    (!stale).then(|| PodAction::Create {
        claims: claims_to_create(set, &view, input.claims),
        pod: Box::new(pod),
    })
}

/// upstream `processReplica` for every slot; returns the actions and whether a monotonic pass
/// stopped. A monotonic pass stops at the first empty slot, after creating its pod when it
/// can; a Parallel one creates the pods of every empty slot, up to [`MAX_CREATES_PER_SYNC`].
pub(super) fn process_replicas(
    input: &PlanInput<'_>,
    slots: &ReplicaSlots<'_>,
    monotonic: bool,
) -> (Vec<PodAction>, bool) {
    let set = input.set;
    let min_ready = min_ready_seconds(set);
    let creatable = slots.creatable();
    let mut actions = Vec::new();
    let mut creates = 0;
    for run in slots.runs() {
        let pod = match run {
            Run::Empty(indices) if monotonic => {
                actions.extend(create(input, slots, indices.start));
                return (actions, true);
            }
            Run::Empty(indices) => {
                let fill = indices.start.max(creatable.start)..indices.end.min(creatable.end);
                for index in fill {
                    if creates >= MAX_CREATES_PER_SYNC {
                        break;
                    }
                    if let Some(action) = create(input, slots, index) {
                        actions.push(action);
                        creates += 1;
                    }
                }
                continue;
            }
            Run::Filled(_, pod) => pod,
        };
        if is_finished(pod) {
            if !is_terminating(pod) {
                actions.push(PodAction::Delete {
                    pod: pod.clone(),
                    for_update: false,
                });
            }
            if monotonic {
                return (actions, true);
            }
            continue;
        }
        let pending_claims = if phase(pod) == "Pending" {
            claim_writes(set, pod, input.claims, true)
        } else {
            Vec::new()
        };
        if !pending_claims.is_empty() {
            actions.push(PodAction::Repair {
                pod: pod.clone(),
                updated: None,
                claims: pending_claims,
            });
        }
        if monotonic
            && (is_terminating(pod)
                || !is_running_and_ready(pod)
                || !is_running_and_available(pod, min_ready, input.now))
        {
            return (actions, true);
        }
        if let Some(repair) = repair(input, pod) {
            actions.push(repair);
        }
    }
    (actions, false)
}

/// Step 5: the repair an existing in-range pod needs, if any (identity, storage and
/// claim owners, judged against the update revision's set).
fn repair(input: &PlanInput<'_>, pod: &Arc<CachedPod>) -> Option<PodAction> {
    let set = input.revisions.update_set;
    let ordinal = pod_ordinal(pod);
    let identity_ok = identity_matches(set, pod);
    let storage_ok = storage_matches(set, pod);
    let claims = claim_writes(input.set, pod, input.claims, !storage_ok);
    if identity_ok && storage_ok && claims.is_empty() {
        return None;
    }
    let updated = (!identity_ok || !storage_ok).then(|| {
        let mut updated = repair_base(pod);
        if !identity_ok {
            set_identity(set, &mut updated, ordinal);
        }
        if !storage_ok {
            set_storage(set, &mut updated, ordinal);
        }
        Box::new(updated)
    });
    Some(PodAction::Repair {
        pod: pod.clone(),
        updated,
        claims,
    })
}

/// The part of a cached pod a repair changes, as a `Pod` for `set_identity`/`set_storage`:
/// its metadata and its claim volumes (the only volumes the cache keeps). The pod control
/// carries the result onto a fresh read of the pod, so nothing else is lost.
fn repair_base(pod: &CachedPod) -> Pod {
    let volumes = pod
        .spec
        .as_ref()
        .map(|spec| &spec.volumes)
        .filter(|volumes| !volumes.is_empty())
        .map(|volumes| {
            volumes
                .iter()
                .map(|volume| Volume {
                    name: volume.name.clone(),
                    persistent_volume_claim: volume.persistent_volume_claim.clone(),
                    ..Volume::default()
                })
                .collect()
        });
    Pod {
        metadata: pod.metadata.to_object_meta(),
        spec: Some(PodSpec {
            volumes,
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// upstream `processCondemned` over the condemned pods (highest ordinal first).
pub(super) fn process_condemned(
    condemned: &[Arc<CachedPod>],
    first_unavailable: Option<&str>,
    monotonic: bool,
    min_ready: i32,
    now: Timestamp,
) -> (Vec<PodAction>, bool) {
    let mut actions = Vec::new();
    for pod in condemned {
        if is_terminating(pod) {
            if monotonic {
                return (actions, true);
            }
            continue;
        }
        let is_first_unavailable = first_unavailable == pod.metadata.name.as_deref();
        if monotonic
            && !is_first_unavailable
            && (!is_running_and_ready(pod) || !is_running_and_available(pod, min_ready, now))
        {
            return (actions, true);
        }
        actions.push(PodAction::Delete {
            pod: pod.clone(),
            for_update: false,
        });
        if monotonic {
            return (actions, true);
        }
    }
    (actions, false)
}
