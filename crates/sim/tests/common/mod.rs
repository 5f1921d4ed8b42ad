//! Shared helpers of the integration tests: starting a cluster and building objects.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};
use sim::{KubeletConfig, SimCluster, SimConfig};

/// A cluster with the default configuration.
pub async fn cluster() -> SimCluster {
    cluster_with(SimConfig::default()).await
}

/// A cluster without the kubelet (pods stay Pending and unscheduled).
pub async fn cluster_without_kubelet() -> SimCluster {
    cluster_with_kubelet(KubeletConfig {
        enabled: false,
        ..KubeletConfig::default()
    })
    .await
}

/// A cluster without the kubelet and the test client's `K`s in its `default` namespace: how
/// most tests start.
pub async fn quiet_api<K>() -> (SimCluster, Api<K>)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    let cluster = cluster_without_kubelet().await;
    let api = Api::namespaced(cluster.client(), "default");
    (cluster, api)
}

/// A cluster started with `config` (panics if it does not start).
pub async fn cluster_with(config: SimConfig) -> SimCluster {
    SimCluster::start(config).await.expect("sim starts")
}

/// A cluster whose kubelet runs with `kubelet`.
pub async fn cluster_with_kubelet(kubelet: KubeletConfig) -> SimCluster {
    cluster_with(SimConfig {
        kubelet,
        ..SimConfig::default()
    })
    .await
}

/// Creates `object` through `api` (panics on any error) and returns what the server stored.
pub async fn create<K>(api: &Api<K>, object: &K) -> K
where
    K: Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), object)
        .await
        .expect("create succeeds")
}

/// The API error status of a create that must fail.
pub async fn create_error<K>(api: &Api<K>, object: &K) -> kube::core::Status
where
    K: Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    api_error(
        api.create(&PostParams::default(), object)
            .await
            .expect_err("create fails"),
    )
}

/// Applies `patch` to `name` (panics on any error) and returns the patched object.
pub async fn patch<K>(api: &Api<K>, name: &str, patch: Patch<Value>) -> K
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &patch)
        .await
        .expect("patch applies")
}

/// Deletes `name` with `params` (panics on any error), whether it goes at once or terminates.
pub async fn delete<K>(api: &Api<K>, name: &str, params: &DeleteParams)
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, params).await.expect("delete succeeds");
}

/// Whether `api` gets an object named `name` (panics on any error but NotFound).
pub async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.expect("get succeeds").is_some()
}

/// The names of the objects `api` lists with `params`, in list order.
pub async fn list_names<K>(api: &Api<K>, params: &ListParams) -> Vec<String>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(params).await.expect("list succeeds");
    list.items
        .into_iter()
        .filter_map(|object| object.meta().name.clone())
        .collect()
}

/// The resourceVersion of a full list of `api`: the version a watch starts from.
pub async fn list_resource_version<K>(api: &Api<K>) -> String
where
    K: Clone + DeserializeOwned + std::fmt::Debug,
{
    let list = api
        .list(&ListParams::default())
        .await
        .expect("list succeeds");
    list.metadata
        .resource_version
        .expect("lists carry a resourceVersion")
}

/// The recorded v1.28 API server response `file` from the shared fixtures.
pub fn fixture(file: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/apiserver-v1.28/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
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
