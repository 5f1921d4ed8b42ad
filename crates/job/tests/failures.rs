//! Jobs that fail: `backoffLimit` and the pod-creation backoff after a failure, the pod
//! failure policy (`FailJob` on an exit code, `Ignore` on the `DisruptionTarget` condition of an
//! evicted pod), `backoffLimitPerIndex` with `maxFailedIndexes`, `activeDeadlineSeconds`; the
//! interim `FailureTarget` then `Failed`, with upstream's reasons, messages and events.

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::EvictParams;
use serde_json::json;
use support::{
    Harness, INDEX_KEY, annotation, condition, condition_types, has_finalizer, job, phase, pod_name,
};

#[tokio::test]
async fn a_job_past_its_backoff_limit_fails_once_its_pods_are_gone() {
    let harness = Harness::start().await;
    harness
        .create_job(job("crash", "exit 1", json!({"spec": {"backoffLimit": 0}})))
        .await;
    let status = harness.wait_for_condition("crash", "Failed").await;
    assert_eq!(status.failed, Some(1));
    assert_eq!(condition_types(&status), ["FailureTarget", "Failed"]);
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(
        failed.message.as_deref(),
        Some("Job has reached the specified backoff limit")
    );
    assert!(
        status.completion_time.is_none(),
        "only a Complete Job has one"
    );
    let event = harness
        .wait_for_event("crash", "BackoffLimitExceeded")
        .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let pods = harness.job_pods("crash").await;
    assert_eq!(pods.len(), 1, "no pod after the limit");
    assert!(pods.iter().all(|pod| !has_finalizer(pod)));
    harness.stop().await;
}

/// After a failure the next pod waits for the backoff (10 s for the first failure), so a
/// crash-looping Job does not hammer the cluster.
#[tokio::test]
async fn a_replacement_waits_for_the_pod_failure_backoff() {
    let harness = Harness::start().await;
    harness
        .create_job(job("retry", "exit 1", json!({"spec": {"backoffLimit": 1}})))
        .await;
    let pods = harness
        .wait_for_pods("retry", "a replacement pod", |pods| pods.len() == 2)
        .await;
    let created = |pod: &Pod| {
        pod.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0)
            .expect("created")
    };
    let mut times: Vec<_> = pods.iter().map(created).collect();
    times.sort();
    let waited = times[1].duration_since(times[0]);
    assert!(
        waited >= k8s_openapi::jiff::SignedDuration::from_secs(9),
        "the replacement came {waited:?} after the first pod"
    );
    let status = harness.wait_for_condition("retry", "Failed").await;
    assert_eq!(status.failed, Some(2));
    harness.stop().await;
}

#[tokio::test]
async fn a_fail_job_rule_fails_the_job_on_its_exit_code() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "policy",
            "exit 42",
            json!({"spec": {"backoffLimit": 6, "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
            ]}}}),
        ))
        .await;
    let status = harness.wait_for_condition("policy", "Failed").await;
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("PodFailurePolicy"));
    let pods = harness.job_pods("policy").await;
    assert_eq!(
        pods.len(),
        1,
        "failed at the first pod, whatever the backoff limit"
    );
    assert_eq!(
        failed.message.as_deref(),
        Some(
            format!(
                "Container c for pod default/{} failed with exit code 42 matching FailJob rule at index 0",
                pod_name(&pods[0])
            )
            .as_str()
        )
    );
    assert_eq!(
        harness.counter(
            "job_controller_pod_failures_handled_by_failure_policy_total",
            &[("action", "FailJob")]
        ),
        1.0
    );
    harness.stop().await;
}

/// An evicted pod (the `DisruptionTarget` condition) matching an `Ignore` rule is replaced
/// without counting against `backoffLimit: 0`.
#[tokio::test]
async fn an_ignored_disruption_is_not_counted() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "evicted",
            "sleep 2; exit 0",
            json!({"spec": {"backoffLimit": 0, "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
            ]}}}),
        ))
        .await;
    let pods = harness
        .wait_for_pods("evicted", "a running pod", |pods| {
            pods.len() == 1 && phase(&pods[0]) == "Running"
        })
        .await;
    harness
        .pods()
        .evict(&pod_name(&pods[0]), &EvictParams::default())
        .await
        .expect("evicted");
    let status = harness.wait_for_condition("evicted", "Complete").await;
    assert_eq!(status.failed.unwrap_or(0), 0, "the eviction was ignored");
    assert_eq!(status.succeeded, Some(1));
    assert_eq!(
        harness.counter(
            "job_controller_pod_failures_handled_by_failure_policy_total",
            &[("action", "Ignore")]
        ),
        1.0
    );
    harness.stop().await;
}

/// Each index gets `backoffLimitPerIndex + 1` attempts; an index that fails them all is a
/// failed index, and more than `maxFailedIndexes` of them fail the Job.
#[tokio::test]
async fn failed_indexes_beyond_the_maximum_fail_the_job() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "perindex",
            "exit 3",
            json!({"spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3,
                            "backoffLimitPerIndex": 0, "maxFailedIndexes": 2}}),
        ))
        .await;
    let status = harness.wait_for_condition("perindex", "Failed").await;
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("MaxFailedIndexesExceeded"));
    assert_eq!(status.failed_indexes.as_deref(), Some("0-2"));
    assert_eq!(status.failed, Some(3));
    let pods = harness.job_pods("perindex").await;
    assert_eq!(
        pods.len(),
        3,
        "no index was retried (backoffLimitPerIndex 0)"
    );
    for pod in &pods {
        assert_eq!(
            annotation(pod, "batch.kubernetes.io/job-index-failure-count").as_deref(),
            Some("0")
        );
        assert!(annotation(pod, INDEX_KEY).is_some());
    }
    harness.stop().await;
}

#[tokio::test]
async fn a_job_past_its_deadline_fails_and_its_pods_are_deleted() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "slow",
            "sleep 600; exit 0",
            json!({"spec": {"activeDeadlineSeconds": 1, "parallelism": 2, "completions": 2}}),
        ))
        .await;
    let status = harness.wait_for_condition("slow", "Failed").await;
    let failed = condition(&status, "Failed").expect("Failed");
    assert_eq!(failed.reason.as_deref(), Some("DeadlineExceeded"));
    assert_eq!(
        failed.message.as_deref(),
        Some("Job was active longer than specified deadline")
    );
    assert_eq!(status.active.unwrap_or(0), 0);
    assert_eq!(status.failed, Some(2), "the running pods count as failed");
    harness.wait_for_event("slow", "DeadlineExceeded").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        harness
            .job_pods("slow")
            .await
            .iter()
            .all(|pod| !has_finalizer(pod))
    );
    harness.stop().await;
}
