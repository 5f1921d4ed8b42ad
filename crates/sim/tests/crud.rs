//! CRUD on every resource through `kube::Client`, plus resourceVersion, uid,
//! creationTimestamp, generateName and the 404/409 Status bodies.

mod common;

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event as EventsV1Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Create, get, list, update and delete one object of kind `K` in namespace `default`.
async fn crud_round_trip<K>(client: kube::Client, object: Value)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client, "default");
    let what = K::kind(&());
    let obj: K = serde_json::from_value(object).unwrap_or_else(|e| panic!("{what}: {e}"));
    let created = api
        .create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("{what} create: {e}"));
    let meta = created.meta().clone();
    let name = meta.name.clone().unwrap();
    assert!(
        meta.uid.as_deref().is_some_and(|u| u.len() == 36),
        "{what} uid"
    );
    assert!(
        meta.creation_timestamp.is_some(),
        "{what} creationTimestamp"
    );
    let rv: u64 = meta.resource_version.clone().unwrap().parse().unwrap();
    let got = api.get(&name).await.unwrap();
    assert_eq!(got.meta().uid, meta.uid);
    let list = api.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|o| o.meta().name.as_deref() == Some(name.as_str())),
        "{what} listed"
    );
    let list_rv: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
    assert!(list_rv >= rv);
    let mut changed = got.clone();
    changed
        .meta_mut()
        .labels
        .get_or_insert_default()
        .insert("touched".into(), "yes".into());
    let updated = api
        .replace(&name, &PostParams::default(), &changed)
        .await
        .unwrap_or_else(|e| panic!("{what} update: {e}"));
    let new_rv: u64 = updated
        .meta()
        .resource_version
        .clone()
        .unwrap()
        .parse()
        .unwrap();
    assert!(new_rv > rv, "{what} rv increases");
    assert_eq!(updated.meta().labels.as_ref().unwrap()["touched"], "yes");
    api.delete(
        &name,
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await
    .unwrap();
    let err = api.get(&name).await.unwrap_err();
    assert_eq!(common::api_error(err).code, 404, "{what}");
}

fn template() -> Value {
    json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}})
}

#[tokio::test]
async fn crud_on_every_namespaced_resource() {
    let cluster = common::cluster().await;
    let c = || cluster.client();
    crud_round_trip::<Pod>(
        c(),
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .await;
    crud_round_trip::<PersistentVolumeClaim>(c(), json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})).await;
    crud_round_trip::<Event>(c(), json!({"metadata": {"name": "e.1"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "message": "m", "type": "Normal"})).await;
    crud_round_trip::<EventsV1Event>(c(), json!({"metadata": {"name": "e.2"}, "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "x", "reportingInstance": "y", "action": "A", "reason": "R", "type": "Normal"})).await;
    crud_round_trip::<Deployment>(c(), json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template()}})).await;
    crud_round_trip::<ReplicaSet>(c(), json!({"metadata": {"name": "r"}, "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template()}})).await;
    crud_round_trip::<StatefulSet>(c(), json!({"metadata": {"name": "s"}, "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "x"}}, "template": template()}})).await;
    crud_round_trip::<ControllerRevision>(
        c(),
        json!({"metadata": {"name": "s-1"}, "revision": 1, "data": {"spec": {}}}),
    )
    .await;
    crud_round_trip::<Lease>(c(), json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})).await;
}

#[tokio::test]
async fn namespaces_crud_and_initial_namespaces() {
    let cluster = common::cluster().await;
    let api: Api<Namespace> = Api::all(cluster.client());
    let names: Vec<String> = common::list_names(&api, &ListParams::default()).await;
    assert_eq!(names, vec!["default", "kube-node-lease", "kube-system"]);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    let created = common::create(&api, &ns).await;
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "team-a");
    common::create(&pods, &common::pod("p", json!({"a": "b"}))).await;
    common::delete(&api, "team-a", &DeleteParams::default()).await;
    assert!(!common::exists(&api, "team-a").await);
    assert!(
        Api::<Pod>::all(cluster.client())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn create_in_missing_namespace_is_404() {
    let cluster = common::cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "nowhere");
    let status = common::create_error(&pods, &common::pod("p", json!({}))).await;
    assert_eq!(status.code, 404);
    assert_eq!(status.reason, "NotFound");
    assert_eq!(status.message, "namespaces \"nowhere\" not found");
}

#[tokio::test]
async fn generate_name_uses_five_characters_of_the_upstream_alphabet() {
    let cluster = common::cluster().await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let mut pod = common::pod("", json!({"app": "web"}));
    pod.metadata.name = None;
    pod.metadata.generate_name = Some("web-896bb5df7-".into());
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let created = common::create(&pods, &pod).await;
        let name = created.metadata.name.unwrap();
        let suffix = name.strip_prefix("web-896bb5df7-").expect("prefix kept");
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(
            suffix
                .chars()
                .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)),
            "{name}"
        );
        assert_eq!(
            created.metadata.generate_name.as_deref(),
            Some("web-896bb5df7-")
        );
        names.insert(name);
    }
    assert_eq!(names.len(), 20);
}

#[tokio::test]
async fn status_bodies_for_404_and_409() {
    let cluster = common::cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let created = common::create(&deployments, &common::deployment("web", 2)).await;
    let exists = common::create_error(&deployments, &common::deployment("web", 2)).await;
    assert_eq!(
        (exists.code, exists.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(exists.message, "deployments.apps \"web\" already exists");

    let mut stale = created.clone();
    stale.metadata.resource_version = Some("1".into());
    let err = deployments
        .replace("web", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    let conflict = common::api_error(err);
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));

    // The raw bodies are the fixtures' byte for byte (modulo names).
    let http = reqwest_like_get(&cluster, "/api/v1/namespaces/default/pods/nope").await;
    let fixture: Value = common::fixture("status-404.json");
    assert_eq!(http, fixture);
}

/// A GET through the kube client's raw request API, parsed as JSON whatever the status.
async fn reqwest_like_get(cluster: &sim::SimCluster, path: &str) -> Value {
    let client = cluster.client();
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .unwrap();
    let body = resp.into_body().collect_bytes().await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

#[tokio::test]
async fn objects_serialize_in_upstream_field_order() {
    let (cluster, deployments) = common::quiet_api::<Deployment>().await;
    common::create(&deployments, &common::deployment("web", 2)).await;
    let req = http::Request::get("/apis/apps/v1/namespaces/default/deployments/web")
        .body(Vec::new())
        .unwrap();
    let text = cluster.client().request_text(req).await.unwrap();
    let got: Value = serde_json::from_str(&text).unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&got),
        vec!["kind", "apiVersion", "metadata", "spec", "status"]
    );
    assert_eq!(
        keys(&got["metadata"]),
        vec![
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "labels"
        ]
    );
}

#[tokio::test]
async fn metadata_only_lists_and_watches() {
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    common::create(&pods, &common::pod("p", json!({"app": "web"}))).await;
    let list = pods.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].metadata.labels.as_ref().unwrap()["app"],
        "web"
    );
    let mut stream = pods
        .watch_metadata(&WatchParams::default().disable_bookmarks().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Added(meta)) => assert_eq!(meta.metadata.name.as_deref(), Some("p")),
        other => panic!("unexpected {other:?}"),
    }
}
