//! The pod as the workload controllers cache it: the few fields they read, deserialized straight
//! from the API server's JSON (a client-go transform, done at decode time).
//!
//! Why a type of its own: pods dominate the manager's memory, and k8s-openapi's `Pod` is 2,416
//! bytes inline before any string (its `PodSpec` alone 1,464, a `ContainerStatus` 752, a
//! `Volume` 3,208). The ReplicaSet, Deployment and StatefulSet controllers read metadata,
//! phase, the `Ready` condition, restart counts (deletion ranking), the node name, the
//! StatefulSet's storage (claim volumes; its identity check reads only metadata), and the
//! DaemonSet controller the node a pod not yet bound is pinned to. The Job controller also
//! reads how containers terminated (exit code and time: the pod failure policy's
//! `onExitCodes`, the pod's finish time) and the pod conditions (the failure policy's
//! `onPodConditions`, the finish time's `Ready=False`), kept by a rule that leaves a running
//! pod's memory as it was ([`CachedPodStatus::conditions`]); nothing else.
//! Decoding into this type skips the rest of the JSON instead of building and then dropping it.
//!
//! A cached pod is never written back: writes build a full `Pod` (creates) or apply a change to
//! a fresh GET of the pod (the StatefulSet repair); deletes and controller-ref patches only need
//! the name and UID.

use std::ops::Deref;

use k8s_openapi::{
    api::core::v1::{
        Affinity, ContainerState, ContainerStateTerminated, ContainerStatus,
        PersistentVolumeClaimVolumeSource, Pod, PodCondition,
    },
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use serde::{Deserialize, Deserializer};

/// The pod condition type the ready slot keeps ([`CachedPodStatus::ready`]).
const READY_CONDITION: &str = "Ready";
/// The condition status that makes a pod ready.
const CONDITION_TRUE: &str = "True";
/// The pod phases after which no container runs again (`podutil.IsPodTerminal`): a pod in one
/// keeps every condition.
const TERMINAL_PHASES: [&str; 2] = ["Succeeded", "Failed"];
/// The condition types the kubelet sets on every pod it runs (`PodScheduled` is the
/// scheduler's): a pod not in a terminal phase keeps them only when not `True` (see
/// [`CachedPodStatus::conditions`]). The order gives each its bit in [`KubeletConditions`].
pub const KUBELET_CONDITION_TYPES: [&str; 5] = [
    "PodScheduled",
    "Initialized",
    "ContainersReady",
    "Ready",
    "PodReadyToStartContainers",
];
/// The only node field a `matchFields` requirement reads (`metav1.ObjectNameField`).
const NODE_NAME_FIELD: &str = "metadata.name";
/// The node selector operator of the pinning term.
const OPERATOR_IN: &str = "In";

super::cached_resource! {
    /// A pod as cached by the informers: metadata (bar managedFields, dropped by the informer)
    /// and the spec and status fields the workload controllers read. Field names follow `Pod`'s.
    pub struct CachedPod for Pod {
        /// The pod's metadata, bar `managedFields`, the labels compact.
        metadata: super::PodMetadata,
        /// What the controllers read of `spec`.
        spec: CachedPodSpec,
        /// What the controllers read of `status`.
        status: CachedPodStatus,
    }
}

impl CachedPod {
    /// `status.phase`, if the pod has a status with a phase.
    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `spec.nodeName`, if the pod is scheduled (bound to a node).
    pub fn node_name(&self) -> Option<&str> {
        self.spec.as_ref()?.node.bound()
    }

    /// The node the pod is for (upstream `util.GetTargetNodeName`): `spec.nodeName` when it
    /// is bound, else the node its required node affinity pins it to ([`PodNode::Pinned`]);
    /// `None` when neither names one. A daemon pod counts for its node from its creation,
    /// before the scheduler binds it.
    pub fn target_node_name(&self) -> Option<&str> {
        self.spec.as_ref()?.node.target()
    }

    /// The pod's first `Ready` condition, if it has a status with one.
    pub fn ready_condition(&self) -> Option<ReadyCondition> {
        self.status.as_ref()?.ready()
    }
}

/// What the workload controllers read of a `PodSpec`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedPodSpec {
    /// `spec.nodeName`, or the node an unbound pod's affinity pins it to: unscheduled pods
    /// are deleted first, and a daemon pod counts for its node before it is bound.
    pub node: PodNode,
    /// The volumes backed by a PersistentVolumeClaim (a StatefulSet pod's storage); the others
    /// are not kept. Empty when there are none: a list rather than an optional list leaves
    /// `Option<CachedPodSpec>` a spare bit pattern, so the option costs no tag (8 bytes).
    pub volumes: Box<[ClaimVolume]>,
    /// Init containers, by name and restart policy (`Always` marks a sidecar).
    pub init_containers: Option<Box<[CachedContainer]>>,
}

/// The node of a pod: the one it is bound to, or, not bound yet, the one its required node
/// affinity pins it to (how the DaemonSet controller creates its pods).
///
/// Why one type for both: a bound pod's affinity no longer says anything the controllers
/// read, and an unbound one has no node name, so one field holds whichever applies, in the
/// 16 bytes of a `Box<str>`: the pinned node, rare and short-lived, is boxed once more so the
/// two variants share those bytes without a tag (a test keeps the cached pod within 512
/// bytes).
#[derive(Clone, Debug, PartialEq)]
pub enum PodNode {
    /// `spec.nodeName`; empty when the pod is neither bound nor pinned.
    Bound(Box<str>),
    /// Not bound; the node upstream's `GetTargetNodeName` reads from the pod's affinity: the
    /// only value of the first `matchFields` requirement `metadata.name In [...]` among the
    /// required node affinity's terms (none when that requirement names more or fewer than
    /// one node). The rest of the affinity is not kept.
    Pinned(Box<Box<str>>),
}

impl Default for PodNode {
    /// Neither bound nor pinned.
    fn default() -> Self {
        PodNode::Bound(Box::default())
    }
}

impl PodNode {
    /// The node of a pod whose `spec.nodeName` is `node_name` and whose affinity pins it to
    /// `pinned`: bound when the name is not empty, else pinned if it is.
    fn of(node_name: Option<&str>, pinned: Option<Box<str>>) -> Self {
        match (node_name.filter(|node| !node.is_empty()), pinned) {
            (Some(node), _) => PodNode::Bound(Box::from(node)),
            (None, Some(pinned)) => PodNode::Pinned(Box::new(pinned)),
            (None, None) => PodNode::default(),
        }
    }

    /// The node the pod is bound to, if any.
    pub fn bound(&self) -> Option<&str> {
        match self {
            PodNode::Bound(node) if !node.is_empty() => Some(node),
            _ => None,
        }
    }

    /// The node the pod is bound or pinned to, if any.
    pub fn target(&self) -> Option<&str> {
        match self {
            PodNode::Pinned(node) => Some(node),
            bound => bound.bound(),
        }
    }
}

/// A `PodSpec`'s JSON as decoded into [`CachedPodSpec`]: the node name and the pinning node
/// are folded into one [`PodNode`] after.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SpecWire {
    node_name: Option<String>,
    #[serde(default, deserialize_with = "claim_volumes")]
    volumes: Box<[ClaimVolume]>,
    init_containers: Option<Box<[CachedContainer]>>,
    #[serde(default, rename = "affinity", deserialize_with = "pinned_node")]
    pinned_node: Option<Box<str>>,
}

impl<'de> Deserialize<'de> for CachedPodSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = SpecWire::deserialize(deserializer)?;
        Ok(CachedPodSpec {
            node: PodNode::of(wire.node_name.as_deref(), wire.pinned_node),
            volumes: wire.volumes,
            init_containers: wire.init_containers,
        })
    }
}

/// A pod volume backed by a PersistentVolumeClaim.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimVolume {
    /// The volume's name in the pod.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub name: String,
    /// The claim it mounts.
    pub persistent_volume_claim: Option<PersistentVolumeClaimVolumeSource>,
}

/// A container of the pod, by name and restart policy.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedContainer {
    /// The container's name.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub name: String,
    /// `Always` on an init container marks a restartable (sidecar) one.
    pub restart_policy: Option<String>,
}

/// What the workload controllers read of a `PodStatus`.
///
/// 72 bytes inline: with it, a cached pod takes 496 bytes, the most that keeps it in its `Arc`
/// within 512 (see the test of that), so the status has no byte to spare: the conditions sit
/// behind a thin pointer ([`CachedPodConditions`]) and the ready slot shares 16 bytes with
/// the kubelet conditions left out of them ([`InlineConditions`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedPodStatus {
    /// `status.phase`.
    pub phase: Option<Box<str>>,
    /// The pod conditions the Job controller reads, in the pod's order. Kept: every condition
    /// of a pod in a terminal phase (`Succeeded`, `Failed`); of any other pod, those not
    /// `True` and those of a type not in [`KUBELET_CONDITION_TYPES`] (a `DisruptionTarget` on
    /// a running pod is kept, its `Ready=True` is not).
    ///
    /// Why this rule: a running pod's conditions are usually the five kubelet ones, all
    /// `True`; keeping them would cost every running pod some 300 bytes of heap, so a running
    /// pod keeps none and costs what it did. And it loses nothing the Job controller reads:
    /// * the pod failure policy's `onPodConditions` decides what a failed pod's failure means,
    ///   and with a policy a pod is failed (`isPodFailed`) only in phase `Failed`: all its
    ///   conditions are kept, in order (the `FailJob` message names the first that matches);
    /// * a failing Job also matches the policy against its unfinished pods (upstream's
    ///   `trackJobStatusAndRemoveFinalizers`: every pod not finished counts as failed, unless
    ///   it matches an `Ignore` rule), reading only which rule matches, not the message: the
    ///   `True` kubelet conditions left out are still known by type, and
    ///   [`condition_statuses`](Self::condition_statuses) lists them with the kept ones;
    /// * the finish time (`getFinishedTime`) reads the first `Ready` condition when it is
    ///   `False`: not `True`, so kept, and [`ready`](Self::ready) tells whether a `Ready`
    ///   condition before it (a `True` one, left out) is the first.
    pub conditions: CachedPodConditions,
    /// The first `Ready` condition and the kubelet conditions left out of `conditions`.
    inline_conditions: InlineConditions,
    /// Per container: name, restart count and how it terminated.
    pub container_statuses: Option<Box<[CachedContainerStatus]>>,
    /// Per init container: name, restart count and how it terminated.
    pub init_container_statuses: Option<Box<[CachedContainerStatus]>>,
}

/// A `PodStatus`'s JSON as decoded into [`CachedPodStatus`]: the conditions are decoded as
/// k8s-openapi decodes them (so a pod it accepts is accepted), then kept by the phase's rule.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusWire {
    phase: Option<Box<str>>,
    conditions: Option<Vec<PodCondition>>,
    container_statuses: Option<Box<[CachedContainerStatus]>>,
    init_container_statuses: Option<Box<[CachedContainerStatus]>>,
}

impl<'de> Deserialize<'de> for CachedPodStatus {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = StatusWire::deserialize(deserializer)?;
        Ok(CachedPodStatus::of(
            wire.phase,
            wire.conditions.as_deref(),
            wire.container_statuses,
            wire.init_container_statuses,
        ))
    }
}

impl CachedPodStatus {
    /// The status of a pod in `phase` with `conditions` (all of them, as the API server sent
    /// them) and the container statuses as cached: decoding and converting a full pod both
    /// build it here, so they keep the same.
    fn of(
        phase: Option<Box<str>>,
        conditions: Option<&[PodCondition]>,
        container_statuses: Option<Box<[CachedContainerStatus]>>,
        init_container_statuses: Option<Box<[CachedContainerStatus]>>,
    ) -> Self {
        let conditions = conditions.unwrap_or_default();
        let terminal = phase
            .as_deref()
            .is_some_and(|phase| TERMINAL_PHASES.contains(&phase));
        let mut inline_conditions = InlineConditions::default();
        inline_conditions.set_ready(ready_condition(conditions));
        let mut kept = Vec::new();
        for condition in conditions {
            let left_out = (!terminal && condition.status == CONDITION_TRUE)
                .then(|| KubeletConditions::bit(&condition.type_))
                .flatten();
            match left_out {
                Some(bit) => inline_conditions.true_kubelet.0 |= bit,
                None => kept.push(CachedPodCondition::of(condition)),
            }
        }
        CachedPodStatus {
            phase,
            conditions: CachedPodConditions::from(kept),
            inline_conditions,
            container_statuses,
            init_container_statuses,
        }
    }

    /// The pod's conditions as `(type, status)`: those [`conditions`](Self::conditions)
    /// keeps, in the pod's order, then `(type, "True")` for each kubelet type of a `True`
    /// condition left out, in [`KUBELET_CONDITION_TYPES`]' order. So every condition of the
    /// pod is there by type and status: for a pod in a terminal phase, in the pod's order (all
    /// are kept); for another, the left-out ones after the kept ones, a type left out twice
    /// listed once.
    pub fn condition_statuses(&self) -> impl Iterator<Item = (&str, &str)> {
        let kept = self
            .conditions
            .iter()
            .map(|condition| (&*condition.type_, &*condition.status));
        let true_kubelet = self.inline_conditions.true_kubelet;
        let left_out = KUBELET_CONDITION_TYPES
            .iter()
            .enumerate()
            .filter(move |(i, _)| true_kubelet.0 & (1 << i) != 0)
            .map(|(_, type_)| (*type_, CONDITION_TRUE));
        kept.chain(left_out)
    }

    /// The first `Ready` condition, if the status has one.
    pub fn ready(&self) -> Option<ReadyCondition> {
        self.inline_conditions.ready()
    }

    /// Replaces the `Ready` condition (`None` removes it); [`conditions`](Self::conditions)
    /// is left as it is.
    pub fn set_ready(&mut self, ready: Option<ReadyCondition>) {
        self.inline_conditions.set_ready(ready);
    }
}

/// The conditions a cached pod keeps ([`CachedPodStatus::conditions`]), in the pod's order:
/// read as a slice (it derefs to one). Keeping none allocates nothing.
///
/// Why not an `Option<Box<[CachedPodCondition]>>`: that takes 16 bytes inline, and a cached
/// pod has no room for them ([`CachedPodStatus`]); this box of the boxed slice takes 8, for a
/// second allocation (16 bytes) only in pods that keep a condition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedPodConditions(Option<Box<Box<[CachedPodCondition]>>>);

impl Deref for CachedPodConditions {
    type Target = [CachedPodCondition];

    fn deref(&self) -> &[CachedPodCondition] {
        self.0.as_deref().map_or(&[], |conditions| conditions)
    }
}

impl From<Vec<CachedPodCondition>> for CachedPodConditions {
    /// The conditions, in order; none allocates nothing.
    fn from(conditions: Vec<CachedPodCondition>) -> Self {
        Self((!conditions.is_empty()).then(|| Box::new(conditions.into_boxed_slice())))
    }
}

/// A pod condition as the Job controller reads it: type, status and when it last changed.
///
/// Why not a `PodCondition`: one is 160 bytes inline (with `reason`, `message`,
/// `lastProbeTime` and `observedGeneration`, which no controller reads); this is 56. The
/// strings are `Box<str>` rather than `String` (16 bytes, no capacity word), as they are only
/// compared, and strings rather than enums of the known values, since a condition may carry
/// any type and status and must read back as the API server sent it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedPodCondition {
    /// `type`.
    pub type_: Box<str>,
    /// `status` (`True`, `False`, `Unknown`).
    pub status: Box<str>,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<Time>,
}

impl CachedPodCondition {
    /// What the cache keeps of `condition`.
    fn of(condition: &PodCondition) -> Self {
        Self {
            type_: Box::from(condition.type_.as_str()),
            status: Box::from(condition.status.as_str()),
            last_transition_time: condition.last_transition_time.clone(),
        }
    }
}

/// What a cached status keeps of its conditions inline, in 16 bytes: the first `Ready`
/// condition (the ready slot: whether there is one, whether it is `True`, since when) and the
/// kubelet conditions left out of [`CachedPodStatus::conditions`].
///
/// Why packed: a `Time` alone takes 16 bytes (a jiff `Timestamp`: seconds, nanoseconds and 4
/// bytes of padding), so an enum of the ready slot's states with the time takes 24, and a
/// byte more beside it 32; the time's seconds and nanoseconds with the two one-byte fields
/// fill 16.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct InlineConditions {
    /// The first `Ready` condition's `lastTransitionTime`, as `Timestamp::as_second`; 0
    /// without a time.
    ready_second: i64,
    /// Its `Timestamp::subsec_nanosecond`; 0 without a time.
    ready_nanosecond: i32,
    /// The first `Ready` condition, without its time.
    ready: KeptReady,
    /// The kubelet conditions left out.
    true_kubelet: KubeletConditions,
}

impl InlineConditions {
    fn ready(&self) -> Option<ReadyCondition> {
        let (is_true, has_time) = match self.ready {
            KeptReady::Absent => return None,
            KeptReady::True => (true, false),
            KeptReady::TrueSince => (true, true),
            KeptReady::NotTrue => (false, false),
            KeptReady::NotTrueSince => (false, true),
        };
        // Never fails: the parts were taken from a `Timestamp` (`set_ready`).
        let last_transition_time = has_time
            .then(|| Timestamp::new(self.ready_second, self.ready_nanosecond).ok())
            .flatten()
            .map(Time);
        Some(ReadyCondition {
            is_true,
            last_transition_time,
        })
    }

    fn set_ready(&mut self, ready: Option<ReadyCondition>) {
        let time = ready
            .as_ref()
            .and_then(|ready| ready.last_transition_time.as_ref())
            .map(|time| time.0);
        (self.ready_second, self.ready_nanosecond) =
            time.map_or((0, 0), |time| (time.as_second(), time.subsec_nanosecond()));
        self.ready = match ready.map(|ready| (ready.is_true, time.is_some())) {
            None => KeptReady::Absent,
            Some((true, false)) => KeptReady::True,
            Some((true, true)) => KeptReady::TrueSince,
            Some((false, false)) => KeptReady::NotTrue,
            Some((false, true)) => KeptReady::NotTrueSince,
        };
    }
}

/// The state of the ready slot ([`InlineConditions`]), the time apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum KeptReady {
    /// The pod has no `Ready` condition.
    #[default]
    Absent,
    /// `True`, with no transition time.
    True,
    /// `True` since the time.
    TrueSince,
    /// Not `True`, with no transition time.
    NotTrue,
    /// Not `True` since the time.
    NotTrueSince,
}

/// The [`KUBELET_CONDITION_TYPES`] of the `True` conditions a cached status leaves out, one
/// bit each (bit `i` for the `i`-th type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct KubeletConditions(u8);

impl KubeletConditions {
    /// The bit of kubelet condition type `type_`, if it is one.
    fn bit(type_: &str) -> Option<u8> {
        KUBELET_CONDITION_TYPES
            .iter()
            .position(|kubelet| *kubelet == type_)
            .map(|i| 1 << i)
    }
}

/// What the workload controllers read of the pod's `Ready` condition: whether its status is
/// `True`, and since when (availability after `minReadySeconds`, deletion ranking).
///
/// Why not a `PodCondition`: one is 160 bytes inline plus its type and status strings, about
/// 180 bytes of heap per cached pod (12 MB at 70,000 pods), for two fields read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadyCondition {
    /// The condition's `status` is `True` (`False`, `Unknown` or anything else is not ready).
    pub is_true: bool,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<Time>,
}

impl ReadyCondition {
    /// What the controllers keep of `condition`.
    fn of(condition: &PodCondition) -> Self {
        Self {
            is_true: condition.status == CONDITION_TRUE,
            last_transition_time: condition.last_transition_time.clone(),
        }
    }
}

/// What the workload controllers read of a `ContainerStatus`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedContainerStatus {
    /// The container's name.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub name: String,
    /// Restarts so far (pods with more are deleted first).
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub restart_count: i32,
    /// `state.terminated`, when the container's current state is terminated (the Job
    /// controller's pod failure policy and finish time). Boxed: most cached containers run,
    /// and the option of a box is 8 bytes where the state would take 24.
    #[serde(default, rename = "state", deserialize_with = "terminated_state")]
    pub terminated: Option<Box<TerminatedState>>,
}

/// What the Job controller reads of a terminated container (`ContainerStateTerminated`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TerminatedState {
    /// `exitCode`.
    pub exit_code: i32,
    /// `finishedAt`.
    pub finished_at: Option<Time>,
}

impl TerminatedState {
    /// What the cache keeps of the state `state`, if it is terminated.
    fn of(state: Option<&ContainerState>) -> Option<Box<Self>> {
        let terminated: &ContainerStateTerminated = state?.terminated.as_ref()?;
        Some(Box::new(Self {
            exit_code: terminated.exit_code,
            finished_at: terminated.finished_at.clone(),
        }))
    }
}

/// The items `keep` accepts, or `None` when there are none: decoding and converting a full pod
/// keep a list by the same rule.
fn kept<T>(items: impl IntoIterator<Item = T>, keep: impl Fn(&T) -> bool) -> Option<Box<[T]>> {
    let kept: Box<[T]> = items.into_iter().filter(|item| keep(item)).collect();
    (!kept.is_empty()).then_some(kept)
}

fn is_claim_volume(volume: &ClaimVolume) -> bool {
    volume.persistent_volume_claim.is_some()
}

/// The first condition of type `Ready` among `conditions`, as the controllers keep it.
fn ready_condition<'a>(
    conditions: impl IntoIterator<Item = &'a PodCondition>,
) -> Option<ReadyCondition> {
    conditions
        .into_iter()
        .find(|condition| condition.type_ == READY_CONDITION)
        .map(ReadyCondition::of)
}

fn claim_volumes<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Box<[ClaimVolume]>, D::Error> {
    let volumes = Option::<Vec<ClaimVolume>>::deserialize(deserializer)?;
    Ok(volumes
        .and_then(|volumes| kept(volumes, is_claim_volume))
        .unwrap_or_default())
}

/// The node `affinity` pins a pod to (see [`PodNode::Pinned`]).
fn pinned_node_of(affinity: Option<&Affinity>) -> Option<Box<str>> {
    let terms = &affinity?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let requirement = terms
        .iter()
        .flat_map(|term| term.match_fields.iter().flatten())
        .find(|requirement| {
            requirement.key == NODE_NAME_FIELD && requirement.operator == OPERATOR_IN
        })?;
    match requirement.values.as_deref() {
        Some([node]) => Some(Box::from(node.as_str())),
        _ => None,
    }
}

/// Decodes `spec.affinity` as k8s-openapi does (so a pod it accepts is accepted) and keeps
/// only the node it pins the pod to.
fn pinned_node<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Box<str>>, D::Error> {
    let affinity = Option::<Affinity>::deserialize(deserializer)?;
    Ok(pinned_node_of(affinity.as_ref()))
}

/// Decodes a container status's `state` as k8s-openapi does (so a pod it accepts is accepted)
/// and keeps only the terminated state.
fn terminated_state<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Box<TerminatedState>>, D::Error> {
    let state = Option::<ContainerState>::deserialize(deserializer)?;
    Ok(TerminatedState::of(state.as_ref()))
}

fn cached_container_status(status: &ContainerStatus) -> CachedContainerStatus {
    CachedContainerStatus {
        name: status.name.clone(),
        restart_count: status.restart_count,
        terminated: TerminatedState::of(status.state.as_ref()),
    }
}

/// The cached form of a full pod (a pod just read or written, or one built in a test): exactly
/// what decoding the pod's JSON into [`CachedPod`] keeps.
impl From<&Pod> for CachedPod {
    fn from(pod: &Pod) -> Self {
        let metadata = super::PodMetadata::from(pod.metadata.clone());
        let spec = pod.spec.as_ref().map(|spec| CachedPodSpec {
            node: PodNode::of(
                spec.node_name.as_deref(),
                pinned_node_of(spec.affinity.as_ref()),
            ),
            volumes: spec
                .volumes
                .as_ref()
                .and_then(|volumes| {
                    let volumes = volumes.iter().map(|volume| ClaimVolume {
                        name: volume.name.clone(),
                        persistent_volume_claim: volume.persistent_volume_claim.clone(),
                    });
                    kept(volumes, is_claim_volume)
                })
                .unwrap_or_default(),
            init_containers: spec.init_containers.as_ref().map(|containers| {
                containers
                    .iter()
                    .map(|container| CachedContainer {
                        name: container.name.clone(),
                        restart_policy: container.restart_policy.clone(),
                    })
                    .collect()
            }),
        });
        let status = pod.status.as_ref().map(|status| {
            CachedPodStatus::of(
                status.phase.as_deref().map(Box::from),
                status.conditions.as_deref(),
                status
                    .container_statuses
                    .as_ref()
                    .map(|statuses| statuses.iter().map(cached_container_status).collect()),
                status
                    .init_container_statuses
                    .as_ref()
                    .map(|statuses| statuses.iter().map(cached_container_status).collect()),
            )
        });
        CachedPod {
            metadata,
            spec,
            status,
        }
    }
}

impl From<Pod> for CachedPod {
    fn from(pod: Pod) -> Self {
        CachedPod::from(&pod)
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    /// A pod as a real API server returns it, admission defaults included.
    fn api_server_pod() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "ns", "uid": "u0", "resourceVersion": "7",
                         "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                             "name": "web", "uid": "u1", "controller": true}]},
            "spec": {
                "nodeName": "node-1", "hostname": "web-0", "subdomain": "web",
                "restartPolicy": "Always",
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                    {"name": "kube-api-access-x1", "projected": {"sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}
                ],
                "initContainers": [
                    {"name": "setup", "image": "busybox"},
                    {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
                ],
                "containers": [{"name": "app", "image": "nginx",
                                "env": [{"name": "A", "value": "1"}]}],
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "podAffinityTerm": {"topologyKey": "zone"}}]}
                }
            },
            "status": {
                "phase": "Running",
                "podIP": "10.244.0.5",
                "conditions": [{"type": "PodScheduled", "status": "True"},
                               {"type": "Ready", "status": "True",
                                "lastTransitionTime": "2026-11-23T10:00:05Z"}],
                "containerStatuses": [{"name": "app", "restartCount": 3, "ready": true,
                    "image": "nginx", "imageID": "sha", "started": true,
                    "state": {"running": {"startedAt": "2026-11-23T10:00:00Z"}}}],
                "initContainerStatuses": [{"name": "proxy", "restartCount": 2, "ready": true,
                    "image": "envoy", "imageID": "sha"}]
            }
        })
    }

    #[test]
    fn decoding_keeps_what_the_controllers_read() {
        let pod: CachedPod = serde_json::from_value(api_server_pod()).expect("decodes");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-0"));
        assert_eq!(pod.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            pod.metadata
                .owner_references
                .as_ref()
                .map(|refs| refs[0].uid.as_str()),
            Some("u1")
        );
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node, PodNode::Bound("node-1".into()));
        let volumes = &spec.volumes;
        assert_eq!(volumes.len(), 1, "only the claim volume is kept");
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str()),
            Some("data-web-0")
        );
        let init: Vec<_> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| (c.name.as_str(), c.restart_policy.as_deref()))
            .collect();
        assert_eq!(init, [("setup", None), ("proxy", Some("Always"))]);
        let status = pod.status.as_ref().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ready = status.ready().expect("the Ready condition");
        assert!(ready.is_true);
        assert_eq!(
            ready.last_transition_time,
            Some(Time("2026-11-23T10:00:05Z".parse().expect("a timestamp")))
        );
        assert_eq!(
            status.container_statuses.as_ref().expect("statuses")[0],
            CachedContainerStatus {
                name: "app".into(),
                restart_count: 3,
                terminated: None,
            }
        );
        assert_eq!(
            status.init_container_statuses.as_ref().expect("init")[0].restart_count,
            2
        );
    }

    /// The store holds each pod in an `Arc` (two counters, 16 bytes, before the pod). jemalloc,
    /// the manager's allocator, rounds an allocation of 513 to 640 bytes up to 640, so a cached
    /// pod that grows past 496 bytes inline costs 128 more bytes per pod (9 MB at 70,000 pods).
    #[test]
    fn a_cached_pod_in_its_arc_fits_512_bytes() {
        let arc_counters = 2 * std::mem::size_of::<usize>();
        assert!(
            std::mem::size_of::<CachedPod>() + arc_counters <= 512,
            "CachedPod is {} bytes inline",
            std::mem::size_of::<CachedPod>()
        );
    }

    /// Every state of the Ready condition reads back as it was set.
    #[test]
    fn the_ready_condition_reads_back_as_set() {
        let mut cases = vec![None, Some((true, None)), Some((false, None))];
        // The time is kept as seconds and nanoseconds: any time reads back, the extremes, Go's
        // zero time and a fraction before the epoch included.
        for text in [
            "2026-11-23T10:00:05Z",
            "2026-11-23T10:00:05.123456789Z",
            "0001-01-01T00:00:00Z",
            "1969-12-31T23:59:59.5Z",
            "-009999-01-02T01:59:59Z",
            "9999-12-30T22:00:00.999999999Z",
        ] {
            let time = Timestamp::from_str(text).expect("a timestamp");
            cases.push(Some((true, Some(Time(time)))));
            cases.push(Some((false, Some(Time(time)))));
        }
        for case in cases {
            let ready = case.map(|(is_true, last_transition_time)| ReadyCondition {
                is_true,
                last_transition_time,
            });
            let mut status = CachedPodStatus::default();
            status.set_ready(ready.clone());
            assert_eq!(status.ready(), ready, "{ready:?}");
            // Setting it again (a cleared time) leaves no trace of the earlier one.
            status.set_ready(ready.clone().map(|ready| ReadyCondition {
                last_transition_time: None,
                ..ready
            }));
            let mut cleared = CachedPodStatus::default();
            cleared.set_ready(status.ready());
            assert_eq!(status, cleared, "{ready:?}");
        }
    }

    #[test]
    fn converting_a_full_pod_keeps_what_decoding_keeps() {
        let full: Pod = serde_json::from_value(api_server_pod()).expect("decodes as Pod");
        let decoded: CachedPod = serde_json::from_value(api_server_pod()).expect("decodes");
        assert_eq!(CachedPod::from(&full), decoded);
    }

    /// The node an unbound pod is for: upstream's `GetTargetNodeName` cases (the pinning term
    /// of a daemon pod, and what makes it name no node).
    #[test]
    fn an_unbound_pod_is_for_the_node_its_affinity_pins_it_to() {
        let term = |fields: serde_json::Value| serde_json::json!({"matchFields": fields});
        let required = |terms: serde_json::Value| {
            serde_json::json!({"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}})
        };
        let pin = |values: serde_json::Value| serde_json::json!({"key": "metadata.name", "operator": "In", "values": values});
        let cases = [
            ("no affinity", serde_json::Value::Null, None),
            (
                "no node affinity",
                serde_json::json!({"podAffinity": {}}),
                None,
            ),
            ("no terms", required(serde_json::json!([])), None),
            (
                "the daemon pinning term",
                required(serde_json::json!([term(serde_json::json!([pin(
                    serde_json::json!(["node-a"])
                )]))])),
                Some("node-a"),
            ),
            (
                "the first pinning requirement wins",
                required(serde_json::json!([
                    {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
                    term(serde_json::json!([
                        {"key": "metadata.name", "operator": "NotIn", "values": ["node-x"]},
                        pin(serde_json::json!(["node-b"]))])),
                    term(serde_json::json!([pin(serde_json::json!(["node-c"]))]))
                ])),
                Some("node-b"),
            ),
            (
                "two nodes: not unique",
                required(serde_json::json!([term(serde_json::json!([pin(
                    serde_json::json!(["node-a", "node-b"])
                )]))])),
                None,
            ),
            (
                "no values",
                required(serde_json::json!([term(serde_json::json!([pin(
                    serde_json::Value::Null
                )]))])),
                None,
            ),
            (
                "only a label expression",
                required(serde_json::json!([{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a"]}]}])),
                None,
            ),
        ];
        for (case, affinity, expected) in cases {
            let json =
                serde_json::json!({"metadata": {"name": "p"}, "spec": {"affinity": affinity}});
            let decoded: CachedPod = serde_json::from_value(json.clone()).expect("decodes");
            assert_eq!(decoded.target_node_name(), expected, "{case}");
            let full: Pod = serde_json::from_value(json).expect("decodes as Pod");
            assert_eq!(CachedPod::from(&full), decoded, "{case}");
        }
        // A bound pod is for its node, whatever its affinity says.
        let bound: CachedPod = serde_json::from_value(api_server_pod()).expect("decodes");
        assert_eq!(bound.target_node_name(), Some("node-1"));
        let mut unbound = api_server_pod();
        unbound["spec"]["nodeName"] = serde_json::json!("");
        let unbound: CachedPod = serde_json::from_value(unbound).expect("decodes");
        assert_eq!(
            unbound.target_node_name(),
            Some("node-1"),
            "pinned, empty nodeName"
        );
        assert_eq!(unbound.node_name(), None);
        assert_eq!(
            unbound.spec.as_ref().map(|spec| &spec.node),
            Some(&PodNode::Pinned(Box::new("node-1".into())))
        );
    }

    #[test]
    fn absent_and_empty_parts_decode_to_none() {
        let cases = [
            (serde_json::json!({"metadata": {"name": "a"}}), false, false),
            (
                serde_json::json!({"metadata": {"name": "a"}, "spec": {"volumes": null}}),
                true,
                false,
            ),
            (
                serde_json::json!({"metadata": {"name": "a"},
                    "spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]},
                    "status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}}),
                true,
                true,
            ),
        ];
        for (json, has_spec, has_status) in cases {
            let pod: CachedPod = serde_json::from_value(json.clone()).expect("decodes");
            assert_eq!(pod.spec.is_some(), has_spec, "{json}");
            assert_eq!(pod.status.is_some(), has_status, "{json}");
            assert!(pod.ready_condition().is_none(), "{json}");
            assert!(pod.spec.is_none_or(|s| s.volumes.is_empty()), "{json}");
        }
    }

    /// A Job's pod as the API server returns it once it failed: evicted (`DisruptionTarget`),
    /// its app container killed, its sidecar stopped after it.
    fn failed_job_pod() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "job-0-x", "namespace": "ns", "uid": "u0",
                         "finalizers": ["batch.kubernetes.io/job-tracking"],
                         "annotations": {"batch.kubernetes.io/job-completion-index": "0"}},
            "spec": {
                "nodeName": "node-1", "restartPolicy": "Never",
                "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
                "containers": [{"name": "main", "image": "busybox"}]
            },
            "status": {
                "phase": "Failed",
                "conditions": [
                    {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                     "message": "Eviction API: evicting", "lastTransitionTime": "2026-11-23T10:00:00Z"},
                    {"type": "PodReadyToStartContainers", "status": "False",
                     "lastTransitionTime": "2026-11-23T10:00:02Z"},
                    {"type": "Initialized", "status": "True",
                     "lastTransitionTime": "2026-11-23T09:59:00Z"},
                    {"type": "Ready", "status": "False", "reason": "PodFailed",
                     "lastTransitionTime": "2026-11-23T10:00:01Z"},
                    {"type": "ContainersReady", "status": "False", "reason": "PodFailed",
                     "lastTransitionTime": "2026-11-23T10:00:01Z"},
                    {"type": "PodScheduled", "status": "True",
                     "lastTransitionTime": "2026-11-23T09:58:59Z"}
                ],
                "containerStatuses": [{"name": "main", "restartCount": 0, "ready": false,
                    "image": "busybox", "imageID": "sha", "started": false,
                    "state": {"terminated": {"exitCode": 137, "reason": "Error",
                        "startedAt": "2026-11-23T09:59:01Z",
                        "finishedAt": "2026-11-23T10:00:00Z", "containerID": "c1"}},
                    "lastState": {"terminated": {"exitCode": 1,
                        "finishedAt": "2026-11-23T09:00:00Z"}}}],
                "initContainerStatuses": [{"name": "proxy", "restartCount": 1, "ready": false,
                    "image": "envoy", "imageID": "sha",
                    "state": {"terminated": {"exitCode": 0,
                        "finishedAt": "2026-11-23T10:00:01Z"}}}]
            }
        })
    }

    fn time(text: &str) -> Option<Time> {
        Some(Time(text.parse().expect("a timestamp")))
    }

    #[test]
    fn decoding_keeps_how_containers_terminated_and_a_finished_pods_conditions() {
        let pod: CachedPod = serde_json::from_value(failed_job_pod()).expect("decodes");
        let status = pod.status.as_ref().expect("status");
        assert_eq!(
            status.container_statuses.as_deref(),
            Some(
                &[CachedContainerStatus {
                    name: "main".into(),
                    restart_count: 0,
                    terminated: Some(Box::new(TerminatedState {
                        exit_code: 137,
                        finished_at: time("2026-11-23T10:00:00Z"),
                    })),
                }][..]
            ),
            "the current state, not the last one"
        );
        assert_eq!(
            status
                .init_container_statuses
                .as_deref()
                .map(|s| &s[0].terminated),
            Some(&Some(Box::new(TerminatedState {
                exit_code: 0,
                finished_at: time("2026-11-23T10:00:01Z"),
            })))
        );
        let condition = |type_: &str, status: &str, at: &str| CachedPodCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: time(at),
        };
        assert_eq!(
            &*status.conditions,
            [
                condition("DisruptionTarget", "True", "2026-11-23T10:00:00Z"),
                condition("PodReadyToStartContainers", "False", "2026-11-23T10:00:02Z"),
                condition("Initialized", "True", "2026-11-23T09:59:00Z"),
                condition("Ready", "False", "2026-11-23T10:00:01Z"),
                condition("ContainersReady", "False", "2026-11-23T10:00:01Z"),
                condition("PodScheduled", "True", "2026-11-23T09:58:59Z"),
            ],
            "a failed pod keeps every condition, in order"
        );
        assert_eq!(
            status.ready(),
            Some(ReadyCondition {
                is_true: false,
                last_transition_time: time("2026-11-23T10:00:01Z"),
            })
        );
        let full: Pod = serde_json::from_value(failed_job_pod()).expect("decodes as Pod");
        assert_eq!(CachedPod::from(&full), pod);
    }

    /// The keep rule of the conditions: every condition of a pod in a terminal phase; of any
    /// other pod, those not `True` and those of a type the kubelet does not set. Whatever is
    /// left out still reads back, by type and status, from `condition_statuses`.
    #[test]
    fn conditions_kept_by_phase() {
        const ALL_KUBELET_TRUE: &[(&str, &str)] = &[
            ("PodReadyToStartContainers", "True"),
            ("Initialized", "True"),
            ("Ready", "True"),
            ("ContainersReady", "True"),
            ("PodScheduled", "True"),
        ];
        // (case, phase, conditions, kept, condition_statuses)
        type Row<'a> = (
            &'a str,
            Option<&'a str>,
            Vec<(&'a str, &'a str)>,
            Vec<(&'a str, &'a str)>,
            Vec<(&'a str, &'a str)>,
        );
        let kubelet_order: Vec<(&str, &str)> = KUBELET_CONDITION_TYPES
            .iter()
            .map(|type_| (*type_, "True"))
            .collect();
        let rows: Vec<Row> = vec![
            (
                "a running pod keeps none of the kubelet's True conditions",
                Some("Running"),
                ALL_KUBELET_TRUE.to_vec(),
                vec![],
                kubelet_order.clone(),
            ),
            (
                "a running pod keeps a DisruptionTarget",
                Some("Running"),
                [ALL_KUBELET_TRUE, &[("DisruptionTarget", "True")]].concat(),
                vec![("DisruptionTarget", "True")],
                [vec![("DisruptionTarget", "True")], kubelet_order.clone()].concat(),
            ),
            (
                "a running pod keeps what is not True",
                Some("Running"),
                vec![
                    ("PodScheduled", "True"),
                    ("Ready", "False"),
                    ("ContainersReady", "Unknown"),
                    ("Initialized", "odd"),
                ],
                vec![
                    ("Ready", "False"),
                    ("ContainersReady", "Unknown"),
                    ("Initialized", "odd"),
                ],
                vec![
                    ("Ready", "False"),
                    ("ContainersReady", "Unknown"),
                    ("Initialized", "odd"),
                    ("PodScheduled", "True"),
                ],
            ),
            (
                "a readiness gate is not the kubelet's",
                Some("Running"),
                vec![("example.com/gate", "True"), ("ready", "True")],
                vec![("example.com/gate", "True"), ("ready", "True")],
                vec![("example.com/gate", "True"), ("ready", "True")],
            ),
            (
                "an unschedulable pending pod keeps PodScheduled=False",
                Some("Pending"),
                vec![("PodScheduled", "False")],
                vec![("PodScheduled", "False")],
                vec![("PodScheduled", "False")],
            ),
            (
                "a duplicated True kubelet condition reads once",
                Some("Unknown"),
                vec![("Ready", "True"), ("Ready", "True")],
                vec![],
                vec![("Ready", "True")],
            ),
            (
                "no phase: not terminal",
                None,
                vec![("Initialized", "True"), ("DisruptionTarget", "True")],
                vec![("DisruptionTarget", "True")],
                vec![("DisruptionTarget", "True"), ("Initialized", "True")],
            ),
            (
                "a phase is matched exactly",
                Some("failed"),
                vec![("Ready", "True")],
                vec![],
                vec![("Ready", "True")],
            ),
            (
                "a failed pod keeps everything, in order",
                Some("Failed"),
                [ALL_KUBELET_TRUE, &[("DisruptionTarget", "True")]].concat(),
                [ALL_KUBELET_TRUE, &[("DisruptionTarget", "True")]].concat(),
                [ALL_KUBELET_TRUE, &[("DisruptionTarget", "True")]].concat(),
            ),
            (
                "a succeeded pod keeps everything, in order",
                Some("Succeeded"),
                vec![("Ready", "False"), ("PodScheduled", "True")],
                vec![("Ready", "False"), ("PodScheduled", "True")],
                vec![("Ready", "False"), ("PodScheduled", "True")],
            ),
            ("no conditions", Some("Running"), vec![], vec![], vec![]),
        ];
        for (case, phase, conditions, kept, statuses) in rows {
            let conditions: Vec<serde_json::Value> = conditions
                .iter()
                .map(|(type_, status)| {
                    serde_json::json!({"type": type_, "status": status,
                        "lastTransitionTime": "2026-11-23T10:00:00Z"})
                })
                .collect();
            let json = serde_json::json!({"metadata": {"name": "p"},
                "status": {"phase": phase, "conditions": conditions}});
            let decoded: CachedPod = serde_json::from_value(json.clone()).expect("decodes");
            let full: Pod = serde_json::from_value(json).expect("decodes as Pod");
            assert_eq!(CachedPod::from(&full), decoded, "{case}");
            let status = decoded.status.as_ref().expect("a status");
            let got: Vec<(&str, &str)> = status
                .conditions
                .iter()
                .map(|c| (&*c.type_, &*c.status))
                .collect();
            assert_eq!(got, kept, "{case}: kept");
            assert_eq!(
                status.conditions.0.is_none(),
                kept.is_empty(),
                "{case}: none kept allocates nothing"
            );
            assert!(
                status
                    .conditions
                    .iter()
                    .all(|c| c.last_transition_time == time("2026-11-23T10:00:00Z")),
                "{case}: times"
            );
            let got: Vec<(&str, &str)> = status.condition_statuses().collect();
            assert_eq!(got, statuses, "{case}: condition statuses");
            // The ready slot reads the first Ready condition, kept or not.
            let first_ready = full
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                .map(|c| c.status == "True");
            assert_eq!(
                status.ready().map(|r| r.is_true),
                first_ready,
                "{case}: ready"
            );
        }
    }

    /// The sizes the docs give (and a test of this file keeps the pod within its budget).
    #[test]
    fn sizes_of_the_cached_pod_parts() {
        use std::mem::size_of;
        eprintln!(
            "CachedPod {} CachedPodStatus {} CachedPodCondition {} CachedContainerStatus {} \
             TerminatedState {}",
            size_of::<CachedPod>(),
            size_of::<CachedPodStatus>(),
            size_of::<CachedPodCondition>(),
            size_of::<CachedContainerStatus>(),
            size_of::<TerminatedState>(),
        );
        assert_eq!(size_of::<CachedPodStatus>(), 72);
        assert_eq!(size_of::<CachedPodConditions>(), 8);
        assert_eq!(size_of::<InlineConditions>(), 16);
        assert_eq!(size_of::<CachedPodCondition>(), 56);
        assert_eq!(size_of::<Option<Box<TerminatedState>>>(), 8);
    }
}
