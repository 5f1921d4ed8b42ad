//! What shadow mode reports: the Prometheus counters, the last divergences and intents for the
//! `/shadow` page, and the numbers behind the one-line summary logged each minute.

use std::collections::{BTreeMap, VecDeque};

use prometheus::{IntCounterVec, Opts, Registry};
use serde::Serialize;

use crate::{
    compare::{Kind, Skip},
    identity::Rule,
};

/// How many divergences (and intents) the `/shadow` page keeps.
pub const KEPT: usize = 200;

/// `shadow_intents_total`, `shadow_divergences_total`, `shadow_objects_compared_total`.
#[derive(Debug, Clone)]
pub struct ShadowMetrics {
    pub(crate) intents: IntCounterVec,
    pub(crate) divergences: IntCounterVec,
    pub(crate) compared: IntCounterVec,
}

impl ShadowMetrics {
    /// Creates the three counters and registers them in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let counter = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(counter.clone()))?;
            Ok::<_, prometheus::Error>(counter)
        };
        Ok(Self {
            intents: counter(
                "shadow_intents_total",
                "kcm-rs shadow mode: writes the controllers decided on and did not send",
                &["controller", "verb", "resource"],
            )?,
            divergences: counter(
                "shadow_divergences_total",
                "kcm-rs shadow mode: divergences of the settled cluster from what kcm-rs would have done, by kind (missing, extra, field, choice)",
                &["controller", "resource", "field", "kind"],
            )?,
            compared: counter(
                "shadow_objects_compared_total",
                "kcm-rs shadow mode: recorded writes compared with the settled cluster",
                &["controller"],
            )?,
        })
    }
}

/// One place where the settled cluster differs from what kcm-rs would have done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Divergence {
    /// What it is: `missing` (an object kcm-rs would have created is not there), `extra` (an
    /// object kcm-rs would have deleted is still there), `field` (a compared field settled at
    /// another value), `choice` (a scale-down or recovery deleted other objects of the owner).
    pub kind: Kind,
    /// The rule the cluster's object was matched by: `name`, `owner+template` (a Deployment's
    /// ReplicaSet), `owner+count` (a ReplicaSet's pods), `owner` (a ranking).
    pub rule: Rule,
    /// The controller that decided the write.
    pub controller: String,
    /// The object's resource (plural).
    pub resource: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name: the cluster's object for a `field` divergence of an object matched
    /// by another rule than its name; the `generateName` prefix for `owner+count`.
    pub name: String,
    /// The object's controller owner (`replicasets/web-6d8fb7bfdf`), if followed.
    pub owner: Option<String>,
    /// The field: a compared field (`spec.replicas`, `status.conditions[Available]`, ...),
    /// `created` (`missing`) or `deleted` (`extra`, `choice`).
    pub field: String,
    /// kcm-rs's value: for `missing`, the object (or for `owner+count` how many it would have
    /// created); for `extra`, the object; for `choice`, the objects it would have deleted, in
    /// the order it ranked them.
    pub kcm_rs: String,
    /// The cluster's value: for `missing`, what the owner has instead (or how many were
    /// created); for `extra`, `none`; for `choice`, the objects it deleted, in order.
    pub cluster: String,
    /// When it was found (RFC 3339).
    pub at: String,
}

/// One write a controller decided on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intent {
    /// The controller that decided it.
    pub controller: String,
    /// `create`, `update`, `patch` or `delete`.
    pub verb: String,
    /// Whether it writes the status subresource.
    pub status: bool,
    /// The object's resource (plural).
    pub resource: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name (the `generateName` prefix for a generated name).
    pub name: String,
    /// Why the controller wrote it.
    pub reason: String,
    /// When it was decided (RFC 3339).
    pub at: String,
}

/// The `/shadow` page.
#[derive(Debug, Clone, Serialize)]
pub struct ShadowReport {
    /// The settle window, in seconds.
    pub settle_seconds: f64,
    /// Writes recorded since start.
    pub intents_total: u64,
    /// Recorded writes compared since start.
    pub compared_total: u64,
    /// Divergences found since start.
    pub divergences_total: u64,
    /// Recorded writes waiting for the settle window.
    pub pending: usize,
    /// Recorded writes the cluster matched, by the rule that matched them.
    pub matched: BTreeMap<Rule, u64>,
    /// Recorded writes not compared, by why: `namespace-deleting`, `owner-gone`, `node-gone`.
    pub not_compared: BTreeMap<&'static str, u64>,
    /// The last divergences, newest first.
    pub divergences: Vec<Divergence>,
    /// The last intents, newest first.
    pub intents: Vec<Intent>,
}

/// Running totals and the last [`KEPT`] divergences and intents.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pub(crate) intents_total: u64,
    pub(crate) compared_total: u64,
    pub(crate) divergences_total: u64,
    matched: BTreeMap<Rule, u64>,
    not_compared: BTreeMap<&'static str, u64>,
    divergences: VecDeque<Divergence>,
    intents: VecDeque<Intent>,
}

impl Ledger {
    pub(crate) fn intent(&mut self, intent: Intent) {
        self.intents_total += 1;
        push_bounded(&mut self.intents, intent);
    }

    pub(crate) fn divergence(&mut self, divergence: Divergence) {
        self.divergences_total += 1;
        push_bounded(&mut self.divergences, divergence);
    }

    pub(crate) fn compared(&mut self) {
        self.compared_total += 1;
    }

    pub(crate) fn matched(&mut self, rule: Rule) {
        *self.matched.entry(rule).or_default() += 1;
    }

    pub(crate) fn not_compared(&mut self, skip: Skip) {
        *self.not_compared.entry(skip.as_str()).or_default() += 1;
    }

    pub(crate) fn report(&self, settle_seconds: f64, pending: usize) -> ShadowReport {
        ShadowReport {
            settle_seconds,
            intents_total: self.intents_total,
            compared_total: self.compared_total,
            divergences_total: self.divergences_total,
            pending,
            matched: self.matched.clone(),
            not_compared: self.not_compared.clone(),
            divergences: self.divergences.iter().rev().cloned().collect(),
            intents: self.intents.iter().rev().cloned().collect(),
        }
    }
}

fn push_bounded<T>(ring: &mut VecDeque<T>, item: T) {
    if ring.len() == KEPT {
        ring.pop_front();
    }
    ring.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_divergences_newest_first() {
        let mut ledger = Ledger::default();
        for n in 0..(KEPT + 5) {
            ledger.divergence(Divergence {
                kind: Kind::Field,
                rule: Rule::Name,
                owner: None,
                controller: "c".into(),
                resource: "r".into(),
                namespace: "ns".into(),
                name: format!("o{n}"),
                field: "f".into(),
                kcm_rs: "1".into(),
                cluster: "2".into(),
                at: String::new(),
            });
        }
        let report = ledger.report(5.0, 0);
        assert_eq!(report.divergences_total, (KEPT + 5) as u64);
        assert_eq!(report.divergences.len(), KEPT);
        assert_eq!(report.divergences[0].name, format!("o{}", KEPT + 4));
        assert_eq!(report.divergences[KEPT - 1].name, "o5");
    }
}
