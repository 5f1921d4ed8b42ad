//! Chaos: Deployments rolled under injected write failures (500 and 409) and periodic watch
//! disconnects, with the ReplicaSet controller running too. Every rollout finishes; checkers
//! watching every ReplicaSet and pod event see the surge bound held both by the ReplicaSet
//! sizes and by the pods, and the availability bound held by the pods, throughout.
//!
//! Upstream bounds only the ReplicaSet sizes: when the ReplicaSet controller's delete of a
//! scaled-down old pod fails (an injected 500) and is retried with backoff, the new ReplicaSet
//! may already create pods, so pods transiently exceed `replicas + maxSurge`. kcm-rs counts the
//! pods an old ReplicaSet still reports against the surge (see `fenceposts.rs`), so the pod
//! bound holds too.

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use sim::{
    FaultConfig,
    testing::{eventually, retry_write},
};
use support::{BoundsChecker, Harness, is_complete, template_image};

const DEPLOYMENTS: usize = 100;
const REPLICAS: i32 = 5;
/// 25%/25% of 5: surge 2, unavailable 1.
const SURGE: i32 = 2;
const UNAVAILABLE: i32 = 1;

fn chaos_deployment(index: usize) -> Deployment {
    support::deployment(&format!("chaos-{index}"), REPLICAS, "nginx:1.25", 50)
}

async fn wait_all_complete(harness: &Harness, image: &str) {
    let api = harness.deployments();
    let pods = harness.pods();
    eventually(
        &format!("every Deployment complete at {image}"),
        Duration::from_secs(240),
        || {
            let (api, pods) = (api.clone(), pods.clone());
            async move {
                let list = api.list(&ListParams::default()).await.ok()?;
                let done = list.items.len() == DEPLOYMENTS
                    && list
                        .items
                        .iter()
                        .all(|d| is_complete(d) && template_image(d) == Some(image));
                let pod_count = pods.list(&ListParams::default()).await.ok()?.items.len();
                (done && pod_count == DEPLOYMENTS * REPLICAS as usize).then_some(())
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollouts_finish_under_faults_within_bounds() {
    let harness = Harness::start().await;
    harness.set_chaos_faults(7, Duration::from_secs(3));
    let api = harness.deployments();
    let (post, patch_params) = (PostParams::default(), PatchParams::default());
    for index in 0..DEPLOYMENTS {
        let d = chaos_deployment(index);
        retry_write(|| api.create(&post, &d)).await;
    }
    wait_all_complete(&harness, "nginx:1.25").await;

    let checker = BoundsChecker::start(harness.client.clone()).await;
    let patch = Patch::Merge(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}),
    );
    for index in 0..DEPLOYMENTS {
        let name = format!("chaos-{index}");
        retry_write(|| api.patch(&name, &patch_params, &patch)).await;
    }
    wait_all_complete(&harness, "nginx:1.27").await;
    let report = checker.stop();

    assert_eq!(report.max_spec_total.len(), DEPLOYMENTS, "{report:?}");
    assert_eq!(report.min_available.len(), DEPLOYMENTS, "{report:?}");
    for (app, total) in &report.max_spec_total {
        assert!(
            *total <= REPLICAS + SURGE,
            "{app}: ReplicaSets sized {total} in total at once"
        );
    }
    assert_eq!(report.max_total.len(), DEPLOYMENTS, "{report:?}");
    for (app, total) in &report.max_total {
        assert!(
            *total <= (REPLICAS + SURGE) as usize,
            "{app}: {total} pods at once"
        );
    }
    for (app, available) in &report.min_available {
        assert!(
            *available >= (REPLICAS - UNAVAILABLE) as usize,
            "{app}: only {available} available at once"
        );
    }
    harness.sim.set_faults(FaultConfig::default());
    for index in 0..DEPLOYMENTS {
        let sets = harness.replica_sets_of(&format!("chaos-{index}")).await;
        let sizes: Vec<(String, i32)> = sets
            .iter()
            .map(|rs| (support::image_of(rs).to_owned(), support::spec_replicas(rs)))
            .collect();
        assert_eq!(
            sizes,
            vec![
                ("nginx:1.25".to_owned(), 0),
                ("nginx:1.27".to_owned(), REPLICAS)
            ],
            "chaos-{index}"
        );
    }
    harness.stop().await;
}
