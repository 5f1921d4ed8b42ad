//! A DaemonSet's pods over time: failed pods deleted under the backoff with `FailedDaemonPod`
//! warnings, succeeded ones with `SucceededDaemonPod`, a duplicate pod on a node deleted (the
//! older kept), the status fields and `observedGeneration`, availability after
//! `minReadySeconds` without any other event, node heartbeats syncing nothing, and a deleted
//! node's pod gone from the status.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use sim::{FAIL_AFTER_MS, NodesConfig, SUCCEED_AFTER_MS, SimConfig};
use support::{Harness, WAIT, daemon_set, name, nodes, uid};

/// A DaemonSet patch that gives its pods the annotation `key: value` (the sim's kubelet reads
/// how a pod ends from it).
fn pod_annotation(key: &str, value: &str) -> Value {
    json!({"spec": {"template": {"metadata": {"annotations": {key: value}}}}})
}

#[tokio::test]
async fn failed_pods_are_deleted_under_the_backoff_with_a_warning() {
    // Every pod of this template fails 100 ms after it starts.
    let harness = Harness::with_ds(nodes(1), "crashy", pod_annotation(FAIL_AFTER_MS, "100")).await;
    let warning = harness.wait_for_event("crashy", "FailedDaemonPod").await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.unwrap_or_default();
    assert!(
        message.starts_with("Found failed daemon pod default/crashy-")
            && message.ends_with(" on node sim-node, will try to kill it"),
        "{message}"
    );
    // Backoff 1 s, then 2 s, then 4 s: in about 4 s at most three failed pods are deleted,
    // while without the backoff each would go within ~100 ms of failing.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let deletes = harness.controller_requests("delete", "pods");
    assert!((2..=3).contains(&deletes), "deleted {deletes} failed pods");
    assert!(harness.controller_requests("create", "pods") <= deletes + 1);
    harness.stop().await;
}

#[tokio::test]
async fn succeeded_pods_are_deleted_and_replaced() {
    let harness =
        Harness::with_ds(nodes(1), "oneshot", pod_annotation(SUCCEED_AFTER_MS, "200")).await;
    let event = harness
        .wait_for_event("oneshot", "SucceededDaemonPod")
        .await;
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    sim::testing::eventually("a replacement pod", WAIT, || async {
        (harness.controller_requests("create", "pods") >= 2).then_some(())
    })
    .await;
    harness.stop().await;
}

/// A second pod of the DaemonSet on a node: the older one stays (bound pods first, then the
/// older creation time, then the smaller name), the newer one is deleted.
#[tokio::test]
async fn a_duplicate_pod_on_a_node_is_deleted_and_the_older_kept() {
    let harness = Harness::start_with(nodes(2)).await;
    let ds = harness.create_ds(daemon_set("agent", json!({}))).await;
    let pods = harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1"])
        .await;
    harness.wait_for_settled("agent", 2).await;
    let original = pods
        .iter()
        .find(|pod| support::target_node(pod).as_deref() == Some("sim-node-0"))
        .expect("a pod on sim-node-0")
        .clone();
    // Creation times have second precision: the duplicate is created a second later, and
    // named to sort first, so only its age decides.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let duplicate: Pod = serde_json::from_value(json!({
        "metadata": {"name": "aaa-duplicate", "labels": {"app": "agent"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet",
                         "name": "agent", "uid": ds.metadata.uid, "controller": true,
                         "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "sim-node-0", "containers": [{"name": "c", "image": "nginx:1.25"}]}
    }))
    .expect("a pod");
    harness.create(&duplicate).await;
    sim::testing::eventually("the duplicate deleted", WAIT, || async {
        let live = harness.live_pods("agent").await;
        (!live.iter().any(|pod| name(pod) == "aaa-duplicate")).then_some(())
    })
    .await;
    let live = harness.live_pods("agent").await;
    assert!(
        live.iter().any(|pod| uid(pod) == uid(&original)),
        "the original stays"
    );
    assert_eq!(live.len(), 2);
    harness.wait_for_settled("agent", 2).await;
    harness.stop().await;
}

#[tokio::test]
async fn status_counts_nodes_and_observes_the_generation() {
    let config = SimConfig {
        nodes: NodesConfig {
            per_node: [(
                0,
                sim::NodeOverrides {
                    labels: [("role".to_owned(), "edge".to_owned())].into(),
                    taints: Vec::new(),
                },
            )]
            .into(),
            ..NodesConfig::with_count(3)
        },
        ..SimConfig::default()
    };
    let harness = Harness::with_ds(
        config,
        "edge",
        json!({"spec": {"template": {"spec": {"nodeSelector": {"role": "edge"}}}}}),
    )
    .await;
    let status = harness.wait_for_settled("edge", 1).await;
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(status.number_unavailable, Some(0));
    assert_eq!(status.collision_count, None);

    // A spec change that is not a template change: a new generation, observed.
    harness
        .patch_ds("edge", json!({"spec": {"minReadySeconds": 1}}))
        .await;
    let status = harness.wait_for_settled("edge", 1).await;
    assert_eq!(status.observed_generation, Some(2));

    // Another node joins the selection; a pod there is missing for a moment, then counted.
    harness
        .patch_node(
            "sim-node-2",
            json!({"metadata": {"labels": {"role": "edge"}}}),
        )
        .await;
    let status = harness.wait_for_settled("edge", 2).await;
    assert_eq!(status.desired_number_scheduled, 2);
    harness.stop().await;
}

/// With `minReadySeconds`, ready pods turn available later; the controller looks again then
/// by itself (the pod handler's and the status's requeues), with nothing else happening.
#[tokio::test]
async fn pods_turn_available_after_min_ready_seconds() {
    let harness =
        Harness::with_ds(nodes(2), "agent", json!({"spec": {"minReadySeconds": 2}})).await;
    let early = harness
        .wait_for_status("agent", "ready, not yet available", |status| {
            status.number_ready == 2
        })
        .await;
    assert_eq!(early.number_available, Some(0));
    assert_eq!(early.number_unavailable, Some(2));
    let settled = harness.wait_for_settled("agent", 2).await;
    assert_eq!(settled.number_available, Some(2));
    harness.stop().await;
}

/// Node heartbeats (status and Lease writes every 100 ms here) change neither labels nor
/// taints: neither queue gets a key, no sync runs.
#[tokio::test]
async fn node_heartbeats_sync_nothing() {
    let config = SimConfig {
        nodes: NodesConfig {
            heartbeat: Duration::from_millis(100),
            ..NodesConfig::with_count(3)
        },
        ..SimConfig::default()
    };
    let harness = Harness::with_ds(config, "agent", json!({})).await;
    harness.wait_for_settled("agent", 3).await;
    // Quiet: nothing added to either queue for a while.
    let quiet = harness.wait_until_idle().await;
    let syncs = harness.syncs();
    let node_version = |node: k8s_openapi::api::core::v1::Node| node.metadata.resource_version;
    let before = node_version(harness.nodes().get("sim-node-0").await.expect("node"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = node_version(harness.nodes().get("sim-node-0").await.expect("node"));
    assert_ne!(before, after, "the node heartbeat meanwhile");
    assert_eq!(
        (
            harness.queue_adds("daemonset"),
            harness.queue_adds("daemonset-node-updates")
        ),
        quiet,
        "no key queued"
    );
    assert_eq!(harness.syncs(), syncs, "no DaemonSet synced");
    assert!(
        quiet.1 >= 3.0,
        "each node was queued once when it was listed"
    );

    // A label change does reach the node queue.
    harness
        .patch_node(
            "sim-node-0",
            json!({"metadata": {"labels": {"extra": "yes"}}}),
        )
        .await;
    sim::testing::eventually("the label change queued", WAIT, || async {
        (harness.queue_adds("daemonset-node-updates") > quiet.1).then_some(())
    })
    .await;
    harness.stop().await;
}

/// kcm-rs: a deleted node enqueues the DaemonSets with pods there; the status stops counting it
/// once its pod is gone (here at once: the sim's pod garbage collection has no delay).
#[tokio::test]
async fn a_deleted_node_leaves_the_status() {
    let harness = Harness::with_ds(nodes(3), "agent", json!({})).await;
    harness.wait_for_settled("agent", 3).await;
    harness
        .nodes()
        .delete("sim-node-2", &Default::default())
        .await
        .expect("delete node");
    harness.wait_for_settled("agent", 2).await;
    harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1"])
        .await;
    harness.stop().await;
}

/// kcm-rs: a pod pinned to a node that is deleted before the pod was bound is left alone by
/// the pod garbage collector; the node's deletion syncs the DaemonSet, which deletes it
/// (upstream would wait for some other event).
#[tokio::test]
async fn a_deleted_nodes_unbound_pod_is_deleted() {
    let config = SimConfig {
        kubelet: sim::KubeletConfig {
            enabled: false,
            ..sim::KubeletConfig::default()
        },
        ..nodes(2)
    };
    let harness = Harness::with_ds(config, "agent", json!({})).await;
    harness
        .wait_for_pods_on("agent", &["sim-node-0", "sim-node-1"])
        .await;
    harness
        .wait_for_status("agent", "two pods scheduled", |status| {
            status.current_number_scheduled == 2
        })
        .await;
    // Nothing else will sync it: only the node's deletion can.
    harness.wait_until_idle().await;
    harness
        .nodes()
        .delete("sim-node-1", &Default::default())
        .await
        .expect("delete node");
    harness.wait_for_pods_on("agent", &["sim-node-0"]).await;
    harness
        .wait_for_status("agent", "one node left", |status| {
            status.desired_number_scheduled == 1 && status.current_number_scheduled == 1
        })
        .await;
    harness.stop().await;
}
