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

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use controller_toolkit::{
    availability::availability_requeue,
    pod_predicates::{is_pod_available, is_pod_ready, pod_ready_condition},
};
use informer::CachedPod;
use k8s_openapi::{
    api::{
        apps::v1::{StatefulSet, StatefulSetStatus},
        core::v1::{PersistentVolumeClaim, Pod, PodSpec, Volume},
    },
    apimachinery::pkg::{apis::meta::v1::OwnerReference, util::intstr::IntOrString},
    jiff::Timestamp,
};

use crate::{
    features::FeatureGates,
    identity::{
        OrdinalRange, identity_matches, new_pod, pod_claims, pod_ordinal, pod_revision,
        set_identity, set_storage, storage_matches,
    },
    retention::{claim_is_stale, claim_owner_up_to_date, updated_claim_owners},
};

/// `podManagementPolicy` value that lifts the ordering guarantees.
pub const PARALLEL_POLICY: &str = "Parallel";
/// `updateStrategy.type` value that leaves updates to the user.
pub const ON_DELETE_STRATEGY: &str = "OnDelete";
/// kcm-rs only: StatefulSet annotation that opts one set in to broken-rollout recovery
/// (`"true"`) or, when the manager enables it for all sets, out of it (`"false"`).
pub const RECOVER_BROKEN_ROLLOUT_ANNOTATION: &str = "kcm-rs.io/recover-broken-rollout";
/// Default of `--statefulset-recover-grace`: long enough for a slow but healthy pod to turn
/// Ready, short enough that a reverted rollout resumes without a human.
pub const DEFAULT_RECOVER_GRACE: Duration = Duration::from_secs(30);

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

/// kcm-rs only: how the controller recovers from a broken `OrderedReady` rolling update
/// (kubernetes#67250). Off by default so that upstream's behavior (wait for a manual
/// `kubectl delete pod`) stays the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokenRolloutRecovery {
    /// Recover every set (`--statefulset-recover-broken-rollout`) unless its
    /// [`RECOVER_BROKEN_ROLLOUT_ANNOTATION`] says `"false"`; otherwise only sets whose
    /// annotation says `"true"`.
    pub all_sets: bool,
    /// How long past `minReadySeconds` a pod must have been not Ready before it counts as stuck
    /// (`--statefulset-recover-grace`): a pod that is merely slow to start is not deleted.
    pub grace: Duration,
}

impl Default for BrokenRolloutRecovery {
    fn default() -> Self {
        Self {
            all_sets: false,
            grace: DEFAULT_RECOVER_GRACE,
        }
    }
}

impl BrokenRolloutRecovery {
    /// The grace period when recovery applies to `set`, `None` when it does not: the set's
    /// annotation decides when present (`"true"` or `"false"`), the manager flag otherwise.
    pub fn grace_for(&self, set: &StatefulSet) -> Option<Duration> {
        let annotation = set
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(RECOVER_BROKEN_ROLLOUT_ANNOTATION))
            .map(String::as_str);
        let enabled = match annotation {
            Some("true") => true,
            Some("false") => false,
            _ => self.all_sets,
        };
        enabled.then_some(self.grace)
    }
}

/// A pod the recovery rule deletes, with what the event about it says.
#[derive(Debug, Clone, PartialEq)]
pub struct StuckPod {
    /// The pod as cached.
    pub pod: Arc<CachedPod>,
    /// The update revision it will be recreated at.
    pub update_revision: String,
    /// How long it has been not Ready (since its creation or last Ready transition).
    pub not_ready_for: Duration,
    /// Whether the status counts it in `currentReplicas` (it is at the current revision), so
    /// its deletion lowers that count as a deletion for update does.
    pub counted_current: bool,
}

impl StuckPod {
    /// The message of the `RecoveringBrokenPod` event: the pod, both revisions and how long
    /// it has been stuck, so the user can see why a pod went without asking for it.
    pub fn message(&self) -> String {
        format!(
            "Deleting pod {} stuck at revision {} (not Ready for {}s); it will be recreated at update revision {}",
            self.pod.metadata.name.as_deref().unwrap_or_default(),
            pod_revision(&self.pod),
            self.not_ready_for.as_secs(),
            self.update_revision,
        )
    }
}

/// What the recovery rule decided for one sync.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    /// No pod is stuck (or recovery is off for the set).
    Nothing,
    /// Delete this stuck pod now.
    Delete(StuckPod),
    /// A pod will count as stuck after this long (its grace period has not elapsed); look
    /// again then, since no event the controller watches marks that moment.
    RecheckAfter(Duration),
}

/// The plain data the recovery rule judges pods by, besides the set and its pods.
#[derive(Debug, Clone, Copy)]
pub struct RecoveryRule<'a> {
    /// The set's grace period (recovery is on for it).
    pub grace: Duration,
    /// The current revision's name (for the status count only).
    pub current_revision: &'a str,
    /// The update revision's name.
    pub update_revision: &'a str,
    /// Names of other revisions whose data equals the update revision's: a pod at one of them
    /// already runs the update template and is never deleted by this rule.
    pub update_equivalents: &'a [String],
    /// The gates (`MaxUnavailableStatefulSet` decides the budget).
    pub gates: FeatureGates,
    /// The time the pods are judged at.
    pub now: Timestamp,
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

/// A pod slot: a pod from the API server, or one built in memory for an empty ordinal.
#[derive(Debug, Clone)]
enum Slot {
    Existing(Arc<CachedPod>),
    Missing {
        /// The pod to create.
        pod: Box<Pod>,
        /// The same pod as the predicates read it.
        view: Box<CachedPod>,
    },
}

impl Slot {
    fn missing(pod: Pod) -> Self {
        Slot::Missing {
            view: Box::new(CachedPod::from(&pod)),
            pod: Box::new(pod),
        }
    }

    fn pod(&self) -> &CachedPod {
        match self {
            Slot::Existing(pod) => pod,
            Slot::Missing { view, .. } => view,
        }
    }
}

/// Whether the pod came from the API server (upstream `isCreated`: it has a phase).
pub fn is_created(pod: &CachedPod) -> bool {
    !phase(pod).is_empty()
}

fn phase(pod: &CachedPod) -> &str {
    pod.status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .unwrap_or_default()
}

/// Phase Failed or Succeeded: the pod will never run again (upstream `isFailed`/`isSucceeded`).
pub fn is_finished(pod: &CachedPod) -> bool {
    matches!(phase(pod), "Failed" | "Succeeded")
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Phase Running and condition Ready (upstream `isRunningAndReady`).
pub fn is_running_and_ready(pod: &CachedPod) -> bool {
    phase(pod) == "Running" && is_pod_ready(pod)
}

/// Running, ready, and ready for `min_ready_seconds` at `now` (upstream
/// `isRunningAndAvailable`).
pub fn is_running_and_available(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_running_and_ready(pod) && is_pod_available(pod, min_ready_seconds, now)
}

/// Missing, not running and ready, terminating, or not yet available.
pub fn is_unavailable(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    !is_created(pod)
        || is_terminating(pod)
        || !is_running_and_available(pod, min_ready_seconds, now)
}

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

fn is_on_delete(set: &StatefulSet) -> bool {
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
                i32::try_from(percent * i64::from(replicas) / 100).unwrap_or(i32::MAX)
            }),
    };
    resolved.max(1)
}

/// Whether the pod of `ordinal` is built from the current revision rather than the update
/// revision.
pub fn uses_current_revision(set: &StatefulSet, ordinal: i32) -> bool {
    let start = OrdinalRange::of(set).start;
    match rolling_update(set) {
        Some(_) => i64::from(ordinal) < i64::from(start) + i64::from(partition(set)),
        None => {
            let strategy_is_rolling = !is_on_delete(set);
            let current_replicas = set
                .status
                .as_ref()
                .and_then(|status| status.current_replicas)
                .unwrap_or(0);
            strategy_is_rolling
                && i64::from(ordinal) < i64::from(start) + i64::from(current_replicas)
        }
    }
}

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

/// The claim writes an existing pod needs: missing claims
/// created when `create_missing`, owner refs fixed where the retention policy disagrees.
fn claim_writes(
    set: &StatefulSet,
    pod: &CachedPod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
    create_missing: bool,
) -> Vec<ClaimWrite> {
    let ordinal = pod_ordinal(pod);
    let mut writes = Vec::new();
    for wanted in pod_claims(set, ordinal) {
        let name = wanted.metadata.name.clone().unwrap_or_default();
        match claims.get(&name) {
            None if create_missing => {
                writes.push(ClaimWrite::Create(Box::new(with_owners(set, pod, wanted))))
            }
            None => {}
            Some(existing) if create_missing && existing.metadata.deletion_timestamp.is_some() => {
                writes.push(ClaimWrite::BeingDeleted(name));
            }
            Some(existing) if !claim_owner_up_to_date(set, pod, existing) => {
                writes.push(ClaimWrite::SetOwners {
                    claim: existing.clone(),
                    owners: updated_claim_owners(set, pod, existing),
                });
            }
            Some(_) => {}
        }
    }
    writes
}

fn with_owners(
    set: &StatefulSet,
    pod: &CachedPod,
    mut claim: PersistentVolumeClaim,
) -> PersistentVolumeClaim {
    let owners = updated_claim_owners(set, pod, &claim);
    claim.metadata.owner_references = (!owners.is_empty()).then_some(owners);
    claim
}

/// Claims for a pod about to be created: the missing ones, or an error marker for one being
/// deleted (upstream `createPersistentVolumeClaims`).
fn claims_to_create(
    set: &StatefulSet,
    pod: &CachedPod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> Vec<ClaimWrite> {
    pod_claims(set, pod_ordinal(pod))
        .into_iter()
        .filter_map(|wanted| {
            let name = wanted.metadata.name.clone().unwrap_or_default();
            match claims.get(&name) {
                None => Some(ClaimWrite::Create(Box::new(with_owners(set, pod, wanted)))),
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    Some(ClaimWrite::BeingDeleted(name))
                }
                Some(_) => None,
            }
        })
        .collect()
}

/// Upstream `updateStatefulSet` as a plan.
pub fn plan(input: &PlanInput<'_>) -> Plan {
    let set = input.set;
    let range = OrdinalRange::of(set);
    let min_ready = min_ready_seconds(set);
    let now = input.now;
    let monotonic = is_monotonic(set);
    let revisions = input.revisions;

    // Step 3: partition the pods into wanted slots and condemned pods.
    let mut replicas: Vec<Option<Slot>> = vec![None; usize::try_from(range.replicas).unwrap_or(0)];
    let mut condemned: Vec<Arc<CachedPod>> = Vec::new();
    for pod in input.pods {
        let ordinal = pod_ordinal(pod);
        if range.contains(ordinal) {
            if let Some(slot) = usize::try_from(ordinal - range.start)
                .ok()
                .and_then(|index| replicas.get_mut(index))
            {
                *slot = Some(Slot::Existing(pod.clone()));
            }
        } else if ordinal >= 0 {
            condemned.push(pod.clone());
        }
    }
    // Step 4: empty slots get an in-memory pod at the revision `newVersionedStatefulSetPod` picks.
    let replicas: Vec<Slot> = replicas
        .into_iter()
        .enumerate()
        .map(|(index, slot)| {
            slot.unwrap_or_else(|| {
                let ordinal = range.start + i32::try_from(index).unwrap_or(i32::MAX);
                let (template_set, revision) = if uses_current_revision(set, ordinal) {
                    (revisions.current_set, revisions.current)
                } else {
                    (revisions.update_set, revisions.update)
                };
                Slot::missing(new_pod(
                    set,
                    template_set,
                    input.controller_ref,
                    ordinal,
                    revision,
                ))
            })
        })
        .collect();
    // Step 5: condemned pods go highest ordinal first.
    condemned.sort_by_key(|pod| std::cmp::Reverse(pod_ordinal(pod)));

    let mut status = count_replicas(
        replicas
            .iter()
            .map(Slot::pod)
            .chain(condemned.iter().map(AsRef::as_ref)),
        (revisions.current, revisions.update),
        min_ready,
        now,
    );
    status.observed_generation = set.metadata.generation;
    status.current_revision = Some(revisions.current.to_owned());
    status.update_revision = Some(revisions.update.to_owned());
    status.collision_count = Some(input.collision_count);

    let unavailable = input.gates.max_unavailable_statefulset.then(|| {
        replicas
            .iter()
            .filter(|slot| is_unavailable(slot.pod(), min_ready, now))
            .count()
    });
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
        Some(grace) => {
            let slots: Vec<Option<&Arc<CachedPod>>> = replicas
                .iter()
                .map(|slot| match slot {
                    Slot::Existing(pod) => Some(pod),
                    Slot::Missing { .. } => None,
                })
                .collect();
            broken_rollout_recovery(
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
            )
        }
        None => Recovery::Nothing,
    };

    // Step 6: the first unavailable pod, in replica then condemned (ascending) order.
    let first_unavailable = replicas
        .iter()
        .map(Slot::pod)
        .chain(condemned.iter().rev().map(AsRef::as_ref))
        .find(|pod| is_unavailable(pod, min_ready, now))
        .and_then(|pod| pod.metadata.name.clone());

    // Step 9: processReplica.
    let (actions, halted) = process_replicas(input, &replicas, monotonic);
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
        rolling_update_deletions(set, &replicas, revisions.update, monotonic, min_ready, now)
    } else {
        rolling_update_one_at_a_time(set, &replicas, revisions.update, min_ready, now)
    };
    plan.phases.push(deletions);
    plan
}

/// upstream `processReplica` for every slot; returns the actions and whether a monotonic pass stopped.
fn process_replicas(
    input: &PlanInput<'_>,
    replicas: &[Slot],
    monotonic: bool,
) -> (Vec<PodAction>, bool) {
    let set = input.set;
    let min_ready = min_ready_seconds(set);
    let mut actions = Vec::new();
    for slot in replicas {
        let pod = match slot {
            Slot::Missing {
                pod: new,
                view: pod,
            } => {
                let stale = pod_claims(set, pod_ordinal(pod)).iter().any(|wanted| {
                    wanted
                        .metadata
                        .name
                        .as_ref()
                        .and_then(|name| input.claims.get(name))
                        .is_some_and(|existing| claim_is_stale(set, pod, existing))
                });
                if !stale {
                    actions.push(PodAction::Create {
                        claims: claims_to_create(set, pod, input.claims),
                        pod: new.clone(),
                    });
                }
                if monotonic {
                    return (actions, true);
                }
                continue;
            }
            Slot::Existing(pod) => pod,
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
        .and_then(|spec| spec.volumes.as_ref())
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
        metadata: pod.metadata.clone(),
        spec: Some(PodSpec {
            volumes,
            ..PodSpec::default()
        }),
        status: None,
    }
}

/// upstream `processCondemned` over the condemned pods (highest ordinal first).
fn process_condemned(
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

/// Upstream `updateStatefulSetAfterInvariantEstablished` (`MaxUnavailableStatefulSet` on):
/// which outdated pods to delete, from the highest ordinal down to the partition, within the
/// `maxUnavailable` budget.
fn rolling_update_deletions(
    set: &StatefulSet,
    replicas: &[Slot],
    update_revision: &str,
    monotonic: bool,
    min_ready: i32,
    now: Timestamp,
) -> Vec<PodAction> {
    let max_unavailable = max_unavailable(set);
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    let outdated = |pod: &CachedPod| pod_revision(pod) != update_revision;
    let unavailable = replicas
        .iter()
        .filter(|slot| is_unavailable(slot.pod(), min_ready, now))
        .count();
    let unavailable_needing_update = if monotonic {
        0
    } else {
        replicas
            .iter()
            .map(Slot::pod)
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
    let candidates: Vec<&Arc<CachedPod>> = replicas
        .iter()
        .enumerate()
        .rev()
        .take_while(|(index, _)| *index >= update_min)
        .filter_map(|(_, slot)| match slot {
            Slot::Existing(pod) if outdated(pod) && !is_terminating(pod) => Some(pod),
            _ => None,
        })
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
/// Upstream's slots all hold a pod by now (missing ones were created earlier in the sync); a
/// [`Slot::Missing`] here is one created this sync (or held back by a stale claim), which is
/// unavailable, so the loop waits there as upstream's `isUnavailable` check does.
fn rolling_update_one_at_a_time(
    set: &StatefulSet,
    replicas: &[Slot],
    update_revision: &str,
    min_ready: i32,
    now: Timestamp,
) -> Vec<PodAction> {
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    for slot in replicas.iter().skip(update_min).rev() {
        let Slot::Existing(pod) = slot else {
            return Vec::new();
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

/// kcm-rs only, opt-in (kubernetes#67250): which pod of an `OrderedReady` rolling update to
/// delete because it is stuck, or when to look again because one will be.
///
/// Upstream's ordered pass waits for every pod to be Ready before it replaces anything, so a
/// pod updated to a broken template blocks the set forever, even after the user reverted the
/// template; the documented way out is a manual `kubectl delete pod`. A pod is stuck when the
/// set uses `RollingUpdate`, the pod's ordinal is at or above the partition, its revision is
/// neither the update revision nor one equal to it in content, it is not Ready, not finished
/// (those are recreated anyway) and not terminating, and it has been not Ready for
/// `minReadySeconds` plus `rule.grace` since its creation or its last Ready transition,
/// whichever is later. A pod at the update revision is never deleted: a broken *new* template
/// is the user's to fix, and recreating it would only loop.
///
/// At most one pod per sync (the lowest ordinal, the one the ordered pass waits for), none
/// while any pod of the set is terminating, and only when the unavailable replicas, the stuck
/// pod included, fit the budget: `maxUnavailable` with `MaxUnavailableStatefulSet` on, else 1
/// (one pod at a time, as the gate-off rolling update). `Parallel` sets already replace such
/// pods and are left alone, as are `OnDelete` sets.
///
/// `replicas` are the in-range slots in ordinal order (`None` for a missing pod); `pods` are
/// all the set's pods, condemned ones included.
pub fn broken_rollout_recovery(
    set: &StatefulSet,
    replicas: &[Option<&Arc<CachedPod>>],
    pods: &[Arc<CachedPod>],
    rule: &RecoveryRule<'_>,
) -> Recovery {
    if !is_monotonic(set) || is_on_delete(set) || set.metadata.deletion_timestamp.is_some() {
        return Recovery::Nothing;
    }
    let min_ready = min_ready_seconds(set);
    let threshold =
        Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)).saturating_add(rule.grace);
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    let mut stuck = None;
    let mut recheck: Option<Duration> = None;
    for pod in replicas.iter().skip(update_min).flatten() {
        let revision = pod_revision(pod);
        let outdated = revision != rule.update_revision
            && !rule.update_equivalents.iter().any(|name| name == revision);
        if !outdated || is_pod_ready(pod) || is_finished(pod) || is_terminating(pod) {
            continue;
        }
        let Some(since) = not_ready_since(pod) else {
            continue;
        };
        let not_ready_for =
            Duration::try_from(rule.now.duration_since(since)).unwrap_or(Duration::ZERO);
        if not_ready_for >= threshold {
            stuck = Some((*pod, not_ready_for));
            break;
        }
        let remaining = threshold - not_ready_for;
        recheck = Some(recheck.map_or(remaining, |earliest| earliest.min(remaining)));
    }
    let Some((pod, not_ready_for)) = stuck else {
        return recheck.map_or(Recovery::Nothing, Recovery::RecheckAfter);
    };
    if pods.iter().any(|pod| is_terminating(pod)) {
        return Recovery::Nothing;
    }
    let budget = if rule.gates.max_unavailable_statefulset {
        usize::try_from(max_unavailable(set)).unwrap_or(1)
    } else {
        1
    };
    let unavailable = replicas
        .iter()
        .filter(|slot| slot.is_none_or(|pod| is_unavailable(pod, min_ready, rule.now)))
        .count();
    if unavailable > budget {
        return Recovery::Nothing;
    }
    Recovery::Delete(StuckPod {
        pod: pod.clone(),
        update_revision: rule.update_revision.to_owned(),
        not_ready_for,
        counted_current: pod_revision(pod) == rule.current_revision,
    })
}

/// When the pod's current not-Ready spell began: its creation or its Ready condition's last
/// transition, whichever is later (`None` when neither is known, so it is never judged stuck).
fn not_ready_since(pod: &CachedPod) -> Option<Timestamp> {
    let created = pod.metadata.creation_timestamp.as_ref().map(|time| time.0);
    let transition = pod_ready_condition(pod)
        .and_then(|condition| condition.last_transition_time.as_ref())
        .map(|time| time.0);
    created.max(transition)
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

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
