//! Updates against the sim: reverse-ordinal rolling update one pod at a time, partition,
//! maxUnavailable (only with the `MaxUnavailableStatefulSet` gate on, off by default since
//! v1.36), OnDelete, and status revisions.

mod support;

use std::{collections::BTreeMap, time::Duration};

use k8s_openapi::api::{
    apps::v1::{ControllerRevision, StatefulSetStatus},
    core::v1::Pod,
};
use serde_json::json;
use sim::{
    KubeletConfig, SimConfig,
    testing::{eventually, is_serving},
};
use statefulset::FeatureGates;
use support::{
    Harness, label, name, new_update_revision, stateful_set, wait_for_settled, wait_for_status,
};

const REVISION: &str = "controller-revision-hash";
const MAX_UNAVAILABLE_GAUGE: &str = "statefulset_controller_statefulset_max_unavailable";
const UNAVAILABLE_GAUGE: &str = "statefulset_controller_statefulset_unavailable_replicas";
const GATE_ON: FeatureGates = FeatureGates {
    max_unavailable_statefulset: true,
};

fn slow_sim() -> SimConfig {
    SimConfig {
        kubelet: KubeletConfig {
            deletion_delay: Duration::from_millis(100),
            ready_delay: Duration::from_millis(150),
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    }
}

/// Waits for the set `web` to settle at `replicas`, changes its image and returns its update
/// revisions before and after the change.
async fn change_image_of_settled_web(harness: &Harness, replicas: i32) -> (String, String) {
    let old = wait_for_settled(harness, "web", replicas)
        .await
        .status
        .unwrap()
        .update_revision
        .unwrap();
    harness
        .patch_set(
            "web",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}),
        )
        .await;
    let new = new_update_revision(harness, "web", &old).await;
    (old, new)
}

/// Watches the update of `web` until all its `replicas` pods serve at `revision`, and returns
/// the order in which pods first showed the revision and the most pods seen out of service
/// at once.
async fn watch_update(harness: &Harness, replicas: i32, revision: &str) -> (Vec<String>, usize) {
    let replicas = usize::try_from(replicas).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut order = Vec::new();
    let mut max_down = 0;
    loop {
        let pods = harness.pods_labelled("web").await;
        let serving = pods.iter().filter(|pod| is_serving(pod)).count();
        max_down = max_down.max(replicas.saturating_sub(serving));
        for pod in &pods {
            if label(pod, REVISION).as_deref() == Some(revision) && !order.contains(&name(pod)) {
                order.push(name(pod));
            }
        }
        let updated = pods.len() == replicas
            && pods
                .iter()
                .all(|pod| is_serving(pod) && label(pod, REVISION).as_deref() == Some(revision));
        if updated {
            return (order, max_down);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out; order so far {order:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the status of `web` counts one updated pod and three ready ones (an update held
/// back after its first pod), and returns it.
async fn one_updated_of_three(harness: &Harness, what: &str) -> StatefulSetStatus {
    wait_for_status(harness, "web", what, |status| {
        status.updated_replicas == Some(1) && status.ready_replicas == Some(3)
    })
    .await
}

fn revisions(pods: &[Pod]) -> BTreeMap<String, String> {
    pods.iter()
        .map(|pod| (name(pod), label(pod, REVISION).unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_replaces_pods_in_reverse_ordinal_order_one_at_a_time() {
    let harness = Harness::with_set_in(slow_sim(), "web", 3, json!({})).await;
    let (_, new) = change_image_of_settled_web(&harness, 3).await;
    let (order, max_down) = watch_update(&harness, 3, &new).await;
    assert_eq!(order, vec!["web-2", "web-1", "web-0"]);
    assert_eq!(max_down, 1, "one pod out of service at a time");
    let status = wait_for_settled(&harness, "web", 3).await.status.unwrap();
    assert_eq!(status.current_revision.as_deref(), Some(new.as_str()));
    assert_eq!(status.update_revision.as_deref(), Some(new.as_str()));
    assert_eq!(harness.list::<ControllerRevision>().await.len(), 2);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_keeps_lower_ordinals_at_the_current_revision() {
    let harness = Harness::with_set(
        "web",
        3,
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
    )
    .await;
    let (old, new) = change_image_of_settled_web(&harness, 3).await;
    let status = one_updated_of_three(&harness, "web-2 updated and the status counted").await;
    assert_eq!(status.current_revision.as_deref(), Some(old.as_str()));
    assert_eq!(status.current_replicas, Some(2));
    let pods = harness.pods_labelled("web").await;
    assert_eq!(
        revisions(&pods),
        BTreeMap::from([
            ("web-0".to_owned(), old.clone()),
            ("web-1".to_owned(), old.clone()),
            ("web-2".to_owned(), new.clone()),
        ])
    );
    // Lowering the partition lets the update proceed to the lower ordinals.
    harness
        .patch_set(
            "web",
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
        )
        .await;
    let status = wait_for_settled(&harness, "web", 3).await.status.unwrap();
    assert_eq!(status.current_revision.as_deref(), Some(new.as_str()));
    harness.stop().await;
}

/// Rolls a Parallel set with `maxUnavailable: 2` to a new image under `gates`; returns the
/// harness (for the gauges), the order in which pods were updated and the most pods seen out
/// of service at once.
async fn roll_with_max_unavailable_two(
    replicas: i32,
    gates: FeatureGates,
) -> (Harness, Vec<String>, usize) {
    let harness = Harness::start_with_gates(slow_sim(), gates).await;
    harness
        .create_set(stateful_set(
            "web",
            replicas,
            json!({}),
            json!({
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
            }),
        ))
        .await;
    let (_, new) = change_image_of_settled_web(&harness, replicas).await;
    let (order, max_down) = watch_update(&harness, replicas, &new).await;
    wait_for_settled(&harness, "web", replicas).await;
    (harness, order, max_down)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_off_max_unavailable_two_still_updates_one_pod_at_a_time() {
    let (harness, _, max_down) = roll_with_max_unavailable_two(3, FeatureGates::default()).await;
    assert_eq!(max_down, 1, "never two pods down for update at once");
    assert_eq!(
        harness.requests_by(support::CONTROLLER_AGENT, "delete", "pods"),
        3,
        "each pod replaced once"
    );
    assert_eq!(support::gauge(&harness, MAX_UNAVAILABLE_GAUGE, "web"), None);
    assert_eq!(support::gauge(&harness, UNAVAILABLE_GAUGE, "web"), None);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gate_on_max_unavailable_two_takes_two_pods_down_at_once() {
    let (harness, _, max_down) = roll_with_max_unavailable_two(3, GATE_ON).await;
    assert_eq!(max_down, 2, "two pods out of service at once, never more");
    assert_eq!(
        support::gauge(&harness, MAX_UNAVAILABLE_GAUGE, "web"),
        Some(2.0)
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_unavailable_two_updates_two_pods_at_a_time() {
    let (harness, order, max_down) = roll_with_max_unavailable_two(4, GATE_ON).await;
    assert_eq!(max_down, 2, "two pods out of service at once, never more");
    let first_two: std::collections::BTreeSet<&str> =
        order.iter().take(2).map(String::as_str).collect();
    assert_eq!(first_two, ["web-2", "web-3"].into_iter().collect());
    assert_eq!(
        support::gauge(&harness, MAX_UNAVAILABLE_GAUGE, "web"),
        Some(2.0)
    );
    eventually(
        "no unavailable replicas reported",
        Duration::from_secs(10),
        || async {
            (support::gauge(&harness, UNAVAILABLE_GAUGE, "web") == Some(0.0)).then_some(())
        },
    )
    .await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_only_replaces_pods_the_user_deletes() {
    let harness =
        Harness::with_set("web", 3, json!({"updateStrategy": {"type": "OnDelete"}})).await;
    let (old, new) = change_image_of_settled_web(&harness, 3).await;
    // Give the controller time to (not) act, then check nothing was replaced.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pods = harness.pods_labelled("web").await;
    assert!(
        pods.iter()
            .all(|pod| label(pod, REVISION).as_deref() == Some(old.as_str()))
    );
    assert_eq!(
        harness.requests_by(support::CONTROLLER_AGENT, "delete", "pods"),
        0
    );

    harness
        .pods()
        .delete("web-1", &Default::default())
        .await
        .expect("delete web-1");
    let what = "web-1 recreated at the update revision";
    harness
        .wait_for("web-1", what, Duration::from_secs(10), |pod: Pod| {
            (label(&pod, REVISION).as_deref() == Some(new.as_str()) && is_serving(&pod))
                .then_some(())
        })
        .await;
    let status = one_updated_of_three(&harness, "status counts one updated pod").await;
    assert_eq!(status.current_replicas, Some(2));
    assert_eq!(status.current_revision.as_deref(), Some(old.as_str()));
    let pods = harness.pods_labelled("web").await;
    assert_eq!(label(&pods[0], REVISION).as_deref(), Some(old.as_str()));
    assert_eq!(label(&pods[2], REVISION).as_deref(), Some(old.as_str()));
    harness.stop().await;
}
