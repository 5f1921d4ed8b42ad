//! Which nodes run a daemon pod, against the sim's nodes and scheduler: one pod per eligible
//! node (node selector, required node affinity, taints and tolerations, the default
//! tolerations every daemon pod gets), pinned to its node by the affinity term the scheduler
//! binds it with; nodes added, relabelled or tainted later; and no second pod for a node
//! whose pod is not bound yet.

mod support;

use std::collections::BTreeMap;

use daemonset::decide::node_affinity::required_node_selector;
use k8s_openapi::api::core::v1::{Pod, Toleration};
use serde_json::json;
use sim::{KubeletConfig, NodeOverrides, NodeTaint, NodesConfig, SimConfig};
use support::{Harness, daemon_set, label, nodes, target_node};

/// A config with three nodes, the first two carrying `overrides`.
fn three_nodes(overrides: [NodeOverrides; 2]) -> SimConfig {
    let [first, second] = overrides;
    SimConfig {
        nodes: NodesConfig {
            per_node: BTreeMap::from([(0, first), (1, second)]),
            ..NodesConfig::with_count(3)
        },
        ..SimConfig::default()
    }
}

fn labelled(key: &str, value: &str) -> NodeOverrides {
    NodeOverrides {
        labels: BTreeMap::from([(key.to_owned(), value.to_owned())]),
        taints: Vec::new(),
    }
}

fn tainted(taint: &str) -> NodeOverrides {
    NodeOverrides {
        labels: BTreeMap::new(),
        taints: vec![taint.parse::<NodeTaint>().expect("a taint")],
    }
}

fn toleration_keys(pod: &Pod) -> Vec<(String, String)> {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.tolerations.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|toleration: Toleration| {
            (
                toleration.key.unwrap_or_default(),
                toleration.effect.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn creates_one_pinned_pod_per_node_with_the_default_tolerations() {
    let harness = Harness::with_ds(nodes(3), "agent", json!({})).await;
    harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1", "sim-node-2"])
        .await;
    harness.wait_for_settled("agent", 3).await;
    for pod in &harness.live_pods("agent").await {
        let spec = pod.spec.as_ref().expect("spec");
        let node = spec.node_name.clone().expect("bound by the scheduler");
        // Not bound by the controller: pinned by the one term the scheduler reads.
        let terms = &required_node_selector(spec)
            .expect("required node affinity")
            .node_selector_terms;
        assert_eq!(
            serde_json::to_value(terms).expect("terms"),
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}])
        );
        let tolerations = toleration_keys(pod);
        for default in [
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
        ] {
            let default = (default.0.to_owned(), default.1.to_owned());
            assert!(
                tolerations.contains(&default),
                "{default:?} in {tolerations:?}"
            );
        }
        assert!(
            !tolerations
                .iter()
                .any(|(key, _)| key == "node.kubernetes.io/network-unavailable"),
            "network-unavailable only for host-network pods"
        );
        assert_eq!(
            pod.metadata.generate_name.as_deref(),
            Some("agent-"),
            "named after the DaemonSet"
        );
    }
    // One create per node, nothing more.
    assert_eq!(harness.controller_requests("create", "pods"), 3);
    harness.stop().await;
}

#[tokio::test]
async fn node_selector_and_required_affinity_choose_the_nodes() {
    let harness = Harness::with_ds(
        three_nodes([labelled("disk", "ssd"), labelled("zone", "b")]),
        "ssd",
        json!({"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}}),
    )
    .await;
    harness
        .create_ds(daemon_set(
            "zoned",
            json!({"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["sim-node-2"]}]}
                ]}}}}}}}),
        ))
        .await;
    harness.wait_for_pods_on("ssd", &["sim-node-0"]).await;
    let zoned = harness
        .wait_for_pods_on("zoned", &["sim-node-1", "sim-node-2"])
        .await;
    // The template's own terms are replaced by the pinning term alone.
    for pod in &zoned {
        let terms = pod
            .spec
            .as_ref()
            .and_then(required_node_selector)
            .map(|required| required.node_selector_terms.len());
        assert_eq!(terms, Some(1));
    }
    let status = harness.wait_for_settled("ssd", 1).await;
    assert_eq!(status.desired_number_scheduled, 1);
    harness.wait_for_settled("zoned", 2).await;
    harness.stop().await;
}

#[tokio::test]
async fn taints_keep_pods_off_unless_tolerated() {
    let harness = Harness::with_ds(
        three_nodes([
            tainted("dedicated=gpu:NoSchedule"),
            tainted("maintenance:NoExecute"),
        ]),
        "plain",
        json!({}),
    )
    .await;
    harness
        .create_ds(daemon_set(
            "gpu",
            json!({"spec": {"template": {"spec": {"tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
            ]}}}}),
        ))
        .await;
    harness
        .create_ds(daemon_set(
            "everywhere",
            json!({"spec": {"template": {"spec": {"tolerations": [{"operator": "Exists"}]}}}}),
        ))
        .await;
    harness.wait_for_pods_on("plain", &["sim-node-2"]).await;
    harness
        .wait_for_pods_on("gpu", &["sim-node-0", "sim-node-2"])
        .await;
    harness
        .wait_for_pods_on("everywhere", &["sim-node-0", "sim-node-1", "sim-node-2"])
        .await;
    harness.wait_for_settled("plain", 1).await;
    harness.wait_for_settled("gpu", 2).await;
    harness.wait_for_settled("everywhere", 3).await;
    harness.stop().await;
}

/// The default tolerations: a cordoned node (`unschedulable` taint) and a NotReady one still
/// get a daemon pod.
#[tokio::test]
async fn cordoned_and_not_ready_nodes_still_get_daemon_pods() {
    let harness = Harness::start_with(three_nodes([
        tainted("node.kubernetes.io/unschedulable:NoSchedule"),
        tainted("node.kubernetes.io/not-ready:NoExecute"),
    ]))
    .await;
    harness
        .patch_node("sim-node-0", json!({"spec": {"unschedulable": true}}))
        .await;
    harness.create_ds(daemon_set("agent", json!({}))).await;
    harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1", "sim-node-2"])
        .await;
    harness.stop().await;
}

#[tokio::test]
async fn a_node_added_later_gets_a_pod() {
    let harness = Harness::with_ds(nodes(2), "agent", json!({})).await;
    harness.wait_for_settled("agent", 2).await;
    harness.create_node("late-node", json!({})).await;
    harness
        .wait_for_pods_on("agent", &["late-node", "sim-node-0", "sim-node-1"])
        .await;
    harness.wait_for_settled("agent", 3).await;
    harness.stop().await;
}

#[tokio::test]
async fn relabelling_a_node_creates_and_deletes_its_pod() {
    let harness = Harness::with_ds(
        nodes(3),
        "ssd",
        json!({"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}}),
    )
    .await;
    harness
        .wait_for_status("ssd", "no node to run on", |status| {
            status.desired_number_scheduled == 0
        })
        .await;
    assert!(harness.live_pods("ssd").await.is_empty());

    harness
        .patch_node(
            "sim-node-1",
            json!({"metadata": {"labels": {"disk": "ssd"}}}),
        )
        .await;
    harness.wait_for_pods_on("ssd", &["sim-node-1"]).await;
    harness.wait_for_settled("ssd", 1).await;

    harness
        .patch_node(
            "sim-node-1",
            json!({"metadata": {"labels": {"disk": null}}}),
        )
        .await;
    harness.wait_for_pods_on("ssd", &[]).await;
    harness
        .wait_for_status("ssd", "no node to run on again", |status| {
            status.desired_number_scheduled == 0 && status.current_number_scheduled == 0
        })
        .await;
    harness.stop().await;
}

/// A NoSchedule taint keeps the running pod (counted misscheduled at the next sync); a
/// NoExecute one removes it.
#[tokio::test]
async fn tainting_a_node_keeps_or_evicts_its_pod_by_effect() {
    let harness = Harness::with_ds(nodes(2), "agent", json!({})).await;
    let before = harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1"])
        .await;
    harness.wait_for_settled("agent", 2).await;

    harness
        .patch_node(
            "sim-node-0",
            json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}}),
        )
        .await;
    // The taint concerns the DaemonSet only if its pod there had to go (upstream's
    // `syncNodeUpdate`): none does, so nothing syncs it.
    harness.wait_until_idle().await;
    assert_eq!(
        support::uids(&harness.live_pods("agent").await),
        support::uids(&before),
        "a NoSchedule taint removes no pod"
    );
    // Any sync of it counts the pod misscheduled.
    harness
        .patch_ds("agent", json!({"metadata": {"labels": {"touched": "yes"}}}))
        .await;
    let status = harness
        .wait_for_status("agent", "a misscheduled pod", |status| {
            status.number_misscheduled == 1
        })
        .await;
    assert_eq!(status.desired_number_scheduled, 1);
    let kept = harness.live_pods("agent").await;
    assert_eq!(
        support::uids(&kept),
        support::uids(&before),
        "a NoSchedule taint removes no pod"
    );

    harness
        .patch_node(
            "sim-node-0",
            json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]}}),
        )
        .await;
    harness.wait_for_pods_on("agent", &["sim-node-1"]).await;
    harness.wait_for_settled("agent", 1).await;
    harness.stop().await;
}

/// With the kubelet off nothing is ever bound: each node's pod stays pinned and Pending, and
/// counts for its node, so no sync creates a second one.
#[tokio::test]
async fn an_unbound_pinned_pod_counts_for_its_node() {
    let config = SimConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..KubeletConfig::default()
        },
        ..nodes(2)
    };
    let harness = Harness::with_ds(config, "agent", json!({})).await;
    let pods = harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1"])
        .await;
    assert!(
        pods.iter().all(|pod| pod
            .spec
            .as_ref()
            .and_then(|spec| spec.node_name.as_ref())
            .is_none()),
        "not bound"
    );
    let status = harness
        .wait_for_status("agent", "two scheduled, none ready", |status| {
            status.current_number_scheduled == 2 && status.number_ready == 0
        })
        .await;
    assert_eq!(status.desired_number_scheduled, 2);
    // Syncs go on (status writes, pod events); none creates another pod.
    harness
        .patch_ds("agent", json!({"spec": {"minReadySeconds": 1}}))
        .await;
    harness
        .wait_for_status("agent", "the new generation observed", |_| true)
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(harness.controller_requests("create", "pods"), 2);
    let nodes: Vec<Option<String>> = harness
        .live_pods("agent")
        .await
        .iter()
        .map(target_node)
        .collect();
    assert_eq!(nodes.len(), 2);
    assert!(
        harness
            .live_pods("agent")
            .await
            .iter()
            .all(|pod| label(pod, "controller-revision-hash").is_some())
    );
    harness.stop().await;
}
