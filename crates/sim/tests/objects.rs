//! Object semantics through `kube::Client`: generation rules, status and scale
//! subresources, conflicts, patches (merge, JSON, strategic), label and field selectors,
//! pagination, defaulting and validation errors.

mod common;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

#[tokio::test]
async fn generation_bumps_on_spec_changes_of_apps_objects_only() {
    let (cluster, deployments) = common::quiet_api::<Deployment>().await;
    let d = common::create(&deployments, &common::deployment("web", 1)).await;
    assert_eq!(d.metadata.generation, Some(1));
    let labels = json!({"metadata": {"labels": {"x": "y"}}});
    assert_eq!(
        generation_after(&deployments, "web", labels).await,
        Some(1),
        "metadata change keeps generation"
    );
    let replicas = json!({"spec": {"replicas": 3}});
    assert_eq!(
        generation_after(&deployments, "web", replicas).await,
        Some(2),
        "spec change bumps generation"
    );
    let status = deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3, "observedGeneration": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(
        status.metadata.generation,
        Some(2),
        "status change keeps generation"
    );

    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let p = common::create(&pods, &common::pod("p", json!({}))).await;
    assert_eq!(
        p.metadata.generation, None,
        "pods have no generation (v1.28)"
    );
    let deadline = json!({"spec": {"activeDeadlineSeconds": 5}});
    assert_eq!(generation_after(&pods, "p", deadline).await, None);
}

/// The `metadata.generation` of `name` after a merge patch with `patch`.
async fn generation_after<K>(api: &Api<K>, name: &str, patch: Value) -> Option<i64>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    common::patch(api, name, Patch::Merge(patch))
        .await
        .meta()
        .generation
}

#[tokio::test]
async fn status_subresource_changes_only_status_and_main_resource_never_status() {
    let (cluster, replicasets) = common::quiet_api::<ReplicaSet>().await;
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "rs"}, "spec": {"replicas": 2,
        "selector": {"matchLabels": {"app": "x"}}, "template": {"metadata": {"labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}, "status": {"replicas": 99}}))
    .unwrap();
    let created = common::create(&replicasets, &rs).await;
    assert_eq!(
        created.status.as_ref().map(|s| s.replicas),
        Some(0),
        "create resets status"
    );

    // `rs` with status.replicas and spec.replicas set, to write through one endpoint or the other.
    let with_replicas = |rs: &ReplicaSet, status: i32, spec: i32| {
        let mut changed = rs.clone();
        changed.status.as_mut().unwrap().replicas = status;
        changed.spec.as_mut().unwrap().replicas = Some(spec);
        changed
    };
    let after_main = replicasets
        .replace("rs", &PostParams::default(), &with_replicas(&created, 5, 4))
        .await
        .unwrap();
    assert_eq!(
        after_main.status.as_ref().unwrap().replicas,
        0,
        "main resource ignores status"
    );
    assert_eq!(after_main.spec.as_ref().unwrap().replicas, Some(4));

    let after_status = replicasets
        .replace_status(
            "rs",
            &PostParams::default(),
            &with_replicas(&after_main, 7, 1),
        )
        .await
        .unwrap();
    assert_eq!(after_status.status.as_ref().unwrap().replicas, 7);
    assert_eq!(
        after_status.spec.as_ref().unwrap().replicas,
        Some(4),
        "status subresource ignores spec"
    );

    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    common::create(&pods, &common::pod("p", json!({}))).await;
    let p = common::patch(
        &pods,
        "p",
        Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await;
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    let p = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
}

#[tokio::test]
async fn a_no_op_update_keeps_the_resource_version() {
    let (_cluster, deployments) = common::quiet_api::<Deployment>().await;
    let d = common::create(&deployments, &common::deployment("web", 1)).await;
    let again = deployments
        .replace("web", &PostParams::default(), &d)
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, d.metadata.resource_version);
}

/// A merge patch of a Scale's `spec.replicas`.
fn replicas_patch(replicas: i32) -> Patch<Value> {
    Patch::Merge(json!({"spec": {"replicas": replicas}}))
}

#[tokio::test]
async fn scale_subresource_of_each_workload() {
    let (cluster, deployments) = common::quiet_api::<Deployment>().await;
    common::create(&deployments, &common::deployment("web", 2)).await;
    let scale = deployments.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let scaled = deployments
        .patch_scale("web", &PatchParams::default(), &replicas_patch(5))
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(5));
    let d = deployments.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(5));
    assert_eq!(d.metadata.generation, Some(2));
    // A Scale with a stale resourceVersion conflicts.
    let stale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "web", "resourceVersion": "1"}, "spec": {"replicas": 1}});
    let stale: k8s_openapi::api::autoscaling::v1::Scale = serde_json::from_value(stale).unwrap();
    let err = deployments
        .replace_scale("web", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(common::api_error(err).code, 409);

    let statefulsets: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let sts: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {"serviceName": "db",
        "selector": {"matchLabels": {"app": "db"}}, "template": {"metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    common::create(&statefulsets, &sts).await;
    let scaled = statefulsets
        .patch_scale("db", &PatchParams::default(), &replicas_patch(3))
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(3));

    let replicasets: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let rs: ReplicaSet = serde_json::from_value(json!({"metadata": {"name": "rs"}, "spec": {"selector": {"matchLabels": {"app": "r"}},
        "template": {"metadata": {"labels": {"app": "r"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})).unwrap();
    common::create(&replicasets, &rs).await;
    let scale = replicasets.get_scale("rs").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(1));
    let mut body = scale.clone();
    body.spec.as_mut().unwrap().replicas = Some(0);
    let scaled = replicasets
        .replace_scale("rs", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(scaled.spec.unwrap().replicas, Some(0));
    assert_eq!(cluster.accounting().count("update", "replicasets/scale"), 1);
    assert_eq!(cluster.accounting().count("patch", "deployments/scale"), 1);
}

#[tokio::test]
async fn stale_resource_version_conflicts_through_patch_and_update() {
    let (_cluster, deployments) = common::quiet_api::<Deployment>().await;
    let d = common::create(&deployments, &common::deployment("web", 1)).await;
    let rv = d.metadata.resource_version.clone().unwrap();
    common::patch(
        &deployments,
        "web",
        Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await;
    let err = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": rv}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap_err();
    let status = common::api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let err = deployments
        .replace_status("web", &PostParams::default(), &d)
        .await
        .unwrap_err();
    assert_eq!(common::api_error(err).code, 409);
}

/// The uids of `pod`'s owner references, in order.
fn owner_uids(pod: &Pod) -> Vec<&str> {
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    owners.iter().map(|owner| owner.uid.as_str()).collect()
}

#[tokio::test]
async fn patch_types() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    let owner = |uid: &str| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{uid}"), "uid": uid, "controller": uid == "u1", "blockOwnerDeletion": true});
    let mut pod = common::pod("p", json!({"app": "web"}));
    pod.metadata.owner_references = Some(vec![serde_json::from_value(owner("u1")).unwrap()]);
    common::create(&pods, &pod).await;

    // Strategic merge: ownerReferences merged by uid, then one deleted with $patch: delete.
    let p = common::patch(
        &pods,
        "p",
        Patch::Strategic(
            json!({"metadata": {"ownerReferences": [owner("u2")], "labels": {"extra": "1"}}}),
        ),
    )
    .await;
    assert_eq!(owner_uids(&p), vec!["u1", "u2"]);
    assert_eq!(p.metadata.labels.unwrap().len(), 2, "labels merged");
    let p = common::patch(&pods, "p", Patch::Strategic(json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u1"}], "uid": p.metadata.uid}}))).await;
    assert_eq!(owner_uids(&p), vec!["u2"]);
    // Strategic merge: containers merged by name.
    let p = common::patch(
        &pods,
        "p",
        Patch::Strategic(json!({"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}})),
    )
    .await;
    let containers = p.spec.unwrap().containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1.26"));
    assert_eq!(
        containers[0].termination_message_path.as_deref(),
        Some("/dev/termination-log"),
        "other fields kept"
    );

    // JSON merge patch: null deletes.
    let p = common::patch(
        &pods,
        "p",
        Patch::Merge(json!({"metadata": {"labels": {"extra": null}}})),
    )
    .await;
    assert_eq!(
        p.metadata.labels.unwrap().keys().collect::<Vec<_>>(),
        vec!["app"]
    );

    // JSON patch.
    let ops: json_patch::Patch = serde_json::from_value(
        json!([{"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]),
    )
    .unwrap();
    let p = pods
        .patch("p", &PatchParams::default(), &Patch::<()>::Json(ops))
        .await
        .unwrap();
    assert_eq!(p.metadata.annotations.unwrap()["a"], "b");
    assert_eq!(cluster.accounting().count("patch", "pods"), 5);
}

#[tokio::test]
async fn label_and_field_selectors_on_list_and_watch() {
    let (cluster, pods) = common::quiet_api::<Pod>().await;
    for (name, labels) in [
        ("web-1", json!({"app": "web", "tier": "front"})),
        ("web-2", json!({"app": "web"})),
        ("db-1", json!({"app": "db"})),
        ("none", json!({})),
    ] {
        common::create(&pods, &common::pod(name, labels)).await;
    }
    let cases = [
        ("app=web", vec!["web-1", "web-2"]),
        ("app==web", vec!["web-1", "web-2"]),
        ("app!=web", vec!["db-1", "none"]),
        ("app in (web,db)", vec!["db-1", "web-1", "web-2"]),
        ("app notin (web)", vec!["db-1", "none"]),
        ("tier", vec!["web-1"]),
        ("!tier", vec!["db-1", "none", "web-2"]),
    ];
    for (selector, expected) in cases {
        let got = common::list_names(&pods, &ListParams::default().labels(selector)).await;
        assert_eq!(got, expected, "{selector}");
    }
    let got = common::list_names(&pods, &ListParams::default().fields("metadata.name=db-1")).await;
    assert_eq!(got, vec!["db-1"]);
    let all: Api<Pod> = Api::all(cluster.client());
    let got = common::list_names(
        &all,
        &ListParams::default().fields("metadata.namespace!=default"),
    )
    .await;
    assert!(got.is_empty());
    let err = pods
        .list(&ListParams::default().fields("spec.bogus=1"))
        .await
        .unwrap_err();
    assert_eq!(common::api_error(err).code, 400);

    // Watch with a selector: a label change moving an object out is a DELETED for the watcher.
    use futures::{StreamExt, TryStreamExt};
    use kube::api::{WatchEvent, WatchParams};
    let rv = common::list_resource_version(&pods).await;
    let mut stream = pods
        .watch(
            &WatchParams::default()
                .labels("app=web")
                .disable_bookmarks()
                .timeout(2),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    common::patch(
        &pods,
        "web-2",
        Patch::Merge(json!({"metadata": {"labels": {"app": "other"}}})),
    )
    .await;
    common::patch(
        &pods,
        "db-1",
        Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await;
    common::patch(
        &pods,
        "none",
        Patch::Merge(json!({"metadata": {"labels": {"app": "web"}}})),
    )
    .await;
    let mut events = Vec::new();
    while let Some(event) = stream.try_next().await.unwrap() {
        events.push(match event {
            WatchEvent::Added(p) => format!("ADDED {}", p.metadata.name.unwrap()),
            WatchEvent::Modified(p) => format!("MODIFIED {}", p.metadata.name.unwrap()),
            WatchEvent::Deleted(p) => format!("DELETED {}", p.metadata.name.unwrap()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(events, vec!["DELETED web-2", "ADDED none"]);

    let mut stream = pods
        .watch(
            &WatchParams::default()
                .fields("metadata.name=db-1")
                .disable_bookmarks()
                .timeout(1),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    let first = stream.try_next().await.unwrap();
    assert!(
        matches!(first, Some(WatchEvent::Added(p)) if p.metadata.name.as_deref() == Some("db-1"))
    );
    assert!(stream.try_next().await.unwrap().is_none());
}

#[tokio::test]
async fn event_field_selectors_for_kubectl_describe() {
    let (_cluster, events) = common::quiet_api::<Event>().await;
    for (name, kind, target, uid) in [
        ("a.1", "ReplicaSet", "web-1", "u1"),
        ("b.1", "Deployment", "web", "u2"),
        ("c.1", "ReplicaSet", "web-2", "u3"),
    ] {
        let ev: Event = serde_json::from_value(json!({"metadata": {"name": name},
            "involvedObject": {"kind": kind, "name": target, "namespace": "default", "uid": uid},
            "reason": "SuccessfulCreate", "message": "m", "type": "Normal", "source": {"component": "replicaset-controller"}})).unwrap();
        common::create(&events, &ev).await;
    }
    let selector = "involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.kind=ReplicaSet,involvedObject.uid=u1";
    let got: Vec<String> =
        common::list_names(&events, &ListParams::default().fields(selector)).await;
    assert_eq!(got, vec!["a.1"]);
    let got = events
        .list(&ListParams::default().fields("involvedObject.kind=ReplicaSet"))
        .await
        .unwrap()
        .items
        .len();
    assert_eq!(got, 2);
}

#[tokio::test]
async fn pagination_with_limit_and_continue() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    for i in 0..7 {
        common::create(
            &pods,
            &common::pod(
                &format!("p{i}"),
                json!({"app": if i % 2 == 0 { "even" } else { "odd" }}),
            ),
        )
        .await;
    }
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(3);
    let mut pages = 0;
    let mut first_rv = None;
    loop {
        let page = pods.list(&params).await.unwrap();
        pages += 1;
        first_rv.get_or_insert(page.metadata.resource_version.clone());
        assert_eq!(
            page.metadata.resource_version,
            first_rv.clone().unwrap(),
            "pages share the list's version"
        );
        names.extend(page.items.into_iter().filter_map(|p| p.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                if pages == 1 {
                    assert_eq!(page.metadata.remaining_item_count, Some(4));
                }
                params = params.continue_token(&token);
            }
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>());
    let page = pods
        .list(&ListParams::default().labels("app=even").limit(2))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.metadata.remaining_item_count, Some(2));
}

/// The spec of the upstream object recorded in fixture `file`, as JSON after a round trip
/// through `K` (so both sides of a comparison carry the same fields).
fn fixture_spec<K: DeserializeOwned + Serialize>(file: &str) -> Value {
    let object: K = serde_json::from_value(common::fixture(file)).unwrap();
    serde_json::to_value(object).unwrap()["spec"].take()
}

#[tokio::test]
async fn defaulting_matches_upstream() {
    let (cluster, deployments) = common::quiet_api::<Deployment>().await;
    let d = common::create(&deployments, &common::deployment("web", 2)).await;
    assert_eq!(
        serde_json::to_value(d.spec.unwrap()).unwrap(),
        fixture_spec::<Deployment>("deployment.json")
    );

    let statefulsets: Api<StatefulSet> = Api::namespaced(cluster.client(), "default");
    let sts: StatefulSet = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"note": "a<b & c>d"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "env": [{"name": "X", "value": "1"}],
            "resources": {"requests": {"cpu": "500m", "memory": "1536Mi"}}}]}}}})).unwrap();
    let created = common::create(&statefulsets, &sts).await;
    assert_eq!(
        serde_json::to_value(created.spec.unwrap()).unwrap(),
        fixture_spec::<StatefulSet>("statefulset.json")
    );

    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let p = common::create(&pods, &common::pod("p", json!({}))).await;
    let spec = p.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(spec.scheduler_name.as_deref(), Some("default-scheduler"));
    assert_eq!(spec.termination_grace_period_seconds, Some(30));
    assert_eq!(
        spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    assert_eq!(p.status.unwrap().qos_class.as_deref(), Some("BestEffort"));
}

#[tokio::test]
async fn validation_errors_are_422_with_causes() {
    let (_cluster, deployments) = common::quiet_api::<Deployment>().await;
    let mut bad = common::deployment("bad", 1);
    bad.spec.as_mut().unwrap().selector.match_labels =
        Some([("app".to_string(), "other".to_string())].into());
    bad.spec
        .as_mut()
        .unwrap()
        .template
        .metadata
        .as_mut()
        .unwrap()
        .labels = Some([("app".to_string(), "web".to_string())].into());
    let status = common::create_error(&deployments, &bad).await;
    let fixture: Value = common::fixture("status-422-invalid.json");
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        serde_json::to_value(serde_json::from_value::<kube::core::Status>(fixture).unwrap())
            .unwrap()
    );

    let mut negative = common::deployment("neg", -1);
    negative.metadata.name = Some("neg".into());
    let status = common::create_error(&deployments, &negative).await;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert_eq!(status.details.unwrap().causes[0].field, "spec.replicas");

    let mut empty = common::deployment("empty", 1);
    empty.spec.as_mut().unwrap().selector = Default::default();
    let status = common::create_error(&deployments, &empty).await;
    assert_eq!(status.code, 422);

    let bad_name = common::deployment("Not_A_Name", 1);
    let status = common::create_error(&deployments, &bad_name).await;
    assert_eq!(status.details.unwrap().causes[0].field, "metadata.name");

    common::create(&deployments, &common::deployment("web", 1)).await;
    let status = common::api_error(
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"spec": {"selector": {"matchLabels": {"app": "web", "v": "2"}}}}),
                ),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 422, "selector is immutable");
}

#[tokio::test]
async fn dry_run_is_refused_rather_than_applied() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let status = common::api_error(
        pods.create(&params, &common::pod("p", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 400);
    assert!(!common::exists(&pods, "p").await, "nothing written");
}

#[tokio::test]
async fn adopt_and_release_patches_as_controllers_send_them() {
    let (_cluster, pods) = common::quiet_api::<Pod>().await;
    let pod = common::create(&pods, &common::pod("p", json!({"app": "web"}))).await;
    let uid = pod.metadata.uid.clone().unwrap();
    let owner = |name: &str, owner_uid: &str| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": owner_uid, "controller": true, "blockOwnerDeletion": true});
    let adopt = json!({"metadata": {"ownerReferences": [owner("rs-a", "a")], "uid": uid}});
    let adopted = common::patch(&pods, "p", Patch::Strategic(adopt)).await;
    assert_eq!(adopted.metadata.owner_references.unwrap()[0].uid, "a");

    // A second controller reference is refused.
    let second = json!({"metadata": {"ownerReferences": [owner("rs-b", "b")], "uid": uid}});
    let status = common::api_error(
        pods.patch("p", &PatchParams::default(), &Patch::Strategic(second))
            .await
            .unwrap_err(),
    );
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("Only one reference can have Controller set to true"),
        "{}",
        status.message
    );

    // The uid precondition: a patch carrying another uid is Invalid (object recreated).
    let stale = json!({"metadata": {"uid": "not-this-one", "ownerReferences": [{"$patch": "delete", "uid": "a"}]}});
    let status = common::api_error(
        pods.patch("p", &PatchParams::default(), &Patch::Strategic(stale))
            .await
            .unwrap_err(),
    );
    assert_eq!(status.code, 422);
    assert_eq!(status.details.unwrap().causes[0].field, "metadata.uid");

    let release =
        json!({"metadata": {"uid": uid, "ownerReferences": [{"$patch": "delete", "uid": "a"}]}});
    let released = common::patch(&pods, "p", Patch::Strategic(release)).await;
    assert!(
        released
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
}

#[tokio::test]
async fn deployment_status_writes_keep_annotation_changes_but_not_labels_or_spec() {
    let cluster = common::cluster_without_kubelet().await;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(cluster.client(), "default");
    let created = common::create(&deployments, &common::deployment("web", 2)).await;
    let mut through_status = created.clone();
    through_status.metadata.annotations = Some(
        [(
            "deployment.kubernetes.io/revision".to_string(),
            "1".to_string(),
        )]
        .into(),
    );
    through_status.metadata.labels = Some([("app".to_string(), "changed".to_string())].into());
    through_status.spec.as_mut().unwrap().replicas = Some(9);
    let after = deployments
        .replace_status("web", &PostParams::default(), &through_status)
        .await
        .unwrap();
    assert_eq!(
        after.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "1",
        "upstream's deployment status strategy keeps annotation changes"
    );
    assert_eq!(
        after.metadata.labels.unwrap()["app"],
        "web",
        "labels are reset"
    );
    assert_eq!(after.spec.unwrap().replicas, Some(2), "spec is reset");
}
