//! Shadow mode end to end on the sim, with the manager run from real flags in this process.
//! The sim cannot run upstream, so another writer stands in for it: a normal kcm-rs (no
//! divergence may be reported), or the controllers built here with a write executor that
//! writes chosen things differently (exactly those divergences must be reported). The sim's
//! request accounting, by user agent, shows what the shadow wrote: its Lease, nothing else.

mod support;

use std::{collections::BTreeSet, path::PathBuf, sync::Arc, time::Duration};

use controller_toolkit::writes::{ApiWriteExecutor, Write, WriteExecutor, WriteVerb};
use deployment::{DeploymentController, DeploymentOptions};
use futures::future::BoxFuture;
use informer::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet},
    coordination::v1::Lease,
    core::v1::Pod,
};
use kube::{
    Api,
    api::{DeleteParams, ListParams},
};
use replicaset::{ReplicaSetController, ReplicaSetOptions, RuntimeOptions};
use serde_json::{Value, json};
use sim::{
    SimCluster, SimConfig,
    testing::{TestCluster, eventually, workload},
};
use support::{RunningManager, plain_get, start_manager};
use tokio_util::sync::CancellationToken;

/// The settle window the tests run the shadow with.
const SETTLE: Duration = Duration::from_secs(2);
/// What the shadow's user agent carries.
const SHADOW_AGENT: &str = "kcm-rs-shadow/";
/// Writes the shadow may make: its Lease, and the reviews of requests to its endpoints.
const ALLOWED_WRITES: &[&str] = &["leases", "tokenreviews", "subjectaccessreviews"];
const NS: &str = "default";

/// The sim (with the test's client) and a kubeconfig for in-process managers.
struct Cluster {
    test: TestCluster,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

async fn cluster() -> Cluster {
    let test = TestCluster::start(SimConfig::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    test.sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    Cluster {
        test,
        _dir: dir,
        kubeconfig,
    }
}

fn flags(extra: &[&str]) -> Vec<String> {
    [
        "--plain-http",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/shadow",
    ]
    .iter()
    .chain(extra)
    .map(|flag| (*flag).to_owned())
    .collect()
}

async fn start_shadow(cluster: &Cluster, extra: &[&str]) -> RunningManager {
    let mut shadow = vec!["--shadow", "--shadow-settle=2s"];
    shadow.extend(extra);
    start_manager(
        &cluster.kubeconfig,
        manager::default_registry().expect("registry"),
        &flags(&shadow),
    )
    .await
}

async fn shadow_page(shadow: &RunningManager) -> Value {
    let (code, body) = plain_get(shadow.addr, "/shadow")
        .await
        .expect("GET /shadow");
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).expect("/shadow is JSON")
}

/// Every write request of the shadow's user agent other than the allowed ones.
fn shadow_writes(sim: &SimCluster) -> Vec<String> {
    sim.accounting()
        .entries()
        .into_iter()
        .filter(|((verb, resource, agent), _)| {
            agent.contains(SHADOW_AGENT)
                && ["create", "update", "patch", "delete", "deletecollection"]
                    .contains(&verb.as_str())
                && !ALLOWED_WRITES.contains(&resource.as_str())
        })
        .map(|((verb, resource, agent), n)| format!("{n} x {verb} {resource} by {agent}"))
        .collect()
}

/// `object` decoded as a `K` (a test's literal object).
fn typed<K: serde::de::DeserializeOwned>(object: Value) -> K {
    serde_json::from_value(object).expect("valid object")
}

/// Waits (up to 60 s) until the `K` named `name` is `complete` at `replicas` replicas.
async fn complete_at<K>(sim: &SimCluster, name: &str, replicas: i32, complete: impl Fn(&K) -> bool)
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(sim.client(), NS);
    eventually(
        &format!("{} {name} complete at {replicas}", K::kind(&())),
        Duration::from_secs(60),
        || async { api.get(name).await.ok().filter(&complete).map(drop) },
    )
    .await;
}

/// Waits until the Deployment `name` has rolled out `replicas` replicas of its current spec.
async fn deployment_complete(sim: &SimCluster, name: &str, replicas: i32) {
    complete_at(sim, name, replicas, |deployment: &Deployment| {
        deployment.status.as_ref().is_some_and(|status| {
            let counts = [
                status.replicas,
                status.updated_replicas,
                status.available_replicas,
            ];
            status.observed_generation == deployment.metadata.generation
                && counts == [Some(replicas); 3]
        })
    })
    .await;
}

/// Waits until the StatefulSet `name` runs `replicas` ready pods, all at its update revision.
async fn stateful_set_complete(sim: &SimCluster, name: &str, replicas: i32) {
    complete_at(sim, name, replicas, |set: &StatefulSet| {
        set.status.as_ref().is_some_and(|status| {
            let counts = [status.ready_replicas, status.updated_replicas];
            status.observed_generation == set.metadata.generation
                && counts == [Some(replicas); 2]
                && status.current_revision == status.update_revision
        })
    })
    .await;
}

/// A merge patch moving a [`workload`]'s pods to `nginx:1.26`: a rollout.
fn new_image() -> Value {
    json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}})
}

/// Asserts that the shadow's `/metrics` page holds `series`.
async fn assert_metrics_hold(shadow: &RunningManager, series: &str) {
    let (_, metrics) = plain_get(shadow.addr, "/metrics").await.expect("metrics");
    assert!(metrics.contains(series), "{metrics}");
}

/// Waits until the shadow has judged every intent (none pending after the settle window).
async fn all_judged(shadow: &RunningManager) -> Value {
    tokio::time::sleep(SETTLE).await;
    eventually("every intent judged", Duration::from_secs(60), || async {
        let report = shadow_page(shadow).await;
        (report["pending"] == 0).then_some(report)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_normal_manager_the_shadow_writes_nothing_and_finds_no_divergence() {
    let cluster = cluster().await;
    let test = &cluster.test;
    let sim = &test.sim;
    let _normal = start_manager(
        &cluster.kubeconfig,
        manager::default_registry().expect("registry"),
        &flags(&["--leader-elect=true"]),
    )
    .await;
    let shadow = start_shadow(&cluster, &["--leader-elect=true"]).await;

    // Create, roll out and scale a Deployment; create and update a StatefulSet; delete both.
    test.create::<Deployment>(&typed(workload("Deployment", "web", 3)))
        .await;
    deployment_complete(sim, "web", 3).await;
    test.merge_patch::<Deployment>("web", new_image()).await;
    deployment_complete(sim, "web", 3).await;
    test.merge_patch::<Deployment>("web", json!({"spec": {"replicas": 5}}))
        .await;
    deployment_complete(sim, "web", 5).await;
    test.merge_patch::<Deployment>("web", json!({"spec": {"replicas": 2}}))
        .await;
    deployment_complete(sim, "web", 2).await;
    test.create::<StatefulSet>(&typed(workload("StatefulSet", "db", 3)))
        .await;
    stateful_set_complete(sim, "db", 3).await;
    test.merge_patch::<StatefulSet>("db", new_image()).await;
    stateful_set_complete(sim, "db", 3).await;
    let report_before_delete = all_judged(&shadow).await;
    test.api::<Deployment>()
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete Deployment");
    test.api::<StatefulSet>()
        .delete("db", &DeleteParams::default())
        .await
        .expect("delete StatefulSet");

    let report = all_judged(&shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report_before_delete["compared_total"].as_u64() > Some(10),
        "the shadow compared what it decided: {report_before_delete:#}"
    );
    assert!(report["intents_total"].as_u64() > Some(10), "{report:#}");
    assert_eq!(shadow_writes(sim), Vec::<String>::new());
    let lease = Api::<Lease>::namespaced(sim.client(), "kube-system")
        .get("kcm-rs-shadow")
        .await
        .expect("the shadow leads with its own Lease");
    assert!(lease.spec.and_then(|spec| spec.holder_identity).is_some());
    let normal_pod_creates: u64 = sim
        .accounting()
        .entries()
        .into_iter()
        .filter(|((verb, resource, agent), _)| {
            verb == "create" && resource == "pods" && agent.contains("kcm-rs/")
        })
        .map(|(_, n)| n)
        .sum();
    assert!(normal_pod_creates >= 8, "the normal manager did the work");
}

/// Writes as kcm-rs would, except: ReplicaSets of the Deployment `sized` one replica smaller,
/// the status of the ReplicaSet `counted` with no available replica, and on a scale-down of
/// `ranked` another pod deleted than the one kcm-rs ranks first, a second later (upstream is
/// slower than kcm-rs; were it faster, the shadow would only ever see the scaled-down set and
/// have nothing to delete, which is no divergence).
struct DifferingUpstream {
    api: ApiWriteExecutor,
    pods: Api<Pod>,
}

impl WriteExecutor for DifferingUpstream {
    fn execute(&self, mut write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let api = self.api.clone();
        let pods = self.pods.clone();
        Box::pin(async move {
            let resource = write.resource.plural.clone();
            let mut body: Value = serde_json::from_slice(&write.body).unwrap_or(Value::Null);
            match (&write.verb, resource.as_str()) {
                (WriteVerb::Create | WriteVerb::Update, "replicasets")
                    if write.name.starts_with("sized-") =>
                {
                    let replicas = body["spec"]["replicas"].as_i64().unwrap_or(0);
                    body["spec"]["replicas"] = json!((replicas - 1).max(0));
                }
                (WriteVerb::UpdateStatus, "replicasets") if write.name == "counted" => {
                    body["status"]["availableReplicas"] = json!(0);
                }
                (WriteVerb::Delete { .. }, "pods") if write.name.starts_with("ranked-") => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let listed = pods
                        .list(&ListParams::default().labels("app=ranked"))
                        .await?;
                    let mut others: Vec<String> = listed
                        .into_iter()
                        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
                        .filter_map(|pod| pod.metadata.name)
                        .filter(|name| *name != write.name)
                        .collect();
                    others.sort();
                    if let Some(other) = others.pop() {
                        write.name = other;
                        write.uid = None;
                    }
                }
                _ => {}
            }
            if !body.is_null() {
                write.body = serde_json::to_vec(&body)
                    .map_err(kube::Error::SerdeError)?
                    .into();
            }
            api.execute(write).await
        })
    }
}

/// The ReplicaSet and Deployment controllers writing through [`DifferingUpstream`].
fn start_differing_upstream(sim: &SimCluster, stop: &CancellationToken) {
    let client = sim.client_with_user_agent("differing-upstream");
    let writes: Arc<dyn WriteExecutor> = Arc::new(DifferingUpstream {
        api: ApiWriteExecutor::new(client.clone()),
        pods: Api::namespaced(client.clone(), NS),
    });
    let runtime = RuntimeOptions {
        writes: Some(writes),
        ..RuntimeOptions::default()
    };
    let informers = SharedInformerFactory::new(client.clone(), FactoryConfig::default());
    let replica_sets = ReplicaSetController::new(
        client.clone(),
        &informers,
        ReplicaSetOptions {
            runtime: runtime.clone(),
            ..ReplicaSetOptions::default()
        },
    )
    .expect("ReplicaSet controller");
    let deployments = DeploymentController::new(
        client,
        &informers,
        DeploymentOptions {
            runtime,
            ..DeploymentOptions::default()
        },
    )
    .expect("Deployment controller");
    informers.start(stop.clone());
    tokio::spawn(replica_sets.run(2, stop.clone()));
    tokio::spawn(deployments.run(2, stop.clone()));
}

/// (resource, object name up to its generated suffix, field) of each divergence.
fn divergence_set(report: &Value) -> BTreeSet<(String, String, String)> {
    report["divergences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|divergence| {
            let name = divergence["name"].as_str().unwrap_or_default();
            let stem = name.split('-').next().unwrap_or_default();
            (
                divergence["resource"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                stem.to_owned(),
                divergence["field"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn triple(resource: &str, stem: &str, field: &str) -> (String, String, String) {
    (resource.to_owned(), stem.to_owned(), field.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_writes_differently_is_reported_field_by_field() {
    let cluster = cluster().await;
    let test = &cluster.test;
    let sim = &test.sim;
    let stop = CancellationToken::new();
    start_differing_upstream(sim, &stop);
    let shadow = start_shadow(&cluster, &[]).await;

    test.create::<Deployment>(&typed(workload("Deployment", "sized", 3)))
        .await;
    test.create::<ReplicaSet>(&typed(workload("ReplicaSet", "counted", 2)))
        .await;
    test.create::<ReplicaSet>(&typed(workload("ReplicaSet", "ranked", 3)))
        .await;
    let live = |app: &'static str| async move {
        test.pods_labelled(app)
            .await
            .into_iter()
            .filter(|pod| pod.metadata.deletion_timestamp.is_none())
            .filter_map(|pod| pod.metadata.name)
            .collect::<Vec<_>>()
    };
    eventually("3 pods of ranked", Duration::from_secs(30), || async {
        (live("ranked").await.len() == 3).then_some(())
    })
    .await;
    let before = live("ranked").await;
    test.merge_patch::<ReplicaSet>("ranked", json!({"spec": {"replicas": 2}}))
        .await;
    eventually(
        "ranked scaled down to 2",
        Duration::from_secs(30),
        || async { (live("ranked").await.len() == 2).then_some(()) },
    )
    .await;
    let after = live("ranked").await;
    let deleted: Vec<&String> = before.iter().filter(|pod| !after.contains(pod)).collect();

    let expected = BTreeSet::from([
        triple("replicasets", "sized", "spec.replicas"),
        triple("replicasets", "counted", "status.availableReplicas"),
        triple("pods", "ranked", "deleted"),
    ]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let report = shadow_page(&shadow).await;
        if expected.is_subset(&divergence_set(&report)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the three divergences not reported in 60s: {report:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Nothing else shows up over a few more settle windows.
    tokio::time::sleep(SETTLE * 3).await;
    let report = shadow_page(&shadow).await;
    assert_eq!(divergence_set(&report), expected, "{report:#}");

    let find = |field: &str| {
        report["divergences"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["field"] == field))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let size = find("spec.replicas");
    assert_eq!(
        (&size["kcm_rs"], &size["cluster"]),
        (&json!("3"), &json!("2"))
    );
    let available = find("status.availableReplicas");
    assert_eq!(available["kcm_rs"], "2");
    assert!(["0", ""].contains(&available["cluster"].as_str().unwrap_or("x")));
    let ranking = find("deleted");
    assert_ne!(ranking["kcm_rs"], ranking["cluster"]);
    assert_eq!(
        ranking["cluster"].as_str(),
        deleted.first().map(|name| name.as_str()),
        "the cluster's value names the pod it deleted instead: {ranking}"
    );
    assert_eq!(shadow_writes(sim), Vec::<String>::new());

    assert_metrics_hold(
        &shadow,
        "shadow_divergences_total{controller=\"replicaset-controller\",field=\"deleted\",resource=\"pods\"} 1",
    )
    .await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alone_the_shadow_creates_nothing_and_shows_what_it_would_have_done() {
    let cluster = cluster().await;
    let test = &cluster.test;
    let sim = &test.sim;
    let shadow = start_shadow(&cluster, &[]).await;
    test.create::<Deployment>(&typed(workload("Deployment", "lonely", 2)))
        .await;
    test.create::<StatefulSet>(&typed(workload("StatefulSet", "alone", 2)))
        .await;

    let intended = |report: &Value, controller: &str, resource: &str, prefix: &str| {
        report["intents"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|intent| {
                intent["controller"] == controller
                    && intent["verb"] == "create"
                    && intent["resource"] == resource
                    && intent["name"]
                        .as_str()
                        .is_some_and(|name| name.starts_with(prefix))
            })
    };
    let report = eventually(
        "the creates it would have made",
        Duration::from_secs(30),
        || async {
            let report = shadow_page(&shadow).await;
            (intended(&report, "deployment-controller", "replicasets", "lonely-")
                && intended(
                    &report,
                    "statefulset-controller",
                    "controllerrevisions",
                    "alone-",
                )
                && intended(&report, "statefulset-controller", "pods", "alone-0"))
            .then_some(report)
        },
    )
    .await;
    assert!(intended(&report, "deployment-controller", "events", ""));

    // After the settle window the missing objects are divergences: nobody created them.
    let report = eventually(
        "missing creates reported",
        Duration::from_secs(30),
        || async {
            let report = shadow_page(&shadow).await;
            let set = divergence_set(&report);
            (set.contains(&triple("replicasets", "lonely", "created"))
                && set.contains(&triple("controllerrevisions", "alone", "created"))
                && set.contains(&triple("pods", "alone", "created")))
            .then_some(report)
        },
    )
    .await;
    assert!(
        report["divergences"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|d| d["cluster"] == "none" || d["field"] != "created"),
        "{report:#}"
    );

    assert!(test.list::<ReplicaSet>().await.is_empty());
    assert!(test.list::<Pod>().await.is_empty());
    assert!(test.list::<ControllerRevision>().await.is_empty());
    assert_eq!(shadow_writes(sim), Vec::<String>::new());
    assert_metrics_hold(
        &shadow,
        "shadow_intents_total{controller=\"deployment-controller\",resource=\"replicasets\",verb=\"create\"}",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_shadow_mode_there_is_no_shadow_page() {
    let cluster = cluster().await;
    let normal = start_manager(
        &cluster.kubeconfig,
        manager::ControllerRegistry::new(),
        &flags(&[]),
    )
    .await;
    let (code, _) = plain_get(normal.addr, "/shadow").await.expect("GET");
    assert_eq!(code, 404);
}
