//! The Job controller through the manager, from real flags in this process, against the sim:
//! `--controllers=job` runs it alone with `--concurrent-job-syncs` in `/configz`, its two queues
//! and its `job_controller_*` families in `/metrics`, and a Job applied with the real
//! `kubectl` runs to completion; with `ttl-after-finished` beside it, a Job with a TTL of 0 is
//! deleted with its pod once it finishes; `--controllers=cronjob` runs the CronJob controller
//! with `--concurrent-cron-job-syncs` in `/configz` and its families in `/metrics`.

mod support;

use std::time::Duration;

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use serde_json::Value;
use sim::{SimConfig, testing::Kubectl};
use support::{Cluster, plain_get, plain_http_flags, requests_with_agent};

fn flags(extra: &[&str]) -> Vec<String> {
    plain_http_flags("/healthz,/readyz,/livez,/metrics,/configz", extra)
}

const MANIFEST: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: busybox:1.36
        command: ["sh", "-c", "sleep 0.2; exit 0"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_job_runs_the_job_controller_alone() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let test = &cluster.test;
    let manager = cluster
        .start_manager(&flags(&["--controllers=job", "--concurrent-job-syncs=3"]))
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let kubectl = Kubectl::for_cluster(&test.sim, dir.path());
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, MANIFEST).expect("manifest written");
    kubectl
        .run(&["apply", "-f", path.to_str().expect("utf-8 path")])
        .await;
    test.wait_for("pi", "pi complete", Duration::from_secs(60), |job: Job| {
        let status = job.status?;
        status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Complete" && c.status == "True")
            .then_some(status)
    })
    .await;
    let table = kubectl.run(&["get", "job", "pi"]).await;
    assert!(
        table.contains("Complete") && table.contains("3/3"),
        "{table}"
    );
    assert_eq!(
        requests_with_agent(&test.sim, "kcm-rs/job-controller", "create", "pods"),
        3,
        "one pod per completion, by the Job controller's client"
    );
    let (code, metrics) = plain_get(manager.addr, "/metrics").await.expect("metrics");
    assert_eq!(code, 200);
    for queue in ["job", "job_orphan_pod"] {
        assert!(
            metrics.contains(&format!("workqueue_adds_total{{name=\"{queue}\"}}")),
            "{queue} in {metrics}"
        );
    }
    for family in [
        "job_controller_job_syncs_total",
        "job_controller_job_sync_duration_seconds",
        "job_controller_jobs_finished_total",
        "job_controller_job_pods_finished_total",
        "job_controller_job_pods_creation_total",
    ] {
        assert!(metrics.contains(family), "{family} in {metrics}");
    }
    assert!(
        !metrics.contains("workqueue_adds_total{name=\"replicaset\"}"),
        "only the Job controller runs"
    );
    let (code, configz) = plain_get(manager.addr, "/configz").await.expect("configz");
    assert_eq!(code, 200, "{configz}");
    let configz: Value = serde_json::from_str(&configz).expect("JSON");
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["JobController"]["ConcurrentJobSyncs"],
        3
    );
    drop(manager);
    cluster.test.stop().await;
}

const TTL_MANIFEST: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: cleaned
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.36
        command: ["sh", "-c", "exit 0"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_with_a_ttl_is_deleted_with_its_pods_by_the_ttl_after_finished_controller() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let test = &cluster.test;
    let manager = cluster
        .start_manager(&flags(&[
            "--controllers=job,ttl-after-finished",
            "--concurrent-ttl-after-finished-syncs=2",
        ]))
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let kubectl = Kubectl::for_cluster(&test.sim, dir.path());
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, TTL_MANIFEST).expect("manifest written");
    kubectl
        .run(&["apply", "-f", path.to_str().expect("utf-8 path")])
        .await;
    sim::testing::eventually(
        "the Job and its pod deleted",
        Duration::from_secs(60),
        || async {
            let jobs = test.names::<Job>().await;
            let pods = test.names::<Pod>().await;
            (jobs.is_empty() && pods.is_empty()).then_some(())
        },
    )
    .await;
    assert_eq!(
        requests_with_agent(
            &test.sim,
            "kcm-rs/ttl-after-finished-controller",
            "delete",
            "jobs"
        ),
        1,
        "deleted once, by the TTL-after-finished controller's client"
    );
    let (code, metrics) = plain_get(manager.addr, "/metrics").await.expect("metrics");
    assert_eq!(code, 200);
    assert!(
        metrics.contains("workqueue_adds_total{name=\"ttl_jobs_to_delete\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("ttl_after_finished_controller_job_deletion_duration_seconds_count 1"),
        "{metrics}"
    );
    let (code, configz) = plain_get(manager.addr, "/configz").await.expect("configz");
    assert_eq!(code, 200, "{configz}");
    let configz: Value = serde_json::from_str(&configz).expect("JSON");
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["TTLAfterFinishedController"]["ConcurrentTTLSyncs"],
        2
    );
    drop(manager);
    cluster.test.stop().await;
}

const CRONJOB_MANIFEST: &str = r#"apiVersion: batch/v1
kind: CronJob
metadata:
  name: every-minute
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
          - name: main
            image: busybox:1.36
            command: ["sh", "-c", "exit 0"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_cronjob_runs_the_cronjob_controller_with_its_flag_and_metrics() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let test = &cluster.test;
    let manager = cluster
        .start_manager(&flags(&[
            "--controllers=cronjob",
            "--concurrent-cron-job-syncs=3",
        ]))
        .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let kubectl = Kubectl::for_cluster(&test.sim, dir.path());
    let path = dir.path().join("cronjob.yaml");
    std::fs::write(&path, CRONJOB_MANIFEST).expect("manifest written");
    kubectl
        .run(&["apply", "-f", path.to_str().expect("utf-8 path")])
        .await;
    let table = kubectl.run(&["get", "cronjobs"]).await;
    assert!(
        table.contains("every-minute") && table.contains("* * * * *"),
        "{table}"
    );
    let (code, metrics) = plain_get(manager.addr, "/metrics").await.expect("metrics");
    assert_eq!(code, 200);
    assert!(
        metrics.contains("workqueue_adds_total{name=\"cronjob\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("cronjob_controller_job_creation_skew_duration_seconds"),
        "{metrics}"
    );
    let (code, configz) = plain_get(manager.addr, "/configz").await.expect("configz");
    assert_eq!(code, 200, "{configz}");
    let configz: Value = serde_json::from_str(&configz).expect("JSON");
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["CronJobController"]["ConcurrentCronJobSyncs"],
        3
    );
    drop(manager);
    cluster.test.stop().await;
}
