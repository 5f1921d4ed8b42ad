//! Pod creation failures: slow start stops a sync after the first failed batch, FailedCreate
//! events and the ReplicaFailure condition appear, and recovery clears the condition.

mod support;

use std::time::Duration;

use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Event};
use kube::api::ListParams;
use prometheus::Registry;
use sim::{SimConfig, testing::eventually};
use support::{CONTROLLER_AGENT, Harness, set_pod_quota, wait_for_settled_status};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_start_stops_after_the_first_failed_batch() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    set_pod_quota(&harness, 0).await;
    harness.create_replica_set("web", 10).await;
    let registry = Registry::new();
    harness.start_controller_with(&registry);

    let counter = |name: &str| {
        registry
            .gather()
            .iter()
            .find(|family| family.name() == name)
            .map(|family| {
                family
                    .get_metric()
                    .iter()
                    .map(|m| m.get_counter().value())
                    .sum::<f64>()
            })
            .unwrap_or(0.0) as u64
    };
    // Syncs deferred because the cache lagged behind the status write are retried too; they
    // create nothing, so they are not failed create batches.
    let retries = || {
        counter("workqueue_retries_total")
            .saturating_sub(counter("replicaset_controller_stale_sync_skips_total"))
    };
    eventually("several failed syncs", Duration::from_secs(20), || async {
        (retries() >= 5).then_some(())
    })
    .await;
    let creates = harness.requests_by(CONTROLLER_AGENT, "create", "pods");
    let syncs = retries();
    // One create per failed sync (a batch of 1); without slow start each sync would try 10.
    // The sync in flight when we looked may have created before its retry was counted, and a
    // deferred sync counts as skipped a moment before its retry does.
    assert!(
        creates <= syncs + 2,
        "{creates} creates over {syncs} failed syncs: more than one create per sync"
    );
    assert!(
        creates >= syncs,
        "{creates} creates over {syncs} failed syncs"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_creates_give_events_and_a_condition_that_recovery_clears() {
    let harness = Harness::start().await;
    set_pod_quota(&harness, 3).await;
    harness.create_replica_set("web", 5).await;

    let what = "the ReplicaFailure condition";
    let condition = harness
        .wait_for("web", what, Duration::from_secs(20), |rs: ReplicaSet| {
            rs.status?
                .conditions?
                .into_iter()
                .find(|condition| condition.type_ == "ReplicaFailure")
        })
        .await;
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason.as_deref(), Some("FailedCreate"));
    let message = condition.message.unwrap_or_default();
    assert!(message.contains("exceeded quota"), "{message}");
    assert!(condition.last_transition_time.is_some());
    assert_eq!(harness.active_pods("web").await.len(), 3);

    let failed = eventually("a FailedCreate event", Duration::from_secs(20), || async {
        harness
            .api::<Event>()
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|event| event.reason.as_deref() == Some("FailedCreate"))
    })
    .await;
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert_eq!(failed.involved_object.kind.as_deref(), Some("ReplicaSet"));
    assert_eq!(failed.involved_object.name.as_deref(), Some("web"));
    assert_eq!(
        failed.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("replicaset-controller")
    );
    let text = failed.message.unwrap_or_default();
    assert!(
        text.starts_with("Error creating: pods ") && text.contains("exceeded quota"),
        "{text}"
    );

    // Recovery: room for every pod; the condition goes away once a sync succeeds.
    set_pod_quota(&harness, 10).await;
    let rs = wait_for_settled_status(&harness, "web", 5).await;
    let conditions = rs
        .status
        .and_then(|status| status.conditions)
        .unwrap_or_default();
    assert!(
        conditions.iter().all(|c| c.type_ != "ReplicaFailure"),
        "{conditions:?}"
    );
    harness.stop().await;
}
