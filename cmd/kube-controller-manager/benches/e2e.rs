//! End-to-end benchmark: the real `kube-sim` (kubelet with instant readiness) and
//! `kube-controller-manager` binaries as two processes, driven from this one. For each phase it
//! measures the wall time until every object reports converged status, the manager's CPU
//! seconds and peak RSS (from /proc: the kernel's high-water mark `VmHWM`, reset per phase
//! through `/proc/<pid>/clear_refs`), and the manager's API calls by verb and resource (the
//! sim's request accounting, read from its `/metrics`). Writes `bench-results/<out>.md` and
//! `bench-results/<out>.json`.
//!
//! `cargo bench -p kube-controller-manager --bench e2e -- [--deployments N]
//! [--deployment-replicas R] [--statefulsets N] [--statefulset-replicas R] [--replicasets N]
//! [--replicaset-replicas R] [--daemonsets N] [--nodes M] [--node-heartbeat-ms MS]
//! [--node-churn K] [--heartbeat-window S] [--qps Q] [--burst B] [--manager PATH] [--sim PATH]
//! [--indexed-job-completions N] [--job-parallelism P] [--jobs N] [--job-pod-seconds S]
//! [--job-after-finish-seconds S] [--out NAME] [--shadow] [--manager-arg ARG]...` (a count of
//! 0 skips that kind; `--manager` measures another build of the binary, e.g. main's before a
//! change; `--manager-arg` passes one more flag to the managers under test, e.g.
//! `--replicaset-status-hold=0s` for upstream's writes; `--sim` defaults to the `kube-sim`
//! beside the manager binary; `--out` defaults to `e2e`; `--shadow` runs a second manager with
//! `--shadow` beside the first and measures it too: its CPU, peak RSS, writes, and the
//! divergences it reports); under `cargo test` it runs a small smoke configuration of each kind
//! (the Jobs: an Indexed Job of 20 completions, 5 at a time, and 10 one-pod Jobs, pods of 1 s,
//! their counts checked), with a shadow manager, and fails on any divergence it reports (both
//! managers run the same code, so each one is a false alarm).
//!
//! DaemonSets (issue 32; none by default, so the default run measures what it always did):
//! `--nodes M` and `--node-heartbeat-ms` go to `kube-sim` (defaults 1 and 10,000, the sim's
//! own); `--daemonsets N` creates N DaemonSets on the M nodes, rolls them with
//! `maxUnavailable: 10%` and then with `maxSurge: 10%`, and churns the nodes: `--node-churn K`
//! (default 100) nodes added through the API, K of the original nodes tainted `NoExecute`
//! (which the DaemonSets do not tolerate: the controller deletes their pods there) and K
//! others deleted (the sim's pod GC removes their pods). Each is a measured phase, converged
//! when every DaemonSet's status counts the nodes it should run on and the pods are exactly
//! one per DaemonSet and node. `--heartbeat-window S` measures, right after the create phase,
//! S seconds in which nothing changes but the nodes' heartbeats: the manager's CPU (percent of
//! one core), peak RSS, and the DaemonSet syncs and queue adds they caused (issue 32's bar:
//! none). Its results go to `bench-results/<out>.heartbeat.json` too.
//!
//! Jobs (issue 41; none by default, so the default run measures what it always did), in their
//! own table, each figure also per pod (the Indexed Job) or per Job (the small Jobs), with the
//! manager's writes by verb and resource (pod creates, pod patches: the tracking finalizer's
//! removal, `jobs/status` updates, events):
//! - `--indexed-job-completions N`: one Indexed Job, `completions: N`, `parallelism:
//!   --job-parallelism P` (default 1,000), one container `sh -c 'sleep S; exit 0'`
//!   (`--job-pod-seconds S`, default 1; the sim's kubelet ends it so), `restartPolicy: Never`.
//!   Phase "run": from the create until the Job is `Complete=True` and every one of its pods
//!   has lost the `batch.kubernetes.io/job-tracking` finalizer. Then, after
//!   `--job-after-finish-seconds` (default 10), the manager's current RSS (`VmRSS`), and the Job's
//!   `succeeded == N`, `completedIndexes == "0-(N-1)"`, `failed == 0`, and exactly N pods, none
//!   holding the finalizer (anything else fails the run). Then phase "delete": the Job deleted
//!   with background propagation, until it and its pods are gone.
//! - `--jobs N`: N Jobs of one pod each (`completions: 1, parallelism: 1`, the same container),
//!   created at once (64 creates in flight); phase "run" until every Job is Complete and every
//!   pod's finalizer is gone, each Job checked (`succeeded == 1`, `failed == 0`, one pod each);
//!   then phase "delete" as above.
//!
//! Convergence is read from a watch of the scenario's Jobs (the pods are listed only once every
//! Job reads Complete: by metadata, in pages of 1,000 that stop at the first pod still holding
//! the finalizer, at most once a second), so the driver adds little load of its own. The sim's
//! scheduler does not count capacity (its nodes report 110 pods allocatable, but any number
//! fit), so the default single node runs the 1,000 pods of `--job-parallelism 1000` at once.
//! The issue's runs, the big Job at the default QPS (2000/4000) and at upstream's 100/150:
//! `hack/bench.sh --deployments 0 --statefulsets 0 --replicasets 0 --indexed-job-completions
//! 10000 --job-parallelism 1000 --qps 100 --burst 150 --out e2e-job-10000-qps100` (and the same
//! without `--qps 100 --burst 150`, `--out e2e-job-10000`), and `hack/bench.sh --deployments 0
//! --statefulsets 0 --replicasets 0 --jobs 5000 --out e2e-jobs-5000`.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use k8s_openapi::api::{
    apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet},
    core::v1::{Node, Pod},
};
use k8s_openapi::jiff::Timestamp;
use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{BINARY, Manager, Sim, api_calls, api_calls_and_failures, writes};

mod jobs;
mod support;

/// The manager's requests carry this in their user agent.
/// The normal manager's requests carry this in their user agent (`<product>/<client>`)...
const MANAGER_AGENT: &str = " kcm-rs/";
/// ...and the shadow's this.
const SHADOW_AGENT: &str = " kcm-rs-shadow/";
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(1800);
/// How many 250 ms convergence polls pass between two reads of the manager's queue depth.
const QUEUE_DEPTH_EVERY_POLLS: u64 = 8;
/// The sim's garbage-collection delay per level of ownership.
const GC_DELAY: Duration = Duration::from_millis(100);

/// How many objects of one kind, with how many replicas each.
#[derive(Clone, Copy)]
struct Size {
    count: usize,
    replicas: i32,
}

struct Settings {
    deployments: Size,
    stateful_sets: Size,
    replica_sets: Size,
    /// DaemonSets, one pod per node each.
    daemon_sets: usize,
    /// `kube-sim --nodes`.
    nodes: usize,
    /// `kube-sim --node-heartbeat-ms`: every node's Lease renewal and status heartbeat period.
    node_heartbeat_ms: u64,
    /// Nodes added, tainted and deleted by the DaemonSet bench's churn phases.
    node_churn: usize,
    /// The heartbeat-only window after the DaemonSets' create phase, if any.
    heartbeat_window: Option<Duration>,
    /// Under `cargo test`: a measured figure that must hold for the code to be right (no
    /// DaemonSet sync from heartbeats) fails the run instead of only being reported.
    smoke: bool,
    qps: u32,
    burst: u32,
    manager_binary: PathBuf,
    sim_binary: PathBuf,
    /// Results go to `bench-results/<out>.md` and `.json`.
    out: String,
    /// Also run and measure a `--shadow` manager.
    shadow: bool,
    /// More flags for the managers under test.
    manager_args: Vec<String>,
    /// The Job scenarios (issue 41): none by default, a small one of each under `cargo test`.
    jobs: jobs::JobSettings,
}

impl Settings {
    /// Defaults of issue 8 under `cargo bench`; a small smoke run under `cargo test`.
    fn from_args() -> anyhow::Result<Self> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let benchmarking = args.iter().any(|arg| arg == "--bench");
        let size = |count, replicas, smoke_count| Size {
            count: if benchmarking { count } else { smoke_count },
            replicas: if benchmarking { replicas } else { 2 },
        };
        let mut settings = Settings {
            deployments: size(1000, 5, 3),
            stateful_sets: size(200, 3, 3),
            replica_sets: size(500, 4, 3),
            // The smoke covers the DaemonSet path in seconds: 2 DaemonSets on 5 nodes that
            // heartbeat every 100 ms (so a 2 s window sees 20 heartbeats per node), a churn of 2.
            daemon_sets: if benchmarking { 0 } else { 2 },
            nodes: if benchmarking { 1 } else { 5 },
            node_heartbeat_ms: if benchmarking { 10_000 } else { 100 },
            node_churn: if benchmarking { 100 } else { 2 },
            heartbeat_window: (!benchmarking).then_some(Duration::from_secs(2)),
            smoke: !benchmarking,
            qps: 2000,
            burst: 4000,
            manager_binary: PathBuf::from(BINARY),
            sim_binary: Path::new(BINARY).with_file_name("kube-sim"),
            out: "e2e".to_owned(),
            shadow: !benchmarking,
            manager_args: Vec::new(),
            jobs: jobs::JobSettings::new(benchmarking),
        };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = || iter.next().context(format!("{arg} needs a value"));
            match arg.as_str() {
                "--deployments" => settings.deployments.count = value()?.parse()?,
                "--deployment-replicas" => settings.deployments.replicas = value()?.parse()?,
                "--statefulsets" => settings.stateful_sets.count = value()?.parse()?,
                "--statefulset-replicas" => settings.stateful_sets.replicas = value()?.parse()?,
                "--replicasets" => settings.replica_sets.count = value()?.parse()?,
                "--replicaset-replicas" => settings.replica_sets.replicas = value()?.parse()?,
                "--daemonsets" => settings.daemon_sets = value()?.parse()?,
                "--nodes" => settings.nodes = value()?.parse()?,
                "--node-heartbeat-ms" => settings.node_heartbeat_ms = value()?.parse()?,
                "--node-churn" => settings.node_churn = value()?.parse()?,
                "--heartbeat-window" => {
                    let seconds: u64 = value()?.parse()?;
                    settings.heartbeat_window = (seconds > 0).then(|| Duration::from_secs(seconds));
                }
                "--qps" => settings.qps = value()?.parse()?,
                "--burst" => settings.burst = value()?.parse()?,
                "--manager" => settings.manager_binary = PathBuf::from(value()?),
                "--sim" => settings.sim_binary = PathBuf::from(value()?),
                "--out" => settings.out = value()?.clone(),
                "--shadow" => settings.shadow = true,
                "--manager-arg" => settings.manager_args.push(value()?.clone()),
                "--indexed-job-completions" => {
                    settings.jobs.indexed_completions = value()?.parse()?;
                }
                "--job-parallelism" => settings.jobs.parallelism = value()?.parse()?,
                "--jobs" => settings.jobs.small_jobs = value()?.parse()?,
                "--job-pod-seconds" => settings.jobs.pod_seconds = value()?.parse()?,
                "--job-after-finish-seconds" => {
                    settings.jobs.after_finish = Duration::try_from_secs_f64(value()?.parse()?)?;
                }
                _ => {}
            }
        }
        settings.check()?;
        Ok(settings)
    }

    /// Refuses combinations the DaemonSet phases cannot run, before anything starts.
    fn check(&self) -> anyhow::Result<()> {
        if self.nodes == 0 {
            bail!("--nodes must be at least 1");
        }
        self.jobs.check()?;
        if self.daemon_sets == 0 && self.heartbeat_window.is_some() {
            bail!(
                "--heartbeat-window is measured after the DaemonSets' create: it needs --daemonsets"
            );
        }
        // The churn taints K of the original nodes and deletes K others.
        if self.daemon_sets > 0 && self.nodes < 2 * self.node_churn {
            bail!(
                "--node-churn {} taints {0} nodes and deletes {0} others: it needs --nodes {} or more",
                self.node_churn,
                2 * self.node_churn
            );
        }
        Ok(())
    }
}

impl Settings {
    /// Starts the manager under test without leader election at the bench's client rate; the
    /// shadow one with `--shadow`.
    fn start_manager(&self, kubeconfig: &Path, shadow: bool) -> anyhow::Result<Manager> {
        let mut args = vec![
            "--leader-elect=false".to_owned(),
            format!("--kube-api-qps={}", self.qps),
            format!("--kube-api-burst={}", self.burst),
        ];
        if shadow {
            args.push("--shadow".to_owned());
        }
        args.extend(self.manager_args.iter().cloned());
        Manager::start(&self.manager_binary, kubeconfig, &args)
    }
}

/// One measured phase.
#[derive(serde::Serialize)]
struct PhaseResult {
    phase: String,
    objects: usize,
    wall_seconds: f64,
    cpu_seconds: f64,
    peak_rss_mib: f64,
    api_calls: BTreeMap<String, u64>,
    /// Those of `api_calls` the server refused or could not serve (non-2xx), by verb and
    /// resource.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    failed_api_calls: BTreeMap<String, u64>,
    api_calls_per_object: f64,
    /// The p99 sync duration of the phase's syncs (the slowest controller's), in ms: the upper
    /// bound of the histogram bucket that holds it.
    sync_p99_ms: Option<f64>,
    /// The deepest the manager's workqueues were together, sampled with convergence.
    queue_depth_peak: f64,
    /// Their depth a second after the phase converged: 0 when they drained.
    queue_depth_end: f64,
    /// The shadow manager over the same phase, with `--shadow`.
    shadow: Option<ShadowUsage>,
    /// DaemonSet phases: the nodes every DaemonSet runs a pod on once converged...
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<usize>,
    /// ...and the pods the phase creates, replaces or removes (over all DaemonSets): what its
    /// requests are counted per, since a DaemonSet's size is its node count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pods: Option<usize>,
    /// Job phases: their figures per pod or per Job, the Indexed Job's RSS after it finished,
    /// and the counts checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    job: Option<jobs::JobFigures>,
    /// When the phase began acting and when its measurement ended: what a shadow divergence's
    /// times are placed in.
    #[serde(skip)]
    span: (Timestamp, Timestamp),
}

/// What the shadow manager cost over one phase.
#[derive(serde::Serialize)]
struct ShadowUsage {
    cpu_seconds: f64,
    peak_rss_mib: f64,
    /// Its requests other than reads and its Lease: must be 0.
    writes: u64,
}

fn difference(
    after: &BTreeMap<String, u64>,
    before: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(key, count)| {
            let delta = count.saturating_sub(before.get(key).copied().unwrap_or(0));
            (delta > 0).then(|| (key.clone(), delta))
        })
        .collect()
}

/// Peak RSS over a phase: the larger of the samples and the kernel's high-water mark.
struct PeakRss<'a> {
    manager: &'a Manager,
    sampled: f64,
    high_water_mark: bool,
}

impl<'a> PeakRss<'a> {
    fn start(manager: &'a Manager) -> anyhow::Result<Self> {
        Ok(Self {
            high_water_mark: manager.reset_peak_rss(),
            sampled: manager.status_mib("VmRSS")?,
            manager,
        })
    }

    fn sample(&mut self) -> anyhow::Result<()> {
        self.sampled = self.sampled.max(self.manager.status_mib("VmRSS")?);
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<f64> {
        self.sample()?;
        if self.high_water_mark {
            self.sampled = self.sampled.max(self.manager.peak_rss_mib()?);
        }
        Ok(self.sampled)
    }
}

/// The managers a phase measures: the normal one, and the shadow beside it if any.
#[derive(Clone, Copy)]
struct Managers<'a> {
    normal: &'a Manager,
    shadow: Option<&'a Manager>,
}

/// Runs `act`, then polls `converged` every 250 ms while sampling RSS, and measures the phase.
async fn measure<A, C>(
    name: &str,
    objects: usize,
    client: &Client,
    managers: Managers<'_>,
    act: A,
    mut converged: C,
) -> anyhow::Result<PhaseResult>
where
    A: std::future::Future<Output = anyhow::Result<()>>,
    C: AsyncFnMut() -> anyhow::Result<bool>,
{
    let manager = managers.normal;
    let (calls_before, failed_before) = api_calls_and_failures(client, MANAGER_AGENT).await?;
    let shadow_calls_before = api_calls(client, SHADOW_AGENT).await?;
    let queues_before = manager.queue_metrics()?;
    let mut queue_depth_peak = queues_before.depth;
    let cpu_before = manager.cpu_seconds()?;
    let shadow_cpu_before = managers.shadow.map(Manager::cpu_seconds).transpose()?;
    let started = Instant::now();
    let started_at = Timestamp::now();
    let mut peak_rss = PeakRss::start(manager)?;
    let mut shadow_peak_rss = managers.shadow.map(PeakRss::start).transpose()?;
    act.await?;
    let mut polls: u64 = 0;
    while !converged().await? {
        peak_rss.sample()?;
        // The queue depth comes from the manager's /metrics, which costs it CPU to render:
        // read every 2 s, not at every 250 ms poll, so the figure measures the workload.
        if polls.is_multiple_of(QUEUE_DEPTH_EVERY_POLLS) {
            queue_depth_peak = queue_depth_peak.max(manager.queue_metrics()?.depth);
        }
        polls += 1;
        if let Some(shadow) = &mut shadow_peak_rss {
            shadow.sample()?;
        }
        if started.elapsed() > CONVERGE_TIMEOUT {
            bail!("{name} did not converge within {CONVERGE_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let wall_seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = manager.cpu_seconds()? - cpu_before;
    let queues_after = manager.queue_metrics()?;
    // The converged status's own watch events still enqueue a last sync each: the queues
    // should have drained a second later.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let queue_depth_end = manager.queue_metrics()?.depth;
    let (calls_after, failed_after) = api_calls_and_failures(client, MANAGER_AGENT).await?;
    let calls = difference(&calls_after, &calls_before);
    let total = requests(&calls);
    let shadow = match (managers.shadow, shadow_cpu_before, shadow_peak_rss) {
        (Some(shadow), Some(cpu_before), Some(peak_rss)) => Some(ShadowUsage {
            cpu_seconds: shadow.cpu_seconds()? - cpu_before,
            peak_rss_mib: peak_rss.finish()?,
            writes: writes(&difference(
                &api_calls(client, SHADOW_AGENT).await?,
                &shadow_calls_before,
            )),
        }),
        _ => None,
    };
    Ok(PhaseResult {
        phase: name.to_string(),
        objects,
        wall_seconds,
        cpu_seconds,
        peak_rss_mib: peak_rss.finish()?,
        api_calls_per_object: total as f64 / objects.max(1) as f64,
        api_calls: calls,
        failed_api_calls: difference(&failed_after, &failed_before),
        sync_p99_ms: queues_after.sync_p99_ms_since(&queues_before),
        queue_depth_peak: queue_depth_peak.max(queues_after.depth),
        queue_depth_end,
        shadow,
        nodes: None,
        pods: None,
        job: None,
        span: (started_at, Timestamp::now()),
    })
}

/// The phase whose span holds `at` (RFC 3339), or where `at` falls between phases.
fn phase_at(results: &[PhaseResult], at: &str) -> String {
    let Ok(at) = at.parse::<Timestamp>() else {
        return format!("unreadable time {at}");
    };
    let mut before = "before the first phase".to_owned();
    for result in results {
        let (started, ended) = result.span;
        if at < started {
            return format!("{before}, before `{}`", result.phase);
        }
        if at <= ended {
            return format!("`{}`", result.phase);
        }
        before = format!("after `{}`", result.phase);
    }
    before
}

/// For each divergent pod of the shadow's `report`: the intents recorded for it and the phase
/// each was decided in, and the pod as the cluster holds it now (its node, and whether that
/// node is there, and the phase it was created in). What a false alarm is diagnosed from.
async fn divergent_pods(
    client: &Client,
    report: &serde_json::Value,
    results: &[PhaseResult],
) -> anyhow::Result<String> {
    let empty = Vec::new();
    let divergences = report["divergences"].as_array().unwrap_or(&empty);
    let intents = report["intents"].as_array().unwrap_or(&empty);
    let nodes: Api<Node> = Api::all(client.clone());
    let mut out = String::from("\nDivergent pods:\n");
    for divergence in divergences.iter().filter(|d| d["resource"] == "pods") {
        let (namespace, name) = (
            divergence["namespace"].as_str().unwrap_or_default(),
            divergence["name"].as_str().unwrap_or_default(),
        );
        let _ = writeln!(out, "- `{namespace}/{name}` ({}):", divergence["kind"]);
        for intent in intents
            .iter()
            .filter(|i| i["resource"] == "pods" && i["namespace"] == namespace && i["name"] == name)
        {
            let at = intent["at"].as_str().unwrap_or_default();
            let _ = writeln!(
                out,
                "  - intent {} ({}) decided at {at}, in {}",
                intent["verb"],
                intent["reason"],
                phase_at(results, at)
            );
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
        let Some(pod) = pods.get_opt(name).await? else {
            let _ = writeln!(out, "  - not in the cluster now");
            continue;
        };
        let spec = pod.spec.unwrap_or_default();
        let bound = spec.node_name.clone();
        let pinned = spec
            .affinity
            .and_then(|affinity| affinity.node_affinity)
            .and_then(|affinity| affinity.required_during_scheduling_ignored_during_execution)
            .and_then(|required| required.node_selector_terms.into_iter().next())
            .and_then(|term| term.match_fields)
            .and_then(|fields| fields.into_iter().next())
            .and_then(|field| field.values)
            .and_then(|values| values.into_iter().next());
        let node = bound.clone().or(pinned.clone());
        let node_there = match &node {
            Some(node) => nodes.get_opt(node).await?.is_some(),
            None => false,
        };
        let created = pod
            .metadata
            .creation_timestamp
            .map(|time| time.0.to_string())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  - in the cluster: bound to {bound:?}, pinned to {pinned:?} (node there: {node_there}), terminating: {}, created at {created}, in {}",
            pod.metadata.deletion_timestamp.is_some(),
            phase_at(results, &created)
        );
    }
    Ok(out)
}

/// The three workload kinds, as the bench drives them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deployment,
    StatefulSet,
    ReplicaSet,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Deployment => "deployment",
            Kind::StatefulSet => "statefulset",
            Kind::ReplicaSet => "replicaset",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Kind::Deployment => "Deployments",
            Kind::StatefulSet => "StatefulSets",
            Kind::ReplicaSet => "ReplicaSets",
        }
    }

    /// A workload selecting `app=<name>`, labelled `bench=<kind>` (pods too).
    fn object(self, name: &str, replicas: i32) -> serde_json::Value {
        let kind = match self {
            Kind::Deployment => "Deployment",
            Kind::StatefulSet => "StatefulSet",
            Kind::ReplicaSet => "ReplicaSet",
        };
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "labels": {"bench": self.label()}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name, "bench": self.label()}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
        });
        if self == Kind::StatefulSet {
            object["spec"]["serviceName"] = json!(name);
        }
        object
    }

    fn api(self, client: &Client) -> Api<DynamicObject> {
        let resource = match self {
            Kind::Deployment => ApiResource::erase::<Deployment>(&()),
            Kind::StatefulSet => ApiResource::erase::<StatefulSet>(&()),
            Kind::ReplicaSet => ApiResource::erase::<ReplicaSet>(&()),
        };
        Api::namespaced_with(client.clone(), "default", &resource)
    }

    /// Every bench object of this kind reports `replicas` available, updated pods for its
    /// current generation.
    async fn converged(self, client: &Client, size: Size, replicas: i32) -> anyhow::Result<bool> {
        let selector = ListParams::default().labels(&format!("bench={}", self.label()));
        let want = Some(replicas);
        let generation_observed =
            |meta: &kube::api::ObjectMeta, observed: Option<i64>| observed == meta.generation;
        Ok(match self {
            Kind::Deployment => {
                let list = Api::<Deployment>::namespaced(client.clone(), "default")
                    .list(&selector)
                    .await?;
                list.items.len() == size.count
                    && list.items.iter().all(|d| {
                        d.status.as_ref().is_some_and(|s| {
                            generation_observed(&d.metadata, s.observed_generation)
                                && s.replicas == want
                                && s.updated_replicas == want
                                && s.available_replicas == want
                        })
                    })
            }
            Kind::StatefulSet => {
                let list = Api::<StatefulSet>::namespaced(client.clone(), "default")
                    .list(&selector)
                    .await?;
                list.items.len() == size.count
                    && list.items.iter().all(|set| {
                        set.status.as_ref().is_some_and(|s| {
                            generation_observed(&set.metadata, s.observed_generation)
                                && s.replicas == replicas
                                && s.updated_replicas == want
                                && s.available_replicas == want
                                && s.current_revision == s.update_revision
                        })
                    })
            }
            Kind::ReplicaSet => {
                let list = Api::<ReplicaSet>::namespaced(client.clone(), "default")
                    .list(&selector)
                    .await?;
                list.items.len() == size.count
                    && list.items.iter().all(|rs| {
                        rs.status.as_ref().is_some_and(|s| {
                            generation_observed(&rs.metadata, s.observed_generation)
                                && s.replicas == replicas
                                && s.available_replicas == want
                        })
                    })
            }
        })
    }
}

/// create, rolling update (Deployments and StatefulSets), scale, delete.
async fn workload_phases(
    kind: Kind,
    size: Size,
    client: &Client,
    managers: Managers<'_>,
) -> anyhow::Result<Vec<PhaseResult>> {
    let api = kind.api(client);
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let names: Vec<String> = (0..size.count)
        .map(|i| format!("bench-{}-{i}", kind.label()))
        .collect();
    let label = format!("{} {}x{}", kind.title(), size.count, size.replicas);
    let patch_all = |patch: serde_json::Value| {
        let (api, names) = (api.clone(), names.clone());
        async move {
            for name in &names {
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            anyhow::Ok(())
        }
    };
    let mut results = Vec::new();

    results.push(
        measure(
            &format!("{label}: create"),
            size.count,
            client,
            managers,
            async {
                for name in &names {
                    let object: DynamicObject =
                        serde_json::from_value(kind.object(name, size.replicas))?;
                    api.create(&PostParams::default(), &object).await?;
                }
                Ok(())
            },
            async || kind.converged(client, size, size.replicas).await,
        )
        .await?,
    );

    if kind != Kind::ReplicaSet {
        results.push(
            measure(
                &format!("{label}: rolling update"),
                size.count,
                client,
                managers,
                patch_all(
                    json!({"spec": {"template": {"metadata": {"annotations": {"rollout": "2"}}}}}),
                ),
                async || kind.converged(client, size, size.replicas).await,
            )
            .await?,
        );
    }

    let scaled = size.replicas + 2;
    results.push(
        measure(
            &format!("{label}: scale to {scaled}"),
            size.count,
            client,
            managers,
            patch_all(json!({"spec": {"replicas": scaled}})),
            async || kind.converged(client, size, scaled).await,
        )
        .await?,
    );

    results.push(
        measure(
            &format!("{label}: delete"),
            size.count,
            client,
            managers,
            async {
                api.delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().labels(&format!("bench={}", kind.label())),
                )
                .await?;
                Ok(())
            },
            async || {
                let selector = ListParams::default().labels(&format!("bench={}", kind.label()));
                Ok(pods.list(&selector).await?.items.is_empty())
            },
        )
        .await?,
    );
    Ok(results)
}

/// The label of every bench DaemonSet and of its pods.
const DAEMON_SET_LABEL: &str = "bench=daemonset";
/// Names of the nodes the churn adds (the sim's own are `sim-node-<i>`).
const CHURN_NODE_PREFIX: &str = "bench-node-";
/// The taint the churn puts on nodes. NoExecute, and tolerated by no bench DaemonSet (daemon
/// pods' default tolerations cover only the node-condition taints), so the controller must
/// delete their pods there, not only stop creating them.
const EVICT_TAINT_KEY: &str = "kcm-rs.io/bench-evict";

/// A DaemonSet selecting `app=<name>`, labelled `bench=daemonset` (its pods too), with
/// `maxUnavailable: 10%` from its creation, so the first rolling update phase changes only the
/// template.
fn daemon_set(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": "daemonset"}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "10%", "maxSurge": 0}},
            "template": {"metadata": {"labels": {"app": name, "bench": "daemonset"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
        }
    })
}

/// Whether every one of the `count` bench DaemonSets reports, for its current generation,
/// `nodes` nodes that should run its pod, each with a pod that is updated, ready and available,
/// and none misscheduled; and the bench's pods are exactly one per DaemonSet and node, none
/// terminating. The statuses alone can read converged while a surge's old pods or the pods of
/// a deleted node are still going (a status counts only nodes that exist and should run the
/// pod); those deletions belong to the phase. The pods are listed only once the statuses read
/// converged, so the list (25,000 pods at 5,000 nodes) runs a few times per phase, not every
/// poll.
async fn daemon_sets_converged(
    client: &Client,
    count: usize,
    nodes: usize,
) -> anyhow::Result<bool> {
    let selector = ListParams::default().labels(DAEMON_SET_LABEL);
    let want = i32::try_from(nodes)?;
    let list = Api::<DaemonSet>::namespaced(client.clone(), "default")
        .list(&selector)
        .await?;
    let statuses_converged = list.items.len() == count
        && list.items.iter().all(|ds| {
            ds.status.as_ref().is_some_and(|s| {
                s.observed_generation == ds.metadata.generation
                    && s.desired_number_scheduled == want
                    && s.current_number_scheduled == want
                    && s.number_misscheduled == 0
                    && s.number_ready == want
                    && s.updated_number_scheduled.unwrap_or(0) == want
                    && s.number_available.unwrap_or(0) == want
                    && s.number_unavailable.unwrap_or(0) == 0
            })
        });
    if !statuses_converged {
        return Ok(false);
    }
    let pods = Api::<Pod>::namespaced(client.clone(), "default")
        .list_metadata(&selector)
        .await?;
    Ok(pods.items.len() == count * nodes
        && pods
            .items
            .iter()
            .all(|pod| pod.metadata.deletion_timestamp.is_none()))
}

/// The names of the cluster's nodes, sorted, once the sim has registered `expected` of them.
/// Fails if one carries a NoSchedule or NoExecute taint: the phases count on every node running
/// a pod of every DaemonSet.
async fn initial_nodes(client: &Client, expected: usize) -> anyhow::Result<Vec<String>> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    loop {
        let nodes = api.list(&ListParams::default()).await?.items;
        if nodes.len() >= expected {
            let tainted = nodes.iter().find(|node| {
                node.spec
                    .as_ref()
                    .and_then(|spec| spec.taints.as_ref())
                    .is_some_and(|taints| {
                        taints.iter().any(|taint| {
                            matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
                        })
                    })
            });
            if let Some(node) = tainted {
                bail!(
                    "node {} is tainted: the DaemonSet phases need every node to take their pods",
                    node.metadata.name.as_deref().unwrap_or_default()
                );
            }
            let mut names: Vec<String> = nodes
                .into_iter()
                .filter_map(|node| node.metadata.name)
                .collect();
            names.sort();
            return Ok(names);
        }
        if started.elapsed() > Duration::from_secs(60) {
            bail!("the sim has {} nodes, not {expected}", nodes.len());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What the nodes' heartbeats alone cost the manager, measured while nothing else changes
/// (issue 32's bar: at most 5% of one core, and no DaemonSet sync).
#[derive(serde::Serialize)]
struct HeartbeatResult {
    nodes: usize,
    daemon_sets: usize,
    heartbeat_ms: u64,
    window_seconds: f64,
    /// Nodes whose object changed during the window. Nothing but their heartbeats writes them
    /// then, so this says the heartbeats ran (and how many nodes they reached).
    nodes_heartbeating: usize,
    cpu_seconds: f64,
    cpu_percent_of_one_core: f64,
    peak_rss_mib: f64,
    /// `controller_sync_duration_seconds_count{controller="daemonset-controller"}`.
    daemon_set_syncs: f64,
    /// `workqueue_adds_total{name="daemonset"}`.
    daemon_set_queue_adds: f64,
    /// `workqueue_adds_total{name="daemonset-node-updates"}`: a node update the controller
    /// did not filter out in its informer handler.
    node_update_queue_adds: f64,
    /// Every controller's syncs (the others watch no nodes: they should be 0 as well).
    all_syncs: f64,
    /// The manager's requests in the window, by verb and resource.
    api_calls: BTreeMap<String, u64>,
}

/// The resourceVersion of every node, by name.
async fn node_versions(client: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    let nodes = Api::<Node>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?;
    Ok(nodes
        .items
        .into_iter()
        .filter_map(|node| Some((node.metadata.name?, node.metadata.resource_version?)))
        .collect())
}

/// Measures `window` of heartbeats alone: the manager's CPU and peak RSS from /proc, its syncs
/// and queue adds from its `/metrics` (read only at both ends, so the scrape costs it once),
/// its requests from the sim's accounting.
async fn heartbeat_window(
    settings: &Settings,
    window: Duration,
    client: &Client,
    manager: &Manager,
) -> anyhow::Result<HeartbeatResult> {
    let versions_before = node_versions(client).await?;
    let calls_before = api_calls(client, MANAGER_AGENT).await?;
    let metrics_before = manager.queue_metrics()?;
    let cpu_before = manager.cpu_seconds()?;
    let started = Instant::now();
    let mut peak_rss = PeakRss::start(manager)?;
    while let Some(left) = window.checked_sub(started.elapsed()) {
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        peak_rss.sample()?;
        if left.is_zero() {
            break;
        }
    }
    let cpu_seconds = manager.cpu_seconds()? - cpu_before;
    let window_seconds = started.elapsed().as_secs_f64();
    let metrics_after = manager.queue_metrics()?;
    let peak_rss_mib = peak_rss.finish()?;
    let api_calls = difference(&api_calls(client, MANAGER_AGENT).await?, &calls_before);
    let versions_after = node_versions(client).await?;
    let nodes_heartbeating = versions_after
        .iter()
        .filter(|(name, version)| versions_before.get(*name).is_some_and(|v| v != *version))
        .count();
    let all_syncs =
        metrics_after.syncs.values().sum::<f64>() - metrics_before.syncs.values().sum::<f64>();
    Ok(HeartbeatResult {
        nodes: versions_after.len(),
        daemon_sets: settings.daemon_sets,
        heartbeat_ms: settings.node_heartbeat_ms,
        window_seconds,
        nodes_heartbeating,
        cpu_seconds,
        cpu_percent_of_one_core: 100.0 * cpu_seconds / window_seconds,
        peak_rss_mib,
        daemon_set_syncs: metrics_after.syncs_since(&metrics_before, DAEMON_SET_CONTROLLER),
        daemon_set_queue_adds: metrics_after.adds_since(&metrics_before, DAEMON_SET_QUEUE),
        node_update_queue_adds: metrics_after.adds_since(&metrics_before, NODE_UPDATE_QUEUE),
        all_syncs,
        api_calls,
    })
}

/// The DaemonSet controller's name (the `controller` label of its sync metrics) and its two
/// queues (the `name` label of its workqueue metrics), as `crates/daemonset` names them.
const DAEMON_SET_CONTROLLER: &str = "daemonset-controller";
const DAEMON_SET_QUEUE: &str = "daemonset";
const NODE_UPDATE_QUEUE: &str = "daemonset-node-updates";

/// One measured DaemonSet phase: its end state is `nodes` nodes per DaemonSet, and it changes
/// `pods` pods.
struct DaemonSetPhase<'a> {
    name: String,
    daemon_sets: usize,
    nodes: usize,
    pods: usize,
    client: &'a Client,
    managers: Managers<'a>,
}

impl DaemonSetPhase<'_> {
    /// Runs `act` and measures until the DaemonSets converge on the phase's node count.
    async fn run(
        self,
        act: impl std::future::Future<Output = anyhow::Result<()>>,
    ) -> anyhow::Result<PhaseResult> {
        let (client, count, nodes) = (self.client, self.daemon_sets, self.nodes);
        let mut result = measure(&self.name, count, client, self.managers, act, async || {
            daemon_sets_converged(client, count, nodes).await
        })
        .await?;
        result.nodes = Some(nodes);
        result.pods = Some(self.pods);
        Ok(result)
    }
}

/// create, the heartbeat window, rolling update with `maxUnavailable`, then with `maxSurge`,
/// and the node churn: add, taint NoExecute, delete.
async fn daemon_set_phases(
    settings: &Settings,
    client: &Client,
    managers: Managers<'_>,
) -> anyhow::Result<(Vec<PhaseResult>, Option<HeartbeatResult>)> {
    let count = settings.daemon_sets;
    let churn = settings.node_churn;
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let node_api: Api<Node> = Api::all(client.clone());
    let original = initial_nodes(client, settings.nodes).await?;
    let names: Vec<String> = (0..count).map(|i| format!("bench-daemonset-{i}")).collect();
    let label = format!("DaemonSets {count} on {} nodes", original.len());
    let patch_all = |patch: serde_json::Value| {
        let (api, names) = (api.clone(), names.clone());
        async move {
            for name in &names {
                api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            anyhow::Ok(())
        }
    };
    let phase = |name: String, nodes: usize, pods: usize| DaemonSetPhase {
        name,
        daemon_sets: count,
        nodes,
        pods,
        client,
        managers,
    };
    let mut results = Vec::new();
    let mut nodes = original.len();

    results.push(
        phase(format!("{label}: create"), nodes, count * nodes)
            .run(async {
                for name in &names {
                    let object: DaemonSet = serde_json::from_value(daemon_set(name))?;
                    api.create(&PostParams::default(), &object).await?;
                }
                Ok(())
            })
            .await?,
    );

    let heartbeats = match settings.heartbeat_window {
        Some(window) => Some(heartbeat_window(settings, window, client, managers.normal).await?),
        None => None,
    };

    let pods = count * nodes;
    results.push(
        phase(
            format!("{label}: rolling update maxUnavailable 10%"),
            nodes,
            pods,
        )
        .run(patch_all(
            json!({"spec": {"template": {"metadata": {"annotations": {"rollout": "2"}}}}}),
        ))
        .await?,
    );
    results.push(
        phase(format!("{label}: rolling update maxSurge 10%"), nodes, pods)
            .run(patch_all(json!({"spec": {
                "updateStrategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "10%"}},
                "template": {"metadata": {"annotations": {"rollout": "3"}}}
            }})))
            .await?,
    );

    if churn > 0 {
        let pods = count * churn;
        nodes += churn;
        results.push(
            phase(format!("{label}: add {churn} nodes"), nodes, pods)
                .run(async {
                    for i in 0..churn {
                        let node: Node = serde_json::from_value(json!({
                            "apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": format!("{CHURN_NODE_PREFIX}{i}")}
                        }))?;
                        node_api.create(&PostParams::default(), &node).await?;
                    }
                    Ok(())
                })
                .await?,
        );

        // Of the original nodes, so that the added ones keep their pods: the first `churn` are
        // tainted, the next `churn` deleted (`Settings::check` made sure there are as many).
        let (Some(tainted), Some(deleted)) =
            (original.get(..churn), original.get(churn..2 * churn))
        else {
            bail!("{} nodes cannot churn {churn} twice", original.len());
        };
        let taint = json!({"spec": {"taints": [
            {"key": EVICT_TAINT_KEY, "value": "true", "effect": "NoExecute"}
        ]}});
        nodes -= churn;
        results.push(
            phase(
                format!("{label}: taint {churn} nodes NoExecute"),
                nodes,
                pods,
            )
            .run(async {
                for name in tainted {
                    node_api
                        .patch(name, &PatchParams::default(), &Patch::Merge(&taint))
                        .await?;
                }
                Ok(())
            })
            .await?,
        );

        nodes -= churn;
        results.push(
            phase(format!("{label}: delete {churn} nodes"), nodes, pods)
                .run(async {
                    for name in deleted {
                        node_api.delete(name, &DeleteParams::default()).await?;
                    }
                    Ok(())
                })
                .await?,
        );
    }
    Ok((results, heartbeats))
}

/// The report: the workload kinds' table (as it always was), the DaemonSets' table and the
/// heartbeat window, and the Jobs' table.
fn markdown(results: &[PhaseResult], heartbeats: Option<&HeartbeatResult>) -> String {
    let (job_phases, others): (Vec<&PhaseResult>, Vec<&PhaseResult>) =
        results.iter().partition(|result| result.job.is_some());
    let (daemon_sets, workloads): (Vec<&PhaseResult>, Vec<&PhaseResult>) =
        others.into_iter().partition(|result| result.pods.is_some());
    let mut out = String::new();
    if !workloads.is_empty() || (daemon_sets.is_empty() && job_phases.is_empty()) {
        out.push_str(&workload_table(&workloads));
    }
    if !daemon_sets.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&daemon_set_table(&daemon_sets));
    }
    if let Some(heartbeats) = heartbeats {
        out.push_str(&heartbeat_report(heartbeats));
    }
    if !job_phases.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&jobs::job_table(&job_phases));
    }
    out
}

/// A phase's p99 sync cell.
fn p99_cell(result: &PhaseResult) -> String {
    result
        .sync_p99_ms
        .map_or_else(|| "-".to_owned(), |ms| format!("≤ {ms}"))
}

/// API calls as "verb resource: count, ...", with how many of each failed, if any.
fn calls_cell(calls: &BTreeMap<String, u64>, failed: &BTreeMap<String, u64>) -> String {
    calls
        .iter()
        .map(|(key, count)| match failed.get(key) {
            Some(failed) => format!("{key}: {count} ({failed} failed)"),
            None => format!("{key}: {count}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Requests other than list and watch (the informers' own).
fn requests(calls: &BTreeMap<String, u64>) -> u64 {
    calls
        .iter()
        .filter(|(key, _)| !key.starts_with("watch ") && !key.starts_with("list "))
        .map(|(_, count)| count)
        .sum()
}

/// A phase table's head: `columns` and their `alignment`, then the shadow's columns when any
/// phase measured a shadow, then the API calls.
fn table_head(results: &[&PhaseResult], columns: &str, alignment: &str) -> String {
    let shadow = results.iter().any(|result| result.shadow.is_some());
    let mut out = String::from(columns);
    if shadow {
        out.push_str(" shadow CPU s | shadow peak RSS MiB | shadow writes |");
    }
    out.push_str(" manager API calls |\n");
    out.push_str(alignment);
    if shadow {
        out.push_str("---:|---:|---:|");
    }
    out.push_str("---|\n");
    out
}

/// The end of a phase's row: the shadow's cells, if it ran one, and the API calls.
fn row_tail(out: &mut String, result: &PhaseResult) {
    if let Some(usage) = &result.shadow {
        let _ = write!(
            out,
            " {:.2} | {:.1} | {} |",
            usage.cpu_seconds, usage.peak_rss_mib, usage.writes
        );
    }
    let _ = writeln!(
        out,
        " {} |",
        calls_cell(&result.api_calls, &result.failed_api_calls)
    );
}

/// DaemonSet phases, their requests per pod created, replaced or removed: a DaemonSet's size
/// is its node count, so per object they would say little.
fn daemon_set_table(results: &[&PhaseResult]) -> String {
    let mut out = table_head(
        results,
        "| phase | DaemonSets | nodes | pods changed | wall s | manager CPU s | manager peak RSS MiB | manager requests per pod (excl. list/watch) | writes per pod (POST / PUT / PATCH / DELETE) | sync p99 ms | queue depth peak / end |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    );
    for result in results {
        let pods = result.pods.unwrap_or(0);
        let _ = write!(
            out,
            "| {} | {} | {} | {pods} | {:.1} | {:.2} | {:.1} | {:.2} | {:.2} ({}) | {} | {} / {} |",
            result.phase,
            result.objects,
            result.nodes.unwrap_or(0),
            result.wall_seconds,
            result.cpu_seconds,
            result.peak_rss_mib,
            requests(&result.api_calls) as f64 / pods.max(1) as f64,
            writes(&result.api_calls) as f64 / pods.max(1) as f64,
            writes_by_verb(&result.api_calls, pods),
            p99_cell(result),
            result.queue_depth_peak,
            result.queue_depth_end,
        );
        row_tail(&mut out, result);
    }
    out
}

/// The heartbeat window, beside issue 32's bars.
fn heartbeat_report(result: &HeartbeatResult) -> String {
    format!(
        "\nHeartbeats only: {} nodes heartbeating every {} ms ({} of them seen to heartbeat), {} DaemonSets, a {:.1} s window after the create converged: manager CPU {:.2} s = {:.2}% of one core (bar: ≤ 5%), peak RSS {:.1} MiB (bar: ≤ 150), DaemonSet syncs {} (bar: 0; queue adds: `daemonset` {}, `daemonset-node-updates` {}), syncs of every controller {}, manager requests: {}.\n",
        result.nodes,
        result.heartbeat_ms,
        result.nodes_heartbeating,
        result.daemon_sets,
        result.window_seconds,
        result.cpu_seconds,
        result.cpu_percent_of_one_core,
        result.peak_rss_mib,
        result.daemon_set_syncs,
        result.daemon_set_queue_adds,
        result.node_update_queue_adds,
        result.all_syncs,
        if result.api_calls.is_empty() {
            "none".to_owned()
        } else {
            calls_cell(&result.api_calls, &BTreeMap::new())
        },
    )
}

/// The workload kinds' phases.
fn workload_table(results: &[&PhaseResult]) -> String {
    let mut out = table_head(
        results,
        "| phase | objects | wall s | manager CPU s | manager peak RSS MiB | manager requests per object (excl. list/watch) | sync p99 ms | queue depth peak / end |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    );
    for result in results {
        let _ = write!(
            out,
            "| {} | {} | {:.1} | {:.2} | {:.1} | {:.2} |",
            result.phase,
            result.objects,
            result.wall_seconds,
            result.cpu_seconds,
            result.peak_rss_mib,
            result.api_calls_per_object,
        );
        let _ = write!(
            out,
            " {} | {} / {} |",
            p99_cell(result),
            result.queue_depth_peak,
            result.queue_depth_end
        );
        row_tail(&mut out, result);
    }
    for result in results
        .iter()
        .filter(|r| r.phase.contains("rolling update"))
    {
        let _ = writeln!(
            out,
            "\n{}: writes per object {:.1} ({}).",
            result.phase,
            writes(&result.api_calls) as f64 / result.objects.max(1) as f64,
            writes_by_verb(&result.api_calls, result.objects)
        );
    }
    out.push_str(UPSTREAM_ROLLOUT_WRITES);
    out
}

/// Writes per object by verb (POST / PUT / DELETE, as an API server's audit counts them).
fn writes_by_verb(calls: &BTreeMap<String, u64>, objects: usize) -> String {
    [
        ("POST", "create"),
        ("PUT", "update"),
        ("PATCH", "patch"),
        ("DELETE", "delete"),
    ]
    .iter()
    .map(|(method, verb)| {
        let count: u64 = calls
            .iter()
            .filter(|(key, _)| {
                key.split_once(' ')
                    .is_some_and(|(v, r)| v == *verb && r != "leases")
            })
            .map(|(_, count)| count)
            .sum();
        format!("{method} {:.1}", count as f64 / objects.max(1) as f64)
    })
    .collect::<Vec<_>>()
    .join(" / ")
}

/// Upstream's writes per Deployment rollout, for comparison (issue 21).
const UPSTREAM_ROLLOUT_WRITES: &str = "\nUpstream reference (kube-controller-manager v1.28.4 on a real kube-apiserver, 1,000 Deployments x 5, 25%/25%): writes per rollout 49.5 (POST 18.4 / PUT 26.1 / DELETE 5.0).\n";

/// A heartbeat window that measured no heartbeat measured nothing: that fails the run. Under
/// `cargo test` the window is also the test of the controller's node filter: a heartbeat that
/// reaches either DaemonSet queue fails it (the bench reports the count beside issue 32's bar).
fn check_heartbeats(settings: &Settings, window: &HeartbeatResult) -> anyhow::Result<()> {
    if window.heartbeat_ms > 0 && window.nodes_heartbeating == 0 {
        bail!(
            "no node heartbeat during the {:.1} s window",
            window.window_seconds
        );
    }
    let reached_the_controller =
        window.daemon_set_syncs + window.daemon_set_queue_adds + window.node_update_queue_adds;
    if settings.smoke && reached_the_controller > 0.0 {
        bail!(
            "node heartbeats reached the DaemonSet controller: {} syncs, {} adds to `daemonset`, {} to `daemonset-node-updates`",
            window.daemon_set_syncs,
            window.daemon_set_queue_adds,
            window.node_update_queue_adds
        );
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::from_args()?;
    let dir = tempfile::tempdir()?;
    let sim = Sim::start(
        &settings.sim_binary,
        dir.path(),
        &[
            // Every event of a phase stays resumable: the manager never relists mid-phase.
            "--watch-window=200000".to_owned(),
            // Dependents go a moment after their owner, as upstream's garbage collector
            // deletes them from its own watch.
            format!("--gc-delay-ms={}", GC_DELAY.as_millis()),
            // The sim's defaults (1 node, heartbeats every 10 s) unless asked otherwise.
            format!("--nodes={}", settings.nodes),
            format!("--node-heartbeat-ms={}", settings.node_heartbeat_ms),
        ],
    )
    .await?;
    let manager = settings.start_manager(&sim.kubeconfig, false)?;
    let shadow = settings
        .shadow
        .then(|| settings.start_manager(&sim.kubeconfig, true))
        .transpose()?;
    let managers = Managers {
        normal: &manager,
        shadow: shadow.as_ref(),
    };
    let client = sim.client().await?;
    // The first phase reads the managers' /metrics at once, and would otherwise measure their
    // start (the initial lists: 5,000 nodes, say) as its own work.
    for manager in [Some(&manager), shadow.as_ref()].into_iter().flatten() {
        manager.wait_ready(Duration::from_secs(120)).await?;
    }

    let mut results = Vec::new();
    for (kind, size) in [
        (Kind::Deployment, settings.deployments),
        (Kind::StatefulSet, settings.stateful_sets),
        (Kind::ReplicaSet, settings.replica_sets),
    ] {
        if size.count > 0 {
            results.extend(workload_phases(kind, size, &client, managers).await?);
        }
    }
    let mut heartbeats = None;
    if settings.daemon_sets > 0 {
        let (phases, window) = daemon_set_phases(&settings, &client, managers).await?;
        results.extend(phases);
        heartbeats = window;
    }
    if let Some(window) = &heartbeats {
        check_heartbeats(&settings, window)?;
    }
    results.extend(jobs::job_phases(&settings.jobs, &client, managers).await?);

    // The accounting must have been read: every kind's create phase creates pods.
    let counted_pod_creates = results
        .iter()
        .any(|result| result.api_calls.contains_key("create pods"));
    if !results.is_empty() && !counted_pod_creates {
        bail!("no pod create by the manager was counted: the sim's accounting was not read");
    }

    let mut table = markdown(&results, heartbeats.as_ref());
    let mut divergences = 0;
    if let Some(shadow) = &shadow {
        // Every intent judged: the settle window (5 s) has passed since the last change.
        tokio::time::sleep(Duration::from_secs(7)).await;
        let report: serde_json::Value = serde_json::from_str(&shadow.page("/shadow")?)?;
        let _ = writeln!(
            table,
            "\nShadow: {} intents, {} compared with the settled cluster (matched by rule: {}; not compared: {}), {} divergences.",
            report["intents_total"],
            report["compared_total"],
            report["matched"],
            report["not_compared"],
            report["divergences_total"]
        );
        divergences = report["divergences_total"].as_u64().unwrap_or(0);
        if divergences != 0 {
            let _ = writeln!(table, "\n```json\n{:#}\n```", report["divergences"]);
            table.push_str(&divergent_pods(&client, &report, &results).await?);
        }
        let shadow_writes: u64 = results
            .iter()
            .filter_map(|result| result.shadow.as_ref())
            .map(|usage| usage.writes)
            .sum();
        if shadow_writes > 0 {
            bail!("the shadow manager wrote {shadow_writes} times");
        }
    }
    println!("{table}");
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(out_dir.join(format!("{}.md", settings.out)), &table)?;
    std::fs::write(
        out_dir.join(format!("{}.json", settings.out)),
        serde_json::to_string_pretty(&results)?,
    )?;
    if let Some(window) = &heartbeats {
        std::fs::write(
            out_dir.join(format!("{}.heartbeat.json", settings.out)),
            serde_json::to_string_pretty(window)?,
        )?;
    }
    drop(shadow);
    drop(manager);
    drop(sim);
    // Both managers run the same code on the same cluster: in the smoke run any divergence is a
    // false alarm of shadow mode (the table above shows each, and the divergent pods).
    if settings.smoke && divergences > 0 {
        bail!("the shadow manager reported {divergences} divergences in the smoke run");
    }
    Ok(())
}
