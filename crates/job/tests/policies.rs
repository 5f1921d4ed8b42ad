//! The Job's policies against the sim: `successPolicy` ends a Job before its completions,
//! `podReplacementPolicy: Failed` waits for a terminating pod to fail before replacing it,
//! `restartPolicy: OnFailure` counts container restarts against `backoffLimit`, and the pod
//! failure policy's `FailIndex` and `Count` actions.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::DeleteParams;
use serde_json::json;
use sim::{KubeletConfig, SimConfig};
use support::{Harness, condition, has_condition, job, phase, pod_name};

#[tokio::test]
async fn a_met_success_policy_completes_the_job_before_its_completions() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "enough",
            "sleep 0.2; exit 0",
            json!({"spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 1,
                            "successPolicy": {"rules": [{"succeededCount": 1}]}}}),
        ))
        .await;
    let status = harness.wait_for_condition("enough", "Complete").await;
    let complete = condition(&status, "Complete").expect("Complete");
    assert_eq!(complete.reason.as_deref(), Some("SuccessPolicy"));
    assert_eq!(
        complete.message.as_deref(),
        Some("Matched rules at index 0")
    );
    assert!(has_condition(&status, "SuccessCriteriaMet"));
    assert_eq!(status.completed_indexes.as_deref(), Some("0"));
    assert_eq!(
        harness.job_pods("enough").await.len(),
        1,
        "the other indexes never ran"
    );
    harness.stop().await;
}

/// With graceful deletions taking 5 s: `TerminatingOrFailed` (the default) counts a deleted
/// pod as failed as soon as it terminates, `Failed` only once the pod failed, counting it in
/// `status.terminating` meanwhile and not replacing it.
#[tokio::test]
async fn a_terminating_pod_counts_as_failed_at_once_or_once_failed_by_the_replacement_policy() {
    let config = SimConfig {
        kubelet: KubeletConfig {
            deletion_delay: Duration::from_secs(5),
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    };
    let harness = Harness::start_with(config).await;
    for (name, policy) in [("eager", "TerminatingOrFailed"), ("patient", "Failed")] {
        harness
            .create_job(job(
                name,
                "sleep 600; exit 0",
                json!({"spec": {"podReplacementPolicy": policy}}),
            ))
            .await;
        let pods = harness
            .wait_for_pods(name, "a running pod", |pods| {
                pods.len() == 1 && phase(&pods[0]) == "Running"
            })
            .await;
        harness
            .pods()
            .delete(&pod_name(&pods[0]), &DeleteParams::default())
            .await
            .expect("delete the pod");
    }
    harness
        .wait_for_status("eager", "the terminating pod counted as failed", |s| {
            s.failed == Some(1)
        })
        .await;
    let patient = harness
        .wait_for_status("patient", "one terminating pod", |s| {
            s.terminating == Some(1)
        })
        .await;
    assert_eq!(
        patient.failed.unwrap_or(0),
        0,
        "not failed while it terminates"
    );
    assert_eq!(patient.active.unwrap_or(0), 0);
    let pods: Vec<Pod> = harness.job_pods("patient").await;
    assert_eq!(pods.len(), 1, "no replacement while the pod terminates");
    harness
        .wait_for_status("patient", "the pod counted once it failed", |s| {
            s.failed == Some(1) && s.terminating == Some(0)
        })
        .await;
    harness.stop().await;
}

/// With `restartPolicy: OnFailure` a failing container restarts in place and the pod never
/// fails: its restarts count against `backoffLimit`.
#[tokio::test]
async fn container_restarts_count_against_the_backoff_limit_on_failure() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "restarts",
            "exit 1",
            json!({"spec": {"backoffLimit": 2,
                            "template": {"spec": {"restartPolicy": "OnFailure"}}}}),
        ))
        .await;
    let status = harness.wait_for_condition("restarts", "Failed").await;
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(
        harness.controller_requests("create", "pods"),
        1,
        "one pod, restarted in place, never replaced"
    );
    harness.stop().await;
}

/// `FailIndex` fails a pod's index at its first matching failure, whatever
/// `backoffLimitPerIndex` allows; `Count` counts it as usual.
#[tokio::test]
async fn fail_index_and_count_actions() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "indexes",
            "exit 3",
            json!({"spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2,
                            "backoffLimitPerIndex": 5,
                            "podFailurePolicy": {"rules": [
                                {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]}}}),
        ))
        .await;
    harness
        .create_job(job(
            "counted",
            "exit 1",
            json!({"spec": {"backoffLimit": 0, "podFailurePolicy": {"rules": [
                {"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}]}}}),
        ))
        .await;
    let status = harness.wait_for_condition("indexes", "Failed").await;
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("FailedIndexes"));
    assert_eq!(status.failed_indexes.as_deref(), Some("0,1"));
    assert_eq!(
        harness.job_pods("indexes").await.len(),
        2,
        "no index retried despite backoffLimitPerIndex 5"
    );
    let status = harness.wait_for_condition("counted", "Failed").await;
    assert_eq!(
        condition(&status, "Failed")
            .and_then(|c| c.reason.clone())
            .as_deref(),
        Some("BackoffLimitExceeded")
    );
    for (action, count) in [("FailIndex", 2.0), ("Count", 1.0)] {
        assert_eq!(
            harness.counter(
                "job_controller_pod_failures_handled_by_failure_policy_total",
                &[("action", action)]
            ),
            count,
            "{action}"
        );
    }
    harness.stop().await;
}
