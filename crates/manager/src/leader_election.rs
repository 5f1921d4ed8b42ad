//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules.
//!
//! Validity is judged with the local clock: a lease held by someone else is valid until
//! `lease_duration` after we last *observed it change*, never by comparing the stored renewTime
//! with our clock. Every write is an update carrying the last seen resourceVersion, so two
//! candidates can never both win: the loser gets a 409 and retries later.
//!
//! A warm standby (kcm-rs, `--leader-elect-warm-standby`) also watches its Lease
//! ([`LeaderElector::watch_lease`]): it tries again as soon as the Lease changes (a release on
//! SIGTERM) and at the very instant the holder's lease expires by its clock, instead of at the
//! next retry period, which alone added up to 2.2 retry periods to a handover. The rules above
//! are unchanged: the watch only decides when to try.
//!
//! A leader that gives the Lease up (SIGTERM) hands its successor, in the same write, the
//! versions its caches must reach before it acts ([`HANDOVER_ANNOTATION`], kcm-rs only, with
//! `--leader-elect-warm-standby`): per resource, the highest version the leader's writes
//! returned or its decisions read (see `informer::barrier`). A candidate takes them only from
//! a Lease with no holder, which only a release leaves, and removes them in the write that
//! takes the Lease, so a later successor never reads stale ones.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt;
use informer::HandedOver;

use controller_toolkit::{
    events::{EventRecorder, EventType, RecorderConfig},
    write_watermarks::Watermarks,
};
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api, Client,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use parking_lot::Mutex;
use prometheus::{HistogramVec, IntGaugeVec, Opts, Registry};
use rand::Rng;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};
use workqueue::{histogram_vec, registered};

use crate::write_fence::LeaseFence;

/// The annotation a leader that gives its Lease up leaves on it for its successor: a JSON
/// object of resource (`pods`) to the resourceVersion the successor's cache of it must reach
/// before it acts. kcm-rs only, with `--leader-elect-warm-standby`.
pub const HANDOVER_ANNOTATION: &str = "kcm-rs.io/handover-resource-versions";

/// Says, when the leader gives the Lease up, what its successor's caches must reach.
pub type HandoverSource = Box<dyn Fn() -> HandedOver + Send + Sync>;

/// Lease timings and identity.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// Lease namespace.
    pub namespace: String,
    /// Lease name (also the `name` label of `leader_election_master_status`).
    pub name: String,
    /// This candidate's identity: hostname plus a unique suffix.
    pub identity: String,
    /// How long a lease stays valid after its last observed change.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up.
    pub renew_deadline: Duration,
    /// Pause between attempts.
    pub retry_period: Duration,
    /// Whether leadership changes are recorded as `LeaderElection` events on the Lease (as
    /// upstream); shadow mode writes nothing but its Lease, so it only logs them.
    pub record_events: bool,
}

impl LeaderElectionConfig {
    /// Upstream's identity: `<hostname>_<random UUID>`.
    pub fn default_identity() -> String {
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        format!("{host}_{}", uuid::Uuid::new_v4())
    }
}

/// Buckets of the handover histograms, in seconds: 10 ms to 2 minutes (a cold start at
/// 10,000 Deployments lists for tens of seconds).
const HANDOVER_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];

/// Leader election metrics: upstream's (`leader_election_master_status`,
/// `leader_election_slowpath_total`) and kcm-rs's of a handover
/// (`leader_election_standby_cache_synced`, `leader_election_read_barrier_duration_seconds`,
/// `leader_election_acquire_to_first_sync_seconds`).
#[derive(Clone)]
pub struct LeaderElectionMetrics {
    master_status: IntGaugeVec,
    slowpath: prometheus::IntCounterVec,
    standby_cache_synced: IntGaugeVec,
    read_barrier: HistogramVec,
    first_sync: HistogramVec,
}

/// How a new leader's caches came to be: built while standing by, or after winning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// `--leader-elect-warm-standby`: synced before the Lease was won.
    Warm,
    /// Built after the Lease was won (upstream's way).
    Cold,
}

impl Start {
    fn label(self) -> &'static str {
        match self {
            Start::Warm => "warm",
            Start::Cold => "cold",
        }
    }
}

impl LeaderElectionMetrics {
    /// Registers every family into `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let master_status = IntGaugeVec::new(
            Opts::new(
                "leader_election_master_status",
                "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ),
            &["name"],
        )?;
        let slowpath = prometheus::IntCounterVec::new(
            Opts::new(
                "leader_election_slowpath_total",
                "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
            ),
            &["name"],
        )?;
        let standby_cache_synced = IntGaugeVec::new(
            Opts::new(
                "leader_election_standby_cache_synced",
                "Whether this process's informer caches were built and synced ahead of leadership (kcm-rs, --leader-elect-warm-standby): 1 once a warm standby's caches have synced, and from then on; 0 before, and always without the flag.",
            ),
            &["name"],
        )?;
        let read_barrier = histogram_vec(
            "leader_election_read_barrier_duration_seconds",
            "Time a warm standby that won the lease waited until its caches held every write made before (kcm-rs).",
            HANDOVER_BUCKETS,
            &["name"],
        )?;
        let first_sync = histogram_vec(
            "leader_election_acquire_to_first_sync_seconds",
            "Time from winning the lease to the first sync of any controller (kcm-rs), by start: warm (caches synced while standing by) or cold (built after winning).",
            HANDOVER_BUCKETS,
            &["name", "start"],
        )?;
        Ok(Self {
            master_status: registered(registry, master_status)?,
            slowpath: registered(registry, slowpath)?,
            standby_cache_synced: registered(registry, standby_cache_synced)?,
            read_barrier: registered(registry, read_barrier)?,
            first_sync: registered(registry, first_sync)?,
        })
    }

    /// `leader_election_standby_cache_synced` of Lease `name`.
    pub fn set_standby_cache_synced(&self, name: &str, synced: bool) {
        self.standby_cache_synced
            .with_label_values(&[name])
            .set(i64::from(synced));
    }

    /// Observes how long the read barrier of Lease `name` took.
    pub fn observe_read_barrier(&self, name: &str, waited: Duration) {
        self.read_barrier
            .with_label_values(&[name])
            .observe(waited.as_secs_f64());
    }

    /// Observes the time from winning Lease `name` to the first sync.
    pub fn observe_first_sync(&self, name: &str, start: Start, after: Duration) {
        self.first_sync
            .with_label_values(&[name, start.label()])
            .observe(after.as_secs_f64());
    }
}

/// What a failed acquire or renew attempt ran into.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    /// The lease is held by another, still valid holder.
    #[error("lease is held by {0} and has not yet expired")]
    HeldByOther(String),
    /// The API call failed (including conflicts).
    #[error("lease API call failed: {0}")]
    Api(#[from] kube::Error),
}

/// The `leaderElection` health check's view: when this process last renewed while leading.
#[derive(Clone, Default)]
pub struct LeaseHealth {
    last_renewal_while_leading: Arc<Mutex<Option<Instant>>>,
}

impl LeaseHealth {
    /// Fails only when we believe we lead and our last renewal is older than `stale_after`
    /// (upstream: lease duration + 20 s). Non-leaders always pass.
    pub fn check(&self, stale_after: Duration) -> Result<(), String> {
        match *self.last_renewal_while_leading.lock() {
            Some(renewed) if renewed.elapsed() > stale_after => Err(format!(
                "failed election to renew leadership on lease: last renewal {:?} ago",
                renewed.elapsed()
            )),
            _ => Ok(()),
        }
    }

    fn record(&self, leading: bool) {
        *self.last_renewal_while_leading.lock() = leading.then(Instant::now);
    }
}

/// How long after the observed expiry a watching standby tries: past the instant, so that the
/// attempt finds the lease expired.
const EXPIRY_MARGIN: Duration = Duration::from_millis(10);

/// How long a campaign waits before its next attempt: the jittered `retry` period or, for a
/// standby that watches the Lease, until just past the holder's expiry (`until_expiry` from
/// now), whichever comes first.
fn next_attempt_in(retry: Duration, until_expiry: Option<Duration>) -> Duration {
    match until_expiry {
        Some(left) => retry.min(left + EXPIRY_MARGIN),
        None => retry,
    }
}

/// Resolves when the watched Lease changed; never without a watch.
async fn lease_changed(changes: &Option<(Arc<Notify>, DropGuard)>) {
    match changes {
        Some((changed, _)) => changed.notified().await,
        None => std::future::pending().await,
    }
}

/// Event reason upstream records on the Lease when leadership changes hands.
pub const LEADER_ELECTION_REASON: &str = "LeaderElection";

/// Runs the election for one candidate.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    metrics: LeaderElectionMetrics,
    health: LeaseHealth,
    recorder: EventRecorder,
    /// The last lease record we read or wrote, and when we saw it change.
    observed: Option<(Lease, Instant)>,
    /// Opened by each successful acquire or renew, closed when leadership ends.
    fence: Option<LeaseFence>,
    /// With a warm standby: woken on every change of the Lease (the watch stops when the
    /// elector is dropped).
    lease_changes: Option<(Arc<Notify>, DropGuard)>,
    /// What a release hands the successor (a warm standby's leader); none: nothing.
    handover: Option<HandoverSource>,
    /// What the previous leader handed over when we took the Lease from its release.
    handed_over: HandedOver,
}

/// The result of waiting for leadership.
#[derive(Debug, PartialEq, Eq)]
pub enum Campaign {
    /// We hold the lease.
    Leading,
    /// Shutdown was requested before we became leader.
    Cancelled,
}

impl LeaderElector {
    /// A candidate using `client` for the Lease API.
    pub fn new(
        client: Client,
        config: LeaderElectionConfig,
        metrics: LeaderElectionMetrics,
    ) -> Self {
        let recorder = EventRecorder::start(
            client.clone(),
            RecorderConfig::new("kube-controller-manager"),
        );
        let api = Api::namespaced(client, &config.namespace);
        metrics
            .master_status
            .with_label_values(&[&config.name])
            .set(0);
        metrics.set_standby_cache_synced(&config.name, false);
        Self {
            api,
            config,
            metrics,
            health: LeaseHealth::default(),
            recorder,
            observed: None,
            fence: None,
            lease_changes: None,
            handover: None,
            handed_over: HandedOver::new(),
        }
    }

    /// Watches the Lease (a warm standby): [`acquire`](Self::acquire) then tries again as soon
    /// as it changes, and at the instant the holder's lease expires by this process's clock.
    /// Must be called inside a tokio runtime.
    pub fn watch_lease(mut self) -> Self {
        let changed = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", self.config.name));
        let mut events = watcher(self.api.clone(), config).default_backoff().boxed();
        let (notify, stopped) = (changed.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stopped.cancelled() => return,
                    event = events.next() => match event {
                        Some(Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone)) => {
                            notify.notify_one();
                        }
                        Some(Ok(_)) => {}
                        Some(Err(error)) => tracing::debug!(%error, "watching the lease failed; retrying"),
                        None => return,
                    },
                }
            }
        });
        self.lease_changes = Some((changed, stop.drop_guard()));
        self
    }

    /// Keeps `fence` open exactly while this candidate holds the lease by its own clock.
    pub fn with_fence(mut self, fence: LeaseFence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Hands the successor what `source` says when the Lease is given up
    /// ([`HANDOVER_ANNOTATION`]).
    pub fn with_handover(mut self, source: HandoverSource) -> Self {
        self.handover = Some(source);
        self
    }

    /// What the previous leader handed over, if we took the Lease from its release (empty
    /// otherwise: after a crash, or from a leader that hands nothing over).
    pub fn take_handed_over(&mut self) -> HandedOver {
        std::mem::take(&mut self.handed_over)
    }

    fn close_fence(&self) {
        if let Some(fence) = &self.fence {
            fence.close();
        }
    }

    /// A handle for the `leaderElection` health check.
    pub fn lease_health(&self) -> LeaseHealth {
        self.health.clone()
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// Tries every retry period (jittered by up to 120%, as client-go) until we lead or
    /// `shutdown` fires.
    pub async fn acquire(&mut self, shutdown: &CancellationToken) -> Campaign {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(()) => {
                    tracing::info!(identity = %self.config.identity, lease = %self.config.name, "successfully acquired lease");
                    // The leader renews on its own schedule; the watch was for campaigning.
                    self.lease_changes = None;
                    self.set_master(true);
                    self.record_transition("became leader");
                    return Campaign::Leading;
                }
                Err(error) => {
                    tracing::debug!(%error, "failed to acquire lease");
                }
            }
            let jitter = rand::rng().random_range(0.0..1.2);
            let retry = self.config.retry_period.mul_f64(1.0 + jitter);
            let until_expiry = self
                .lease_changes
                .as_ref()
                .and(self.observed_expiry())
                .map(|expiry| expiry.saturating_duration_since(Instant::now()));
            let wait = next_attempt_in(retry, until_expiry);
            tokio::select! {
                _ = shutdown.cancelled() => return Campaign::Cancelled,
                _ = tokio::time::sleep(wait) => {}
                _ = lease_changed(&self.lease_changes) => {}
            }
        }
    }

    /// When the lease we last observed expires by our clock (its holder's, not ours).
    fn observed_expiry(&self) -> Option<Instant> {
        let (lease, observed_at) = self.observed.as_ref()?;
        let seconds = lease.spec.as_ref()?.lease_duration_seconds?;
        Some(*observed_at + Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
    }

    /// Renews every retry period until `stop` fires (returns `true`) or renewal has failed
    /// for longer than the renew deadline (returns `false`: leadership is lost).
    pub async fn keep_renewing(&mut self, stop: &CancellationToken) -> bool {
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return true,
                _ = tokio::time::sleep(self.config.retry_period) => {}
            }
            match tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew())
                .await
            {
                Ok(Ok(())) => {
                    last_renewed = Instant::now();
                    self.health.record(true);
                }
                Ok(Err(error)) => tracing::warn!(%error, "failed to renew lease"),
                Err(_) => tracing::warn!("renewing the lease timed out"),
            }
            if last_renewed.elapsed() > self.config.renew_deadline {
                tracing::error!(lease = %self.config.name, "leaderelection lost");
                self.close_fence();
                self.set_master(false);
                self.record_transition("stopped leading");
                self.recorder.flush().await;
                return false;
            }
        }
    }

    /// Gives the lease up so a standby takes over at once: holder cleared, duration 1 s, and
    /// what the successor must have seen ([`LeaderElector::with_handover`]). The fence closes
    /// first, so no write of ours starts after the handover is read.
    pub async fn release(&mut self) -> Result<(), ElectionError> {
        let Some((lease, _)) = self.observed.clone() else {
            return Ok(());
        };
        if !self.holds(&lease) {
            return Ok(());
        }
        self.close_fence();
        let now = MicroTime(Timestamp::now());
        let mut released = lease;
        if let Some(source) = &self.handover {
            let versions: BTreeMap<String, String> = source()
                .into_iter()
                .map(|(resource, version)| (resource, version.to_string()))
                .collect();
            let text = serde_json::to_string(&versions).unwrap_or_default();
            released
                .metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(HANDOVER_ANNOTATION.to_string(), text);
        }
        let spec = released.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        let updated = self
            .api
            .replace(&self.config.name, &PostParams::default(), &released)
            .await?;
        self.observed = Some((updated, Instant::now()));
        self.set_master(false);
        self.record_transition("stopped leading");
        self.recorder.flush().await;
        tracing::info!(lease = %self.config.name, "released lease");
        Ok(())
    }

    /// Upstream's `LeaderElection` event on the Lease: `<identity> became leader` /
    /// `<identity> stopped leading`.
    fn record_transition(&self, what: &str) {
        if !self.config.record_events {
            return;
        }
        if let Some((lease, _)) = &self.observed {
            self.recorder.record(
                lease,
                EventType::Normal,
                LEADER_ELECTION_REASON,
                format!("{} {what}", self.config.identity),
            );
        }
    }

    fn set_master(&self, leading: bool) {
        self.health.record(leading);
        self.metrics
            .master_status
            .with_label_values(&[&self.config.name])
            .set(i64::from(leading));
    }

    fn holds(&self, lease: &Lease) -> bool {
        lease
            .spec
            .as_ref()
            .and_then(|spec| spec.holder_identity.as_deref())
            == Some(self.config.identity.as_str())
    }

    fn lease_spec(&self, previous: Option<&LeaseSpec>, now: &MicroTime) -> LeaseSpec {
        let holder_changed = previous.and_then(|spec| spec.holder_identity.as_deref())
            != Some(self.config.identity.as_str());
        let transitions = previous
            .and_then(|spec| spec.lease_transitions)
            .unwrap_or(0);
        let has_holder = previous
            .and_then(|spec| spec.holder_identity.as_deref())
            .is_some_and(|holder| !holder.is_empty());
        LeaseSpec {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(
                i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX),
            ),
            acquire_time: if holder_changed {
                Some(now.clone())
            } else {
                previous.and_then(|spec| spec.acquire_time.clone())
            },
            renew_time: Some(now.clone()),
            lease_transitions: Some(if holder_changed && has_holder {
                transitions + 1
            } else {
                transitions
            }),
            ..LeaseSpec::default()
        }
    }

    /// One attempt; a success keeps the write fence open for the renew deadline from the
    /// moment the attempt started.
    async fn try_acquire_or_renew(&mut self) -> Result<(), ElectionError> {
        let attempt_started = Instant::now();
        self.acquire_or_renew().await?;
        if let Some(fence) = &self.fence {
            fence.extend(attempt_started, self.config.renew_deadline);
        }
        Ok(())
    }

    /// Fast path (we lead and our view is fresh: update directly), else the slow path (GET,
    /// create if missing, refuse if another valid holder, update otherwise).
    async fn acquire_or_renew(&mut self) -> Result<(), ElectionError> {
        let now = MicroTime(Timestamp::now());
        if let Some((lease, observed_at)) = self.observed.clone()
            && self.holds(&lease)
            && observed_at.elapsed() < self.config.lease_duration
        {
            let mut renewed = lease.clone();
            renewed.spec = Some(self.lease_spec(lease.spec.as_ref(), &now));
            if let Ok(updated) = self
                .api
                .replace(&self.config.name, &PostParams::default(), &renewed)
                .await
            {
                self.observed = Some((updated, Instant::now()));
                return Ok(());
            }
            self.metrics
                .slowpath
                .with_label_values(&[&self.config.name])
                .inc();
        }
        let Some(current) = self.api.get_opt(&self.config.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.lease_spec(None, &now)),
            };
            let created = self.api.create(&PostParams::default(), &lease).await?;
            self.observed = Some((created, Instant::now()));
            return Ok(());
        };
        // Remember when the record last changed, by our clock.
        let changed = match &self.observed {
            Some((seen, _)) => seen.spec != current.spec,
            None => true,
        };
        if changed {
            self.observed = Some((current.clone(), Instant::now()));
        }
        let holder = current
            .spec
            .as_ref()
            .and_then(|spec| spec.holder_identity.clone())
            .unwrap_or_default();
        let duration = current
            .spec
            .as_ref()
            .and_then(|spec| spec.lease_duration_seconds)
            .map(|seconds| Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
            .unwrap_or(self.config.lease_duration);
        let observed_at = self
            .observed
            .as_ref()
            .map(|(_, at)| *at)
            .unwrap_or_else(Instant::now);
        if !holder.is_empty() && holder != self.config.identity && observed_at.elapsed() < duration
        {
            return Err(ElectionError::HeldByOther(holder));
        }
        let mut taken = current.clone();
        taken.spec = Some(self.lease_spec(current.spec.as_ref(), &now));
        let handover = taken
            .metadata
            .annotations
            .as_mut()
            .and_then(|annotations| annotations.remove(HANDOVER_ANNOTATION));
        let updated = self
            .api
            .replace(&self.config.name, &PostParams::default(), &taken)
            .await?;
        self.observed = Some((updated, Instant::now()));
        if holder.is_empty() {
            self.handed_over = handover.as_deref().map(parse_handover).unwrap_or_default();
        }
        Ok(())
    }
}

/// What a leader hands over: per resource, the higher of the last change its cache took in
/// (`seen`) and the highest version its writes returned (`written.settled`); a resource with a
/// write in flight or of unknown outcome (`written.unsettled`) is left out, so the successor
/// reads its version itself.
pub fn handover_versions(seen: HandedOver, written: Watermarks) -> HandedOver {
    let mut versions = seen;
    for (resource, version) in written.settled {
        let highest = versions.entry(resource).or_insert(version);
        *highest = (*highest).max(version);
    }
    versions.retain(|resource, _| !written.unsettled.contains(resource));
    versions
}

/// The versions a [`HANDOVER_ANNOTATION`] names; entries that are not integers are left out
/// (the successor then reads that resource's version itself), and so is all of it when it is
/// not a JSON object of strings.
pub fn parse_handover(text: &str) -> HandedOver {
    serde_json::from_str::<BTreeMap<String, String>>(text)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(resource, version)| Some((resource, version.parse().ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(entries: &[(&str, u64)]) -> BTreeMap<String, u64> {
        entries
            .iter()
            .map(|(resource, version)| (resource.to_string(), *version))
            .collect()
    }

    #[test]
    fn a_handover_names_per_resource_the_higher_of_what_was_seen_and_written() {
        // (last changes seen, versions written, resources unsettled, handed over)
        type Versions = &'static [(&'static str, u64)];
        let cases: [(Versions, Versions, &[&str], Versions); 5] = [
            (
                &[("pods", 10), ("nodes", 3)],
                &[],
                &[],
                &[("nodes", 3), ("pods", 10)],
            ),
            (&[("pods", 10)], &[("pods", 12)], &[], &[("pods", 12)]),
            (&[("pods", 10)], &[("pods", 8)], &[], &[("pods", 10)]),
            (&[], &[("replicasets", 7)], &[], &[("replicasets", 7)]),
            (
                &[("pods", 10), ("replicasets", 4)],
                &[("replicasets", 9)],
                &["pods"],
                &[("replicasets", 9)],
            ),
        ];
        for (seen, written, unsettled, want) in cases {
            let written = Watermarks {
                settled: versions(written),
                unsettled: unsettled.iter().map(|r| r.to_string()).collect(),
            };
            assert_eq!(
                handover_versions(versions(seen), written.clone()),
                versions(want),
                "{seen:?} {written:?}"
            );
        }
    }

    #[test]
    fn a_handover_annotation_is_read_for_its_integer_versions_only() {
        let cases: [(&str, &[(&str, u64)]); 5] = [
            (
                r#"{"pods":"41","replicasets":"7"}"#,
                &[("pods", 41), ("replicasets", 7)],
            ),
            (r#"{"pods":"41","nodes":"opaque"}"#, &[("pods", 41)]),
            (r#"{}"#, &[]),
            (r#"{"pods":41}"#, &[]),
            ("not json", &[]),
        ];
        for (text, want) in cases {
            assert_eq!(parse_handover(text), versions(want), "{text}");
        }
    }

    #[test]
    fn a_watching_standby_tries_at_the_holders_expiry_if_that_comes_first() {
        let seconds = Duration::from_secs;
        // (retry period drawn, time left until the observed holder's expiry, wait)
        let cases = [
            (seconds(3), None, seconds(3)),
            (seconds(3), Some(seconds(1)), seconds(1) + EXPIRY_MARGIN),
            (seconds(3), Some(seconds(5)), seconds(3)),
            (seconds(3), Some(Duration::ZERO), EXPIRY_MARGIN),
        ];
        for (retry, until_expiry, want) in cases {
            assert_eq!(
                next_attempt_in(retry, until_expiry),
                want,
                "{retry:?} {until_expiry:?}"
            );
        }
    }
}
