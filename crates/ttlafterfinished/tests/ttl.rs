//! The TTL-after-finished controller against the sim: a finished Job with a TTL is deleted once
//! the TTL has passed and not before, requeued for the time left (no resync would find it
//! otherwise); Jobs without a TTL or not finished stay; the deletion waits for the Job's pods
//! (foreground); a TTL extended since the cache saw the Job is read afresh and honoured.

mod support;

use std::time::Duration;

use k8s_openapi::{
    api::{batch::v1::Job, core::v1::Pod},
    jiff::{SignedDuration, Timestamp},
};
use kube::api::{Patch, PatchParams};
use serde_json::json;
use sim::{
    FaultConfig, SimConfig,
    testing::{eventually, quiet_config},
};
use support::{CONTROLLER_AGENT, Harness, WAIT};

fn ago(seconds: i64) -> Timestamp {
    Timestamp::now()
        .saturating_add(SignedDuration::from_secs(-seconds))
        .expect("no calendar units")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_job_goes_once_its_ttl_has_passed_and_only_the_finished_with_a_ttl() {
    let harness = Harness::start_with(quiet_config()).await;
    harness.create_job("due-later", Some(2), json!({})).await;
    harness.create_job("due-now", Some(0), json!({})).await;
    harness
        .create_job("failed-long-ago", Some(5), json!({}))
        .await;
    harness.create_job("no-ttl", None, json!({})).await;
    harness.create_job("not-finished", Some(0), json!({})).await;
    harness.create_job("criteria-met", Some(0), json!({})).await;

    let finished_at = Timestamp::now();
    harness
        .finish_job("due-later", "Complete", finished_at)
        .await;
    harness.finish_job("due-now", "Complete", finished_at).await;
    harness
        .finish_job("failed-long-ago", "Failed", ago(60))
        .await;
    harness.finish_job("no-ttl", "Complete", ago(60)).await;
    // The interim condition alone: the Job's pods may still be terminating.
    harness
        .finish_job("criteria-met", "SuccessCriteriaMet", ago(60))
        .await;

    harness.wait_gone("due-now").await;
    harness.wait_gone("failed-long-ago").await;
    assert!(
        harness.job("due-later").await.is_some(),
        "deleted before its 2 s TTL passed"
    );
    // Nothing else will happen to it: only the requeue for the time left brings it back.
    harness.wait_gone("due-later").await;
    let waited = Timestamp::now().duration_since(finished_at);
    assert!(
        waited >= SignedDuration::from_secs(2),
        "deleted {waited:?} after finishing, before its TTL"
    );
    for kept in ["no-ttl", "not-finished", "criteria-met"] {
        assert!(harness.job(kept).await.is_some(), "{kept} deleted");
    }
    assert_eq!(harness.deletions_observed(), 3);
    assert_eq!(
        harness.requests_by(CONTROLLER_AGENT, "delete", "jobs"),
        3,
        "one delete per expired Job"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_goes_after_its_pods_foreground() {
    let harness = Harness::start_with(quiet_config()).await;
    let job = harness.create_job("with-pod", Some(0), json!({})).await;
    // A pod of the Job's that a finalizer of its own keeps: with foreground propagation, the
    // Job waits for it.
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "with-pod-0",
            "labels": {"app": "with-pod"},
            "finalizers": ["test.kcm-rs.io/hold"],
            "ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "with-pod",
                "uid": job.metadata.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}]
        }
    }))
    .expect("valid pod");
    harness.create(&pod).await;
    harness
        .finish_job("with-pod", "Complete", Timestamp::now())
        .await;

    let deleting: Job = eventually("the Job deleting in the foreground", WAIT, || async {
        harness
            .job("with-pod")
            .await
            .filter(|job| job.metadata.deletion_timestamp.is_some())
    })
    .await;
    assert!(
        deleting
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "foregroundDeletion"),
        "{:?}",
        deleting.metadata.finalizers
    );
    let held: Pod = harness.pods().get("with-pod-0").await.expect("pod kept");
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "the pod goes first"
    );

    harness
        .merge_patch::<Pod>("with-pod-0", json!({"metadata": {"finalizers": null}}))
        .await;
    harness.wait_gone("with-pod").await;
    assert_eq!(harness.requests_by(CONTROLLER_AGENT, "delete", "jobs"), 1);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ttl_extended_since_the_cache_saw_it_is_read_afresh_and_honoured() {
    // The controller's watch sees this Job's changes 3 s late: when its cached copy has
    // expired, the user has already extended the TTL.
    let lag = FaultConfig::watch_lag("lagging", Duration::from_secs(3));
    let harness = Harness::start_with(SimConfig {
        faults: lag,
        ..quiet_config()
    })
    .await;
    harness
        .create_job("extended", Some(1), json!({"lagging": "yes"}))
        .await;
    harness
        .finish_job("extended", "Complete", Timestamp::now())
        .await;
    harness
        .api::<Job>()
        .patch(
            "extended",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"ttlSecondsAfterFinished": 3600}})),
        )
        .await
        .expect("TTL extended");

    // The cache shows the finished Job with its 1 s TTL from about 3 s on; it must be read
    // afresh, found extended, and kept.
    eventually("the controller's fresh read", WAIT, || async {
        (harness.requests_by(CONTROLLER_AGENT, "get", "jobs") > 0).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        harness.job("extended").await.is_some(),
        "deleted despite its new TTL"
    );
    assert_eq!(harness.requests_by(CONTROLLER_AGENT, "delete", "jobs"), 0);
    harness.stop().await;
}
