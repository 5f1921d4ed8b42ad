//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules.
//!
//! Validity is judged with the local clock: a lease held by someone else is valid until
//! `lease_duration` after we last *observed it change*, never by comparing the stored renewTime
//! with our clock. Every write is an update carrying the last seen resourceVersion, so two
//! candidates can never both win: the loser gets a 409 and retries later.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use controller_toolkit::events::{EventRecorder, EventType, RecorderConfig};
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{Api, Client, api::PostParams};
use parking_lot::Mutex;
use prometheus::{IntGaugeVec, Opts, Registry};
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::write_fence::LeaseFence;

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

/// Leader election metrics (`leader_election_master_status`, `leader_election_slowpath_total`).
#[derive(Clone)]
pub struct LeaderElectionMetrics {
    master_status: IntGaugeVec,
    slowpath: prometheus::IntCounterVec,
}

impl LeaderElectionMetrics {
    /// Registers both families into `registry`.
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
        registry.register(Box::new(master_status.clone()))?;
        registry.register(Box::new(slowpath.clone()))?;
        Ok(Self {
            master_status,
            slowpath,
        })
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
        Self {
            api,
            config,
            metrics,
            health: LeaseHealth::default(),
            recorder,
            observed: None,
            fence: None,
        }
    }

    /// Keeps `fence` open exactly while this candidate holds the lease by its own clock.
    pub fn with_fence(mut self, fence: LeaseFence) -> Self {
        self.fence = Some(fence);
        self
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
                    self.set_master(true);
                    self.record_transition("became leader");
                    return Campaign::Leading;
                }
                Err(error) => {
                    tracing::debug!(%error, "failed to acquire lease");
                }
            }
            let jitter = rand::rng().random_range(0.0..1.2);
            let wait = self.config.retry_period.mul_f64(1.0 + jitter);
            tokio::select! {
                _ = shutdown.cancelled() => return Campaign::Cancelled,
                _ = tokio::time::sleep(wait) => {}
            }
        }
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

    /// Gives the lease up so a standby takes over at once: holder cleared, duration 1 s.
    pub async fn release(&mut self) -> Result<(), ElectionError> {
        let Some((lease, _)) = self.observed.clone() else {
            return Ok(());
        };
        if !self.holds(&lease) {
            return Ok(());
        }
        let now = MicroTime(Timestamp::now());
        let mut released = lease;
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
        self.close_fence();
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
        let updated = self
            .api
            .replace(&self.config.name, &PostParams::default(), &taken)
            .await?;
        self.observed = Some((updated, Instant::now()));
        Ok(())
    }
}
