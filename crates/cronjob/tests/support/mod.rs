//! Test harness: a sim cluster ([`sim::testing::TestCluster`]) with the CronJob controller
//! running against it through a real client, on a clock of the test's choosing: one that runs
//! `speed` times faster than the wall clock from a chosen instant, so a schedule of every minute
//! runs five times in a few seconds. No Job controller runs: a test finishes a run's Job by
//! writing its status, as the Job controller would.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use cronjob::{Clock, CronJobController, CronJobMetrics, CronJobOptions, RuntimeOptions};
use k8s_openapi::{
    api::{
        batch::v1::{CronJob, Job},
        core::v1::Event,
    },
    jiff::{SignedDuration, Timestamp},
};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use sim::{SimConfig, testing::TestCluster};

/// The user agent the controller's requests carry, for the sim's accounting.
pub const CONTROLLER_AGENT: &str = cronjob::CLIENT_NAME;

/// How long the waits of these tests wait (real time).
pub const WAIT: Duration = Duration::from_secs(30);

/// A clock `speed` times faster than the wall clock, reading `origin` when the test started
/// it; a wait of `d` on it takes `d / speed` of real time.
pub struct FastClock {
    origin: Timestamp,
    started: Instant,
    speed: u32,
}

impl FastClock {
    pub fn new(origin: Timestamp, speed: u32) -> Self {
        Self {
            origin,
            started: Instant::now(),
            speed,
        }
    }
}

impl Clock for FastClock {
    fn now(&self) -> Timestamp {
        let elapsed = self.started.elapsed() * self.speed;
        let elapsed = SignedDuration::try_from(elapsed).unwrap_or(SignedDuration::MAX);
        self.origin
            .saturating_add(elapsed)
            .unwrap_or(Timestamp::MAX)
    }

    fn real(&self, duration: Duration) -> Duration {
        duration / self.speed
    }
}

pub struct Harness {
    cluster: TestCluster,
    /// Where the controller's workqueue, sync and `cronjob_controller_*` metrics are.
    pub registry: prometheus::Registry,
}

sim::cluster_harness!(Harness);

impl Harness {
    /// A sim cluster only; call [`Harness::start_controller`] once the scene is set.
    pub async fn without_controller(config: SimConfig) -> Self {
        Self {
            cluster: TestCluster::start(config).await,
            registry: prometheus::Registry::new(),
        }
    }

    /// A sim cluster with the controller on `clock`.
    pub async fn start_with_clock(config: SimConfig, clock: Arc<dyn Clock>) -> Self {
        let mut harness = Self::without_controller(config).await;
        harness.start_controller(clock);
        harness
    }

    pub fn start_controller(&mut self, clock: Arc<dyn Clock>) {
        let options = CronJobOptions {
            runtime: RuntimeOptions::registered(&self.registry, "cronjob_controller")
                .expect("metrics register"),
            metrics: Some(CronJobMetrics::register(&self.registry).expect("cronjob metrics")),
            clock,
        };
        CronJobController::spawn_in(&mut self.cluster, CONTROLLER_AGENT, options);
    }

    /// Creates the CronJob `name` on `schedule` with the extra `spec` fields, its Jobs
    /// labelled `app=<name>`.
    pub async fn create_cronjob(&self, name: &str, schedule: &str, spec: Value) -> CronJob {
        let mut object = json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": name},
            "spec": {
                "schedule": schedule,
                "jobTemplate": {
                    "metadata": {"labels": {"app": name}, "annotations": {"team": "batch"}},
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 0"]}]
                            }
                        }
                    }
                }
            }
        });
        if let (Some(target), Some(extra)) = (object["spec"].as_object_mut(), spec.as_object()) {
            for (field, value) in extra {
                target.insert(field.clone(), value.clone());
            }
        }
        self.create(&serde_json::from_value::<CronJob>(object).expect("valid CronJob"))
            .await
    }

    /// The CronJob `name` as stored.
    pub async fn cronjob(&self, name: &str) -> CronJob {
        self.api::<CronJob>()
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("get cronjob {name}: {e}"))
    }

    /// The Jobs labelled `app=<name>`, sorted by name.
    pub async fn jobs_of(&self, name: &str) -> Vec<Job> {
        self.labelled::<Job>(name).await
    }

    /// Waits until the CronJob `name` has `count` Jobs, and returns them.
    pub async fn wait_for_jobs(&self, name: &str, count: usize) -> Vec<Job> {
        sim::testing::eventually(&format!("{count} jobs of {name}"), WAIT, || async {
            let jobs = self.jobs_of(name).await;
            (jobs.len() == count).then_some(jobs)
        })
        .await
    }

    /// Finishes the Job `name` as the Job controller would: `Complete` (after
    /// `SuccessCriteriaMet`, with its completion time) or `Failed`, at `at`.
    pub async fn finish_job(&self, name: &str, type_: &str, at: Timestamp) {
        let at_text = at.to_string();
        let condition =
            |type_: &str| json!({"type": type_, "status": "True", "lastTransitionTime": at_text});
        let mut status = json!({"startTime": at_text});
        status["conditions"] = match type_ {
            "Complete" => {
                status["completionTime"] = json!(at_text);
                json!([condition("SuccessCriteriaMet"), condition("Complete")])
            }
            _ => json!([condition("FailureTarget"), condition("Failed")]),
        };
        self.api::<Job>()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap_or_else(|e| panic!("status of job {name}: {e}"));
    }

    /// The events recorded on the CronJob `name` with `reason`.
    pub async fn events_with_reason(&self, name: &str, reason: &str) -> Vec<Event> {
        self.events_about("CronJob", name)
            .await
            .into_iter()
            .filter(|event| event.reason.as_deref() == Some(reason))
            .collect()
    }

    /// Waits for an event on the CronJob `name` with `reason`; returns its message.
    pub async fn wait_for_event_reason(&self, name: &str, reason: &str) -> String {
        sim::testing::eventually(&format!("{reason} on {name}"), WAIT, || async {
            self.events_with_reason(name, reason)
                .await
                .first()
                .and_then(|event| event.message.clone())
        })
        .await
    }
}

/// A minute boundary a few seconds ahead of now, so a fast clock started there crosses its
/// first scheduled minute at once.
pub fn just_before_a_minute() -> Timestamp {
    let now = Timestamp::now().as_second();
    Timestamp::from_second(now - now.rem_euclid(60) + 59).expect("in range")
}
