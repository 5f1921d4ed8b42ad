//! Shadow mode (kcm-rs only, `--shadow`): run the controllers beside upstream's on a live
//! cluster, send no write, and report every place the cluster settles differently from what
//! kcm-rs would have done.
//!
//! Shadow mode knows the controllers only through their descriptors: each declares the kinds
//! it writes as [`ComparedKind`]s (the fields compared, how the objects it creates are
//! recognized, which cache holds them), merged by resource into one [`Catalog`]; it depends on
//! no controller crate.
//!
//! The seam is the toolkit's write layer: every write a controller decides on is a
//! [`Write`] value handed to an executor. [`Shadow::executor`] gives each controller one that
//! records the write as an *intent* and answers as the server would have ([`answer`]), so the
//! controller goes on exactly as after a real write. Each intent says what the cluster should
//! show ([`compare::decision_of`]); the created objects are recognized by identity
//! ([`identity`]). Once the settle window has passed, the intent is judged against the shared
//! informers' caches and what their watches delivered meanwhile ([`compare::verdict`]): a
//! match, a decision the cluster moved past (superseded; timing is never a divergence), an
//! object not compared (its namespace is being deleted, its owner is gone), or a divergence of
//! a [`compare::Kind`], which is counted, logged and kept for the `/shadow` page.

pub mod answer;
pub mod catalog;
mod cluster;
pub mod compare;
pub mod identity;
mod report;

use std::{
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use controller_toolkit::{
    shadow_view::{ComparedKind, DependentsMatch},
    writes::{self, Write, WriteExecutor, WriteVerb},
};
use futures::future::BoxFuture;
use k8s_openapi::jiff::Timestamp;
use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

pub use catalog::Catalog;
pub use cluster::ClusterView;
pub use report::{Divergence, Intent, KEPT, ShadowMetrics, ShadowReport};

use crate::{
    answer::answer_for,
    cluster::{Change, ObjectFacts, owner_key},
    compare::{
        Expectation, Facts, Kind, Observed, OwnerName, OwnerState, Verdict, compared_fields,
        verdict,
    },
    identity::{Found, Identity, Rule},
    report::Ledger,
};

/// How long what the watch delivered and what kcm-rs decided are remembered, for a settle
/// window of `settle`: a decision is judged at the latest a settle window (and a tick) after
/// it, against what happened since a settle window before it; twice that is kept, and 20 s at
/// least.
pub fn keep(settle: Duration) -> Duration {
    (settle * 4).max(Duration::from_secs(20))
}

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
    /// What is compared, and how created objects are recognized.
    catalog: Catalog,
    view: RwLock<Option<Arc<ClusterView>>>,
    pending: Mutex<HashMap<PendingKey, Pending>>,
    /// Numbers the creates of generated names, each pending on its own.
    generated: AtomicU64,
    /// kcm-rs's recent creates of generated names and deletes, by owner: its side of a count
    /// or a ranking.
    decided: Mutex<Decided>,
    /// When each divergence was last reported, so that each is reported once: the same
    /// difference decided on again (a create's replicas, then the scale kcm-rs would make) within
    /// the watch log's window, and a difference about a whole owner (a count, a ranking) within
    /// a settle window (the decisions of one sync).
    reported: Mutex<HashMap<String, Instant>>,
    ledger: Mutex<Ledger>,
}

/// What one pending intent is checked for: one of each per object, the latest update
/// replacing an earlier one, the first create or delete kept (its age is what counts); each
/// create of a generated name on its own (`seq`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PendingKey {
    resource: String,
    namespace: String,
    name: String,
    check: Check,
    seq: u64,
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
    /// When the sync that decided it started ([`writes::sync_started`]), else `at`: a creation
    /// the watch log shows before then was in the cache the decision read, so was counted by
    /// it and cannot answer one of its creates by count; one logged later may.
    decided_from: Instant,
    expectation: Expectation,
    /// The owner the decision was made for, and its generation then.
    owner: Option<(OwnerName, Option<i64>)>,
}

/// kcm-rs's recent creates ([`Check::Exists`]) or deletes ([`Check::Gone`]) of one owner's
/// objects, by [`owner_key`]: names and when, oldest first.
#[derive(Default)]
struct Decided {
    by_owner: HashMap<(Check, String), Vec<(String, Instant)>>,
    pruned: Option<Instant>,
}

impl Decided {
    fn record(&mut self, owner: (Check, String), name: &str, at: Instant, keep: Duration) {
        if self
            .pruned
            .is_none_or(|pruned| at.duration_since(pruned) > keep)
        {
            self.by_owner.retain(|_, decided| {
                decided.retain(|(_, when)| at.duration_since(*when) <= keep);
                !decided.is_empty()
            });
            self.pruned = Some(at);
        }
        self.by_owner
            .entry(owner)
            .or_default()
            .push((name.to_owned(), at));
    }

    /// The names decided on for `owner` at or after `since`, in the order decided.
    fn since(&self, owner: &(Check, String), since: Instant) -> Vec<String> {
        self.by_owner
            .get(owner)
            .into_iter()
            .flatten()
            .filter(|(_, at)| *at >= since)
            .map(|(name, _)| name.clone())
            .collect()
    }
}

/// A judged intent, to be counted and reported.
struct Outcome {
    key: PendingKey,
    controller: &'static str,
    at: Instant,
    decided_from: Instant,
    owner: Option<OwnerName>,
    verdict: Verdict,
}

impl Shadow {
    /// Shadow mode comparing the writes to `kinds` (the enabled controllers' declarations),
    /// judging intents once `settle` has passed, counting into `metrics`.
    pub fn new(settle: Duration, metrics: ShadowMetrics, kinds: &[ComparedKind]) -> Self {
        Self {
            state: Arc::new(State {
                settle,
                metrics,
                catalog: Catalog::new(kinds),
                view: RwLock::new(None),
                pending: Mutex::new(HashMap::new()),
                generated: AtomicU64::new(0),
                decided: Mutex::new(Decided::default()),
                reported: Mutex::new(HashMap::new()),
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
    /// How long kcm-rs's own decisions are remembered: as long as the watch log ([`keep`]).
    fn keep(&self) -> Duration {
        keep(self.settle)
    }

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
        let decision = compare::decision_of(&self.catalog, write);
        let check = match (&decision.expectation, &write.verb) {
            (Expectation::NotCompared, _) => return,
            (Expectation::Fields { .. }, WriteVerb::UpdateStatus) => Check::Status,
            (Expectation::Fields { .. }, _) => Check::Spec,
            (Expectation::Created { .. }, _) => Check::Exists,
            (Expectation::Gone { .. }, _) => Check::Gone,
        };
        let mut expectation = decision.expectation;
        if let Expectation::Gone { node, .. } = &mut expectation {
            *node = view
                .as_ref()
                .and_then(|view| view.pod_node(resource, &write.namespace, &write.name));
        }
        let owner = match check {
            Check::Gone => view
                .as_ref()
                .and_then(|view| view.meta(resource, &write.namespace, &write.name))
                .and_then(|meta| compare::controller_owner_of(&self.catalog, &meta)),
            _ => decision.owner,
        };
        let at = Instant::now();
        let generated = matches!(
            expectation,
            Expectation::Created {
                identity: Identity::Count,
                ..
            }
        );
        if let Some(owner) = owner.as_ref().filter(|_| generated || check == Check::Gone) {
            self.decided.lock().record(
                (check, owner_key(resource, &write.namespace, owner)),
                &write.name,
                at,
                self.keep(),
            );
        }
        let owner = owner.map(|owner| {
            let generation = view
                .as_ref()
                .and_then(|view| view.facts(&owner.resource, &write.namespace, &owner.name))
                .and_then(|facts| facts.generation);
            (owner, generation)
        });
        let key = PendingKey {
            resource: resource.to_owned(),
            namespace: write.namespace.clone(),
            name: write.name.clone(),
            check,
            seq: if generated {
                self.generated.fetch_add(1, Ordering::Relaxed)
            } else {
                0
            },
        };
        let pending = Pending {
            controller,
            verb: write.verb.clone(),
            at,
            decided_from: writes::sync_started().unwrap_or(at),
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

    /// Judges every pending intent as of `now`; drops the judged ones and reports them.
    fn judge(&self, now: Instant) {
        let Some(view) = self.view.read().clone() else {
            return;
        };
        let mut judged = Vec::new();
        self.pending.lock().retain(|key, pending| {
            let verdict = self.verdict_of(&view, key, pending, now);
            if verdict == Verdict::Wait {
                return true;
            }
            judged.push(Outcome {
                key: key.clone(),
                controller: pending.controller,
                at: pending.at,
                decided_from: pending.decided_from,
                owner: pending.owner.as_ref().map(|(owner, _)| owner.clone()),
                verdict,
            });
            false
        });
        self.report(&view, judged, now);
    }

    /// The start of the window in which the cluster's creates and deletes answer a decision
    /// made at `at`: a settle window before it, as the cluster may have acted before kcm-rs's
    /// caches showed it.
    fn window_start(&self, at: Instant) -> Instant {
        at.checked_sub(self.settle).unwrap_or(at)
    }

    /// Gathers what `pending` is judged on from `view`, and judges it.
    fn verdict_of(
        &self,
        view: &ClusterView,
        key: &PendingKey,
        pending: &Pending,
        now: Instant,
    ) -> Verdict {
        let age = now.duration_since(pending.at);
        // Fields are judged only once settled: before, the verdict is `Wait` whatever the
        // cluster shows, so nothing is read for them.
        if matches!(pending.expectation, Expectation::Fields { .. }) && age < self.settle {
            return Verdict::Wait;
        }
        let since = self.window_start(pending.at);
        let (resource, namespace, name) = (&key.resource, &key.namespace, &key.name);
        let owner = pending.owner.as_ref().map(|(owner, _)| owner);
        let mut facts = Facts {
            age,
            settle: self.settle,
            namespace_deleting: view.namespace_deleting(namespace),
            owner: owner_state(
                view,
                namespace,
                pending.owner.as_ref(),
                pending.decided_from,
            ),
            ..Facts::default()
        };
        if let Some(node) = pending.expectation.node() {
            facts.node_gone = view.node_gone(node);
            facts.node_changed = view.node_changed_since(node, pending.decided_from);
        }
        let observed;
        match &pending.expectation {
            Expectation::NotCompared => {}
            Expectation::Fields { .. } => {
                observed = view
                    .get(resource, namespace, name)
                    .map(|(meta, json)| Observed {
                        fields: compared_fields(&self.catalog, resource, &pending.verb, &json),
                        ..Observed::of(&meta)
                    });
                facts.current = observed.as_ref();
                facts.inputs_moved = fields_inputs_moved(
                    view.last_changed(Change::Any, resource, namespace, name),
                    self.catalog.decided_from_nodes(resource),
                    view.nodes_last_moved(),
                    pending.decided_from,
                );
            }
            Expectation::Created { identity, .. } => {
                facts.found = match (identity, owner) {
                    (Identity::Name, _) => identity::found_by_name(
                        name,
                        view.facts(resource, namespace, name).is_some(),
                        &view.created_named(resource, namespace, name),
                        since,
                    ),
                    (Identity::Template { created, replicas }, Some(owner)) => {
                        match self.catalog.dependents_of(&owner.resource, resource) {
                            Some(DependentsMatch::Template { equal }) => {
                                identity::found_by_template(
                                    equal,
                                    created,
                                    replicas,
                                    &view.created_by(resource, namespace, owner),
                                    since,
                                )
                            }
                            _ => None,
                        }
                    }
                    (Identity::Data { data, revision }, Some(owner)) => identity::found_by_data(
                        data,
                        revision,
                        &view.created_by(resource, namespace, owner),
                        since,
                    ),
                    // A create for a node that is gone claims none of the owner's creations:
                    // they answer the creates for the nodes that remain.
                    (Identity::Count, Some(_)) if facts.node_gone => None,
                    (Identity::Count, Some(owner)) => view
                        .claim_created_by(resource, namespace, owner, pending.decided_from)
                        .map(|name| Found {
                            name,
                            rule: Rule::OwnerCount,
                            diffs: Vec::new(),
                        }),
                    (Identity::Template { .. } | Identity::Data { .. } | Identity::Count, None) => {
                        None
                    }
                };
            }
            Expectation::Gone { uid, .. } => {
                observed = view.facts(resource, namespace, name).map(|found| Observed {
                    resource_version: found.resource_version,
                    uid: found.uid,
                    terminating: found.terminating,
                    fields: Default::default(),
                });
                facts.current = observed.as_ref();
                facts.seen_deleted = identity::seen_deleted(
                    uid.as_deref(),
                    &view.deleted_named(resource, namespace, name),
                    since,
                );
                if let Some(owner) = owner.filter(|_| age >= self.settle) {
                    let picked = self
                        .decided
                        .lock()
                        .since(&(Check::Gone, owner_key(resource, namespace, owner)), since);
                    facts.deleted_instead = identity::deleted_instead(
                        &view.deleted_by(resource, namespace, owner),
                        &picked,
                        since,
                    );
                }
            }
        }
        verdict(&pending.expectation, &facts)
    }

    /// Counts the judged intents and reports their divergences: one per field or object, one
    /// per owner for a count or a ranking.
    fn report(&self, view: &ClusterView, judged: Vec<Outcome>, now: Instant) {
        let mut compared = Vec::new();
        let mut found = Vec::new();
        let mut ledger = self.ledger.lock();
        for outcome in judged {
            let key = &outcome.key;
            let object = format!("{}/{}", key.namespace, key.name);
            let divergence =
                |kind: Kind, rule: Rule, name: &str, field: &str, kcm_rs, cluster| Divergence {
                    kind,
                    rule,
                    controller: outcome.controller.to_owned(),
                    resource: key.resource.clone(),
                    namespace: key.namespace.clone(),
                    name: name.to_owned(),
                    owner: outcome.owner.as_ref().map(ToString::to_string),
                    field: field.to_owned(),
                    kcm_rs,
                    cluster,
                    at: Timestamp::now().to_string(),
                };
            match &outcome.verdict {
                Verdict::Wait => continue,
                Verdict::Superseded => {
                    tracing::debug!(resource = %key.resource, object, "shadow: superseded");
                    continue;
                }
                Verdict::NotCompared(skip) => {
                    tracing::debug!(
                        resource = %key.resource,
                        object,
                        why = skip.as_str(),
                        "shadow: not compared"
                    );
                    ledger.not_compared(*skip);
                    continue;
                }
                Verdict::Match(rule) => ledger.matched(*rule),
                Verdict::Field {
                    rule,
                    object,
                    diffs,
                } => {
                    let name = object.as_deref().unwrap_or(&key.name);
                    found.extend(diffs.iter().map(|diff| {
                        divergence(
                            Kind::Field,
                            *rule,
                            name,
                            &diff.field,
                            diff.kcm_rs.clone(),
                            diff.cluster.clone(),
                        )
                    }));
                }
                Verdict::Missing(Rule::OwnerCount) => {
                    if let Some(owner) = &outcome.owner
                        && self.first_report(
                            format!(
                                "missing {}",
                                owner_key(&key.resource, &key.namespace, owner)
                            ),
                            self.settle,
                            now,
                        )
                    {
                        let since = outcome.decided_from;
                        let owned = (
                            Check::Exists,
                            owner_key(&key.resource, &key.namespace, owner),
                        );
                        let decided = self.decided.lock().since(&owned, since).len();
                        let created = view
                            .created_by(&key.resource, &key.namespace, owner)
                            .iter()
                            .filter(|creation| creation.at >= since)
                            .count();
                        found.push(divergence(
                            Kind::Missing,
                            Rule::OwnerCount,
                            &key.name,
                            "created",
                            decided.to_string(),
                            created.to_string(),
                        ));
                    }
                }
                Verdict::Missing(rule) => {
                    let instead = outcome
                        .owner
                        .as_ref()
                        .map(|owner| view.owned_by(&key.resource, &key.namespace, owner))
                        .unwrap_or_default();
                    found.push(divergence(
                        Kind::Missing,
                        *rule,
                        &key.name,
                        "created",
                        key.name.clone(),
                        listing(&instead),
                    ));
                }
                Verdict::Extra => found.push(divergence(
                    Kind::Extra,
                    Rule::Name,
                    &key.name,
                    "deleted",
                    key.name.clone(),
                    listing(&[]),
                )),
                Verdict::Choice { instead } => {
                    if let Some(owner) = &outcome.owner
                        && self.first_report(
                            format!("choice {}", owner_key(&key.resource, &key.namespace, owner)),
                            self.settle,
                            now,
                        )
                    {
                        let since = self.window_start(outcome.at);
                        let owned = (Check::Gone, owner_key(&key.resource, &key.namespace, owner));
                        let picked = self.decided.lock().since(&owned, since);
                        let mut deleted = view.deleted_by(&key.resource, &key.namespace, owner);
                        deleted.retain(|deletion| deletion.at >= since);
                        deleted.sort_by_key(|deletion| deletion.at);
                        let deleted: Vec<String> = deleted
                            .into_iter()
                            .map(|deletion| deletion.name.to_string())
                            .collect();
                        found.push(divergence(
                            Kind::Choice,
                            Rule::Owner,
                            &key.name,
                            "deleted",
                            picked.join(","),
                            listing(if deleted.is_empty() {
                                instead
                            } else {
                                &deleted
                            }),
                        ));
                    }
                }
            }
            compared.push(outcome.controller);
        }
        for controller in compared {
            self.metrics.compared.with_label_values(&[controller]).inc();
            ledger.compared();
        }
        let keep = self.keep();
        found.retain(|divergence| {
            self.first_report(
                format!(
                    "{} {}/{}/{} {}={}/{}",
                    divergence.kind.as_str(),
                    divergence.resource,
                    divergence.namespace,
                    divergence.name,
                    divergence.field,
                    divergence.kcm_rs,
                    divergence.cluster
                ),
                keep,
                now,
            )
        });
        for divergence in found {
            self.metrics
                .divergences
                .with_label_values(&[
                    divergence.controller.as_str(),
                    divergence.resource.as_str(),
                    divergence.field.as_str(),
                    divergence.kind.as_str(),
                ])
                .inc();
            tracing::warn!(
                kind = divergence.kind.as_str(),
                rule = divergence.rule.as_str(),
                controller = %divergence.controller,
                resource = %divergence.resource,
                object = %format!("{}/{}", divergence.namespace, divergence.name),
                owner = divergence.owner.as_deref().unwrap_or_default(),
                field = %divergence.field,
                kcm_rs = %divergence.kcm_rs,
                cluster = %divergence.cluster,
                "shadow divergence"
            );
            ledger.divergence(divergence);
        }
    }

    /// Whether a divergence under `key` is reported for the first time within `window`;
    /// remembers it if so.
    fn first_report(&self, key: String, window: Duration, now: Instant) -> bool {
        let mut reported = self.reported.lock();
        let keep = self.keep();
        if reported.len() > 1024 {
            reported.retain(|_, at| now.duration_since(*at) <= keep);
        }
        match reported.get(&key) {
            Some(at) if now.duration_since(*at) <= window => false,
            _ => {
                reported.insert(key, now);
                true
            }
        }
    }
}

/// What became of the owner a decision was made for (and its generation when recorded), by
/// a sync that started at `decided_from`.
fn owner_state(
    view: &ClusterView,
    namespace: &str,
    owner: Option<&(OwnerName, Option<i64>)>,
    decided_from: Instant,
) -> OwnerState {
    let Some((owner, generation)) = owner else {
        return OwnerState::NotFollowed;
    };
    if !view.follows(&owner.resource) {
        return OwnerState::NotFollowed;
    }
    let spec_moved = view
        .last_changed(Change::Spec, &owner.resource, namespace, &owner.name)
        .is_some_and(|at| at > decided_from);
    owner_state_from(
        owner.uid.as_deref(),
        *generation,
        view.facts(&owner.resource, namespace, &owner.name).as_ref(),
        spec_moved,
    )
}

/// Whether a status or spec write's inputs moved before it could be judged, so that a newer
/// decision is judged instead: the object or one it controls changed (`object_last_changed`)
/// after the sync that decided it began reading (`decided_from`), or, for a kind decided from
/// the nodes, the node set did (`nodes_last_moved`). A change between the sync's reads and the
/// recording counts: the write was computed from what was read before it (a pod turning ready
/// while a ReplicaSet's status is computed from the pods read before, a node deleted while a
/// DaemonSet's is computed from the node list).
fn fields_inputs_moved(
    object_last_changed: Option<Instant>,
    decided_from_nodes: bool,
    nodes_last_moved: Option<Instant>,
    decided_from: Instant,
) -> bool {
    let after_the_reads_began = |at: Option<Instant>| at.is_some_and(|at| at > decided_from);
    after_the_reads_began(object_last_changed)
        || (decided_from_nodes && after_the_reads_began(nodes_last_moved))
}

/// What became of an owner (`uid`, `generation` when the decision was recorded), cached `now`
/// as this, whose spec moved (`spec_moved`) or not since the sync deciding started. A spec
/// change between the sync's reads and the recording leaves the recorded generation equal to
/// the cached one, yet the decision was made on the spec before it.
fn owner_state_from(
    uid: Option<&str>,
    generation: Option<i64>,
    now: Option<&ObjectFacts>,
    spec_moved: bool,
) -> OwnerState {
    match now {
        None => OwnerState::Gone,
        Some(now) if now.terminating || (uid.is_some() && now.uid.as_deref() != uid) => {
            OwnerState::Gone
        }
        Some(now) if spec_moved || now.generation != generation => OwnerState::SpecChanged,
        Some(_) => OwnerState::Unchanged,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_a_field_writes_inputs_moved() {
        let started = Instant::now();
        let before = started.checked_sub(Duration::from_millis(5));
        let during = Some(started + Duration::from_millis(2));
        let after = Some(started + Duration::from_millis(50));
        // (rule, object last changed, decided from nodes, nodes last moved, moved)
        #[rustfmt::skip]
        let cases = [
            ("nothing moved", None, true, None, false),
            ("the object or one it controls changed before the sync read it", before, false, None, false),
            ("one it controls changed between the sync's reads and the recording", during, false, None, true),
            ("the object or one it controls changed after the recording", after, false, None, true),
            ("the nodes moved before the sync read them", None, true, before, false),
            ("a node moved between the sync's reads and the recording", None, true, during, true),
            ("a node moved after the recording", None, true, after, true),
            ("a kind not decided from nodes ignores them", None, false, during, false),
        ];
        for (rule, object_last_changed, from_nodes, nodes_last_moved, moved) in cases {
            assert_eq!(
                fields_inputs_moved(object_last_changed, from_nodes, nodes_last_moved, started),
                moved,
                "{rule}"
            );
        }
    }

    #[test]
    fn what_became_of_an_owner() {
        let cached = |uid: &str, generation: i64, terminating: bool| ObjectFacts {
            uid: Some(uid.to_owned()),
            resource_version: Some("7".to_owned()),
            generation: Some(generation),
            terminating,
        };
        #[rustfmt::skip]
        let cases = [
            ("gone from the cache", None, false, OwnerState::Gone),
            ("being deleted", Some(cached("u1", 2, true)), false, OwnerState::Gone),
            ("a namesake", Some(cached("u2", 2, false)), false, OwnerState::Gone),
            ("a newer generation", Some(cached("u1", 3, false)), false, OwnerState::SpecChanged),
            ("the spec moved between the sync's reads and the recording", Some(cached("u1", 2, false)), true, OwnerState::SpecChanged),
            ("unchanged", Some(cached("u1", 2, false)), false, OwnerState::Unchanged),
        ];
        for (name, now, spec_moved, expected) in cases {
            assert_eq!(
                owner_state_from(Some("u1"), Some(2), now.as_ref(), spec_moved),
                expected,
                "{name}"
            );
        }
    }
}
