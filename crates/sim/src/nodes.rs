//! Node and node Lease objects as a kubelet writes them: the Node it registers (labels,
//! conditions, capacity, nodeInfo, addresses), the Lease it renews in `kube-node-lease`, the
//! status heartbeat, and the Ready condition when a node is made NotReady or Ready again.
//!
//! Why: the DaemonSet controller works from real Node objects, and at thousands of nodes the
//! heartbeat writes (a MODIFIED Node and Lease every 10 s per node) are the noise a controller
//! must ignore, so they are written through the store like any client's.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::config::NodeTaint;
use crate::object::{meta, meta_mut, now_timestamp};
use crate::resources::{LEASES, NODES};
use crate::store::{ObjectKey, State};

/// The namespace node Leases live in.
pub(crate) const LEASE_NAMESPACE: &str = "kube-node-lease";
/// `spec.leaseDurationSeconds` of node Leases, as upstream's kubelet sets it.
const LEASE_DURATION_SECONDS: u64 = 40;
/// The kubelet version nodes report (the sim's `/version` is 1.28).
const KUBELET_VERSION: &str = "v1.28.0-sim";

/// The current time as upstream serializes `metav1.MicroTime` (a Lease's `renewTime`).
pub(crate) fn now_micro_timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// The key of node `name`.
pub(crate) fn node_key(name: &str) -> ObjectKey {
    (String::new(), name.to_string())
}

/// The InternalIP of the node with index `index` (10.0.0.1 for the first).
pub(crate) fn node_ip(index: usize) -> String {
    format!("10.0.{}.{}", (index / 250) % 256, index % 250 + 1)
}

/// The labels a kubelet puts on its node.
fn default_labels(name: &str) -> [(&'static str, String); 5] {
    [
        ("beta.kubernetes.io/arch", "amd64".to_string()),
        ("beta.kubernetes.io/os", "linux".to_string()),
        ("kubernetes.io/arch", "amd64".to_string()),
        ("kubernetes.io/hostname", name.to_string()),
        ("kubernetes.io/os", "linux".to_string()),
    ]
}

fn condition(kind: &str, status: bool, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// The Ready condition's reason and message.
fn ready_reason(ready: bool) -> (&'static str, &'static str) {
    if ready {
        ("KubeletReady", "kubelet is posting ready status")
    } else {
        ("KubeletNotReady", "the sim made the node NotReady")
    }
}

/// The status a kubelet posts for its node: conditions (NetworkUnavailable, the pressure
/// conditions, Ready), capacity and allocatable, addresses, daemonEndpoints and nodeInfo.
fn kubelet_status(name: &str, ip: &str, now: &str) -> Value {
    let (reason, message) = ready_reason(true);
    let resources = json!({
        "cpu": "8",
        "ephemeral-storage": "102350Mi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "32Gi",
        "pods": "110",
    });
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("NetworkUnavailable", false, "RouteCreated", "RouteController created a route", now),
            condition("MemoryPressure", false, "KubeletHasSufficientMemory", "kubelet has sufficient memory available", now),
            condition("DiskPressure", false, "KubeletHasNoDiskPressure", "kubelet has no disk pressure", now),
            condition("PIDPressure", false, "KubeletHasSufficientPID", "kubelet has sufficient PID available", now),
            condition("Ready", true, reason, message, now),
        ],
        "addresses": [
            {"type": "InternalIP", "address": ip},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": format!("sim-{name}"),
            "systemUUID": format!("sim-{name}"),
            "bootID": format!("sim-{name}"),
            "kernelVersion": "6.1.0-sim",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": "containerd://1.7.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    })
}

/// A registered, Ready node: the kubelet's labels plus `labels`, `taints`, and the status a
/// kubelet posts.
pub(crate) fn node_object(
    name: &str,
    ip: &str,
    labels: &BTreeMap<String, String>,
    taints: &[NodeTaint],
) -> Value {
    let mut all: Map<String, Value> = default_labels(name)
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::from(v)))
        .collect();
    for (k, v) in labels {
        all.insert(k.clone(), Value::from(v.as_str()));
    }
    let mut spec = Map::new();
    if !taints.is_empty() {
        let taints: Vec<Value> = taints
            .iter()
            .map(|t| {
                let mut taint = json!({"key": t.key, "effect": t.effect});
                if !t.value.is_empty() {
                    taint["value"] = json!(t.value);
                }
                taint
            })
            .collect();
        spec.insert("taints".into(), Value::from(taints));
    }
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": all,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": spec,
        "status": kubelet_status(name, ip, &now_timestamp()),
    })
}

/// The Lease node `name` (with uid `node_uid`) renews; owned by its Node, as upstream's
/// kubelet sets it, so the garbage collector removes it with the node.
fn lease_object(name: &str, node_uid: &str) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": LEASE_NAMESPACE,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": now_micro_timestamp(),
        },
    })
}

/// Creates the Lease of node `name` unless it exists (nothing when the node is gone or the
/// lease namespace was deleted).
pub(crate) fn ensure_lease(state: &mut State, name: &str) {
    let lease_key = (LEASE_NAMESPACE.to_string(), name.to_string());
    if state.get(LEASES, &lease_key).is_some() {
        return;
    }
    let Some(node) = state.get(NODES, &node_key(name)) else {
        return;
    };
    let uid = node.uid.to_string();
    if let Err(e) = state.create(LEASES, LEASE_NAMESPACE, lease_object(name, &uid)) {
        tracing::debug!(node = name, error = %e.message, "node lease not created");
    }
}

/// The kubelet of node `name` registers: labels it lacks are added, and a node without a
/// Ready condition (one created through the API) gets the status a kubelet posts, keeping
/// what was given. `ip` is its InternalIP unless it has one.
pub(crate) fn register(state: &mut State, name: &str, ip: &str) {
    let Some(stored) = state.get(NODES, &node_key(name)) else {
        return;
    };
    let original = stored.value();
    let mut node = original.clone();
    {
        let labels = meta_mut(&mut node)
            .entry("labels")
            .or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            for (k, v) in default_labels(name) {
                labels.entry(k).or_insert(Value::from(v));
            }
        }
    }
    let has_ready = node
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| c.get("type") == Some(&json!("Ready"))));
    if !has_ready && let Some(map) = node.as_object_mut() {
        let status = map.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        if let (Some(status), Value::Object(posted)) = (
            status.as_object_mut(),
            kubelet_status(name, ip, &now_timestamp()),
        ) {
            for (field, value) in posted {
                let keep =
                    status.get(&field).is_some_and(|v| !v.is_null()) && field != "conditions";
                if !keep {
                    status.insert(field, value);
                }
            }
        }
    }
    if node != original {
        tracing::debug!(node = name, "kubelet registered node");
        state.put(NODES, node_key(name), node);
    }
}

/// The status heartbeat and Lease renewal of node `name`: every condition's
/// `lastHeartbeatTime` becomes now (statuses untouched) and the Lease's `renewTime` too
/// (recreated if it was deleted). False when the node is gone.
pub(crate) fn heartbeat(state: &mut State, name: &str) -> bool {
    let key = node_key(name);
    let Some(stored) = state.get(NODES, &key) else {
        return false;
    };
    let mut node = stored.value();
    let now = now_timestamp();
    if let Some(conditions) = node
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            c.insert("lastHeartbeatTime".into(), Value::from(now.as_str()));
        }
    }
    state.put(NODES, key, node);
    let lease_key = (LEASE_NAMESPACE.to_string(), name.to_string());
    match state.get(LEASES, &lease_key) {
        Some(lease) => {
            let mut lease = lease.value();
            if let Some(spec) = lease.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("renewTime".into(), Value::from(now_micro_timestamp()));
            }
            state.put(LEASES, lease_key, lease);
        }
        None => ensure_lease(state, name),
    }
    true
}

/// Sets the Ready condition of `node` (moving `lastTransitionTime` only on a change); false
/// when it already said so.
pub(crate) fn set_ready(node: &mut Value, ready: bool) -> bool {
    let now = now_timestamp();
    let (reason, message) = ready_reason(ready);
    let wanted = if ready { "True" } else { "False" };
    let Some(status) = node.as_object_mut().map(|map| {
        map.entry("status")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    }) else {
        return false;
    };
    let Some(status) = status else {
        return false;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else {
        return false;
    };
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == Some(&json!("Ready")))
    {
        Some(c) if c.get("status") == Some(&json!(wanted)) => false,
        Some(c) => {
            *c = condition("Ready", ready, reason, message, &now);
            true
        }
        None => {
            conditions.push(condition("Ready", ready, reason, message, &now));
            true
        }
    }
}

/// Whether the object is being deleted.
pub(crate) fn terminating(obj: &Value) -> bool {
    meta(obj).is_some_and(|m| m.contains_key("deletionTimestamp"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fit::NodeView;

    #[test]
    fn node_objects_look_registered() {
        let labels = [("zone".to_string(), "a".to_string())].into();
        let node = node_object(
            "n1",
            &node_ip(0),
            &labels,
            &[NodeTaint::new("k", "", "NoSchedule")],
        );
        assert_eq!(node["metadata"]["name"], "n1");
        let view = NodeView::of(&node);
        assert!(view.ready);
        assert_eq!(view.internal_ip, "10.0.0.1");
        assert_eq!(view.labels["kubernetes.io/hostname"], "n1");
        assert_eq!(view.labels["kubernetes.io/os"], "linux");
        assert_eq!(view.labels["zone"], "a");
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": "k", "effect": "NoSchedule"}])
        );
        let types: Vec<&str> = node["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "NetworkUnavailable",
                "MemoryPressure",
                "DiskPressure",
                "PIDPressure",
                "Ready"
            ]
        );
        assert_eq!(node_ip(250), "10.0.1.1");
        assert!(now_micro_timestamp().ends_with('Z'));
        assert_eq!(
            now_micro_timestamp().len(),
            "2024-01-01T00:00:00.000000Z".len()
        );
    }

    #[test]
    fn ready_condition_changes_only_when_asked() {
        let mut node = node_object("n", "10.0.0.1", &BTreeMap::new(), &[]);
        assert!(!set_ready(&mut node, true));
        assert!(set_ready(&mut node, false));
        assert!(!NodeView::of(&node).ready);
        let ready = node["status"]["conditions"][4].clone();
        assert_eq!(ready["reason"], "KubeletNotReady");
        assert!(set_ready(&mut node, true));
        let mut bare = json!({"metadata": {"name": "b"}});
        assert!(set_ready(&mut bare, false));
        assert_eq!(bare["status"]["conditions"][0]["status"], "False");
        assert!(terminating(
            &json!({"metadata": {"deletionTimestamp": "x"}})
        ));
    }

    #[test]
    fn registration_and_heartbeats_go_through_the_store() {
        let mut state = State::new(100, None);
        state
            .create(
                crate::resources::NAMESPACES,
                "",
                json!({"metadata": {"name": LEASE_NAMESPACE}}),
            )
            .unwrap();
        state
            .create(
                NODES,
                "",
                json!({"metadata": {"name": "api", "labels": {"kubernetes.io/os": "windows"}}, "status": {"capacity": {"pods": "5"}}}),
            )
            .unwrap();
        assert!(!state.nodes.is_ready("api"));
        register(&mut state, "api", "10.0.9.9");
        let node = state.get(NODES, &node_key("api")).unwrap().value();
        assert_eq!(
            node["metadata"]["labels"]["kubernetes.io/os"], "windows",
            "kept"
        );
        assert_eq!(node["metadata"]["labels"]["kubernetes.io/hostname"], "api");
        assert_eq!(node["status"]["capacity"], json!({"pods": "5"}), "kept");
        assert!(state.nodes.is_ready("api"));
        assert_eq!(state.nodes.view("api").unwrap().internal_ip, "10.0.9.9");
        let rv = state.rv;
        register(&mut state, "api", "10.0.9.9");
        assert_eq!(state.rv, rv, "registering twice writes nothing");

        assert!(heartbeat(&mut state, "api"));
        let lease_key = (LEASE_NAMESPACE.to_string(), "api".to_string());
        let lease = state.get(LEASES, &lease_key).unwrap().value();
        assert_eq!(lease["spec"]["holderIdentity"], "api");
        assert_eq!(lease["spec"]["leaseDurationSeconds"], 40);
        assert_eq!(
            lease["metadata"]["ownerReferences"][0]["uid"],
            node["metadata"]["uid"]
        );
        let first = state.get(LEASES, &lease_key).unwrap().rv;
        assert!(heartbeat(&mut state, "api"));
        assert!(state.get(LEASES, &lease_key).unwrap().rv > first);
        assert!(!heartbeat(&mut state, "missing"));
    }
}
