//! Updates: `RollingUpdate` within `maxUnavailable` or `maxSurge` (absolute and percent, as
//! watched from outside while new pods take a while to turn Ready), `OnDelete`, the
//! `controller-revision-hash` and `pod-template-generation` labels, the ControllerRevisions
//! (name, data, numbers, rollback renumbering) and `revisionHistoryLimit`.

mod support;

use std::{collections::BTreeSet, time::Duration};

use daemonset::decide::revision::revision_data_bytes_of;
use k8s_openapi::api::{apps::v1::DaemonSetStatus, core::v1::Pod};
use serde_json::{Value, json};
use sim::READY_AFTER_MS;
use sim::testing::{annotation, blocking_controller_kind};
use support::{Harness, WAIT, is_ready, label, nodes, target_node, uids};

/// What was seen while a rollout ran.
#[derive(Debug, Default)]
struct Peaks {
    /// Most pods not being deleted at once.
    pods: usize,
    /// Most nodes without a Ready pod not being deleted.
    unavailable_nodes: usize,
}

/// The DaemonSet's current hash, from the revision its status settles on: the hash label of
/// the pods once every one is up to date.
async fn hashes(harness: &Harness, name: &str) -> BTreeSet<String> {
    harness
        .live_pods(name)
        .await
        .iter()
        .filter_map(|pod| label(pod, "controller-revision-hash"))
        .collect()
}

/// Changes the image of `name` (new pods Ready 400 ms after they start), then watches until
/// every node runs one Ready pod of the new template, and returns the peaks seen.
async fn roll(harness: &Harness, name: &str, node_count: usize) -> Peaks {
    let before = hashes(harness, name).await;
    harness
        .patch_ds(
            name,
            json!({"spec": {"template": {
                "metadata": {"annotations": {READY_AFTER_MS: "400"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}
            }}}),
        )
        .await;
    let mut peaks = Peaks::default();
    let started = tokio::time::Instant::now();
    loop {
        let pods = harness.live_pods(name).await;
        let ready_nodes: BTreeSet<String> = pods
            .iter()
            .filter(|pod| is_ready(pod))
            .filter_map(target_node)
            .collect();
        peaks.pods = peaks.pods.max(pods.len());
        peaks.unavailable_nodes = peaks
            .unavailable_nodes
            .max(node_count.saturating_sub(ready_nodes.len()));
        let done = pods.len() == node_count
            && ready_nodes.len() == node_count
            && pods.iter().all(|pod| {
                label(pod, "controller-revision-hash").is_some_and(|hash| !before.contains(&hash))
            });
        if done {
            return peaks;
        }
        assert!(
            started.elapsed() < WAIT,
            "rollout of {name} stuck: {peaks:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A `RollingUpdate` strategy with the given `rollingUpdate` parameters, as a DaemonSet patch.
fn rolling(params: Value) -> Value {
    json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": params}}})
}

/// Rolls the DaemonSet `agent` (the API's defaults with `patch` merged in) on `node_count`
/// nodes from settled to settled: the peaks seen on the way, and the settled status.
async fn rollout_peaks(node_count: usize, patch: Value) -> (Peaks, DaemonSetStatus) {
    let count = i32::try_from(node_count).expect("a small node count");
    let harness = Harness::with_ds(nodes(node_count), "agent", patch).await;
    harness.wait_for_settled("agent", count).await;
    let peaks = roll(&harness, "agent", node_count).await;
    let status = harness.wait_for_settled("agent", count).await;
    harness.stop().await;
    (peaks, status)
}

#[tokio::test]
async fn max_unavailable_one_replaces_one_node_at_a_time() {
    // The API's defaults: RollingUpdate, maxUnavailable 1, maxSurge 0.
    let (peaks, status) = rollout_peaks(3, json!({})).await;
    assert_eq!(peaks.unavailable_nodes, 1, "{peaks:?}");
    assert_eq!(peaks.pods, 3, "no surge: {peaks:?}");
    assert_eq!(status.observed_generation, Some(2));
}

#[tokio::test]
async fn max_unavailable_percent_rounds_up_over_the_nodes() {
    let (peaks, _) =
        rollout_peaks(4, rolling(json!({"maxUnavailable": "50%", "maxSurge": 0}))).await;
    assert_eq!(peaks.unavailable_nodes, 2, "50% of 4 nodes: {peaks:?}");
    assert_eq!(peaks.pods, 4, "{peaks:?}");
}

#[tokio::test]
async fn max_surge_one_starts_a_new_pod_beside_the_old_one() {
    let (peaks, _) = rollout_peaks(3, rolling(json!({"maxUnavailable": 0, "maxSurge": 1}))).await;
    assert_eq!(peaks.pods, 4, "one surge pod at a time: {peaks:?}");
    assert_eq!(
        peaks.unavailable_nodes, 0,
        "old pods stay until replaced: {peaks:?}"
    );
}

#[tokio::test]
async fn max_surge_percent_rounds_up_over_the_nodes() {
    let (peaks, _) =
        rollout_peaks(4, rolling(json!({"maxUnavailable": 0, "maxSurge": "50%"}))).await;
    assert_eq!(peaks.pods, 6, "50% of 4 nodes surge: {peaks:?}");
    assert_eq!(peaks.unavailable_nodes, 0, "{peaks:?}");
}

#[tokio::test]
async fn on_delete_replaces_only_deleted_pods() {
    let harness = Harness::with_ds(
        nodes(2),
        "agent",
        json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
    )
    .await;
    harness.wait_for_settled("agent", 2).await;
    let before = harness.live_pods("agent").await;
    harness.set_image("agent", "nginx:1.26").await;
    let status = harness
        .wait_for_status(
            "agent",
            "the new template observed, nothing updated",
            |status| status.updated_number_scheduled == Some(0),
        )
        .await;
    assert_eq!(status.current_number_scheduled, 2);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(uids(&harness.live_pods("agent").await), uids(&before));

    let deleted = &before[0];
    harness
        .pods()
        .delete(&support::name(deleted), &Default::default())
        .await
        .expect("delete");
    let replaced = harness
        .wait_for_status("agent", "one pod updated", |status| {
            status.updated_number_scheduled == Some(1) && status.number_ready == 2
        })
        .await;
    assert_eq!(replaced.desired_number_scheduled, 2);
    let pods = harness.live_pods("agent").await;
    let kept: Vec<&Pod> = pods
        .iter()
        .filter(|pod| support::uid(pod) == support::uid(&before[1]))
        .collect();
    assert_eq!(kept.len(), 1, "the other old pod stays");
    harness.stop().await;
}

/// The DaemonSet `name` as the server sends it.
async fn raw_daemon_set(harness: &Harness, name: &str) -> Value {
    let request = kube::core::Request::new("/apis/apps/v1/namespaces/default/daemonsets")
        .get(name, &Default::default())
        .expect("request builds");
    harness.client.request::<Value>(request).await.expect("get")
}

#[tokio::test]
async fn revisions_name_data_labels_and_rollback() {
    let harness = Harness::with_ds(
        nodes(2),
        "agent",
        json!({"spec": {"template": {"metadata": {"labels": {"tier": "node"}}}}}),
    )
    .await;
    harness.wait_for_settled("agent", 2).await;

    let revisions = harness.revisions_of("agent").await;
    assert_eq!(revisions.len(), 1);
    let first = &revisions[0];
    let first_hash =
        first.metadata.labels.as_ref().expect("labels")["controller-revision-hash"].clone();
    assert_eq!(
        first.metadata.name.as_deref(),
        Some(format!("agent-{first_hash}").as_str())
    );
    assert_eq!(first.revision, 1);
    let labels = first.metadata.labels.clone().expect("labels");
    assert_eq!(labels.get("app").map(String::as_str), Some("agent"));
    assert_eq!(labels.get("tier").map(String::as_str), Some("node"));
    assert_eq!(blocking_controller_kind(&first.metadata), Some("DaemonSet"));
    let raw = raw_daemon_set(&harness, "agent").await;
    let data = serde_json::to_vec(&first.data).expect("data");
    assert_eq!(
        String::from_utf8(data).expect("utf-8"),
        String::from_utf8(revision_data_bytes_of(&raw).expect("data")).expect("utf-8"),
        "the revision holds getPatch's bytes"
    );
    assert_eq!(
        annotation(&first.metadata, "deprecated.daemonset.template.generation"),
        Some("1"),
        "the DaemonSet's annotations"
    );
    for pod in harness.live_pods("agent").await {
        assert_eq!(
            label(&pod, "controller-revision-hash"),
            Some(first_hash.clone())
        );
        assert_eq!(label(&pod, "pod-template-generation").as_deref(), Some("1"));
    }

    // A new template: a second revision, and pods at generation 2.
    harness.set_image("agent", "nginx:1.26").await;
    harness.wait_for_settled("agent", 2).await;
    let revisions = harness.revisions_of("agent").await;
    assert_eq!(revisions.len(), 2);
    let second_hash =
        revisions[1].metadata.labels.as_ref().expect("labels")["controller-revision-hash"].clone();
    assert_ne!(second_hash, first_hash);
    assert_eq!(revisions[1].revision, 2);
    for pod in harness.live_pods("agent").await {
        assert_eq!(
            label(&pod, "controller-revision-hash"),
            Some(second_hash.clone())
        );
        assert_eq!(label(&pod, "pod-template-generation").as_deref(), Some("2"));
    }

    // Back to the first template: its revision is reused, renumbered 3; none is created.
    let creates = harness.controller_requests("create", "controllerrevisions");
    harness.set_image("agent", "nginx:1.25").await;
    harness.wait_for_settled("agent", 2).await;
    harness
        .wait_for(
            &format!("agent-{first_hash}"),
            "the first revision renumbered",
            WAIT,
            |revision: k8s_openapi::api::apps::v1::ControllerRevision| {
                (revision.revision == 3).then_some(())
            },
        )
        .await;
    assert_eq!(
        harness.controller_requests("create", "controllerrevisions"),
        creates
    );
    for pod in harness.live_pods("agent").await {
        assert_eq!(
            label(&pod, "controller-revision-hash"),
            Some(first_hash.clone())
        );
        assert_eq!(label(&pod, "pod-template-generation").as_deref(), Some("3"));
    }
    harness.stop().await;
}

#[tokio::test]
async fn revision_history_limit_removes_the_oldest_unused_revisions() {
    let harness = Harness::with_ds(
        nodes(1),
        "agent",
        json!({"spec": {"revisionHistoryLimit": 1}}),
    )
    .await;
    harness.wait_for_settled("agent", 1).await;
    let mut names = Vec::new();
    for image in ["nginx:1.26", "nginx:1.27", "nginx:1.28"] {
        harness.set_image("agent", image).await;
        harness.wait_for_settled("agent", 1).await;
        names.push(
            harness
                .revisions_of("agent")
                .await
                .last()
                .and_then(|revision| revision.metadata.name.clone())
                .expect("a current revision"),
        );
    }
    let kept = sim::testing::eventually("two revisions left", WAIT, || async {
        let revisions = harness.revisions_of("agent").await;
        (revisions.len() == 2).then_some(revisions)
    })
    .await;
    let kept: Vec<(String, i64)> = kept
        .iter()
        .map(|revision| {
            (
                revision.metadata.name.clone().unwrap_or_default(),
                revision.revision,
            )
        })
        .collect();
    assert_eq!(
        kept,
        [(names[1].clone(), 3), (names[2].clone(), 4)],
        "the current revision and one old one"
    );
    harness.stop().await;
}
