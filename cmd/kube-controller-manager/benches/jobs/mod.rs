//! The Job scenarios of the end-to-end bench (issue 41): one Indexed Job of many completions,
//! and many one-pod Jobs, each run to completion and then deleted, measured as the other phases
//! are (see the driver's module doc).
//!
//! Convergence is read cheaply: a watch of the scenario's Jobs (one list, then their events:
//! a few status writes per Job) keeps each Job's condition and counts, so a poll costs nothing
//! until every Job reads Complete; only then are the pods listed, by metadata, in pages of
//! 1,000 that stop at the first pod still holding the tracking finalizer, and at most once a
//! second. A deletion is over when the watch has seen every Job go and a list of one pod (the
//! sim's `limit`) finds none left.

use std::{
    cell::Cell,
    collections::{BTreeMap, HashMap},
    fmt::Write as _,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::bail;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;

use crate::{
    MANAGER_AGENT, Managers, PhaseResult, calls_cell, difference, measure, p99_cell, row_tail,
    support::{api_calls, is_write},
    table_head,
};

/// The finalizer a Job's pods carry until the controller has counted them.
const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The `bench` label value of the Indexed Job and its pods...
const INDEXED: &str = "job-indexed";
/// ...and of the small Jobs and theirs.
const SMALL: &str = "job-small";
/// The small Jobs' creates in flight at once.
const CREATE_CONCURRENCY: usize = 64;
/// Pods listed per page when their finalizers are checked.
const POD_PAGE: u32 = 1000;
/// The least time between two pod scans of one convergence check.
const POD_SCAN_INTERVAL: Duration = Duration::from_secs(1);

/// The Job scenarios' sizes: `--indexed-job-completions`, `--job-parallelism`, `--jobs`,
/// `--job-pod-seconds`, `--job-after-finish-seconds`.
pub struct JobSettings {
    /// The Indexed Job's `completions` (0: no Indexed Job).
    pub indexed_completions: usize,
    /// The Indexed Job's `parallelism`.
    pub parallelism: usize,
    /// One-pod Jobs (0: none).
    pub small_jobs: usize,
    /// Every Job pod's container runs `sh -c 'sleep S; exit 0'`.
    pub pod_seconds: f64,
    /// How long after the Indexed Job's phase the manager's RSS is read again.
    pub after_finish: Duration,
}

impl JobSettings {
    /// The bench's defaults: no Job unless asked; under `cargo test` an Indexed Job of 20
    /// completions, 5 at a time, and 10 small Jobs.
    pub fn new(benchmarking: bool) -> Self {
        Self {
            indexed_completions: if benchmarking { 0 } else { 20 },
            parallelism: if benchmarking { 1000 } else { 5 },
            small_jobs: if benchmarking { 0 } else { 10 },
            pod_seconds: 1.0,
            after_finish: Duration::from_secs(if benchmarking { 10 } else { 1 }),
        }
    }

    /// Refuses sizes the API server would, before anything starts.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.indexed_completions > 0 && self.parallelism == 0 {
            bail!("--job-parallelism must be at least 1");
        }
        for (flag, value) in [
            ("--indexed-job-completions", self.indexed_completions),
            ("--job-parallelism", self.parallelism),
        ] {
            if i32::try_from(value).is_err() {
                bail!("{flag} {value} is more than a Job takes");
            }
        }
        if !self.pod_seconds.is_finite() || self.pod_seconds < 0.0 {
            bail!("--job-pod-seconds must be a number of seconds, 0 or more");
        }
        Ok(())
    }

    /// The pods' container command, as the sim's kubelet follows it.
    fn script(&self) -> String {
        format!("sleep {}; exit 0", self.pod_seconds)
    }
}

/// What a Job phase's figures are counted per: the Indexed Job's pods, or the small Jobs.
#[derive(Clone, Copy, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Pod,
    Job,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Pod => "pod",
            Unit::Job => "Job",
        }
    }
}

/// A Job phase's own figures, beside the common ones of [`PhaseResult`].
#[derive(serde::Serialize)]
pub struct JobFigures {
    /// The Jobs of the phase and the pods it runs or removes.
    pub jobs: usize,
    pub pods: usize,
    /// What the `_per_unit` figures are per (`pods` or `jobs` of them).
    pub per: Unit,
    pub cpu_ms_per_unit: f64,
    /// The manager's writes (create, update, patch, delete; Leases aside), in all and per unit,
    /// and per unit by verb and resource.
    pub writes: u64,
    pub writes_per_unit: f64,
    pub writes_per_unit_by_call: BTreeMap<String, f64>,
    /// The manager's RSS when the phase began.
    pub rss_before_mib: f64,
    /// The Indexed Job's run: the manager a while after it finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_finish: Option<AfterFinish>,
    /// The finished Jobs' status and pods, as checked (a wrong count fails the run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<Checked>,
}

/// The manager after the Indexed Job finished: its pods all terminal and without finalizers.
#[derive(serde::Serialize)]
pub struct AfterFinish {
    /// The wait, counted from the end of the phase's measurement (itself a second after
    /// convergence).
    pub seconds: f64,
    /// `VmRSS` at its end.
    pub rss_mib: f64,
    /// The manager's CPU and requests during the wait.
    pub cpu_seconds: f64,
    pub api_calls: BTreeMap<String, u64>,
}

/// The finished Jobs as read back: the sums over the phase's Jobs.
#[derive(serde::Serialize)]
pub struct Checked {
    pub succeeded: i64,
    pub failed: i64,
    /// The Indexed Job's `status.completedIndexes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_indexes: Option<String>,
    /// The phase's pods, and those of them still holding the tracking finalizer (0).
    pub pods: usize,
    pub pods_with_finalizer: usize,
}

/// The Indexed Job (run, then delete), then the small Jobs (run, then delete), as asked.
pub async fn job_phases(
    settings: &JobSettings,
    client: &Client,
    managers: Managers<'_>,
) -> anyhow::Result<Vec<PhaseResult>> {
    let mut results = Vec::new();
    if settings.indexed_completions > 0 {
        results.extend(indexed_job(settings, client, managers).await?);
    }
    if settings.small_jobs > 0 {
        results.extend(small_jobs(settings, client, managers).await?);
    }
    Ok(results)
}

/// A Job labelled `bench=<bench>` (its pods too), whose pods sleep and succeed, never restarted.
fn job_object(
    name: &str,
    bench: &str,
    completions: usize,
    parallelism: usize,
    indexed: bool,
    script: &str,
) -> serde_json::Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "labels": {"bench": bench}},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "completionMode": if indexed { "Indexed" } else { "NonIndexed" },
            "template": {
                "metadata": {"labels": {"bench": bench}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36",
                        "command": ["sh", "-c", script]}]
                }
            }
        }
    })
}

/// Upstream's form of the indexes `0..n` in `status.completedIndexes`: `0`, `0,1`, `0-(n-1)`.
fn all_indexes(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "0".to_owned(),
        2 => "0,1".to_owned(),
        n => format!("0-{}", n - 1),
    }
}

/// One Indexed Job of `--indexed-job-completions` run to completion, the manager's RSS a while
/// later, the exact counts checked, then the Job deleted.
async fn indexed_job(
    settings: &JobSettings,
    client: &Client,
    managers: Managers<'_>,
) -> anyhow::Result<Vec<PhaseResult>> {
    let (n, parallelism) = (settings.indexed_completions, settings.parallelism);
    let name = "bench-job-indexed";
    let label = format!("Indexed Job {n} completions, parallelism {parallelism}");
    let jobs = JobWatch::start(client, INDEXED).await?;
    let pods = Pods::new(client, INDEXED);
    let object: Job = serde_json::from_value(job_object(
        name,
        INDEXED,
        n,
        parallelism,
        true,
        &settings.script(),
    ))?;
    let api: Api<Job> = Api::namespaced(client.clone(), "default");
    let manager = managers.normal;

    let rss_before = manager.status_mib("VmRSS")?;
    let run = measure(
        &format!("{label}: run"),
        1,
        client,
        managers,
        async {
            api.create(&PostParams::default(), &object).await?;
            Ok(())
        },
        async || finished(&jobs, &pods, 1).await,
    )
    .await?;

    // The second figure: once every pod is terminal and has lost its finalizer, the
    // manager's memory should not hold on to what the run needed.
    let cpu_before = manager.cpu_seconds()?;
    let calls_before = api_calls(client, MANAGER_AGENT).await?;
    let waited = Instant::now();
    tokio::time::sleep(settings.after_finish).await;
    let after_finish = AfterFinish {
        seconds: waited.elapsed().as_secs_f64(),
        rss_mib: manager.status_mib("VmRSS")?,
        cpu_seconds: manager.cpu_seconds()? - cpu_before,
        api_calls: difference(&api_calls(client, MANAGER_AGENT).await?, &calls_before),
    };

    let checked = check(&jobs, &pods, 1, n, Some(&all_indexes(n))).await?;
    let mut run = with_figures(run, 1, n, Unit::Pod, rss_before);
    if let Some(figures) = &mut run.job {
        figures.after_finish = Some(after_finish);
        figures.checked = Some(checked);
    }

    let rss_before = manager.status_mib("VmRSS")?;
    let delete = measure(
        &format!("{label}: delete"),
        1,
        client,
        managers,
        delete_all(&api, INDEXED),
        async || gone(&jobs, &pods).await,
    )
    .await?;
    Ok(vec![run, with_figures(delete, 1, n, Unit::Pod, rss_before)])
}

/// `--jobs` one-pod Jobs created at once and run to completion, their counts checked, then
/// deleted.
async fn small_jobs(
    settings: &JobSettings,
    client: &Client,
    managers: Managers<'_>,
) -> anyhow::Result<Vec<PhaseResult>> {
    let count = settings.small_jobs;
    let label = format!("Jobs {count} x 1 pod");
    let jobs = JobWatch::start(client, SMALL).await?;
    let pods = Pods::new(client, SMALL);
    let script = settings.script();
    let objects = (0..count)
        .map(|i| {
            serde_json::from_value(job_object(
                &format!("bench-job-{i}"),
                SMALL,
                1,
                1,
                false,
                &script,
            ))
        })
        .collect::<Result<Vec<Job>, _>>()?;
    let api: Api<Job> = Api::namespaced(client.clone(), "default");
    let post = PostParams::default();

    let rss_before = managers.normal.status_mib("VmRSS")?;
    let run = measure(
        &format!("{label}: run"),
        count,
        client,
        managers,
        async {
            futures::stream::iter(&objects)
                .map(|object| api.create(&post, object))
                .buffer_unordered(CREATE_CONCURRENCY)
                .try_for_each(|_| async { Ok(()) })
                .await?;
            Ok(())
        },
        async || finished(&jobs, &pods, count).await,
    )
    .await?;
    let checked = check(&jobs, &pods, count, count, None).await?;
    let mut run = with_figures(run, count, count, Unit::Job, rss_before);
    if let Some(figures) = &mut run.job {
        figures.checked = Some(checked);
    }

    let rss_before = managers.normal.status_mib("VmRSS")?;
    let delete = measure(
        &format!("{label}: delete"),
        count,
        client,
        managers,
        delete_all(&api, SMALL),
        async || gone(&jobs, &pods).await,
    )
    .await?;
    Ok(vec![
        run,
        with_figures(delete, count, count, Unit::Job, rss_before),
    ])
}

/// Deletes the scenario's Jobs in one request, their pods by background propagation (kubectl's
/// default; an API delete naming no policy would orphan them, batch/v1's old default).
async fn delete_all(api: &Api<Job>, bench: &str) -> anyhow::Result<()> {
    api.delete_collection(
        &DeleteParams::background(),
        &ListParams::default().labels(&format!("bench={bench}")),
    )
    .await?;
    Ok(())
}

/// `result` with the Job figures of `jobs` Jobs and `pods` pods, counted per `per`.
fn with_figures(
    mut result: PhaseResult,
    jobs: usize,
    pods: usize,
    per: Unit,
    rss_before_mib: f64,
) -> PhaseResult {
    let units = match per {
        Unit::Pod => pods,
        Unit::Job => jobs,
    }
    .max(1) as f64;
    let by_call: BTreeMap<String, u64> = result
        .api_calls
        .iter()
        .filter(|(key, _)| is_write(key))
        .map(|(key, count)| (key.clone(), *count))
        .collect();
    let writes: u64 = by_call.values().sum();
    result.job = Some(JobFigures {
        jobs,
        pods,
        per,
        cpu_ms_per_unit: result.cpu_seconds * 1000.0 / units,
        writes,
        writes_per_unit: writes as f64 / units,
        writes_per_unit_by_call: by_call
            .into_iter()
            .map(|(key, count)| (key, count as f64 / units))
            .collect(),
        rss_before_mib,
        after_finish: None,
        checked: None,
    });
    result
}

/// What the watch knows of one Job.
#[derive(Clone, Default)]
struct JobState {
    complete: bool,
    /// `Failed=True`'s reason and message: a bench Job should never fail.
    failed_condition: Option<String>,
    succeeded: i64,
    failed: i64,
    completed_indexes: Option<String>,
}

impl JobState {
    fn of(job: &Job) -> Self {
        let status = job.status.clone().unwrap_or_default();
        let condition = |kind: &str| {
            status
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == kind && c.status == "True")
        };
        Self {
            complete: condition("Complete").is_some(),
            failed_condition: condition("Failed").map(|c| {
                format!(
                    "{}: {}",
                    c.reason.as_deref().unwrap_or_default(),
                    c.message.as_deref().unwrap_or_default()
                )
            }),
            succeeded: status.succeeded.unwrap_or(0).into(),
            failed: status.failed.unwrap_or(0).into(),
            completed_indexes: status.completed_indexes,
        }
    }
}

/// The Jobs the watch has listed, by name, and those of a re-list in progress.
#[derive(Default)]
struct Jobs {
    listed: bool,
    current: HashMap<String, JobState>,
    relisting: Option<HashMap<String, JobState>>,
}

/// A watch of one scenario's Jobs (`bench=<label>`), kept in memory by a task of its own.
struct JobWatch {
    jobs: Arc<Mutex<Jobs>>,
    task: tokio::task::JoinHandle<()>,
}

impl JobWatch {
    /// Starts the watch and waits for its first list.
    async fn start(client: &Client, bench: &str) -> anyhow::Result<Self> {
        let api: Api<Job> = Api::namespaced(client.clone(), "default");
        let config = watcher::Config::default().labels(&format!("bench={bench}"));
        let jobs = Arc::new(Mutex::new(Jobs::default()));
        let task = tokio::spawn({
            let jobs = jobs.clone();
            async move {
                let mut events = watcher(api, config).default_backoff().boxed();
                while let Some(event) = events.next().await {
                    let Ok(event) = event else { continue };
                    let mut jobs = jobs.lock().expect("jobs");
                    match event {
                        watcher::Event::Init => jobs.relisting = Some(HashMap::new()),
                        watcher::Event::InitApply(job) => {
                            if let (Some(list), Some(name)) =
                                (&mut jobs.relisting, job.metadata.name.clone())
                            {
                                list.insert(name, JobState::of(&job));
                            }
                        }
                        watcher::Event::InitDone => {
                            jobs.current = jobs.relisting.take().unwrap_or_default();
                            jobs.listed = true;
                        }
                        watcher::Event::Apply(job) => {
                            if let Some(name) = job.metadata.name.clone() {
                                jobs.current.insert(name, JobState::of(&job));
                            }
                        }
                        watcher::Event::Delete(job) => {
                            if let Some(name) = &job.metadata.name {
                                jobs.current.remove(name);
                            }
                        }
                    }
                }
            }
        });
        let watch = Self { jobs, task };
        let started = Instant::now();
        while !watch.jobs.lock().expect("jobs").listed {
            if started.elapsed() > Duration::from_secs(60) {
                bail!("the watch of the bench Jobs did not list them within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(watch)
    }

    /// The Jobs as last seen.
    fn snapshot(&self) -> HashMap<String, JobState> {
        self.jobs.lock().expect("jobs").current.clone()
    }

    /// How many Jobs there are, and how many of them are Complete; fails on a Failed one.
    fn progress(&self) -> anyhow::Result<(usize, usize)> {
        let jobs = self.jobs.lock().expect("jobs");
        if let Some((name, why)) = jobs
            .current
            .iter()
            .find_map(|(name, job)| Some((name, job.failed_condition.as_ref()?)))
        {
            bail!("Job {name} failed ({why})");
        }
        let complete = jobs.current.values().filter(|job| job.complete).count();
        Ok((jobs.current.len(), complete))
    }
}

impl Drop for JobWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A scenario's pods (`bench=<label>`), read by metadata in pages.
struct Pods {
    api: Api<Pod>,
    selector: String,
    /// When they were last scanned for finalizers.
    last_scan: Cell<Option<Instant>>,
}

/// How many pods, and how many of them hold the tracking finalizer.
#[derive(Default)]
struct PodScan {
    pods: usize,
    with_finalizer: usize,
}

impl Pods {
    fn new(client: &Client, bench: &str) -> Self {
        Self {
            api: Api::namespaced(client.clone(), "default"),
            selector: format!("bench={bench}"),
            last_scan: Cell::new(None),
        }
    }

    /// Counts the pods and their tracking finalizers, page by page; with `stop_early`, stops
    /// after the first page holding a finalizer (the answer is "not yet" then).
    async fn scan(&self, stop_early: bool) -> anyhow::Result<PodScan> {
        let mut params = ListParams::default().labels(&self.selector).limit(POD_PAGE);
        let mut scan = PodScan::default();
        loop {
            let page = self.api.list_metadata(&params).await?;
            scan.pods += page.items.len();
            scan.with_finalizer += page
                .items
                .iter()
                .filter(|pod| {
                    pod.metadata
                        .finalizers
                        .iter()
                        .flatten()
                        .any(|f| f == JOB_TRACKING_FINALIZER)
                })
                .count();
            if stop_early && scan.with_finalizer > 0 {
                return Ok(scan);
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => return Ok(scan),
            }
        }
    }

    /// Whether any pod is left: a list of one.
    async fn any(&self) -> anyhow::Result<bool> {
        let params = ListParams::default().labels(&self.selector).limit(1);
        Ok(!self.api.list_metadata(&params).await?.items.is_empty())
    }
}

/// The run's convergence: all `count` Jobs Complete (from the watch, free), then every pod
/// without the tracking finalizer (a paged scan, at most once a second).
async fn finished(jobs: &JobWatch, pods: &Pods, count: usize) -> anyhow::Result<bool> {
    let (seen, complete) = jobs.progress()?;
    if seen != count || complete != count {
        return Ok(false);
    }
    if pods
        .last_scan
        .get()
        .is_some_and(|at| at.elapsed() < POD_SCAN_INTERVAL)
    {
        return Ok(false);
    }
    pods.last_scan.set(Some(Instant::now()));
    Ok(pods.scan(true).await?.with_finalizer == 0)
}

/// The deletion's convergence: the watch has seen every Job go, and no pod is left.
async fn gone(jobs: &JobWatch, pods: &Pods) -> anyhow::Result<bool> {
    Ok(jobs.progress()?.0 == 0 && !pods.any().await?)
}

/// The finished scenario read back: `count` Jobs, every one succeeded `completions_each` times
/// and failed none (the Indexed Job's `completedIndexes` being `indexes`), and exactly
/// `pods_expected` pods, none holding the finalizer. A miss is a bug, not a figure: it fails
/// the run.
async fn check(
    jobs: &JobWatch,
    pods: &Pods,
    count: usize,
    pods_expected: usize,
    indexes: Option<&str>,
) -> anyhow::Result<Checked> {
    let each = i64::try_from(pods_expected / count.max(1))?;
    let states = jobs.snapshot();
    if states.len() != count {
        bail!("{} Jobs, not {count}", states.len());
    }
    let mut wrong = Vec::new();
    for (name, job) in &states {
        if job.succeeded != each || job.failed != 0 {
            wrong.push(format!(
                "{name}: succeeded {}, failed {} (want {each} and 0)",
                job.succeeded, job.failed
            ));
        }
        if let Some(want) = indexes
            && job.completed_indexes.as_deref() != Some(want)
        {
            wrong.push(format!(
                "{name}: completedIndexes {:?} (want {want:?})",
                job.completed_indexes
            ));
        }
    }
    let scan = pods.scan(false).await?;
    if scan.pods != pods_expected || scan.with_finalizer != 0 {
        wrong.push(format!(
            "{} pods, {} holding {JOB_TRACKING_FINALIZER} (want {pods_expected} and 0)",
            scan.pods, scan.with_finalizer
        ));
    }
    if !wrong.is_empty() {
        wrong.sort();
        wrong.truncate(10);
        bail!("the finished Jobs are wrong: {}", wrong.join("; "));
    }
    Ok(Checked {
        succeeded: states.values().map(|job| job.succeeded).sum(),
        failed: states.values().map(|job| job.failed).sum(),
        completed_indexes: indexes.and_then(|_| states.values().next()?.completed_indexes.clone()),
        pods: scan.pods,
        pods_with_finalizer: scan.with_finalizer,
    })
}

/// The Job phases' table, each figure per pod (the Indexed Job) or per Job (the small Jobs),
/// then what the Indexed Job left behind and what was checked.
pub fn job_table(results: &[&PhaseResult]) -> String {
    let mut out = table_head(
        results,
        "| phase | Jobs | pods | wall s | manager CPU s | manager CPU ms per unit | manager peak RSS MiB | writes | writes per unit | writes per unit by verb and resource | sync p99 ms | queue depth peak / end |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    );
    let mut notes = String::new();
    for result in results {
        let Some(figures) = &result.job else { continue };
        let unit = figures.per.name();
        let by_call = figures
            .writes_per_unit_by_call
            .iter()
            .map(|(call, per)| format!("{call} {per:.2}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            out,
            "| {} | {} | {} | {:.1} | {:.2} | {:.2} per {unit} | {:.1} | {} | {:.2} per {unit} | {} | {} | {} / {} |",
            result.phase,
            figures.jobs,
            figures.pods,
            result.wall_seconds,
            result.cpu_seconds,
            figures.cpu_ms_per_unit,
            result.peak_rss_mib,
            figures.writes,
            figures.writes_per_unit,
            if by_call.is_empty() { "-" } else { &by_call },
            p99_cell(result),
            result.queue_depth_peak,
            result.queue_depth_end,
        );
        row_tail(&mut out, result);
        if let Some(after) = &figures.after_finish {
            let _ = write!(
                notes,
                "\n{}: {:.1} s after it ended, every pod terminal and without its finalizer: manager RSS {:.1} MiB (before the Job {:.1} MiB, peak while it ran {:.1} MiB), manager CPU {:.2} s in that wait, requests: {}.\n",
                result.phase,
                after.seconds,
                after.rss_mib,
                figures.rss_before_mib,
                result.peak_rss_mib,
                after.cpu_seconds,
                if after.api_calls.is_empty() {
                    "none".to_owned()
                } else {
                    calls_cell(&after.api_calls, &BTreeMap::new())
                },
            );
        }
        if let Some(checked) = &figures.checked {
            let _ = write!(
                notes,
                "\n{}: checked: succeeded {}, failed {}{}, {} pods, {} holding `{JOB_TRACKING_FINALIZER}`.\n",
                result.phase,
                checked.succeeded,
                checked.failed,
                checked
                    .completed_indexes
                    .as_ref()
                    .map(|indexes| format!(", completedIndexes `{indexes}`"))
                    .unwrap_or_default(),
                checked.pods,
                checked.pods_with_finalizer,
            );
        }
    }
    out.push_str(&notes);
    out
}
