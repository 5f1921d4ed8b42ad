//! A Job's life beside its pods: suspend and resume (pods deleted without counting as failed,
//! the `Suspended` condition and events, the start time reset), `parallelism` lowered, orphans
//! adopted with the tracking finalizer, the finalizers of a deleted Job's pods removed, and a
//! Job managed by another controller left alone.

mod support;

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::{DeleteParams, PostParams};
use serde_json::json;
use support::{Harness, WAIT, condition, has_finalizer, job, phase};

fn running(pods: &[Pod]) -> usize {
    pods.iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none() && phase(pod) == "Running")
        .count()
}

#[tokio::test]
async fn a_suspended_job_deletes_its_pods_and_resumes_from_a_new_start() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "pause",
            "sleep 600; exit 0",
            json!({"spec": {"suspend": true, "parallelism": 2, "completions": 4}}),
        ))
        .await;
    let status = harness.wait_for_condition("pause", "Suspended").await;
    let suspended = condition(&status, "Suspended").expect("Suspended");
    assert_eq!(suspended.reason.as_deref(), Some("JobSuspended"));
    assert_eq!(suspended.message.as_deref(), Some("Job suspended"));
    assert!(
        status.start_time.is_none(),
        "a suspended Job has not started"
    );
    assert!(harness.job_pods("pause").await.is_empty());
    harness.wait_for_event("pause", "Suspended").await;

    harness
        .patch_job("pause", json!({"spec": {"suspend": false}}))
        .await;
    harness
        .wait_for_pods("pause", "2 running pods", |pods| running(pods) == 2)
        .await;
    let status = harness
        .wait_for_status("pause", "resumed", |s| {
            condition(s, "Suspended").is_some_and(|c| c.status == "False")
        })
        .await;
    let resumed = condition(&status, "Suspended").expect("Suspended");
    assert_eq!(resumed.reason.as_deref(), Some("JobResumed"));
    let first_start = status.start_time.clone().expect("started");
    harness.wait_for_event("pause", "Resumed").await;

    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    harness
        .patch_job("pause", json!({"spec": {"suspend": true}}))
        .await;
    let status = harness
        .wait_for_status("pause", "suspended again with no pod", |s| {
            condition(s, "Suspended").is_some_and(|c| c.status == "True")
                && s.active == Some(0)
                && s.terminating == Some(0)
        })
        .await;
    assert_eq!(status.failed.unwrap_or(0), 0, "suspension is not a failure");
    assert!(
        status.start_time.is_none(),
        "a suspended Job has not started (MutableSchedulingDirectivesForSuspendedJobs)"
    );
    harness
        .wait_for_pods("pause", "the pods gone", |pods| pods.is_empty())
        .await;

    harness
        .patch_job("pause", json!({"spec": {"suspend": false}}))
        .await;
    let status = harness
        .wait_for_status("pause", "resumed again", |s| {
            condition(s, "Suspended").is_some_and(|c| c.status == "False") && s.active == Some(2)
        })
        .await;
    assert!(
        status.start_time.expect("restarted").0 > first_start.0,
        "activeDeadlineSeconds counts from the resume"
    );
    harness.stop().await;
}

#[tokio::test]
async fn lowering_parallelism_deletes_the_excess_without_counting_it() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "shrink",
            "sleep 600; exit 0",
            json!({"spec": {"parallelism": 3, "completions": 3}}),
        ))
        .await;
    harness
        .wait_for_pods("shrink", "3 running pods", |pods| running(pods) == 3)
        .await;
    harness
        .patch_job("shrink", json!({"spec": {"parallelism": 1}}))
        .await;
    let status = harness
        .wait_for_status("shrink", "1 active", |s| s.active == Some(1))
        .await;
    assert_eq!(status.failed.unwrap_or(0), 0);
    harness
        .wait_for_pods("shrink", "one pod left", |pods| pods.len() == 1)
        .await;
    harness.stop().await;
}

/// An orphan pod the Job's selector matches is adopted, and gets the tracking finalizer.
#[tokio::test]
async fn an_orphan_is_adopted_with_the_tracking_finalizer() {
    let mut harness = Harness::without_controller(sim::SimConfig::default()).await;
    let selector = json!({"matchLabels": {"app": "adopt"}});
    harness
        .create_job(job(
            "adopt",
            "sleep 600; exit 0",
            json!({"spec": {"manualSelector": true, "selector": selector,
                            "template": {"metadata": {"labels": {"app": "adopt"}}}}}),
        ))
        .await;
    let orphan: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stray", "namespace": "default",
                     "labels": {"app": "adopt", "batch.kubernetes.io/job-name": "adopt"}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 600; exit 0"]}]}
    }))
    .expect("pod");
    harness
        .pods()
        .create(&PostParams::default(), &orphan)
        .await
        .expect("create orphan");
    harness.start_controller();
    let adopted: Pod = harness
        .wait_for("stray", "adopted", WAIT, |pod: Pod| {
            let owned = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|owner| owner.kind == "Job" && owner.name == "adopt");
            owned.then_some(pod)
        })
        .await;
    assert!(has_finalizer(&adopted), "adopted with the finalizer");
    let status = harness
        .wait_for_status("adopt", "the adopted pod active", |s| s.active == Some(1))
        .await;
    assert_eq!(
        status.active,
        Some(1),
        "the adopted pod counts, none created"
    );
    harness.stop().await;
}

/// Deleting a Job leaves its pods to the garbage collector, but they carry the tracking
/// finalizer: the orphan queue removes it, so no pod is left terminating forever.
#[tokio::test]
async fn a_deleted_jobs_pods_lose_their_finalizers() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "gone",
            "sleep 600; exit 0",
            json!({"spec": {"parallelism": 2, "completions": 2}}),
        ))
        .await;
    harness
        .wait_for_pods("gone", "2 pods with the finalizer", |pods| {
            running(pods) == 2 && pods.iter().all(has_finalizer)
        })
        .await;
    harness
        .jobs()
        .delete("gone", &DeleteParams::background())
        .await
        .expect("delete job");
    harness
        .wait_for_pods("gone", "the pods gone", |pods| pods.is_empty())
        .await;
    harness.stop().await;
}

/// Orphaned pods (the Job deleted with `propagationPolicy: Orphan`) keep running, without the
/// finalizer that would keep them forever once they are deleted.
#[tokio::test]
async fn orphaned_pods_keep_running_without_the_finalizer() {
    let harness = Harness::start().await;
    harness
        .create_job(job("orphans", "sleep 600; exit 0", json!({})))
        .await;
    harness
        .wait_for_pods("orphans", "a running pod", |pods| running(pods) == 1)
        .await;
    harness
        .jobs()
        .delete("orphans", &DeleteParams::orphan())
        .await
        .expect("delete job");
    let pods = harness
        .wait_for_pods("orphans", "the orphan freed", |pods| {
            pods.len() == 1
                && !has_finalizer(&pods[0])
                && pods[0].metadata.owner_references.is_none()
        })
        .await;
    assert_eq!(phase(&pods[0]), "Running");
    harness.stop().await;
}

#[tokio::test]
async fn a_job_managed_by_another_controller_is_left_alone() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "theirs",
            "exit 0",
            json!({"spec": {"managedBy": "example.com/queue"}}),
        ))
        .await;
    // A Job of ours created after it is synced: by then the other one has been seen.
    harness.create_job(job("ours", "exit 0", json!({}))).await;
    harness.wait_for_condition("ours", "Complete").await;
    let theirs: Job = harness.job("theirs").await;
    assert!(harness.job_pods("theirs").await.is_empty());
    assert!(
        theirs
            .status
            .as_ref()
            .is_none_or(|s| s.active.is_none() && s.conditions.is_none()),
        "no status written: {:?}",
        theirs.status
    );
    assert_eq!(
        harness.counter(
            "job_controller_jobs_by_external_controller_total",
            &[("controller_name", "example.com/queue")]
        ),
        1.0
    );
    harness.stop().await;
}

/// A pod that stops matching its Job's selector is released: its controller reference and its
/// tracking finalizer go together, so it is neither counted nor kept forever once deleted.
#[tokio::test]
async fn a_released_pod_loses_its_finalizer() {
    let harness = Harness::start().await;
    harness
        .create_job(job(
            "release",
            "sleep 600; exit 0",
            json!({"spec": {"manualSelector": true, "selector": {"matchLabels": {"app": "release"}},
                            "template": {"metadata": {"labels": {"app": "release",
                                "batch.kubernetes.io/job-name": "release"}}}}}),
        ))
        .await;
    let pods = harness
        .wait_for_pods("release", "a running pod", |pods| running(pods) == 1)
        .await;
    let name = pods[0].metadata.name.clone().expect("named");
    harness
        .merge_patch::<Pod>(&name, json!({"metadata": {"labels": {"app": "elsewhere"}}}))
        .await;
    let released: Pod = harness
        .wait_for(&name, "released", WAIT, |pod: Pod| {
            let owned = pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .next()
                .is_some();
            (!owned).then_some(pod)
        })
        .await;
    assert!(
        !has_finalizer(&released),
        "released with its finalizer removed"
    );
    harness.stop().await;
}
