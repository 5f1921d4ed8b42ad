//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) with the ReplicaSet controller
//! and the Deployment controller running against it through real clients (each with its own
//! user agent, for the sim's accounting), a pod-watching bounds checker, builders and waits.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use deployment::{DeploymentController, DeploymentOptions};
use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::{Deployment, DeploymentCondition, ReplicaSet},
    core::v1::{Event, Pod},
};
use kube::{Api, Client, runtime::watcher};
use replicaset::ReplicaSetController;
use serde_json::json;
use sim::{
    NEVER_READY, READY_AFTER_MS, SimConfig,
    testing::{TestCluster, eventually, is_active, is_serving, workload},
};
use tokio::task::JoinHandle;

/// The user agent of the Deployment controller's requests.
pub const DEPLOYMENT_AGENT: &str = "deployment-controller";
/// The user agent of the ReplicaSet controller's requests.
pub const REPLICASET_AGENT: &str = "replicaset-controller";

pub struct Harness {
    cluster: TestCluster,
}

impl Harness {
    /// Both controllers, with `d` created and its first rollout complete: how most tests begin.
    pub async fn with_complete(d: &Deployment) -> Self {
        let harness = Self::start().await;
        harness.create(d).await;
        harness
            .wait_complete(d.metadata.name.as_deref().expect("name"))
            .await;
        harness
    }

    /// A sim with only the Deployment controller: the test plays the ReplicaSet controller.
    pub async fn deployment_controller_only() -> Self {
        let mut harness = Self {
            cluster: TestCluster::start(SimConfig::default()).await,
        };
        harness.start_deployment_controller();
        harness
    }

    /// A sim with only the ReplicaSet controller; start the Deployment controller later with
    /// [`Harness::start_deployment_controller`].
    pub async fn start_without_deployment_controller() -> Self {
        Self::without_deployment_controller(SimConfig::default()).await
    }

    async fn without_deployment_controller(config: SimConfig) -> Self {
        let mut cluster = TestCluster::start(config).await;
        ReplicaSetController::spawn_in(&mut cluster, REPLICASET_AGENT, Default::default());
        Self { cluster }
    }

    pub fn start_deployment_controller(&mut self) {
        self.start_deployment_controller_with(|_| DeploymentOptions::default());
    }

    /// Starts the Deployment controller with the options `options` builds from its client.
    pub fn start_deployment_controller_with(
        &mut self,
        options: impl FnOnce(&Client) -> DeploymentOptions,
    ) {
        self.cluster
            .spawn_controller(DEPLOYMENT_AGENT, |client, shutdown| {
                let options = options(&client);
                DeploymentController::standalone(client, options, 2, shutdown)
                    .expect("Deployment controller builds")
            });
    }

    pub fn deployments(&self) -> Api<Deployment> {
        self.api()
    }

    pub fn replica_sets(&self) -> Api<ReplicaSet> {
        self.api()
    }

    pub async fn patch(&self, name: &str, patch: serde_json::Value) -> Deployment {
        self.merge_patch(name, patch).await
    }

    /// Changes the image of the single container `c` (a new template).
    pub async fn set_image(&self, name: &str, image: &str) -> Deployment {
        self.patch(
            name,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}),
        )
        .await
    }

    /// Changes the template to image `image` in pods that never turn ready: a rollout that
    /// gets stuck.
    pub async fn roll_out_never_ready(&self, name: &str, image: &str) -> Deployment {
        self.patch(
            name,
            json!({"spec": {"template": {
                "metadata": {"annotations": {NEVER_READY: "true"}},
                "spec": {"containers": [{"name": "c", "image": image}]}
            }}}),
        )
        .await
    }

    /// The ReplicaSets labelled `app=<name>`, oldest first.
    pub async fn replica_sets_of(&self, name: &str) -> Vec<ReplicaSet> {
        let mut list: Vec<ReplicaSet> = self.labelled(name).await;
        list.sort_by(|a, b| {
            revision_of(a)
                .cmp(&revision_of(b))
                .then(a.metadata.name.cmp(&b.metadata.name))
        });
        list
    }

    /// The ReplicaSet whose container image is `image`.
    pub async fn replica_set_with_image(&self, name: &str, image: &str) -> ReplicaSet {
        self.replica_sets_of(name)
            .await
            .into_iter()
            .find(|rs| image_of(rs) == image)
            .unwrap_or_else(|| panic!("no ReplicaSet of {name} with image {image}"))
    }

    /// Events recorded about the Deployment `name` by the deployment controller.
    pub async fn events_of(&self, name: &str) -> Vec<Event> {
        let mut events = self.events_about("Deployment", name).await;
        events.retain(|event| {
            event.source.as_ref().and_then(|s| s.component.as_deref()) == Some(DEPLOYMENT_AGENT)
        });
        events
    }

    /// Waits until an event with this reason and message exists for the Deployment.
    pub async fn wait_for_event(&self, name: &str, reason: &str, message: &str) {
        eventually(
            &format!("event {reason} {message:?}"),
            Duration::from_secs(20),
            || async {
                self.events_of(name)
                    .await
                    .iter()
                    .any(|e| {
                        e.reason.as_deref() == Some(reason) && e.message.as_deref() == Some(message)
                    })
                    .then_some(())
            },
        )
        .await;
    }

    /// Waits until the Deployment is complete (spec §10.1) and Progressing says so.
    pub async fn wait_complete(&self, name: &str) -> Deployment {
        eventually(
            &format!("{name} complete"),
            Duration::from_secs(40),
            || async {
                let d = self.deployments().get(name).await.ok()?;
                is_complete(&d).then_some(d)
            },
        )
        .await
    }
}

// The harness is its cluster plus the crate's controllers: the cluster's helpers apply.
sim::cluster_harness!(
    Harness,
    start: without_deployment_controller then start_deployment_controller
);

/// Whether the stored status says the rollout completed (counts, generation, condition).
pub fn is_complete(d: &Deployment) -> bool {
    let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(status) = d.status.as_ref() else {
        return false;
    };
    status.observed_generation >= d.metadata.generation
        && status.replicas.unwrap_or(0) == replicas
        && status.updated_replicas.unwrap_or(0) == replicas
        && status.available_replicas.unwrap_or(0) == replicas
        && condition(d, "Progressing")
            .is_some_and(|c| c.reason.as_deref() == Some("NewReplicaSetAvailable"))
}

pub fn condition<'a>(d: &'a Deployment, type_: &str) -> Option<&'a DeploymentCondition> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

pub fn annotation<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    entry(rs.metadata.annotations.as_ref(), key)
}

pub fn label<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    entry(rs.metadata.labels.as_ref(), key)
}

/// The value at `key` of a label or annotation map, if both exist.
fn entry<'a>(map: Option<&'a BTreeMap<String, String>>, key: &str) -> Option<&'a str> {
    map?.get(key).map(String::as_str)
}

/// Asserts the ReplicaSet's `deployment.kubernetes.io/<key>` annotations, for each
/// `(key, value)` in `expected`.
pub fn assert_deployment_annotations(rs: &ReplicaSet, expected: &[(&str, &str)]) {
    for (key, value) in expected {
        let key = format!("deployment.kubernetes.io/{key}");
        assert_eq!(annotation(rs, &key), Some(*value), "{key}");
    }
}

pub fn revision_of(rs: &ReplicaSet) -> i64 {
    annotation(rs, "deployment.kubernetes.io/revision")
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

pub fn image_of(rs: &ReplicaSet) -> &str {
    rs.spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.as_deref())
        .unwrap_or_default()
}

/// The image of the Deployment's template's first container.
pub fn template_image(d: &Deployment) -> Option<&str> {
    d.spec
        .as_ref()?
        .template
        .spec
        .as_ref()?
        .containers
        .first()?
        .image
        .as_deref()
}

pub fn spec_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// A Deployment selecting `app=<name>` with one container `c`; pods turn ready after
/// `ready_after_ms` in the sim (0 = at once).
pub fn deployment(name: &str, replicas: i32, image: &str, ready_after_ms: u64) -> Deployment {
    let mut d = workload("Deployment", name, replicas);
    let template = &mut d["spec"]["template"];
    template["metadata"]["annotations"] = json!({READY_AFTER_MS: ready_after_ms.to_string()});
    template["spec"]["containers"][0]["image"] = json!(image);
    serde_json::from_value(d).expect("valid Deployment")
}

/// `deployment(...)` with a RollingUpdate strategy of the given surge/unavailable.
pub fn rolling_deployment(
    name: &str,
    replicas: i32,
    image: &str,
    max_surge: serde_json::Value,
    max_unavailable: serde_json::Value,
) -> Deployment {
    let mut d = deployment(name, replicas, image, 100);
    d.spec.as_mut().expect("spec").strategy = Some(
        serde_json::from_value(json!({
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}
        }))
        .expect("strategy"),
    );
    d
}

/// Bounds observed on every pod event of a watch, per Deployment (pods grouped by the `app`
/// label).
#[derive(Debug, Default, Clone)]
pub struct BoundsReport {
    /// Largest number of non-terminating pods seen at once.
    pub max_total: HashMap<String, usize>,
    /// Smallest number of available pods seen at once.
    pub min_available: HashMap<String, usize>,
    /// Largest sum of ReplicaSet `spec.replicas` seen at once (the bound upstream enforces
    /// directly; pods follow through the ReplicaSet controller).
    pub max_spec_total: HashMap<String, i32>,
    /// Pod events seen.
    pub events: usize,
}

/// Watches every pod event in the namespace and records the extremes of total and available
/// pods per `app` label. Start it once the initial rollout settled.
pub struct BoundsChecker {
    report: Arc<Mutex<BoundsReport>>,
    task: JoinHandle<()>,
    replica_set_task: JoinHandle<()>,
}

impl BoundsChecker {
    /// Starts watching, and returns once the watch has recorded its initial list.
    pub async fn start(client: Client) -> Self {
        let checker = Self::start_watching(client);
        eventually(
            "the checker's initial list",
            Duration::from_secs(10),
            || async { (checker.report().events > 0).then_some(()) },
        )
        .await;
        checker
    }

    fn start_watching(client: Client) -> Self {
        let report: Arc<Mutex<BoundsReport>> = Arc::default();
        let shared = report.clone();
        let replica_set_task = tokio::spawn(watch_replica_sets(client.clone(), report.clone()));
        let task = tokio::spawn(async move {
            let api: Api<Pod> = Api::namespaced(client, "default");
            let mut pods: HashMap<String, Pod> = HashMap::new();
            let mut initializing: HashMap<String, Pod> = HashMap::new();
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = stream.next().await {
                let Ok(event) = event else { continue };
                let settled = match event {
                    watcher::Event::Apply(pod) => {
                        pods.insert(pod.metadata.name.clone().unwrap_or_default(), pod);
                        true
                    }
                    watcher::Event::Delete(pod) => {
                        pods.remove(pod.metadata.name.as_deref().unwrap_or_default());
                        true
                    }
                    watcher::Event::Init => {
                        initializing.clear();
                        false
                    }
                    watcher::Event::InitApply(pod) => {
                        initializing.insert(pod.metadata.name.clone().unwrap_or_default(), pod);
                        false
                    }
                    watcher::Event::InitDone => {
                        pods = std::mem::take(&mut initializing);
                        true
                    }
                };
                if settled {
                    record(&shared, &pods);
                }
            }
        });
        Self {
            report,
            task,
            replica_set_task,
        }
    }

    pub fn report(&self) -> BoundsReport {
        self.report.lock().expect("report").clone()
    }

    pub fn stop(self) -> BoundsReport {
        self.task.abort();
        self.replica_set_task.abort();
        self.report()
    }
}

fn record(report: &Mutex<BoundsReport>, pods: &HashMap<String, Pod>) {
    let mut totals: HashMap<String, (usize, usize)> = HashMap::new();
    for pod in pods.values() {
        let Some(app) = pod.metadata.labels.as_ref().and_then(|l| l.get("app")) else {
            continue;
        };
        let entry = totals.entry(app.clone()).or_default();
        if is_active(pod) {
            entry.0 += 1;
        }
        // Available: serving, as the tests use minReadySeconds 0.
        if is_serving(pod) {
            entry.1 += 1;
        }
    }
    let mut report = report.lock().expect("report");
    report.events += 1;
    for (app, (total, available)) in totals {
        let max = report.max_total.entry(app.clone()).or_insert(total);
        *max = (*max).max(total);
        let min = report.min_available.entry(app).or_insert(available);
        *min = (*min).min(available);
    }
}

/// Records the largest sum of ReplicaSet sizes per `app` label after every ReplicaSet event.
async fn watch_replica_sets(client: Client, report: Arc<Mutex<BoundsReport>>) {
    let api: Api<ReplicaSet> = Api::namespaced(client, "default");
    let mut sizes: HashMap<String, (String, i32)> = HashMap::new();
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(rs) | watcher::Event::InitApply(rs)) => {
                let app = label(&rs, "app").unwrap_or_default().to_owned();
                sizes.insert(
                    rs.metadata.name.clone().unwrap_or_default(),
                    (app, spec_replicas(&rs)),
                );
            }
            Ok(watcher::Event::Delete(rs)) => {
                sizes.remove(rs.metadata.name.as_deref().unwrap_or_default());
            }
            _ => continue,
        }
        let mut totals: HashMap<&str, i32> = HashMap::new();
        for (app, size) in sizes.values() {
            *totals.entry(app).or_default() += size;
        }
        let mut report = report.lock().expect("report");
        for (app, total) in totals {
            let max = report.max_spec_total.entry(app.to_owned()).or_insert(total);
            *max = (*max).max(total);
        }
    }
}
