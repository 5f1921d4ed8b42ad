//! The pod-count quota annotation: creates beyond the quota are refused with upstream's 403
//! "exceeded quota" Status; finished pods do not count.

mod common;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn pod_creates_beyond_the_quota_are_forbidden() {
    let cluster = common::cluster().await;
    let namespaces: Api<Namespace> = Api::all(cluster.client());
    namespaces
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {sim::POD_QUOTA: "2"}}})),
        )
        .await
        .expect("annotate namespace");
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    // A pod that fails at once: finished pods do not count against the quota.
    let mut finished = common::pod("done", json!({"app": "a"}));
    finished.metadata.annotations =
        Some([(sim::FAIL_AFTER_MS.to_string(), "0".to_string())].into());
    pods.create(&PostParams::default(), &finished)
        .await
        .expect("first pod");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while pods
        .get("done")
        .await
        .expect("get")
        .status
        .and_then(|s| s.phase)
        .as_deref()
        != Some("Failed")
    {
        assert!(tokio::time::Instant::now() < deadline, "pod never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    for name in ["two", "three"] {
        pods.create(
            &PostParams::default(),
            &common::pod(name, json!({"app": "a"})),
        )
        .await
        .expect("within the quota");
    }
    let err = pods
        .create(
            &PostParams::default(),
            &common::pod("four", json!({"app": "a"})),
        )
        .await
        .expect_err("quota used up");
    let kube::Error::Api(status) = err else {
        panic!("expected an API error, got {err:?}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        "pods \"four\" is forbidden: exceeded quota: sim-pod-quota, requested: pods=1, used: pods=2, limited: pods=2"
    );
    assert!(pods.get_opt("four").await.expect("get").is_none());
}
