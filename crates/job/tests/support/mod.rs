//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) whose pods end as their
//! commands say, and the Job controller running against it through a real client, its metrics
//! in a registry of the test's own; plus builders, waits and the reads the tests share.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use job::{JobController, JobMetrics, JobOptions, RuntimeOptions};
use k8s_openapi::api::{
    batch::v1::{Job, JobCondition, JobStatus},
    core::v1::{Event, Pod},
};
use kube::Api;
use serde_json::{Value, json};
use sim::{SimConfig, testing::TestCluster};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = job::CLIENT_NAME;
/// The tracking finalizer every pod of a Job carries until it is counted.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The completion index annotation (and label) of an Indexed Job's pods.
pub const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";

/// How long the waits of these tests wait.
pub const WAIT: Duration = Duration::from_secs(30);

pub struct Harness {
    cluster: TestCluster,
    /// Where the controller's workqueue, sync, stale-read and `job_controller_*` metrics are.
    pub registry: prometheus::Registry,
}

// The harness is its cluster plus the crate's controller: the cluster's helpers apply.
sim::cluster_harness!(Harness, start: without_controller then start_controller);

impl Harness {
    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        Self {
            cluster: TestCluster::start(config).await,
            registry: prometheus::Registry::new(),
        }
    }

    pub fn start_controller(&mut self) {
        let options = JobOptions {
            runtime: RuntimeOptions::registered(&self.registry, "job_controller")
                .expect("metrics register"),
            metrics: Some(JobMetrics::register(&self.registry).expect("job metrics register")),
        };
        JobController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    pub fn jobs(&self) -> Api<Job> {
        self.api()
    }

    /// Creates the Job `object` (JSON).
    pub async fn create_job(&self, object: Value) -> Job {
        self.create(&serde_json::from_value::<Job>(object).expect("valid Job"))
            .await
    }

    /// Applies a JSON merge patch to the Job `name`.
    pub async fn patch_job(&self, name: &str, patch: Value) -> Job {
        self.merge_patch::<Job>(name, patch).await
    }

    /// The Job `name` as stored.
    pub async fn job(&self, name: &str) -> Job {
        self.jobs()
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("get job {name}: {e}"))
    }

    /// The pods of the Job `name` (by its `job-name` label), sorted by name.
    pub async fn job_pods(&self, name: &str) -> Vec<Pod> {
        let mut pods: Vec<Pod> = self
            .list::<Pod>()
            .await
            .into_iter()
            .filter(|pod| label(pod, "batch.kubernetes.io/job-name").as_deref() == Some(name))
            .collect();
        pods.sort_by_key(pod_name);
        pods
    }

    /// Waits until the status of the Job `name` passes `check`, and returns it.
    pub async fn wait_for_status(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&JobStatus) -> bool,
    ) -> JobStatus {
        self.wait_for(name, what, WAIT, |job: Job| job.status.filter(|s| check(s)))
            .await
    }

    /// Waits until the Job `name` has the condition `type_` with status `True`, and returns
    /// the status.
    pub async fn wait_for_condition(&self, name: &str, type_: &str) -> JobStatus {
        let what = format!("{name} {type_}");
        self.wait_for_status(name, &what, |status| has_condition(status, type_))
            .await
    }

    /// Waits until the pods of the Job `name` pass `check`, and returns them.
    pub async fn wait_for_pods(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&[Pod]) -> bool,
    ) -> Vec<Pod> {
        sim::testing::eventually(what, WAIT, || async {
            let pods = self.job_pods(name).await;
            check(&pods).then_some(pods)
        })
        .await
    }

    /// The controller's requests of `verb` on `resource`.
    pub fn controller_requests(&self, verb: &str, resource: &str) -> u64 {
        self.requests_by(CONTROLLER_AGENT, verb, resource)
    }

    /// Waits for an event about the Job `name` with `reason`, and returns the first.
    pub async fn wait_for_event(&self, name: &str, reason: &str) -> Event {
        self.cluster.wait_for_event("Job", name, reason, WAIT).await
    }

    /// The value of the counter `family` with exactly `labels` (0 when absent).
    pub fn counter(&self, family: &str, labels: &[(&str, &str)]) -> f64 {
        self.registry
            .gather()
            .into_iter()
            .filter(|f| f.name() == family)
            .flat_map(|f| f.get_metric().to_vec())
            .find(|metric| {
                labels.iter().all(|(name, value)| {
                    metric
                        .get_label()
                        .iter()
                        .any(|label| label.name() == *name && label.value() == *value)
                })
            })
            .map_or(0.0, |metric| metric.get_counter().value())
    }
}

/// A Job `name` whose one container runs `command` (the sim's kubelet ends it as the command
/// says: `exit N`, `sleep S; exit N`), `restartPolicy: Never`; `patch` is merged into it
/// (RFC 7386).
pub fn job(name: &str, command: &str, patch: Value) -> Value {
    let mut object = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "c", "image": "busybox:1.36",
                        "command": ["sh", "-c", command]
                    }]
                }
            }
        }
    });
    json_patch::merge(&mut object, &patch);
    object
}

pub fn pod_name(pod: &Pod) -> String {
    pod.metadata.name.clone().unwrap_or_default()
}

pub fn label(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.labels.as_ref()?.get(key).cloned()
}

pub fn annotation(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata.annotations.as_ref()?.get(key).cloned()
}

pub fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_default()
}

pub fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

/// The condition `type_` of `status`, if any.
pub fn condition<'s>(status: &'s JobStatus, type_: &str) -> Option<&'s JobCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// Whether `status` has the condition `type_` with status `True`.
pub fn has_condition(status: &JobStatus, type_: &str) -> bool {
    condition(status, type_).is_some_and(|c| c.status == "True")
}

/// The condition types of `status`, in order.
pub fn condition_types(status: &JobStatus) -> Vec<String> {
    status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.clone())
        .collect()
}
