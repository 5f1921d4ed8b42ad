//! The DaemonSet controller through the manager, from real flags in this process, against the
//! sim with nodes: `--controllers=daemonset` runs it alone (its two queues named in the
//! workqueue metrics), and in shadow mode beside a normal manager a DaemonSet's creation and
//! rollout decide nothing the normal manager did not do, and a pod decided for a node deleted,
//! tainted or added meanwhile is not compared; beside an upstream that names its revisions
//! with another template hash, a creation, rollout and rollback across its restart decide
//! nothing it did not do.

mod support;

use std::{sync::Arc, time::Duration};

use controller_toolkit::writes::{ApiWriteExecutor, Write, WriteExecutor, WriteVerb};
use daemonset::{DaemonSetController, DaemonSetOptions};
use futures::future::BoxFuture;
use informer::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, DaemonSet},
    core::v1::Node,
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use sim::{
    FaultConfig, NodesConfig, SimConfig,
    testing::{TestCluster, eventually},
};
use support::{Cluster, RunningManager, plain_get, plain_http_flags, requests_with_agent};
use tokio_util::sync::CancellationToken;

/// The sim with `nodes` nodes, and a kubeconfig for in-process managers.
async fn cluster(nodes: usize) -> Cluster {
    Cluster::start(SimConfig {
        nodes: NodesConfig::with_count(nodes),
        ..SimConfig::default()
    })
    .await
}

fn flags(extra: &[&str]) -> Vec<String> {
    plain_http_flags("/healthz,/readyz,/livez,/metrics,/shadow,/configz", extra)
}

fn daemon_set(name: &str) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
        }
    }))
    .expect("a DaemonSet")
}

/// Waits until the DaemonSet `name` runs `count` ready, up-to-date pods of its generation.
async fn settled(test: &TestCluster, name: &str, count: i32) {
    test.wait_for(
        name,
        &format!("{name} settled on {count} nodes"),
        Duration::from_secs(60),
        |ds: DaemonSet| {
            let status = ds.status?;
            (status.observed_generation == ds.metadata.generation
                && status.number_ready == count
                && status.updated_number_scheduled == Some(count)
                && status.number_available == Some(count))
            .then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_daemonset_runs_the_daemonset_controller_alone() {
    let cluster = cluster(2).await;
    let test = &cluster.test;
    let manager = cluster
        .start_manager(&flags(&[
            "--controllers=daemonset",
            "--concurrent-daemonset-syncs=3",
        ]))
        .await;
    test.create(&daemon_set("agent")).await;
    settled(test, "agent", 2).await;
    let creates = requests_with_agent(&test.sim, "kcm-rs/daemon-set-controller", "create", "pods");
    assert_eq!(
        creates, 2,
        "one pod per node, by the DaemonSet controller's client"
    );
    let (code, metrics) = plain_get(manager.addr, "/metrics").await.expect("metrics");
    assert_eq!(code, 200);
    for queue in ["daemonset", "daemonset-node-updates"] {
        assert!(
            metrics.contains(&format!("workqueue_adds_total{{name=\"{queue}\"}}")),
            "{queue} in {metrics}"
        );
    }
    assert!(
        !metrics.contains("workqueue_adds_total{name=\"replicaset\"}"),
        "only the DaemonSet controller runs"
    );
    let (code, configz) = plain_get(manager.addr, "/configz").await.expect("configz");
    assert_eq!(code, 200, "{configz}");
    let configz: Value = serde_json::from_str(&configz).expect("JSON");
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["DaemonSetController"]["ConcurrentDaemonSetSyncs"],
        3
    );
    drop(manager);
    cluster.test.stop().await;
}

/// A shadow running the DaemonSet controller; returns once it leads (its controller's health
/// check exists) with synced caches.
async fn start_shadow(cluster: &Cluster) -> RunningManager {
    let shadow = cluster
        .start_manager(&flags(&[
            "--leader-elect=true",
            "--controllers=daemonset",
            "--shadow",
            "--shadow-settle=2s",
        ]))
        .await;
    eventually("the shadow ready", Duration::from_secs(30), || async {
        let (_, checks) = plain_get(shadow.addr, "/healthz?verbose").await.ok()?;
        let (code, _) = plain_get(shadow.addr, "/readyz").await.ok()?;
        (checks.contains("daemonset-controller") && code == 200).then_some(())
    })
    .await;
    shadow
}

/// The shadow's report once every intent recorded by now is judged (the settle time passed).
async fn all_judged(shadow: &RunningManager) -> Value {
    tokio::time::sleep(Duration::from_secs(2)).await;
    eventually("every intent judged", Duration::from_secs(60), || async {
        let (_, body) = plain_get(shadow.addr, "/shadow").await.ok()?;
        let report: Value = serde_json::from_str(&body).ok()?;
        (report["pending"] == 0).then_some(report)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shadow_beside_a_normal_manager_finds_no_daemonset_divergence() {
    let cluster = cluster(3).await;
    let test = &cluster.test;
    let _normal = cluster
        .start_manager(&flags(&["--leader-elect=true", "--controllers=daemonset"]))
        .await;
    let shadow = start_shadow(&cluster).await;

    test.create(&daemon_set("agent")).await;
    settled(test, "agent", 3).await;
    test.merge_patch::<DaemonSet>(
        "agent",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}}),
    )
    .await;
    settled(test, "agent", 3).await;

    let report = all_judged(&shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report["compared_total"].as_u64() > Some(3),
        "the shadow compared what it decided: {report:#}"
    );
    let shadow_writes: u64 = test
        .sim
        .accounting()
        .entries()
        .into_iter()
        .filter(|((verb, resource, agent), _)| {
            agent.contains("kcm-rs-shadow/")
                && ["create", "update", "patch", "delete"].contains(&verb.as_str())
                && !["leases", "tokenreviews", "subjectaccessreviews"].contains(&resource.as_str())
        })
        .map(|(_, count)| count)
        .sum();
    assert_eq!(shadow_writes, 0, "the shadow wrote nothing");
    cluster.test.stop().await;
}

/// The scene of a node change one manager sees late: a normal manager runs the DaemonSet
/// `agent` on three nodes; then a shadow starts whose watches see the events of `sim-node-2`
/// (labelled `shadow-lags`) a second late, and has judged nothing divergent. Its pod watch is
/// on time. Returns the normal manager and the shadow.
async fn node_seen_late_by_the_shadow(cluster: &Cluster) -> (RunningManager, RunningManager) {
    let test = &cluster.test;
    let nodes: Api<Node> = Api::all(test.client.clone());
    nodes
        .patch(
            "sim-node-2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"shadow-lags": "yes"}}})),
        )
        .await
        .expect("label the node");
    let normal = cluster
        .start_manager(&flags(&["--leader-elect=true", "--controllers=daemonset"]))
        .await;
    test.create(&daemon_set("agent")).await;
    settled(test, "agent", 3).await;
    // Watches started from now on (the shadow's) see the node's events a second late.
    test.sim.set_faults(FaultConfig::watch_lag(
        "shadow-lags",
        Duration::from_secs(1),
    ));
    let shadow = start_shadow(cluster).await;
    let before = all_judged(&shadow).await;
    assert_eq!(before["divergences_total"], 0, "{before:#}");
    (normal, shadow)
}

/// Waits until the shadow has judged its decision for the lagging node's pod: not compared for
/// `reason`, or a divergence (which fails the test).
async fn judged_not_compared(shadow: &RunningManager, reason: &str) {
    let report = eventually(
        "the shadow's decision for the lagging node's pod judged",
        Duration::from_secs(60),
        || async {
            let report = all_judged(shadow).await;
            let judged = report["not_compared"][reason].as_u64() > Some(0)
                || report["divergences_total"].as_u64() > Some(0);
            judged.then_some(report)
        },
    )
    .await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report["not_compared"][reason].as_u64() >= Some(1),
        "the shadow's decision for the lagging node's pod: {report:#}"
    );
}

/// A node is deleted; the pod garbage collector deletes its pod at once. The shadow sees the
/// pod go while the node is still there and decides a pod for it; the normal manager, whose
/// Node watch is on time, does not. That pod is for a node that is gone: not compared
/// (`node-gone`), not a missing pod, and it claims none of the pods the cluster created for
/// the other nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_pod_decided_for_a_node_deleted_meanwhile_is_not_compared() {
    let cluster = cluster(3).await;
    let (_normal, shadow) = node_seen_late_by_the_shadow(&cluster).await;
    let nodes: Api<Node> = Api::all(cluster.test.client.clone());
    nodes
        .delete("sim-node-2", &DeleteParams::default())
        .await
        .expect("delete the node");
    settled(&cluster.test, "agent", 2).await;
    judged_not_compared(&shadow, "node-gone").await;
    cluster.test.stop().await;
}

/// A node is tainted `NoExecute`; the normal manager deletes its pod. The shadow sees the pod
/// go before the taint and decides a pod for the node, which the cluster never creates: its
/// node changed after the sync started, so it is not compared (`node-changed`), not missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_pod_decided_for_a_node_tainted_meanwhile_is_not_compared() {
    let cluster = cluster(3).await;
    let (_normal, shadow) = node_seen_late_by_the_shadow(&cluster).await;
    let nodes: Api<Node> = Api::all(cluster.test.client.clone());
    let taint = json!({"spec": {"taints": [{"key": "evict", "effect": "NoExecute"}]}});
    nodes
        .patch("sim-node-2", &PatchParams::default(), &Patch::Merge(taint))
        .await
        .expect("taint the node");
    settled(&cluster.test, "agent", 2).await;
    judged_not_compared(&shadow, "node-changed").await;
    cluster.test.stop().await;
}

/// A node is added that the shadow sees a second late; the normal manager creates its pod at
/// once. The node is not Ready, so the scheduler leaves that pod unbound (a DaemonSet does not
/// tolerate `not-ready:NoSchedule`). The shadow sees the unbound pod pinned to a node it does
/// not know yet, and would delete it as a pod of a vanished node: that node appeared after the
/// sync started, so the delete is not compared (`node-changed`), not an extra pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_pod_deleted_for_a_node_added_meanwhile_is_not_compared() {
    let cluster = cluster(3).await;
    let (_normal, shadow) = node_seen_late_by_the_shadow(&cluster).await;
    let nodes: Api<Node> = Api::all(cluster.test.client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "sim-node-3", "labels": {"shadow-lags": "yes"}},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]}
    }))
    .expect("a node");
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("add the node");
    cluster
        .test
        .wait_for(
            "agent",
            "a pod for the added node",
            Duration::from_secs(60),
            |ds: DaemonSet| {
                let status = ds.status?;
                (status.current_number_scheduled == 4 && status.number_ready == 3).then_some(())
            },
        )
        .await;
    judged_not_compared(&shadow, "node-changed").await;
    cluster.test.stop().await;
}

/// Writes as upstream's DaemonSet controller does where it differs from kcm-rs's: upstream
/// names a revision after the `spew` hash of the Go template, which kcm-rs does not reproduce
/// (`history::compute_hash`), so its revision names and the pods' `controller-revision-hash`
/// labels carry another hash. Each revision is created 300 ms late, so that the shadow, on
/// time, decides its own create first.
struct UpstreamNamedRevisions {
    api: ApiWriteExecutor,
}

/// Another hash than `hash`, as long and as valid: reversed.
fn upstream_hash(hash: &str) -> String {
    hash.chars().rev().collect()
}

impl WriteExecutor for UpstreamNamedRevisions {
    fn execute(&self, mut write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let api = self.api.clone();
        Box::pin(async move {
            if write.verb == WriteVerb::Create && write.resource.plural == "controllerrevisions" {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let mut body: Value =
                    serde_json::from_slice(&write.body).map_err(kube::Error::SerdeError)?;
                let ours = body["metadata"]["labels"]["controller-revision-hash"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let theirs = upstream_hash(&ours);
                write.name = write.name.replace(&ours, &theirs);
                body["metadata"]["name"] = json!(write.name);
                body["metadata"]["labels"]["controller-revision-hash"] = json!(theirs);
                write.body = serde_json::to_vec(&body)
                    .map_err(kube::Error::SerdeError)?
                    .into();
            }
            api.execute(write).await
        })
    }
}

/// The stand-in upstream: kcm-rs's DaemonSet controller writing through
/// [`UpstreamNamedRevisions`], until `stop`.
fn start_upstream_daemon_sets(cluster: &Cluster, stop: &CancellationToken) {
    let client = cluster
        .test
        .sim
        .client_with_user_agent("upstream-daemonsets");
    let writes: Arc<dyn WriteExecutor> = Arc::new(UpstreamNamedRevisions {
        api: ApiWriteExecutor::new(client.clone()),
    });
    let informers = SharedInformerFactory::new(client.clone(), FactoryConfig::default());
    let options = DaemonSetOptions {
        runtime: daemonset::RuntimeOptions {
            writes: Some(writes),
            ..Default::default()
        },
        ..Default::default()
    };
    let controller = DaemonSetController::new(client, &informers, options).expect("controller");
    informers.start(stop.clone());
    tokio::spawn(controller.run(2, stop.clone()));
}

/// The revisions of the DaemonSet `name`: name and number, by name.
async fn revisions(test: &TestCluster, name: &str) -> Vec<(String, i64)> {
    let api: Api<ControllerRevision> = Api::namespaced(test.client.clone(), "default");
    let mut listed: Vec<(String, i64)> = api
        .list(&kube::api::ListParams::default().labels(&format!("app={name}")))
        .await
        .expect("list revisions")
        .into_iter()
        .map(|revision| {
            (
                revision.metadata.name.unwrap_or_default(),
                revision.revision,
            )
        })
        .collect();
    listed.sort();
    listed
}

/// Beside an upstream whose revision names differ (the template hash is Go's), the shadow's
/// revision creates are recognized by owner and data, not by name: the DaemonSet created,
/// rolled to a second image, upstream restarted, and rolled back to the first image (upstream
/// renumbers the first revision) shows no divergence. Compared by name, the shadow's creates
/// at the creation and the rollout were `missing` with a third hash beside upstream's two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_an_upstream_naming_revisions_by_another_hash_a_rollback_finds_no_divergence() {
    let cluster = cluster(2).await;
    let test = &cluster.test;
    let upstream = CancellationToken::new();
    start_upstream_daemon_sets(&cluster, &upstream);
    let shadow = start_shadow(&cluster).await;

    // Each step is judged before the next: a create the next spec change supersedes is not
    // compared.
    test.create(&daemon_set("agent")).await;
    settled(test, "agent", 2).await;
    all_judged(&shadow).await;
    let image = |image: &str| json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    test.merge_patch::<DaemonSet>("agent", image("nginx:1.26"))
        .await;
    settled(test, "agent", 2).await;
    all_judged(&shadow).await;
    upstream.cancel();
    let restarted = CancellationToken::new();
    start_upstream_daemon_sets(&cluster, &restarted);
    test.merge_patch::<DaemonSet>("agent", image("nginx:1.25"))
        .await;
    settled(test, "agent", 2).await;

    let held = revisions(test, "agent").await;
    assert_eq!(
        held.len(),
        2,
        "upstream's two revisions, the first renumbered: {held:?}"
    );
    assert_eq!(
        held.iter().map(|(_, number)| *number).max(),
        Some(3),
        "the rollback renumbered the first revision: {held:?}"
    );
    let report = all_judged(&shadow).await;
    assert_eq!(report["divergences_total"], 0, "{report:#}");
    assert!(
        report["matched"]["owner+data"].as_u64() >= Some(2),
        "the shadow's revision creates matched upstream's by owner and data: {report:#}"
    );
    restarted.cancel();
    cluster.test.stop().await;
}
