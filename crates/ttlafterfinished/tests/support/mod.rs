//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) with the TTL-after-finished
//! controller running against it through a real client, its metrics in a registry of the
//! test's own; plus the Jobs the tests finish by hand (no Job controller runs here: a test
//! writes the terminal condition itself, as upstream's unit tests set it on their fixtures).

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::time::Duration;

use k8s_openapi::{api::batch::v1::Job, jiff::Timestamp};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use sim::{SimConfig, testing::TestCluster};
use ttlafterfinished::{
    RuntimeOptions, TtlAfterFinishedController, TtlAfterFinishedMetrics, TtlAfterFinishedOptions,
};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = ttlafterfinished::CLIENT_NAME;

/// How long the waits of these tests wait.
pub const WAIT: Duration = Duration::from_secs(30);

pub struct Harness {
    cluster: TestCluster,
    /// Where the controller's workqueue, sync and `ttl_after_finished_controller_*` metrics are.
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
        let options = TtlAfterFinishedOptions {
            runtime: RuntimeOptions::registered(&self.registry, "ttl_after_finished_controller")
                .expect("metrics register"),
            metrics: Some(
                TtlAfterFinishedMetrics::register(&self.registry).expect("ttl metrics register"),
            ),
        };
        TtlAfterFinishedController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    /// Creates a Job `name` whose pod template runs forever (no Job controller runs), with
    /// `ttl` as its `ttlSecondsAfterFinished` and `labels`.
    pub async fn create_job(&self, name: &str, ttl: Option<i32>, labels: Value) -> Job {
        let job: Job = serde_json::from_value(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "ttlSecondsAfterFinished": ttl,
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]
                    }
                }
            }
        }))
        .expect("valid Job");
        self.create(&job).await
    }

    /// Finishes the Job as the Job controller would at `at`: `Complete` (after
    /// `SuccessCriteriaMet`, with a `completionTime`) or `Failed` (after `FailureTarget`); or
    /// only the interim `SuccessCriteriaMet` / `FailureTarget` condition, the pods still
    /// terminating. The API server validates the status as it does upstream's.
    pub async fn finish_job(&self, name: &str, type_: &str, at: Timestamp) -> Job {
        let at_text = at.to_string();
        let condition =
            |type_: &str| json!({"type": type_, "status": "True", "lastTransitionTime": at_text});
        let mut status = json!({"startTime": at_text});
        status["conditions"] = match type_ {
            "Complete" => {
                status["completionTime"] = json!(at_text);
                json!([condition("SuccessCriteriaMet"), condition("Complete")])
            }
            "Failed" => json!([condition("FailureTarget"), condition("Failed")]),
            interim => json!([condition(interim)]),
        };
        self.api::<Job>()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap_or_else(|e| panic!("status of job {name}: {e}"))
    }

    /// The Job `name`, if it still exists.
    pub async fn job(&self, name: &str) -> Option<Job> {
        self.api::<Job>()
            .get_opt(name)
            .await
            .unwrap_or_else(|e| panic!("get job {name}: {e}"))
    }

    /// Waits until the Job `name` is gone.
    pub async fn wait_gone(&self, name: &str) {
        sim::testing::eventually(&format!("job {name} deleted"), WAIT, || async {
            self.job(name).await.is_none().then_some(())
        })
        .await;
    }

    /// How many deletions the latency histogram has observed.
    pub fn deletions_observed(&self) -> u64 {
        self.registry
            .gather()
            .iter()
            .find(|family| {
                family.name() == "ttl_after_finished_controller_job_deletion_duration_seconds"
            })
            .and_then(|family| family.get_metric().first())
            .map(|metric| metric.get_histogram().get_sample_count())
            .unwrap_or_default()
    }
}
