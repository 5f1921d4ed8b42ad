//! Shadow mode (kcm-rs only, `--shadow`): run the controllers beside upstream's on a live
//! cluster, send no write, and report every place the cluster settles differently from what
//! kcm-rs would have done.
//!
//! The seam is the toolkit's write layer: every write a controller decides on is a
//! [`Write`] value handed to an executor. [`Shadow::executor`] gives each controller one that
//! records the write as an *intent* and answers as the server would have ([`answer`]), so the
//! controller goes on exactly as after a real write. Each intent says what the cluster should
//! show ([`compare::expectation_of`]); once the settle window has passed, the intent is judged
//! against the shared informers' caches ([`compare::verdict`]): a match, a decision the
//! cluster moved past (superseded; timing is never a divergence), or a divergence, which is
//! counted, logged and kept for the `/shadow` page.

pub mod answer;
mod cluster;
pub mod compare;
mod report;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use controller_toolkit::writes::{Write, WriteExecutor, WriteVerb};
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

pub use cluster::{CachedObject, ClusterView, metadata_only, whole};
pub use report::{Divergence, Intent, KEPT, ShadowMetrics, ShadowReport};

use crate::{
    answer::answer_for,
    compare::{Expectation, Observed, OwnerChange, OwnerName, Verdict, compared_fields, verdict},
    report::Ledger,
};

/// The settle window when none is given (`--shadow-settle`).
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(5);

/// How often the one-line summary is logged.
const SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// Shadow mode's state, shared by the controllers' executors, the comparison loop and the
/// `/shadow` page. Cheap to clone.
#[derive(Clone)]
pub struct Shadow {
    state: Arc<State>,
}

struct State {
    settle: Duration,
    metrics: ShadowMetrics,
    view: RwLock<Option<Arc<ClusterView>>>,
    pending: Mutex<HashMap<PendingKey, Pending>>,
    ledger: Mutex<Ledger>,
}

/// What one pending intent is checked for: one of each per object, the latest update
/// replacing an earlier one, the first create or delete kept (its age is what counts).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PendingKey {
    resource: String,
    namespace: String,
    name: String,
    check: Check,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Check {
    Spec,
    Status,
    Exists,
    Gone,
}

struct Pending {
    controller: &'static str,
    verb: WriteVerb,
    at: Instant,
    expectation: Expectation,
    /// The owner the decision was made for, and its generation then.
    owner: Option<(OwnerName, Option<i64>)>,
}

impl Shadow {
    /// Shadow mode judging intents once `settle` has passed, counting into `metrics`.
    pub fn new(settle: Duration, metrics: ShadowMetrics) -> Self {
        Self {
            state: Arc::new(State {
                settle,
                metrics,
                view: RwLock::new(None),
                pending: Mutex::new(HashMap::new()),
                ledger: Mutex::new(Ledger::default()),
            }),
        }
    }

    /// The executor for `controller`'s writes: records them, sends nothing.
    pub fn executor(&self, controller: &'static str) -> Arc<dyn WriteExecutor> {
        Arc::new(ShadowExecutor {
            controller,
            state: self.state.clone(),
        })
    }

    /// Compares against `view` from now on (set once the controllers' informers exist).
    pub fn attach(&self, view: ClusterView) {
        *self.state.view.write() = Some(Arc::new(view));
    }

    /// The `/shadow` page.
    pub fn report(&self) -> ShadowReport {
        let pending = self.state.pending.lock().len();
        self.state
            .ledger
            .lock()
            .report(self.state.settle.as_secs_f64(), pending)
    }

    /// Judges the pending intents every fraction of the settle window and logs a summary each
    /// minute, until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) {
        let tick =
            (self.state.settle / 5).clamp(Duration::from_millis(100), Duration::from_secs(1));
        let mut ticks = tokio::time::interval(tick);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut summarized = (Instant::now(), self.totals());
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            self.state.judge(Instant::now());
            if summarized.0.elapsed() >= SUMMARY_EVERY {
                let totals = self.totals();
                let (intents, compared, divergences) = summarized.1;
                tracing::info!(
                    intents = totals.0 - intents,
                    compared = totals.1 - compared,
                    divergences = totals.2 - divergences,
                    pending = self.state.pending.lock().len(),
                    "shadow mode: last minute"
                );
                summarized = (Instant::now(), totals);
            }
        }
    }

    fn totals(&self) -> (u64, u64, u64) {
        let ledger = self.state.ledger.lock();
        (
            ledger.intents_total,
            ledger.compared_total,
            ledger.divergences_total,
        )
    }
}

/// Records a controller's writes instead of sending them.
struct ShadowExecutor {
    controller: &'static str,
    state: Arc<State>,
}

impl WriteExecutor for ShadowExecutor {
    fn execute(&self, write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let answer = answer_for(&write);
        self.state.record(self.controller, &write);
        Box::pin(std::future::ready(answer))
    }
}

impl State {
    /// Counts `write` as an intent and, when it can be compared, keeps it until judged.
    fn record(&self, controller: &'static str, write: &Write) {
        let verb = write.verb.to_string();
        let resource = write.resource.plural.as_str();
        self.metrics
            .intents
            .with_label_values(&[controller, verb.as_str(), resource])
            .inc();
        tracing::debug!(
            controller,
            verb,
            resource,
            object = %format!("{}/{}", write.namespace, write.name),
            reason = write.reason,
            "shadow: write recorded, not sent"
        );
        self.ledger.lock().intent(Intent {
            controller: controller.to_owned(),
            verb,
            status: write.verb == WriteVerb::UpdateStatus,
            resource: resource.to_owned(),
            namespace: write.namespace.clone(),
            name: write.name.clone(),
            reason: write.reason.to_owned(),
            at: Timestamp::now().to_string(),
        });

        let view = self.view.read().clone();
        let expectation = compare::expectation_of(write);
        let check = match (&expectation, &write.verb) {
            (Expectation::NotCompared, _) => return,
            (Expectation::Fields { .. }, WriteVerb::UpdateStatus) => Check::Status,
            (Expectation::Fields { .. }, _) => Check::Spec,
            (Expectation::Exists { .. }, _) => Check::Exists,
            (Expectation::Gone { .. }, _) => Check::Gone,
        };
        let owner = match &expectation {
            Expectation::Exists { owner } => owner.clone(),
            Expectation::Gone { .. } => view
                .as_ref()
                .and_then(|view| view.meta(resource, &write.namespace, &write.name))
                .and_then(|meta| compare::controller_owner_of(&meta)),
            _ => None,
        }
        .map(|owner| {
            let generation = view
                .as_ref()
                .and_then(|view| view.meta(&owner.resource, &write.namespace, &owner.name))
                .and_then(|meta| meta.generation);
            (owner, generation)
        });
        let key = PendingKey {
            resource: resource.to_owned(),
            namespace: write.namespace.clone(),
            name: write.name.clone(),
            check,
        };
        let pending = Pending {
            controller,
            verb: write.verb.clone(),
            at: Instant::now(),
            expectation,
            owner,
        };
        let mut all = self.pending.lock();
        match check {
            Check::Spec | Check::Status => {
                all.insert(key, pending);
            }
            Check::Exists | Check::Gone => {
                all.entry(key).or_insert(pending);
            }
        }
    }

    /// Judges every pending intent as of `now`; drops the judged ones.
    fn judge(&self, now: Instant) {
        let Some(view) = self.view.read().clone() else {
            return;
        };
        let mut found = Vec::new();
        let mut compared = Vec::new();
        self.pending.lock().retain(|key, pending| {
            let age = now.duration_since(pending.at);
            let fields_expected = matches!(pending.expectation, Expectation::Fields { .. });
            // Fields are judged only once settled: before, the verdict is `Wait` whatever the
            // cache holds, so the object's JSON is not built for it.
            if fields_expected && age < self.settle {
                return true;
            }
            let observed = if fields_expected {
                view.get(&key.resource, &key.namespace, &key.name)
                    .map(|object| Observed {
                        fields: compared_fields(&key.resource, &pending.verb, &object.json),
                        ..Observed::of(&object.meta)
                    })
            } else {
                view.meta(&key.resource, &key.namespace, &key.name)
                    .map(|meta| Observed::of(&meta))
            };
            let owner = match &pending.owner {
                None => OwnerChange::Unchanged,
                Some((owner, generation)) => {
                    match view.meta(&owner.resource, &key.namespace, &owner.name) {
                        Some(now) if now.generation == *generation => OwnerChange::Unchanged,
                        _ => OwnerChange::Changed,
                    }
                }
            };
            let inputs_moved = fields_expected
                && view.changed_since(&key.resource, &key.namespace, &key.name, pending.at);
            let judged = verdict(
                &pending.expectation,
                age,
                self.settle,
                observed.as_ref(),
                owner,
                inputs_moved,
            );
            let divergence = |field: &str, kcm_rs: String, cluster: String| Divergence {
                controller: pending.controller.to_owned(),
                resource: key.resource.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                field: field.to_owned(),
                kcm_rs,
                cluster,
                at: Timestamp::now().to_string(),
            };
            let owner_name = pending.owner.as_ref().map(|(owner, _)| owner.name.as_str());
            match judged {
                Verdict::Wait => return true,
                Verdict::Superseded => return false,
                Verdict::Match => {}
                Verdict::Differs(diffs) => found.extend(
                    diffs
                        .into_iter()
                        .map(|diff| divergence(&diff.field, diff.kcm_rs, diff.cluster)),
                ),
                Verdict::NotCreated => {
                    let instead = owner_name
                        .map(|owner| view.owned_by(&key.resource, &key.namespace, owner))
                        .unwrap_or_default();
                    found.push(divergence("created", key.name.clone(), listing(&instead)));
                }
                Verdict::NotDeleted => {
                    let instead = owner_name
                        .map(|owner| {
                            view.deletions()
                                .deleted_since(&key.namespace, owner, pending.at)
                        })
                        .unwrap_or_default();
                    found.push(divergence("deleted", key.name.clone(), listing(&instead)));
                }
            }
            compared.push(pending.controller);
            false
        });
        let mut ledger = self.ledger.lock();
        for controller in compared {
            self.metrics.compared.with_label_values(&[controller]).inc();
            ledger.compared();
        }
        for divergence in found {
            self.metrics
                .divergences
                .with_label_values(&[
                    divergence.controller.as_str(),
                    divergence.resource.as_str(),
                    divergence.field.as_str(),
                ])
                .inc();
            tracing::warn!(
                controller = %divergence.controller,
                resource = %divergence.resource,
                object = %format!("{}/{}", divergence.namespace, divergence.name),
                field = %divergence.field,
                kcm_rs = %divergence.kcm_rs,
                cluster = %divergence.cluster,
                "shadow divergence"
            );
            ledger.divergence(divergence);
        }
    }
}

/// The cluster's side of a `created`/`deleted` divergence: the objects it has (or deleted)
/// instead, or `none`.
fn listing(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(",")
    }
}
