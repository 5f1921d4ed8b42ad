//! Test harness: a sim cluster with nodes ([`sim::testing::TestCluster`]) and the DaemonSet
//! controller running against it through a real client, its metrics in a registry of the
//! test's own, plus builders, waits and the few reads the tests share.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::{collections::BTreeMap, time::Duration};

use daemonset::decide::node_affinity::required_node_selector;
use daemonset::{DaemonSetController, DaemonSetOptions, RuntimeOptions};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, DaemonSet, DaemonSetStatus},
    core::v1::{Event, Node, Pod},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use sim::{NodesConfig, SimConfig, testing::TestCluster};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = daemonset::CLIENT_NAME;

/// How long the waits of these tests wait.
pub const WAIT: Duration = Duration::from_secs(20);

pub struct Harness {
    cluster: TestCluster,
    /// Where the controller's workqueue, sync and stale-read metrics are registered.
    pub registry: prometheus::Registry,
}

// The harness is its cluster plus the crate's controller: the cluster's helpers apply.
sim::cluster_harness!(Harness, start: without_controller then start_controller);

/// A sim config with `count` nodes (`sim-node-0`, ...), heartbeats every 10 s.
pub fn nodes(count: usize) -> SimConfig {
    SimConfig {
        nodes: NodesConfig::with_count(count),
        ..SimConfig::default()
    }
}

impl Harness {
    /// A sim cluster started with `config`, the controller, and the DaemonSet `name` created
    /// (a [`daemon_set`] with `patch`): how most tests begin.
    pub async fn with_ds(config: SimConfig, name: &str, patch: Value) -> Self {
        let harness = Self::start_with(config).await;
        harness.create_ds(daemon_set(name, patch)).await;
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
        let options = DaemonSetOptions {
            runtime: RuntimeOptions::registered(&self.registry, "daemonset_controller")
                .expect("metrics register"),
            ..DaemonSetOptions::default()
        };
        DaemonSetController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    pub fn daemon_sets(&self) -> Api<DaemonSet> {
        self.api()
    }

    pub fn revisions(&self) -> Api<ControllerRevision> {
        self.api()
    }

    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client.clone())
    }

    /// Creates the DaemonSet `object` (JSON).
    pub async fn create_ds(&self, object: Value) -> DaemonSet {
        self.create(&serde_json::from_value::<DaemonSet>(object).expect("valid DaemonSet"))
            .await
    }

    /// Applies a JSON merge patch to the DaemonSet `name`.
    pub async fn patch_ds(&self, name: &str, patch: Value) -> DaemonSet {
        self.merge_patch::<DaemonSet>(name, patch).await
    }

    /// Changes the image of the DaemonSet `name`'s single container `c` (a new template).
    pub async fn set_image(&self, name: &str, image: &str) -> DaemonSet {
        self.patch_ds(
            name,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}),
        )
        .await
    }

    /// Applies a JSON merge patch to the node `name`.
    pub async fn patch_node(&self, name: &str, patch: Value) -> Node {
        self.nodes()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("patch node {name}: {e}"))
    }

    /// Creates the node `name` with `labels`, as a user registering it would.
    pub async fn create_node(&self, name: &str, labels: Value) -> Node {
        let node: Node =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}))
                .expect("valid node");
        self.nodes()
            .create(&PostParams::default(), &node)
            .await
            .unwrap_or_else(|e| panic!("create node {name}: {e}"))
    }

    /// The pods of the DaemonSet `name` (labelled `app=<name>`) not being deleted, sorted by
    /// name.
    pub async fn live_pods(&self, name: &str) -> Vec<Pod> {
        self.pods_labelled(name)
            .await
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .collect()
    }

    /// The node of each live pod of `name` (bound, else pinned), sorted, one entry per pod.
    pub async fn pod_nodes(&self, name: &str) -> Vec<String> {
        let mut nodes: Vec<String> = self
            .live_pods(name)
            .await
            .iter()
            .map(|pod| target_node(pod).unwrap_or_default())
            .collect();
        nodes.sort();
        nodes
    }

    /// Waits until the live pods of `name` are exactly one on each of `nodes` (names).
    pub async fn wait_for_pods_on(&self, name: &str, nodes: &[&str]) -> Vec<Pod> {
        let mut want: Vec<String> = nodes.iter().map(|node| (*node).to_owned()).collect();
        want.sort();
        let what = format!("{name}'s pods on {want:?}");
        sim::testing::eventually(&what, WAIT, || {
            let want = want.clone();
            async move {
                let pods = self.live_pods(name).await;
                let mut on: Vec<String> = pods.iter().filter_map(target_node).collect();
                on.sort();
                (on == want).then_some(pods)
            }
        })
        .await
    }

    /// Waits until the status of `name` passes `check` for its current generation, and
    /// returns it.
    pub async fn wait_for_status(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&DaemonSetStatus) -> bool,
    ) -> DaemonSetStatus {
        self.wait_for(name, what, WAIT, |ds: DaemonSet| {
            let generation = ds.metadata.generation;
            ds.status
                .filter(|status| status.observed_generation == generation && check(status))
        })
        .await
    }

    /// Waits until `name` reports `count` nodes scheduled, ready, available and up to date
    /// for its current generation.
    pub async fn wait_for_settled(&self, name: &str, count: i32) -> DaemonSetStatus {
        let what = format!("{name} settled on {count} nodes");
        self.wait_for_status(name, &what, |status| settled(status, count))
            .await
    }

    /// `workqueue_adds_total` of the queue `queue` (0 before any add).
    pub fn queue_adds(&self, queue: &str) -> f64 {
        self.registry
            .gather()
            .into_iter()
            .filter(|family| family.name() == "workqueue_adds_total")
            .flat_map(|family| family.get_metric().to_vec())
            .find(|metric| {
                metric
                    .get_label()
                    .iter()
                    .any(|label| label.value() == queue)
            })
            .map_or(0.0, |metric| metric.get_counter().value())
    }

    /// Waits until neither queue got a key for half a second, and returns the adds of the
    /// DaemonSet queue and of the node-update queue then.
    pub async fn wait_until_idle(&self) -> (f64, f64) {
        sim::testing::eventually("the controller idle", WAIT, || async {
            let adds = || {
                (
                    self.queue_adds(daemonset::QUEUE_NAME),
                    self.queue_adds(daemonset::NODE_QUEUE_NAME),
                )
            };
            let before = adds();
            tokio::time::sleep(Duration::from_millis(500)).await;
            (before == adds()).then(adds)
        })
        .await
    }

    /// The number of syncs of the DaemonSet queue (`controller_sync_duration_seconds`).
    pub fn syncs(&self) -> u64 {
        self.registry
            .gather()
            .into_iter()
            .filter(|family| family.name() == "controller_sync_duration_seconds")
            .flat_map(|family| family.get_metric().to_vec())
            .map(|metric| metric.get_histogram().get_sample_count())
            .sum()
    }

    /// The controller's requests of `verb` on `resource`.
    pub fn controller_requests(&self, verb: &str, resource: &str) -> u64 {
        self.requests_by(CONTROLLER_AGENT, verb, resource)
    }

    /// Waits for an event about the DaemonSet `name` with `reason`, and returns the first.
    pub async fn wait_for_event(&self, name: &str, reason: &str) -> Event {
        self.cluster
            .wait_for_event("DaemonSet", name, reason, WAIT)
            .await
    }

    /// The DaemonSet's revisions, by revision number.
    pub async fn revisions_of(&self, name: &str) -> Vec<ControllerRevision> {
        let mut revisions: Vec<ControllerRevision> = self
            .list::<ControllerRevision>()
            .await
            .into_iter()
            .filter(|revision| {
                revision
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|owner| owner.kind == "DaemonSet" && owner.name == name)
            })
            .collect();
        revisions.sort_by_key(|revision| revision.revision);
        revisions
    }
}

/// Whether `status` reports `count` nodes scheduled, ready, available and up to date, and none
/// misscheduled.
pub fn settled(status: &DaemonSetStatus, count: i32) -> bool {
    status.desired_number_scheduled == count
        && status.current_number_scheduled == count
        && status.number_ready == count
        && status.updated_number_scheduled == Some(count)
        && status.number_available == Some(count)
        && status.number_unavailable.unwrap_or(0) == 0
        && status.number_misscheduled == 0
}

/// A DaemonSet `name` selecting `app=<name>`, one container `nginx:1.25`; `patch` is merged
/// into it (RFC 7386).
pub fn daemon_set(name: &str, patch: Value) -> Value {
    let mut object = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
            }
        }
    });
    json_patch::merge(&mut object, &patch);
    object
}

/// The node a pod is for: bound, else the one its affinity pins it to.
pub fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    if let Some(node) = spec.node_name.clone().filter(|node| !node.is_empty()) {
        return Some(node);
    }
    required_node_selector(spec)?
        .node_selector_terms
        .iter()
        .flat_map(|term| term.match_fields.iter().flatten())
        .find(|field| field.key == "metadata.name" && field.operator == "In")
        .and_then(|field| field.values.as_ref()?.first().cloned())
}

pub fn name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

pub fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}

pub fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

/// Pod UIDs by pod name.
pub fn uids(pods: &[Pod]) -> BTreeMap<String, String> {
    pods.iter().map(|pod| (name(pod), uid(pod))).collect()
}

/// Whether the pod is Ready.
pub fn is_ready(pod: &Pod) -> bool {
    sim::testing::is_ready(pod)
}
