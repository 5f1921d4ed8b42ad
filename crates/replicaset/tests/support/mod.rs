//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) with the ReplicaSet controller
//! running against it through a real client, plus builders and waits.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::ReplicaSet,
    core::v1::{Namespace, Pod},
};
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use prometheus::Registry;
use replicaset::{ReplicaSetController, ReplicaSetOptions, RuntimeOptions, StatusWritesHeld};
use serde_json::json;
use sim::{
    SimConfig,
    testing::{TestCluster, is_active, workload},
};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = "replicaset-controller";

pub struct Harness {
    cluster: TestCluster,
}

impl Harness {
    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        Self {
            cluster: TestCluster::start(config).await,
        }
    }

    pub fn start_controller(&mut self) {
        self.start_controller_with_options(ReplicaSetOptions::default());
    }

    /// Starts the controller with its workqueue, sync and stale-sync-skip metrics in `registry`.
    pub fn start_controller_with(&mut self, registry: &Registry) {
        self.start_controller_with_hold(registry, ReplicaSetOptions::default().status_hold);
    }

    /// [`Harness::start_controller_with`], with `--replicaset-status-hold` at `hold`.
    pub fn start_controller_with_hold(&mut self, registry: &Registry, hold: Duration) {
        self.start_controller_with_options(ReplicaSetOptions {
            runtime: RuntimeOptions::registered(registry, "replicaset_controller")
                .expect("metrics register"),
            held_writes: Some(StatusWritesHeld::register(registry).expect("held metric registers")),
            status_hold: hold,
        });
    }

    /// Starts the controller with `--replicaset-status-hold` at `hold`.
    pub fn start_controller_holding_status(&mut self, hold: Duration) {
        self.start_controller_with_options(ReplicaSetOptions {
            status_hold: hold,
            ..ReplicaSetOptions::default()
        });
    }

    fn start_controller_with_options(&mut self, options: ReplicaSetOptions) {
        ReplicaSetController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    pub fn replica_sets(&self) -> Api<ReplicaSet> {
        self.api()
    }

    pub async fn create_replica_set(&self, name: &str, replicas: i32) -> ReplicaSet {
        self.create(&replica_set(name, replicas)).await
    }

    /// Sets the ReplicaSet's `spec.replicas`.
    pub async fn scale(&self, name: &str, replicas: i32) {
        self.merge_patch::<ReplicaSet>(name, json!({"spec": {"replicas": replicas}}))
            .await;
    }

    /// Active (not terminating, not finished) pods labelled `app=<name>`, sorted by name.
    pub async fn active_pods(&self, name: &str) -> Vec<Pod> {
        let mut pods = self.pods_labelled(name).await;
        pods.retain(is_active);
        pods
    }
}

// The harness is its cluster plus the crate's controllers: the cluster's helpers apply.
sim::cluster_harness!(Harness, start: without_controller then start_controller);

/// Limits the `default` namespace to `pods` unfinished pods (the sim's quota admission).
pub async fn set_pod_quota(harness: &Harness, pods: u32) {
    Api::<Namespace>::all(harness.client.clone())
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {sim::POD_QUOTA: pods.to_string()}}})),
        )
        .await
        .expect("set quota");
}

/// A ReplicaSet selecting `app=<name>` with a one-container template.
pub fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(workload("ReplicaSet", name, replicas)).expect("valid ReplicaSet")
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

/// Waits until the ReplicaSet's status reports `replicas` pods, all ready and available,
/// for its current generation.
pub async fn wait_for_settled_status(harness: &Harness, name: &str, replicas: i32) -> ReplicaSet {
    let what = format!("{name} settled at {replicas}");
    harness
        .wait_for(name, &what, Duration::from_secs(20), |rs: ReplicaSet| {
            let status = rs.status.as_ref()?;
            let settled = status.replicas == replicas
                && status.ready_replicas.unwrap_or(0) == replicas
                && status.available_replicas.unwrap_or(0) == replicas
                && status.fully_labeled_replicas.unwrap_or(0) == replicas
                && status.observed_generation == rs.metadata.generation;
            settled.then_some(rs)
        })
        .await
}
