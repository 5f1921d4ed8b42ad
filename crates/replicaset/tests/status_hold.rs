//! kcm-rs only (issue 28): a ReplicaSet's status write waits, for at most
//! `--replicaset-status-hold`, until the sync's own creates and deletes are observed; a failed
//! create is reported at once, and a hold of 0 writes on every sync as upstream.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use kube::api::{WatchEvent, WatchParams};
use prometheus::Registry;
use serde_json::json;
use sim::{FaultConfig, SimConfig, testing::eventually};
use support::{CONTROLLER_AGENT, Harness, replica_set, set_pod_quota};

/// A hold longer than any wait of these tests: only the observation of the sync's own creates
/// and deletes, never the limit, can release the write. With the default second, a loaded
/// machine may observe ten creates later than that, and the limit rightly writes half-way.
const HOLD_PAST_EVERY_WAIT: Duration = Duration::from_secs(60);

/// Pods carrying this label key are never delivered by the sim's watches.
const UNWATCHED: &str = "lost-on-the-watch";

/// `web` with `replicas` pods that stay Running but never Ready, so that their creation is the
/// only change the status reports; `unwatched` also hides them from every watch.
fn never_ready(replicas: i32, unwatched: bool) -> ReplicaSet {
    let mut rs = replica_set("web", replicas);
    let template = rs
        .spec
        .as_mut()
        .and_then(|spec| spec.template.as_mut())
        .and_then(|template| template.metadata.as_mut())
        .expect("the template has metadata");
    template.annotations = Some([(sim::NEVER_READY.to_owned(), "true".to_owned())].into());
    if unwatched {
        template
            .labels
            .get_or_insert_with(Default::default)
            .insert(UNWATCHED.to_owned(), "true".to_owned());
    }
    rs
}

fn losing_the_watch_events_of_unwatched_pods() -> SimConfig {
    SimConfig {
        faults: FaultConfig {
            unwatched_label: Some(UNWATCHED.to_owned()),
            ..FaultConfig::default()
        },
        ..SimConfig::default()
    }
}

/// Every status `web` is written with from now on, in order, as a watch sees them.
struct StatusHistory(Arc<Mutex<Vec<ReplicaSetStatus>>>);

impl StatusHistory {
    async fn start(harness: &Harness) -> Self {
        let api = harness.replica_sets();
        let now = api.get("web").await.expect("web exists");
        let version = now.metadata.resource_version.expect("a resourceVersion");
        let mut stream = api
            .watch(
                &WatchParams::default().fields("metadata.name=web"),
                &version,
            )
            .await
            .expect("watch web")
            .boxed();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            let mut last = now.status;
            while let Some(Ok(event)) = stream.next().await {
                if let WatchEvent::Modified(rs) = event
                    && rs.status != last
                {
                    last = rs.status.clone();
                    record.lock().unwrap().extend(rs.status);
                }
            }
        });
        Self(seen)
    }

    fn seen(&self) -> Vec<ReplicaSetStatus> {
        self.0.lock().unwrap().clone()
    }

    /// Waits until the watch has delivered a status for `generation` with `replicas` pods
    /// and `terminating` terminating ones; returns every status seen so far.
    async fn seen_through(
        &self,
        generation: i64,
        replicas: i32,
        terminating: i32,
    ) -> Vec<ReplicaSetStatus> {
        let what = format!("the watch to deliver generation {generation} with {replicas} pods");
        eventually(&what, Duration::from_secs(20), || {
            let seen = self.seen();
            async move {
                seen.iter()
                    .any(|status| {
                        status.observed_generation == Some(generation)
                            && status.replicas == replicas
                            && status.terminating_replicas.unwrap_or(0) == terminating
                    })
                    .then_some(seen)
            }
        })
        .await
    }
}

fn status_writes(harness: &Harness) -> u64 {
    harness.requests_by(CONTROLLER_AGENT, "update", "replicasets/status")
}

fn counter(registry: &Registry, name: &str) -> u64 {
    registry
        .gather()
        .iter()
        .find(|family| family.name() == name)
        .map_or(0, |family| {
            family.get_metric()[0].get_counter().value() as u64
        })
}

/// Waits for `web`'s status to report `replicas` pods for `generation`.
async fn wait_for_observed(harness: &Harness, generation: i64, replicas: i32) {
    let what = format!("generation {generation} observed with {replicas} pods");
    harness
        .wait_for("web", &what, Duration::from_secs(20), |rs: ReplicaSet| {
            let status = rs.status?;
            (status.observed_generation == Some(generation) && status.replicas == replicas)
                .then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_from_zero_writes_the_status_once_its_creates_are_observed() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    harness.create(&never_ready(0, false)).await;
    let registry = Registry::new();
    harness.start_controller_with_hold(&registry, HOLD_PAST_EVERY_WAIT);
    wait_for_observed(&harness, 1, 0).await;
    let history = StatusHistory::start(&harness).await;
    let before = status_writes(&harness);

    harness.scale("web", 10).await;
    wait_for_observed(&harness, 2, 10).await;
    // Pods that turn Running (never Ready) sync the ReplicaSet again: none of those syncs
    // may write a status the creates' observation did not change.
    eventually("10 Running pods", Duration::from_secs(20), || async {
        let pods = harness.active_pods("web").await;
        let running = pods.iter().filter(|pod| {
            pod.status
                .as_ref()
                .and_then(|status| status.phase.as_deref())
                == Some("Running")
        });
        (running.count() == 10).then_some(())
    })
    .await;
    history.seen_through(2, 10, 0).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let seen = history.seen();
    assert_eq!(
        seen.iter()
            .map(|status| (status.observed_generation, status.replicas))
            .collect::<Vec<_>>(),
        vec![(Some(2), 10)],
        "one status: the new generation with every created pod; saw {seen:?}"
    );
    assert_eq!(status_writes(&harness) - before, 1);
    assert!(counter(&registry, "replicaset_controller_status_writes_held_total") >= 1);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_hold_the_status_is_written_on_every_sync_as_upstream() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    harness.create(&never_ready(0, false)).await;
    harness.start_controller_holding_status(Duration::ZERO);
    wait_for_observed(&harness, 1, 0).await;
    let history = StatusHistory::start(&harness).await;

    harness.scale("web", 10).await;
    wait_for_observed(&harness, 2, 10).await;

    // Upstream's first write is the syncing pass's: the new generation with the pods as they
    // were before its creates; the pod events write the counts after.
    let seen = history.seen_through(2, 10, 0).await;
    assert!(seen.len() >= 2, "{seen:?}");
    assert_eq!(
        (seen[0].observed_generation, seen[0].replicas),
        (Some(2), 0),
        "{seen:?}"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unobserved_create_never_holds_the_write_past_the_limit() {
    // The watch never delivers the created pods, so the expectations stay unfulfilled (for
    // upstream's five minutes): only the hold's limit lets the status go out.
    let mut harness =
        Harness::without_controller(losing_the_watch_events_of_unwatched_pods()).await;
    let registry = Registry::new();
    harness.start_controller_with(&registry);
    harness.create(&never_ready(2, true)).await;

    wait_for_observed(&harness, 1, 0).await;
    assert_eq!(
        harness.requests_by(CONTROLLER_AGENT, "create", "pods"),
        2,
        "the creates went out and were not repeated"
    );
    assert!(counter(&registry, "replicaset_controller_status_writes_held_total") >= 1);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_create_writes_replica_failure_at_once() {
    // Two creates are accepted and never observed (the hold would wait for them), the third
    // is refused by the quota: ReplicaFailure must not wait for the hold's minute.
    let mut harness =
        Harness::without_controller(losing_the_watch_events_of_unwatched_pods()).await;
    set_pod_quota(&harness, 2).await;
    harness.create(&never_ready(5, true)).await;
    let history = StatusHistory::start(&harness).await;
    harness.start_controller_holding_status(HOLD_PAST_EVERY_WAIT);

    let failure = eventually("ReplicaFailure written", Duration::from_secs(20), || {
        let seen = history.seen();
        async move {
            seen.into_iter()
                .flat_map(|status| status.conditions.unwrap_or_default())
                .find(|condition| condition.type_ == "ReplicaFailure")
        }
    })
    .await;
    assert_eq!(failure.reason.as_deref(), Some("FailedCreate"));
    assert_eq!(
        harness.requests_by(CONTROLLER_AGENT, "create", "pods"),
        3,
        "slow start: a batch of 1, then a batch of 2 of which the quota refused one"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_down_writes_the_new_generation_with_the_counts_after_its_deletes() {
    let mut harness = Harness::without_controller(SimConfig::default()).await;
    harness.create(&never_ready(4, false)).await;
    harness.start_controller_holding_status(HOLD_PAST_EVERY_WAIT);
    wait_for_observed(&harness, 1, 4).await;
    let history = StatusHistory::start(&harness).await;

    harness
        .merge_patch::<ReplicaSet>("web", json!({"spec": {"replicas": 1}}))
        .await;
    wait_for_observed(&harness, 2, 1).await;
    // The deleted pods' graceful deletion and their removal are each a change of
    // `terminatingReplicas`, written as upstream; what the hold removes is the write of the new
    // generation with the four pods from before the deletes.
    let seen = history.seen_through(2, 1, 0).await;
    assert!(
        seen.iter()
            .all(|status| (status.observed_generation, status.replicas) == (Some(2), 1)),
        "{seen:?}"
    );
    harness.stop().await;
}
