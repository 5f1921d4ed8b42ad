//! Property tests: whatever JSON the API server sends for a Deployment, ReplicaSet, pod or node —
//! wrong types, missing fields, huge and negative numbers, odd timestamps and intstrs, 1 MiB
//! annotations, 10,000 owner references — decoding it into the cached types never panics, and
//! an object that k8s-openapi's type accepts, the cached type accepts too. For a pod, the
//! cached pod is also what converting the decoded `Pod` gives (`From<&Pod>` keeps exactly
//! what decoding keeps).
//!
//! Why the second property matters more than the first: the informers list and watch through
//! kube's watcher, which decodes a whole list page at once, so one object the cache cannot
//! decode fails the page and stalls the controller for every object of that kind. An API
//! server only stores what its own types decode, which k8s-openapi's types mirror; a cached type
//! stricter than them would turn one odd but valid object into an outage. For the types kept
//! whole (Deployment, ReplicaSet), the cached object also writes back as the object it was
//! decoded from, since controllers PUT it.

use std::fmt::Debug;

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::{Node, Pod},
};
use proptest::prelude::*;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use super::{CachedDeployment, CachedNode, CachedPod, CachedReplicaSet};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/apiserver-v1.28/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first item of a captured list, as the API server sent it.
fn first_item(list: &str) -> Value {
    fixture(list)["items"][0].clone()
}

/// Every JSON pointer inside `value` (not the root itself).
fn pointers(value: &Value, prefix: &str, out: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.replace('~', "~0").replace('/', "~1"), v))
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (segment, child) in children {
        let pointer = format!("{prefix}/{segment}");
        out.push(pointer.clone());
        pointers(child, &pointer, out);
    }
}

/// A value as a hostile or careless writer might put anywhere.
fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just(json!(u64::MAX)),
            Just(json!(i64::MIN)),
            Just(json!(2_147_483_648_i64)),
            Just(json!(i32::MAX)),
            Just(json!(-1)),
            Just(json!(0)),
            Just(json!(1e308)),
            Just(json!(-0.5)),
        ],
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just(json!("25%")),
            Just(json!("abc%")),
            Just(json!("-5%")),
            Just(json!("99999999999%")),
            Just(json!("0001-01-01T00:00:00Z")),
            Just(json!("9999-12-31T23:59:59Z")),
            Just(json!("2024-02-30T00:00:00Z")),
            Just(json!("1970-01-01T00:00:00.123456789+14:00")),
            Just(json!("100Mi")),
            Just(json!("")),
        ],
        Just(json!([])),
        Just(json!({})),
        Just(json!([1, "a", null, {}])),
        Just(json!({"a": 1, "b": [null]})),
    ]
}

/// One change to an object: `index` picks a place among its pointers.
#[derive(Clone, Debug)]
enum Mutation {
    Remove(usize),
    Replace(usize, Value),
    /// An annotation of 1 MiB.
    HugeAnnotation,
    /// 10,000 owner references (none the controller).
    ManyOwnerReferences,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => any::<usize>().prop_map(Mutation::Remove),
        8 => (any::<usize>(), hostile_value()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => Just(Mutation::HugeAnnotation),
        1 => Just(Mutation::ManyOwnerReferences),
    ]
}

fn apply(object: &mut Value, mutation: &Mutation) {
    let mut places = Vec::new();
    pointers(object, "", &mut places);
    let place = |index: usize| places.get(index % places.len().max(1)).cloned();
    match mutation {
        Mutation::Remove(index) => {
            let Some(pointer) = place(*index) else { return };
            let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
            match object.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < items.len()
                    {
                        items.remove(i);
                    }
                }
                _ => {}
            }
        }
        Mutation::Replace(index, value) => {
            let Some(pointer) = place(*index) else { return };
            if let Some(slot) = object.pointer_mut(&pointer) {
                *slot = value.clone();
            }
        }
        Mutation::HugeAnnotation => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
                if let Some(map) = annotations.as_object_mut() {
                    map.insert("example.com/huge".to_owned(), json!("x".repeat(1 << 20)));
                }
            }
        }
        Mutation::ManyOwnerReferences => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                let refs: Vec<Value> = (0..10_000)
                    .map(|i| {
                        json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "name": format!("owner-{i}"), "uid": format!("uid-{i}")})
                    })
                    .collect();
                metadata.insert("ownerReferences".to_owned(), Value::Array(refs));
            }
        }
    }
}

/// Decodes `object` as the API type and as the cached type: the cached type accepts all the
/// API type accepts; `round_trip` also checks the cached object writes back as the API object.
fn check<Api, Cached>(object: &Value, round_trip: bool) -> Result<(), TestCaseError>
where
    Api: DeserializeOwned + Serialize + PartialEq + Debug,
    Cached: DeserializeOwned + Serialize,
{
    let api = serde_json::from_value::<Api>(object.clone());
    let cached = serde_json::from_value::<Cached>(object.clone());
    let Ok(api) = api else { return Ok(()) };
    let cached = match cached {
        Ok(cached) => cached,
        Err(error) => {
            return Err(TestCaseError::fail(format!(
                "k8s-openapi decodes it, the cache does not: {error}"
            )));
        }
    };
    if round_trip {
        let written = serde_json::to_value(&cached)
            .map_err(|e| TestCaseError::fail(format!("the cached object does not encode: {e}")))?;
        let reread: Api = serde_json::from_value(written).map_err(|e| {
            TestCaseError::fail(format!("what the cache writes does not decode: {e}"))
        })?;
        // k8s-openapi's own round trip is the reference (it writes timestamps to the second).
        let api_written = serde_json::to_value(&api)
            .map_err(|e| TestCaseError::fail(format!("the API object does not encode: {e}")))?;
        let expected: Api = serde_json::from_value(api_written)
            .map_err(|e| TestCaseError::fail(format!("k8s-openapi does not reread itself: {e}")))?;
        prop_assert_eq!(reread, expected);
    }
    Ok(())
}

/// A captured object with one to three mutations.
fn mutated(base: Value) -> impl Strategy<Value = Value> {
    proptest::collection::vec(mutation(), 1..=3).prop_map(move |mutations| {
        let mut object = base.clone();
        for m in &mutations {
            apply(&mut object, m);
        }
        object
    })
}

/// Only a cached type's own check: round trips need `Serialize`, which a cached pod or node
/// (never written back) does not have.
fn check_decodes<Api: DeserializeOwned, Cached: DeserializeOwned>(
    object: &Value,
) -> Result<(), TestCaseError> {
    let api = serde_json::from_value::<Api>(object.clone());
    let cached = serde_json::from_value::<Cached>(object.clone());
    if let (Ok(_), Err(error)) = (&api, &cached) {
        return Err(TestCaseError::fail(format!(
            "k8s-openapi decodes it, the cache does not: {error}"
        )));
    }
    Ok(())
}

/// A pod, as the API type and as the cached type: the cached type accepts all the API type
/// accepts, and keeps what converting the API object keeps.
fn check_pod(object: &Value) -> Result<(), TestCaseError> {
    check_decodes::<Pod, CachedPod>(object)?;
    if let (Ok(api), Ok(cached)) = (
        serde_json::from_value::<Pod>(object.clone()),
        serde_json::from_value::<CachedPod>(object.clone()),
    ) {
        prop_assert_eq!(CachedPod::from(&api), cached);
    }
    Ok(())
}

/// The captured pod as a Job's pod in `phase`, its status as the kubelet writes it: conditions
/// (the kubelet's, and a `DisruptionTarget`), a terminated app container, a sidecar.
fn job_pod(phase: &str) -> Value {
    let mut pod = first_item("pod-list.json");
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert(
            "initContainers".to_owned(),
            json!([{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]),
        );
    }
    pod["status"] = json!({
        "phase": phase,
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
             "lastTransitionTime": "2026-11-23T10:00:00Z"},
            {"type": "PodReadyToStartContainers", "status": "True",
             "lastTransitionTime": "2026-11-23T09:59:00Z"},
            {"type": "Initialized", "status": "True", "lastProbeTime": null,
             "lastTransitionTime": "2026-11-23T09:59:00Z"},
            {"type": "Ready", "status": "False", "reason": "PodFailed",
             "lastTransitionTime": "2026-11-23T10:00:01Z"},
            {"type": "ContainersReady", "status": "True",
             "lastTransitionTime": "2026-11-23T09:59:01Z"},
            {"type": "PodScheduled", "status": "True",
             "lastTransitionTime": "2026-11-23T09:58:59Z"}
        ],
        "containerStatuses": [{"name": "main", "restartCount": 2, "ready": false,
            "image": "busybox", "imageID": "sha", "started": false,
            "state": {"terminated": {"exitCode": 137, "reason": "Error", "signal": 9,
                "startedAt": "2026-11-23T09:59:01Z", "finishedAt": "2026-11-23T10:00:00Z"}},
            "lastState": {"terminated": {"exitCode": 1}}}],
        "initContainerStatuses": [{"name": "proxy", "restartCount": 1, "ready": true,
            "image": "envoy", "imageID": "sha",
            "state": {"running": {"startedAt": "2026-11-23T09:59:00Z"}}}]
    });
    pod
}

/// The captured pod as a DaemonSet's pod not bound yet: pinned by its node affinity.
fn daemon_pod() -> Value {
    let mut pod = first_item("pod-list.json");
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("nodeName");
        spec.insert(
            "affinity".to_owned(),
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}}),
        );
    }
    pod
}

/// A node as a kubelet registers it.
fn node() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-1", "uid": "n1", "resourceVersion": "9",
                     "labels": {"kubernetes.io/hostname": "node-1", "disk": "ssd"},
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": {"podCIDR": "10.244.1.0/24",
                 "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule",
                             "timeAdded": "2026-11-23T10:00:00Z"}]},
        "status": {"capacity": {"cpu": "8", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastHeartbeatTime": "2026-11-23T10:00:10Z"}],
                   "nodeInfo": {"kubeletVersion": "v1.36.0"}}
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn hostile_deployments_decode_as_the_api_type_does(
        object in mutated(fixture("deployment.json")),
    ) {
        check::<Deployment, CachedDeployment>(&object, true)?;
    }

    #[test]
    fn hostile_replica_sets_decode_as_the_api_type_does(
        object in mutated(first_item("replicaset-list.json")),
    ) {
        check::<ReplicaSet, CachedReplicaSet>(&object, true)?;
    }

    #[test]
    fn hostile_pods_decode_as_the_api_type_does(object in mutated(first_item("pod-list.json"))) {
        check_pod(&object)?;
    }

    #[test]
    fn hostile_daemon_pods_decode_as_the_api_type_does(object in mutated(daemon_pod())) {
        check_pod(&object)?;
    }

    #[test]
    fn hostile_failed_job_pods_decode_as_the_api_type_does(object in mutated(job_pod("Failed"))) {
        check_pod(&object)?;
    }

    #[test]
    fn hostile_running_job_pods_decode_as_the_api_type_does(
        object in mutated(job_pod("Running")),
    ) {
        check_pod(&object)?;
    }

    #[test]
    fn hostile_nodes_decode_as_the_api_type_does(object in mutated(node())) {
        check_decodes::<Node, CachedNode>(&object)?;
    }
}

#[test]
fn the_captured_objects_decode_and_mutate() {
    let mut d = fixture("deployment.json");
    assert!(serde_json::from_value::<CachedDeployment>(d.clone()).is_ok());
    apply(&mut d, &Mutation::ManyOwnerReferences);
    apply(&mut d, &Mutation::HugeAnnotation);
    let cached: CachedDeployment = serde_json::from_value(d).expect("still valid");
    assert_eq!(
        cached.metadata.owner_references.as_ref().map(Vec::len),
        Some(10_000)
    );
    let mut places = Vec::new();
    pointers(&first_item("pod-list.json"), "", &mut places);
    assert!(
        places.iter().any(|p| p == "/spec/containers/0/image"),
        "{places:?}"
    );
    let pinned: CachedPod = serde_json::from_value(daemon_pod()).expect("decodes");
    assert_eq!(pinned.target_node_name(), Some("node-1"));
    for (phase, kept) in [("Failed", 6), ("Running", 2)] {
        let job_pod: CachedPod = serde_json::from_value(job_pod(phase)).expect("decodes");
        let status = job_pod.status.as_ref().expect("a status");
        assert_eq!(status.conditions.len(), kept, "{phase}");
        assert_eq!(status.condition_statuses().count(), 6, "{phase}");
        let exit_code = status
            .container_statuses
            .as_deref()
            .and_then(|s| s[0].terminated.as_ref())
            .map(|t| t.exit_code);
        assert_eq!(exit_code, Some(137), "{phase}");
    }
    assert!(serde_json::from_value::<CachedNode>(node()).is_ok());
}
