//! Test harness: a sim cluster with the ReplicaSet controller running against it through a real
//! client, plus polling helpers.

#![allow(dead_code)]

use std::{future::Future, time::Duration};

use controller_toolkit::stale_reads::StaleSyncSkips;
use informer::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
use kube::{
    Api, Client,
    api::{ListParams, PostParams},
};
use prometheus::Registry;
use replicaset::{ControllerMetrics, ReplicaSetController};
use serde_json::json;
use sim::{SimCluster, SimConfig};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = "replicaset-controller";

pub struct Harness {
    pub sim: SimCluster,
    pub client: Client,
    shutdown: CancellationToken,
    controller: Option<JoinHandle<()>>,
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_with(SimConfig::default()).await
    }

    pub async fn start_with(config: SimConfig) -> Self {
        let mut harness = Self::without_controller(config).await;
        harness.start_controller();
        harness
    }

    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        let sim = SimCluster::start(config).await.expect("sim starts");
        let client = sim.client();
        Self {
            sim,
            client,
            shutdown: CancellationToken::new(),
            controller: None,
        }
    }

    pub fn start_controller(&mut self) {
        let controller_client = self.sim.client_with_user_agent(CONTROLLER_AGENT);
        let informers =
            SharedInformerFactory::new(controller_client.clone(), FactoryConfig::default());
        let controller =
            ReplicaSetController::new(controller_client, &informers, ControllerMetrics::default())
                .expect("controller builds");
        informers.start(self.shutdown.clone());
        self.controller = Some(tokio::spawn(controller.run(2, self.shutdown.clone())));
    }

    /// Starts the controller with its workqueue, sync and stale-sync-skip metrics in `registry`.
    pub fn start_controller_with(&mut self, registry: &Registry) {
        let controller_client = self.sim.client_with_user_agent(CONTROLLER_AGENT);
        let informers =
            SharedInformerFactory::new(controller_client.clone(), FactoryConfig::default());
        let metrics = ControllerMetrics::register(registry).expect("metrics");
        let skips =
            StaleSyncSkips::register(registry, "replicaset_controller").expect("skips metric");
        let controller = ReplicaSetController::new(controller_client, &informers, metrics)
            .expect("controller builds")
            .with_stale_sync_skips(skips);
        informers.start(self.shutdown.clone());
        self.controller = Some(tokio::spawn(controller.run(2, self.shutdown.clone())));
    }

    pub fn replica_sets(&self) -> Api<ReplicaSet> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub async fn create_replica_set(&self, name: &str, replicas: i32) -> ReplicaSet {
        self.replica_sets()
            .create(&PostParams::default(), &replica_set(name, replicas))
            .await
            .expect("create ReplicaSet")
    }

    /// Active (not terminating, not finished) pods labelled `app=<name>`.
    pub async fn active_pods(&self, name: &str) -> Vec<Pod> {
        self.pods()
            .list(&ListParams::default().labels(&format!("app={name}")))
            .await
            .expect("list pods")
            .items
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter(|pod| {
                let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
                phase != Some("Succeeded") && phase != Some("Failed")
            })
            .collect()
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        if let Some(controller) = self.controller {
            let _ = controller.await;
        }
        self.sim.shutdown().await;
    }
}

/// Limits the `default` namespace to `pods` unfinished pods (the sim's quota admission).
pub async fn set_pod_quota(harness: &Harness, pods: u32) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(harness.client.clone());
    namespaces
        .patch(
            "default",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"annotations": {sim::POD_QUOTA: pods.to_string()}}}),
            ),
        )
        .await
        .expect("set quota");
}

/// A ReplicaSet selecting `app=<name>` with a one-container template.
pub fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
            }
        }
    }))
    .expect("valid ReplicaSet")
}

/// An orphan pod with the given labels and annotations.
pub fn orphan_pod(name: &str, labels: serde_json::Value, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
    }))
    .expect("valid pod")
}

/// Polls `check` every 50 ms until it returns `Some`, failing the test after `timeout`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the ReplicaSet's status reports `replicas` pods, all ready and available,
/// for its current generation.
pub async fn wait_for_settled_status(harness: &Harness, name: &str, replicas: i32) -> ReplicaSet {
    let api = harness.replica_sets();
    eventually(
        &format!("{name} settled at {replicas}"),
        Duration::from_secs(20),
        || {
            let api = api.clone();
            async move {
                let rs = api.get(name).await.ok()?;
                let status = rs.status.as_ref()?;
                let settled = status.replicas == replicas
                    && status.ready_replicas.unwrap_or(0) == replicas
                    && status.available_replicas.unwrap_or(0) == replicas
                    && status.fully_labeled_replicas.unwrap_or(0) == replicas
                    && status.observed_generation == rs.metadata.generation;
                settled.then_some(rs)
            }
        },
    )
    .await
}
