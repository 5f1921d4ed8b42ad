//! Test harness: a sim cluster with the StatefulSet controller running against it through a
//! real client, plus builders and polling helpers.

#![allow(dead_code)]

use std::{future::Future, time::Duration};

use informer::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, StatefulSet},
    core::v1::{PersistentVolumeClaim, Pod},
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use sim::{SimCluster, SimConfig};
use statefulset::{ControllerMetrics, FeatureGates, StatefulSetController, StatefulSetMetrics};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = "statefulset-controller";

pub struct Harness {
    pub sim: SimCluster,
    pub client: Client,
    /// Where the controller's own gauges are registered.
    pub registry: prometheus::Registry,
    shutdown: CancellationToken,
    controller: Option<JoinHandle<()>>,
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_with(SimConfig::default()).await
    }

    pub async fn start_with(config: SimConfig) -> Self {
        Self::start_with_gates(config, FeatureGates::default()).await
    }

    /// A sim cluster and a controller following `gates`.
    pub async fn start_with_gates(config: SimConfig, gates: FeatureGates) -> Self {
        let mut harness = Self::without_controller(config).await;
        harness.start_controller_with_gates(gates);
        harness
    }

    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        let sim = SimCluster::start(config).await.expect("sim starts");
        let client = sim.client();
        Self {
            sim,
            client,
            registry: prometheus::Registry::new(),
            shutdown: CancellationToken::new(),
            controller: None,
        }
    }

    pub fn start_controller(&mut self) {
        self.start_controller_with_gates(FeatureGates::default());
    }

    pub fn start_controller_with_gates(&mut self, gates: FeatureGates) {
        let controller_client = self.sim.client_with_user_agent(CONTROLLER_AGENT);
        let informers =
            SharedInformerFactory::new(controller_client.clone(), FactoryConfig::default());
        let controller =
            StatefulSetController::new(controller_client, &informers, ControllerMetrics::default())
                .expect("controller builds")
                .with_statefulset_metrics(
                    StatefulSetMetrics::register(&self.registry).expect("gauges register"),
                )
                .with_feature_gates(gates);
        informers.start(self.shutdown.clone());
        self.controller = Some(tokio::spawn(controller.run(2, self.shutdown.clone())));
    }

    pub fn sets(&self) -> Api<StatefulSet> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub fn claims(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub fn revisions(&self) -> Api<ControllerRevision> {
        Api::namespaced(self.client.clone(), "default")
    }

    pub async fn create_set(&self, set: Value) -> StatefulSet {
        let set: StatefulSet = serde_json::from_value(set).expect("valid StatefulSet");
        self.sets()
            .create(&PostParams::default(), &set)
            .await
            .expect("create StatefulSet")
    }

    pub async fn patch_set(&self, name: &str, patch: Value) {
        self.sets()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("patch StatefulSet");
    }

    /// Pods labelled `app=<name>`, sorted by name.
    pub async fn pods_of(&self, name: &str) -> Vec<Pod> {
        let mut pods = self
            .pods()
            .list(&ListParams::default().labels(&format!("app={name}")))
            .await
            .expect("list pods")
            .items;
        pods.sort_by_key(|pod| pod.metadata.name.clone());
        pods
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        if let Some(controller) = self.controller {
            let _ = controller.await;
        }
        self.sim.shutdown().await;
    }
}

/// A StatefulSet selecting `app=<name>`; `extra_spec` is merged into the spec and
/// `annotations` onto the pod template.
pub fn stateful_set(name: &str, replicas: i32, annotations: Value, extra_spec: Value) -> Value {
    let mut set = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
            }
        }
    });
    if let (Some(spec), Some(extra)) = (set["spec"].as_object_mut(), extra_spec.as_object()) {
        for (key, value) in extra {
            spec.insert(key.clone(), value.clone());
        }
    }
    set
}

/// The value of gauge `family` for the set `name`, if reported.
pub fn gauge(harness: &Harness, family: &str, name: &str) -> Option<f64> {
    harness
        .registry
        .gather()
        .into_iter()
        .find(|metrics| metrics.name() == family)?
        .get_metric()
        .iter()
        .find(|metric| {
            metric
                .get_label()
                .iter()
                .any(|label| label.name() == "statefulset_name" && label.value() == name)
        })
        .map(|metric| metric.get_gauge().value())
}

pub fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

pub fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// Pod present, not terminating and ready.
pub fn is_serving(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && is_ready(pod)
}

/// Polls `check` every 20 ms until it returns `Some`, failing the test after `timeout`.
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
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until the set's status reports `replicas` pods, all ready and updated, for its
/// current generation, with the rolling update complete.
pub async fn wait_for_settled(harness: &Harness, name: &str, replicas: i32) -> StatefulSet {
    let api = harness.sets();
    eventually(
        &format!("{name} settled at {replicas}"),
        Duration::from_secs(20),
        || {
            let api = api.clone();
            async move {
                let set = api.get(name).await.ok()?;
                let status = set.status.as_ref()?;
                let settled = status.replicas == replicas
                    && status.ready_replicas.unwrap_or(0) == replicas
                    && status.updated_replicas.unwrap_or(0) == replicas
                    && status.current_replicas.unwrap_or(0) == replicas
                    && status.current_revision == status.update_revision
                    && status.observed_generation == set.metadata.generation;
                settled.then_some(set)
            }
        },
    )
    .await
}
