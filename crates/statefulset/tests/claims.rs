//! Persistent volume claims against the sim: names, creation before the pod, and the
//! retention policy's owner references (whenScaled=Delete removes a scaled-away claim).

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use sim::testing::eventually;
use support::{Harness, name, scale_until_settled, wait_for_settled};

/// The spec of a set with a claim template `data` (and the default retention policy,
/// Retain/Retain).
fn with_claims() -> Value {
    json!({"volumeClaimTemplates": [{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }]})
}

/// [`with_claims`] with the retention policy `whenDeleted`, `whenScaled`.
fn with_retained_claims(when_deleted: &str, when_scaled: &str) -> Value {
    let mut spec = with_claims();
    spec["persistentVolumeClaimRetentionPolicy"] =
        json!({"whenDeleted": when_deleted, "whenScaled": when_scaled});
    spec
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

/// Scales `db` to `replicas`, waits for it to settle and returns the claim names then.
async fn claims_at(harness: &Harness, replicas: i32) -> Vec<String> {
    scale_until_settled(harness, "db", replicas).await;
    claim_names(harness).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_named_per_ordinal_and_mounted() {
    let harness = Harness::with_set("db", 2, with_claims()).await;
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
    assert_eq!(claims_at(&harness, 1).await, vec!["data-db-0", "data-db-1"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_scaled_delete_removes_the_claim_of_a_removed_ordinal() {
    let harness = Harness::with_set("db", 3, with_retained_claims("Delete", "Delete")).await;
    let set = wait_for_settled(&harness, "db", 3).await;
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

    scale_until_settled(&harness, "db", 1).await;
    eventually(
        "claims of ordinals 1 and 2 gone",
        Duration::from_secs(10),
        || async { (claim_names(&harness).await == vec!["data-db-0"]).then_some(()) },
    )
    .await;

    // Scaling back up creates fresh claims for the returning ordinals.
    assert_eq!(claims_at(&harness, 2).await, vec!["data-db-0", "data-db-1"]);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_deleted_delete_removes_claims_with_the_set() {
    let harness = Harness::with_set("db", 2, with_retained_claims("Delete", "Retain")).await;
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
