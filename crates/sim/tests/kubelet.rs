//! The simulated kubelet: binding, Running/Ready with timestamps and statuses, the
//! configurable ready delay, and the steering annotations.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::json;
use sim::KubeletConfig;

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

async fn create_annotated(pods: &Api<Pod>, name: &str, annotations: serde_json::Value) {
    let mut pod = common::pod(name, json!({}));
    pod.metadata.annotations = serde_json::from_value(annotations).unwrap();
    common::create(pods, &pod).await;
}

#[tokio::test]
async fn pods_become_running_and_ready() {
    let cluster = common::cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    common::create(&pods, &common::pod("p", json!({}))).await;
    let pod = common::eventually("ready", || async {
        pods.get("p").await.ok().filter(is_ready)
    })
    .await;
    let spec = pod.spec.unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("sim-node"));
    let status = pod.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert!(status.pod_ip.is_some());
    assert!(status.start_time.is_some());
    let ready = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert!(ready.last_transition_time.is_some());
    let containers = status.container_statuses.unwrap();
    assert_eq!(containers.len(), 1);
    assert!(containers[0].ready);
    assert!(containers[0].state.as_ref().unwrap().running.is_some());
}

#[tokio::test]
async fn ready_delay_is_honoured() {
    let kubelet = KubeletConfig {
        ready_delay: Duration::from_millis(400),
        ..KubeletConfig::default()
    };
    let cluster = common::cluster_with_kubelet(kubelet).await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    common::create(&pods, &common::pod("p", json!({}))).await;
    let running = common::eventually("running", || async {
        pods.get("p").await.ok().filter(|p| phase(p) == "Running")
    })
    .await;
    assert!(!is_ready(&running), "not ready before the delay");
    common::eventually("ready", || async {
        pods.get("p").await.ok().filter(is_ready)
    })
    .await;
}

#[tokio::test]
async fn annotations_steer_the_kubelet() {
    let cluster = common::cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    create_annotated(&pods, "never", json!({sim::NEVER_READY: "true"})).await;
    create_annotated(&pods, "later", json!({sim::READY_AFTER_MS: "300"})).await;
    create_annotated(&pods, "fails", json!({sim::FAIL_AFTER_MS: "50"})).await;
    create_annotated(&pods, "succeeds", json!({sim::SUCCEED_AFTER_MS: "50"})).await;

    let failed = common::eventually("failed", || async {
        pods.get("fails")
            .await
            .ok()
            .filter(|p| phase(p) == "Failed")
    })
    .await;
    assert!(!is_ready(&failed));
    let terminated = failed.status.unwrap().container_statuses.unwrap()[0]
        .state
        .clone()
        .unwrap()
        .terminated
        .unwrap();
    assert_eq!(terminated.exit_code, 1);
    common::eventually("succeeded", || async {
        pods.get("succeeds")
            .await
            .ok()
            .filter(|p| phase(p) == "Succeeded")
    })
    .await;

    let later = pods.get("later").await.unwrap();
    assert_eq!(phase(&later), "Running");
    assert!(!is_ready(&later), "not ready before 300 ms");
    common::eventually("later ready", || async {
        pods.get("later").await.ok().filter(is_ready)
    })
    .await;

    let never = pods.get("never").await.unwrap();
    assert_eq!(phase(&never), "Running");
    assert!(!is_ready(&never));
}

#[tokio::test]
async fn a_disabled_kubelet_leaves_pods_pending() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    common::create(&pods, &common::pod("p", json!({}))).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pod = pods.get("p").await.unwrap();
    assert_eq!(phase(&pod), "Pending");
    assert!(pod.spec.unwrap().node_name.is_none());
}
