//! The toolkit against the in-process sim API server through a real `kube::Client`: claiming
//! (adopt, release, refusals), pod control and the event recorder, checked on the objects the
//! server stores and on its request accounting.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_toolkit::controller_ref::{ClaimResult, ControllerRefManager, recheck_deletion};
use controller_toolkit::events::{EventRecorder, EventType, RecorderConfig, RetryConfig};
use controller_toolkit::new_controller_ref;
use controller_toolkit::pod_control::{PodControl, PodControlError};
use controller_toolkit::runtime::{
    ControllerIdentity, ControllerRuntime, OwnerRouting, RetryBackoff, RuntimeOptions,
};
use controller_toolkit::writes::Writer;
use expectations::UidTrackingExpectations;
use informer::{
    CachedPod, CachedReplicaSet, EventHandler, FactoryConfig, LabelMatcher, SharedInformerFactory,
};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{
    ControllerRevision, Deployment, ReplicaSet, ReplicaSetSpec, StatefulSet,
};
use k8s_openapi::api::core::v1::{Event, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sim::SimCluster;
use sim::testing::{quiet_config, workload};
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const COMPONENT: &str = "replicaset-controller";

/// A quiet sim (no kubelet) and the test's client.
async fn start_sim() -> (SimCluster, Client) {
    let sim = SimCluster::start(quiet_config()).await.expect("sim starts");
    let client = sim.client();
    (sim, client)
}

/// A quiet sim holding the ReplicaSet `name` (selecting `app=web`), and the test's client.
async fn sim_with_replica_set(name: &str) -> (SimCluster, Client, ReplicaSet) {
    let (sim, client) = start_sim().await;
    let rs = create_rs(&client, name, "web", None).await;
    (sim, client, rs)
}

/// [`sim_with_replica_set`], with pod control acting for the ReplicaSet and the recorder its
/// events go through.
async fn sim_with_pod_control(
    name: &str,
) -> (SimCluster, Client, ReplicaSet, PodControl, EventRecorder) {
    let (sim, client, rs) = sim_with_replica_set(name).await;
    let recorder = recorder(&client);
    let control = PodControl::new(Writer::new(client.clone()), recorder.clone());
    (sim, client, rs, control, recorder)
}

/// An event recorder for [`COMPONENT`].
fn recorder(client: &Client) -> EventRecorder {
    EventRecorder::start(client.clone(), RecorderConfig::new(COMPONENT))
}

/// The `K`s of [`NS`], through `client`.
fn api<K>(client: &Client) -> Api<K>
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>,
{
    Api::namespaced(client.clone(), NS)
}

/// Creates `object` in [`NS`] and returns it as the server stored it.
async fn create<K>(client: &Client, object: &K) -> K
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    api::<K>(client)
        .create(&PostParams::default(), object)
        .await
        .unwrap_or_else(|e| panic!("{} created: {e}", K::kind(&())))
}

/// Deletes the `K` named `name` from [`NS`] (gracefully, as `kubectl delete` would).
async fn delete<K>(client: &Client, name: &str)
where
    K: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    api::<K>(client)
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("delete of {} {name} accepted: {e}", K::kind(&())));
}

fn rs_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("apps", "v1", "ReplicaSet")
}

/// `object` decoded as a `K` (a test's literal object).
fn typed<K: DeserializeOwned>(object: serde_json::Value) -> K {
    serde_json::from_value(object).expect("valid object")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Pods labelled `app=<app>` running `nginx:1.25`, with an annotation that needs escaping.
fn template(app: &str) -> PodTemplateSpec {
    typed(serde_json::json!({
        "metadata": {"labels": {"app": app}, "annotations": {"note": "a<b & c>d"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}
    }))
}

async fn create_rs(
    client: &Client,
    name: &str,
    app: &str,
    finalizers: Option<Vec<String>>,
) -> ReplicaSet {
    let rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels(&[("app", app)])),
            finalizers,
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: Some(labels(&[("app", app)])),
                ..LabelSelector::default()
            },
            template: Some(template(app)),
            ..ReplicaSetSpec::default()
        }),
        ..ReplicaSet::default()
    };
    create(client, &rs).await
}

async fn create_pod(
    client: &Client,
    name: &str,
    app: &str,
    owners: Vec<OwnerReference>,
) -> Arc<CachedPod> {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels(&[("app", app)])),
            owner_references: (!owners.is_empty()).then_some(owners),
            ..ObjectMeta::default()
        },
        spec: template(app).spec,
        status: None,
    };
    Arc::new(CachedPod::from(create(client, &pod).await))
}

fn manager_for(client: &Client, rs: &ReplicaSet) -> ControllerRefManager {
    let selector = rs.spec.as_ref().map(|s| &s.selector);
    owner_manager(client, rs, &rs_gvk(), selector)
}

/// The claim manager of `owner` (of kind `gvk`, selecting with `selector`), which rechecks
/// the owner live before adopting.
fn owner_manager<O>(
    client: &Client,
    owner: &O,
    gvk: &GroupVersionKind,
    selector: Option<&LabelSelector>,
) -> ControllerRefManager
where
    O: kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let can_adopt = recheck_deletion(api::<O>(client), owner);
    let selector: LabelMatcher = selector
        .cloned()
        .unwrap_or_default()
        .try_into()
        .expect("valid selector");
    ControllerRefManager::new(Writer::new(client.clone()), owner, gvk, selector, can_adopt)
}

/// A pod `name` of `app=web` controlled by `rs`.
async fn owned_pod(client: &Client, name: &str, rs: &ReplicaSet) -> Arc<CachedPod> {
    create_pod(client, name, "web", vec![new_controller_ref(rs, &rs_gvk())]).await
}

async fn live_pod(client: &Client, name: &str) -> Pod {
    api::<Pod>(client).get(name).await.expect("pod exists")
}

fn names<T: kube::Resource>(result: &ClaimResult<T>) -> Vec<String> {
    result
        .claimed
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

fn other_owner() -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "ConfigMap".to_owned(),
        name: "keeper".to_owned(),
        uid: "configmap-uid".to_owned(),
        controller: None,
        block_owner_deletion: None,
    }
}

#[tokio::test]
async fn adopts_orphans_with_one_live_recheck() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let orphan_a = create_pod(&client, "orphan-a", "web", vec![other_owner()]).await;
    let orphan_b = create_pod(&client, "orphan-b", "web", vec![]).await;
    let stranger = create_pod(&client, "stranger", "db", vec![]).await;
    let gets_before = sim.accounting().count("get", "replicasets");

    // Claiming runs on a spawned task, as in a controller's workers (the future is Send).
    let manager = manager_for(&client, &rs);
    let result = tokio::spawn(async move { manager.claim(&[orphan_a, orphan_b, stranger]).await })
        .await
        .expect("claim task finished");

    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(names(&result), ["orphan-a", "orphan-b"]);
    let want = new_controller_ref(&rs, &rs_gvk());
    assert_eq!(
        live_pod(&client, "orphan-a")
            .await
            .metadata
            .owner_references,
        Some(vec![other_owner(), want.clone()]),
        "the adopt patch merges by uid and keeps the other owner"
    );
    assert_eq!(
        live_pod(&client, "orphan-b")
            .await
            .metadata
            .owner_references,
        Some(vec![want])
    );
    assert_eq!(
        live_pod(&client, "stranger")
            .await
            .metadata
            .owner_references,
        None
    );
    let accounting = sim.accounting();
    assert_eq!(
        accounting.count("get", "replicasets") - gets_before,
        1,
        "one live GET per manager"
    );
    assert_eq!(accounting.count("patch", "pods"), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn releases_pods_that_stop_matching_and_keeps_other_owners() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let ours = new_controller_ref(&rs, &rs_gvk());
    let moved = create_pod(&client, "moved", "db", vec![other_owner(), ours.clone()]).await;
    let kept = create_pod(&client, "kept", "web", vec![ours.clone()]).await;
    let gets_before = sim.accounting().count("get", "replicasets");

    let result = manager_for(&client, &rs).claim(&[moved, kept]).await;

    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(names(&result), ["kept"]);
    assert_eq!(
        live_pod(&client, "moved").await.metadata.owner_references,
        Some(vec![other_owner()])
    );
    assert_eq!(
        live_pod(&client, "kept").await.metadata.owner_references,
        Some(vec![ours])
    );
    assert_eq!(
        sim.accounting().count("get", "replicasets"),
        gets_before,
        "releasing needs no recheck"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn release_of_a_vanished_pod_is_not_an_error() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let ours = new_controller_ref(&rs, &rs_gvk());
    let gone = create_pod(&client, "gone", "db", vec![ours]).await;
    delete::<Pod>(&client, "gone").await;

    let result = manager_for(&client, &rs).claim(&[gone]).await;

    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert!(result.claimed.is_empty());
    sim.shutdown().await;
}

#[tokio::test]
async fn owner_being_deleted_in_cache_adopts_and_releases_nothing() {
    let (sim, client, mut rs) = sim_with_replica_set("web").await;
    let ours = new_controller_ref(&rs, &rs_gvk());
    let orphan = create_pod(&client, "orphan", "web", vec![]).await;
    let moved = create_pod(&client, "moved", "db", vec![ours.clone()]).await;
    rs.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::now(),
    ));

    let result = manager_for(&client, &rs).claim(&[orphan, moved]).await;

    assert!(result.errors.is_empty());
    assert!(result.claimed.is_empty());
    assert_eq!(
        live_pod(&client, "orphan").await.metadata.owner_references,
        None
    );
    assert_eq!(
        live_pod(&client, "moved").await.metadata.owner_references,
        Some(vec![ours])
    );
    assert_eq!(sim.accounting().count("patch", "pods"), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn live_recheck_refuses_an_owner_deleted_since_the_cache_saw_it() {
    let (sim, client) = start_sim().await;
    let finalizer = "example.com/hold".to_owned();
    let cached = create_rs(&client, "web", "web", Some(vec![finalizer])).await;
    let orphan = create_pod(&client, "orphan", "web", vec![]).await;
    delete::<ReplicaSet>(&client, "web").await;
    let live = api::<ReplicaSet>(&client)
        .get("web")
        .await
        .expect("held by the finalizer");
    let deleted_at = live
        .metadata
        .deletion_timestamp
        .as_ref()
        .expect("deletionTimestamp set")
        .0
        .strftime("%Y-%m-%d %H:%M:%S")
        .to_string();

    let result = manager_for(&client, &cached)
        .claim(std::slice::from_ref(&orphan))
        .await;

    assert!(result.claimed.is_empty());
    let messages: Vec<String> = result.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [format!(
            "can't adopt Pod default/orphan ({}): default/web has just been deleted at {deleted_at} +0000 UTC",
            orphan.metadata.uid.as_deref().unwrap_or_default()
        )]
    );
    assert_eq!(
        live_pod(&client, "orphan").await.metadata.owner_references,
        None
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn live_recheck_refuses_an_owner_replaced_by_a_namesake() {
    let (sim, client) = start_sim().await;
    let cached = create_rs(&client, "web", "web", None).await;
    let first = create_pod(&client, "orphan-1", "web", vec![]).await;
    let second = create_pod(&client, "orphan-2", "web", vec![]).await;
    delete::<ReplicaSet>(&client, "web").await;
    let replacement = create_rs(&client, "web", "web", None).await;
    let gets_before = sim.accounting().count("get", "replicasets");

    let result = manager_for(&client, &cached)
        .claim(&[first.clone(), second.clone()])
        .await;

    assert!(result.claimed.is_empty());
    let reason = format!(
        "can't recheck DeletionTimestamp: original ReplicaSet default/web is gone: got uid {}, wanted {}",
        replacement.metadata.uid.as_deref().unwrap_or_default(),
        cached.metadata.uid.as_deref().unwrap_or_default()
    );
    let messages: Vec<String> = result.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [first, second].map(|pod| format!(
            "can't adopt Pod default/{} ({}): {reason}",
            pod.metadata.name.as_deref().unwrap_or_default(),
            pod.metadata.uid.as_deref().unwrap_or_default()
        ))
    );
    assert_eq!(
        sim.accounting().count("get", "replicasets") - gets_before,
        1,
        "the failed check is cached for the manager"
    );
    assert_eq!(sim.accounting().count("patch", "pods"), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn deployment_adopts_an_orphan_replica_set() {
    let (sim, client) = start_sim().await;
    let deployment: Deployment = create(&client, &typed(workload("Deployment", "web", 0))).await;
    let orphan = Arc::new(
        CachedReplicaSet::try_from(&create_rs(&client, "web-1", "web", None).await)
            .expect("cached form"),
    );
    let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
    let selector = deployment.spec.as_ref().map(|s| &s.selector);
    let manager = owner_manager(&client, &deployment, &gvk, selector);

    let result = manager.claim(&[orphan]).await;

    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(names(&result), ["web-1"]);
    let live = api::<ReplicaSet>(&client)
        .get("web-1")
        .await
        .expect("exists");
    assert_eq!(
        live.metadata.owner_references,
        Some(vec![new_controller_ref(&deployment, &gvk)])
    );
    sim.shutdown().await;
}

async fn events_for(client: &Client, object: &str) -> Vec<Event> {
    let mut events: Vec<Event> = api::<Event>(client)
        .list(&ListParams::default())
        .await
        .expect("events listed")
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(object))
        .collect();
    events.sort_by(|a, b| a.message.cmp(&b.message));
    events
}

#[tokio::test]
async fn creates_pods_from_the_template_and_records_upstream_events() {
    let (sim, client, rs, control, recorder) = sim_with_pod_control("web-896bb5df7").await;
    let controller_ref = new_controller_ref(&rs, &rs_gvk());
    let template = rs
        .spec
        .as_ref()
        .and_then(|s| s.template.clone())
        .expect("template");

    let created = tokio::spawn({
        let (control, template, rs, controller_ref) = (
            control.clone(),
            template.clone(),
            rs.clone(),
            controller_ref.clone(),
        );
        async move {
            control
                .create_pods(NS, &template, &rs, &controller_ref)
                .await
        }
    })
    .await
    .expect("create task finished")
    .expect("pod created");
    let named = control
        .create_pods_with_generate_name(NS, &template, &rs, &controller_ref, "custom-")
        .await
        .expect("pod created");

    let name = created.name.clone().expect("server generated a name");
    assert!(
        name.starts_with("web-896bb5df7-") && name.len() == "web-896bb5df7-".len() + 5,
        "{name}"
    );
    assert!(
        named
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("custom-"))
    );
    let live = live_pod(&client, &name).await;
    assert_eq!(
        live.metadata.generate_name.as_deref(),
        Some("web-896bb5df7-")
    );
    assert_eq!(live.metadata.labels, Some(labels(&[("app", "web")])));
    assert_eq!(
        live.metadata.annotations,
        Some(labels(&[("note", "a<b & c>d")]))
    );
    assert_eq!(live.metadata.owner_references, Some(vec![controller_ref]));

    recorder.flush().await;
    let events = events_for(&client, "web-896bb5df7").await;
    let messages: Vec<&str> = events.iter().filter_map(|e| e.message.as_deref()).collect();
    let custom = named.name.as_deref().unwrap_or_default();
    assert_eq!(
        messages,
        [
            format!("Created pod: {custom}"),
            format!("Created pod: {name}")
        ]
    );
    let event = &events[1];
    assert_eq!(event.reason.as_deref(), Some("SuccessfulCreate"));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.count, Some(1));
    assert_eq!(event.first_timestamp, event.last_timestamp);
    assert!(event.first_timestamp.is_some());
    assert_eq!(event.event_time, None);
    assert_eq!(
        event.source.as_ref().and_then(|s| s.component.as_deref()),
        Some(COMPONENT)
    );
    assert_eq!(event.reporting_component.as_deref(), Some(COMPONENT));
    assert_eq!(event.reporting_instance.as_deref().unwrap_or_default(), "");
    let event_name = event.metadata.name.as_deref().unwrap_or_default();
    let suffix = event_name
        .strip_prefix("web-896bb5df7.")
        .expect("named after the object");
    assert!(
        suffix.len() >= 16 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
        "{event_name}"
    );
    let involved = &event.involved_object;
    assert_eq!(involved.api_version.as_deref(), Some("apps/v1"));
    assert_eq!(involved.kind.as_deref(), Some("ReplicaSet"));
    assert_eq!(involved.name, rs.metadata.name);
    assert_eq!(involved.namespace.as_deref(), Some(NS));
    assert_eq!(involved.uid, rs.metadata.uid);
    assert_eq!(involved.resource_version, rs.metadata.resource_version);
    sim.shutdown().await;
}

#[tokio::test]
async fn refuses_templates_without_labels_and_bad_refs_without_calling_the_server() {
    let (sim, _, rs, control, _) = sim_with_pod_control("web").await;
    let mut unlabelled = template("web");
    if let Some(meta) = unlabelled.metadata.as_mut() {
        meta.labels = None;
    }
    let controller_ref = new_controller_ref(&rs, &rs_gvk());
    let no_labels = control
        .create_pods(NS, &unlabelled, &rs, &controller_ref)
        .await;
    assert!(matches!(no_labels, Err(PodControlError::NoLabels)));
    let not_blocking = OwnerReference {
        block_owner_deletion: None,
        ..controller_ref
    };
    let bad_ref = control
        .create_pods(NS, &template("web"), &rs, &not_blocking)
        .await;
    assert_eq!(
        bad_ref.err().map(|e| e.to_string()).as_deref(),
        Some("controllerRef.BlockOwnerDeletion is not set")
    );
    assert_eq!(sim.accounting().count("create", "pods"), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn failed_create_records_a_warning_with_the_server_message() {
    let (sim, client, rs, control, recorder) = sim_with_pod_control("web").await;
    let controller_ref = new_controller_ref(&rs, &rs_gvk());

    let err = control
        .create_pods("no-such-namespace", &template("web"), &rs, &controller_ref)
        .await
        .expect_err("namespace does not exist");

    recorder.flush().await;
    let events = events_for(&client, "web").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].reason.as_deref(), Some("FailedCreate"));
    assert_eq!(events[0].type_.as_deref(), Some("Warning"));
    assert_eq!(
        events[0].message.as_deref(),
        Some(format!("Error creating: {err}").as_str())
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn deletes_pods_and_reports_not_found_without_an_event() {
    let (sim, client, rs, control, recorder) = sim_with_pod_control("web").await;
    let victim = owned_pod(&client, "victim", &rs).await;

    control.delete_pod(&victim, &rs).await.expect("deleted");
    let missing = control.delete_pod(&victim, &rs).await;

    assert!(
        missing.as_ref().is_err_and(PodControlError::is_not_found),
        "{missing:?}"
    );
    let pods = api::<Pod>(&client);
    assert!(pods.get_opt("victim").await.expect("get works").is_none());
    recorder.flush().await;
    let events = events_for(&client, "web").await;
    let summary: Vec<(Option<String>, Option<String>)> = events
        .iter()
        .map(|e| (e.reason.clone(), e.message.clone()))
        .collect();
    assert_eq!(
        summary,
        [(
            Some("SuccessfulDelete".to_owned()),
            Some("Deleted pod: victim".to_owned())
        )]
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_repeated_event_is_patched_into_count_two() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let recorder = recorder(&client);
    let quota_exceeded = || {
        let message = "Error creating: quota exceeded";
        recorder.record(&rs, EventType::Warning, "FailedCreate", message);
    };

    quota_exceeded();
    recorder.flush().await;
    let first = events_for(&client, "web").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    quota_exceeded();
    recorder.record(
        &rs,
        EventType::Normal,
        "SuccessfulCreate",
        "Created pod: web-x",
    );
    recorder.flush().await;

    let events = events_for(&client, "web").await;
    assert_eq!(events.len(), 2, "{events:?}");
    let repeated = &events[1];
    assert_eq!(
        repeated.message.as_deref(),
        Some("Error creating: quota exceeded")
    );
    assert_eq!(repeated.count, Some(2));
    assert_eq!(repeated.metadata.name, first[0].metadata.name);
    assert_eq!(repeated.first_timestamp, first[0].first_timestamp);
    assert!(repeated.last_timestamp > repeated.first_timestamp);
    assert_eq!(events[0].count, Some(1));
    let accounting = sim.accounting();
    assert_eq!(accounting.count("create", "events"), 2);
    assert_eq!(accounting.count("patch", "events"), 1);
    sim.shutdown().await;
}

#[tokio::test]
async fn a_repeat_of_an_event_deleted_meanwhile_is_created_again() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let recorder = recorder(&client);
    recorder.record(&rs, EventType::Normal, "SuccessfulDelete", "Deleted pod: p");
    recorder.flush().await;
    let first = events_for(&client, "web").await;
    let first_name = first[0].metadata.name.clone().expect("named");
    delete::<Event>(&client, &first_name).await;

    recorder.record(&rs, EventType::Normal, "SuccessfulDelete", "Deleted pod: p");
    recorder.flush().await;

    let events = events_for(&client, "web").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].count, Some(2));
    assert_eq!(sim.accounting().count("patch", "events"), 1);
    assert_eq!(sim.accounting().count("create", "events"), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn recording_never_waits_for_the_server() {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    sim.set_faults(sim::FaultConfig {
        latency: std::time::Duration::from_millis(200),
        ..sim::FaultConfig::default()
    });
    let config = RecorderConfig {
        queue_capacity: 2,
        ..RecorderConfig::new(COMPONENT)
    };
    let recorder = EventRecorder::start(client.clone(), config);
    for i in 0..20 {
        recorder.record(
            &rs,
            EventType::Normal,
            "SuccessfulCreate",
            format!("Created pod: p{i}"),
        );
    }
    recorder.flush().await;
    sim.set_faults(sim::FaultConfig::default());

    let written = events_for(&client, "web").await.len();
    assert!(
        (1..20).contains(&written),
        "a full queue drops events, wrote {written}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn failed_delete_records_a_warning_and_wraps_the_error() {
    let (sim, client, rs, control, recorder) = sim_with_pod_control("web").await;
    let victim = owned_pod(&client, "victim", &rs).await;

    // On this current-thread runtime the event writer cannot run between the failed delete
    // and the reset of the faults, so only the delete sees them.
    sim.set_faults(sim::FaultConfig {
        write_500: 1.0,
        ..sim::FaultConfig::default()
    });
    let failed = control.delete_pod(&victim, &rs).await;
    sim.set_faults(sim::FaultConfig::default());

    let err = failed.expect_err("the server failed the delete");
    assert!(!err.is_not_found());
    let message = err.to_string();
    let server_message = message
        .strip_prefix("unable to delete pods: ")
        .expect("wrapped like upstream");
    recorder.flush().await;
    let events = events_for(&client, "web").await;
    let summary: Vec<(Option<&str>, Option<&str>, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e.type_.as_deref(),
                e.reason.as_deref(),
                e.message.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [(
            Some("Warning"),
            Some("FailedDelete"),
            Some(format!("Error deleting: {server_message}").as_str())
        )]
    );
    assert!(
        live_pod(&client, "victim")
            .await
            .metadata
            .deletion_timestamp
            .is_none()
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn stateful_set_claims_controller_revisions() {
    let (sim, client) = start_sim().await;
    let set: StatefulSet = create(&client, &typed(workload("StatefulSet", "db", 0))).await;
    let gvk = GroupVersionKind::gvk("apps", "v1", "StatefulSet");
    let ours = new_controller_ref(&set, &gvk);
    let revisions = api::<ControllerRevision>(&client);
    let revision =
        |name: &str, app: &str, owners: Option<Vec<OwnerReference>>| ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels(&[("app", app)])),
                owner_references: owners,
                ..ObjectMeta::default()
            },
            data: None,
            revision: 1,
        };
    let mut cached = Vec::new();
    for rev in [
        revision("db-1", "db", None),
        revision("db-2", "other", Some(vec![ours.clone()])),
    ] {
        cached.push(Arc::new(create(&client, &rev).await));
    }
    let manager = owner_manager(&client, &set, &gvk, set.spec.as_ref().map(|s| &s.selector));

    let result = manager.claim(&cached).await;

    assert!(result.errors.is_empty(), "{:?}", result.errors);
    assert_eq!(names(&result), ["db-1"]);
    let owners = |rev: ControllerRevision| rev.metadata.owner_references.unwrap_or_default();
    assert_eq!(owners(revisions.get("db-1").await.expect("exists")), [ours]);
    assert_eq!(owners(revisions.get("db-2").await.expect("exists")), []);
    sim.shutdown().await;
}

/// A TCP front for the sim that drops the first `drops` connections (a network failure as the
/// client sees it) and relays later ones to the sim.
async fn flaky_front(sim: &SimCluster, drops: usize) -> Client {
    let target = sim.addr();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind front");
    let front = listener.local_addr().expect("front address");
    tokio::spawn(async move {
        let mut dropped = 0;
        while let Ok((mut inbound, _)) = listener.accept().await {
            if dropped < drops {
                dropped += 1;
                drop(inbound);
                continue;
            }
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    let uri: http::Uri = format!("http://{front}").parse().expect("valid uri");
    Client::try_from(kube::Config::new(uri)).expect("client")
}

fn quick_retries(attempts: u32) -> RecorderConfig {
    RecorderConfig {
        retry: RetryConfig {
            max_attempts: attempts,
            interval: std::time::Duration::from_millis(10),
        },
        ..RecorderConfig::new(COMPONENT)
    }
}

/// Records one event about the ReplicaSet `web` through a front dropping the first `drops`
/// connections, with `attempts` attempts per write, and waits until the recorder is done;
/// returns the sim and the test's client.
async fn record_through_flaky_front(drops: usize, attempts: u32) -> (SimCluster, Client) {
    let (sim, client, rs) = sim_with_replica_set("web").await;
    let recorder = EventRecorder::start(flaky_front(&sim, drops).await, quick_retries(attempts));
    recorder.record(&rs, EventType::Normal, "SuccessfulCreate", "Created pod: p");
    recorder.flush().await;
    (sim, client)
}

#[tokio::test]
async fn event_writes_are_retried_while_the_server_is_unreachable() {
    let (sim, client) = record_through_flaky_front(2, 4).await;

    let events = events_for(&client, "web").await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].count, Some(1));
    sim.shutdown().await;
}

#[tokio::test]
async fn event_writes_give_up_after_the_configured_attempts() {
    let (sim, client) = record_through_flaky_front(3, 3).await;

    assert!(events_for(&client, "web").await.is_empty());
    assert_eq!(sim.accounting().count("create", "events"), 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn never_deletes_a_namesake_of_the_chosen_pod() {
    let (sim, client, rs, control, _) = sim_with_pod_control("web").await;
    let chosen = owned_pod(&client, "victim", &rs).await;
    // The pod is replaced under the same name after the controller chose it from its cache.
    let pods = api::<Pod>(&client);
    pods.delete(
        "victim",
        &kube::api::DeleteParams::default().grace_period(0),
    )
    .await
    .expect("delete");
    let namesake = create_pod(&client, "victim", "web", vec![]).await;

    let result = control.delete_pod(&chosen, &rs).await;
    assert!(
        result.is_err(),
        "the UID precondition must refuse the delete"
    );
    let survivor = pods.get("victim").await.expect("namesake still there");
    assert_eq!(survivor.metadata.uid, namesake.metadata.uid);
    sim.shutdown().await;
}

/// Records, at the instant the pod cache applies each pod's addition, whether the expectations
/// of `default/<owner>` were satisfied then.
struct SatisfiedWhenCached {
    expectations: Arc<UidTrackingExpectations>,
    owner_key: String,
    seen: Arc<Mutex<Vec<bool>>>,
}

impl EventHandler<CachedPod> for SatisfiedWhenCached {
    fn on_add(&self, _pod: &Arc<CachedPod>, is_in_initial_list: bool) {
        if !is_in_initial_list {
            self.seen
                .lock()
                .push(self.expectations.satisfied_expectations(&self.owner_key));
        }
    }

    fn on_update(&self, _old: &Arc<CachedPod>, _new: &Arc<CachedPod>) {}

    fn on_delete(&self, _pod: &informer::DeletedObject<CachedPod>) {}
}

/// A pod a sync can read from the cache has been observed by the owner's expectations: the
/// runtime observes dependents inline with the cache, before any queued handler hears of them.
/// The check is an inline handler registered after the runtime's, so it runs at the instant the
/// cache shows the pod: observed from a queued handler, the creation could not have been
/// counted yet, every time. (Counted late, a pod another writer created that a sync had
/// already seen lowered the expectations that sync set for its own creates, and the next sync
/// created one pod too many.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_the_cache_shows_has_been_observed_by_its_owners_expectations() {
    let (_sim, client, rs) = sim_with_replica_set("web").await;
    let informers = SharedInformerFactory::new(client.clone(), FactoryConfig::default());
    let replica_sets = informers.informer::<CachedReplicaSet>();
    let pods = informers.informer::<CachedPod>();
    let identity = ControllerIdentity {
        name: "test-controller",
        queue: "test",
        max_retries: None,
        retry_backoff: RetryBackoff::ControllerDefault,
    };
    let mut runtime =
        ControllerRuntime::new(&client, identity, &RuntimeOptions::default()).expect("runtime");
    let expectations = Arc::new(UidTrackingExpectations::new());
    runtime.owns(
        &pods,
        OwnerRouting::new(replica_sets.lister(), runtime.queue()).with_events(expectations.clone()),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    pods.add_inline_handler(SatisfiedWhenCached {
        expectations: expectations.clone(),
        owner_key: "default/web".to_owned(),
        seen: seen.clone(),
    });
    let shutdown = CancellationToken::new();
    informers.start(shutdown.clone());
    for _ in 0..500 {
        if informers.has_synced() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        replica_sets.lister().get("default", "web").is_some(),
        "the owner is cached"
    );

    let owner = new_controller_ref(&rs, &rs_gvk());
    for round in 0..5 {
        expectations.expect_creations("default/web", 1);
        create_pod(&client, &format!("web-{round}"), "web", vec![owner.clone()]).await;
        for _ in 0..500 {
            if seen.lock().len() > round {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    shutdown.cancel();
    assert_eq!(
        *seen.lock(),
        [true; 5],
        "each pod was observed before the cache showed it"
    );
}
