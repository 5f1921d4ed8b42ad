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
//! [--replicaset-replicas R] [--qps Q] [--burst B] [--manager PATH] [--sim PATH] [--out NAME]`
//! [--shadow]` (a count of 0 skips that kind; `--manager` measures another build of the
//! binary, e.g. main's before a change; `--sim` defaults to the `kube-sim` beside the manager
//! binary; `--out` defaults to `e2e`; `--shadow` runs a second manager with `--shadow` beside
//! the first and measures it too: its CPU, peak RSS, writes, and the divergences it reports);
//! under `cargo test` it runs a small smoke configuration of each kind.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet, StatefulSet},
    core::v1::Pod,
};
use kube::{
    Api, Client, Config,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::json;

const BINARY: &str = env!("CARGO_BIN_EXE_kube-controller-manager");
/// The manager's requests carry this in their user agent.
/// The normal manager's requests carry this in their user agent (`<product>/<client>`)...
const MANAGER_AGENT: &str = " kcm-rs/";
/// ...and the shadow's this.
const SHADOW_AGENT: &str = " kcm-rs-shadow/";
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(1800);
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
    qps: u32,
    burst: u32,
    manager_binary: PathBuf,
    sim_binary: PathBuf,
    /// Results go to `bench-results/<out>.md` and `.json`.
    out: String,
    /// Also run and measure a `--shadow` manager.
    shadow: bool,
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
            qps: 2000,
            burst: 4000,
            manager_binary: PathBuf::from(BINARY),
            sim_binary: Path::new(BINARY).with_file_name("kube-sim"),
            out: "e2e".to_owned(),
            shadow: !benchmarking,
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
                "--qps" => settings.qps = value()?.parse()?,
                "--burst" => settings.burst = value()?.parse()?,
                "--manager" => settings.manager_binary = PathBuf::from(value()?),
                "--sim" => settings.sim_binary = PathBuf::from(value()?),
                "--out" => settings.out = value()?.clone(),
                "--shadow" => settings.shadow = true,
                _ => {}
            }
        }
        Ok(settings)
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
    api_calls_per_object: f64,
    /// The shadow manager over the same phase, with `--shadow`.
    shadow: Option<ShadowUsage>,
}

/// What the shadow manager cost over one phase.
#[derive(serde::Serialize)]
struct ShadowUsage {
    cpu_seconds: f64,
    peak_rss_mib: f64,
    /// Its requests other than reads and its Lease: must be 0.
    writes: u64,
}

/// A manager subprocess and what /proc says about it.
struct Manager {
    child: Child,
    port: u16,
}

impl Manager {
    /// Starts the manager with `extra` flags.
    fn start(
        kubeconfig: &std::path::Path,
        settings: &Settings,
        extra: &[&str],
    ) -> anyhow::Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(&settings.manager_binary)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--secure-port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--plain-http",
                "--leader-elect=false",
            ])
            .arg(format!("--kube-api-qps={}", settings.qps))
            .arg(format!("--kube-api-burst={}", settings.burst))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the manager")?;
        Ok(Self { child, port })
    }

    /// Starts the shadow manager: `--shadow`, its report readable without credentials.
    fn start_shadow(kubeconfig: &std::path::Path, settings: &Settings) -> anyhow::Result<Self> {
        Self::start(
            kubeconfig,
            settings,
            &[
                "--shadow",
                "--authorization-always-allow-paths=/healthz,/readyz,/livez,/shadow",
            ],
        )
    }

    /// The shadow's `/shadow` page (plain HTTP on loopback).
    fn shadow_report(&self) -> anyhow::Result<serde_json::Value> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        write!(stream, "GET /shadow HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let body = response.split_once("\r\n\r\n").context("no HTTP body")?.1;
        Ok(serde_json::from_str(body)?)
    }

    /// utime + stime of the manager, in seconds.
    fn cpu_seconds(&self) -> anyhow::Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // Fields after the command name (which is in parentheses and may contain spaces).
        let rest = stat.rsplit_once(')').context("malformed stat")?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
        Ok(ticks / 100.0)
    }

    /// A field of /proc/<pid>/status in kB (`VmRSS`, `VmHWM`), as MiB.
    fn status_mib(&self, field: &str) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .with_context(|| format!("no {field}"))?
            .trim()
            .trim_end_matches(" kB")
            .parse()?;
        Ok(kib / 1024.0)
    }

    /// Resets the kernel's peak RSS (`VmHWM`) to the current RSS, so the next phase's peak is
    /// its own. Returns false where the kernel refuses (then only sampling measures the peak).
    fn reset_peak_rss(&self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5").is_ok()
    }

    /// The peak RSS since the last reset, in MiB: the kernel's high-water mark, which sees
    /// the short peaks a 250 ms sample misses.
    fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        self.status_mib("VmHWM")
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sim cluster: `kube-sim` as a process of its own, so that neither it nor this driver
/// shares a process with the manager.
struct Sim {
    child: Child,
    kubeconfig: PathBuf,
}

impl Sim {
    /// Starts `kube-sim` on a free port and waits for the kubeconfig it writes.
    async fn start(settings: &Settings, dir: &Path) -> anyhow::Result<Self> {
        let kubeconfig = dir.join("kubeconfig");
        let child = Command::new(&settings.sim_binary)
            .arg("--port=0")
            .arg(format!("--kubeconfig-out={}", kubeconfig.display()))
            // Every event of a phase stays resumable: the manager never relists mid-phase.
            .arg("--watch-window=200000")
            // Dependents go a moment after their owner, as upstream's garbage collector
            // deletes them from its own watch.
            .arg(format!("--gc-delay-ms={}", GC_DELAY.as_millis()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (build it with `cargo build --profile dist -p kube-sim`)",
                    settings.sim_binary.display()
                )
            })?;
        let sim = Self { child, kubeconfig };
        let started = Instant::now();
        while std::fs::metadata(&sim.kubeconfig).map_or(true, |m| m.len() == 0) {
            if started.elapsed() > Duration::from_secs(30) {
                bail!("kube-sim wrote no kubeconfig within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(sim)
    }

    /// A client of the sim, from the kubeconfig it wrote.
    async fn client(&self) -> anyhow::Result<Client> {
        let kubeconfig = Kubeconfig::read_from(&self.kubeconfig)?;
        let config =
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        Ok(Client::try_from(config)?)
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A manager's API calls so far, by "verb resource": the sim's `sim_requests_total` counters
/// of user agents containing `agent`, summed over response codes.
async fn manager_calls(client: &Client, agent: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let Some((labels, count)) = line
            .strip_prefix("sim_requests_total{")
            .and_then(|rest| rest.rsplit_once("} "))
        else {
            continue;
        };
        let labels = prometheus_labels(labels);
        let label = |name: &str| labels.get(name).map(String::as_str).unwrap_or_default();
        if label("user_agent").contains(agent) {
            *calls
                .entry(format!("{} {}", label("verb"), label("resource")))
                .or_default() += count.trim().parse::<u64>()?;
        }
    }
    Ok(calls)
}

/// `name="value",...` of a Prometheus sample, values unescaped.
fn prometheus_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while let Some((name, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(if escaped == 'n' { '\n' } else { escaped });
                    }
                }
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(name.trim_start_matches(',').to_owned(), value);
        rest = &after[end..];
    }
    labels
}

fn difference(
    after: &BTreeMap<String, u64>,
    before: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(key, count)| {
            let delta = count - before.get(key).copied().unwrap_or(0);
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

/// Calls that change something, other than the shadow's Lease.
fn writes(calls: &BTreeMap<String, u64>) -> u64 {
    calls
        .iter()
        .filter(|(key, _)| {
            let (verb, resource) = key.split_once(' ').unwrap_or_default();
            ["create", "update", "patch", "delete", "deletecollection"].contains(&verb)
                && resource != "leases"
        })
        .map(|(_, count)| count)
        .sum()
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
    let calls_before = manager_calls(client, MANAGER_AGENT).await?;
    let shadow_calls_before = manager_calls(client, SHADOW_AGENT).await?;
    let cpu_before = manager.cpu_seconds()?;
    let shadow_cpu_before = managers.shadow.map(Manager::cpu_seconds).transpose()?;
    let started = Instant::now();
    let mut peak_rss = PeakRss::start(manager)?;
    let mut shadow_peak_rss = managers.shadow.map(PeakRss::start).transpose()?;
    act.await?;
    while !converged().await? {
        peak_rss.sample()?;
        if let Some(shadow) = &mut shadow_peak_rss {
            shadow.sample()?;
        }
        if started.elapsed() > CONVERGE_TIMEOUT {
            bail!("{name} did not converge within {CONVERGE_TIMEOUT:?}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let wall_seconds = started.elapsed().as_secs_f64();
    let api_calls = difference(&manager_calls(client, MANAGER_AGENT).await?, &calls_before);
    let total: u64 = api_calls
        .iter()
        .filter(|(key, _)| !key.starts_with("watch ") && !key.starts_with("list "))
        .map(|(_, count)| count)
        .sum();
    let shadow = match (managers.shadow, shadow_cpu_before, shadow_peak_rss) {
        (Some(shadow), Some(cpu_before), Some(peak_rss)) => Some(ShadowUsage {
            cpu_seconds: shadow.cpu_seconds()? - cpu_before,
            peak_rss_mib: peak_rss.finish()?,
            writes: writes(&difference(
                &manager_calls(client, SHADOW_AGENT).await?,
                &shadow_calls_before,
            )),
        }),
        _ => None,
    };
    Ok(PhaseResult {
        phase: name.to_string(),
        objects,
        wall_seconds,
        cpu_seconds: manager.cpu_seconds()? - cpu_before,
        peak_rss_mib: peak_rss.finish()?,
        api_calls_per_object: total as f64 / objects.max(1) as f64,
        api_calls,
        shadow,
    })
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

fn markdown(results: &[PhaseResult]) -> String {
    let shadow = results.iter().any(|result| result.shadow.is_some());
    let mut out = String::from(
        "| phase | objects | wall s | manager CPU s | manager peak RSS MiB | manager requests per object (excl. list/watch) |",
    );
    if shadow {
        out.push_str(" shadow CPU s | shadow peak RSS MiB | shadow writes |");
    }
    out.push_str(" manager API calls |\n|---|---:|---:|---:|---:|---:|");
    if shadow {
        out.push_str("---:|---:|---:|");
    }
    out.push_str("---|\n");
    for result in results {
        let calls: Vec<String> = result
            .api_calls
            .iter()
            .map(|(key, count)| format!("{key}: {count}"))
            .collect();
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
        if let Some(usage) = &result.shadow {
            let _ = write!(
                out,
                " {:.2} | {:.1} | {} |",
                usage.cpu_seconds, usage.peak_rss_mib, usage.writes
            );
        }
        let _ = writeln!(out, " {} |", calls.join(", "));
    }
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let settings = Settings::from_args()?;
    let dir = tempfile::tempdir()?;
    let sim = Sim::start(&settings, dir.path()).await?;
    let manager = Manager::start(&sim.kubeconfig, &settings, &[])?;
    let shadow = settings
        .shadow
        .then(|| Manager::start_shadow(&sim.kubeconfig, &settings))
        .transpose()?;
    let managers = Managers {
        normal: &manager,
        shadow: shadow.as_ref(),
    };
    let client = sim.client().await?;

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

    // The accounting must have been read: every kind's create phase creates pods.
    let counted_pod_creates = results
        .iter()
        .any(|result| result.api_calls.contains_key("create pods"));
    if !results.is_empty() && !counted_pod_creates {
        bail!("no pod create by the manager was counted: the sim's accounting was not read");
    }

    let mut table = markdown(&results);
    if let Some(shadow) = &shadow {
        // Every intent judged: the settle window (5 s) has passed since the last change.
        tokio::time::sleep(Duration::from_secs(7)).await;
        let report = shadow.shadow_report()?;
        let _ = writeln!(
            table,
            "\nShadow: {} intents, {} compared with the settled cluster, {} divergences.",
            report["intents_total"], report["compared_total"], report["divergences_total"]
        );
        if report["divergences_total"] != 0 {
            let _ = writeln!(table, "\n```json\n{:#}\n```", report["divergences"]);
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
    drop(shadow);
    drop(manager);
    drop(sim);
    Ok(())
}
