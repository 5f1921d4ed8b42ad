//! Ownership against the sim: adopting orphan pods whose name fits the set (and only those),
//! adopting orphan revisions, releasing pods that stop matching, truncating revision history,
//! and upstream's events.

mod support;

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::ControllerRevision,
    core::v1::{Event, Pod},
};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use sim::{
    SimConfig,
    testing::{controller_uid, eventually},
};
use support::{
    Harness, name, scale_until_settled, stateful_set, wait_for_settled, wait_for_status,
};

fn orphan_pod(pod_name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": pod_name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    }))
    .unwrap()
}

/// A revision 1 without an owner, named `name` and labelled `app=<app>`, whose data is a
/// template labelled `app=<template_app>`.
fn unowned_revision(name: &str, app: &str, template_app: &str) -> ControllerRevision {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": template_app}}}}},
        "revision": 1
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_orphans_named_after_the_set_and_ignores_others() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    for pod_name in ["web-0", "stray"] {
        harness.create(&orphan_pod(pod_name)).await;
    }
    let orphan_uid = harness.pods().get("web-0").await.unwrap().metadata.uid;
    // OnDelete: an adopted pod without the revision label is outdated, and a rolling update
    // would replace it (as upstream); here it must stay.
    let set = harness
        .create_set(stateful_set(
            "web",
            2,
            json!({}),
            json!({"updateStrategy": {"type": "OnDelete"}}),
        ))
        .await;
    let set_uid = set.metadata.uid.clone();
    harness.start_controller();
    // The adopted pod keeps its (missing) revision label, so only web-1 counts as updated.
    wait_for_status(
        &harness,
        "web",
        "web-0 adopted and web-1 created",
        |status| status.ready_replicas == Some(2) && status.updated_replicas == Some(1),
    )
    .await;
    let adopted = harness.pods().get("web-0").await.unwrap();
    assert_eq!(adopted.metadata.uid, orphan_uid, "adopted, not recreated");
    assert_eq!(controller_uid(&adopted.metadata), set_uid);
    let labels = adopted.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("statefulset.kubernetes.io/pod-name")
            .map(String::as_str),
        Some("web-0"),
        "identity labels repaired in place"
    );
    let stray = harness.pods().get("stray").await.unwrap();
    assert_eq!(
        controller_uid(&stray.metadata),
        None,
        "a name without the set's ordinal is not adopted"
    );

    // A pod whose labels stop matching is released.
    harness
        .pods()
        .patch(
            "web-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "other"}}})),
        )
        .await
        .unwrap();
    eventually("web-1 released", Duration::from_secs(10), || async {
        let pods: Api<Pod> = harness.pods();
        let released = pods
            .list(&kube::api::ListParams::default().labels("app=other"))
            .await
            .ok()?;
        released
            .items
            .iter()
            .any(|pod| name(pod) == "web-1" && controller_uid(&pod.metadata).is_none())
            .then_some(())
    })
    .await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_orphan_revisions() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    let set = harness
        .create_set(stateful_set("web", 1, json!({}), json!({})))
        .await;
    harness
        .create(&unowned_revision("web-orphan", "web", "web"))
        .await;
    harness.start_controller();
    wait_for_settled(&harness, "web", 1).await;
    let adopted = harness
        .wait_for(
            "web-orphan",
            "orphan revision adopted",
            Duration::from_secs(10),
            |revision: ControllerRevision| controller_uid(&revision.metadata).map(|_| revision),
        )
        .await;
    assert_eq!(controller_uid(&adopted.metadata), set.metadata.uid);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revision_history_is_truncated_to_the_limit() {
    let harness = Harness::with_set("web", 1, json!({"revisionHistoryLimit": 1})).await;
    wait_for_settled(&harness, "web", 1).await;
    for image in ["nginx:1.26", "nginx:1.27", "nginx:1.28"] {
        harness
            .patch_set("web", json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}))
            .await;
        wait_for_settled(&harness, "web", 1).await;
    }
    let status = harness.sets().get("web").await.unwrap().status.unwrap();
    let expected_live = status.update_revision.clone().unwrap();
    // Live: the current (= update) revision; history: one more at most.
    let names = eventually("history truncated", Duration::from_secs(10), || async {
        let mut revisions = harness
            .revisions()
            .list(&Default::default())
            .await
            .ok()?
            .items;
        revisions.sort_by_key(|revision| revision.revision);
        let names: Vec<String> = revisions
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect();
        (names.len() == 2).then_some(names)
    })
    .await;
    assert_eq!(names.last(), Some(&expected_live));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_upstream_events_for_pod_creation_and_deletion() {
    let harness = Harness::with_set("web", 1, json!({})).await;
    wait_for_settled(&harness, "web", 1).await;
    scale_until_settled(&harness, "web", 0).await;
    let events: Api<Event> = Api::namespaced(harness.client.clone(), "default");
    let found = eventually(
        "create and delete events",
        Duration::from_secs(10),
        || async {
            let list = events.list(&Default::default()).await.ok()?;
            let messages: Vec<(String, String, String)> = list
                .items
                .into_iter()
                .filter(|event| event.involved_object.kind.as_deref() == Some("StatefulSet"))
                .map(|event| {
                    (
                        event.reason.unwrap_or_default(),
                        event.message.unwrap_or_default(),
                        event
                            .source
                            .and_then(|source| source.component)
                            .unwrap_or_default(),
                    )
                })
                .collect();
            (messages.len() >= 2).then_some(messages)
        },
    )
    .await;
    assert!(
        found.contains(&(
            "SuccessfulCreate".to_owned(),
            "create Pod web-0 in StatefulSet web successful".to_owned(),
            "statefulset-controller".to_owned()
        )),
        "{found:?}"
    );
    assert!(
        found.contains(&(
            "SuccessfulDelete".to_owned(),
            "delete Pod web-0 in StatefulSet web successful".to_owned(),
            "statefulset-controller".to_owned()
        )),
        "{found:?}"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_collision_bumps_the_collision_count() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    harness
        .create_set(stateful_set("web", 1, json!({}), json!({})))
        .await;
    // The name our first revision would get, computed from the set exactly as served.
    let request = http::Request::get("/apis/apps/v1/namespaces/default/statefulsets/web")
        .body(Vec::new())
        .unwrap();
    let raw: serde_json::Value = harness.client.request(request).await.unwrap();
    let proposal = history::new_statefulset_revision(&raw, 1, 0).unwrap();
    let taken = proposal.metadata.name.clone().unwrap();
    harness
        .create(&unowned_revision(&taken, "unrelated", "x"))
        .await;
    harness.start_controller();
    let status = wait_for_settled(&harness, "web", 1).await.status.unwrap();
    assert_eq!(status.collision_count, Some(1));
    let data = history::revision_data_bytes(&proposal).unwrap();
    let expected = format!("web-{}", history::hash_revision_data(&data, Some(1)));
    assert_eq!(status.update_revision.as_deref(), Some(expected.as_str()));
    harness.stop().await;
}
