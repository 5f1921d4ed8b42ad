//! Chaos driver (`make chaos`, `hack/chaos.sh`): the real `kube-sim` and
//! `kube-controller-manager` binaries as processes, put through faults while a checker watching
//! every Deployment, ReplicaSet, pod, StatefulSet and ControllerRevision samples the invariants
//! on each watch event:
//!
//! * never two live ReplicaSets of one Deployment with the same pod template;
//! * never two live pods of one StatefulSet ordinal;
//! * never two ControllerRevisions of one StatefulSet with the same data;
//! * during a rollout, a Deployment's live pods ≤ replicas + maxSurge, and once its available
//!   pods reached replicas − maxUnavailable they never drop below it.
//!
//! Scenarios: **failover** (two managers with leader election; `kill -9` of the leader in the
//! middle of a rollout, then SIGSTOP of its successor past its lease and SIGCONT: the leaderless
//! gaps, and the writes of a deposed leader that land after its successor's first write, from
//! the sim's request accounting by user agent, which names each process's leader-election
//! identity: the lease fence refuses every write it starts once resumed, and its connections
//! write no byte once its lease has expired, so none may land); **failover, warm standbys**
//! (the same with `--leader-elect-warm-standby`: each standby's caches synced before it takes
//! over, and its read barrier passed before its first sync);
//! **crash** (`kill -9` and restart of the manager at random points of successive rollouts);
//! **faults** (500s, 409s, 429s with Retry-After, added latency and watch streams cut every
//! 5 s, through create, rollout, scale and delete). Each prints one row: scenario, workloads,
//! invariant samples, violations, convergence time, manager restarts it did not cause, and the
//! manager's peak requests per second. Any violation, a scenario that does not converge, a
//! deposed leader that does not exit or lands a write after its successor's first, or
//! a manager restart the driver did not cause fails the run.
//!
//! `cargo bench -p kube-controller-manager --bench chaos -- [--manager PATH] [--sim PATH]
//! [--out NAME]` runs the full sizes; under `cargo test` (so in `make test`) a small variant
//! runs: one failover on 20 Deployments (4 s leases), one crash, faults on 50 Deployments.
//! Results: `bench-results/<out>.md` and `.json` (`chaos` by default).
//! `KCM_CHAOS_ONLY=failover|failover-warm|crash|faults` runs one scenario; `KCM_BENCH_LOGS=<dir>`
//! keeps the managers' logs.
//!
//! `KCM_CHAOS_ONLY=handover` (`hack/failover.sh`) times handovers instead: on 10,000
//! Deployments × 5 (`--handover-deployments N`; 20 in the small variant), cold and warm
//! standbys (`--handover-start cold|warm` for one kind), each after a SIGTERM and a kill -9 of
//! the leader (`--handover-signal TERM|KILL` for one) with a rollout started at the signal
//! (`--handover-repeat N` times), the time
//! from the signal to the successor's first write, with what the standby cost before it
//! (memory, CPU, lists and watches). Results: `bench-results/<out>-handover.md` and `.json`.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    fmt::Write as _,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet},
    coordination::v1::Lease,
    core::v1::Pod,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;
use sim::testing::{is_active, is_serving};
use support::{BINARY, Manager, Sim, api_calls, landed_api_calls, writes};

mod support;

/// Every manager request carries this in its user agent.
const MANAGER_AGENT: &str = " kcm-rs/";
/// The Lease the managers lead with.
const LEASE: &str = "kcm-rs";
const NAMESPACE: &str = "default";

/// How big each scenario is.
struct Sizes {
    failover_deployments: usize,
    crashes: usize,
    crash_deployments: usize,
    crash_stateful_sets: usize,
    fault_deployments: usize,
    fault_stateful_sets: usize,
    /// Deployments (× 5) of the handover timing (`KCM_CHAOS_ONLY=handover`).
    handover_deployments: usize,
    /// Leader election timings (lease, renew deadline, retry period), in seconds.
    lease: (u64, u64, u64),
    /// How long a scenario may take to converge.
    converge_timeout: Duration,
}

impl Sizes {
    /// The sizes, with upstream's default leader election timings.
    const FULL: Sizes = Sizes {
        failover_deployments: 500,
        crashes: 20,
        crash_deployments: 300,
        crash_stateful_sets: 50,
        fault_deployments: 1000,
        fault_stateful_sets: 200,
        handover_deployments: 10_000,
        lease: (15, 10, 2),
        converge_timeout: Duration::from_secs(1800),
    };
    /// The variant `make test` runs: one failover, one crash, faults on 50 Deployments.
    const SMALL: Sizes = Sizes {
        failover_deployments: 20,
        crashes: 1,
        crash_deployments: 20,
        crash_stateful_sets: 5,
        fault_deployments: 50,
        fault_stateful_sets: 5,
        handover_deployments: 20,
        lease: (4, 3, 1),
        // Beyond upstream's 5-minute expectations timeout: a controller that waits out a lost
        // watch event still converges, and the table shows how long it took.
        converge_timeout: Duration::from_secs(420),
    };
}

struct Settings {
    sizes: &'static Sizes,
    /// `--handover-deployments N`, else the sizes'.
    handover_deployments: usize,
    /// `--handover-repeat N`: how many times each handover is timed (1).
    handover_repeat: usize,
    /// `--handover-start cold|warm`: time only those standbys (both by default).
    handover_start: Option<String>,
    /// `--handover-signal TERM|KILL`: time only the handovers after that signal (both by
    /// default).
    handover_signal: Option<String>,
    manager_binary: PathBuf,
    sim_binary: PathBuf,
    out: String,
}

impl Settings {
    fn from_args() -> anyhow::Result<Self> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let benchmarking = args.iter().any(|arg| arg == "--bench");
        let sizes = if benchmarking {
            &Sizes::FULL
        } else {
            &Sizes::SMALL
        };
        let mut settings = Settings {
            sizes,
            handover_deployments: sizes.handover_deployments,
            handover_repeat: 1,
            handover_start: None,
            handover_signal: None,
            manager_binary: PathBuf::from(BINARY),
            sim_binary: Path::new(BINARY).with_file_name("kube-sim"),
            out: if benchmarking { "chaos" } else { "chaos-small" }.to_owned(),
        };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = || iter.next().context(format!("{arg} needs a value"));
            match arg.as_str() {
                "--manager" => settings.manager_binary = PathBuf::from(value()?),
                "--sim" => settings.sim_binary = PathBuf::from(value()?),
                "--out" => settings.out = value()?.clone(),
                "--handover-deployments" => settings.handover_deployments = value()?.parse()?,
                "--handover-repeat" => settings.handover_repeat = value()?.parse()?,
                "--handover-start" => settings.handover_start = Some(value()?.clone()),
                "--handover-signal" => settings.handover_signal = Some(value()?.clone()),
                _ => {}
            }
        }
        Ok(settings)
    }

    /// Starts a manager; under leader election, it competes for the Lease with the sizes'
    /// timings (as a warm standby with [`Election::Warm`]).
    fn start_manager(&self, kubeconfig: &Path, election: Election) -> anyhow::Result<Manager> {
        let (lease, renew, retry) = self.sizes.lease;
        let mut args = vec![
            "--kube-api-qps=2000".to_owned(),
            "--kube-api-burst=4000".to_owned(),
        ];
        if election == Election::Off {
            args.push("--leader-elect=false".to_owned());
        } else {
            args.extend([
                "--leader-elect=true".to_owned(),
                format!("--leader-elect-lease-duration={lease}s"),
                format!("--leader-elect-renew-deadline={renew}s"),
                format!("--leader-elect-retry-period={retry}s"),
            ]);
        }
        if election == Election::Warm {
            args.push("--leader-elect-warm-standby".to_owned());
        }
        Manager::start(&self.manager_binary, kubeconfig, &args)
    }
}

/// How a manager of a scenario campaigns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Election {
    /// `--leader-elect=false`: it runs at once.
    Off,
    /// Leader election as upstream: a standby builds its caches once it wins.
    Cold,
    /// `--leader-elect-warm-standby`: a standby keeps its caches synced while it campaigns.
    Warm,
}

impl Election {
    fn label(self) -> &'static str {
        match self {
            Election::Off => "no election",
            Election::Cold => "cold",
            Election::Warm => "warm",
        }
    }
}

/// One scenario's row.
#[derive(serde::Serialize, Default)]
struct ScenarioResult {
    scenario: String,
    workloads: String,
    invariant_samples: u64,
    violations: u64,
    /// The first violations, for the report.
    violation_examples: Vec<String>,
    convergence_seconds: f64,
    /// Manager processes that died without being killed by the driver.
    manager_restarts: u32,
    requests_per_second_peak: u64,
    /// Scenario-specific measurements (leaderless gaps, retries, ...).
    notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// The invariant checker.

/// What the checker keeps of one Deployment.
struct DeploymentFacts {
    name: String,
    replicas: i32,
    /// Upstream's defaults (25%/25%), as every Deployment of this driver uses: surge rounds
    /// up, unavailability down.
    max_surge: i32,
    max_unavailable: i32,
    /// `replicas - maxUnavailable` once the available pods reached it at these replicas.
    availability_floor: Option<i32>,
}

/// The cluster as the checker's watches have shown it so far.
#[derive(Default)]
struct World {
    deployments: HashMap<String, DeploymentFacts>,
    /// ReplicaSet name -> (its UID, its Deployment's UID, its template without the hash label).
    replica_sets: HashMap<String, (String, String, String)>,
    /// Pod name -> (owner UID, active, serving).
    pods: HashMap<String, (String, bool, bool)>,
    /// StatefulSet UID -> name.
    stateful_sets: HashMap<String, String>,
    /// ControllerRevision name -> (owner UID, data).
    revisions: HashMap<String, (String, String)>,
    /// Whether rollout bounds are checked (only while the driver rolls, not while it scales
    /// or deletes, where upstream gives no such bound).
    rolling: bool,
    samples: u64,
    violations: u64,
    examples: Vec<String>,
}

impl World {
    fn violation(&mut self, what: String) {
        self.violations += 1;
        if self.examples.len() < 10 {
            self.examples.push(what);
        }
    }

    fn controller_uid(meta: &kube::api::ObjectMeta) -> String {
        meta.owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true))
            .map(|owner| owner.uid.clone())
            .unwrap_or_default()
    }

    /// Checks the invariants of the Deployment with UID `uid`.
    fn check_deployment(&mut self, uid: &str) {
        let Some(facts) = self.deployments.get(uid) else {
            return;
        };
        self.samples += 1;
        let owned: Vec<&(String, String, String)> = self
            .replica_sets
            .values()
            .filter(|(_, owner, _)| owner == uid)
            .collect();
        let templates: HashSet<&str> = owned.iter().map(|(_, _, t)| t.as_str()).collect();
        let mut found = Vec::new();
        if templates.len() < owned.len() {
            found.push(format!(
                "Deployment {}: two ReplicaSets for one template",
                facts.name
            ));
        }
        let rs_uids: HashSet<&str> = owned.iter().map(|(rs, _, _)| rs.as_str()).collect();
        let (mut live, mut available) = (0, 0);
        for (owner, active, serving) in self.pods.values() {
            if rs_uids.contains(owner.as_str()) {
                live += i32::from(*active);
                available += i32::from(*active && *serving);
            }
        }
        let (name, replicas) = (facts.name.clone(), facts.replicas);
        let (surge, unavailable, floor) = (
            facts.max_surge,
            facts.max_unavailable,
            facts.availability_floor,
        );
        if self.rolling {
            if live > replicas + surge {
                found.push(format!(
                    "Deployment {name}: {live} live pods > {replicas} + {surge}"
                ));
            }
            if let Some(floor) = floor
                && available < floor
            {
                found.push(format!(
                    "Deployment {name}: {available} available < {replicas} - {unavailable}"
                ));
            }
        }
        if floor.is_none()
            && available >= replicas - unavailable
            && let Some(facts) = self.deployments.get_mut(uid)
        {
            facts.availability_floor = Some(replicas - unavailable);
        }
        for violation in found {
            self.violation(violation);
        }
    }

    /// Checks the invariants of the StatefulSet with UID `uid`.
    fn check_stateful_set(&mut self, uid: &str, pods: &HashMap<String, String>) {
        let Some(name) = self.stateful_sets.get(uid).cloned() else {
            return;
        };
        self.samples += 1;
        let mut found = Vec::new();
        let mut ordinals = HashSet::new();
        for (pod, owner) in pods {
            let live = self.pods.get(pod).is_some_and(|(_, active, _)| *active);
            if owner == uid && live && !ordinals.insert(pod.rsplit_once('-').map(|(_, o)| o)) {
                found.push(format!(
                    "StatefulSet {name}: two live pods of ordinal {pod}"
                ));
            }
        }
        let data: Vec<&str> = self
            .revisions
            .values()
            .filter(|(owner, _)| owner == uid)
            .map(|(_, data)| data.as_str())
            .collect();
        if data.iter().collect::<HashSet<_>>().len() < data.len() {
            found.push(format!(
                "StatefulSet {name}: two ControllerRevisions with the same data"
            ));
        }
        for violation in found {
            self.violation(violation);
        }
    }
}

/// Watches the namespace and samples the invariants on every event.
struct Checker {
    world: Arc<Mutex<World>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// A pod's StatefulSet owner, by pod name (for the ordinal check).
type SetPods = Arc<Mutex<HashMap<String, String>>>;

impl Checker {
    fn start(client: &Client) -> Self {
        let world: Arc<Mutex<World>> = Arc::default();
        let set_pods: SetPods = Arc::default();
        let tasks = vec![
            tokio::spawn(watch::<Deployment>(client.clone(), world.clone(), {
                move |world, event| match event {
                    Change::Applied(d) => {
                        let uid = d.uid().unwrap_or_default();
                        let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                        let floor = world
                            .deployments
                            .get(&uid)
                            .filter(|facts| facts.replicas == replicas)
                            .and_then(|facts| facts.availability_floor);
                        world.deployments.insert(
                            uid.clone(),
                            DeploymentFacts {
                                name: d.name_any(),
                                replicas,
                                max_surge: (replicas + 3) / 4,
                                max_unavailable: replicas / 4,
                                availability_floor: floor,
                            },
                        );
                        world.check_deployment(&uid);
                    }
                    Change::Deleted(d) => {
                        world.deployments.remove(&d.uid().unwrap_or_default());
                    }
                }
            })),
            tokio::spawn(watch::<ReplicaSet>(client.clone(), world.clone(), {
                move |world, event| match event {
                    Change::Applied(rs) => {
                        let owner = World::controller_uid(&rs.metadata);
                        let mut template = rs
                            .spec
                            .as_ref()
                            .and_then(|s| s.template.clone())
                            .unwrap_or_default();
                        if let Some(labels) =
                            template.metadata.as_mut().and_then(|m| m.labels.as_mut())
                        {
                            labels.remove("pod-template-hash");
                        }
                        let template = serde_json::to_string(&template).unwrap_or_default();
                        let live = rs.meta().deletion_timestamp.is_none();
                        if live {
                            world.replica_sets.insert(
                                rs.name_any(),
                                (rs.uid().unwrap_or_default(), owner.clone(), template),
                            );
                        } else {
                            world.replica_sets.remove(&rs.name_any());
                        }
                        world.check_deployment(&owner);
                    }
                    Change::Deleted(rs) => {
                        world.replica_sets.remove(&rs.name_any());
                    }
                }
            })),
            tokio::spawn(watch::<Pod>(client.clone(), world.clone(), {
                let set_pods = set_pods.clone();
                move |world, event| {
                    let mut set_pods = set_pods.lock().expect("set pods");
                    match event {
                        Change::Applied(pod) => {
                            let owner = World::controller_uid(&pod.metadata);
                            world.pods.insert(
                                pod.name_any(),
                                (owner.clone(), is_active(&pod), is_serving(&pod)),
                            );
                            let set_owned = pod
                                .owner_references()
                                .iter()
                                .any(|o| o.controller == Some(true) && o.kind == "StatefulSet");
                            if set_owned {
                                set_pods.insert(pod.name_any(), owner.clone());
                                world.check_stateful_set(&owner, &set_pods);
                            } else {
                                let deployment = world
                                    .replica_sets
                                    .values()
                                    .find(|(rs, _, _)| *rs == owner)
                                    .map(|(_, d, _)| d.clone());
                                if let Some(deployment) = deployment {
                                    world.check_deployment(&deployment);
                                }
                            }
                        }
                        Change::Deleted(pod) => {
                            world.pods.remove(&pod.name_any());
                            set_pods.remove(&pod.name_any());
                        }
                    }
                }
            })),
            tokio::spawn(watch::<StatefulSet>(client.clone(), world.clone(), {
                move |world, event| match event {
                    Change::Applied(set) => {
                        world
                            .stateful_sets
                            .insert(set.uid().unwrap_or_default(), set.name_any());
                    }
                    Change::Deleted(set) => {
                        world.stateful_sets.remove(&set.uid().unwrap_or_default());
                    }
                }
            })),
            tokio::spawn(watch::<ControllerRevision>(
                client.clone(),
                world.clone(),
                {
                    let set_pods = set_pods.clone();
                    move |world, event| match event {
                        Change::Applied(revision) => {
                            let owner = World::controller_uid(&revision.metadata);
                            let data = revision
                                .data
                                .as_ref()
                                .map(|data| data.0.to_string())
                                .unwrap_or_default();
                            world
                                .revisions
                                .insert(revision.name_any(), (owner.clone(), data));
                            let set_pods = set_pods.lock().expect("set pods");
                            world.check_stateful_set(&owner, &set_pods);
                        }
                        Change::Deleted(revision) => {
                            world.revisions.remove(&revision.name_any());
                        }
                    }
                },
            )),
        ];
        Self { world, tasks }
    }

    fn set_rolling(&self, rolling: bool) {
        self.world.lock().expect("world").rolling = rolling;
    }

    /// Stops watching and completes the scenario's row with what was sampled and the peak
    /// request rate.
    fn finish(self, mut result: ScenarioResult, rate: &RequestRate) -> ScenarioResult {
        for task in &self.tasks {
            task.abort();
        }
        let world = self.world.lock().expect("world");
        result.invariant_samples = world.samples;
        result.violations = world.violations;
        result.violation_examples = world.examples.clone();
        result.requests_per_second_peak = rate.peak;
        result
    }
}

/// One object event as the checker applies it.
enum Change<K> {
    Applied(K),
    Deleted(K),
}

/// Applies every watch event of `K` in the namespace to the world through `apply`; a relist's
/// objects arrive as `Applied` (objects gone meanwhile stay until their next event, which only
/// makes the checks stricter).
async fn watch<K>(
    client: Client,
    world: Arc<Mutex<World>>,
    apply: impl Fn(&mut World, Change<K>) + Send + 'static,
) where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::namespaced(client, NAMESPACE);
    let mut events = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let change = match event {
            Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) => {
                Change::Applied(object)
            }
            Ok(watcher::Event::Delete(object)) => Change::Deleted(object),
            Ok(_) | Err(_) => continue,
        };
        apply(&mut world.lock().expect("world"), change);
    }
}

// ---------------------------------------------------------------------------------------------
// Driving workloads.

/// The driver's own writes meet the sim's injected faults too: retried until they land.
async fn retrying<T, F, Fut>(what: &str, mut write: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut last = None;
    for _ in 0..100 {
        match write().await {
            Ok(value) => return Ok(value),
            Err(kube::Error::Api(status)) if [404].contains(&status.code) => {
                return Err(kube::Error::Api(status)).context(what.to_owned());
            }
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(last.context("no attempt")?).context(what.to_owned())
}

/// The workloads of one scenario: `deployments` × 5 and `stateful_sets` × 3, prefixed.
#[derive(Clone)]
struct Workloads {
    client: Client,
    prefix: &'static str,
    deployments: usize,
    stateful_sets: usize,
}

impl Workloads {
    /// `deployments` × 5 and `stateful_sets` × 3 named and labelled after `prefix`.
    fn new(
        client: &Client,
        prefix: &'static str,
        deployments: usize,
        stateful_sets: usize,
    ) -> Self {
        Self {
            client: client.clone(),
            prefix,
            deployments,
            stateful_sets,
        }
    }

    /// An empty result row for `scenario` over these workloads.
    fn result(&self, scenario: &str) -> ScenarioResult {
        ScenarioResult {
            scenario: scenario.to_owned(),
            workloads: self.label(),
            ..ScenarioResult::default()
        }
    }

    fn label(&self) -> String {
        let mut parts = vec![format!("{} Deployments x 5", self.deployments)];
        if self.stateful_sets > 0 {
            parts.push(format!("{} StatefulSets x 3", self.stateful_sets));
        }
        parts.join(" + ")
    }

    fn names(&self, kind: &str, count: usize) -> Vec<String> {
        (0..count)
            .map(|i| format!("{}-{kind}-{i}", self.prefix))
            .collect()
    }

    async fn create(&self) -> anyhow::Result<()> {
        let post = PostParams::default();
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        for name in self.names("d", self.deployments) {
            let object: Deployment = serde_json::from_value(self.object("Deployment", &name, 5))?;
            retrying("create Deployment", || deployments.create(&post, &object)).await?;
        }
        let sets: Api<StatefulSet> = Api::namespaced(self.client.clone(), NAMESPACE);
        for name in self.names("s", self.stateful_sets) {
            let object: StatefulSet = serde_json::from_value(self.object("StatefulSet", &name, 3))?;
            retrying("create StatefulSet", || sets.create(&post, &object)).await?;
        }
        Ok(())
    }

    fn object(&self, kind: &str, name: &str, replicas: i32) -> serde_json::Value {
        let mut object = json!({
            "apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"chaos": self.prefix}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name, "chaos": self.prefix}},
                    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
        });
        if kind == "StatefulSet" {
            object["spec"]["serviceName"] = json!(name);
        }
        object
    }

    /// Merge-patches every workload with `patch`.
    async fn patch_all(&self, patch: serde_json::Value) -> anyhow::Result<()> {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        let sets: Api<StatefulSet> = Api::namespaced(self.client.clone(), NAMESPACE);
        let params = PatchParams::default();
        for name in self.names("d", self.deployments) {
            let merge = Patch::Merge(&patch);
            retrying("patch Deployment", || {
                deployments.patch(&name, &params, &merge)
            })
            .await?;
        }
        for name in self.names("s", self.stateful_sets) {
            let merge = Patch::Merge(&patch);
            retrying("patch StatefulSet", || sets.patch(&name, &params, &merge)).await?;
        }
        Ok(())
    }

    /// Starts a rollout of every workload to template revision `round`.
    async fn roll(&self, round: usize) -> anyhow::Result<()> {
        self.patch_all(
            json!({"spec": {"template": {"metadata": {"annotations": {"chaos-round": round.to_string()}}}}}),
        )
        .await
    }

    /// The workloads that do not yet report `replicas` (per kind) updated, available pods of
    /// their current generation and template, with the status they report.
    async fn unsettled(
        &self,
        deployment_replicas: i32,
        set_replicas: i32,
    ) -> anyhow::Result<Vec<String>> {
        let selector = ListParams::default().labels(&format!("chaos={}", self.prefix));
        let deployments = Api::<Deployment>::namespaced(self.client.clone(), NAMESPACE)
            .list(&selector)
            .await?;
        let sets = Api::<StatefulSet>::namespaced(self.client.clone(), NAMESPACE)
            .list(&selector)
            .await?;
        let mut unsettled = Vec::new();
        if deployments.items.len() != self.deployments || sets.items.len() != self.stateful_sets {
            unsettled.push("not every workload is listed".to_owned());
        }
        let want = Some(deployment_replicas);
        for d in &deployments.items {
            let settled = d.status.as_ref().is_some_and(|s| {
                s.observed_generation == d.metadata.generation
                    && s.replicas == want
                    && s.updated_replicas == want
                    && s.available_replicas == want
            });
            if !settled {
                let replica_sets = Api::<ReplicaSet>::namespaced(self.client.clone(), NAMESPACE)
                    .list(&ListParams::default().labels(&format!("app={}", d.name_any())))
                    .await?;
                let sizes: Vec<String> = replica_sets
                    .items
                    .iter()
                    .map(|rs| {
                        format!(
                            "{} spec {:?} status {:?} observed {:?}/{:?}",
                            rs.name_any(),
                            rs.spec.as_ref().and_then(|s| s.replicas),
                            rs.status.as_ref().map(|s| s.replicas),
                            rs.status.as_ref().and_then(|s| s.observed_generation),
                            rs.metadata.generation
                        )
                    })
                    .collect();
                unsettled.push(format!(
                    "Deployment {}: {:?}; ReplicaSets: {}",
                    d.name_any(),
                    d.status,
                    sizes.join(", ")
                ));
            }
        }
        for set in &sets.items {
            let settled = set.status.as_ref().is_some_and(|s| {
                s.observed_generation == set.metadata.generation
                    && s.replicas == set_replicas
                    && s.updated_replicas == Some(set_replicas)
                    && s.available_replicas == Some(set_replicas)
                    && s.current_revision == s.update_revision
            });
            if !settled {
                unsettled.push(format!("StatefulSet {}: {:?}", set.name_any(), set.status));
            }
        }
        Ok(unsettled)
    }

    /// Waits until every workload settled at the replicas given; on timeout the error names
    /// the first ones that did not.
    async fn settle(
        &self,
        what: &str,
        timeout: Duration,
        rate: &mut RequestRate,
        deployment_replicas: i32,
        set_replicas: i32,
    ) -> anyhow::Result<Duration> {
        let waited = until(what, timeout, rate, async || {
            Ok(self
                .unsettled(deployment_replicas, set_replicas)
                .await?
                .is_empty())
        })
        .await;
        if waited.is_err() {
            let unsettled = self.unsettled(deployment_replicas, set_replicas).await?;
            return waited.with_context(|| {
                format!(
                    "unsettled: {}",
                    unsettled
                        .iter()
                        .take(3)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            });
        }
        waited
    }

    /// Deletes every workload; their pods go with the garbage collector.
    async fn delete(&self) -> anyhow::Result<()> {
        let selector = ListParams::default().labels(&format!("chaos={}", self.prefix));
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        let sets: Api<StatefulSet> = Api::namespaced(self.client.clone(), NAMESPACE);
        let params = DeleteParams::default();
        retrying("delete Deployments", || {
            deployments.delete_collection(&params, &selector)
        })
        .await?;
        retrying("delete StatefulSets", || {
            sets.delete_collection(&params, &selector)
        })
        .await?;
        Ok(())
    }

    /// No pod of these workloads is left.
    async fn gone(&self) -> anyhow::Result<bool> {
        let selector = ListParams::default().labels(&format!("chaos={}", self.prefix));
        let pods = Api::<Pod>::namespaced(self.client.clone(), NAMESPACE)
            .list(&selector)
            .await?;
        Ok(pods.items.is_empty())
    }
}

/// Polls `done` every 250 ms (sampling the managers' request rate each second) until it
/// holds; fails after `timeout`.
async fn until<D>(
    what: &str,
    timeout: Duration,
    rate: &mut RequestRate,
    mut done: D,
) -> anyhow::Result<Duration>
where
    D: AsyncFnMut() -> anyhow::Result<bool>,
{
    let started = Instant::now();
    loop {
        rate.sample().await?;
        if done().await.unwrap_or(false) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > timeout {
            bail!("{what}: not within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The managers' requests per second, sampled at most once a second; keeps the peak.
struct RequestRate {
    client: Client,
    last: Option<(Instant, u64)>,
    peak: u64,
}

impl RequestRate {
    fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            last: None,
            peak: 0,
        }
    }

    async fn sample(&mut self) -> anyhow::Result<()> {
        if self
            .last
            .is_some_and(|(at, _)| at.elapsed() < Duration::from_secs(1))
        {
            return Ok(());
        }
        let total: u64 = api_calls(&self.client, MANAGER_AGENT)
            .await?
            .iter()
            .filter(|(key, _)| !key.starts_with("watch "))
            .map(|(_, count)| count)
            .sum();
        let now = Instant::now();
        if let Some((at, before)) = self.last {
            let per_second = (total - before) as f64 / now.duration_since(at).as_secs_f64();
            self.peak = self.peak.max(per_second.round() as u64);
        }
        self.last = Some((now, total));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

/// The identity of the manager that holds the Lease, if any.
async fn lease_holder(client: &Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), "kube-system")
        .get_opt(LEASE)
        .await
        .ok()??;
    lease.spec?.holder_identity
}

/// Workload writes so far by the manager process whose leader-election identity is
/// `identity` (its user agent ends in ` (<identity>)`), by "verb resource": Leases and Events
/// aside, as upstream too records its `LeaderElection` event when it finds its lease lost.
async fn writes_by(client: &Client, identity: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    Ok(workload_writes(
        api_calls(client, &format!("({identity})")).await?,
    ))
}

/// [`writes_by`] that landed (the API server answered 2xx).
async fn landed_writes_by(
    client: &Client,
    identity: &str,
) -> anyhow::Result<BTreeMap<String, u64>> {
    Ok(workload_writes(
        landed_api_calls(client, &format!("({identity})")).await?,
    ))
}

/// The workload writes among `calls` (Leases and Events aside).
fn workload_writes(calls: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .into_iter()
        .filter(|(key, count)| {
            !key.ends_with(" events") && writes(&BTreeMap::from([(key.clone(), *count)])) > 0
        })
        .collect()
}

/// What `after` has beyond `before`, by key, and in all.
fn grown(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> (Vec<String>, u64) {
    let by_key: Vec<(String, u64)> = after
        .iter()
        .map(|(key, count)| {
            let more = count.saturating_sub(before.get(key).copied().unwrap_or(0));
            (key.clone(), more)
        })
        .filter(|(_, more)| *more > 0)
        .collect();
    let total = by_key.iter().map(|(_, more)| more).sum();
    (
        by_key
            .into_iter()
            .map(|(key, more)| format!("{key}: {more}"))
            .collect(),
        total,
    )
}

/// Their total.
async fn writes_of(client: &Client, identity: &str) -> anyhow::Result<u64> {
    Ok(writes_by(client, identity).await?.values().sum())
}

/// Waits until a manager other than `not` holds the Lease and has written; returns its
/// identity and how long that took.
async fn successor(
    client: &Client,
    not: &str,
    timeout: Duration,
) -> anyhow::Result<(String, Duration)> {
    let started = Instant::now();
    loop {
        if let Some(holder) = lease_holder(client).await
            && holder != not
            && writes_of(client, &holder).await? > 0
        {
            return Ok((holder, started.elapsed()));
        }
        if started.elapsed() > timeout {
            bail!("no successor of {not} wrote within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Which of `managers` leads, by its own `leader_election_master_status`.
fn leading(managers: &[Manager]) -> Option<usize> {
    managers.iter().position(|manager| {
        manager.page("/metrics").is_ok_and(|text| {
            text.lines().any(|line| {
                line.starts_with("leader_election_master_status{")
                    && line.contains(&format!("name=\"{LEASE}\""))
                    && line.ends_with(" 1")
            })
        })
    })
}

/// Whether `manager` is a warm standby whose caches have synced.
fn standing_by_warm(manager: &Manager) -> bool {
    manager.page("/metrics").is_ok_and(|text| {
        text.lines().any(|line| {
            line == format!("leader_election_standby_cache_synced{{name=\"{LEASE}\"}} 1")
        })
    })
}

/// Waits until every manager but the leader is a warm standby with synced caches.
async fn warm_standbys(managers: &[Manager], timeout: Duration) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let leader = leading(managers);
        let ready = managers
            .iter()
            .enumerate()
            .all(|(i, manager)| Some(i) == leader || standing_by_warm(manager));
        if leader.is_some() && ready {
            return Ok(());
        }
        if started.elapsed() > timeout {
            bail!("no warm standby within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The managers' creates the sim refused as already there (409), Events and Leases aside: a
/// controller that created what exists, e.g. from a cache that missed the create before.
async fn duplicate_creates(client: &Client) -> anyhow::Result<u64> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut refused = 0;
    for line in text.lines() {
        let Some((labels, count)) = line
            .strip_prefix("sim_requests_total{")
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        let labels = support::prometheus_labels(labels);
        let label = |name: &str| labels.get(name).map(String::as_str).unwrap_or_default();
        if label("verb") == "create"
            && label("code") == "409"
            && label("user_agent").contains(MANAGER_AGENT)
            && !["events", "leases"].contains(&label("resource"))
        {
            refused += count.trim().parse::<u64>()?;
        }
    }
    Ok(refused)
}

/// The sum of the histogram `name` (labels `labels`) on `manager`'s `/metrics`, if it has one.
fn histogram_sum(manager: &Manager, name: &str, labels: &str) -> Option<f64> {
    let page = manager.page("/metrics").ok()?;
    let series = format!("{name}_sum{{{labels}}} ");
    page.lines()
        .find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
}

/// What the successor `manager` reports of its takeover: the read barrier (warm) and the time
/// from winning the Lease to its first sync.
fn takeover_metrics(manager: &Manager, election: Election) -> String {
    let lease = format!("name=\"{LEASE}\"");
    let first_sync = histogram_sum(
        manager,
        "leader_election_acquire_to_first_sync_seconds",
        &format!("{lease},start=\"{}\"", election.label()),
    );
    let barrier = histogram_sum(
        manager,
        "leader_election_read_barrier_duration_seconds",
        &lease,
    );
    match (barrier, first_sync) {
        (Some(barrier), Some(sync)) => {
            format!("(read barrier {barrier:.2} s, first sync {sync:.2} s after winning)")
        }
        (None, Some(sync)) => format!("(first sync {sync:.2} s after winning)"),
        _ => String::new(),
    }
}

async fn failover(
    settings: &Settings,
    sim: &Sim,
    client: &Client,
    election: Election,
) -> anyhow::Result<ScenarioResult> {
    let sizes = settings.sizes;
    let lease = Duration::from_secs(sizes.lease.0);
    let (prefix, scenario) = match election {
        Election::Warm => ("warm", "failover, warm standbys"),
        _ => ("failover", "failover"),
    };
    let workloads = Workloads::new(client, prefix, sizes.failover_deployments, 0);
    let mut result = workloads.result(scenario);
    let mut rate = RequestRate::new(client);
    let mut managers = vec![
        settings.start_manager(&sim.kubeconfig, election)?,
        settings.start_manager(&sim.kubeconfig, election)?,
    ];
    let checker = Checker::start(client);
    workloads.create().await?;
    workloads
        .settle("created", sizes.converge_timeout, &mut rate, 5, 3)
        .await?;
    if election == Election::Warm {
        warm_standbys(&managers, sizes.converge_timeout).await?;
    }

    // 1. kill -9 the leader in the middle of a rollout.
    checker.set_rolling(true);
    let started = Instant::now();
    let refused_before = duplicate_creates(client).await?;
    workloads.roll(1).await?;
    let first = leading(&managers).context("no manager leads")?;
    let first_identity = lease_holder(client).await.context("no Lease holder")?;
    managers[first].signal("KILL")?;
    let (second_identity, gap) = successor(client, &first_identity, 4 * lease).await?;
    let second = leading(&managers).context("the successor does not say it leads")?;
    result.notes.push(format!(
        "kill -9 of the leader mid-rollout: leaderless for {:.1} s {}",
        gap.as_secs_f64(),
        takeover_metrics(&managers[second], election)
    ));
    // A standby again, for the next takeover.
    managers[first] = settings.start_manager(&sim.kubeconfig, election)?;
    if election == Election::Warm {
        warm_standbys(&managers, sizes.converge_timeout).await?;
    }

    // 2. SIGSTOP the new leader past its lease; the standby takes over; SIGCONT.
    workloads.roll(2).await?;
    stall_leader(
        client,
        &mut managers,
        second,
        &second_identity,
        lease,
        &mut result,
    )
    .await?;
    if let Some(third) = leading(&managers) {
        let noted = takeover_metrics(&managers[third], election);
        if !noted.is_empty() {
            result.notes.push(format!("the standby's takeover {noted}"));
        }
    }

    let converged = workloads
        .settle("rolled", sizes.converge_timeout, &mut rate, 5, 3)
        .await?;
    result.notes.push(format!(
        "rollouts converged {:.1} s after the last takeover",
        converged.as_secs_f64()
    ));
    let duplicates = duplicate_creates(client).await? - refused_before;
    result.notes.push(format!(
        "creates refused as already there (duplicates): {duplicates}"
    ));
    if election == Election::Warm && duplicates > 0 {
        bail!("failover with warm standbys: {duplicates} duplicate creates");
    }
    result.convergence_seconds = started.elapsed().as_secs_f64();
    checker.set_rolling(false);
    workloads.delete().await?;
    until("deleted", sizes.converge_timeout, &mut rate, async || {
        workloads.gone().await
    })
    .await?;
    Ok(checker.finish(result, &rate))
}

/// Failover step 2: SIGSTOP of the leader `second` past its lease, a takeover by the standby,
/// SIGCONT; notes the leaderless gap and the writes of the resumed deposed leader.
async fn stall_leader(
    client: &Client,
    managers: &mut [Manager],
    second: usize,
    second_identity: &str,
    lease: Duration,
    result: &mut ScenarioResult,
) -> anyhow::Result<()> {
    managers[second].signal("STOP")?;
    let stopped = Instant::now();
    let (_, gap) = successor(client, second_identity, 4 * lease).await?;
    let deposed_sent = writes_by(client, second_identity).await?;
    let deposed_landed = landed_writes_by(client, second_identity).await?;
    managers[second].signal("CONT")?;
    result.notes.push(format!(
        "SIGSTOP of the new leader: leaderless for {:.1} s",
        gap.as_secs_f64()
    ));
    let resumed = Instant::now();
    while managers[second].running() && resumed.elapsed() < 2 * lease {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exited = !managers[second].running();
    let (sent, late_sent) = grown(&deposed_sent, &writes_by(client, second_identity).await?);
    let (landed, late_landed) = grown(
        &deposed_landed,
        &landed_writes_by(client, second_identity).await?,
    );
    result.notes.push(format!(
        "the resumed deposed leader {} after {:.1} s stopped; its writes sent after its successor's first (in flight at the stall): {late_sent}, of which landed: {late_landed}",
        if exited { "exited" } else { "did NOT exit" },
        stopped.elapsed().as_secs_f64()
    ));
    // The fence refuses every write the resumed process starts, and its connections write no
    // byte once its lease has expired (`manager::fenced_connection`), so a request already
    // handed to a connection at the instant of the stall fails too. Bytes the kernel took
    // before the stop reached the API server before the stop, long before the successor.
    if late_landed > 0 || !exited {
        bail!(
            "failover: after its successor's first write the deposed leader sent {late_sent} writes ({}) and {late_landed} landed ({}); exited: {exited}",
            sent.join(", "),
            landed.join(", ")
        );
    }
    Ok(())
}

async fn crash(settings: &Settings, sim: &Sim, client: &Client) -> anyhow::Result<ScenarioResult> {
    let sizes = settings.sizes;
    let workloads = Workloads::new(
        client,
        "crash",
        sizes.crash_deployments,
        sizes.crash_stateful_sets,
    );
    let mut result = workloads.result("crash mid-rollout");
    let mut rate = RequestRate::new(client);
    let mut manager = settings.start_manager(&sim.kubeconfig, Election::Off)?;
    let checker = Checker::start(client);
    workloads.create().await?;
    workloads
        .settle("created", sizes.converge_timeout, &mut rate, 5, 3)
        .await?;
    checker.set_rolling(true);
    let started = Instant::now();
    let mut random = StdRng::seed_from_u64(20);
    for round in 1..=sizes.crashes {
        workloads.roll(round).await?;
        tokio::time::sleep(Duration::from_millis(random.random_range(100..2000))).await;
        if !manager.running() {
            result.manager_restarts += 1;
        }
        manager.signal("KILL")?;
        drop(manager);
        manager = settings.start_manager(&sim.kubeconfig, Election::Off)?;
    }
    result.notes.push(format!(
        "{} kill -9 and restarts, each 0.1-2 s into a new rollout",
        sizes.crashes
    ));
    workloads
        .settle("rolled", sizes.converge_timeout, &mut rate, 5, 3)
        .await?;
    result.convergence_seconds = started.elapsed().as_secs_f64();
    checker.set_rolling(false);
    if !manager.running() {
        result.manager_restarts += 1;
    }
    workloads.delete().await?;
    until("deleted", sizes.converge_timeout, &mut rate, async || {
        workloads.gone().await
    })
    .await?;
    Ok(checker.finish(result, &rate))
}

async fn faults(settings: &Settings, dir: &Path) -> anyhow::Result<ScenarioResult> {
    let sizes = settings.sizes;
    let sim = Sim::start(
        &settings.sim_binary,
        dir,
        &[
            "--fault-seed=7".to_owned(),
            "--fault-write-500=0.10".to_owned(),
            "--fault-write-409=0.05".to_owned(),
            "--fault-write-429=0.02".to_owned(),
            "--fault-latency-ms=50".to_owned(),
            "--fault-watch-disconnect-secs=5".to_owned(),
        ],
    )
    .await?;
    let client = sim.client().await?;
    let workloads = Workloads::new(
        &client,
        "faults",
        sizes.fault_deployments,
        sizes.fault_stateful_sets,
    );
    let mut result = workloads.result("API faults");
    let mut rate = RequestRate::new(&client);
    let mut manager = settings.start_manager(&sim.kubeconfig, Election::Off)?;
    let checker = Checker::start(&client);
    let started = Instant::now();
    let timeout = sizes.converge_timeout;
    let mut phases = Vec::new();

    workloads.create().await?;
    let took = workloads
        .settle("created", timeout, &mut rate, 5, 3)
        .await?;
    phases.push(format!("create {:.1} s", took.as_secs_f64()));

    checker.set_rolling(true);
    workloads.roll(1).await?;
    let took = workloads.settle("rolled", timeout, &mut rate, 5, 3).await?;
    phases.push(format!("rollout {:.1} s", took.as_secs_f64()));
    checker.set_rolling(false);

    workloads
        .patch_all(json!({"spec": {"replicas": 7}}))
        .await?;
    let took = workloads.settle("scaled", timeout, &mut rate, 7, 7).await?;
    phases.push(format!("scale {:.1} s", took.as_secs_f64()));

    workloads.delete().await?;
    let took = until("deleted", timeout, &mut rate, async || {
        workloads.gone().await
    })
    .await?;
    phases.push(format!("delete {:.1} s", took.as_secs_f64()));
    result.convergence_seconds = started.elapsed().as_secs_f64();

    if !manager.running() {
        result.manager_restarts += 1;
    }
    let retries = manager.queue_metrics()?.retries;
    result.notes.push(format!(
        "phases: {}; workqueue_retries_total {retries}",
        phases.join(", ")
    ));
    if retries == 0.0 {
        bail!("API faults: no retry was counted: the faults did not reach the manager");
    }
    drop(manager);
    Ok(checker.finish(result, &rate))
}

// ---------------------------------------------------------------------------------------------
// Handover timing (`KCM_CHAOS_ONLY=handover`, `hack/failover.sh`).

/// One handover: how long after the leader's signal its successor wrote, and what the standby
/// cost before it.
#[derive(serde::Serialize)]
struct HandoverResult {
    /// `cold` (upstream's: caches built after winning) or `warm` (`--leader-elect-warm-standby`).
    start: &'static str,
    /// `TERM` (the leader drains and gives the Lease up) or `KILL`.
    signal: &'static str,
    deployments: usize,
    /// From the signal to the successor's first workload write.
    first_write_seconds: f64,
    /// From the signal to the Lease held by the successor.
    lease_taken_seconds: f64,
    /// The successor's `leader_election_acquire_to_first_sync_seconds`.
    first_sync_after_winning_seconds: Option<f64>,
    /// The successor's `leader_election_read_barrier_duration_seconds`.
    read_barrier_seconds: Option<f64>,
    /// The standby's resident memory just before the signal.
    standby_rss_mib: f64,
    /// The leader's, for comparison.
    leader_rss_mib: f64,
    /// The standby's CPU time from its start, through a rollout the leader carried out, to the
    /// signal; and the leader's.
    standby_cpu_seconds: f64,
    leader_cpu_seconds: f64,
    /// The standby's requests before the signal, by "verb resource" (its lists and watches).
    standby_requests: BTreeMap<String, u64>,
}

/// The leader-election identities in the user agents of the manager requests the sim counted.
async fn manager_identities(client: &Client) -> anyhow::Result<HashSet<String>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    Ok(text
        .lines()
        .filter_map(|line| line.strip_prefix("sim_requests_total{"))
        .filter_map(|rest| {
            let labels = support::prometheus_labels(rest.rsplit_once("} ")?.0);
            let agent = labels.get("user_agent")?;
            agent.contains(MANAGER_AGENT).then_some(())?;
            let identity = agent.rsplit_once(" (")?.1.strip_suffix(')')?;
            Some(identity.to_owned())
        })
        .collect())
}

/// Times four handovers on `handover_deployments` Deployments × 5: cold and warm standbys,
/// each after a SIGTERM and after a kill -9 of the leader, with a rollout started at the
/// signal. Each pair of managers first carries out the rollout the last pair was given.
async fn handover(settings: &Settings, dir: &Path) -> anyhow::Result<Vec<HandoverResult>> {
    let sizes = settings.sizes;
    let lease = Duration::from_secs(sizes.lease.0);
    let sim = Sim::start(&settings.sim_binary, dir, &[]).await?;
    let client = sim.client().await?;
    let deployments = settings.handover_deployments;
    let workloads = Workloads::new(&client, "handover", deployments, 0);
    let mut rate = RequestRate::new(&client);
    {
        let manager = settings.start_manager(&sim.kubeconfig, Election::Off)?;
        workloads.create().await?;
        workloads
            .settle("created", sizes.converge_timeout, &mut rate, 5, 3)
            .await?;
        // A rollout for the first pair to carry out, as each pair carries out the last's.
        workloads.roll(1).await?;
        drop(manager);
    }
    let mut results = Vec::new();
    let rounds = [
        (Election::Cold, "TERM"),
        (Election::Warm, "TERM"),
        (Election::Cold, "KILL"),
        (Election::Warm, "KILL"),
    ];
    let rounds = rounds
        .into_iter()
        .filter(|(election, signal)| {
            let start = settings.handover_start.as_deref();
            let only_signal = settings.handover_signal.as_deref();
            start.is_none_or(|start| start == election.label())
                && only_signal.is_none_or(|only| only == *signal)
        })
        .collect::<Vec<_>>()
        .repeat(settings.handover_repeat);
    for (round, (election, signal)) in rounds.into_iter().enumerate() {
        let known = manager_identities(&client).await?;
        let managers = [
            settings.start_manager(&sim.kubeconfig, election)?,
            settings.start_manager(&sim.kubeconfig, election)?,
        ];
        // The leader lists and carries out the pending rollout; the standby stands by (warm:
        // with every event of it in its caches). What that costs each is measured.
        workloads
            .settle("rolled", sizes.converge_timeout, &mut rate, 5, 3)
            .await?;
        if election == Election::Warm {
            warm_standbys(&managers, sizes.converge_timeout).await?;
        }
        let leader = leading(&managers).context("no manager leads")?;
        let standby = 1 - leader;
        let leader_identity = lease_holder(&client).await.context("no Lease holder")?;
        let standby_identity = manager_identities(&client)
            .await?
            .into_iter()
            .find(|identity| !known.contains(identity) && *identity != leader_identity)
            .context("the standby's requests")?;
        let standby_requests = api_calls(&client, &format!("({standby_identity})")).await?;
        let (standby_rss, leader_rss) = (
            managers[standby].status_mib("VmRSS")?,
            managers[leader].status_mib("VmRSS")?,
        );
        let (standby_cpu, leader_cpu) = (
            managers[standby].cpu_seconds()?,
            managers[leader].cpu_seconds()?,
        );

        // The signal, and at once a rollout: the successor's first write is its first act on
        // work that is waiting for it.
        managers[leader].signal(signal)?;
        let signalled = Instant::now();
        let rolling = tokio::spawn({
            let workloads = workloads.clone();
            async move { workloads.roll(round + 2).await }
        });
        let mut lease_taken = None;
        let first_write = loop {
            if lease_taken.is_none()
                && lease_holder(&client).await.as_deref() == Some(standby_identity.as_str())
            {
                lease_taken = Some(signalled.elapsed());
            }
            if lease_taken.is_some() && writes_of(&client, &standby_identity).await? > 0 {
                break signalled.elapsed();
            }
            if signalled.elapsed() > 4 * lease + sizes.converge_timeout {
                bail!(
                    "handover ({}, {signal}): the standby never wrote",
                    election.label()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        rolling.await??;
        let lease_label = format!("name=\"{LEASE}\"");
        let result = HandoverResult {
            start: election.label(),
            signal,
            deployments,
            first_write_seconds: first_write.as_secs_f64(),
            lease_taken_seconds: lease_taken.unwrap_or(first_write).as_secs_f64(),
            first_sync_after_winning_seconds: histogram_sum(
                &managers[standby],
                "leader_election_acquire_to_first_sync_seconds",
                &format!("{lease_label},start=\"{}\"", election.label()),
            ),
            read_barrier_seconds: histogram_sum(
                &managers[standby],
                "leader_election_read_barrier_duration_seconds",
                &lease_label,
            ),
            standby_rss_mib: standby_rss,
            leader_rss_mib: leader_rss,
            standby_cpu_seconds: standby_cpu,
            leader_cpu_seconds: leader_cpu,
            standby_requests,
        };
        println!("{}", handover_row(&result));
        results.push(result);
    }
    Ok(results)
}

fn handover_row(result: &HandoverResult) -> String {
    let seconds = |value: Option<f64>| value.map_or("-".to_owned(), |v| format!("{v:.2}"));
    let watches: u64 = result
        .standby_requests
        .iter()
        .filter(|(key, _)| key.starts_with("watch "))
        .map(|(_, count)| count)
        .sum();
    let lists: u64 = result
        .standby_requests
        .iter()
        .filter(|(key, _)| key.starts_with("list "))
        .map(|(_, count)| count)
        .sum();
    format!(
        "| {} | {} | {} | {:.2} | {:.2} | {} | {} | {:.1} / {:.1} | {:.2} / {:.2} | {lists} / {watches} |",
        result.start,
        result.signal,
        result.deployments,
        result.first_write_seconds,
        result.lease_taken_seconds,
        seconds(result.first_sync_after_winning_seconds),
        seconds(result.read_barrier_seconds),
        result.standby_rss_mib,
        result.leader_rss_mib,
        result.standby_cpu_seconds,
        result.leader_cpu_seconds,
    )
}

fn handover_markdown(results: &[HandoverResult]) -> String {
    let mut out = String::from(
        "| standby | signal | Deployments x 5 | first write after s | Lease taken after s | first sync after winning s | read barrier s | RSS MiB standby / leader | CPU s from start through a rollout, standby / leader | standby lists / watches |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for result in results {
        let _ = writeln!(out, "{}", handover_row(result));
    }
    out
}

fn markdown(results: &[ScenarioResult]) -> String {
    let mut out = String::from(
        "| scenario | workloads | invariant samples | violations | convergence s | manager restarts | requests/s peak | notes |\n|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for result in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} |",
            result.scenario,
            result.workloads,
            result.invariant_samples,
            result.violations,
            result.convergence_seconds,
            result.manager_restarts,
            result.requests_per_second_peak,
            result.notes.join("; ")
        );
    }
    for result in results.iter().filter(|r| r.violations > 0) {
        let _ = writeln!(
            out,
            "\n{} violations, first: {}",
            result.scenario,
            result.violation_examples.join("; ")
        );
    }
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::from_args()?;
    let dir = tempfile::tempdir()?;
    let fault_dir = tempfile::tempdir()?;
    let mut results = Vec::new();
    let only = std::env::var("KCM_CHAOS_ONLY").ok();
    let wanted = |scenario: &str| only.as_deref().is_none_or(|only| only == scenario);
    if only.as_deref() == Some("handover") {
        let results = handover(&settings, dir.path()).await?;
        let table = handover_markdown(&results);
        println!("{table}");
        let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
        std::fs::create_dir_all(&out_dir)?;
        let out = format!("{}-handover", settings.out);
        std::fs::write(out_dir.join(format!("{out}.md")), &table)?;
        std::fs::write(
            out_dir.join(format!("{out}.json")),
            serde_json::to_string_pretty(&results)?,
        )?;
        return Ok(());
    }
    {
        let sim = Sim::start(&settings.sim_binary, dir.path(), &[]).await?;
        let client = sim.client().await?;
        if wanted("failover") {
            results.push(failover(&settings, &sim, &client, Election::Cold).await?);
        }
        if wanted("failover-warm") {
            results.push(failover(&settings, &sim, &client, Election::Warm).await?);
        }
        if wanted("crash") {
            results.push(crash(&settings, &sim, &client).await?);
        }
    }
    if wanted("faults") {
        results.push(faults(&settings, fault_dir.path()).await?);
    }

    let table = markdown(&results);
    println!("{table}");
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench-results");
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(out_dir.join(format!("{}.md", settings.out)), &table)?;
    std::fs::write(
        out_dir.join(format!("{}.json", settings.out)),
        serde_json::to_string_pretty(&results)?,
    )?;
    let violations: u64 = results.iter().map(|r| r.violations).sum();
    let restarts: u32 = results.iter().map(|r| r.manager_restarts).sum();
    if violations > 0 || restarts > 0 {
        bail!("{violations} invariant violations, {restarts} manager restarts");
    }
    Ok(())
}
