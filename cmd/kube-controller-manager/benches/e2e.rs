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
//! [--replicaset-replicas R] [--qps Q] [--burst B] [--manager PATH] [--sim PATH] [--out NAME]
//! [--shadow] [--manager-arg ARG]...` (a count of 0 skips that kind; `--manager` measures
//! another build of the binary, e.g. main's before a change; `--manager-arg` passes one more
//! flag to the managers under test, e.g. `--replicaset-status-hold=0s` for upstream's writes;
//! `--sim` defaults to the `kube-sim` beside the manager binary; `--out` defaults to `e2e`;
//! `--shadow` runs a second manager with `--shadow` beside the first and measures it too: its
//! CPU, peak RSS, writes, and the divergences it reports); under `cargo test` it runs a small
//! smoke configuration of each kind.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet, StatefulSet},
    core::v1::Pod,
};
use kube::{
    Api, Client,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use support::{BINARY, Manager, Sim, api_calls, writes};

mod support;

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
    /// More flags for the managers under test.
    manager_args: Vec<String>,
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
            manager_args: Vec::new(),
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
                "--manager-arg" => settings.manager_args.push(value()?.clone()),
                _ => {}
            }
        }
        Ok(settings)
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
    let calls_before = api_calls(client, MANAGER_AGENT).await?;
    let shadow_calls_before = api_calls(client, SHADOW_AGENT).await?;
    let queues_before = manager.queue_metrics()?;
    let mut queue_depth_peak = queues_before.depth;
    let cpu_before = manager.cpu_seconds()?;
    let shadow_cpu_before = managers.shadow.map(Manager::cpu_seconds).transpose()?;
    let started = Instant::now();
    let mut peak_rss = PeakRss::start(manager)?;
    let mut shadow_peak_rss = managers.shadow.map(PeakRss::start).transpose()?;
    act.await?;
    while !converged().await? {
        peak_rss.sample()?;
        queue_depth_peak = queue_depth_peak.max(manager.queue_metrics()?.depth);
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
    let calls = difference(&api_calls(client, MANAGER_AGENT).await?, &calls_before);
    let total: u64 = calls
        .iter()
        .filter(|(key, _)| !key.starts_with("watch ") && !key.starts_with("list "))
        .map(|(_, count)| count)
        .sum();
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
        sync_p99_ms: queues_after.sync_p99_ms_since(&queues_before),
        queue_depth_peak: queue_depth_peak.max(queues_after.depth),
        queue_depth_end,
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
        "| phase | objects | wall s | manager CPU s | manager peak RSS MiB | manager requests per object (excl. list/watch) | sync p99 ms | queue depth peak / end |",
    );
    if shadow {
        out.push_str(" shadow CPU s | shadow peak RSS MiB | shadow writes |");
    }
    out.push_str(" manager API calls |\n|---|---:|---:|---:|---:|---:|---:|---:|");
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
        let p99 = result
            .sync_p99_ms
            .map_or_else(|| "-".to_owned(), |ms| format!("≤ {ms}"));
        let _ = write!(
            out,
            " {p99} | {} / {} |",
            result.queue_depth_peak, result.queue_depth_end
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
