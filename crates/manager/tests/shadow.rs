//! Shadow mode end to end on the sim, with the manager run from real flags in this process.
//! The sim cannot run upstream, so another writer stands in for it: a normal kcm-rs (no
//! divergence may be reported), or the controllers built here with a write executor that
//! writes chosen things differently. Where upstream differs by design (the names of the
//! ReplicaSets it creates) or someone else undoes its work before the settle time (a claim
//! deleted, a namespace torn down, an owner deleted), no divergence may be reported; where it
//! decides differently, exactly that divergence, once, with its kind. The sim's request
//! accounting, by user agent, shows what the shadow wrote: its Lease, nothing else.

mod support;

use std::{
    collections::BTreeSet,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use controller_toolkit::writes::{ApiWriteExecutor, Write, WriteExecutor, WriteVerb};
use deployment::{DeploymentController, DeploymentOptions};
use futures::future::BoxFuture;
use informer::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet},
    batch::v1::Job,
    coordination::v1::Lease,
    core::v1::{Namespace, PersistentVolumeClaim, Pod},
};
use kube::{
    Api,
    api::{DeleteParams, ListParams},
};
use replicaset::{ReplicaSetController, ReplicaSetOptions, RuntimeOptions};
use serde_json::{Value, json};
use sim::{
    FaultConfig, SimCluster, SimConfig,
    testing::{TestCluster, eventually, workload},
};
use statefulset::{StatefulSetController, StatefulSetOptions};
use support::{
    Cluster, RunningManager, plain_get, plain_http_flags, requests_with_agent, start_manager,
};
use tokio_util::sync::CancellationToken;

/// The settle window the tests run the shadow with.
const SETTLE: Duration = Duration::from_secs(2);
/// What the shadow's user agent carries.
const SHADOW_AGENT: &str = "kcm-rs-shadow/";
/// Writes the shadow may make: its Lease, and the reviews of requests to its endpoints.
const ALLOWED_WRITES: &[&str] = &["leases", "tokenreviews", "subjectaccessreviews"];
const NS: &str = "default";

async fn cluster() -> Cluster {
    Cluster::start(SimConfig::default()).await
}

fn flags(extra: &[&str]) -> Vec<String> {
    plain_http_flags("/healthz,/readyz,/livez,/metrics,/shadow", extra)
}

/// Starts a shadow; returns once its caches are synced (it sees what happens from then on).
async fn start_shadow(cluster: &Cluster, extra: &[&str]) -> RunningManager {
    let mut shadow = vec!["--shadow", "--shadow-settle=2s"];
    shadow.extend(extra);
    let running = cluster.start_manager(&flags(&shadow)).await;
    leading(&running).await;
    running
}

/// Starts a normal manager (leader-elected); returns once it leads with synced caches.
async fn start_normal(cluster: &Cluster) -> RunningManager {
    let normal = cluster
        .start_manager(&flags(&["--leader-elect=true"]))
        .await;
    leading(&normal).await;
    normal
}

/// Waits until `manager` leads with synced caches: its watches are open from then on.
async fn leading(manager: &RunningManager) {
    // `/readyz` also answers 200 while a manager waits for its Lease: a controller's health
    // check exists only once it leads, and `/readyz` then answers 200 once the caches synced.
    eventually(
        "the manager leading with synced caches",
        Duration::from_secs(30),
        || async {
            let (_, checks) = plain_get(manager.addr, "/healthz?verbose").await.ok()?;
            let leading = checks.contains("deployment-controller");
            let (ready, _) = plain_get(manager.addr, "/readyz").await.ok()?;
            (leading && ready == 200).then_some(())
        },
    )
    .await;
}

/// The intents (the writes the shadow decided) of a `/shadow` report.
fn intents(report: &Value) -> impl Iterator<Item = &Value> {
    report["intents"].as_array().into_iter().flatten()
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
    let _normal = start_normal(&cluster).await;
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
    // Every compared write was matched, status writes by name. Whether the shadow decides a
    // ReplicaSet or a pod itself, or first sees the normal manager's, is a race between the two
    // managers (on a loaded machine the shadow can lose all of them); each create it did decide
    // must be matched by its rule. The rules themselves are shown without a race below
    // (`a_replica_set_named_with_another_hash_matches_by_owner_and_template`,
    // `a_pod_the_cluster_did_not_create_is_missing_by_owner_and_count`).
    let matched = |rule: &str| report_before_delete["matched"][rule].as_u64().unwrap_or(0);
    assert_eq!(
        matched("name") + matched("owner+template") + matched("owner+count"),
        report_before_delete["compared_total"].as_u64().unwrap_or(0),
        "{report_before_delete:#}"
    );
    assert!(matched("name") > 0, "{report_before_delete:#}");
    let decided_create = |controller: &str, resource: &str| {
        intents(&report_before_delete).any(|intent| {
            intent["verb"] == "create"
                && intent["controller"] == controller
                && intent["resource"] == resource
        })
    };
    for (controller, resource, rule) in [
        ("deployment-controller", "replicasets", "owner+template"),
        ("replicaset-controller", "pods", "owner+count"),
    ] {
        if decided_create(controller, resource) {
            assert!(
                matched(rule) > 0,
                "matched by {rule}: {report_before_delete:#}"
            );
        }
    }
    assert!(report["intents_total"].as_u64() > Some(10), "{report:#}");
    assert_eq!(shadow_writes(sim), Vec::<String>::new());
    let lease = Api::<Lease>::namespaced(sim.client(), "kube-system")
        .get("kcm-rs-shadow")
        .await
        .expect("the shadow leads with its own Lease");
    assert!(lease.spec.and_then(|spec| spec.holder_identity).is_some());
    let normal_pod_creates = requests_with_agent(sim, "kcm-rs/", "create", "pods");
    assert!(normal_pod_creates >= 8, "the normal manager did the work");
}

/// Jobs beside a normal manager: a NonIndexed and an Indexed Job run to completion, their pod
/// creates, finalizer removals and status writes decided by the shadow too; nothing diverges
/// and the shadow writes nothing.
///
/// Each Job runs all its pods at once (`parallelism` = `completions`): a replacement pod is
/// decided from the Job's counted completions, which the other writer records in the Job's
/// status, and beside another writer the shadow's Job cache can lag its pod cache by more than
/// the batching period under load (a pod seen without its finalizer before the status that
/// counted it): the shadow then decides one pod too many (a `missing` divergence, seen once in
/// 8 soak runs with `completions: 3, parallelism: 2`). The README says so under shadow mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_normal_manager_jobs_find_no_divergence() {
    let cluster = cluster().await;
    let test = &cluster.test;
    let sim = &test.sim;
    let _normal = start_normal(&cluster).await;
    let shadow = start_shadow(&cluster, &["--leader-elect=true"]).await;
    let job = |name: &str, spec: Value| -> Job {
        let mut object = json!({
            "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 1; exit 0"]}]}}}
        });
        json_patch::merge(&mut object, &json!({"spec": spec}));
        typed(object)
    };
    test.create(&job("batch", json!({"completions": 3, "parallelism": 3})))
        .await;
    test.create(&job(
        "indexed",
        json!({"completions": 3, "parallelism": 3, "completionMode": "Indexed"}),
    ))
    .await;
    for name in ["batch", "indexed"] {
        test.wait_for(name, "complete", Duration::from_secs(60), |job: Job| {
            job.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
                .then_some(())
        })
        .await;
    }
    let report = all_judged(&shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        intents(&report).any(|intent| intent["controller"] == "job-controller"),
        "the shadow decided the Jobs' writes too: {report:#}"
    );
    assert!(
        report["compared_total"].as_u64() > Some(0),
        "and compared them with what the normal manager wrote: {report:#}"
    );
    assert_eq!(shadow_writes(sim), Vec::<String>::new());
}

/// Writes as kcm-rs would, except for objects named for the difference they play:
///
/// * `sized-*`: a Deployment's ReplicaSets one replica smaller (a `field` divergence);
/// * `counted`: a ReplicaSet's status with no available replica (`field`);
/// * `ranked-*`: on a scale-down, another pod deleted than the one kcm-rs ranks first, a second
///   later (`choice`; upstream is slower than kcm-rs: were it faster, the shadow would only
///   ever see the scaled-down set and have nothing to delete, which is no divergence);
/// * `short-*`: the first pod of the ReplicaSet `short` not created, though answered as
///   created (`missing`);
/// * `kept-*`: pod deletions answered but not made (`extra`);
/// * `hashed-*`: a Deployment's ReplicaSets created half a second later (upstream is slower)
///   under another pod-template-hash, as upstream's hash of Go's printed struct differs from
///   kcm-rs's (no divergence);
/// * `data-claimed-*`: each claim deleted by someone else right after it was created, before
///   the shadow compares anything (no divergence: it was created; while the pod is pending its
///   controller creates it again, and it is deleted again).
struct DifferingUpstream {
    api: ApiWriteExecutor,
    pods: Api<Pod>,
    claims: Api<PersistentVolumeClaim>,
    /// Whether the one pod of `short` not created is behind us.
    skipped_one: AtomicBool,
}

/// Another pod-template-hash than `hash`, as long and as valid.
fn other_hash(hash: &str) -> String {
    let reversed: String = hash.chars().rev().collect();
    if reversed == hash {
        format!("z{}", &hash[1..])
    } else {
        reversed
    }
}

impl WriteExecutor for DifferingUpstream {
    fn execute(&self, mut write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let api = self.api.clone();
        let pods = self.pods.clone();
        let claims = self.claims.clone();
        let resource = write.resource.plural.clone();
        let owned_by = |owner: &str| {
            serde_json::from_slice::<Value>(&write.body)
                .ok()
                .and_then(|body| {
                    body["metadata"]["ownerReferences"][0]["name"]
                        .as_str()
                        .map(str::to_owned)
                })
                .is_some_and(|name| name == owner)
        };
        let skip_this = match (&write.verb, resource.as_str()) {
            (WriteVerb::Create, "pods") if owned_by("short") => {
                !self.skipped_one.swap(true, Ordering::SeqCst)
            }
            (WriteVerb::Delete { .. }, "pods") => write.name.starts_with("kept-"),
            _ => false,
        };
        Box::pin(async move {
            if skip_this {
                return shadow::answer::answer_for(&write);
            }
            let mut body: Value = serde_json::from_slice(&write.body).unwrap_or(Value::Null);
            match (&write.verb, resource.as_str()) {
                (WriteVerb::Create | WriteVerb::Update, "replicasets")
                    if write.name.starts_with("sized-") =>
                {
                    let replicas = body["spec"]["replicas"].as_i64().unwrap_or(0);
                    body["spec"]["replicas"] = json!((replicas - 1).max(0));
                }
                (WriteVerb::Create, "replicasets") if write.name.starts_with("hashed-") => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    let hash = body["metadata"]["labels"]["pod-template-hash"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    let text = body.to_string().replace(&hash, &other_hash(&hash));
                    body = serde_json::from_str(&text).map_err(kube::Error::SerdeError)?;
                    write.name = write.name.replace(&hash, &other_hash(&hash));
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
                (WriteVerb::Create, "persistentvolumeclaims")
                    if write.name.starts_with("data-claimed-") =>
                {
                    let name = write.name.clone();
                    let created = api.execute(write).await?;
                    claims.delete(&name, &DeleteParams::default()).await?;
                    return Ok(created);
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

/// The ReplicaSet, Deployment and StatefulSet controllers writing through
/// [`DifferingUpstream`].
fn start_differing_upstream(sim: &SimCluster, stop: &CancellationToken) {
    let client = sim.client_with_user_agent("differing-upstream");
    let writes: Arc<dyn WriteExecutor> = Arc::new(DifferingUpstream {
        api: ApiWriteExecutor::new(client.clone()),
        pods: Api::namespaced(client.clone(), NS),
        claims: Api::namespaced(client.clone(), NS),
        skipped_one: AtomicBool::new(false),
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
        client.clone(),
        &informers,
        DeploymentOptions {
            runtime: runtime.clone(),
            ..DeploymentOptions::default()
        },
    )
    .expect("Deployment controller");
    let stateful_sets = StatefulSetController::new(
        client,
        &informers,
        StatefulSetOptions {
            runtime,
            ..StatefulSetOptions::default()
        },
    )
    .expect("StatefulSet controller");
    informers.start(stop.clone());
    tokio::spawn(replica_sets.run(2, stop.clone()));
    tokio::spawn(deployments.run(2, stop.clone()));
    tokio::spawn(stateful_sets.run(2, stop.clone()));
}

/// A differing upstream and a shadow on one sim, until dropped.
struct Differing {
    cluster: Cluster,
    shadow: RunningManager,
    stop: CancellationToken,
}

impl Drop for Differing {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn differing(config: SimConfig) -> Differing {
    let cluster = Cluster::start(config).await;
    let stop = CancellationToken::new();
    start_differing_upstream(&cluster.test.sim, &stop);
    let shadow = start_shadow(&cluster, &[]).await;
    Differing {
        cluster,
        shadow,
        stop,
    }
}

/// [`differing`] on the default sim, with the ReplicaSet `name` of three replicas created.
async fn differing_with_replica_set(name: &str) -> Differing {
    let run = differing(SimConfig::default()).await;
    let replica_set: ReplicaSet = typed(workload("ReplicaSet", name, 3));
    run.cluster.test.create(&replica_set).await;
    run
}

/// One divergence as the tests compare them: kind, resource, object name up to its first `-`,
/// field.
type Reported = (String, String, String, String);

/// Every divergence on `report`, one entry each (a divergence reported twice is two).
fn divergences(report: &Value) -> Vec<Reported> {
    let text =
        |divergence: &Value, key: &str| divergence[key].as_str().unwrap_or_default().to_owned();
    let mut all: Vec<Reported> = report["divergences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|divergence| {
            let name = text(divergence, "name");
            (
                text(divergence, "kind"),
                text(divergence, "resource"),
                name.split('-').next().unwrap_or_default().to_owned(),
                text(divergence, "field"),
            )
        })
        .collect();
    all.sort();
    all
}

fn divergence_set(report: &Value) -> BTreeSet<Reported> {
    divergences(report).into_iter().collect()
}

fn reported(kind: &str, resource: &str, stem: &str, field: &str) -> Reported {
    (
        kind.to_owned(),
        resource.to_owned(),
        stem.to_owned(),
        field.to_owned(),
    )
}

/// The divergence on `report` whose kind is `kind`.
fn find(report: &Value, kind: &str) -> Value {
    report["divergences"]
        .as_array()
        .and_then(|all| all.iter().find(|d| d["kind"] == kind))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Waits (up to 60 s) until `expected` are all reported, then a few more settle windows, and
/// returns the report once exactly those are: each once.
async fn exactly(shadow: &RunningManager, expected: &[Reported]) -> Value {
    let wanted: BTreeSet<Reported> = expected.iter().cloned().collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let report = shadow_page(shadow).await;
        if wanted.is_subset(&divergence_set(&report)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{expected:?} not reported in 60s: {report:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(SETTLE * 3).await;
    let report = shadow_page(shadow).await;
    let mut expected = expected.to_vec();
    expected.sort();
    assert_eq!(divergences(&report), expected, "{report:#}");
    report
}

/// Live (not terminating) pods labelled `app`.
async fn live(test: &TestCluster, app: &str) -> Vec<String> {
    test.pods_labelled(app)
        .await
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .filter_map(|pod| pod.metadata.name)
        .collect()
}

/// Waits until `app` has `n` live pods; returns them.
async fn live_count(test: &TestCluster, app: &str, n: usize) -> Vec<String> {
    eventually(
        &format!("{n} pods of {app}"),
        Duration::from_secs(30),
        || async {
            let pods = live(test, app).await;
            (pods.len() == n).then_some(pods)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_size_or_status_is_a_field_divergence_once() {
    let run = differing(SimConfig::default()).await;
    let test = &run.cluster.test;
    test.create::<Deployment>(&typed(workload("Deployment", "sized", 3)))
        .await;
    test.create::<ReplicaSet>(&typed(workload("ReplicaSet", "counted", 2)))
        .await;

    let report = exactly(
        &run.shadow,
        &[
            reported("field", "replicasets", "sized", "spec.replicas"),
            reported(
                "field",
                "replicasets",
                "counted",
                "status.availableReplicas",
            ),
        ],
    )
    .await;
    let field = |name: &str| {
        report["divergences"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["field"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let size = field("spec.replicas");
    assert_eq!(
        (&size["kcm_rs"], &size["cluster"], &size["owner"]),
        (&json!("3"), &json!("2"), &json!("deployments/sized")),
        "{size}"
    );
    let available = field("status.availableReplicas");
    assert_eq!(available["kcm_rs"], "2");
    assert!(["0", ""].contains(&available["cluster"].as_str().unwrap_or("x")));
    assert_eq!(shadow_writes(&test.sim), Vec::<String>::new());
    assert_metrics_hold(
        &run.shadow,
        "shadow_divergences_total{controller=\"replicaset-controller\",field=\"status.availableReplicas\",kind=\"field\",resource=\"replicasets\"} 1",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scale_down_that_picks_another_pod_is_a_choice_with_both_lists() {
    let run = differing_with_replica_set("ranked").await;
    let test = &run.cluster.test;
    let before = live_count(test, "ranked", 3).await;
    // Both rankings must see the same pods: all ready. Ranked while one pod was still starting
    // by one manager and ready by the other, the stand-in upstream's "other pod" could be the
    // shadow's own pick, and no choice was reported.
    test.wait_for(
        "ranked",
        "three ready pods",
        Duration::from_secs(30),
        |rs: ReplicaSet| {
            let status = rs.status?;
            (status.ready_replicas == Some(3) && status.available_replicas == Some(3)).then_some(())
        },
    )
    .await;
    test.merge_patch::<ReplicaSet>("ranked", json!({"spec": {"replicas": 2}}))
        .await;
    let after = live_count(test, "ranked", 2).await;
    let deleted: Vec<&String> = before.iter().filter(|pod| !after.contains(pod)).collect();

    let report = exactly(
        &run.shadow,
        &[reported("choice", "pods", "ranked", "deleted")],
    )
    .await;
    let choice = find(&report, "choice");
    assert_eq!(choice["rule"], "owner");
    assert_eq!(choice["owner"], "replicasets/ranked");
    let kcm_rs = choice["kcm_rs"].as_str().unwrap_or_default();
    assert!(
        after.iter().any(|pod| pod == kcm_rs),
        "kcm-rs's pick is a pod the cluster kept: {choice}"
    );
    assert_eq!(
        choice["cluster"].as_str(),
        deleted.first().map(|name| name.as_str()),
        "the cluster's list names the pod it deleted instead: {choice}"
    );
    assert_metrics_hold(
        &run.shadow,
        "shadow_divergences_total{controller=\"replicaset-controller\",field=\"deleted\",kind=\"choice\",resource=\"pods\"} 1",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_the_cluster_did_not_create_is_missing_by_owner_and_count() {
    let run = differing_with_replica_set("short").await;
    let test = &run.cluster.test;
    live_count(test, "short", 2).await;

    let report = exactly(
        &run.shadow,
        &[reported("missing", "pods", "short", "created")],
    )
    .await;
    let missing = find(&report, "missing");
    assert_eq!(
        (&missing["rule"], &missing["owner"]),
        (&json!("owner+count"), &json!("replicasets/short")),
        "{missing}"
    );
    // Usually 3 against 2; a shadow that syncs after some of the cluster's pods reached its
    // cache decides fewer creates (2 against 1, 1 against 0): always one short.
    let count = |side: &str| missing[side].as_str().and_then(|n| n.parse::<i64>().ok());
    assert_eq!(
        count("kcm_rs")
            .zip(count("cluster"))
            .map(|(ours, theirs)| ours - theirs),
        Some(1),
        "{missing}"
    );
}

/// The shadow's ReplicaSet watch lags, so its one sync of `short` starts after the cluster's
/// pods are in its cache (whatever the timing, it decides fewer creates than 3). A pod its
/// cache showed when the sync started was counted by that decision: it cannot also answer one
/// of the decision's creates. Before the shadow knew when a sync started, a pod logged just
/// before the decision answered it again and the missing pod went unreported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_the_shadow_saw_before_it_decided_answers_none_of_its_creates() {
    let cluster = Cluster::start(SimConfig::default()).await;
    let test = &cluster.test;
    let stop = CancellationToken::new();
    start_differing_upstream(&test.sim, &stop);
    // Once the stand-in upstream made a pod, its watches run: the lag below is the shadow's.
    test.create::<ReplicaSet>(&typed(workload("ReplicaSet", "probe", 1)))
        .await;
    live_count(test, "probe", 1).await;
    test.sim.set_faults(FaultConfig::watch_lag(
        "shadow-lags",
        Duration::from_millis(150),
    ));
    let shadow = start_shadow(&cluster, &[]).await;
    let mut short = workload("ReplicaSet", "short", 3);
    short["metadata"]["labels"]["shadow-lags"] = json!("yes");
    test.create::<ReplicaSet>(&typed(short)).await;
    live_count(test, "short", 2).await;

    let report = exactly(&shadow, &[reported("missing", "pods", "short", "created")]).await;
    let missing = find(&report, "missing");
    let count = |side: &str| {
        missing[side]
            .as_str()
            .and_then(|count| count.parse::<i64>().ok())
            .unwrap_or(-1)
    };
    assert_eq!(
        (
            &missing["rule"],
            &missing["owner"],
            count("kcm_rs") - count("cluster")
        ),
        (&json!("owner+count"), &json!("replicasets/short"), 1),
        "one pod short: {missing}"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_the_cluster_kept_on_a_scale_down_is_extra() {
    let run = differing_with_replica_set("kept").await;
    let test = &run.cluster.test;
    live_count(test, "kept", 3).await;
    tokio::time::sleep(SETTLE).await;
    test.merge_patch::<ReplicaSet>("kept", json!({"spec": {"replicas": 2}}))
        .await;

    let report = exactly(&run.shadow, &[reported("extra", "pods", "kept", "deleted")]).await;
    let extra = find(&report, "extra");
    assert_eq!(
        (&extra["rule"], &extra["cluster"]),
        (&json!("name"), &json!("none"))
    );
    assert_eq!(live(test, "kept").await.len(), 3, "the cluster kept it");
}

/// The StatefulSet's own watch events reach the shadow a second late (its metadata, not its
/// template, carries the lag label, so its revisions and pods are on time). The normal manager
/// rolls it: a new revision, then its pods replaced. The shadow sees that revision and the pod
/// deletions with the old template still cached, takes its own update for a rollback to
/// revision 1 and would renumber revision 1 as 3. The owner's spec had changed before it
/// decided, as the watch later shows: a newer decision stands, not a `field` divergence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_update_decided_from_an_owner_spec_seen_late_is_superseded() {
    let mut set: StatefulSet = typed(workload("StatefulSet", "db", 3));
    set.metadata.labels = Some([("shadow-lags".to_owned(), "yes".to_owned())].into());
    let cluster = cluster().await;
    let _normal = start_normal(&cluster).await;
    // Watches opened from now on (the shadow's) see the labelled StatefulSet a second late.
    let lag = FaultConfig::watch_lag("shadow-lags", Duration::from_secs(1));
    cluster.test.sim.set_faults(lag);
    let shadow = start_shadow(&cluster, &["--leader-elect=true"]).await;
    let (test, sim) = (&cluster.test, &cluster.test.sim);
    test.create(&set).await;
    stateful_set_complete(sim, "db", 3).await;
    test.merge_patch::<StatefulSet>("db", new_image()).await;
    stateful_set_complete(sim, "db", 3).await;

    let report = all_judged(&shadow).await;
    let renumbered = intents(&report)
        .any(|intent| intent["verb"] == "update" && intent["resource"] == "controllerrevisions");
    assert!(
        renumbered,
        "the shadow decided from the old template: {report:#}"
    );
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    cluster.test.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_set_named_with_another_hash_matches_by_owner_and_template() {
    let run = differing(SimConfig::default()).await;
    let test = &run.cluster.test;
    let sim = &test.sim;
    // Each step judged before the next: a spec change supersedes the creates decided before.
    test.create::<Deployment>(&typed(workload("Deployment", "hashed", 3)))
        .await;
    deployment_complete(sim, "hashed", 3).await;
    all_judged(&run.shadow).await;
    test.merge_patch::<Deployment>("hashed", new_image()).await;
    deployment_complete(sim, "hashed", 3).await;
    all_judged(&run.shadow).await;
    test.merge_patch::<Deployment>("hashed", json!({"spec": {"replicas": 5}}))
        .await;
    deployment_complete(sim, "hashed", 5).await;

    let report = all_judged(&run.shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    // The shadow did decide creates under its own names, which the cluster does not have.
    let cluster_names = test.names::<ReplicaSet>().await;
    let decided: Vec<String> = intents(&report)
        .filter(|intent| intent["verb"] == "create" && intent["resource"] == "replicasets")
        .filter_map(|intent| intent["name"].as_str().map(str::to_owned))
        .collect();
    assert!(!decided.is_empty(), "{report:#}");
    assert!(
        decided.iter().all(|name| !cluster_names.contains(name)),
        "{decided:?} against {cluster_names:?}"
    );
    assert!(
        report["matched"]["owner+template"].as_u64() >= Some(2),
        "{report:#}"
    );
    assert!(
        report["matched"]["owner+count"].as_u64() >= Some(3),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_created_then_deleted_before_the_settle_time_was_created() {
    let run = differing(SimConfig::default()).await;
    let test = &run.cluster.test;
    test.create(&set_with_claims(NS, "claimed")).await;
    stateful_set_complete(&test.sim, "claimed", 2).await;

    let report = all_judged(&run.shadow).await;
    assert!(
        test.list::<PersistentVolumeClaim>().await.is_empty(),
        "the claims were deleted"
    );
    let decided_claims = intents(&report)
        .filter(|intent| {
            intent["verb"] == "create" && intent["resource"] == "persistentvolumeclaims"
        })
        .count();
    assert!(decided_claims >= 1, "{report:#}");
    assert_eq!(report["divergences_total"], 0, "{report:#}");
}

/// A StatefulSet named `name` in `namespace` with one claim template.
fn set_with_claims(namespace: &str, name: &str) -> StatefulSet {
    let mut set = workload("StatefulSet", name, 2);
    set["metadata"]["namespace"] = json!(namespace);
    set["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    typed(set)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_in_a_namespace_being_deleted_is_compared() {
    let cluster = cluster().await;
    let client = cluster.test.sim.client();
    let shadow = start_shadow(&cluster, &[]).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &Default::default(),
            &typed(json!({"metadata": {"name": "doomed"}})),
        )
        .await
        .expect("create the namespace");
    Api::<StatefulSet>::namespaced(client, "doomed")
        .create(&Default::default(), &set_with_claims("doomed", "doomed"))
        .await
        .expect("create the StatefulSet");

    // Alone, the shadow's claim is created by nobody: were the namespace not being deleted, it
    // would be missing.
    eventually(
        "the shadow decides to create the claim",
        Duration::from_secs(30),
        || async {
            let report = shadow_page(&shadow).await;
            intents(&report)
                .any(|intent| {
                    intent["resource"] == "persistentvolumeclaims"
                        && intent["namespace"] == "doomed"
                })
                .then_some(())
        },
    )
    .await;
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("delete the namespace");

    let report = all_judged(&shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report["not_compared"]["namespace-deleting"].as_u64() >= Some(1),
        "{report:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_whose_owner_is_gone_is_compared() {
    // The garbage collector removes a deleted Deployment's ReplicaSets only after the settle
    // time: until then they keep the size upstream gave them.
    let run = differing(SimConfig {
        gc_delay: SETTLE * 5,
        ..SimConfig::default()
    })
    .await;
    let test = &run.cluster.test;
    test.create::<Deployment>(&typed(workload("Deployment", "sized", 3)))
        .await;
    complete_at(&test.sim, "sized", 2, |deployment: &Deployment| {
        deployment.status.as_ref().is_some_and(|status| {
            status.observed_generation == deployment.metadata.generation
                && status.available_replicas == Some(2)
        })
    })
    .await;
    // kcm-rs would scale the ReplicaSet to 3; its owner goes before that is judged.
    test.api::<Deployment>()
        .delete("sized", &DeleteParams::default())
        .await
        .expect("delete the Deployment");

    let report = all_judged(&run.shadow).await;
    assert!(
        !test.list::<ReplicaSet>().await.is_empty(),
        "not yet collected"
    );
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report["not_compared"]["owner-gone"].as_u64() >= Some(1),
        "{report:#}"
    );
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
        intents(report).any(|intent| {
            intent["controller"] == controller
                && intent["verb"] == "create"
                && intent["resource"] == resource
                && intent["name"]
                    .as_str()
                    .is_some_and(|name| name.starts_with(prefix))
        })
    };
    eventually(
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
                && intended(&report, "statefulset-controller", "pods", "alone-0")
                // The event of the ReplicaSet's scaling is recorded after its create returns.
                && intended(&report, "deployment-controller", "events", ""))
            .then_some(report)
        },
    )
    .await;

    // After the settle window the missing objects are divergences: nobody created them.
    let report = eventually(
        "missing creates reported",
        Duration::from_secs(30),
        || async {
            let report = shadow_page(&shadow).await;
            let set = divergence_set(&report);
            (set.contains(&reported("missing", "replicasets", "lonely", "created"))
                && set.contains(&reported(
                    "missing",
                    "controllerrevisions",
                    "alone",
                    "created",
                ))
                && set.contains(&reported("missing", "pods", "alone", "created")))
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
