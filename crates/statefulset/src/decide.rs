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

use std::{collections::BTreeMap, ops::Range, sync::Arc, time::Duration};

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
        OrdinalRange, identity_matches, new_pod, pod_claims, pod_name, pod_ordinal, pod_revision,
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

/// kcm-rs only: the most pods one sync creates. A `Parallel` set's empty slots past it are
/// filled by the next syncs, which the new pods' events trigger. Upstream has no cap and first
/// builds an in-memory pod for every empty slot, so a set with `replicas: 2147483647` (which
/// the API server accepts) would exhaust the manager's memory and take every controller down
/// with it. Creations go through the client's rate limit (`--kube-api-qps`) anyway, so a set
/// this large gains nothing from one sync making them all; a set with no more empty slots than
/// this plans as upstream's does.
pub const MAX_CREATES_PER_SYNC: usize = 10_000;

/// The wanted slots `[start, start + replicas)` of a set and the pods that fill them
/// (upstream's `replicas` slice), held sparsely: only filled slots take memory and an empty
/// slot's pod is built only when it is created, so a hostile `spec.replicas` (up to
/// `i32::MAX`) costs what a small one does.
#[derive(Debug, Clone)]
pub struct ReplicaSlots<'a> {
    /// The number of slots (`spec.replicas`).
    len: usize,
    /// The ordinal of slot 0 (`spec.ordinals.start`).
    start: i32,
    /// The pods of the filled slots, by index (ordinal - start).
    filled: BTreeMap<usize, &'a Arc<CachedPod>>,
}

/// A stretch of [`ReplicaSlots`] in index order.
#[derive(Debug, Clone)]
enum Run<'a> {
    /// Consecutive empty slots (upstream fills each with an in-memory pod, never created yet).
    Empty(Range<usize>),
    /// The slot of this index and its pod.
    Filled(usize, &'a Arc<CachedPod>),
}

impl<'a> ReplicaSlots<'a> {
    /// Step 3: the slots of `range` filled with the pods whose ordinal is in it (a later pod of
    /// an ordinal replaces an earlier one, as upstream's slice assignment does), and the
    /// condemned pods, whose ordinal is valid but out of range. Pods without an ordinal are
    /// ignored, even when a negative `spec.ordinals.start` puts -1 in range.
    fn partition(range: OrdinalRange, pods: &'a [Arc<CachedPod>]) -> (Self, Vec<Arc<CachedPod>>) {
        let mut slots = Self {
            len: usize::try_from(range.replicas).unwrap_or(0),
            start: range.start,
            filled: BTreeMap::new(),
        };
        let mut condemned = Vec::new();
        for pod in pods {
            let ordinal = pod_ordinal(pod);
            if ordinal < 0 {
                continue;
            }
            if !range.contains(ordinal) {
                condemned.push(pod.clone());
            } else if let Ok(index) = usize::try_from(i64::from(ordinal) - i64::from(range.start)) {
                slots.filled.insert(index, pod);
            }
        }
        (slots, condemned)
    }

    /// The ordinal of slot `index` when a pod can carry it: `None` past `i32::MAX` (`start +
    /// replicas` may pass it) or below 0 (a negative `start`), where upstream's Go int
    /// arithmetic names a pod (`web-2147483648`, `web--1`) that no sync parses back to its slot,
    /// so it would be created again every sync.
    fn ordinal(&self, index: usize) -> Option<i32> {
        let ordinal = i64::from(self.start).checked_add(i64::try_from(index).ok()?)?;
        i32::try_from(ordinal).ok().filter(|ordinal| *ordinal >= 0)
    }

    /// The indices whose ordinal a pod can carry ([`OrdinalRange::nameable`]).
    fn creatable(&self) -> Range<usize> {
        OrdinalRange {
            start: self.start,
            replicas: i32::try_from(self.len).unwrap_or(i32::MAX),
        }
        .nameable()
    }

    /// The number of empty slots.
    fn empty(&self) -> usize {
        self.len.saturating_sub(self.filled.len())
    }

    /// The number of empty slots among the first `count`.
    fn empty_below(&self, count: usize) -> usize {
        let count = count.min(self.len);
        count.saturating_sub(self.filled.range(..count).count())
    }

    /// The pods of the filled slots, in index order.
    fn pods(&self) -> impl Iterator<Item = &'a CachedPod> + '_ {
        self.filled.values().map(|pod| -> &'a CachedPod { pod })
    }

    /// The filled slots from index `from` up, in index order.
    fn filled_from(&self, from: usize) -> impl DoubleEndedIterator<Item = &'a Arc<CachedPod>> + '_ {
        self.filled.range(from..).map(|(_, pod)| *pod)
    }

    /// Unavailable slots: the empty ones and those whose pod is unavailable.
    fn unavailable(&self, min_ready: i32, now: Timestamp) -> usize {
        self.empty()
            + self
                .pods()
                .filter(|pod| is_unavailable(pod, min_ready, now))
                .count()
    }

    /// The slots in index order, consecutive empty ones as one run.
    fn runs(&self) -> Vec<Run<'a>> {
        let mut runs = Vec::with_capacity(2 * self.filled.len() + 1);
        let mut next = 0;
        for (&index, &pod) in &self.filled {
            if next < index {
                runs.push(Run::Empty(next..index));
            }
            runs.push(Run::Filled(index, pod));
            next = index + 1;
        }
        if next < self.len {
            runs.push(Run::Empty(next..self.len));
        }
        runs
    }
}

impl<'a> From<&[Option<&'a Arc<CachedPod>>]> for ReplicaSlots<'a> {
    /// Slots from ordinal 0, one per entry, `None` for an empty one.
    fn from(slots: &[Option<&'a Arc<CachedPod>>]) -> Self {
        Self {
            len: slots.len(),
            start: 0,
            filled: slots
                .iter()
                .enumerate()
                .filter_map(|(index, slot)| slot.map(|pod| (index, pod)))
                .collect(),
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
fn current_revision_slots(set: &StatefulSet) -> Option<i64> {
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
fn process_replicas(
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
fn rolling_update_one_at_a_time(
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
/// `replicas` are the in-range slots; `pods` are all the set's pods, condemned ones included.
pub fn broken_rollout_recovery(
    set: &StatefulSet,
    replicas: &ReplicaSlots<'_>,
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
    for pod in replicas.filled_from(update_min) {
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
            stuck = Some((pod, not_ready_for));
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
    let unavailable = replicas.unavailable(min_ready, rule.now);
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
        .and_then(|condition| condition.last_transition_time)
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
