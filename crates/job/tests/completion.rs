//! Jobs that succeed: NonIndexed and Indexed completions, `parallelism`, pods tracked with the
//! finalizer and counted exactly once, the interim `SuccessCriteriaMet` then `Complete`
//! conditions, `completionTime`, the `Completed` event and the finished-pod metrics.

mod support;

use std::collections::BTreeSet;

use serde_json::json;
use support::{
    Harness, INDEX_KEY, WAIT, annotation, condition, condition_types, has_finalizer, job, label,
    phase, pod_name,
};

#[tokio::test]
async fn a_non_indexed_job_completes_with_each_pod_counted_once() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "count",
            "sleep 0.2; exit 0",
            json!({"spec": {"completions": 3, "parallelism": 2}}),
        ))
        .await;
    let status = harness.wait_for_condition("count", "Complete").await;
    assert_eq!(status.succeeded, Some(3));
    assert_eq!(status.failed.unwrap_or(0), 0);
    assert_eq!(status.active.unwrap_or(0), 0);
    assert_eq!(status.ready, Some(0));
    assert_eq!(status.terminating, Some(0));
    assert!(
        status
            .uncounted_terminated_pods
            .as_ref()
            .is_none_or(|u| u.succeeded.is_none() && u.failed.is_none()),
        "nothing left uncounted: {status:?}"
    );
    assert_eq!(
        condition_types(&status),
        ["SuccessCriteriaMet", "Complete"],
        "the interim condition first, then the terminal one"
    );
    let complete = condition(&status, "Complete").expect("Complete");
    assert_eq!(complete.reason.as_deref(), Some("CompletionsReached"));
    assert_eq!(
        complete.message.as_deref(),
        Some("Reached expected number of succeeded pods")
    );
    assert_eq!(
        status.completion_time.as_ref().map(|t| t.0),
        complete.last_transition_time.as_ref().map(|t| t.0)
    );
    assert!(status.start_time.is_some());

    let pods = harness.job_pods("count").await;
    assert_eq!(pods.len(), 3, "exactly `completions` pods ran");
    assert!(pods.iter().all(|pod| phase(pod) == "Succeeded"));
    assert!(
        pods.iter().all(|pod| !has_finalizer(pod)),
        "every finalizer removed once counted"
    );
    assert!(pods.iter().all(|pod| pod_name(pod).starts_with("count-")));
    harness.wait_for_event("count", "Completed").await;
    assert_eq!(
        harness.counter(
            "job_controller_job_pods_finished_total",
            &[("completion_mode", "NonIndexed"), ("result", "succeeded")]
        ),
        3.0
    );
    assert_eq!(
        harness.counter(
            "job_controller_jobs_finished_total",
            &[("result", "succeeded"), ("reason", "CompletionsReached")]
        ),
        1.0
    );
    harness.stop().await;
}

#[tokio::test]
async fn parallelism_bounds_the_running_pods() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "wide",
            "sleep 1; exit 0",
            json!({"spec": {"completions": 6, "parallelism": 3}}),
        ))
        .await;
    let status = harness
        .wait_for_status("wide", "3 active", |s| s.active == Some(3))
        .await;
    assert_eq!(status.succeeded.unwrap_or(0), 0);
    let mut most_running = 0;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let pods = harness.job_pods("wide").await;
        let running = pods
            .iter()
            .filter(|pod| !matches!(phase(pod).as_str(), "Succeeded" | "Failed"))
            .count();
        most_running = most_running.max(running);
        let job = harness.job("wide").await;
        if job
            .status
            .as_ref()
            .is_some_and(|s| condition(s, "Complete").is_some())
        {
            assert_eq!(pods.len(), 6);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "wide never completed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(most_running <= 3, "{most_running} pods ran at once");
    harness.stop().await;
}

#[tokio::test]
async fn an_indexed_job_runs_each_index_once_with_its_identity() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "idx",
            "sleep 0.2; exit 0",
            json!({"spec": {"completions": 4, "parallelism": 2, "completionMode": "Indexed"}}),
        ))
        .await;
    let status = harness.wait_for_condition("idx", "Complete").await;
    assert_eq!(status.completed_indexes.as_deref(), Some("0-3"));
    assert_eq!(status.succeeded, Some(4), "succeeded counts indexes");
    let pods = harness.job_pods("idx").await;
    let indexes: BTreeSet<String> = pods
        .iter()
        .filter_map(|pod| annotation(pod, INDEX_KEY))
        .collect();
    assert_eq!(indexes, ["0", "1", "2", "3"].map(String::from).into());
    assert_eq!(pods.len(), 4, "one pod per index");
    for pod in &pods {
        let index = annotation(pod, INDEX_KEY).expect("index annotation");
        assert_eq!(label(pod, INDEX_KEY).as_deref(), Some(index.as_str()));
        assert!(
            pod_name(pod).starts_with(&format!("idx-{index}-")),
            "{}",
            pod_name(pod)
        );
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(
            spec.hostname.as_deref(),
            Some(format!("idx-{index}").as_str())
        );
        let env = spec.containers[0].env.clone().unwrap_or_default();
        let variable = env
            .iter()
            .find(|e| e.name == "JOB_COMPLETION_INDEX")
            .expect("JOB_COMPLETION_INDEX");
        assert_eq!(
            variable
                .value_from
                .as_ref()
                .and_then(|v| v.field_ref.as_ref())
                .map(|f| f.field_path.as_str()),
            Some("metadata.labels['batch.kubernetes.io/job-completion-index']")
        );
        assert!(!has_finalizer(pod));
    }
    harness.stop().await;
}

#[tokio::test]
async fn a_job_without_completions_is_done_when_one_pod_succeeds_and_none_runs() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "queue",
            "sleep 0.3; exit 0",
            json!({"spec": {"completions": null, "parallelism": 2}}),
        ))
        .await;
    let status = harness.wait_for_condition("queue", "Complete").await;
    assert!(status.succeeded.unwrap_or(0) >= 1);
    assert_eq!(
        harness.job_pods("queue").await.len(),
        2,
        "no pod is replaced once one succeeded"
    );
    harness.stop().await;
}

#[tokio::test]
async fn a_finishing_sync_counts_its_pods_and_finishes_the_job_in_one_status_write() {
    let harness = Harness::start().await;
    harness
        .create_job(job("one-write", "exit 0", json!({})))
        .await;
    let status = harness.wait_for_condition("one-write", "Complete").await;
    assert_eq!(status.succeeded, Some(1));
    assert_eq!(
        condition_types(&status),
        ["SuccessCriteriaMet", "Complete"],
        "the interim condition is written, beside the terminal one"
    );
    harness
        .wait_for_pods("one-write", "the pod freed", |pods| {
            pods.len() == 1 && !has_finalizer(&pods[0])
        })
        .await;
    // Upstream writes three: the active pod; the finished pod in `uncountedTerminatedPods`
    // with SuccessCriteriaMet; the counters with Complete after the finalizer went. The
    // middle one is left out: the last one comes first, and the finalizer after it.
    assert_eq!(
        harness.controller_requests("update", "jobs/status"),
        2,
        "the active pod, then the finished Job"
    );
    assert_eq!(harness.controller_requests("patch", "pods"), 1);
    harness.stop().await;
}
