//! Shared helpers of the integration tests: starting a cluster and building objects.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use sim::{KubeletConfig, SimCluster, SimConfig};

/// A cluster with the default configuration.
pub async fn cluster() -> SimCluster {
    SimCluster::start(SimConfig::default())
        .await
        .expect("sim starts")
}

/// A cluster without the kubelet (pods stay Pending and unscheduled).
pub async fn cluster_without_kubelet() -> SimCluster {
    let config = SimConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    };
    SimCluster::start(config).await.expect("sim starts")
}

/// A minimal valid pod.
pub fn pod(name: &str, labels: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    }))
    .expect("valid pod")
}

/// A minimal valid Deployment selecting `app=<name>`.
pub fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}
    }))
    .expect("valid deployment")
}

/// Polls `check` every 10 ms until it returns Some, or panics after 5 s.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The API error status of a failed call (panics on other errors).
pub fn api_error(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other}"),
    }
}
