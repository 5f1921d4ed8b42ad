//! The pod a DaemonSet creates on a node (upstream `util.CreatePodTemplate`,
//! `AddOrUpdateDaemonPodTolerations`, `ReplaceDaemonSetPodNodeNameNodeAffinity`): the
//! template with the default daemon tolerations, the revision labels, and a required node
//! affinity pinning it to its node. The default scheduler binds it; the controller never sets
//! `spec.nodeName`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    PodTemplateSpec, Toleration,
};

use super::node_affinity::{NODE_NAME_FIELD, OPERATOR_IN};
use super::tolerations::{NO_EXECUTE, NO_SCHEDULE, OPERATOR_EXISTS};

/// Pod label holding the revision **hash** the pod was created from
/// (`apps.DefaultDaemonSetUniqueLabelKey`), also the hash label of the DaemonSet's revisions.
pub const DAEMONSET_REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// Pod label holding the legacy template generation (`DaemonSetTemplateGenerationKey`).
pub const POD_TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// Taint keys the default tolerations cover (`v1.TaintNode*`).
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node controller cannot reach the node.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The node reports disk pressure.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// The node reports memory pressure.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// The node reports PID pressure.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// The node is cordoned (`spec.unschedulable`).
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The node's network is not configured (tolerated only by host-network pods).
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// `operator: Exists` for `key` and `effect`, no value, no `tolerationSeconds`.
fn exists_toleration(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some(OPERATOR_EXISTS.to_owned()),
        effect: Some(effect.to_owned()),
        ..Toleration::default()
    }
}

/// The tolerations every daemon pod gets, in upstream's order: not-ready and unreachable
/// (`NoExecute`, so node problems never evict it), disk, memory and PID pressure and
/// unschedulable (`NoSchedule`), and network-unavailable (`NoSchedule`) only for a pod on the
/// host network.
pub fn default_tolerations(host_network: bool) -> Vec<Toleration> {
    let mut tolerations = vec![
        exists_toleration(TAINT_NODE_NOT_READY, NO_EXECUTE),
        exists_toleration(TAINT_NODE_UNREACHABLE, NO_EXECUTE),
        exists_toleration(TAINT_NODE_DISK_PRESSURE, NO_SCHEDULE),
        exists_toleration(TAINT_NODE_MEMORY_PRESSURE, NO_SCHEDULE),
        exists_toleration(TAINT_NODE_PID_PRESSURE, NO_SCHEDULE),
        exists_toleration(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE),
    ];
    if host_network {
        tolerations.push(exists_toleration(
            TAINT_NODE_NETWORK_UNAVAILABLE,
            NO_SCHEDULE,
        ));
    }
    tolerations
}

/// `AddOrUpdateDaemonPodTolerations`: adds (or updates) [`default_tolerations`] in `spec`.
pub fn add_or_update_daemon_pod_tolerations(spec: &mut PodSpec) {
    for toleration in default_tolerations(spec.host_network == Some(true)) {
        add_or_update_toleration(spec, &toleration);
    }
}

fn text(value: Option<&String>) -> &str {
    value.map_or("", String::as_str)
}

/// `Toleration.MatchToleration`: same key, effect, operator and value.
fn same_toleration(lhs: &Toleration, rhs: &Toleration) -> bool {
    text(lhs.key.as_ref()) == text(rhs.key.as_ref())
        && text(lhs.effect.as_ref()) == text(rhs.effect.as_ref())
        && text(lhs.operator.as_ref()) == text(rhs.operator.as_ref())
        && text(lhs.value.as_ref()) == text(rhs.value.as_ref())
}

/// `AddOrUpdateTolerationInPodSpec`: every toleration matching `toleration` (same key,
/// effect, operator and value) is replaced by it, in place; if none matches it is appended.
/// If a matching one is already identical (same `tolerationSeconds` too) the spec is left
/// exactly as it was, even a matching one before it unreplaced. Returns whether it changed.
pub fn add_or_update_toleration(spec: &mut PodSpec, toleration: &Toleration) -> bool {
    let existing = spec.tolerations.as_deref().unwrap_or_default();
    let mut updated_tolerations = Vec::with_capacity(existing.len() + 1);
    let mut replaced = false;
    for current in existing {
        if same_toleration(toleration, current) {
            if toleration.toleration_seconds == current.toleration_seconds {
                return false;
            }
            updated_tolerations.push(toleration.clone());
            replaced = true;
        } else {
            updated_tolerations.push(current.clone());
        }
    }
    if !replaced {
        updated_tolerations.push(toleration.clone());
    }
    spec.tolerations = Some(updated_tolerations);
    true
}

/// `util.CreatePodTemplate`: a copy of `template` with the default daemon tolerations, a
/// labels map even if it had none, [`POD_TEMPLATE_GENERATION_LABEL`] set to `generation`
/// when there is one, and [`DAEMONSET_REVISION_HASH_LABEL`] set to `hash` when it is not empty.
pub fn create_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut created = template.clone();
    add_or_update_daemon_pod_tolerations(created.spec.get_or_insert_with(PodSpec::default));
    let labels = created
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    if let Some(generation) = generation {
        labels.insert(
            POD_TEMPLATE_GENERATION_LABEL.to_owned(),
            generation.to_string(),
        );
    }
    if !hash.is_empty() {
        labels.insert(DAEMONSET_REVISION_HASH_LABEL.to_owned(), hash.to_owned());
    }
    created
}

/// The one term pinning a pod to `node`: `matchFields: [{key: metadata.name, operator: In,
/// values: [node]}]`.
fn pinning_term(node: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: NODE_NAME_FIELD.to_owned(),
            operator: OPERATOR_IN.to_owned(),
            values: Some(vec![node.to_owned()]),
        }]),
        ..NodeSelectorTerm::default()
    }
}

/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: `affinity` with its required node selector
/// replaced by the single term pinning the pod to `node`; whatever is missing on the way
/// (affinity, node affinity, required selector) is created. Preferred terms, pod (anti-)
/// affinity and the pod's `nodeSelector` are kept.
pub fn replace_node_name_node_affinity(affinity: Option<Affinity>, node: &str) -> Affinity {
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    required.node_selector_terms = vec![pinning_term(node)];
    affinity
}

/// The template of the pod created on `node` (upstream `syncNodes`' per-node copy): the
/// [`create_pod_template`] result with its node affinity pinned to `node`.
pub fn pod_template_for_node(template: &PodTemplateSpec, node: &str) -> PodTemplateSpec {
    let mut pod = template.clone();
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    spec.affinity = Some(replace_node_name_node_affinity(spec.affinity.take(), node));
    pod
}
