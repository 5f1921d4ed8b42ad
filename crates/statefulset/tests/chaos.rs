//! Chaos: 50 StatefulSets × 3 replicas converge under injected write failures (500 and 409) and
//! periodic watch disconnects, then roll a template change; a checker sampling the pods
//! throughout never sees an ordinal out of range or created out of order, and every set ends
//! with exactly one revision per template.

mod support;

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::{ControllerRevision, StatefulSet},
    core::v1::Pod,
};
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use sim::{
    FaultConfig,
    testing::{eventually, retry_write},
};
use support::{Harness, stateful_set};

const SETS: usize = 50;
const REPLICAS: i32 = 3;

async fn all_settled(harness: &Harness) -> bool {
    let Ok(list) = harness.sets().list(&Default::default()).await else {
        return false;
    };
    list.items.len() == SETS
        && list.items.iter().all(|set| {
            set.status.as_ref().is_some_and(|status| {
                status.replicas == REPLICAS
                    && status.ready_replicas == Some(REPLICAS)
                    && status.updated_replicas == Some(REPLICAS)
                    && status.current_revision == status.update_revision
                    && status.observed_generation == set.metadata.generation
            })
        })
}

/// Failed writes (500 or 409 Conflict) the sim answered to the controller, from its metrics.
async fn injected_failures(harness: &Harness) -> u64 {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let metrics = harness.client.request_text(request).await.expect("metrics");
    metrics
        .lines()
        .filter(|line| line.contains(&format!("user_agent=\"{}", support::CONTROLLER_AGENT)))
        .filter(|line| line.contains("code=\"500\"") || line.contains("code=\"409\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_under_faults_without_duplicated_ordinals_or_extra_revisions() {
    let harness = Harness::start().await;
    harness.set_chaos_faults(7, Duration::from_secs(2));

    // The checker: while sets are being created, pods of a set always form a prefix of the
    // ordinals (OrderedReady), and never an ordinal out of range.
    let creating = Arc::new(AtomicBool::new(true));
    let stop = Arc::new(AtomicBool::new(false));
    let checker = {
        let pods = harness.pods();
        let (creating, stop) = (creating.clone(), stop.clone());
        tokio::spawn(async move {
            let mut samples = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(list) = pods.list(&Default::default()).await {
                    let mut by_set: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                    for pod in list.items {
                        let name = pod.metadata.name.unwrap_or_default();
                        let (set, ordinal) = name.rsplit_once('-').expect("set pod name");
                        let ordinal: i32 = ordinal.parse().expect("ordinal");
                        assert!((0..REPLICAS).contains(&ordinal), "{name} out of range");
                        by_set.entry(set.to_owned()).or_default().push(ordinal);
                    }
                    if creating.load(Ordering::Relaxed) {
                        for (set, mut ordinals) in by_set {
                            ordinals.sort_unstable();
                            let prefix: Vec<i32> =
                                (0..i32::try_from(ordinals.len()).unwrap()).collect();
                            assert_eq!(ordinals, prefix, "{set}: pods created out of order");
                        }
                    }
                    samples += 1;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            samples
        })
    };

    let (sets, post, patch_params) = (
        harness.sets(),
        PostParams::default(),
        PatchParams::default(),
    );
    for index in 0..SETS {
        let set: StatefulSet = serde_json::from_value(stateful_set(
            &format!("chaos{index}"),
            REPLICAS,
            json!({}),
            json!({}),
        ))
        .unwrap();
        retry_write(|| sets.create(&post, &set)).await;
    }
    eventually("all sets settled", Duration::from_secs(60), || async {
        all_settled(&harness).await.then_some(())
    })
    .await;
    creating.store(false, Ordering::Relaxed);

    let patch = Patch::Merge(
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}}),
    );
    for index in 0..SETS {
        let name = format!("chaos{index}");
        retry_write(|| sets.patch(&name, &patch_params, &patch)).await;
    }
    eventually("all sets rolled", Duration::from_secs(90), || async {
        all_settled(&harness).await.then_some(())
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    let samples = checker.await.expect("checker saw no violation");
    assert!(samples > 0);

    harness.sim.set_faults(FaultConfig::default());
    assert!(
        injected_failures(&harness).await > 0,
        "the controller did see injected failures"
    );
    let revisions = harness.list::<ControllerRevision>().await;
    let mut per_set: BTreeMap<String, usize> = BTreeMap::new();
    for revision in &revisions {
        let owner = revision
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.first())
            .map(|o| o.name.clone());
        *per_set.entry(owner.unwrap_or_default()).or_default() += 1;
    }
    assert_eq!(per_set.len(), SETS, "{per_set:?}");
    assert!(
        per_set.values().all(|count| *count == 2),
        "one revision per template: {per_set:?}"
    );
    let pods = harness.list::<Pod>().await;
    assert_eq!(pods.len(), SETS * usize::try_from(REPLICAS).unwrap());
    harness.stop().await;
}
