//! The pure heart of the StatefulSet controller: given the
//! set, its current and update revisions, its pods and the existing claims, which pod and claim
//! writes to make, in which order, and the status that results.
//!
//! Upstream interleaves decisions with API calls and stops ("exits") a monotonic
//! (`OrderedReady`) pass at the first create, delete or unhealthy pod. Every such stop depends
//! only on the snapshot, so the plan is cut there: a [`Plan`] is a list of phases, each a list
//! of [`PodAction`]s, and the executor only has to stop early on an API error.
//!
//! The rolling update takes one of two paths by the `MaxUnavailableStatefulSet` gate
//! ([`FeatureGates`]): one outdated pod per sync (gate off, the v1.36 default) or a
//! `maxUnavailable` budget (gate on).
//!
//! kcm-rs only, opt-in: [`broken_rollout_recovery`] deletes a pod of an `OrderedReady` set that
//! is stuck not Ready at an outdated revision (kubernetes#67250), which upstream's ordered pass
//! waits for forever; see [`BrokenRolloutRecovery`].
//!
//! kcm-rs only, against hostile objects: a sync creates at most [`MAX_CREATES_PER_SYNC`] pods
//! (`spec.replicas` may be `i32::MAX`) and none whose ordinal falls outside `[0, i32::MAX]` (a
//! negative `spec.ordinals.start`, or `start + replicas` past int32), where upstream's Go int
//! arithmetic would name a pod no later sync recognises; such a slot stays empty and stops an
//! ordered pass, as one held back by a stale claim does. See [`ReplicaSlots`].
//!
//! The phases live one to a file so that each reads on its own: `slots` (step 3, the wanted
//! slots and the condemned pods), `replicas` (create, repair, condemn), `rolling_update` (step
//! 14), `recovery` (kcm-rs only) and `status`; `pod_state`, `spec` and `claims` hold what they
//! share. [`plan`], here, strings them together in upstream's order.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use informer::CachedPod;
use k8s_openapi::{
    api::{
        apps::v1::{StatefulSet, StatefulSetStatus},
        core::v1::{PersistentVolumeClaim, Pod},
    },
    apimachinery::pkg::apis::meta::v1::OwnerReference,
    jiff::Timestamp,
};

use crate::{
    features::FeatureGates,
    identity::{OrdinalRange, pod_name, pod_ordinal},
};

mod claims;
mod pod_state;
mod recovery;
mod replicas;
mod rolling_update;
mod slots;
mod spec;
mod status;

pub use pod_state::{
    is_created, is_finished, is_running_and_available, is_running_and_ready, is_terminating,
    is_unavailable,
};
pub use recovery::{
    BrokenRolloutRecovery, DEFAULT_RECOVER_GRACE, RECOVER_BROKEN_ROLLOUT_ANNOTATION, Recovery,
    RecoveryRule, StuckPod, broken_rollout_recovery,
};
pub use slots::{MAX_CREATES_PER_SYNC, ReplicaSlots};
pub use spec::{
    ON_DELETE_STRATEGY, PARALLEL_POLICY, is_monotonic, max_unavailable, min_ready_seconds,
    partition, uses_current_revision,
};
pub use status::{
    availability_recheck, complete_rolling_update, count_replicas, status_needs_write,
};

use claims::claim_writes;
use replicas::{process_condemned, process_replicas};
use rolling_update::{rolling_update_deletions, rolling_update_one_at_a_time};
use slots::Run;
use spec::is_on_delete;

/// A claim write needed before or alongside a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum ClaimWrite {
    /// The claim does not exist: create it (with the owner refs the retention policy wants).
    Create(Box<PersistentVolumeClaim>),
    /// The claim exists with owner refs the retention policy does not want: replace them.
    SetOwners {
        /// The claim as cached.
        claim: Arc<PersistentVolumeClaim>,
        /// Its new owner references.
        owners: Vec<OwnerReference>,
    },
    /// The claim exists but is being deleted; the pod must wait (an error, retried).
    BeingDeleted(String),
}

/// One step of a sync.
#[derive(Debug, Clone, PartialEq)]
pub enum PodAction {
    /// Create the claims (first) and then the pod of an empty slot (upstream
    /// `CreateStatefulPod`).
    Create {
        /// The pod to POST.
        pod: Box<Pod>,
        /// Its claims to create first.
        claims: Vec<ClaimWrite>,
    },
    /// Bring an existing pod and its claims in line (upstream `UpdateStatefulPod` and
    /// `fixPodClaim`): claim writes, then a PUT of `updated` if its identity or storage changed.
    Repair {
        /// The pod as cached.
        pod: Arc<CachedPod>,
        /// The identity labels and claim volumes to carry onto a fresh read of the pod and PUT,
        /// if they must change (metadata and claim volumes only: never sent as is).
        updated: Option<Box<Pod>>,
        /// Claim writes.
        claims: Vec<ClaimWrite>,
    },
    /// Delete a pod: failed/succeeded, condemned, or outdated in a rolling update.
    Delete {
        /// The pod as cached.
        pod: Arc<CachedPod>,
        /// Whether it is deleted to be replaced at the update revision (each such deletion
        /// lowers `currentReplicas`, as upstream).
        for_update: bool,
    },
    /// kcm-rs only (opt-in): delete a pod stuck not Ready at an outdated revision so that it is
    /// recreated at the update revision ([`broken_rollout_recovery`]). A variant of its own
    /// because the executor reports it (Warning event, recovery counter).
    Recover(StuckPod),
}
/// What one sync does: phases run in order; a phase's actions run one by one (OrderedReady)
/// or in slow-start batches (Parallel); an error ends the sync.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The phases, already cut where upstream's monotonic pass would stop.
    pub phases: Vec<Vec<PodAction>>,
    /// Whether actions within a phase run concurrently.
    pub parallel: bool,
    /// The status before the deletions for update are subtracted from `currentReplicas`.
    pub status: StatefulSetStatus,
    /// Unavailable replicas (missing, not ready, terminating or not yet available), for the
    /// `statefulset_unavailable_replicas` gauge; `None` with `MaxUnavailableStatefulSet` off,
    /// where upstream reports neither gauge.
    pub unavailable: Option<usize>,
    /// kcm-rs only: when a pod's recovery grace period ends, to sync the set again then.
    pub recovery_recheck: Option<Duration>,
}

/// The two revisions of a sync and the set rebuilt at each (upstream `ApplyRevision`).
#[derive(Debug, Clone, Copy)]
pub struct Revisions<'a> {
    /// Name of the current revision.
    pub current: &'a str,
    /// Name of the update revision.
    pub update: &'a str,
    /// The set with the current revision's template.
    pub current_set: &'a StatefulSet,
    /// The set with the update revision's template.
    pub update_set: &'a StatefulSet,
}

/// Everything a plan depends on.
pub struct PlanInput<'a> {
    /// The set as cached.
    pub set: &'a StatefulSet,
    /// Current and update revisions.
    pub revisions: Revisions<'a>,
    /// `status.collisionCount` after revision creation.
    pub collision_count: i32,
    /// The pods this set owns (claimed).
    pub pods: &'a [Arc<CachedPod>],
    /// Existing claims of the set's namespace, by name.
    pub claims: &'a BTreeMap<String, Arc<PersistentVolumeClaim>>,
    /// The controller reference new pods get.
    pub controller_ref: &'a OwnerReference,
    /// The time availability is judged at.
    pub now: Timestamp,
    /// The feature gates the plan follows.
    pub gates: FeatureGates,
    /// kcm-rs only: the broken-rollout recovery grace period when recovery is on for this set
    /// ([`BrokenRolloutRecovery::grace_for`]), `None` for upstream's behavior.
    pub recovery: Option<Duration>,
    /// Names of revisions other than the update revision whose data equals it (history's
    /// revision equality); read only when `recovery` is on.
    pub update_equivalents: &'a [String],
}
/// Upstream `updateStatefulSet` as a plan.
pub fn plan(input: &PlanInput<'_>) -> Plan {
    let set = input.set;
    let range = OrdinalRange::of(set);
    let min_ready = min_ready_seconds(set);
    let now = input.now;
    let monotonic = is_monotonic(set);
    let revisions = input.revisions;

    // Step 3: partition the pods into wanted slots and condemned pods. Step 4 (an in-memory
    // pod for every empty slot) is left to the creation, the only step that needs the pod.
    let (slots, mut condemned) = ReplicaSlots::partition(range, input.pods);
    // Step 5: condemned pods go highest ordinal first.
    condemned.sort_by_key(|pod| std::cmp::Reverse(pod_ordinal(pod)));

    let mut status = count_replicas(
        slots.pods().chain(condemned.iter().map(AsRef::as_ref)),
        (revisions.current, revisions.update),
        min_ready,
        now,
    );
    status.observed_generation = set.metadata.generation;
    status.current_revision = Some(revisions.current.to_owned());
    status.update_revision = Some(revisions.update.to_owned());
    status.collision_count = Some(input.collision_count);

    let unavailable = input
        .gates
        .max_unavailable_statefulset
        .then(|| slots.unavailable(min_ready, now));
    let mut plan = Plan {
        phases: Vec::new(),
        parallel: !monotonic,
        status,
        unavailable,
        recovery_recheck: None,
    };
    // Step 7: a set being deleted gets its status only.
    if set.metadata.deletion_timestamp.is_some() {
        return plan;
    }
    // kcm-rs only: a stuck pod is not Ready, so the ordered pass below halts at or before it;
    // its deletion runs as a phase of its own right after that pass.
    let recovery = match input.recovery {
        Some(grace) => broken_rollout_recovery(
            set,
            &slots,
            input.pods,
            &RecoveryRule {
                grace,
                current_revision: revisions.current,
                update_revision: revisions.update,
                update_equivalents: input.update_equivalents,
                gates: input.gates,
                now,
            },
        ),
        None => Recovery::Nothing,
    };

    // Step 6: the first unavailable pod, in replica then condemned (ascending) order.
    let first_unavailable = first_unavailable(set, &slots, &condemned, min_ready, now);

    // Step 9: processReplica.
    let (actions, halted) = process_replicas(input, &slots, monotonic);
    plan.phases.push(actions);
    match recovery {
        Recovery::Delete(stuck) => plan.phases.push(vec![PodAction::Recover(stuck)]),
        Recovery::RecheckAfter(delay) => plan.recovery_recheck = Some(delay),
        Recovery::Nothing => {}
    }
    if halted {
        return plan;
    }
    // Step 10: fixPodClaim over condemned pods.
    let fixes: Vec<PodAction> = condemned
        .iter()
        .filter_map(|pod| {
            let claims = claim_writes(set, pod, input.claims, false);
            (!claims.is_empty()).then(|| PodAction::Repair {
                pod: pod.clone(),
                updated: None,
                claims,
            })
        })
        .collect();
    plan.phases.push(fixes);
    // Step 11: processCondemned.
    let (actions, halted) = process_condemned(
        &condemned,
        first_unavailable.as_deref(),
        monotonic,
        min_ready,
        now,
    );
    plan.phases.push(actions);
    if halted || is_on_delete(set) {
        return plan;
    }
    // Step 14: rolling update, by the MaxUnavailableStatefulSet gate.
    let deletions = if input.gates.max_unavailable_statefulset {
        rolling_update_deletions(set, &slots, revisions, monotonic, min_ready, now)
    } else {
        rolling_update_one_at_a_time(set, &slots, revisions.update, min_ready, now)
    };
    plan.phases.push(deletions);
    plan
}

/// Step 6: the name of the first unavailable pod, replicas then condemned pods in ascending
/// order. An empty slot is unavailable, under the name its in-memory pod gets (`None` when no
/// pod can carry its ordinal: nothing is named after it).
fn first_unavailable(
    set: &StatefulSet,
    slots: &ReplicaSlots<'_>,
    condemned: &[Arc<CachedPod>],
    min_ready: i32,
    now: Timestamp,
) -> Option<String> {
    for run in slots.runs() {
        match run {
            Run::Empty(indices) => {
                let set_name = set.metadata.name.as_deref().unwrap_or_default();
                return slots
                    .ordinal(indices.start)
                    .map(|ordinal| pod_name(set_name, ordinal));
            }
            Run::Filled(_, pod) if is_unavailable(pod, min_ready, now) => {
                return pod.metadata.name.clone();
            }
            Run::Filled(..) => {}
        }
    }
    condemned
        .iter()
        .rev()
        .find(|pod| is_unavailable(pod, min_ready, now))
        .and_then(|pod| pod.metadata.name.clone())
}

#[cfg(test)]
mod tests;
