//! Chaos: 100 ReplicaSets × 10 replicas converge under injected write failures (500 and 409)
//! and periodic watch disconnects, and a checker sampling the pods throughout never sees more
//! active pods than a ReplicaSet asks for.

mod support;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use kube::api::{ListParams, PostParams};
use sim::{
    FaultConfig,
    testing::{eventually, retry_write},
};
use support::Harness;

const SETS: usize = 100;
const REPLICAS: i32 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_under_faults_without_ever_overshooting() {
    let harness = Harness::start().await;
    harness.set_chaos_faults(42, Duration::from_secs(3));

    // The test's own writes see the same faults: retry them.
    let (replica_sets, post) = (harness.replica_sets(), PostParams::default());
    for index in 0..SETS {
        let rs = support::replica_set(&format!("chaos-{index}"), REPLICAS);
        retry_write(|| replica_sets.create(&post, &rs)).await;
    }

    let pods = harness.pods();
    let max_seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    eventually(
        "every ReplicaSet to converge",
        Duration::from_secs(180),
        || {
            let (pods, replica_sets) = (pods.clone(), replica_sets.clone());
            let max_seen = max_seen.clone();
            async move {
                // Sample: active pods per owner.
                let list = pods.list(&ListParams::default()).await.ok()?;
                let mut active: HashMap<String, usize> = HashMap::new();
                for pod in &list.items {
                    if pod.metadata.deletion_timestamp.is_some() {
                        continue;
                    }
                    if let Some(owner) = pod
                        .metadata
                        .owner_references
                        .as_ref()
                        .and_then(|owners| owners.iter().find(|o| o.controller == Some(true)))
                    {
                        *active.entry(owner.name.clone()).or_default() += 1;
                    }
                }
                {
                    let mut max_seen = max_seen.lock().unwrap();
                    for (owner, count) in active {
                        let seen = max_seen.entry(owner).or_default();
                        *seen = (*seen).max(count);
                    }
                }
                let sets = replica_sets.list(&ListParams::default()).await.ok()?;
                let converged = sets.items.len() == SETS
                    && sets.items.iter().all(|rs| {
                        rs.status.as_ref().is_some_and(|status| {
                            status.replicas == REPLICAS
                                && status.ready_replicas == Some(REPLICAS)
                                && status.available_replicas == Some(REPLICAS)
                                && status.fully_labeled_replicas == Some(REPLICAS)
                                && status.observed_generation == rs.metadata.generation
                        })
                    });
                converged.then_some(())
            }
        },
    )
    .await;

    let max_seen = max_seen.lock().unwrap().clone();
    for (owner, count) in &max_seen {
        assert!(
            *count <= REPLICAS as usize,
            "{owner} had {count} active pods at once (spec.replicas = {REPLICAS})"
        );
    }
    // Final statuses are exact: every ReplicaSet owns exactly its replicas.
    harness.sim.set_faults(FaultConfig::default());
    let list = pods.list(&ListParams::default()).await.expect("list pods");
    let mut owned: HashMap<String, usize> = HashMap::new();
    for pod in &list.items {
        let owner = pod.metadata.owner_references.as_ref().expect("owned")[0]
            .name
            .clone();
        *owned.entry(owner).or_default() += 1;
    }
    assert_eq!(owned.len(), SETS);
    assert!(
        owned.values().all(|count| *count == REPLICAS as usize),
        "{owned:?}"
    );
    harness.stop().await;
}
