//! Nodes: the configured node set as Node objects with labels, taints and a kubelet's status,
//! node Leases and status heartbeats, the scheduler step (nodeSelector, required node
//! affinity with matchFields and Gt, taints and tolerations, NotReady and cordoned nodes,
//! the spread), readiness, the pod GC of deleted nodes, and kubectl against all of it.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use sim::testing::Kubectl;
use sim::{NodeOverrides, NodeTaint, NodesConfig, SimCluster, SimConfig};

/// A cluster with `nodes`.
async fn cluster_with_nodes(nodes: NodesConfig) -> SimCluster {
    common::cluster_with(SimConfig {
        nodes,
        ..SimConfig::default()
    })
    .await
}

/// `count` nodes heartbeating every `heartbeat`.
fn nodes(count: usize, heartbeat: Duration) -> NodesConfig {
    NodesConfig {
        heartbeat,
        ..NodesConfig::with_count(count)
    }
}

/// Creates pod `name` with `spec` merged into a one-container spec.
async fn create_pod(pods: &Api<Pod>, name: &str, spec: Value) -> Pod {
    let mut pod = json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    });
    if let (Some(base), Some(extra)) = (pod["spec"].as_object_mut(), spec.as_object()) {
        base.extend(extra.clone());
    }
    common::create(pods, &serde_json::from_value(pod).unwrap()).await
}

/// Cordons the node (a strategic merge patch), or uncordons it (a merge patch removing the field).
async fn set_unschedulable(nodes: &Api<Node>, name: &str, unschedulable: bool) {
    let patch = if unschedulable {
        Patch::Strategic(json!({"spec": {"unschedulable": true}}))
    } else {
        Patch::Merge(json!({"spec": {"unschedulable": null}}))
    };
    common::patch(nodes, name, patch).await;
}

fn node_of(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone())
}

fn pod_condition(pod: &Pod, kind: &str) -> Option<(String, Option<String>, Option<String>)> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn is_ready(pod: &Pod) -> bool {
    pod_condition(pod, "Ready").is_some_and(|c| c.0 == "True")
}

fn node_ready(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

fn heartbeats(node: &Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    c.last_heartbeat_time
                        .as_ref()
                        .map(|t| t.0.to_string())
                        .unwrap_or_default()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The pod once it is bound to a node.
async fn scheduled(pods: &Api<Pod>, name: &str) -> Pod {
    common::eventually(&format!("{name} scheduled"), || async {
        pods.get(name).await.ok().filter(|p| node_of(p).is_some())
    })
    .await
}

/// The pod once it is Ready.
async fn ready(pods: &Api<Pod>, name: &str) -> Pod {
    common::eventually(&format!("{name} ready"), || async {
        pods.get(name).await.ok().filter(is_ready)
    })
    .await
}

/// The `PodScheduled=False` message of a pod the scheduler could not place.
async fn unschedulable(pods: &Api<Pod>, name: &str) -> String {
    let pod = common::eventually(&format!("{name} unschedulable"), || async {
        pods.get(name)
            .await
            .ok()
            .filter(|p| pod_condition(p, "PodScheduled").is_some())
    })
    .await;
    assert!(node_of(&pod).is_none());
    assert_eq!(
        pod.status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );
    let (status, reason, message) = pod_condition(&pod, "PodScheduled").unwrap();
    assert_eq!(status, "False");
    assert_eq!(reason.as_deref(), Some("Unschedulable"));
    message.unwrap_or_default()
}

#[tokio::test]
async fn the_default_cluster_has_one_node_named_sim_node() {
    let cluster = common::cluster().await;
    let nodes: Api<Node> = Api::all(cluster.client());
    let names = common::list_names(&nodes, &ListParams::default()).await;
    assert_eq!(names, vec!["sim-node"]);
    let node = nodes.get("sim-node").await.unwrap();
    assert_eq!(node_ready(&node).as_deref(), Some("True"));
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    assert_eq!(
        common::list_names(&leases, &ListParams::default()).await,
        vec!["sim-node"]
    );
}

#[tokio::test]
async fn nodes_carry_labels_taints_and_a_kubelet_status() {
    let mut config = nodes(3, Duration::from_secs(10));
    config.labels = [("zone".to_string(), "a".to_string())].into();
    config.taints = vec![NodeTaint::new("shared", "yes", "PreferNoSchedule")];
    config.per_node.insert(
        1,
        NodeOverrides {
            labels: [("zone".to_string(), "b".to_string())].into(),
            taints: vec![NodeTaint::new("dedicated", "gpu", "NoSchedule")],
        },
    );
    let cluster = cluster_with_nodes(config).await;
    let api: Api<Node> = Api::all(cluster.client());
    let list = api.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = list
        .items
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, vec!["sim-node-0", "sim-node-1", "sim-node-2"]);
    for (i, node) in list.items.iter().enumerate() {
        let name = &names[i];
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], *name);
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["zone"], if i == 1 { "b" } else { "a" });
        let taints: Vec<(String, Option<String>, String)> = node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t.key, t.value, t.effect))
            .collect();
        let mut expected = vec![(
            "shared".to_string(),
            Some("yes".to_string()),
            "PreferNoSchedule".to_string(),
        )];
        if i == 1 {
            expected.push(("dedicated".into(), Some("gpu".into()), "NoSchedule".into()));
        }
        assert_eq!(taints, expected, "{name}");
        let status = node.status.as_ref().unwrap();
        let conditions: BTreeMap<&str, &str> = status
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| (c.type_.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            conditions,
            BTreeMap::from([
                ("DiskPressure", "False"),
                ("MemoryPressure", "False"),
                ("NetworkUnavailable", "False"),
                ("PIDPressure", "False"),
                ("Ready", "True"),
            ])
        );
        assert!(
            status
                .conditions
                .as_ref()
                .unwrap()
                .iter()
                .all(|c| c.last_heartbeat_time.is_some() && c.last_transition_time.is_some())
        );
        assert_eq!(status.capacity.as_ref().unwrap()["pods"].0, "110");
        assert_eq!(status.allocatable.as_ref().unwrap()["cpu"].0, "8");
        let info = status.node_info.as_ref().unwrap();
        assert_eq!(info.operating_system, "linux");
        assert_eq!(info.architecture, "amd64");
        let addresses = status.addresses.as_ref().unwrap();
        assert_eq!(addresses[0].type_, "InternalIP");
        assert_eq!(addresses[0].address, format!("10.0.0.{}", i + 1));
    }
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    for (name, node) in names.iter().zip(&list.items) {
        let lease = leases.get(name).await.unwrap();
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some(name.as_str()));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert!(spec.renew_time.is_some());
        let owner = &lease.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("Node", name.as_str())
        );
        assert_eq!(Some(&owner.uid), node.metadata.uid.as_ref());
    }
    let cordoned = ListParams::default().fields("spec.unschedulable=false");
    assert_eq!(common::list_names(&api, &cordoned).await.len(), 3);
}

#[tokio::test]
async fn heartbeats_renew_leases_and_node_status() {
    let cluster = cluster_with_nodes(nodes(2, Duration::from_millis(300))).await;
    let api: Api<Node> = Api::all(cluster.client());
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    let before = leases.get("sim-node-1").await.unwrap();
    let node_before = api.get("sim-node-1").await.unwrap();
    let rv = common::list_resource_version(&api).await;
    let mut events = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();

    let renewed = common::eventually("lease renewed", || async {
        leases.get("sim-node-1").await.ok().filter(|l| {
            l.spec.as_ref().and_then(|s| s.renew_time.clone())
                != before.spec.as_ref().and_then(|s| s.renew_time.clone())
        })
    })
    .await;
    let old_rv: u64 = before.metadata.resource_version.unwrap().parse().unwrap();
    let new_rv: u64 = renewed.metadata.resource_version.unwrap().parse().unwrap();
    assert!(new_rv > old_rv);

    // The status heartbeat: a MODIFIED event with a new resourceVersion, Ready unchanged.
    let modified = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(event) = events.try_next().await.unwrap() {
            if let WatchEvent::Modified(node) = event {
                return node;
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("a heartbeat within 5 s");
    assert_eq!(node_ready(&modified).as_deref(), Some("True"));
    assert!(
        modified
            .metadata
            .resource_version
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > rv.parse().unwrap()
    );

    // lastHeartbeatTime has one-second precision: it moves within a couple of seconds.
    let old = heartbeats(&node_before);
    let node = common::eventually("lastHeartbeatTime moved", || async {
        api.get("sim-node-1")
            .await
            .ok()
            .filter(|n| heartbeats(n) != old)
    })
    .await;
    let transition = |n: &Node| {
        n.status.as_ref().unwrap().conditions.as_ref().unwrap()[4]
            .last_transition_time
            .clone()
    };
    assert_eq!(transition(&node), transition(&node_before));
    assert!(heartbeats(&node).iter().all(|t| *t == heartbeats(&node)[0]));
}

#[tokio::test]
async fn the_scheduler_honours_selectors_affinity_and_taints() {
    let mut config = nodes(3, Duration::from_secs(10));
    for (i, (zone, cores)) in [("a", "4"), ("b", "8"), ("b", "16")]
        .into_iter()
        .enumerate()
    {
        config.per_node.insert(
            i,
            NodeOverrides {
                labels: [
                    ("zone".to_string(), zone.to_string()),
                    ("cores".to_string(), cores.to_string()),
                ]
                .into(),
                taints: if i == 2 {
                    vec![NodeTaint::new("dedicated", "gpu", "NoSchedule")]
                } else {
                    Vec::new()
                },
            },
        );
    }
    let cluster = cluster_with_nodes(config).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let required = |terms: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
    let pinned = |node: &str| {
        required(
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]),
        )
    };
    let gpu =
        json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]);

    create_pod(&pods, "selector-a", json!({"nodeSelector": {"zone": "a"}})).await;
    create_pod(
        &pods,
        "affinity-b",
        json!({"affinity": required(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]))}),
    )
    .await;
    create_pod(
        &pods,
        "pinned-tolerating",
        json!({"affinity": pinned("sim-node-2"), "tolerations": gpu}),
    )
    .await;
    create_pod(
        &pods,
        "pinned-intolerant",
        json!({"affinity": pinned("sim-node-2")}),
    )
    .await;
    create_pod(
        &pods,
        "many-cores",
        json!({"tolerations": gpu, "affinity": required(json!([
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]},
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["10"]}]}
        ]))}),
    )
    .await;
    create_pod(
        &pods,
        "few-cores",
        json!({"affinity": required(json!([{"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["8"]}]}]))}),
    )
    .await;
    create_pod(&pods, "bound", json!({"nodeName": "sim-node-2"})).await;

    let on = |pod: Pod| node_of(&pod).unwrap();
    assert_eq!(on(ready(&pods, "selector-a").await), "sim-node-0");
    assert_eq!(on(ready(&pods, "affinity-b").await), "sim-node-1");
    assert_eq!(on(ready(&pods, "pinned-tolerating").await), "sim-node-2");
    assert_eq!(on(ready(&pods, "many-cores").await), "sim-node-2");
    assert_eq!(on(ready(&pods, "few-cores").await), "sim-node-0");
    let bound = ready(&pods, "bound").await;
    assert_eq!(
        on(bound.clone()),
        "sim-node-2",
        "a bound pod stays on its node"
    );
    assert_eq!(bound.status.unwrap().host_ip.as_deref(), Some("10.0.0.3"));
    assert_eq!(
        unschedulable(&pods, "pinned-intolerant").await,
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 node(s) didn't match Pod's node affinity/selector."
    );
}

#[tokio::test]
async fn plain_pods_spread_over_the_nodes() {
    let cluster = cluster_with_nodes(nodes(3, Duration::from_secs(10))).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    for i in 0..6 {
        create_pod(&pods, &format!("p{i}"), json!({})).await;
    }
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..6 {
        *per_node
            .entry(node_of(&scheduled(&pods, &format!("p{i}")).await).unwrap())
            .or_default() += 1;
    }
    assert_eq!(
        per_node,
        BTreeMap::from([
            ("sim-node-0".to_string(), 2),
            ("sim-node-1".to_string(), 2),
            ("sim-node-2".to_string(), 2)
        ])
    );
}

#[tokio::test]
async fn not_ready_nodes_keep_pods_from_being_ready() {
    let cluster = cluster_with_nodes(nodes(2, Duration::from_millis(200))).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let api: Api<Node> = Api::all(cluster.client());
    create_pod(
        &pods,
        "on-1",
        json!({"nodeSelector": {"kubernetes.io/hostname": "sim-node-1"}}),
    )
    .await;
    ready(&pods, "on-1").await;

    cluster.set_node_ready("sim-node-0", false).unwrap();
    assert!(cluster.set_node_ready("nowhere", false).is_err());
    let to_0 = json!({"nodeSelector": {"kubernetes.io/hostname": "sim-node-0"}});
    create_pod(&pods, "waits", to_0.clone()).await;
    assert_eq!(
        unschedulable(&pods, "waits").await,
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."
    );
    let mut tolerating = to_0.clone();
    tolerating["tolerations"] =
        json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]);
    create_pod(&pods, "tolerates", tolerating).await;
    let started = scheduled(&pods, "tolerates").await;
    assert_eq!(node_of(&started).as_deref(), Some("sim-node-0"));
    assert_eq!(
        started.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );
    assert!(!is_ready(&started));

    // NotReady through the API: the kubelet's heartbeats keep it, its Ready pod is not Ready.
    let status = Patch::Strategic(
        json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Test"}]}}),
    );
    api.patch_status("sim-node-1", &PatchParams::default(), &status)
        .await
        .unwrap();
    common::eventually("on-1 not ready", || async {
        pods.get("on-1").await.ok().filter(|p| !is_ready(p))
    })
    .await;
    let patched = api.get("sim-node-1").await.unwrap();
    let beaten = common::eventually("a heartbeat of the NotReady node", || async {
        api.get("sim-node-1")
            .await
            .ok()
            .filter(|n| heartbeats(n) != heartbeats(&patched))
    })
    .await;
    assert_eq!(node_ready(&beaten).as_deref(), Some("False"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!is_ready(&pods.get("tolerates").await.unwrap()));
    assert_eq!(
        pods.get("waits").await.unwrap().spec.unwrap().node_name,
        None
    );

    // Ready again: the waiting pod is scheduled, every pod becomes Ready.
    cluster.set_node_ready("sim-node-0", true).unwrap();
    assert_eq!(
        node_of(&ready(&pods, "waits").await).as_deref(),
        Some("sim-node-0")
    );
    ready(&pods, "tolerates").await;
    let status =
        Patch::Strategic(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
    api.patch_status("sim-node-1", &PatchParams::default(), &status)
        .await
        .unwrap();
    ready(&pods, "on-1").await;
}

#[tokio::test]
async fn unschedulable_pods_wait_for_a_fitting_node() {
    let cluster = cluster_with_nodes(nodes(1, Duration::from_millis(200))).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let api: Api<Node> = Api::all(cluster.client());
    create_pod(&pods, "gpu-pod", json!({"nodeSelector": {"gpu": "true"}})).await;
    assert_eq!(
        unschedulable(&pods, "gpu-pod").await,
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    );

    // A node created through the API is registered by its kubelet and takes the pod.
    let node: Node =
        serde_json::from_value(json!({"metadata": {"name": "gpu-1", "labels": {"gpu": "true"}}}))
            .unwrap();
    common::create(&api, &node).await;
    let pod = ready(&pods, "gpu-pod").await;
    assert_eq!(node_of(&pod).as_deref(), Some("gpu-1"));
    let (status, _, _) = pod_condition(&pod, "PodScheduled").unwrap();
    assert_eq!(status, "True");
    let registered = api.get("gpu-1").await.unwrap();
    assert_eq!(node_ready(&registered).as_deref(), Some("True"));
    assert_eq!(
        registered.metadata.labels.unwrap()["kubernetes.io/hostname"],
        "gpu-1"
    );
    assert_eq!(
        registered.status.unwrap().addresses.unwrap()[0].address,
        "10.0.0.2"
    );
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    common::eventually("gpu-1 lease", || async { leases.get("gpu-1").await.ok() }).await;

    // A cordoned node takes no new pod, though it has the fewest.
    set_unschedulable(&api, "sim-node", true).await;
    create_pod(&pods, "plain", json!({})).await;
    assert_eq!(
        node_of(&scheduled(&pods, "plain").await).as_deref(),
        Some("gpu-1")
    );
    set_unschedulable(&api, "gpu-1", true).await;
    create_pod(&pods, "nowhere", json!({})).await;
    assert_eq!(
        unschedulable(&pods, "nowhere").await,
        "0/2 nodes are available: 2 node(s) were unschedulable."
    );
    set_unschedulable(&api, "sim-node", false).await;
    assert_eq!(
        node_of(&scheduled(&pods, "nowhere").await).as_deref(),
        Some("sim-node")
    );
}

#[tokio::test]
async fn deleting_a_node_deletes_its_pods() {
    let cluster = cluster_with_nodes(nodes(2, Duration::from_secs(10))).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let api: Api<Node> = Api::all(cluster.client());
    let leases: Api<Lease> = Api::namespaced(cluster.client(), "kube-node-lease");
    for name in ["a", "b"] {
        create_pod(&pods, name, json!({"nodeName": "sim-node-0"})).await;
    }
    create_pod(&pods, "c", json!({"nodeName": "sim-node-1"})).await;
    for name in ["a", "b", "c"] {
        ready(&pods, name).await;
    }
    common::delete(&api, "sim-node-0", &DeleteParams::default()).await;
    common::eventually("pods of sim-node-0 gone", || async {
        let names = common::list_names(&pods, &ListParams::default()).await;
        (names == ["c"]).then_some(())
    })
    .await;
    common::eventually("its lease collected", || async {
        (!common::exists(&leases, "sim-node-0").await).then_some(())
    })
    .await;
    assert!(common::exists(&leases, "sim-node-1").await);

    // A pod bound to a node that does not exist is collected too.
    create_pod(&pods, "orphan", json!({"nodeName": "sim-node-0"})).await;
    common::eventually("orphan collected", || async {
        (!common::exists(&pods, "orphan").await).then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_pod_gc_waits_its_delay() {
    let config = NodesConfig {
        pod_gc_delay: Duration::from_millis(500),
        ..nodes(2, Duration::from_secs(10))
    };
    let cluster = cluster_with_nodes(config).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let api: Api<Node> = Api::all(cluster.client());
    create_pod(&pods, "a", json!({"nodeName": "sim-node-0"})).await;
    ready(&pods, "a").await;
    common::delete(&api, "sim-node-0", &DeleteParams::default()).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(common::exists(&pods, "a").await, "kept during the delay");
    common::eventually("a collected", || async {
        (!common::exists(&pods, "a").await).then_some(())
    })
    .await;
}

/// The whitespace-separated cells of the line of `output` starting with `name`.
fn row<'a>(output: &'a str, name: &str) -> Vec<&'a str> {
    output
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name} in\n{output}"))
        .split_whitespace()
        .collect()
}

#[tokio::test]
async fn kubectl_gets_nodes_and_leases_cordons_and_taints() {
    let cluster = cluster_with_nodes(nodes(2, Duration::from_secs(10))).await;
    let dir = tempfile::tempdir().unwrap();
    let kubectl = Kubectl::for_cluster(&cluster, dir.path());

    let out = kubectl.run(&["get", "nodes"]).await;
    assert!(out.starts_with("NAME"), "{out}");
    assert_eq!(
        row(&out, "sim-node-0")[..3],
        ["sim-node-0", "Ready", "<none>"]
    );
    assert_eq!(row(&out, "sim-node-1")[4], "v1.28.0-sim");
    let wide = kubectl.run(&["get", "nodes", "-o", "wide"]).await;
    assert!(wide.contains("INTERNAL-IP"), "{wide}");
    assert_eq!(row(&wide, "sim-node-1")[5], "10.0.0.2");
    let leases = kubectl
        .run(&["get", "lease", "-n", "kube-node-lease"])
        .await;
    assert_eq!(
        row(&leases, "sim-node-0")[..2],
        ["sim-node-0", "sim-node-0"]
    );
    assert_eq!(
        row(&leases, "sim-node-1")[..2],
        ["sim-node-1", "sim-node-1"]
    );
    let hostname = kubectl
        .run(&[
            "get",
            "nodes",
            "-l",
            "kubernetes.io/hostname=sim-node-1",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(hostname.trim(), "node/sim-node-1");

    kubectl.run(&["cordon", "sim-node-0"]).await;
    let out = kubectl.run(&["get", "nodes"]).await;
    assert_eq!(row(&out, "sim-node-0")[1], "Ready,SchedulingDisabled");
    kubectl
        .run(&["taint", "nodes", "sim-node-1", "dedicated=gpu:NoSchedule"])
        .await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    create_pod(&pods, "p", json!({})).await;
    assert_eq!(
        unschedulable(&pods, "p").await,
        "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable."
    );
    kubectl.run(&["uncordon", "sim-node-0"]).await;
    assert_eq!(
        node_of(&scheduled(&pods, "p").await).as_deref(),
        Some("sim-node-0")
    );
    let taints = kubectl
        .run(&[
            "get",
            "node",
            "sim-node-1",
            "-o",
            "jsonpath={.spec.taints[0].key}={.spec.taints[0].value}",
        ])
        .await;
    assert_eq!(taints, "dedicated=gpu");
    let out = kubectl.run(&["get", "pods", "-o", "wide"]).await;
    assert_eq!(row(&out, "p")[6], "sim-node-0");
    kubectl.run(&["delete", "node", "sim-node-0"]).await;
    common::eventually("p collected", || async {
        (!common::exists(&pods, "p").await).then_some(())
    })
    .await;
}
