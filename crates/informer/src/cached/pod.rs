//! The pod as the workload controllers cache it: the few fields they read, deserialized straight
//! from the API server's JSON (a client-go transform, done at decode time).
//!
//! Why a type of its own: pods dominate the manager's memory, and k8s-openapi's `Pod` is 2,416
//! bytes inline before any string (its `PodSpec` alone 1,464, a `ContainerStatus` 752, a
//! `Volume` 3,208). The ReplicaSet, Deployment and StatefulSet controllers read metadata,
//! phase, the `Ready` condition, restart counts (deletion ranking), the node name, the
//! StatefulSet's storage (claim volumes; its identity check reads only metadata), and the
//! DaemonSet controller the node a pod not yet bound is pinned to; nothing else.
//! Decoding into this type skips the rest of the JSON instead of building and then dropping it.
//!
//! A cached pod is never written back: writes build a full `Pod` (creates) or apply a change to
//! a fresh GET of the pod (the StatefulSet repair); deletes and controller-ref patches only need
//! the name and UID.

use k8s_openapi::{
    api::core::v1::{
        Affinity, ContainerStatus, PersistentVolumeClaimVolumeSource, Pod, PodCondition,
    },
    apimachinery::pkg::apis::meta::v1::Time,
};
use serde::{Deserialize, Deserializer};

/// The only pod condition the workload controllers read.
const READY_CONDITION: &str = "Ready";
/// The condition status that makes a pod ready.
const CONDITION_TRUE: &str = "True";
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
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPodStatus {
    /// `status.phase`.
    pub phase: Option<Box<str>>,
    /// The first `Ready` condition in `status.conditions`, if the pod has one (upstream's
    /// `GetPodReadyCondition`; the other conditions are not kept). Read with
    /// [`ready`](Self::ready).
    #[serde(
        rename = "conditions",
        default,
        deserialize_with = "first_ready_condition"
    )]
    ready: KeptReady,
    /// Per container: name and restart count.
    pub container_statuses: Option<Box<[CachedContainerStatus]>>,
    /// Per init container: name and restart count.
    pub init_container_statuses: Option<Box<[CachedContainerStatus]>>,
}

impl CachedPodStatus {
    /// The first `Ready` condition, if the status has one.
    pub fn ready(&self) -> Option<ReadyCondition> {
        let (is_true, last_transition_time) = match &self.ready {
            KeptReady::Absent => return None,
            KeptReady::True => (true, None),
            KeptReady::TrueSince(time) => (true, Some(time.clone())),
            KeptReady::NotTrue => (false, None),
            KeptReady::NotTrueSince(time) => (false, Some(time.clone())),
        };
        Some(ReadyCondition {
            is_true,
            last_transition_time,
        })
    }

    /// Replaces the `Ready` condition (`None` removes it).
    pub fn set_ready(&mut self, ready: Option<ReadyCondition>) {
        self.ready = KeptReady::from(ready);
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

/// A [`ReadyCondition`] as a cached pod stores it: one enum of 24 bytes where
/// `Option<ReadyCondition>` takes 32 (a `Time` has no spare bit pattern for the option and
/// the flag to share), which keeps a cached pod in its `Arc` within 512 bytes.
#[derive(Clone, Debug, Default, PartialEq)]
enum KeptReady {
    /// The pod has no `Ready` condition.
    #[default]
    Absent,
    /// `True`, with no transition time.
    True,
    /// `True` since the time.
    TrueSince(Time),
    /// Not `True`, with no transition time.
    NotTrue,
    /// Not `True` since the time.
    NotTrueSince(Time),
}

impl From<Option<ReadyCondition>> for KeptReady {
    fn from(ready: Option<ReadyCondition>) -> Self {
        let Some(ready) = ready else {
            return KeptReady::Absent;
        };
        match (ready.is_true, ready.last_transition_time) {
            (true, None) => KeptReady::True,
            (true, Some(time)) => KeptReady::TrueSince(time),
            (false, None) => KeptReady::NotTrue,
            (false, Some(time)) => KeptReady::NotTrueSince(time),
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

fn first_ready_condition<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<KeptReady, D::Error> {
    let conditions = Option::<Vec<PodCondition>>::deserialize(deserializer)?;
    Ok(KeptReady::from(
        conditions.and_then(|conditions| ready_condition(&conditions)),
    ))
}

fn cached_container_status(status: &ContainerStatus) -> CachedContainerStatus {
    CachedContainerStatus {
        name: status.name.clone(),
        restart_count: status.restart_count,
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
        let status = pod.status.as_ref().map(|status| CachedPodStatus {
            phase: status.phase.as_deref().map(Box::from),
            ready: KeptReady::from(status.conditions.as_ref().and_then(ready_condition)),
            container_statuses: status
                .container_statuses
                .as_ref()
                .map(|statuses| statuses.iter().map(cached_container_status).collect()),
            init_container_statuses: status
                .init_container_statuses
                .as_ref()
                .map(|statuses| statuses.iter().map(cached_container_status).collect()),
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
        let time = Some(Time("2026-11-23T10:00:05Z".parse().expect("a timestamp")));
        let cases = [
            None,
            Some((true, None)),
            Some((true, time.clone())),
            Some((false, None)),
            Some((false, time)),
        ];
        for case in cases {
            let ready = case.map(|(is_true, last_transition_time)| ReadyCondition {
                is_true,
                last_transition_time,
            });
            let mut status = CachedPodStatus::default();
            status.set_ready(ready.clone());
            assert_eq!(status.ready(), ready);
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
}
