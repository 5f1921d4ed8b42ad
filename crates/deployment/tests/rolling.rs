//! Rolling updates of 10 replicas against the sim with the ReplicaSet controller running:
//! a checker sees every pod event and the surge and availability bounds hold throughout; at
//! the end the ReplicaSets, annotations, status, conditions and events are upstream's.

mod support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use controller_toolkit::writes::{ApiWriteExecutor, Write, WriteExecutor, WriteVerb};
use deployment::{DeploymentOptions, RuntimeOptions};
use futures::future::{BoxFuture, FutureExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::core::Status;
use serde_json::{Value, json};
use sim::testing::{blocking_controller_kind, controller_uid, eventually};
use support::{
    BoundsChecker, Harness, assert_deployment_annotations, condition, image_of, label,
    spec_replicas,
};

const REPLICAS: i32 = 10;

/// The status, reason and message of the Deployment's condition `type_`, to compare at once.
fn condition_state<'a>(
    d: &'a Deployment,
    type_: &str,
) -> (&'a str, Option<&'a str>, Option<&'a str>) {
    let c = condition(d, type_).expect(type_);
    (c.status.as_str(), c.reason.as_deref(), c.message.as_deref())
}

async fn rolls_within_bounds(
    name: &str,
    max_surge: Value,
    max_unavailable: Value,
    surge: i32,
    unavailable: i32,
) {
    let d = support::rolling_deployment(name, REPLICAS, "nginx:1.25", max_surge, max_unavailable);
    let harness = Harness::with_complete(&d).await;
    let old = harness.replica_set_with_image(name, "nginx:1.25").await;
    let old_name = old.metadata.name.clone().expect("name");
    harness
        .wait_for_event(
            name,
            "ScalingReplicaSet",
            &format!("Scaled up replica set {old_name} to {REPLICAS}"),
        )
        .await;

    let checker = BoundsChecker::start(harness.client.clone()).await;
    harness.set_image(name, "nginx:1.27").await;
    let d = harness.wait_complete(name).await;
    // Complete counts available replicas from ReplicaSet statuses; also wait for the last old
    // pods to be gone before reading the checker.
    eventually(
        "only new pods left",
        std::time::Duration::from_secs(20),
        || async {
            let pods = harness.pods().list(&Default::default()).await.ok()?.items;
            (pods.len() == REPLICAS as usize).then_some(())
        },
    )
    .await;
    let report = checker.stop();

    let max_total = report.max_total[name];
    let min_available = report.min_available[name];
    assert!(
        max_total <= (REPLICAS + surge) as usize,
        "{max_total} pods at once, bound {}",
        REPLICAS + surge
    );
    assert!(
        min_available >= (REPLICAS - unavailable) as usize,
        "{min_available} available at once, bound {}",
        REPLICAS - unavailable
    );
    assert!(report.events > 2 * REPLICAS as usize, "{report:?}");

    // ReplicaSets: the new one full, the old one at 0, upstream's annotations.
    let new = harness.replica_set_with_image(name, "nginx:1.27").await;
    let new_name = new.metadata.name.clone().expect("name");
    let hash = label(&new, "pod-template-hash").expect("hash label");
    assert_eq!(new_name, format!("{name}-{hash}"));
    let new_spec = new.spec.as_ref().expect("spec");
    assert_eq!(
        new_spec.selector.match_labels.as_ref().expect("labels")["pod-template-hash"],
        hash
    );
    assert_eq!(spec_replicas(&new), REPLICAS);
    assert_eq!(image_of(&new), "nginx:1.27");
    let max_replicas = (REPLICAS + surge).to_string();
    assert_deployment_annotations(
        &new,
        &[
            ("revision", "2"),
            ("desired-replicas", "10"),
            ("max-replicas", &max_replicas),
        ],
    );
    assert_eq!(blocking_controller_kind(&new.metadata), Some("Deployment"));
    assert_eq!(controller_uid(&new.metadata), d.metadata.uid.clone());
    let old = harness.replica_set_with_image(name, "nginx:1.25").await;
    assert_eq!(spec_replicas(&old), 0);
    assert_deployment_annotations(&old, &[("revision", "1")]);

    // The Deployment carries its new ReplicaSet's revision (written through /status).
    assert_eq!(
        d.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("deployment.kubernetes.io/revision"))
            .map(String::as_str),
        Some("2")
    );

    // Status and conditions.
    let status = d.status.clone().expect("status");
    assert_eq!(status.observed_generation, d.metadata.generation);
    assert_eq!(status.replicas, Some(REPLICAS));
    assert_eq!(status.updated_replicas, Some(REPLICAS));
    assert_eq!(status.ready_replicas, Some(REPLICAS));
    assert_eq!(status.available_replicas, Some(REPLICAS));
    assert_eq!(status.unavailable_replicas.unwrap_or(0), 0);
    assert_eq!(
        condition_state(&d, "Available"),
        (
            "True",
            Some("MinimumReplicasAvailable"),
            Some("Deployment has minimum availability.")
        )
    );
    let message = format!("ReplicaSet \"{new_name}\" has successfully progressed.");
    assert_eq!(
        condition_state(&d, "Progressing"),
        (
            "True",
            Some("NewReplicaSetAvailable"),
            Some(message.as_str())
        )
    );

    // Events in upstream's format (the correlator may combine similar ones, as upstream).
    let events = harness.events_of(name).await;
    let old_down = format!("Scaled down replica set {old_name} from 10 to ");
    assert!(
        events
            .iter()
            .any(|e| e.message.as_deref().is_some_and(|m| m.contains(&old_down))),
        "{:?}",
        events.iter().map(|e| &e.message).collect::<Vec<_>>()
    );
    let new_up = format!("Scaled up replica set {new_name} from ");
    assert!(events.iter().any(
        |e| e.message.as_deref().is_some_and(|m| m.contains(&new_up))
            && e.type_.as_deref() == Some("Normal")
            && e.reason.as_deref() == Some("ScalingReplicaSet")
    ));
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_25_percent_surge_and_unavailable_holds_bounds() {
    rolls_within_bounds("quarter", json!("25%"), json!("25%"), 3, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_surge_1_unavailable_0_holds_bounds() {
    rolls_within_bounds("surge", json!(1), json!(0), 1, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_surge_0_unavailable_1_holds_bounds() {
    rolls_within_bounds("unavailable", json!(0), json!(1), 0, 1).await;
}

/// Fails every ReplicaSet scale-down while armed, as an API server answering 500 would (the
/// write changes nothing, so no watch event follows it), and counts the failures; every other
/// write goes to the API server.
struct FailingScaleDowns {
    api: ApiWriteExecutor,
    armed: AtomicBool,
    failures: AtomicUsize,
}

impl WriteExecutor for FailingScaleDowns {
    fn execute(&self, write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let scale_down = write.verb == WriteVerb::Update
            && write.resource.plural == "replicasets"
            && write.reason == "scale down";
        if scale_down && self.armed.load(Ordering::SeqCst) {
            self.failures.fetch_add(1, Ordering::SeqCst);
            let status = Status::failure("injected by the test", "InternalError").with_code(500);
            return futures::future::ready(Err(kube::Error::Api(status.boxed()))).boxed();
        }
        self.api.execute(write)
    }
}

/// Upstream's `rolloutRolling` swallows a failed scale-down of an old ReplicaSet and waits for
/// another event; a write that failed sends none, so once the cluster is quiet the rollout
/// would stay unfinished. kcm-rs fails the sync after writing the status, so the key comes
/// back with backoff and the rollout finishes once the API server accepts the scale-down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_old_replica_set_scale_down_is_retried_without_another_event() {
    let name = "retry";
    let mut harness = Harness::start_without_deployment_controller().await;
    let faults: Arc<std::sync::OnceLock<Arc<FailingScaleDowns>>> = Arc::default();
    let slot = faults.clone();
    harness.start_deployment_controller_with(move |client| {
        let executor = Arc::new(FailingScaleDowns {
            api: ApiWriteExecutor::new(client.clone()),
            armed: AtomicBool::new(false),
            failures: AtomicUsize::new(0),
        });
        let _ = slot.set(executor.clone());
        DeploymentOptions {
            runtime: RuntimeOptions {
                writes: Some(executor),
                ..RuntimeOptions::default()
            },
            ..DeploymentOptions::default()
        }
    });
    let faults = faults.get().expect("the controller was built").clone();
    // Surge 100%, unavailable 0: the new ReplicaSet comes up whole, then the old one is scaled
    // down in one write, which is what fails.
    let d = support::rolling_deployment(name, 4, "nginx:1.25", json!("100%"), json!(0));
    harness.create(&d).await;
    harness.wait_complete(name).await;

    faults.armed.store(true, Ordering::SeqCst);
    harness.set_image(name, "nginx:1.27").await;
    // Quiet: the new pods are available, the status says so, the old ReplicaSet is still 4.
    eventually(
        "the rollout waits on the scale-down",
        Duration::from_secs(60),
        || async {
            let d = harness.deployments().get(name).await.ok()?;
            let status = d.status.clone()?;
            let old = harness.replica_set_with_image(name, "nginx:1.25").await;
            let quiet = status.observed_generation == d.metadata.generation
                && status.updated_replicas == Some(4)
                && status.available_replicas == Some(8)
                && spec_replicas(&old) == 4
                && faults.failures.load(Ordering::SeqCst) > 0;
            quiet.then_some(())
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let failures_when_quiet = faults.failures.load(Ordering::SeqCst);
    eventually(
        "the scale-down is tried again with no event",
        Duration::from_secs(30),
        || async { (faults.failures.load(Ordering::SeqCst) > failures_when_quiet).then_some(()) },
    )
    .await;

    faults.armed.store(false, Ordering::SeqCst);
    harness.wait_complete(name).await;
    let old = harness.replica_set_with_image(name, "nginx:1.25").await;
    assert_eq!(spec_replicas(&old), 0);
    harness.stop().await;
}

/// kcm-rs only (issue 21): the Deployment's status follows its ReplicaSets' counts in fewer
/// writes — a change of counters alone waits up to a second for the next ones — and the final
/// status is still exact the moment the rollout completes (its condition change is written at
/// once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollouts_counter_changes_share_status_writes() {
    let name = "coalesced";
    let mut d = support::rolling_deployment(name, 5, "nginx:1.25", json!("25%"), json!("25%"));
    // Pods turn ready 300 ms after they start, so a rollout's counter changes are spread out.
    let template = &mut d.spec.as_mut().expect("spec").template;
    template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default)
        .insert(sim::READY_AFTER_MS.to_owned(), "300".to_owned());
    let harness = Harness::with_complete(&d).await;
    let status_writes =
        || harness.requests_by(support::DEPLOYMENT_AGENT, "update", "deployments/status");
    let before = status_writes();
    harness.set_image(name, "nginx:1.27").await;
    let d = harness.wait_complete(name).await;
    let writes = status_writes() - before;

    let status = d.status.clone().expect("status");
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas
        ),
        (Some(5), Some(5), Some(5), Some(5))
    );
    let new_rs = harness.replica_set_with_image(name, "nginx:1.27").await;
    let message = format!(
        "ReplicaSet \"{}\" has successfully progressed.",
        new_rs.metadata.name.as_deref().expect("name")
    );
    assert_eq!(
        condition_state(&d, "Progressing"),
        (
            "True",
            Some("NewReplicaSetAvailable"),
            Some(message.as_str())
        )
    );
    assert!(writes <= 6, "{writes} status writes for one rollout");
    harness.stop().await;
}

/// Plays the ReplicaSet controller for `rs`: creates `count` pods from its template, owned
/// by it (the sim's kubelet makes them ready).
async fn create_pods_of(
    harness: &Harness,
    rs: &k8s_openapi::api::apps::v1::ReplicaSet,
    count: usize,
) {
    let name = rs.metadata.name.as_deref().expect("name");
    let template = rs
        .spec
        .as_ref()
        .and_then(|spec| spec.template.clone())
        .expect("template");
    for index in 0..count {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("{name}-{index}"),
                "labels": template.metadata.as_ref().and_then(|m| m.labels.clone()),
                "annotations": template.metadata.as_ref().and_then(|m| m.annotations.clone()),
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                    "uid": rs.metadata.uid, "controller": true, "blockOwnerDeletion": true}],
            },
            "spec": template.spec,
        });
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod).expect("pod");
        harness.create(&pod).await;
    }
}

/// Plays the ReplicaSet controller's status write for `rs`: `replicas` pods, all available.
async fn write_rs_status(
    harness: &Harness,
    rs: &k8s_openapi::api::apps::v1::ReplicaSet,
    replicas: i32,
) {
    let name = rs.metadata.name.as_deref().expect("name");
    let status = json!({"status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
        "readyReplicas": replicas, "availableReplicas": replicas,
        "observedGeneration": rs.metadata.generation}});
    harness
        .replica_sets()
        .patch_status(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(status),
        )
        .await
        .expect("status");
}

/// kcm-rs only (found by `make chaos`): a ReplicaSet controller killed after creating pods but
/// before writing their status leaves an old ReplicaSet whose status says 0 while its pods run.
/// `cleanupUnhealthyReplicas` scales it down as if they were missing; counting it at its
/// status, the new ReplicaSet would then grow while those pods still run (5 + 2 + 2 = 9 pods
/// for 5 replicas and a surge of 2). The planner counts the active pods the pod cache holds.
///
/// maxUnavailable is 0 so that nothing moves between the test's steps: the first ReplicaSet
/// keeps its 5 pods while the second's are unavailable (with 1, the controller would scale the
/// first down to 4 beside its status of 5, a state the test, playing the ReplicaSet
/// controller, never settles, and upstream aborts every later sync on it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_replica_set_with_a_stale_status_counts_its_running_pods_against_the_surge() {
    stale_status_rollout("stale", StalePodsEnd::Deleted).await;
}

/// The same rollout, the stale ReplicaSet's pods held by a finalizer when they are deleted:
/// marked for deletion, they run no more and no one counts them, so the rollout goes on at
/// once. Their final removal, which the finalizer holds back here (a grace period on a
/// cluster), is not waited for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stale_replica_sets_pods_marked_for_deletion_let_the_rollout_go_on() {
    stale_status_rollout("stale-held", StalePodsEnd::Terminating).await;
}

/// How the stale ReplicaSet's running pods stop in [`stale_status_rollout`].
#[derive(Clone, Copy, PartialEq)]
enum StalePodsEnd {
    /// Deleted with no grace period: their delete events are all that announces it.
    Deleted,
    /// Marked for deletion and held by a finalizer: their update events are all.
    Terminating,
}

/// The stale-status rollout of the tests above, its old pods ending as `end` says.
async fn stale_status_rollout(name: &'static str, end: StalePodsEnd) {
    let harness = Harness::deployment_controller_only().await;
    harness
        .create(&support::rolling_deployment(
            name,
            5,
            "nginx:1.25",
            json!(2),
            json!(0),
        ))
        .await;
    let rs_with = |image: &'static str| {
        let harness = &harness;
        move || async move {
            harness
                .replica_sets_of(name)
                .await
                .into_iter()
                .find(|rs| image_of(rs) == image)
        }
    };
    // Waits until the ReplicaSet of `image` is scaled to `replicas`, and returns it.
    let scaled = |what: &'static str, image: &'static str, replicas: i32| {
        eventually(what, Duration::from_secs(20), move || async move {
            let rs = rs_with(image)().await?;
            (spec_replicas(&rs) == replicas).then_some(rs)
        })
    };
    let first = eventually(
        "the first ReplicaSet",
        Duration::from_secs(20),
        rs_with("nginx:1.25"),
    )
    .await;
    create_pods_of(&harness, &first, 5).await;
    write_rs_status(&harness, &first, 5).await;
    harness.wait_complete(name).await;

    // A rollout whose new ReplicaSet gets its 2 surge pods from a controller that dies before
    // writing their status.
    harness.set_image(name, "nginx:1.27").await;
    let second = scaled("the second ReplicaSet", "nginx:1.27", 2).await;
    create_pods_of(&harness, &second, 2).await;

    // The next rollout: the second ReplicaSet is old, its status says 0 of its 2 running pods.
    harness.set_image(name, "nginx:1.28").await;
    scaled("the stale ReplicaSet cleaned up", "nginx:1.27", 0).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let third = rs_with("nginx:1.28")()
        .await
        .map_or(0, |rs| spec_replicas(&rs));
    let first_now = spec_replicas(&rs_with("nginx:1.25")().await.expect("first"));
    // Running: 5 pods of the first ReplicaSet (none deleted yet) and 2 of the second.
    assert_eq!(
        third, 0,
        "the new ReplicaSet grew to {third} beside 7 running pods (first ReplicaSet at {first_now})"
    );

    // Once the stale ReplicaSet's pods stop, the rollout goes on. Its status said 0 all
    // along, so no ReplicaSet event follows: the pod events themselves enqueue the
    // Deployment (whichever watch delivers first, a status event would race them).
    let second = rs_with("nginx:1.27")().await.expect("second");
    for index in 0..2 {
        let pod = format!("{}-{index}", second.metadata.name.as_deref().expect("name"));
        if end == StalePodsEnd::Terminating {
            harness
                .pods()
                .patch(
                    &pod,
                    &kube::api::PatchParams::default(),
                    &kube::api::Patch::Merge(
                        json!({"metadata": {"finalizers": ["kcm-rs.io/test-hold"]}}),
                    ),
                )
                .await
                .expect("hold");
        }
        harness
            .pods()
            .delete(&pod, &kube::api::DeleteParams::default().grace_period(0))
            .await
            .expect("delete");
    }
    scaled("the new ReplicaSet grows", "nginx:1.28", 2).await;
    harness.stop().await;
}
