//! The created pod's template: default tolerations (`AddOrUpdateDaemonPodTolerations`),
//! labels (`TestCreatePodTemplate`) and pinning (`TestReplaceDaemonSetPodNodeNameNodeAffinity`).

use k8s_openapi::api::core::v1::{Affinity, PodSpec, PodTemplateSpec, Toleration};
use serde_json::{Value, json};

use crate::decide::template::{
    add_or_update_daemon_pod_tolerations, add_or_update_toleration, create_pod_template,
    default_tolerations, pod_template_for_node, replace_node_name_node_affinity,
};

fn tolerations_json(tolerations: &[Toleration]) -> Value {
    serde_json::to_value(tolerations).expect("tolerations serialize")
}

fn spec(value: Value) -> PodSpec {
    serde_json::from_value(value).expect("a valid pod spec")
}

fn exists(key: &str, effect: &str) -> Value {
    json!({"key": key, "operator": "Exists", "effect": effect})
}

#[test]
fn default_tolerations_are_upstreams_in_order() {
    let always = vec![
        exists("node.kubernetes.io/not-ready", "NoExecute"),
        exists("node.kubernetes.io/unreachable", "NoExecute"),
        exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
        exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
        exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
        exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    assert_eq!(tolerations_json(&default_tolerations(false)), json!(always));
    let mut host_network = always;
    host_network.push(exists(
        "node.kubernetes.io/network-unavailable",
        "NoSchedule",
    ));
    assert_eq!(
        tolerations_json(&default_tolerations(true)),
        json!(host_network)
    );
}

#[test]
fn add_or_update_toleration_cases() {
    let not_ready = || -> Toleration {
        serde_json::from_value(exists("node.kubernetes.io/not-ready", "NoExecute")).expect("valid")
    };
    let user_timed = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
        "effect": "NoExecute", "tolerationSeconds": 300});
    let other =
        json!({"key": "dedicated", "operator": "Equal", "value": "a", "effect": "NoSchedule"});
    // (rule, tolerations before, changed, tolerations after)
    #[rustfmt::skip]
    let cases = [
        ("no tolerations: appended", json!([]), true, json!([exists("node.kubernetes.io/not-ready", "NoExecute")])),
        ("a matching one with tolerationSeconds is replaced in place (the seconds dropped)", json!([user_timed.clone(), other.clone()]), true, json!([exists("node.kubernetes.io/not-ready", "NoExecute"), other.clone()])),
        ("an identical one is left as is", json!([other.clone(), exists("node.kubernetes.io/not-ready", "NoExecute")]), false, json!([other.clone(), exists("node.kubernetes.io/not-ready", "NoExecute")])),
        ("a different operator does not match: appended at the end", json!([{"key": "node.kubernetes.io/not-ready", "operator": "Equal", "effect": "NoExecute"}]), true, json!([{"key": "node.kubernetes.io/not-ready", "operator": "Equal", "effect": "NoExecute"}, exists("node.kubernetes.io/not-ready", "NoExecute")])),
        ("an identical one after a replaced one leaves the spec untouched", json!([user_timed.clone(), exists("node.kubernetes.io/not-ready", "NoExecute")]), false, json!([user_timed.clone(), exists("node.kubernetes.io/not-ready", "NoExecute")])),
    ];
    for (rule, before, changed, after) in cases {
        let mut pod_spec = spec(json!({"containers": [], "tolerations": before}));
        assert_eq!(
            add_or_update_toleration(&mut pod_spec, &not_ready()),
            changed,
            "{rule}"
        );
        assert_eq!(
            tolerations_json(pod_spec.tolerations.as_deref().unwrap_or_default()),
            after,
            "{rule}"
        );
    }
}

#[test]
fn daemon_pod_tolerations_keep_user_ones_first() {
    let mut pod_spec = spec(json!({"containers": [], "tolerations": [
        {"key": "dedicated", "operator": "Exists"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    ]}));
    add_or_update_daemon_pod_tolerations(&mut pod_spec);
    let seconds: Vec<Option<i64>> = pod_spec
        .tolerations
        .iter()
        .flatten()
        .map(|toleration| toleration.toleration_seconds)
        .collect();
    assert_eq!(
        seconds,
        vec![None; 7],
        "unreachable's tolerationSeconds is dropped"
    );
    let first = pod_spec
        .tolerations
        .as_ref()
        .and_then(|t| t.first())
        .and_then(|t| t.key.clone());
    assert_eq!(first.as_deref(), Some("dedicated"));
}

#[test]
fn upstream_create_pod_template_cases() {
    // (generation, hash, expect the hash label)
    let cases = [
        (Some(1), "", false),
        (Some(2), "3242341807", true),
        (None, "abc", true),
    ];
    for (generation, hash, expect_hash) in cases {
        let created = create_pod_template(&PodTemplateSpec::default(), generation, hash);
        let labels = created
            .metadata
            .as_ref()
            .and_then(|metadata| metadata.labels.clone())
            .expect("labels are always created");
        assert_eq!(
            labels.get("pod-template-generation").cloned(),
            generation.map(|generation| generation.to_string()),
            "{generation:?}"
        );
        assert_eq!(
            labels.get("controller-revision-hash").map(String::as_str),
            expect_hash.then_some(hash),
            "{hash:?}"
        );
        let tolerations = created
            .spec
            .and_then(|spec| spec.tolerations)
            .unwrap_or_default();
        assert_eq!(tolerations, default_tolerations(false));
    }
}

#[test]
fn create_pod_template_keeps_the_templates_labels() {
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "ds"}},
        "spec": {"containers": [{"name": "c", "image": "img:1"}], "hostNetwork": true}
    }))
    .expect("a valid template");
    let created = create_pod_template(&template, Some(7), "h1");
    let metadata = serde_json::to_value(&created.metadata).expect("serializes");
    assert_eq!(
        metadata,
        json!({"labels": {"app": "ds", "controller-revision-hash": "h1", "pod-template-generation": "7"}})
    );
    let tolerations = created
        .spec
        .and_then(|spec| spec.tolerations)
        .unwrap_or_default();
    assert_eq!(
        tolerations.len(),
        7,
        "host network adds network-unavailable"
    );
}

fn affinity(value: Value) -> Option<Affinity> {
    serde_json::from_value(value).expect("a valid affinity")
}

fn pinned(node: &str) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    ]}})
}

#[test]
fn upstream_replace_node_name_node_affinity_cases() {
    let preferred = json!([{"weight": 1, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host_1"]}
    ]}}]);
    let required = |terms: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
    // (case, affinity before, affinity after)
    #[rustfmt::skip]
    let cases = [
        ("no affinity", Value::Null, json!({"nodeAffinity": pinned("host_1")})),
        ("a hostname expression is replaced", required(json!([{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["host_1"]}]}])), json!({"nodeAffinity": pinned("host_1")})),
        ("preferred terms are kept", json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred.clone()}}), { let mut want = json!({"nodeAffinity": pinned("host_1")}); want["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred; want }),
        ("a pinning term with two nodes is replaced", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["host_1", "host_2"]}]}])), json!({"nodeAffinity": pinned("host_1")})),
        ("all terms are replaced by the one pinning term", required(json!([{"matchExpressions": [{"key": "hostname", "operator": "In", "values": ["host_1"]}]}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["host_2"]}]}])), json!({"nodeAffinity": pinned("host_1")})),
        ("a NotIn field term is replaced", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["host_2"]}]}])), json!({"nodeAffinity": pinned("host_1")})),
        ("another field key is replaced", required(json!([{"matchFields": [{"key": "metadata.foo", "operator": "In", "values": ["bar"]}]}])), json!({"nodeAffinity": pinned("host_1")})),
        ("pod anti-affinity is kept", json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}]}}), json!({"nodeAffinity": pinned("host_1"), "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone", "labelSelector": {"matchLabels": {"a": "b"}}}]}})),
    ];
    for (case, before, after) in cases {
        let replaced = replace_node_name_node_affinity(affinity(before), "host_1");
        assert_eq!(
            serde_json::to_value(&replaced).expect("serializes"),
            after,
            "{case}"
        );
    }
}

#[test]
fn the_pod_for_a_node_is_pinned_and_keeps_its_node_selector() {
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "ds"}},
        "spec": {"containers": [], "nodeSelector": {"role": "edge"}}
    }))
    .expect("a valid template");
    let for_node = pod_template_for_node(&template, "node-7");
    let spec = serde_json::to_value(for_node.spec).expect("serializes");
    assert_eq!(spec["nodeSelector"], json!({"role": "edge"}));
    assert_eq!(spec["affinity"], json!({"nodeAffinity": pinned("node-7")}));
    assert_eq!(spec.get("nodeName"), None, "the scheduler binds the pod");
}
