//! Takeover against the sim: a Deployment, its ReplicaSet and pods created as upstream wrote
//! them (v1.28 fixtures captured from a real API server, server-set fields stripped and owner
//! UIDs re-pointed) cause no write but the Deployment status when the controller starts.

mod support;

use std::time::Duration;

use k8s_openapi::{
    List,
    api::{
        apps::v1::{Deployment, ReplicaSet},
        core::v1::Pod,
    },
};
use kube::api::PostParams;
use serde_json::Value;
use sim::testing::eventually;
use support::{DEPLOYMENT_AGENT, Harness, condition};

/// Drops the fields the API server sets, so the object can be created again.
fn strip_server_fields(mut object: Value) -> Value {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
        ] {
            metadata.remove(field);
        }
    }
    if let Some(object) = object.as_object_mut() {
        object.remove("status");
    }
    object
}

fn set_owner_uid(object: &mut Value, uid: &str) {
    if let Some(owners) = object
        .pointer_mut("/metadata/ownerReferences")
        .and_then(Value::as_array_mut)
    {
        for owner in owners {
            owner["uid"] = Value::from(uid);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_objects_get_only_a_status_write() {
    let mut harness = Harness::start_without_deployment_controller().await;
    let params = PostParams::default();

    let fixture: Value =
        serde_json::from_str(include_str!("../fixtures/deployment.json")).expect("deployment");
    let upstream_status = fixture["status"].clone();
    let d: Deployment = serde_json::from_value(strip_server_fields(fixture)).expect("deployment");
    let mut created = harness
        .deployments()
        .create(&params, &d)
        .await
        .expect("create");
    // The status upstream left (mid-rollout, Progressing=ReplicaSetUpdated).
    created.status = Some(serde_json::from_value(upstream_status).expect("status"));
    let created = harness
        .deployments()
        .replace_status("web", &params, &created)
        .await
        .expect("status");
    let d_uid = created.metadata.uid.clone().expect("uid");

    let list: List<ReplicaSet> =
        serde_json::from_str(include_str!("../fixtures/replicaset-list.json")).expect("list");
    let mut rs = strip_server_fields(serde_json::to_value(&list.items[0]).expect("json"));
    set_owner_uid(&mut rs, &d_uid);
    let rs: ReplicaSet = serde_json::from_value(rs).expect("rs");
    let rs = harness
        .replica_sets()
        .create(&params, &rs)
        .await
        .expect("rs");
    let rs_name = rs.metadata.name.clone().expect("name");
    let rs_uid = rs.metadata.uid.clone().expect("uid");

    let pods: List<Pod> =
        serde_json::from_str(include_str!("../fixtures/pod-list.json")).expect("pods");
    for pod in pods.items.iter().filter(|pod| {
        pod.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "ReplicaSet" && o.name == rs_name)
    }) {
        let mut pod = strip_server_fields(serde_json::to_value(pod).expect("json"));
        set_owner_uid(&mut pod, &rs_uid);
        let pod: Pod = serde_json::from_value(pod).expect("pod");
        harness.pods().create(&params, &pod).await.expect("pod");
    }
    // The ReplicaSet controller settles its status first.
    eventually("ReplicaSet available", Duration::from_secs(20), || async {
        let rs = harness.replica_sets().get(&rs_name).await.ok()?;
        (rs.status?.available_replicas == Some(2)).then_some(())
    })
    .await;

    harness.start_deployment_controller();
    let d = harness.wait_complete("web").await;
    let progressing = condition(&d, "Progressing").expect("Progressing");
    assert_eq!(
        progressing.message.as_deref(),
        Some("ReplicaSet \"web-896bb5df7\" has successfully progressed.")
    );
    // Give stray writes time to show up.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let writes: Vec<(String, String, u64)> = harness
        .sim
        .accounting()
        .entries()
        .into_iter()
        .filter(|((verb, _, agent), _)| {
            agent.starts_with(DEPLOYMENT_AGENT)
                && !matches!(verb.as_str(), "get" | "list" | "watch")
        })
        .map(|((verb, resource, _), count)| (verb, resource, count))
        .collect();
    assert!(!writes.is_empty(), "the status was written");
    for (verb, resource, _) in &writes {
        assert_eq!(
            (verb.as_str(), resource.as_str()),
            ("update", "deployments/status"),
            "{writes:?}"
        );
    }
    let sets = harness.replica_sets_of("web").await;
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].metadata.uid.as_deref(), Some(rs_uid.as_str()));
    harness.stop().await;
}
