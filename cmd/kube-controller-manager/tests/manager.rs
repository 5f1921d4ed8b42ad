//! The real `kube-controller-manager` binary as a subprocess against the sim cluster:
//! flag handling, controller selection, endpoints, leader election, rate limiting.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::{apps::v1::ReplicaSet, coordination::v1::Lease};
use kube::{Api, api::PostParams};
use serde_json::json;
use sim::{SimCluster, SimConfig, testing::workload};

const BINARY: &str = env!("CARGO_BIN_EXE_kube-controller-manager");

/// A running manager process; killed on drop so a failing test leaves nothing behind.
struct Manager {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Manager {
    fn start(kubeconfig: &Path, dir: &Path, name: &str, extra: &[&str]) -> Self {
        let port = free_port();
        let log = dir.join(format!("{name}.log"));
        let log_file = std::fs::File::create(&log).expect("log file");
        let child = Command::new(BINARY)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--secure-port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--plain-http")
            // No delegated kubeconfigs here: serve the endpoints the tests read without
            // authorization, as hack/run.sh's users may.
            .arg("--authorization-always-allow-paths=/healthz,/healthz/*,/readyz,/livez,/metrics")
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start manager");
        Self { child, port, log }
    }

    fn get(&self, path: &str) -> Option<(u16, String)> {
        http_get(self.port, path)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success());
    }

    fn wait_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("free port")
}

/// A minimal HTTP/1.0 GET; `None` while nothing listens.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())?;
    Some((code, body))
}

async fn wait_until<F: FnMut() -> bool>(what: &str, timeout: Duration, mut check: F) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Cluster {
    sim: SimCluster,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

async fn cluster() -> Cluster {
    let sim = SimCluster::start(SimConfig::default()).await.expect("sim");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    Cluster {
        sim,
        dir,
        kubeconfig,
    }
}

fn replica_set(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(workload("ReplicaSet", name, replicas)).expect("valid ReplicaSet")
}

#[test]
fn unknown_controller_names_fail_with_the_known_list() {
    for flag in ["--controllers=nosuch", "--controllers=*,-nosuch"] {
        let output = Command::new(BINARY)
            .args([flag, "--secure-port=0", "--master=http://127.0.0.1:1"])
            .output()
            .expect("run");
        assert_eq!(output.status.code(), Some(1), "{flag}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("is not in the list of known controllers")
                && stderr.contains("replicaset-controller"),
            "{flag}: {stderr}"
        );
    }
}

#[test]
fn upstream_only_flags_are_accepted_with_a_warning() {
    let output = Command::new(BINARY)
        .args([
            "--controllers=nosuch",
            "--use-service-account-credentials=true",
            "--cluster-cidr",
            "10.0.0.0/8",
            "--secure-port=0",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("use-service-account-credentials") && stderr.contains("cluster-cidr"),
        "{stderr}"
    );
    // It got past flag parsing to the controller check.
    assert!(
        stderr.contains("is not in the list of known controllers"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_controller_opens_no_watch() {
    let cluster = cluster().await;
    // `*` and every controller this binary has switched off by name.
    let registry = manager::default_registry().expect("registry");
    let disabled: Vec<String> = registry
        .known_names()
        .iter()
        .map(|name| format!("-{name}"))
        .collect();
    let controllers = format!("--controllers=*,{}", disabled.join(","));
    let manager = Manager::start(
        &cluster.kubeconfig,
        cluster.dir.path(),
        "disabled",
        &["--leader-elect=false", &controllers],
    );
    wait_until("readyz", Duration::from_secs(20), || {
        manager.get("/readyz").is_some_and(|(code, _)| code == 200)
    })
    .await;
    let accounting = cluster.sim.accounting();
    assert_eq!(
        accounting.count("watch", "replicasets"),
        0,
        "{}",
        manager.log()
    );
    assert_eq!(accounting.count("watch", "pods"), 0);
    assert_eq!(accounting.count("list", "pods"), 0);
    drop(manager);

    let enabled = Manager::start(
        &cluster.kubeconfig,
        cluster.dir.path(),
        "enabled",
        &["--leader-elect=false", "--controllers=replicaset"],
    );
    wait_until("replicaset watches", Duration::from_secs(20), || {
        let accounting = cluster.sim.accounting();
        accounting.count("watch", "replicasets") >= 1 && accounting.count("watch", "pods") >= 1
    })
    .await;
    drop(enabled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_metrics_health_and_readiness_and_runs_the_replicaset_controller() {
    let cluster = cluster().await;
    let manager = Manager::start(
        &cluster.kubeconfig,
        cluster.dir.path(),
        "metrics",
        &["--leader-elect=false"],
    );
    wait_until("readyz", Duration::from_secs(20), || {
        manager.get("/readyz").is_some_and(|(code, _)| code == 200)
    })
    .await;
    let api: Api<ReplicaSet> = Api::namespaced(cluster.sim.client(), "default");
    api.create(&PostParams::default(), &replica_set("web", 3))
        .await
        .expect("create");
    wait_until("3 ready replicas", Duration::from_secs(20), || {
        futures_lite_block(api.get("web"))
            .ok()
            .and_then(|rs| rs.status)
            .is_some_and(|status| status.ready_replicas == Some(3))
    })
    .await;

    // The Deployment controller runs too: a Deployment gets its ReplicaSet and ready pods.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(cluster.sim.client(), "default");
    let deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "site", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "site"}},
            "template": {"metadata": {"labels": {"app": "site"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
    }))
    .expect("valid Deployment");
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create Deployment");
    wait_until(
        "2 available Deployment replicas",
        Duration::from_secs(20),
        || {
            futures_lite_block(deployments.get("site"))
                .ok()
                .and_then(|d| d.status)
                .is_some_and(|status| status.available_replicas == Some(2))
        },
    )
    .await;

    let (code, body) = manager.get("/healthz").expect("healthz");
    assert_eq!((code, body.as_str()), (200, "ok"));
    for controller in [
        "replicaset-controller",
        "deployment-controller",
        "statefulset-controller",
    ] {
        let (code, body) = manager
            .get(&format!("/healthz/{controller}"))
            .expect("healthz/<controller>");
        assert_eq!((code, body.as_str()), (200, "ok"), "{controller}");
    }
    assert_eq!(manager.get("/livez").map(|(code, _)| code), Some(200));

    let (code, metrics) = manager.get("/metrics").expect("metrics");
    assert_eq!(code, 200);
    for family in [
        "workqueue_depth{name=\"replicaset\"}",
        "workqueue_depth{name=\"deployment\"}",
        "workqueue_depth{name=\"statefulset\"}",
        "workqueue_adds_total{name=\"replicaset\"}",
        "workqueue_queue_duration_seconds_bucket{name=\"replicaset\"",
        "workqueue_work_duration_seconds_bucket{name=\"replicaset\"",
        "workqueue_unfinished_work_seconds{name=\"replicaset\"}",
        "workqueue_longest_running_processor_seconds{name=\"replicaset\"}",
        "workqueue_retries_total{name=\"replicaset\"}",
        "rest_client_request_duration_seconds_bucket",
        "rest_client_rate_limiter_duration_seconds_bucket",
        "controller_sync_duration_seconds_bucket{controller=\"replicaset-controller\"",
        "controller_sync_duration_seconds_bucket{controller=\"deployment-controller\"",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
    ] {
        assert!(metrics.contains(family), "missing {family} in\n{metrics}");
    }
    assert!(
        metrics
            .lines()
            .any(|line| line.starts_with("rest_client_requests_total{")
                && line.contains("code=\"201\"")
                && line.contains("method=\"POST\"")),
        "no counted POST in\n{metrics}"
    );
}

/// Runs a future to completion from sync test code that is already inside a runtime.
fn futures_lite_block<F: std::future::Future>(future: F) -> F::Output {
    tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(future))
}

fn lease_holder(api: &Api<Lease>) -> Option<String> {
    futures_lite_block(api.get_opt("kcm-rs"))
        .ok()
        .flatten()
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
        .filter(|holder| !holder.is_empty())
}

fn is_leading(manager: &Manager) -> bool {
    manager
        .get("/metrics")
        .is_some_and(|(_, body)| body.contains("leader_election_master_status{name=\"kcm-rs\"} 1"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_election_fails_over_and_releases_on_sigterm() {
    let cluster = cluster().await;
    let timings = [
        "--leader-elect=true",
        "--leader-elect-lease-duration=3s",
        "--leader-elect-renew-deadline=2s",
        "--leader-elect-retry-period=500ms",
    ];
    let mut first = Manager::start(&cluster.kubeconfig, cluster.dir.path(), "first", &timings);
    let mut second = Manager::start(&cluster.kubeconfig, cluster.dir.path(), "second", &timings);
    let leases: Api<Lease> = Api::namespaced(cluster.sim.client(), "kube-system");

    wait_until("one leader", Duration::from_secs(20), || {
        is_leading(&first) || is_leading(&second)
    })
    .await;
    // Give a would-be second leader time to appear, then check there is exactly one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        is_leading(&first) != is_leading(&second),
        "exactly one must lead"
    );
    let holder = lease_holder(&leases).expect("lease held");
    let (leader, standby) = if is_leading(&first) {
        (&mut first, &mut second)
    } else {
        (&mut second, &mut first)
    };
    assert_eq!(standby.get("/readyz").map(|(code, _)| code), Some(200));

    // Kill the leader hard: the standby takes over once the lease expires.
    let killed_at = Instant::now();
    leader.signal("KILL");
    leader.wait_exit(Duration::from_secs(5));
    wait_until("the standby to lead", Duration::from_secs(15), || {
        is_leading(standby)
    })
    .await;
    let takeover = killed_at.elapsed();
    assert!(
        takeover
            <= Duration::from_secs(3) + Duration::from_millis(500) * 3 + Duration::from_secs(2),
        "takeover took {takeover:?}"
    );
    let new_holder = lease_holder(&leases).expect("lease held");
    assert_ne!(new_holder, holder);

    // SIGTERM: exit 0 and give the lease up.
    standby.signal("TERM");
    assert_eq!(
        standby.wait_exit(Duration::from_secs(20)),
        Some(0),
        "{}",
        standby.log()
    );
    assert_eq!(lease_holder(&leases), None, "lease not released");

    // Upstream's LeaderElection events on the Lease.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(cluster.sim.client(), "kube-system");
    let messages: Vec<String> = futures_lite_block(events.list(&Default::default()))
        .expect("list events")
        .items
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("LeaderElection"))
        .filter(|event| event.involved_object.kind.as_deref() == Some("Lease"))
        .filter_map(|event| event.message)
        .collect();
    for wanted in [
        format!("{holder} became leader"),
        format!("{new_holder} became leader"),
        format!("{new_holder} stopped leading"),
    ] {
        assert!(messages.contains(&wanted), "{wanted:?} not in {messages:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_https_with_a_self_signed_certificate_by_default() {
    let cluster = cluster().await;
    let port = free_port();
    let log = std::fs::File::create(cluster.dir.path().join("https.log")).expect("log");
    let mut child = Command::new(BINARY)
        .arg(format!("--kubeconfig={}", cluster.kubeconfig.display()))
        .arg(format!("--secure-port={port}"))
        .args(["--bind-address=127.0.0.1", "--leader-elect=false"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start manager");
    let url = format!("https://127.0.0.1:{port}/healthz");
    let mut served = None;
    for _ in 0..100 {
        let output = Command::new("curl")
            .args(["-sk", "--max-time", "2", &url])
            .output()
            .expect("curl runs");
        if output.status.success() {
            served = Some(String::from_utf8_lossy(&output.stdout).into_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Plain HTTP on the same port gets no HTTP answer: it is a TLS listener.
    let plain = http_get(port, "/healthz");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(served.as_deref(), Some("ok"));
    assert!(
        plain.is_none(),
        "plain HTTP answered on the secure port: {plain:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_api_qps_bounds_the_request_rate() {
    let cluster = cluster().await;
    let manager = Manager::start(
        &cluster.kubeconfig,
        cluster.dir.path(),
        "qps",
        &[
            "--leader-elect=false",
            "--kube-api-qps=5",
            "--kube-api-burst=1",
        ],
    );
    wait_until("readyz", Duration::from_secs(20), || {
        manager.get("/readyz").is_some_and(|(code, _)| code == 200)
    })
    .await;
    let api: Api<ReplicaSet> = Api::namespaced(cluster.sim.client(), "default");
    api.create(&PostParams::default(), &replica_set("many", 40))
        .await
        .expect("create");
    let started = Instant::now();
    let creates = || {
        cluster
            .sim
            .accounting()
            .entries()
            .into_iter()
            .filter(|((verb, resource, agent), _)| {
                verb == "create" && resource == "pods" && agent.contains("replicaset-controller")
            })
            .map(|(_, count)| count)
            .sum::<u64>()
    };
    wait_until("some creates", Duration::from_secs(20), || creates() >= 10).await;
    let elapsed = started.elapsed().as_secs_f64();
    let observed = creates() as f64;
    // 5 per second plus the burst of 1 (and a little slack for the status writes).
    assert!(
        observed <= 5.0 * elapsed + 2.0,
        "{observed} creates in {elapsed:.2}s exceeds 5 qps"
    );
    assert!(
        creates() < 40,
        "all 40 pods created: no rate limit in effect"
    );
}

/// Creates `object` (JSON) as resource `K` in its namespace through the test client.
async fn create_json<K>(client: &kube::Client, object: serde_json::Value) -> K
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_owned();
    let typed: K = serde_json::from_value(object).expect("a valid object");
    Api::<K>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &typed)
        .await
        .expect("the API server accepts it")
}

fn deployment_json(
    namespace: &str,
    name: &str,
    replicas: i32,
    spec: serde_json::Value,
) -> serde_json::Value {
    let mut object = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
    });
    if let (Some(base), Some(extra)) = (object["spec"].as_object_mut(), spec.as_object()) {
        base.extend(extra.clone());
    }
    object
}

/// Issue 20, hostile objects: objects an API server accepts but no one should write — two
/// billion replicas under a pod quota, a maxSurge of 2^31-1, minReadySeconds and
/// progressDeadlineSeconds near 2^31, StatefulSet ordinals past 2^31-1, a 200 KiB annotation with
/// 10,000 owner references — next to ordinary ones. The manager (a debug build: integer
/// overflow panics) neither panics nor stalls: the ordinary objects converge, so do the
/// extreme but satisfiable ones, the unsatisfiable ones get Warning events, and retries back off
/// instead of spinning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_objects_neither_panic_the_manager_nor_stall_the_others() {
    use k8s_openapi::api::{
        apps::v1::{Deployment, StatefulSet},
        core::v1::{Event, Namespace, Pod},
    };
    use kube::api::ListParams;
    use sim::testing::eventually;

    let cluster = cluster().await;
    let client = cluster.sim.client();
    let mut manager = Manager::start(
        &cluster.kubeconfig,
        cluster.dir.path(),
        "hostile",
        &["--leader-elect=false"],
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, annotations) in [
        ("hostile", json!({"sim.kcm-rs.io/pod-quota": "5"})),
        ("extremes", json!({})),
    ] {
        let namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "annotations": annotations}
        }))
        .expect("namespace");
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
    }

    create_json::<Deployment>(
        &client,
        deployment_json("hostile", "two-billion", i32::MAX, json!({})),
    )
    .await;
    create_json::<Deployment>(
        &client,
        deployment_json(
            "extremes",
            "max-surge",
            2,
            json!({"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": i32::MAX, "maxUnavailable": 0}}}),
        ),
    )
    .await;
    create_json::<Deployment>(
        &client,
        deployment_json(
            "extremes",
            "never-available",
            1,
            json!({
            "minReadySeconds": i32::MAX - 1, "progressDeadlineSeconds": i32::MAX}),
        ),
    )
    .await;
    create_json::<StatefulSet>(
        &client,
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "far", "namespace": "extremes"},
            "spec": {"replicas": 3, "serviceName": "far", "ordinals": {"start": i32::MAX - 1},
                "selector": {"matchLabels": {"app": "far"}},
                "template": {"metadata": {"labels": {"app": "far"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
        }),
    )
    .await;
    let owners: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "name": format!("owner-{i}"), "uid": format!("00000000-0000-0000-0000-{i:012}")})
        })
        .collect();
    let mut crowded = workload("ReplicaSet", "crowded", 2);
    crowded["metadata"]["namespace"] = json!("extremes");
    crowded["metadata"]["annotations"] = json!({"example.com/blob": "x".repeat(200 << 10)});
    crowded["metadata"]["ownerReferences"] = json!(owners);
    create_json::<ReplicaSet>(&client, crowded).await;
    // The ordinary ones, created last.
    create_json::<Deployment>(
        &client,
        deployment_json("default", "ordinary", 3, json!({})),
    )
    .await;
    create_json::<ReplicaSet>(&client, workload("ReplicaSet", "ordinary-rs", 2)).await;
    let mut ordinary_set = workload("StatefulSet", "ordinary-set", 2);
    ordinary_set["spec"]["serviceName"] = json!("ordinary-set");
    create_json::<StatefulSet>(&client, ordinary_set).await;

    let deployments = |ns: &str| Api::<Deployment>::namespaced(client.clone(), ns);
    let available = |ns: &'static str, name: &'static str, want: i32| {
        let api = deployments(ns);
        async move {
            let status = api.get(name).await.ok()?.status?;
            (status.available_replicas == Some(want) && status.updated_replicas == Some(want))
                .then_some(())
        }
    };
    eventually("the ordinary Deployment", Duration::from_secs(60), || {
        available("default", "ordinary", 3)
    })
    .await;
    eventually(
        "the ordinary ReplicaSet and StatefulSet",
        Duration::from_secs(60),
        || {
            let (sets, rss) = (
                Api::<StatefulSet>::namespaced(client.clone(), "default"),
                Api::<ReplicaSet>::namespaced(client.clone(), "default"),
            );
            async move {
                let set = sets.get("ordinary-set").await.ok()?.status?;
                let rs = rss.get("ordinary-rs").await.ok()?.status?;
                (set.ready_replicas == Some(2) && rs.ready_replicas == Some(2)).then_some(())
            }
        },
    )
    .await;
    eventually("maxSurge 2^31-1", Duration::from_secs(60), || {
        available("extremes", "max-surge", 2)
    })
    .await;
    deployments("extremes")
        .patch(
            "max-surge",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "c", "image": "nginx:1.27"}]}}}})),
        )
        .await
        .expect("roll out");
    eventually(
        "maxSurge 2^31-1 rolled out",
        Duration::from_secs(60),
        || {
            let api = deployments("extremes");
            async move {
                let d = api.get("max-surge").await.ok()?;
                let status = d.status?;
                (status.observed_generation == d.metadata.generation
                    && status.updated_replicas == Some(2)
                    && status.available_replicas == Some(2)
                    && status.replicas == Some(2))
                .then_some(())
            }
        },
    )
    .await;
    // Ordinals past 2^31-1: no pod name can carry them (upstream parses pod names as int32),
    // so those pods are not created and the set says why with a Warning.
    eventually(
        "StatefulSet ordinals up to 2^31-1",
        Duration::from_secs(60),
        || {
            let pods = Api::<Pod>::namespaced(client.clone(), "extremes");
            let sets = Api::<StatefulSet>::namespaced(client.clone(), "extremes");
            let events = Api::<Event>::namespaced(client.clone(), "extremes");
            async move {
                let ready = sets.get("far").await.ok()?.status?.ready_replicas == Some(2);
                let mut names: Vec<String> = pods
                    .list(&ListParams::default().labels("app=far"))
                    .await
                    .ok()?
                    .items
                    .into_iter()
                    .filter_map(|p| p.metadata.name)
                    .collect();
                names.sort();
                let warned = events
                    .list(&ListParams::default())
                    .await
                    .ok()?
                    .items
                    .iter()
                    .any(|e| {
                        e.type_.as_deref() == Some("Warning")
                            && e.reason.as_deref() == Some("FailedCreate")
                            && e.involved_object.name.as_deref() == Some("far")
                    });
                (ready && warned && names == ["far-2147483646", "far-2147483647"]).then_some(())
            }
        },
    )
    .await;
    eventually("the crowded ReplicaSet", Duration::from_secs(60), || {
        let api = Api::<ReplicaSet>::namespaced(client.clone(), "extremes");
        async move {
            (api.get("crowded").await.ok()?.status?.ready_replicas == Some(2)).then_some(())
        }
    })
    .await;
    eventually(
        "the never-available Deployment's status",
        Duration::from_secs(60),
        || {
            let api = deployments("extremes");
            async move {
                let status = api.get("never-available").await.ok()?.status?;
                (status.updated_replicas == Some(1) && status.unavailable_replicas == Some(1))
                    .then_some(())
            }
        },
    )
    .await;

    // Two billion replicas: the quota admits 5 pods, the rest fail with a Warning event on the
    // ReplicaSet, and the ReplicaSet controller backs off instead of retrying hot.
    let events = Api::<Event>::namespaced(client.clone(), "hostile");
    eventually(
        "FailedCreate on the two-billion ReplicaSet",
        Duration::from_secs(60),
        || {
            let events = events.clone();
            async move {
                let list = events.list(&ListParams::default()).await.ok()?;
                list.items
                    .iter()
                    .any(|e| {
                        e.type_.as_deref() == Some("Warning")
                            && e.reason.as_deref() == Some("FailedCreate")
                            && e.involved_object.kind.as_deref() == Some("ReplicaSet")
                    })
                    .then_some(())
            }
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = cluster.sim.accounting().count("create", "pods");
    tokio::time::sleep(Duration::from_secs(10)).await;
    let creates = cluster.sim.accounting().count("create", "pods") - before;
    assert!(
        creates <= 30,
        "{creates} pod creates in 10 s: the refused ReplicaSet is retried hot"
    );
    let hostile_pods = Api::<Pod>::namespaced(client.clone(), "hostile")
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len();
    assert_eq!(hostile_pods, 5, "the quota's 5 pods");

    assert_eq!(
        manager.wait_exit(Duration::ZERO),
        None,
        "the manager exited:\n{}",
        manager.log()
    );
    let log = manager.log();
    assert!(!log.contains("panicked"), "a panic:\n{log}");
}
