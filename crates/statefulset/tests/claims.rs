//! Persistent volume claims against the sim: names, creation before the pod, and the
//! retention policy's owner references (whenScaled=Delete removes a scaled-away claim).

mod support;

use std::time::Duration;

use serde_json::json;
use sim::testing::eventually;
use support::{Harness, name, stateful_set, wait_for_settled};

fn claim_templates() -> serde_json::Value {
    json!([{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }])
}

async fn claim_names(harness: &Harness) -> Vec<String> {
    let mut names: Vec<String> = harness
        .claims()
        .list(&Default::default())
        .await
        .expect("list claims")
        .items
        .into_iter()
        .filter(|claim| claim.metadata.deletion_timestamp.is_none())
        .filter_map(|claim| claim.metadata.name)
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_named_per_ordinal_and_mounted() {
    let harness = Harness::start().await;
    harness
        .create_set(stateful_set(
            "db",
            2,
            json!({}),
            json!({"volumeClaimTemplates": claim_templates()}),
        ))
        .await;
    wait_for_settled(&harness, "db", 2).await;
    assert_eq!(claim_names(&harness).await, vec!["data-db-0", "data-db-1"]);
    for pod in harness.pods_labelled("db").await {
        let volume = pod
            .spec
            .as_ref()
            .and_then(|spec| spec.volumes.as_ref())
            .and_then(|volumes| volumes.iter().find(|volume| volume.name == "data"))
            .cloned()
            .expect("claim volume");
        assert_eq!(
            volume.persistent_volume_claim.map(|claim| claim.claim_name),
            Some(format!("data-{}", name(&pod)))
        );
    }
    let claim = harness.claims().get("data-db-0").await.unwrap();
    assert_eq!(
        claim.metadata.labels.unwrap()["app"],
        "db",
        "selector labels are copied"
    );
    // Retain/Retain (the default): no owner references on the claims.
    assert!(
        claim
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // Retained claims outlive a scale-down.
    harness
        .patch_set("db", json!({"spec": {"replicas": 1}}))
        .await;
    wait_for_settled(&harness, "db", 1).await;
    assert_eq!(claim_names(&harness).await, vec!["data-db-0", "data-db-1"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_scaled_delete_removes_the_claim_of_a_removed_ordinal() {
    let harness = Harness::start().await;
    let set = harness
        .create_set(stateful_set(
            "db",
            3,
            json!({}),
            json!({
                "volumeClaimTemplates": claim_templates(),
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"}
            }),
        ))
        .await;
    wait_for_settled(&harness, "db", 3).await;
    assert_eq!(
        claim_names(&harness).await,
        vec!["data-db-0", "data-db-1", "data-db-2"]
    );
    let owners = harness
        .claims()
        .get("data-db-1")
        .await
        .unwrap()
        .metadata
        .owner_references
        .unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].uid.as_str()),
        ("StatefulSet", set.metadata.uid.as_deref().unwrap())
    );
    assert_eq!(owners[0].controller, Some(true));

    harness
        .patch_set("db", json!({"spec": {"replicas": 1}}))
        .await;
    wait_for_settled(&harness, "db", 1).await;
    eventually(
        "claims of ordinals 1 and 2 gone",
        Duration::from_secs(10),
        || async { (claim_names(&harness).await == vec!["data-db-0"]).then_some(()) },
    )
    .await;

    // Scaling back up creates fresh claims for the returning ordinals.
    harness
        .patch_set("db", json!({"spec": {"replicas": 2}}))
        .await;
    wait_for_settled(&harness, "db", 2).await;
    assert_eq!(claim_names(&harness).await, vec!["data-db-0", "data-db-1"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_deleted_delete_removes_claims_with_the_set() {
    let harness = Harness::start().await;
    harness
        .create_set(stateful_set(
            "db",
            2,
            json!({}),
            json!({
                "volumeClaimTemplates": claim_templates(),
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"}
            }),
        ))
        .await;
    wait_for_settled(&harness, "db", 2).await;
    assert_eq!(claim_names(&harness).await, vec!["data-db-0", "data-db-1"]);
    harness
        .sets()
        .delete("db", &Default::default())
        .await
        .expect("delete set");
    eventually(
        "claims collected with the set",
        Duration::from_secs(10),
        || async { claim_names(&harness).await.is_empty().then_some(()) },
    )
    .await;
    harness.stop().await;
}
