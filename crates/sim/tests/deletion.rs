//! Deletion semantics: graceful pod deletion, finalizers, preconditions, deletecollection,
//! and the garbage collector's cascade for each propagation policy.

mod common;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, Preconditions};
use serde_json::json;
use sim::{KubeletConfig, SimCluster, SimConfig};

async fn cluster_with_deletion_delay(delay: Duration) -> SimCluster {
    let kubelet = KubeletConfig {
        deletion_delay: delay,
        ..KubeletConfig::default()
    };
    common::cluster_with_kubelet(kubelet).await
}

async fn running_pod(pods: &Api<Pod>, name: &str) -> Pod {
    common::create(pods, &common::pod(name, json!({}))).await;
    common::eventually("pod running", || async {
        pods.get(name)
            .await
            .ok()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
    })
    .await
}

#[tokio::test]
async fn graceful_pod_deletion_waits_for_the_kubelet() {
    let cluster = cluster_with_deletion_delay(Duration::from_millis(300)).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    running_pod(&pods, "p").await;
    let deleted = pods.delete("p", &DeleteParams::default()).await.unwrap();
    let pod = deleted
        .left()
        .expect("the pod is returned while it terminates");
    assert!(pod.metadata.deletion_timestamp.is_some());
    assert_eq!(pod.metadata.deletion_grace_period_seconds, Some(30));
    assert!(common::exists(&pods, "p").await, "still there during grace");
    common::eventually("pod gone", || async {
        (!common::exists(&pods, "p").await).then_some(())
    })
    .await;
}

#[tokio::test]
async fn zero_grace_deletion_is_immediate_and_unscheduled_pods_go_at_once() {
    let cluster = cluster_with_deletion_delay(Duration::from_secs(60)).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    running_pod(&pods, "p").await;
    common::delete(&pods, "p", &DeleteParams::default()).await;
    assert!(common::exists(&pods, "p").await);
    pods.delete(
        "p",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    assert!(
        !common::exists(&pods, "p").await,
        "a 0-grace delete finishes a terminating pod"
    );

    let (_no_kubelet, pods) = common::quiet_api::<Pod>().await;
    common::create(&pods, &common::pod("pending", json!({}))).await;
    common::delete(&pods, "pending", &DeleteParams::default()).await;
    assert!(
        !common::exists(&pods, "pending").await,
        "unscheduled pods need no grace"
    );
}

#[tokio::test]
async fn finalizers_hold_objects_until_cleared() {
    let (_cluster, deployments) = common::quiet_api::<Deployment>().await;
    let mut d = common::deployment("web", 1);
    d.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    common::create(&deployments, &d).await;
    common::delete(&deployments, "web", &DeleteParams::default()).await;
    let held = deployments.get("web").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert_eq!(
        held.metadata.generation,
        Some(2),
        "setting deletionTimestamp bumps generation"
    );
    common::patch(
        &deployments,
        "web",
        Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await;
    assert!(!common::exists(&deployments, "web").await);
}

#[tokio::test]
async fn delete_preconditions() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    let p = common::create(&pods, &common::pod("p", json!({}))).await;
    let wrong_uid = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("nope".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let status = common::api_error(pods.delete("p", &wrong_uid).await.unwrap_err());
    assert_eq!(status.code, 409);
    assert!(
        status
            .message
            .contains("Precondition failed: UID in precondition: nope"),
        "{}",
        status.message
    );
    let wrong_rv = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        common::api_error(pods.delete("p", &wrong_rv).await.unwrap_err()).code,
        409
    );
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: p.metadata.uid.clone(),
            resource_version: p.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    common::delete(&pods, "p", &right).await;
    assert!(!common::exists(&pods, "p").await);
}

#[tokio::test]
async fn delete_collection_by_label() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        common::create(&pods, &common::pod(name, json!({"app": app}))).await;
    }
    let deleted = pods
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=web"),
        )
        .await
        .unwrap();
    let names: Vec<String> = deleted
        .left()
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    let left: Vec<String> = common::list_names(&pods, &ListParams::default()).await;
    assert_eq!(left, vec!["c"]);
    assert_eq!(cluster.accounting().count("deletecollection", "pods"), 1);
}

/// A Deployment owning a ReplicaSet owning two pods, as the controllers would build them.
async fn owner_chain(cluster: &SimCluster) -> (Api<Deployment>, Api<ReplicaSet>, Api<Pod>) {
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let replicasets: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let d = common::create(&deployments, &common::deployment("web", 2)).await;
    let owner = |kind: &str, name: &str, uid: &str| json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]);
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "web-1", "labels": {"app": "web"}, "ownerReferences": owner("Deployment", "web", d.metadata.uid.as_deref().unwrap())},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    let rs = common::create(&replicasets, &rs).await;
    for name in ["web-1-a", "web-1-b"] {
        let mut pod = common::pod(name, json!({"app": "web"}));
        pod.metadata.owner_references = serde_json::from_value(owner(
            "ReplicaSet",
            "web-1",
            rs.metadata.uid.as_deref().unwrap(),
        ))
        .unwrap();
        common::create(&pods, &pod).await;
    }
    (deployments, replicasets, pods)
}

async fn count<K>(api: &Api<K>) -> usize
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default()).await.unwrap().items.len()
}

/// Polls every 20 ms until `api` lists nothing, failing 10 s after `since`.
async fn wait_until_collected<K>(api: &Api<K>, since: Instant)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    while count(api).await > 0 {
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "{} collected",
            std::any::type_name::<K>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn background_cascade_deletes_dependents() {
    let cluster = common::cluster_without_kubelet().await;
    let (deployments, replicasets, pods) = owner_chain(&cluster).await;
    common::delete(&deployments, "web", &DeleteParams::background()).await;
    assert!(
        !common::exists(&deployments, "web").await,
        "owner goes first"
    );
    assert_eq!(count(&replicasets).await, 0);
    assert_eq!(count(&pods).await, 0);
}

#[tokio::test]
async fn a_gc_delay_collects_each_level_after_its_owner() {
    let gc_delay = Duration::from_millis(500);
    let cluster = common::cluster_with(SimConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..KubeletConfig::default()
        },
        gc_delay,
        ..SimConfig::default()
    })
    .await;
    let (deployments, replicasets, pods) = owner_chain(&cluster).await;
    let deleted = Instant::now();
    common::delete(&deployments, "web", &DeleteParams::background()).await;
    assert!(!common::exists(&deployments, "web").await);
    assert_eq!(
        count(&replicasets).await,
        1,
        "the collector has not acted yet"
    );
    wait_until_collected(&replicasets, deleted).await;
    assert!(deleted.elapsed() >= gc_delay);
    assert_eq!(
        count(&pods).await,
        2,
        "pods go one delay after their ReplicaSet"
    );
    wait_until_collected(&pods, deleted).await;
    assert!(deleted.elapsed() >= 2 * gc_delay);
}

#[tokio::test]
async fn background_is_the_default() {
    let cluster = common::cluster_without_kubelet().await;
    let (deployments, replicasets, pods) = owner_chain(&cluster).await;
    common::delete(&deployments, "web", &DeleteParams::default()).await;
    assert_eq!(count(&replicasets).await, 0);
    assert_eq!(count(&pods).await, 0);
}

#[tokio::test]
async fn orphan_keeps_dependents_without_the_owner_reference() {
    let cluster = common::cluster_without_kubelet().await;
    let (deployments, replicasets, pods) = owner_chain(&cluster).await;
    common::delete(&deployments, "web", &DeleteParams::orphan()).await;
    assert!(!common::exists(&deployments, "web").await);
    let rs = replicasets.get("web-1").await.unwrap();
    assert!(
        rs.metadata.owner_references.unwrap_or_default().is_empty(),
        "ownerReference removed"
    );
    assert_eq!(count(&pods).await, 2, "grandchildren untouched");
}

#[tokio::test]
async fn foreground_waits_for_blocking_dependents() {
    let cluster = cluster_with_deletion_delay(Duration::from_millis(300)).await;
    let (deployments, replicasets, pods) = owner_chain(&cluster).await;
    common::eventually("pods scheduled", || async {
        let list = pods.list(&ListParams::default()).await.unwrap();
        list.items
            .iter()
            .all(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .then_some(())
    })
    .await;
    common::delete(&deployments, "web", &DeleteParams::foreground()).await;
    let d = deployments.get("web").await.unwrap();
    assert!(d.metadata.deletion_timestamp.is_some());
    assert_eq!(
        d.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    let rs = replicasets.get("web-1").await.unwrap();
    assert_eq!(
        rs.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()]),
        "cascades in foreground"
    );
    // Pods terminate gracefully (300 ms); then the ReplicaSet, then the Deployment go.
    common::eventually("all gone", || async {
        (!common::exists(&deployments, "web").await
            && count(&replicasets).await == 0
            && count(&pods).await == 0)
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn dependents_with_another_live_owner_survive() {
    let cluster = common::cluster_without_kubelet().await;
    let (deployments, replicasets, _pods) = owner_chain(&cluster).await;
    let other = common::create(&deployments, &common::deployment("other", 1)).await;
    let extra = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "other", "uid": other.metadata.uid.unwrap()});
    common::patch(
        &replicasets,
        "web-1",
        Patch::Strategic(json!({"metadata": {"ownerReferences": [extra]}})),
    )
    .await;
    common::delete(&deployments, "web", &DeleteParams::default()).await;
    let rs = replicasets.get("web-1").await.unwrap();
    let owners: Vec<String> = rs
        .metadata
        .owner_references
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(
        owners,
        vec!["other"],
        "dangling reference dropped, object kept"
    );
}

#[tokio::test]
async fn propagation_policy_in_query_string() {
    let cluster = common::cluster_without_kubelet().await;
    let (_deployments, replicasets, pods) = owner_chain(&cluster).await;
    let client = cluster.client();
    let req = http::Request::delete(
        "/apis/apps/v1/namespaces/default/deployments/web?propagationPolicy=Orphan",
    )
    .body(Vec::new())
    .unwrap();
    let _: serde_json::Value = client.request(req).await.unwrap();
    assert_eq!(count(&replicasets).await, 1);
    assert_eq!(count(&pods).await, 2);
}

#[tokio::test]
async fn a_dependent_created_after_its_owner_was_deleted_is_collected() {
    let (cluster, deployments) = common::quiet_api::<Deployment>().await;
    let replicasets: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let owner = common::create(&deployments, &common::deployment("gone", 1)).await;
    common::delete(&deployments, "gone", &DeleteParams::default()).await;
    // A controller with a stale cache creates a ReplicaSet for the deleted Deployment.
    let owned = |name: &str, uid: &str| -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name, "ownerReferences": [{"apiVersion": "apps/v1",
                "kind": "Deployment", "name": "gone", "uid": uid, "controller": true}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "gone"}},
                "template": {"metadata": {"labels": {"app": "gone"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}
        }))
        .unwrap()
    };
    let uid = owner.metadata.uid.unwrap();
    common::create(&replicasets, &owned("late", &uid)).await;
    assert!(
        !common::exists(&replicasets, "late").await,
        "dangling dependent kept"
    );
    // An owner uid that never existed is left alone.
    common::create(&replicasets, &owned("never", "no-such-uid")).await;
    assert!(common::exists(&replicasets, "never").await);
}
