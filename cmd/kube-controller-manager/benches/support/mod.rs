//! What the end-to-end and chaos drivers share: `kube-sim` and `kube-controller-manager` as
//! processes of their own, what /proc says about a manager, and the Prometheus text both serve.

#![allow(dead_code)] // each driver uses a different subset

use std::{
    collections::BTreeMap,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};

/// The manager binary this bench target was built with.
pub const BINARY: &str = env!("CARGO_BIN_EXE_kube-controller-manager");

/// Pages every bench manager serves without credentials (plain HTTP on loopback).
const OPEN_PATHS: &str =
    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/shadow";

/// A manager subprocess and what /proc says about it.
pub struct Manager {
    child: Child,
    port: u16,
}

impl Manager {
    /// Starts `binary` against the sim of `kubeconfig`, serving plain HTTP on a free loopback
    /// port, with `args` (client rate, leader election, ...).
    pub fn start(binary: &Path, kubeconfig: &Path, args: &[String]) -> anyhow::Result<Self> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        // `KCM_BENCH_LOGS=<dir>` keeps each manager's log there, by port.
        let log = match std::env::var_os("KCM_BENCH_LOGS") {
            Some(dir) => Stdio::from(std::fs::File::create(
                Path::new(&dir).join(format!("manager-{port}.log")),
            )?),
            None => Stdio::null(),
        };
        let child = Command::new(binary)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--secure-port={port}"))
            .args(["--bind-address=127.0.0.1", "--plain-http", OPEN_PATHS])
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting the manager")?;
        Ok(Self { child, port })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (e.g. `KILL`, `STOP`, `CONT`) to the process.
    pub fn signal(&self, signal: &str) -> anyhow::Result<()> {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()?;
        if !status.success() {
            bail!("kill -{signal} {} failed", self.pid());
        }
        Ok(())
    }

    /// Whether the process is still running (a process that exited is reaped here).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The body of one of the manager's pages.
    pub fn page(&self, path: &str) -> anyhow::Result<String> {
        Ok(self.get(path)?.1)
    }

    /// The status code and body of one of the manager's pages.
    fn get(&self, path: &str) -> anyhow::Result<(u16, String)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let (head, body) = response.split_once("\r\n\r\n").context("no HTTP body")?;
        let code = head
            .split_whitespace()
            .nth(1)
            .context("no HTTP status")?
            .parse()?;
        Ok((code, body.to_owned()))
    }

    /// Waits until `/readyz` answers 200: the manager serves and its controllers' caches have
    /// synced, so what is measured next is their work, not the manager's start (the initial
    /// list of 5,000 nodes, say).
    pub async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let started = Instant::now();
        while !self.get("/readyz").is_ok_and(|(code, _)| code == 200) {
            if started.elapsed() > timeout {
                bail!("the manager was not ready within {timeout:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// The manager's own metrics that tell how its queues and syncs kept up.
    pub fn queue_metrics(&self) -> anyhow::Result<QueueMetrics> {
        Ok(QueueMetrics::parse(&self.page("/metrics")?))
    }

    /// utime + stime of the manager, in seconds.
    pub fn cpu_seconds(&self) -> anyhow::Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // Fields after the command name (which is in parentheses and may contain spaces).
        let rest = stat.rsplit_once(')').context("malformed stat")?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
        Ok(ticks / 100.0)
    }

    /// A field of /proc/<pid>/status in kB (`VmRSS`, `VmHWM`), as MiB.
    pub fn status_mib(&self, field: &str) -> anyhow::Result<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
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
    pub fn reset_peak_rss(&self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5").is_ok()
    }

    /// The peak RSS since the last reset, in MiB: the kernel's high-water mark, which sees
    /// the short peaks a 250 ms sample misses.
    pub fn peak_rss_mib(&self) -> anyhow::Result<f64> {
        self.status_mib("VmHWM")
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sim cluster: `kube-sim` as a process of its own, so that neither it nor the driver
/// shares a process with the manager.
pub struct Sim {
    child: Child,
    /// The kubeconfig it wrote.
    pub kubeconfig: PathBuf,
}

impl Sim {
    /// Starts `binary` on a free port with `args` and waits for the kubeconfig it writes.
    pub async fn start(binary: &Path, dir: &Path, args: &[String]) -> anyhow::Result<Self> {
        let kubeconfig = dir.join("kubeconfig");
        let child = Command::new(binary)
            .arg("--port=0")
            .arg(format!("--kubeconfig-out={}", kubeconfig.display()))
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (build it with `cargo build --profile dist -p kube-sim`)",
                    binary.display()
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
    pub async fn client(&self) -> anyhow::Result<Client> {
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

/// API calls so far of the user agents containing `agent`, by "verb resource": the sim's
/// `sim_requests_total` counters, summed over response codes.
pub async fn api_calls(client: &Client, agent: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    calls_answered(client, agent, |_| true).await
}

/// [`api_calls`] that succeeded (a 2xx answer): the writes that landed, not those the API
/// server refused (a 409 on a stale resourceVersion, an injected fault).
pub async fn landed_api_calls(
    client: &Client,
    agent: &str,
) -> anyhow::Result<BTreeMap<String, u64>> {
    calls_answered(client, agent, |code| code.starts_with('2')).await
}

/// The sim's request counts of `agent` whose status code `code` accepts, by "verb resource".
async fn calls_answered(
    client: &Client,
    agent: &str,
    code: impl Fn(&str) -> bool,
) -> anyhow::Result<BTreeMap<String, u64>> {
    Ok(calls_by_code(client, agent, code).await?.1)
}

/// [`api_calls`] and those of them that failed (a non-2xx answer: a 404 on a pod already
/// gone, a 409 on a stale resourceVersion), from one read of the sim's counters, so that the
/// two agree.
pub async fn api_calls_and_failures(
    client: &Client,
    agent: &str,
) -> anyhow::Result<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
    calls_by_code(client, agent, |code| !code.starts_with('2')).await
}

/// The sim's request counts of `agent` by "verb resource": all of them, and those whose status
/// code `code` accepts.
async fn calls_by_code(
    client: &Client,
    agent: &str,
    code: impl Fn(&str) -> bool,
) -> anyhow::Result<(BTreeMap<String, u64>, BTreeMap<String, u64>)> {
    let request = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(request).await?;
    let (mut all, mut accepted) = (BTreeMap::new(), BTreeMap::new());
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
            let key = format!("{} {}", label("verb"), label("resource"));
            let count = count.trim().parse::<u64>()?;
            *all.entry(key.clone()).or_default() += count;
            if code(label("code")) {
                *accepted.entry(key).or_default() += count;
            }
        }
    }
    Ok((all, accepted))
}

/// Calls that change something, other than Leases (a manager's own leader election).
pub fn writes(calls: &BTreeMap<String, u64>) -> u64 {
    calls
        .iter()
        .filter(|(key, _)| is_write(key))
        .map(|(_, count)| count)
        .sum()
}

/// Whether the calls counted as `key` ("verb resource") are writes [`writes`] counts.
pub fn is_write(key: &str) -> bool {
    let (verb, resource) = key.split_once(' ').unwrap_or_default();
    ["create", "update", "patch", "delete", "deletecollection"].contains(&verb)
        && resource != "leases"
}

/// `name="value",...` of a Prometheus sample, values unescaped.
pub fn prometheus_labels(text: &str) -> BTreeMap<String, String> {
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

/// What a manager's `/metrics` says about keeping up: the cumulative sync duration histogram
/// per controller, the current depth of every workqueue, the retries so far, and how many
/// syncs and queue adds there were (to tell a quiet stretch from a busy one: the DaemonSet
/// bench's heartbeat window counts the syncs node heartbeats caused).
#[derive(Default)]
pub struct QueueMetrics {
    /// Controller -> (bucket upper bound in seconds, cumulative count), by ascending bound.
    sync_buckets: BTreeMap<String, Vec<(f64, f64)>>,
    /// Sum of `workqueue_depth` over the queues.
    pub depth: f64,
    /// Sum of `workqueue_retries_total` over the queues.
    pub retries: f64,
    /// `controller_sync_duration_seconds_count` by `controller`: that controller's syncs so
    /// far (its main queue's; other queues' work is counted in [`Self::adds`]).
    pub syncs: BTreeMap<String, f64>,
    /// `workqueue_adds_total` by queue `name`.
    pub adds: BTreeMap<String, f64>,
}

impl QueueMetrics {
    fn parse(text: &str) -> Self {
        let mut metrics = Self::default();
        for line in text.lines() {
            let Some((name, rest)) = line.split_once('{') else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let Ok(value) = value.trim().parse::<f64>() else {
                continue;
            };
            match name {
                "workqueue_depth" => metrics.depth += value,
                "workqueue_retries_total" => metrics.retries += value,
                "controller_sync_duration_seconds_count" => {
                    if let Some(controller) = prometheus_labels(labels).remove("controller") {
                        *metrics.syncs.entry(controller).or_default() += value;
                    }
                }
                "workqueue_adds_total" => {
                    if let Some(queue) = prometheus_labels(labels).remove("name") {
                        *metrics.adds.entry(queue).or_default() += value;
                    }
                }
                "controller_sync_duration_seconds_bucket" => {
                    let labels = prometheus_labels(labels);
                    let (Some(controller), Some(bound)) =
                        (labels.get("controller"), labels.get("le"))
                    else {
                        continue;
                    };
                    let bound = bound.parse().unwrap_or(f64::INFINITY);
                    metrics
                        .sync_buckets
                        .entry(controller.clone())
                        .or_default()
                        .push((bound, value));
                }
                _ => {}
            }
        }
        for buckets in metrics.sync_buckets.values_mut() {
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        metrics
    }

    /// `syncs` of `controller` between `before` and `self`.
    pub fn syncs_since(&self, before: &QueueMetrics, controller: &str) -> f64 {
        let count = |metrics: &QueueMetrics| metrics.syncs.get(controller).copied().unwrap_or(0.0);
        count(self) - count(before)
    }

    /// `adds` to queue `name` between `before` and `self`.
    pub fn adds_since(&self, before: &QueueMetrics, name: &str) -> f64 {
        let count = |metrics: &QueueMetrics| metrics.adds.get(name).copied().unwrap_or(0.0);
        count(self) - count(before)
    }

    /// The 99th percentile sync duration (the upper bound of the bucket that holds it) of the
    /// syncs between `before` and `self`, in milliseconds, of the controller with the highest;
    /// `None` when no sync ran.
    pub fn sync_p99_ms_since(&self, before: &QueueMetrics) -> Option<f64> {
        self.sync_buckets
            .iter()
            .filter_map(|(controller, buckets)| {
                let earlier = before.sync_buckets.get(controller);
                let counts: Vec<(f64, f64)> = buckets
                    .iter()
                    .map(|&(bound, count)| {
                        let was = earlier
                            .and_then(|e| e.iter().find(|(b, _)| *b == bound))
                            .map_or(0.0, |(_, c)| *c);
                        (bound, count - was)
                    })
                    .collect();
                let total = counts.last()?.1;
                (total > 0.0).then(|| {
                    counts
                        .iter()
                        .find(|(_, cumulative)| *cumulative >= 0.99 * total)
                        .map_or(f64::INFINITY, |(bound, _)| *bound * 1000.0)
                })
            })
            .max_by(f64::total_cmp)
    }
}
