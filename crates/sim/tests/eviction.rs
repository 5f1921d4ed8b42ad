//! The `pods/eviction` subresource over real HTTP: the pod gets upstream's `DisruptionTarget`
//! condition before it is deleted gracefully, the answer is `201` with a `Success` Status, the
//! Eviction's `deleteOptions` (grace period, preconditions) are honoured, bad requests are
//! refused, and kube's `Api::evict` and discovery find it.

mod common;

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::Eviction;
use kube::api::{Api, EvictParams, WatchEvent, WatchParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};
use sim::{KubeletConfig, SimCluster};

async fn cluster_with_deletion_delay(delay: Duration) -> (SimCluster, Api<Pod>) {
    let cluster = common::cluster_with_kubelet(KubeletConfig {
        deletion_delay: delay,
        ..KubeletConfig::default()
    })
    .await;
    let pods = Api::namespaced(cluster.client(), "default");
    (cluster, pods)
}

async fn running_pod(pods: &Api<Pod>, name: &str) -> Pod {
    common::create(pods, &common::pod(name, json!({}))).await;
    common::eventually("pod running", || async {
        pods.get(name)
            .await
            .ok()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
    })
    .await
}

/// An `Eviction` of `name` with `delete_options`, as kubectl sends it.
fn eviction(name: &str, delete_options: Value) -> Value {
    let eviction: Eviction = serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": name, "namespace": "default"},
        "deleteOptions": delete_options,
    }))
    .expect("valid eviction");
    serde_json::to_value(eviction).expect("serializable")
}

/// POSTs `body` to pod `name`'s eviction subresource; returns the status code and the body.
async fn post_eviction(cluster: &SimCluster, name: &str, body: &Value) -> (u16, Value) {
    let req = http::Request::post(format!("/api/v1/namespaces/default/pods/{name}/eviction"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap();
    let resp = cluster
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The pod's `DisruptionTarget` condition as (status, reason, message).
fn disruption_target(pod: &Pod) -> Option<(String, String, String)> {
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")?;
    Some((
        condition.status.clone(),
        condition.reason.clone().unwrap_or_default(),
        condition.message.clone().unwrap_or_default(),
    ))
}

fn evicted() -> Option<(String, String, String)> {
    Some((
        "True".to_string(),
        "EvictionByEvictionAPI".to_string(),
        "Eviction API: evicting".to_string(),
    ))
}

#[tokio::test]
async fn eviction_marks_the_pod_as_a_disruption_target_then_deletes_it() {
    let (cluster, pods) = cluster_with_deletion_delay(Duration::from_millis(500)).await;
    running_pod(&pods, "victim").await;
    let version = common::list_resource_version(&pods).await;
    let mut events = pods
        .watch(
            &WatchParams::default()
                .fields("metadata.name=victim")
                .disable_bookmarks(),
            &version,
        )
        .await
        .unwrap()
        .boxed();

    let (code, body) = post_eviction(&cluster, "victim", &eviction("victim", json!({}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );

    // Terminating, with the condition on it.
    let terminating = pods.get("victim").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(disruption_target(&terminating), evicted());

    // The condition came in its own write, before the deletion began, and stayed to the end.
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .expect("the pod goes in time")
            .unwrap()
            .expect("the watch goes on");
        let done = matches!(event, WatchEvent::Deleted(_));
        seen.push(event);
        if done {
            break;
        }
    }
    let pods_seen: Vec<&Pod> = seen
        .iter()
        .filter_map(|e| match e {
            WatchEvent::Modified(p) | WatchEvent::Deleted(p) => Some(p),
            _ => None,
        })
        .collect();
    let marked = pods_seen
        .iter()
        .position(|p| disruption_target(p).is_some())
        .expect("an update carries the condition");
    assert!(
        pods_seen[marked].metadata.deletion_timestamp.is_none(),
        "marked before the deletion"
    );
    let deleting = pods_seen
        .iter()
        .position(|p| p.metadata.deletion_timestamp.is_some())
        .expect("a graceful deletion");
    assert!(marked < deleting);
    let last = pods_seen[pods_seen.len() - 1];
    assert_eq!(disruption_target(last), evicted(), "on the pod to the end");
    assert!(!common::exists(&pods, "victim").await);
    assert_eq!(cluster.accounting().count("create", "pods/eviction"), 1);
}

#[tokio::test]
async fn delete_options_and_preconditions_are_honoured() {
    let (cluster, pods) = cluster_with_deletion_delay(Duration::from_secs(30)).await;

    // A grace period of 0 deletes at once (else the pod would linger for 30 s).
    running_pod(&pods, "now").await;
    let (code, _) = post_eviction(
        &cluster,
        "now",
        &eviction("now", json!({"gracePeriodSeconds": 0})),
    )
    .await;
    assert_eq!(code, 201);
    assert!(!common::exists(&pods, "now").await);

    // A uid precondition that fails leaves the pod untouched.
    running_pod(&pods, "kept").await;
    let (code, body) = post_eviction(
        &cluster,
        "kept",
        &eviction("kept", json!({"preconditions": {"uid": "not-its-uid"}})),
    )
    .await;
    assert_eq!(code, 409, "{body}");
    let kept = pods.get("kept").await.unwrap();
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert_eq!(disruption_target(&kept), None);

    // A resourceVersion precondition that holds still holds after the condition's write.
    let current = kept.metadata.resource_version.clone().unwrap();
    let uid = kept.metadata.uid.clone().unwrap();
    let (code, body) = post_eviction(
        &cluster,
        "kept",
        &eviction(
            "kept",
            json!({"preconditions": {"uid": uid, "resourceVersion": current}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let terminating = pods.get("kept").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(disruption_target(&terminating), evicted());
    assert_eq!(terminating.metadata.deletion_grace_period_seconds, Some(30));
}

#[tokio::test]
async fn bad_evictions_are_refused() {
    let (cluster, pods) = cluster_with_deletion_delay(Duration::ZERO).await;
    running_pod(&pods, "p").await;
    let cases = [
        ("missing", eviction("missing", json!({})), 404),
        ("p", eviction("other", json!({})), 400),
        ("p", json!({"kind": "Pod", "metadata": {"name": "p"}}), 400),
        ("p", json!("not an object"), 400),
    ];
    for (name, body, expected) in cases {
        let (code, answer) = post_eviction(&cluster, name, &body).await;
        assert_eq!(code, expected, "{name} {body}: {answer}");
        assert_eq!(answer["kind"], "Status");
        assert_eq!(answer["status"], "Failure");
    }
    let req = http::Request::get("/api/v1/namespaces/default/pods/p/eviction")
        .body(Vec::new())
        .unwrap();
    let resp = cluster
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    assert_eq!(resp.status(), 405, "only POST");
    let untouched = pods.get("p").await.unwrap();
    assert!(untouched.metadata.deletion_timestamp.is_none());
    assert_eq!(disruption_target(&untouched), None);
}

#[tokio::test]
async fn kube_clients_evict_and_discover_the_subresource() {
    let (cluster, pods) = cluster_with_deletion_delay(Duration::ZERO).await;
    running_pod(&pods, "p").await;
    let status = pods.evict("p", &EvictParams::default()).await.unwrap();
    assert!(status.is_success(), "{status:?}");
    common::eventually("p gone", || async {
        (!common::exists(&pods, "p").await).then_some(())
    })
    .await;

    // kubectl drain looks for `pods/eviction` in /api/v1 with its group and version.
    let discovery = Discovery::new(cluster.client()).run().await.unwrap();
    let core = discovery.get("").expect("the core group");
    let (pod_resource, capabilities) = core
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.plural == "pods")
        .expect("pods");
    assert_eq!(pod_resource.kind, "Pod");
    let eviction = capabilities
        .subresources
        .iter()
        .find(|(r, _)| r.plural == "eviction")
        .map(|(r, _)| r.clone());
    let eviction = eviction.expect("pods/eviction discovered");
    assert_eq!(
        (
            eviction.group.as_str(),
            eviction.version.as_str(),
            eviction.kind.as_str()
        ),
        ("policy", "v1", "Eviction")
    );
}
