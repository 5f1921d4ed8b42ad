//! TokenReview and SubjectAccessReview through `kube::Client` over real HTTP: answered from the
//! configured token table and allow rules, discoverable, and counted by request accounting.

mod common;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::api::Api;
use kube::discovery::Discovery;
use serde_json::json;
use sim::{AuthConfig, SimCluster, SimConfig};

async fn cluster() -> SimCluster {
    let mut auth = AuthConfig::default();
    auth.add_token("T=alice:ops,dev").unwrap();
    auth.allow.push("alice:get:/metrics".parse().unwrap());
    auth.allow.push("group:ops:*:/debug/*".parse().unwrap());
    common::cluster_with(SimConfig {
        auth,
        ..SimConfig::default()
    })
    .await
}

async fn token_review(api: &Api<TokenReview>, token: &str) -> TokenReview {
    let review: TokenReview = serde_json::from_value(json!({"spec": {"token": token}})).unwrap();
    common::create(api, &review).await
}

async fn allowed(api: &Api<SubjectAccessReview>, user: &str, verb: &str, path: &str) -> bool {
    let review: SubjectAccessReview = serde_json::from_value(json!({"spec": {
        "user": user, "groups": ["ops"],
        "nonResourceAttributes": {"path": path, "verb": verb}
    }}))
    .unwrap();
    let answer = common::create(api, &review).await;
    answer.status.unwrap().allowed
}

#[tokio::test]
async fn reviews_answer_from_the_tables_and_are_counted() {
    let cluster = cluster().await;
    let client = cluster.client_with_user_agent("reviewer");
    let tokens: Api<TokenReview> = Api::all(client.clone());
    let known = token_review(&tokens, "T").await.status.unwrap();
    assert_eq!(known.authenticated, Some(true));
    let user = known.user.unwrap();
    assert_eq!(user.username.as_deref(), Some("alice"));
    assert_eq!(
        user.groups,
        Some(vec!["ops".to_string(), "dev".to_string()])
    );
    let unknown = token_review(&tokens, "nope").await.status.unwrap();
    assert_eq!(unknown.authenticated, Some(false));

    let access: Api<SubjectAccessReview> = Api::all(client.clone());
    assert!(allowed(&access, "alice", "get", "/metrics").await);
    assert!(!allowed(&access, "alice", "create", "/metrics").await);
    assert!(!allowed(&access, "bob", "get", "/metrics").await);
    assert!(
        allowed(&access, "bob", "patch", "/debug/pprof").await,
        "group rule"
    );

    let accounting = cluster.accounting();
    assert_eq!(
        accounting.count_for_agent("reviewer", "create", "tokenreviews"),
        2
    );
    assert_eq!(
        accounting.count_for_agent("reviewer", "create", "subjectaccessreviews"),
        4
    );

    let discovery = Discovery::new(client).run().await.unwrap();
    for (group, plural) in [
        ("authentication.k8s.io", "tokenreviews"),
        ("authorization.k8s.io", "subjectaccessreviews"),
    ] {
        let found = discovery
            .get(group)
            .unwrap_or_else(|| panic!("{group} discovered"))
            .recommended_resources()
            .into_iter()
            .any(|(resource, _)| resource.plural == plural);
        assert!(found, "{group}/{plural}");
    }
    cluster.shutdown().await;
}
