//! The ReplicaSet controller against the sim cluster: scaling, ranking on scale-down, adoption,
//! release, replacement and minReadySeconds.

mod support;

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::ReplicaSet,
    core::v1::{Namespace, Pod},
};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use sim::testing::{controller_uid, eventually};
use support::{Harness, orphan_pod, wait_for_settled_status};

/// Starts the controller on a ReplicaSet `web` of `replicas`, waits for it to settle and
/// returns the name of one of its pods.
async fn settled_web_with_a_victim(replicas: i32) -> (Harness, String) {
    let harness = Harness::start().await;
    harness.create_replica_set("web", replicas).await;
    wait_for_settled_status(&harness, "web", replicas).await;
    let victim = harness.active_pods("web").await[0]
        .metadata
        .name
        .clone()
        .unwrap();
    (harness, victim)
}

/// The names of the active pods of `web`.
async fn active_pod_names(harness: &Harness) -> Vec<String> {
    harness
        .active_pods("web")
        .await
        .into_iter()
        .map(|pod| pod.metadata.name.unwrap())
        .collect()
}

/// Waits until `web` has `replicas` active pods again, none of them `victim`, and then for its
/// status to settle on them.
async fn wait_for_replacement(harness: &Harness, replicas: i32, victim: &str) {
    eventually(
        &format!("a replacement for {victim}"),
        Duration::from_secs(20),
        || async {
            let pods = harness.active_pods("web").await;
            (pods.len() == replicas as usize
                && pods
                    .iter()
                    .all(|pod| pod.metadata.name.as_deref() != Some(victim)))
            .then_some(())
        },
    )
    .await;
    wait_for_settled_status(harness, "web", replicas).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scales_zero_to_five_to_two_to_zero_with_exact_status() {
    let harness = Harness::start().await;
    let created = harness.create_replica_set("web", 0).await;
    let uid = created.metadata.uid.clone().unwrap();
    wait_for_settled_status(&harness, "web", 0).await;

    for replicas in [5, 2, 0] {
        harness.scale("web", replicas).await;
        let rs = wait_for_settled_status(&harness, "web", replicas).await;
        let pods = harness.active_pods("web").await;
        assert_eq!(pods.len(), replicas as usize);
        for pod in &pods {
            assert_eq!(controller_uid(&pod.metadata).as_deref(), Some(uid.as_str()));
            assert!(pod.metadata.name.as_deref().unwrap().starts_with("web-"));
        }
        let status = rs.status.unwrap();
        assert_eq!(status.conditions.unwrap_or_default(), vec![]);
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_a_matching_orphan_and_deletes_the_unready_pod_first() {
    let harness = Harness::start().await;
    harness.create_replica_set("web", 3).await;
    wait_for_settled_status(&harness, "web", 3).await;
    let ready_names = active_pod_names(&harness).await;

    // An orphan that matches the selector and never turns ready: adopting it makes four pods,
    // one too many, and the unready one must be the one deleted.
    harness
        .create(&orphan_pod(
            "stray",
            json!({"app": "web"}),
            json!({"sim.kcm-rs.io/never-ready": "true"}),
        ))
        .await;
    eventually(
        "the stray pod to be deleted",
        Duration::from_secs(20),
        || {
            let pods = harness.pods();
            async move { pods.get_opt("stray").await.ok()?.is_none().then_some(()) }
        },
    )
    .await;
    let remaining = active_pod_names(&harness).await;
    let mut expected = ready_names.clone();
    expected.sort();
    let mut remaining_sorted = remaining.clone();
    remaining_sorted.sort();
    assert_eq!(
        remaining_sorted, expected,
        "a ready pod was deleted instead"
    );
    wait_for_settled_status(&harness, "web", 3).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_orphans_instead_of_creating() {
    // The orphans exist before the controller starts, so its first sync sees them.
    let mut harness = Harness::without_controller(sim::SimConfig::default()).await;
    for name in ["orphan-a", "orphan-b"] {
        harness
            .create(&orphan_pod(name, json!({"app": "web"}), json!({})))
            .await;
    }
    let rs = harness.create_replica_set("web", 2).await;
    let uid = rs.metadata.uid.unwrap();
    harness.start_controller();
    wait_for_settled_status(&harness, "web", 2).await;
    let pods = harness.active_pods("web").await;
    let mut names: Vec<_> = pods
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["orphan-a", "orphan-b"]);
    for pod in &pods {
        assert_eq!(controller_uid(&pod.metadata).as_deref(), Some(uid.as_str()));
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
    assert_eq!(
        harness.requests_by(support::CONTROLLER_AGENT, "create", "pods"),
        0
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_a_relabelled_pod_and_replaces_it() {
    let (harness, victim) = settled_web_with_a_victim(2).await;
    harness
        .merge_patch::<Pod>(&victim, json!({"metadata": {"labels": {"app": "debug"}}}))
        .await;
    let what = "the relabelled pod to be released";
    harness
        .wait_for(&victim, what, Duration::from_secs(20), |pod: Pod| {
            controller_uid(&pod.metadata).is_none().then_some(())
        })
        .await;
    // The status may still read 2 from before the release was seen: wait for the replacement
    // itself, then for the status to settle on it.
    wait_for_replacement(&harness, 2, &victim).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaces_a_deleted_pod() {
    let (harness, victim) = settled_web_with_a_victim(3).await;
    harness
        .pods()
        .delete(&victim, &DeleteParams::default())
        .await
        .expect("delete pod");
    wait_for_replacement(&harness, 3, &victim).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_ready_seconds_holds_back_available_replicas() {
    let harness = Harness::start().await;
    let mut rs = support::replica_set("slow", 2);
    rs.spec.as_mut().unwrap().min_ready_seconds = Some(2);
    harness.create(&rs).await;
    let what = "ready but not yet available";
    harness
        .wait_for("slow", what, Duration::from_secs(20), |rs: ReplicaSet| {
            let status = rs.status?;
            (status.ready_replicas == Some(2) && status.available_replicas == Some(0)).then_some(())
        })
        .await;
    let started = std::time::Instant::now();
    wait_for_settled_status(&harness, "slow", 2).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "availability was not re-checked after minReadySeconds"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_naming_its_uid_from_another_namespace_name_or_kind_are_not_its_own() {
    // kubernetes#134654: an ownerReference matches only when namespace, kind, name and UID all
    // agree. These three pods carry the ReplicaSet's UID but name something else; before, the
    // controller counted them as its own (and would release or delete them).
    let mut harness = Harness::without_controller(sim::SimConfig::default()).await;
    let rs = harness.create_replica_set("web", 2).await;
    let uid = rs.metadata.uid.clone().unwrap();
    let impostor = |name: &str, namespace: &str, kind: &str, owner: &str| {
        let mut pod = orphan_pod(name, json!({"app": "web"}), json!({}));
        pod.metadata.namespace = Some(namespace.to_owned());
        pod.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "apps/v1".into(),
                kind: kind.into(),
                name: owner.into(),
                uid: uid.clone(),
                controller: Some(true),
                block_owner_deletion: None,
            },
        ]);
        pod
    };
    let client = harness.sim.client();
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "elsewhere"}})).unwrap(),
        )
        .await
        .expect("create namespace");
    let impostors = [
        impostor("other-namespace", "elsewhere", "ReplicaSet", "web"),
        impostor("other-name", "default", "ReplicaSet", "not-web"),
        impostor("other-kind", "default", "StatefulSet", "web"),
    ];
    for pod in &impostors {
        let namespace = pod.metadata.namespace.as_deref().unwrap();
        Api::<Pod>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), pod)
            .await
            .expect("create impostor");
    }
    harness.start_controller();

    // Two pods of its own, none of the impostors.
    let settled = wait_for_settled_status(&harness, "web", 2).await;
    let own: Vec<String> = harness
        .active_pods("web")
        .await
        .iter()
        .filter(|pod| pod.metadata.generate_name.as_deref() == Some("web-"))
        .map(|pod| pod.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(own.len(), 2, "{own:?}");
    assert_eq!(settled.status.unwrap().replicas, 2);

    // Scaling to zero deletes its own pods only; the impostors keep their references.
    harness.scale("web", 0).await;
    wait_for_settled_status(&harness, "web", 0).await;
    for pod in &impostors {
        let namespace = pod.metadata.namespace.as_deref().unwrap();
        let name = pod.metadata.name.as_deref().unwrap();
        let now = Api::<Pod>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .expect("impostor still exists");
        assert!(now.metadata.deletion_timestamp.is_none(), "{name}");
        assert_eq!(
            now.metadata.owner_references, pod.metadata.owner_references,
            "{name}"
        );
    }
    assert_eq!(
        harness.requests_by(support::CONTROLLER_AGENT, "patch", "pods"),
        0,
        "no pod was adopted or released"
    );
    harness.stop().await;
}
