//! Zero-restart takeover: a DaemonSet with a ControllerRevision and pods written the way
//! upstream writes them (labels, owner references, pinning affinity, default tolerations, the
//! revision data bytes of the spec's example). Starting the controller must create no
//! revision and create or delete no pod: owned objects are kept, orphaned ones (as `kubectl
//! delete ds --cascade=orphan` and a re-create leave them) adopted.
//!
//! The sim renders a template's `"creationTimestamp":null` as servers before v1.34 do, so
//! the revision an upstream controller of the same version wrote holds example A's bytes. A
//! revision in example B's bytes (a v1.34+ controller's) does not match: a new revision is
//! created, as upstream's controller would, and still no pod restarts, since the pods'
//! `pod-template-generation` is the DaemonSet's.

mod support;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSetStatus;
use serde_json::{Value, json};
use support::{Harness, nodes, uids};

/// The revision data upstream writes for the template below against a server that renders
/// `"creationTimestamp":null` (docs/spec/daemonset.md section 9, history's example A).
const EXAMPLE_A: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// The same template's revision data as a v1.34+ controller writes it (example B).
const EXAMPLE_B: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// The hash upstream named the revision after (whatever its `ComputeHash` gave: revisions are
/// matched by their data, not their name).
const UPSTREAM_HASH: &str = "6d8b5c9f7";

/// A controller reference to the DaemonSet `test` with `uid`, as upstream sets it.
fn owned_by(uid: &str) -> Value {
    json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "test", "uid": uid,
            "controller": true, "blockOwnerDeletion": true}])
}

/// A daemon pod as upstream's controller creates it for `node`, bound there by the scheduler.
fn upstream_pod(node: &str, owner: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "generateName": "test-",
            "labels": {"app": "foo", "controller-revision-hash": UPSTREAM_HASH,
                       "pod-template-generation": "1"},
            "annotations": {"test": "value"}
        },
        "spec": {
            "containers": [{"name": "test", "image": "test"}],
            "nodeName": node,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
                {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
            ]
        }
    });
    if let Some(uid) = owner {
        pod["metadata"]["ownerReferences"] = owned_by(uid);
    }
    pod
}

/// Builds the scene upstream left: the DaemonSet, its revision holding `data` (owned or
/// orphaned) and one pod per node (the first owned, the second an orphan when `orphans`).
/// Returns the pods' UIDs by name.
async fn build_scene(harness: &Harness, data: &str, orphans: bool) -> BTreeMap<String, String> {
    let ds = harness
        .create_raw(
            "/apis/apps/v1/namespaces/default/daemonsets",
            &json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "test"},
                "spec": {
                    "selector": {"matchLabels": {"app": "foo"}},
                    "template": {
                        "metadata": {"labels": {"app": "foo"}, "annotations": {"test": "value"}},
                        "spec": {"containers": [{"name": "test", "image": "test"}]}
                    }
                }
            })
            .to_string(),
        )
        .await;
    let uid = ds["metadata"]["uid"].as_str().expect("uid").to_owned();
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        json!("1")
    );
    let mut revision_metadata = json!({
        "name": format!("test-{UPSTREAM_HASH}"),
        "labels": {"app": "foo", "controller-revision-hash": UPSTREAM_HASH},
        "annotations": {"deprecated.daemonset.template.generation": "1"}
    });
    if !orphans {
        revision_metadata["ownerReferences"] = owned_by(&uid);
    }
    // The data goes in as upstream's bytes, spliced in unparsed.
    let revision = format!(
        r#"{{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{revision_metadata},"data":{data},"revision":1}}"#
    );
    harness
        .create_raw(
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            &revision,
        )
        .await;
    let second_owner = (!orphans).then_some(uid.as_str());
    for (node, owner) in [
        ("sim-node-0", Some(uid.as_str())),
        ("sim-node-1", second_owner),
    ] {
        harness
            .create_raw(
                "/api/v1/namespaces/default/pods",
                &upstream_pod(node, owner).to_string(),
            )
            .await;
    }
    let pods = sim::testing::eventually("the pods running", support::WAIT, || async {
        let pods = harness.pods_labelled("foo").await;
        (pods.len() == 2 && pods.iter().all(support::is_ready)).then_some(pods)
    })
    .await;
    uids(&pods)
}

/// Builds the scene with the revision `data` ([`build_scene`]), starts the controller on it
/// and waits until it settles with every pod it found still running (none restarted); returns
/// the harness and the settled status.
async fn settle_on_scene(data: &str, orphans: bool) -> (Harness, DaemonSetStatus) {
    let mut harness = Harness::without_controller(nodes(2)).await;
    let before = build_scene(&harness, data, orphans).await;
    harness.start_controller();
    let status = harness.wait_for_settled("test", 2).await;
    assert_eq!(
        uids(&harness.pods_labelled("foo").await),
        before,
        "no pod restarted"
    );
    (harness, status)
}

/// Starts the controller on the scene and checks that it settles with no pod or revision
/// written but the adoptions of the orphans.
async fn take_over(orphans: bool) {
    let (harness, status) = settle_on_scene(EXAMPLE_A, orphans).await;
    assert_eq!(status.observed_generation, Some(1));
    let requests = |verb: &str, resource: &str| harness.controller_requests(verb, resource);
    assert_eq!(requests("create", "pods"), 0);
    assert_eq!(requests("delete", "pods"), 0);
    assert_eq!(requests("create", "controllerrevisions"), 0);
    assert_eq!(requests("update", "controllerrevisions"), 0);
    assert_eq!(requests("delete", "controllerrevisions"), 0);
    let adoptions = u64::from(orphans);
    assert_eq!(
        requests("patch", "pods"),
        adoptions,
        "only orphans are adopted"
    );
    assert_eq!(requests("patch", "controllerrevisions"), adoptions);
    let revisions = harness.revisions_of("test").await;
    assert_eq!(revisions.len(), 1, "upstream's revision is the current one");
    assert_eq!(
        revisions[0].metadata.name.as_deref(),
        Some(format!("test-{UPSTREAM_HASH}").as_str())
    );
    for pod in harness.pods_labelled("foo").await {
        assert_eq!(
            sim::testing::controller_uid(&pod.metadata),
            harness
                .daemon_sets()
                .get("test")
                .await
                .expect("ds")
                .metadata
                .uid,
            "every pod is the DaemonSet's"
        );
    }
    harness.stop().await;
}

#[tokio::test]
async fn takes_over_upstreams_revision_and_pods_without_restarting() {
    take_over(false).await;
}

#[tokio::test]
async fn adopts_orphaned_revision_and_pods_without_restarting() {
    take_over(true).await;
}

#[tokio::test]
async fn a_revision_of_a_newer_serialization_restarts_nothing() {
    let (harness, status) = settle_on_scene(EXAMPLE_B, false).await;
    assert_eq!(
        status.updated_number_scheduled,
        Some(2),
        "updated by generation"
    );
    let requests = |verb: &str, resource: &str| harness.controller_requests(verb, resource);
    assert_eq!(requests("create", "controllerrevisions"), 1);
    assert_eq!(
        requests("create", "pods") + requests("delete", "pods") + requests("patch", "pods"),
        0
    );
    let revisions = harness.revisions_of("test").await;
    let numbered: Vec<(Option<String>, i64)> = revisions
        .iter()
        .map(|revision| (revision.metadata.name.clone(), revision.revision))
        .collect();
    assert_eq!(numbered.len(), 2, "{numbered:?}");
    assert_eq!(
        numbered[0],
        (Some(format!("test-{UPSTREAM_HASH}")), 1),
        "kept: its pods still carry its hash"
    );
    assert_eq!(numbered[1].1, 2);
    harness.stop().await;
}

/// Two revisions hold the current data (one named after upstream's hash, one after another):
/// the higher-numbered is kept, every pod relabelled with its hash by a JSON merge patch, the
/// other deleted (`dedupCurHistories`); no pod restarts.
#[tokio::test]
async fn duplicate_current_revisions_are_merged_into_the_newest() {
    let mut harness = Harness::without_controller(nodes(2)).await;
    let before = build_scene(&harness, EXAMPLE_A, false).await;
    let owner = harness
        .daemon_sets()
        .get("test")
        .await
        .expect("ds")
        .metadata
        .uid
        .expect("uid");
    let duplicate_hash = "5f9c8d7b6";
    let duplicate = format!(
        r#"{{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{{"name":"test-{duplicate_hash}","labels":{{"app":"foo","controller-revision-hash":"{duplicate_hash}"}},"ownerReferences":{}}},"data":{EXAMPLE_A},"revision":2}}"#,
        owned_by(&owner)
    );
    harness
        .create_raw(
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            &duplicate,
        )
        .await;
    harness.start_controller();
    harness.wait_for_settled("test", 2).await;
    let revisions = sim::testing::eventually("one revision left", support::WAIT, || async {
        let revisions = harness.revisions_of("test").await;
        (revisions.len() == 1).then_some(revisions)
    })
    .await;
    assert_eq!(
        revisions[0].metadata.name.as_deref(),
        Some(format!("test-{duplicate_hash}").as_str())
    );
    let pods = harness.pods_labelled("foo").await;
    assert_eq!(uids(&pods), before, "no pod restarted");
    for pod in &pods {
        assert_eq!(
            support::label(pod, "controller-revision-hash").as_deref(),
            Some(duplicate_hash),
            "relabelled"
        );
    }
    let requests = |verb: &str, resource: &str| harness.controller_requests(verb, resource);
    // One merge patch per pod and one delete; a sync that runs before the deletion's watch
    // event may repeat them, as upstream's would.
    assert!(requests("patch", "pods") >= 2, "a merge patch per pod");
    assert!(requests("delete", "controllerrevisions") >= 1);
    assert_eq!(requests("create", "pods") + requests("delete", "pods"), 0);
    harness.stop().await;
}
