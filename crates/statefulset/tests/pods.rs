//! The StatefulSet controller against the sim: ordered and parallel creation, reverse-ordinal
//! scale-down, identity, recreation of failed pods, ordinals.start and claims.

mod support;

use std::{collections::BTreeSet, time::Duration};

use serde_json::json;
use sim::{
    FAIL_AFTER_MS, KubeletConfig, NEVER_READY, READY_AFTER_MS, SimConfig,
    testing::{eventually, is_ready, is_serving},
};
use support::{
    Harness, label, name, scale_until_settled, stateful_set, wait_for_settled, wait_for_status,
};

fn slow_deletions() -> SimConfig {
    SimConfig {
        kubelet: KubeletConfig {
            deletion_delay: Duration::from_millis(150),
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_creation_waits_for_each_pod_to_be_running_and_ready() {
    let web = stateful_set("web", 3, json!({READY_AFTER_MS: "300"}), json!({}));
    let harness = Harness::with(web).await;
    // Pod n may only exist once every lower ordinal exists and is ready; pods never turn
    // unready in the sim, so a violation shows as a gap or an unready predecessor.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut seen_counts = BTreeSet::new();
    loop {
        let pods = harness.pods_labelled("web").await;
        seen_counts.insert(pods.len());
        for (index, pod) in pods.iter().enumerate() {
            assert_eq!(name(pod), format!("web-{index}"), "no gaps in ordinals");
            if index + 1 < pods.len() {
                assert!(
                    is_ready(pod),
                    "{} created before {} was ready",
                    name(&pods[index + 1]),
                    name(pod)
                );
            }
        }
        if pods.len() == 3 && pods.iter().all(is_ready) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        seen_counts.contains(&1) && seen_counts.contains(&2),
        "observed the pods appear one by one: {seen_counts:?}"
    );
    let set = wait_for_settled(&harness, "web", 3).await;
    let status = set.status.unwrap();
    assert_eq!(status.available_replicas, Some(3));
    assert_eq!(status.collision_count, Some(0));
    let revision = status.update_revision.unwrap();
    assert!(revision.starts_with("web-"));

    for pod in harness.pods_labelled("web").await {
        let ordinal = name(&pod).trim_start_matches("web-").to_owned();
        assert_eq!(
            label(&pod, "statefulset.kubernetes.io/pod-name"),
            Some(name(&pod))
        );
        assert_eq!(label(&pod, "apps.kubernetes.io/pod-index"), Some(ordinal));
        assert_eq!(
            label(&pod, "controller-revision-hash"),
            Some(revision.clone())
        );
        let spec = pod.spec.clone().unwrap();
        assert_eq!(spec.hostname, Some(name(&pod)));
        assert_eq!(spec.subdomain.as_deref(), Some("web"));
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_down_removes_the_highest_ordinal_first_one_at_a_time() {
    let harness = Harness::with_set_in(slow_deletions(), "web", 4, json!({})).await;
    wait_for_settled(&harness, "web", 4).await;
    harness
        .patch_set("web", json!({"spec": {"replicas": 1}}))
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut terminating_seen = Vec::new();
    loop {
        let pods = harness.pods_labelled("web").await;
        for (index, pod) in pods.iter().enumerate() {
            assert_eq!(name(pod), format!("web-{index}"), "pods leave from the top");
        }
        let terminating: Vec<String> = pods
            .iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_some())
            .map(name)
            .collect();
        assert!(
            terminating.len() <= 1,
            "one deletion at a time: {terminating:?}"
        );
        if let Some(pod) = terminating.first()
            && terminating_seen.last() != Some(pod)
        {
            terminating_seen.push(pod.clone());
        }
        if pods.len() == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(terminating_seen, vec!["web-3", "web-2", "web-1"]);
    wait_for_settled(&harness, "web", 1).await;
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_creates_every_pod_without_waiting() {
    let harness = Harness::with(stateful_set(
        "par",
        3,
        json!({NEVER_READY: "true"}),
        json!({"podManagementPolicy": "Parallel"}),
    ))
    .await;
    let pods = eventually("three unready pods", Duration::from_secs(10), || async {
        let pods = harness.pods_labelled("par").await;
        (pods.len() == 3).then_some(pods)
    })
    .await;
    assert!(pods.iter().all(|pod| !is_ready(pod)));
    let names: Vec<String> = pods.iter().map(name).collect();
    assert_eq!(names, vec!["par-0", "par-1", "par-2"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pod_is_recreated_under_the_same_name() {
    let flaky = stateful_set("flaky", 1, json!({FAIL_AFTER_MS: "300"}), json!({}));
    let harness = Harness::with(flaky).await;
    let mut uids = BTreeSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while uids.len() < 3 {
        for pod in harness
            .pods()
            .list(&Default::default())
            .await
            .expect("list")
            .items
        {
            assert_eq!(name(&pod), "flaky-0", "only ordinal 0 exists");
            uids.insert(pod.metadata.uid.clone().unwrap_or_default());
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out: {uids:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinals_start_at_the_configured_start() {
    let harness = Harness::with_set("five", 3, json!({"ordinals": {"start": 5}})).await;
    wait_for_settled(&harness, "five", 3).await;
    let pods = harness.pods_labelled("five").await;
    let names: Vec<String> = pods.iter().map(name).collect();
    assert_eq!(names, vec!["five-5", "five-6", "five-7"]);
    let indexes: Vec<Option<String>> = pods
        .iter()
        .map(|pod| label(pod, "apps.kubernetes.io/pod-index"))
        .collect();
    assert_eq!(
        indexes,
        vec![Some("5".into()), Some("6".into()), Some("7".into())]
    );

    scale_until_settled(&harness, "five", 2).await;
    let names: Vec<String> = harness
        .pods_labelled("five")
        .await
        .iter()
        .filter(|p| is_serving(p))
        .map(name)
        .collect();
    assert_eq!(names, vec!["five-5", "five-6"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn available_replicas_follow_min_ready_seconds() {
    // Ready times are whole seconds and availability is inclusive (`<=`), so a pod is ready but
    // not yet available for more than minReadySeconds - 1 s: 2 s leaves a window the poll sees.
    let harness = Harness::with_set("slow", 1, json!({"minReadySeconds": 2})).await;
    wait_for_status(&harness, "slow", "ready but not yet available", |status| {
        status.ready_replicas == Some(1) && status.available_replicas == Some(0)
    })
    .await;
    // Nothing else changes: only the controller's own requeue can report availability.
    wait_for_status(
        &harness,
        "slow",
        "available after minReadySeconds",
        |status| status.available_replicas == Some(1),
    )
    .await;
    harness.stop().await;
}
