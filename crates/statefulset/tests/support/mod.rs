//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) with the StatefulSet controller
//! running against it through a real client, plus builders and waits.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus},
    core::v1::{PersistentVolumeClaim, Pod},
};
use kube::Api;
use prometheus::proto::MetricFamily;
use serde_json::{Value, json};
use sim::{SimConfig, testing::TestCluster};
use statefulset::{
    BrokenRolloutRecovery, FeatureGates, StatefulSetController, StatefulSetMetrics,
    StatefulSetOptions,
};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = "statefulset-controller";

pub struct Harness {
    cluster: TestCluster,
    /// Where the controller's own gauges are registered.
    pub registry: prometheus::Registry,
}

impl Harness {
    /// A sim cluster and a controller following `gates`.
    pub async fn start_with_gates(config: SimConfig, gates: FeatureGates) -> Self {
        let mut harness = Self::without_controller(config).await;
        harness.start_controller_with_gates(gates);
        harness
    }

    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        Self {
            cluster: TestCluster::start(config).await,
            registry: prometheus::Registry::new(),
        }
    }

    pub fn start_controller(&mut self) {
        self.start_controller_with_gates(FeatureGates::default());
    }

    pub fn start_controller_with_gates(&mut self, gates: FeatureGates) {
        self.start_controller_with(gates, BrokenRolloutRecovery::default());
    }

    /// A sim cluster and a controller with the broken-rollout `recovery` options.
    pub async fn start_with_recovery(config: SimConfig, recovery: BrokenRolloutRecovery) -> Self {
        let mut harness = Self::without_controller(config).await;
        harness.start_controller_with(FeatureGates::default(), recovery);
        harness
    }

    pub fn start_controller_with(&mut self, gates: FeatureGates, recovery: BrokenRolloutRecovery) {
        let options = StatefulSetOptions {
            gauges: Some(StatefulSetMetrics::register(&self.registry).expect("gauges register")),
            gates,
            recovery,
            ..StatefulSetOptions::default()
        };
        StatefulSetController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    pub fn sets(&self) -> Api<StatefulSet> {
        self.api()
    }

    pub fn claims(&self) -> Api<PersistentVolumeClaim> {
        self.api()
    }

    pub fn revisions(&self) -> Api<ControllerRevision> {
        self.api()
    }

    /// A sim cluster and a controller, with the set `name` of `replicas` created (a
    /// [`stateful_set`] with `extra_spec`, its pod template without annotations): how most
    /// tests begin.
    pub async fn with_set(name: &str, replicas: i32, extra_spec: Value) -> Self {
        Self::with_set_in(SimConfig::default(), name, replicas, extra_spec).await
    }

    /// [`Harness::with_set`] on a sim started with `config`.
    pub async fn with_set_in(
        config: SimConfig,
        name: &str,
        replicas: i32,
        extra_spec: Value,
    ) -> Self {
        let harness = Self::start_with(config).await;
        harness
            .create_set(stateful_set(name, replicas, json!({}), extra_spec))
            .await;
        harness
    }

    /// A sim cluster and a controller, with `set` created.
    pub async fn with(set: Value) -> Self {
        let harness = Self::start().await;
        harness.create_set(set).await;
        harness
    }

    pub async fn create_set(&self, set: Value) -> StatefulSet {
        self.create(&serde_json::from_value(set).expect("valid StatefulSet"))
            .await
    }

    pub async fn patch_set(&self, name: &str, patch: Value) {
        self.merge_patch::<StatefulSet>(name, patch).await;
    }
}

// The harness is its cluster plus the crate's controllers: the cluster's helpers apply.
sim::cluster_harness!(Harness, start: without_controller then start_controller);

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

/// The metric family `family` as the registry gathers it now, if registered.
fn metric_family(harness: &Harness, family: &str) -> Option<MetricFamily> {
    harness
        .registry
        .gather()
        .into_iter()
        .find(|metrics| metrics.name() == family)
}

/// The value of gauge `family` for the set `name`, if reported.
pub fn gauge(harness: &Harness, family: &str, name: &str) -> Option<f64> {
    metric_family(harness, family)?
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

/// The value of the unlabelled counter `family`, 0 when not registered.
pub fn counter(harness: &Harness, family: &str) -> f64 {
    metric_family(harness, family)
        .and_then(|metrics| Some(metrics.get_metric().first()?.get_counter().value()))
        .unwrap_or(0.0)
}

pub fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

pub fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

/// Waits until the set's status reports `replicas` pods, all ready and updated, for its
/// current generation, with the rolling update complete.
pub async fn wait_for_settled(harness: &Harness, name: &str, replicas: i32) -> StatefulSet {
    let what = format!("{name} settled at {replicas}");
    harness
        .wait_for(name, &what, Duration::from_secs(20), |set: StatefulSet| {
            let status = set.status.as_ref()?;
            let settled = status.replicas == replicas
                && status.ready_replicas.unwrap_or(0) == replicas
                && status.updated_replicas.unwrap_or(0) == replicas
                && status.current_replicas.unwrap_or(0) == replicas
                && status.current_revision == status.update_revision
                && status.observed_generation == set.metadata.generation;
            settled.then_some(set)
        })
        .await
}

/// Waits (up to 10 s) until the status of the set `name` passes `check`, and returns it.
pub async fn wait_for_status(
    harness: &Harness,
    name: &str,
    what: &str,
    check: impl Fn(&StatefulSetStatus) -> bool,
) -> StatefulSetStatus {
    harness
        .wait_for(name, what, Duration::from_secs(10), |set: StatefulSet| {
            set.status.filter(|status| check(status))
        })
        .await
}

/// Sets the set's `spec.replicas` and waits until it settles there.
pub async fn scale_until_settled(harness: &Harness, name: &str, replicas: i32) -> StatefulSet {
    harness
        .patch_set(name, json!({"spec": {"replicas": replicas}}))
        .await;
    wait_for_settled(harness, name, replicas).await
}

/// Waits until the set's status names an update revision other than `other_than` (after a
/// template change), and returns it.
pub async fn new_update_revision(harness: &Harness, name: &str, other_than: &str) -> String {
    let what = "a new update revision";
    harness
        .wait_for(name, what, Duration::from_secs(10), |set: StatefulSet| {
            let revision = set.status?.update_revision?;
            (revision != other_than).then_some(revision)
        })
        .await
}
