//! Zero-restart takeover: a StatefulSet with a pod and a ControllerRevision written as
//! upstream writes them (the captured v1.28 objects, and the spec's examples A and B). Starting
//! the controller must create no revision and delete or create no pod.

mod support;

use std::time::Duration;

use k8s_openapi::api::{apps::v1::ControllerRevision, core::v1::Pod};
use serde_json::{Value, json};
use sim::{SimConfig, testing::eventually};
use support::{CONTROLLER_AGENT, Harness};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/fixtures/apiserver-v1.28"
);

/// Example A's data (serialization of v1.33 and earlier), history.md §8.
const EXAMPLE_A: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;
/// Example B's data (serialization of v1.34 and later).
const EXAMPLE_B: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

fn fixture(file: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{file}")).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Drops what the server assigns, so the object can be created again.
fn strip_server_fields(object: &mut Value) {
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            metadata.remove(field);
        }
    }
    if let Some(object) = object.as_object_mut() {
        object.remove("status");
    }
}

fn point_owner_at(object: &mut Value, uid: &str) {
    if let Some(owners) = object["metadata"]["ownerReferences"].as_array_mut() {
        for owner in owners {
            owner["uid"] = json!(uid);
        }
    }
}

/// Creates the scene: the set, its revision and pods owned by it, and the status upstream left.
async fn build_scene(
    harness: &Harness,
    mut set: Value,
    mut revision: Value,
    pods: Vec<Value>,
    revision_name: &str,
) {
    strip_server_fields(&mut set);
    let created = harness
        .create_raw(
            "/apis/apps/v1/namespaces/default/statefulsets",
            &set.to_string(),
        )
        .await;
    let uid = created["metadata"]["uid"].as_str().expect("uid").to_owned();
    let name = created["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();

    strip_server_fields(&mut revision);
    point_owner_at(&mut revision, &uid);
    harness
        .create_raw(
            "/apis/apps/v1/namespaces/default/controllerrevisions",
            &revision.to_string(),
        )
        .await;

    let replicas = pods.len();
    for mut pod in pods {
        strip_server_fields(&mut pod);
        point_owner_at(&mut pod, &uid);
        harness
            .create_raw("/api/v1/namespaces/default/pods", &pod.to_string())
            .await;
    }
    // The status upstream left behind.
    let mut stored: k8s_openapi::api::apps::v1::StatefulSet =
        harness.sets().get(&name).await.expect("get set");
    stored.status = Some(
        serde_json::from_value(json!({
            "observedGeneration": stored.metadata.generation,
            "replicas": replicas, "currentReplicas": replicas, "updatedReplicas": replicas,
            "currentRevision": revision_name, "updateRevision": revision_name, "collisionCount": 0
        }))
        .expect("status"),
    );
    harness
        .sets()
        .replace_status(&name, &Default::default(), &stored)
        .await
        .expect("write status");
}

/// Starts the controller and waits for it to have synced the set (it reports the pods ready),
/// then checks that nothing was restarted and no revision was created.
async fn assert_takeover_without_restart(
    mut harness: Harness,
    set_name: &str,
    revision_name: &str,
    replicas: i32,
) {
    let pod_uids = |pods: Vec<Pod>| -> Vec<Option<String>> {
        pods.into_iter().map(|pod| pod.metadata.uid).collect()
    };
    let pod_uids_before = pod_uids(harness.list().await);
    harness.start_controller();
    let status = eventually(
        "the controller reports the pods ready",
        Duration::from_secs(10),
        || async {
            let status = harness.sets().get(set_name).await.ok()?.status?;
            (status.ready_replicas == Some(replicas) && status.available_replicas == Some(replicas))
                .then_some(status)
        },
    )
    .await;
    // Let any further sync (the status write triggers one) happen.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(status.update_revision.as_deref(), Some(revision_name));
    assert_eq!(status.current_revision.as_deref(), Some(revision_name));
    let accounting = harness.sim.accounting();
    for (verb, resource) in [
        ("create", "controllerrevisions"),
        ("update", "controllerrevisions"),
        ("delete", "controllerrevisions"),
        ("create", "pods"),
        ("delete", "pods"),
        ("update", "pods"),
    ] {
        assert_eq!(
            accounting.count_for_agent(CONTROLLER_AGENT, verb, resource),
            0,
            "{verb} {resource}"
        );
    }
    assert_eq!(
        harness.names::<ControllerRevision>().await,
        vec![revision_name.to_owned()]
    );
    assert_eq!(pod_uids_before, pod_uids(harness.list().await));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_over_the_captured_v1_28_statefulset_without_restarting_it() {
    let harness = Harness::without_controller(SimConfig::default()).await;
    let revision = fixture("controllerrevision-list.json")["items"][0].clone();
    let pod = fixture("pod-list.json")["items"][0].clone();
    build_scene(
        &harness,
        fixture("statefulset.json"),
        revision,
        vec![pod],
        "web-86f8dd76c9",
    )
    .await;
    assert_takeover_without_restart(harness, "web", "web-86f8dd76c9", 1).await;
}

/// The A/B set: template labels `app=foo`, annotation `test=value`, container `test`/`test`.
fn example_set(with_null_creation_timestamp: bool) -> Value {
    let mut template_metadata = json!({"labels": {"app": "foo"}, "annotations": {"test": "value"}});
    if with_null_creation_timestamp {
        template_metadata["creationTimestamp"] = Value::Null;
    }
    json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "test", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "serviceName": "test",
            "selector": {"matchLabels": {"app": "foo"}},
            "template": {"metadata": template_metadata,
                         "spec": {"containers": [{"name": "test", "image": "test"}]}}
        }
    })
}

fn example_revision(data: &str, hash: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {
            "name": format!("test-{hash}"), "namespace": "default",
            "labels": {"app": "foo", "controller.kubernetes.io/hash": hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "test",
                                 "uid": "to-be-replaced", "controller": true, "blockOwnerDeletion": true}]
        },
        "data": serde_json::from_str::<Value>(data).expect("example data"),
        "revision": 1
    })
}

fn example_pods(revision_name: &str) -> Vec<Value> {
    (0..2)
        .map(|ordinal| {
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "name": format!("test-{ordinal}"), "generateName": "test-", "namespace": "default",
                    "labels": {"app": "foo", "controller-revision-hash": revision_name,
                               "statefulset.kubernetes.io/pod-name": format!("test-{ordinal}"),
                               "apps.kubernetes.io/pod-index": ordinal.to_string()},
                    "annotations": {"test": "value"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "test",
                                         "uid": "to-be-replaced", "controller": true, "blockOwnerDeletion": true}]
                },
                "spec": {"containers": [{"name": "test", "image": "test"}],
                         "hostname": format!("test-{ordinal}"), "subdomain": "test"}
            })
        })
        .collect()
}

/// Takes over the A/B set at the revision with `data` and `hash`, its template written with
/// and without a null `creationTimestamp` in the order of `with_null`.
async fn assert_example_takeover(data: &str, hash: &str, with_null: [bool; 2]) {
    let revision_name = format!("test-{hash}");
    for with_null in with_null {
        let harness = Harness::without_controller(SimConfig::default()).await;
        build_scene(
            &harness,
            example_set(with_null),
            example_revision(data, hash),
            example_pods(&revision_name),
            &revision_name,
        )
        .await;
        assert_takeover_without_restart(harness, "test", &revision_name, 2).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_over_a_pre_v1_34_revision_example_a_without_restarting() {
    assert_example_takeover(EXAMPLE_A, "c77f6d978", [true, false]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn takes_over_a_current_revision_example_b_without_restarting() {
    assert_example_takeover(EXAMPLE_B, "776999688b", [false, true]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_template_change_after_takeover_creates_one_revision() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    build_scene(
        &harness,
        example_set(true),
        example_revision(EXAMPLE_A, "c77f6d978"),
        example_pods("test-c77f6d978"),
        "test-c77f6d978",
    )
    .await;
    harness.start_controller();
    harness
        .patch_set("test", json!({"spec": {"template": {"spec": {"containers": [{"name": "test", "image": "test:v2"}]}}}}))
        .await;
    let status = support::wait_for_settled(&harness, "test", 2)
        .await
        .status
        .unwrap();
    assert_ne!(status.update_revision.as_deref(), Some("test-c77f6d978"));
    assert_eq!(
        harness.requests_by(CONTROLLER_AGENT, "create", "controllerrevisions"),
        1
    );
    harness.stop().await;
}
