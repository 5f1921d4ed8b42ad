//! The ReplicaSet controller's decisions as pure functions: plain data in, a plan out.
//!
//! Everything here follows and is table-tested without a server: how many
//! pods to create or delete, the slow-start batch sizes, the new status and whether it differs.
//! When to look again for pods turning available is shared with the StatefulSet controller:
//! [`controller_toolkit::availability::availability_requeue`].

use std::time::Duration;

use controller_toolkit::pod_predicates::{is_pod_available, is_pod_ready};
use informer::{CachedPod, CachedReplicaSet, LabelMatcher};
use k8s_openapi::{
    api::apps::v1::{ReplicaSetCondition, ReplicaSetStatus},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};

/// At most this many creates or deletes per sync (upstream `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;
/// The condition this controller owns.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// The ReplicaSet's selector, or why it cannot be used. The API server validates selectors, so
/// this fails only for objects it should have refused; the sync warns and does not retry.
pub fn parse_selector(replica_set: &CachedReplicaSet) -> Result<LabelMatcher, String> {
    let spec = replica_set
        .spec
        .as_ref()
        .ok_or_else(|| "the ReplicaSet has no spec".to_string())?;
    LabelMatcher::try_from(spec.selector.decode()).map_err(|error| error.to_string())
}

/// What manageReplicas has to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaPlan {
    /// Active pods match spec.replicas.
    Nothing,
    /// Create this many pods (already capped at the burst size).
    Create(usize),
    /// Delete this many pods (already capped at the burst size).
    Delete(usize),
}

/// `diff = active - spec.replicas`, capped at [`BURST_REPLICAS`] either way.
pub fn plan_replicas(active: usize, desired: i32) -> ReplicaPlan {
    let desired = usize::try_from(desired.max(0)).unwrap_or(0);
    if active < desired {
        ReplicaPlan::Create((desired - active).min(BURST_REPLICAS))
    } else if active > desired {
        ReplicaPlan::Delete((active - desired).min(BURST_REPLICAS))
    } else {
        ReplicaPlan::Nothing
    }
}

/// Inputs of the status computation, gathered by the sync.
pub struct StatusInputs<'a> {
    /// The ReplicaSet as read from the cache.
    pub replica_set: &'a CachedReplicaSet,
    /// Active pods claimed by it.
    pub active_pods: &'a [std::sync::Arc<CachedPod>],
    /// Terminating pods it owns and that match its selector.
    pub terminating: usize,
    /// The error of manageReplicas this sync, if any.
    pub manage_error: Option<String>,
    /// One `now` for the whole computation.
    pub now: Timestamp,
}

/// upstream `calculateStatus`: counts from the active pods and the ReplicaFailure condition.
/// `observedGeneration` is left as it was; the status write sets it.
pub fn calculate_status(inputs: &StatusInputs<'_>) -> ReplicaSetStatus {
    let rs = inputs.replica_set;
    let mut status = rs.status.clone().unwrap_or_default();
    let spec = rs.spec.as_ref();
    let template_labels = spec
        .and_then(|spec| spec.template.as_ref())
        .and_then(|template| template.labels());
    let min_ready_seconds = spec.and_then(|spec| spec.min_ready_seconds).unwrap_or(0);
    let desired = spec.and_then(|spec| spec.replicas).unwrap_or(1);

    let mut fully_labeled = 0;
    let mut ready = 0;
    let mut available = 0;
    for pod in inputs.active_pods {
        let labels = &pod.metadata.labels;
        let has_template_labels = template_labels.as_ref().is_none_or(|wanted| {
            wanted
                .iter()
                .all(|(key, value)| labels.get(key) == Some(value.as_str()))
        });
        if has_template_labels {
            fully_labeled += 1;
        }
        if is_pod_ready(pod) {
            ready += 1;
            if is_pod_available(pod, min_ready_seconds, inputs.now) {
                available += 1;
            }
        }
    }

    let active = inputs.active_pods.len();
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let has_failure = conditions.iter().any(|c| c.type_ == REPLICA_FAILURE);
    match &inputs.manage_error {
        Some(message) if !has_failure => {
            let desired = usize::try_from(desired.max(0)).unwrap_or(0);
            let reason = if active < desired {
                "FailedCreate"
            } else if active > desired {
                "FailedDelete"
            } else {
                ""
            };
            conditions.push(ReplicaSetCondition {
                type_: REPLICA_FAILURE.to_string(),
                status: "True".to_string(),
                reason: Some(reason.to_string()),
                message: Some(message.clone()),
                last_transition_time: Some(Time(inputs.now)),
            });
        }
        None if has_failure => conditions.retain(|c| c.type_ != REPLICA_FAILURE),
        _ => {}
    }
    if conditions.is_empty() {
        status.conditions = None;
    }
    status.replicas = i32::try_from(active).unwrap_or(i32::MAX);
    status.fully_labeled_replicas = Some(fully_labeled);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.terminating_replicas = Some(i32::try_from(inputs.terminating).unwrap_or(i32::MAX));
    status
}

/// upstream's no-op check before a status write: counts, conditions and observedGeneration
/// all unchanged means no write at all.
pub fn status_unchanged(replica_set: &CachedReplicaSet, new_status: &ReplicaSetStatus) -> bool {
    let Some(current) = replica_set.status.as_ref() else {
        return false;
    };
    let zero = |count: Option<i32>| count.unwrap_or(0);
    current.replicas == new_status.replicas
        && zero(current.fully_labeled_replicas) == zero(new_status.fully_labeled_replicas)
        && zero(current.ready_replicas) == zero(new_status.ready_replicas)
        && zero(current.available_replicas) == zero(new_status.available_replicas)
        && current.terminating_replicas == new_status.terminating_replicas
        && replica_set.metadata.generation == current.observed_generation
        && current.conditions.as_deref().unwrap_or_default()
            == new_status.conditions.as_deref().unwrap_or_default()
}

/// kcm-rs only, default on (`--replicaset-status-hold`, issue 28): how long at most a status
/// write may wait for the sync's own creates and deletes to be observed.
pub const DEFAULT_STATUS_HOLD: Duration = Duration::from_secs(1);

/// What one sync knows when it is about to write a ReplicaSet's status.
///
/// Why the write may wait: a sync that creates or deletes pods computes its status from the
/// pods as they were before (upstream's order), so that write carries the new
/// `observedGeneration` with counts that are already outdated, and the pod events write the
/// counts again right after. Holding it until the sync's own creates and deletes are observed
/// writes both in one (14 → 7 ReplicaSet status writes in a 5-replica rollout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusWriteInputs {
    /// `--replicaset-status-hold`; zero writes on every sync, as upstream.
    pub hold_limit: Duration,
    /// This sync sent creates or deletes (that were accepted).
    pub acted: bool,
    /// Some of this controller's creates or deletes for the ReplicaSet were unobserved when the
    /// sync read its pods, so the status it computed may lack them.
    pub unobserved_at_read: bool,
    /// Some of them are still unobserved now, after the sync's own writes.
    pub unobserved_now: bool,
    /// The manage step failed: the `ReplicaFailure` condition changes and must show at once.
    pub manage_failed: bool,
    /// The ReplicaSet has a deletionTimestamp.
    pub being_deleted: bool,
    /// How long an earlier sync's write has been held, if one is.
    pub held_for: Option<Duration>,
}

/// Whether the status goes out now or waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusWrite {
    /// Write the status computed by this sync (when it changed).
    Now,
    /// Hold it and sync again after this long; zero means at once, because this sync's own
    /// creates and deletes were observed while it ran and its status predates them.
    Hold(Duration),
}

/// Issue 28's rules: a sync that created or deleted pods, and the syncs after it that read
/// their pods while those were unobserved, hold the status write, for at most `hold_limit` in
/// all; it goes out at once when the hold is off, when managing failed, when the ReplicaSet is
/// being deleted, or when nothing of this controller's was unobserved as the sync read its pods
/// and this sync did not act. A held write whose writes are all observed by the end of the sync
/// syncs again at once, to compute the status from a read that shows them.
pub fn decide_status_write(inputs: StatusWriteInputs) -> StatusWrite {
    if inputs.hold_limit.is_zero() || inputs.manage_failed || inputs.being_deleted {
        return StatusWrite::Now;
    }
    // What may wait: a status that predates this sync's own writes, or one read while an
    // earlier sync's writes were unobserved. The read is what counts, not the end of the sync:
    // the last creates can be observed between the two, and the status then lacks them.
    let still_holding = inputs.held_for.is_some() && inputs.unobserved_at_read;
    if !(inputs.acted || still_holding) {
        return StatusWrite::Now;
    }
    let waited = inputs.held_for.unwrap_or_default();
    if waited >= inputs.hold_limit {
        return StatusWrite::Now;
    }
    if inputs.unobserved_now {
        StatusWrite::Hold(inputs.hold_limit - waited)
    } else {
        StatusWrite::Hold(Duration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        "2026-11-22T10:00:00Z".parse().unwrap()
    }

    fn replica_set(
        replicas: i32,
        min_ready_seconds: i32,
        status: serde_json::Value,
    ) -> CachedReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "generation": 3},
            "spec": {
                "replicas": replicas,
                "minReadySeconds": min_ready_seconds,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}}
            },
            "status": status
        }))
        .unwrap()
    }

    /// A pod with the given labels, Ready since `ready_since` seconds before `now()` (or not ready).
    fn pod(labels: serde_json::Value, ready_since: Option<i64>) -> Arc<CachedPod> {
        let conditions = match ready_since {
            Some(seconds) => {
                let at = now() - k8s_openapi::jiff::SignedDuration::from_secs(seconds);
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": at.to_string()}])
            }
            None => json!([{"type": "Ready", "status": "False"}]),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "p", "labels": labels},
                "status": {"phase": "Running", "conditions": conditions}
            }))
            .unwrap(),
        )
    }

    fn full() -> serde_json::Value {
        json!({"app": "web", "tier": "front"})
    }

    #[test]
    fn counts_labeled_ready_and_available_pods() {
        // (pods, minReadySeconds, want (replicas, fullyLabeled, ready, available))
        type Counts = (i32, i32, i32, i32);
        #[rustfmt::skip]
        let cases: Vec<(Vec<Arc<CachedPod>>, i32, Counts)> = vec![
            (vec![], 0, (0, 0, 0, 0)),
            (vec![pod(full(), Some(10)), pod(full(), None)], 0, (2, 2, 1, 1)),
            (vec![pod(json!({"app": "web"}), Some(10))], 0, (1, 0, 1, 1)),
            // Ready for 10 s: available once minReadySeconds is at most 10 (v1.34+,
            // kubernetes#132122; before, 10 had to be strictly less).
            (vec![pod(full(), Some(10))], 9, (1, 1, 1, 1)),
            (vec![pod(full(), Some(10))], 10, (1, 1, 1, 1)),
            (vec![pod(full(), Some(10))], 11, (1, 1, 1, 0)),
            (vec![pod(full(), Some(10))], 30, (1, 1, 1, 0)),
        ];
        for (pods, min_ready, (replicas, labeled, ready, available)) in cases {
            let rs = replica_set(pods.len() as i32, min_ready, json!({"replicas": 0}));
            let status = calculate_status(&StatusInputs {
                replica_set: &rs,
                active_pods: &pods,
                terminating: 1,
                manage_error: None,
                now: now(),
            });
            assert_eq!(status.replicas, replicas);
            assert_eq!(status.fully_labeled_replicas, Some(labeled));
            assert_eq!(status.ready_replicas, Some(ready));
            assert_eq!(
                status.available_replicas,
                Some(available),
                "minReady {min_ready}"
            );
            assert_eq!(status.terminating_replicas, Some(1));
        }
    }

    #[test]
    fn replica_failure_condition_follows_upstream() {
        let failure = json!({"replicas": 0, "conditions": [{
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
            "message": "old", "lastTransitionTime": "2026-11-22T09:00:00Z"}]});
        // (desired, active pods, existing status, error, want reason and message)
        type Case<'a> = (
            i32,
            usize,
            serde_json::Value,
            Option<&'a str>,
            Option<(&'a str, &'a str)>,
        );
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (3, 1, json!({}), Some("quota"), Some(("FailedCreate", "quota"))),
            (1, 3, json!({}), Some("forbidden"), Some(("FailedDelete", "forbidden"))),
            (2, 2, json!({}), Some("odd"), Some(("", "odd"))),
            // An existing failure is not refreshed while errors continue...
            (3, 1, failure.clone(), Some("new"), Some(("FailedCreate", "old"))),
            // ...and is removed once a sync succeeds.
            (3, 1, failure, None, None),
            (3, 1, json!({}), None, None),
        ];
        for (desired, active, existing, error, want) in cases {
            let rs = replica_set(desired, 0, existing);
            let pods: Vec<_> = (0..active).map(|_| pod(full(), Some(5))).collect();
            let status = calculate_status(&StatusInputs {
                replica_set: &rs,
                active_pods: &pods,
                terminating: 0,
                manage_error: error.map(str::to_string),
                now: now(),
            });
            let condition = status
                .conditions
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == REPLICA_FAILURE);
            let got = condition.as_ref().map(|c| {
                (
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            });
            let want = want.map(|(reason, message)| (reason.to_string(), message.to_string()));
            assert_eq!(
                got, want,
                "desired {desired}, active {active}, error {error:?}"
            );
        }
    }

    #[test]
    fn unchanged_status_is_not_written() {
        let settled = json!({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2,
            "availableReplicas": 2, "terminatingReplicas": 0, "observedGeneration": 3});
        let rs = replica_set(2, 0, settled.clone());
        let same: ReplicaSetStatus = serde_json::from_value(settled.clone()).unwrap();
        assert!(status_unchanged(&rs, &same));
        let mut fewer_ready = same.clone();
        fewer_ready.ready_replicas = Some(1);
        assert!(!status_unchanged(&rs, &fewer_ready));
        let mut terminating = same.clone();
        terminating.terminating_replicas = Some(1);
        assert!(!status_unchanged(&rs, &terminating));
        let mut stale = settled;
        stale["observedGeneration"] = json!(2);
        assert!(!status_unchanged(&replica_set(2, 0, stale), &same));
    }

    #[test]
    fn unusable_selectors_are_reported() {
        let with_selector = |selector: serde_json::Value| -> CachedReplicaSet {
            serde_json::from_value(
                json!({"metadata": {"name": "web"}, "spec": {"selector": selector}}),
            )
            .unwrap()
        };
        #[rustfmt::skip]
        let cases = [
            (json!({"matchLabels": {"app": "web"}}), true),
            (json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}), true),
            (json!({"matchExpressions": [{"key": "a", "operator": "NotIn"}]}), false),
            (json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}), false),
        ];
        for (selector, usable) in cases {
            assert_eq!(
                parse_selector(&with_selector(selector.clone())).is_ok(),
                usable,
                "{selector}"
            );
        }
        let no_spec: CachedReplicaSet =
            serde_json::from_value(json!({"metadata": {"name": "web"}})).unwrap();
        assert!(parse_selector(&no_spec).is_err());
    }

    #[test]
    fn plans_with_the_burst_cap() {
        #[rustfmt::skip]
        let cases = [
            (0, 5, ReplicaPlan::Create(5)),
            (5, 2, ReplicaPlan::Delete(3)),
            (3, 3, ReplicaPlan::Nothing),
            (0, 0, ReplicaPlan::Nothing),
            (0, 700, ReplicaPlan::Create(500)),
            (800, 0, ReplicaPlan::Delete(500)),
            (2, -1, ReplicaPlan::Delete(2)),
        ];
        for (active, desired, want) in cases {
            assert_eq!(
                plan_replicas(active, desired),
                want,
                "{active} -> {desired}"
            );
        }
    }

    #[test]
    fn status_write_hold_rules() {
        const LIMIT: u64 = 1000;
        let now = StatusWrite::Now;
        let hold = |ms| StatusWrite::Hold(Duration::from_millis(ms));
        // (what, acted, unobserved at the read, unobserved now, held for ms, manage failed,
        // being deleted, hold limit ms, want)
        type Case = (
            &'static str,
            bool,
            bool,
            bool,
            Option<u64>,
            bool,
            bool,
            u64,
            StatusWrite,
        );
        #[rustfmt::skip]
        let cases: [Case; 13] = [
            ("created or deleted, unobserved: hold for the limit", true, false, true, None, false, false, LIMIT, hold(LIMIT)),
            ("a later sync acting again keeps the first start", true, false, true, Some(400), false, false, LIMIT, hold(600)),
            ("a pod event while still unobserved: the hold goes on", false, true, true, Some(300), false, false, LIMIT, hold(700)),
            ("everything observed before the read: written now", false, false, false, Some(300), false, false, LIMIT, now),
            ("the last ones observed after the read: sync again at once", false, true, false, Some(300), false, false, LIMIT, hold(0)),
            ("observed during the sync that acted: sync again at once", true, false, false, None, false, false, LIMIT, hold(0)),
            ("never past the limit, observed or not", false, true, true, Some(LIMIT), false, false, LIMIT, now),
            ("nor past it when observed after the read", false, true, false, Some(LIMIT), false, false, LIMIT, now),
            ("acting after the limit writes too", true, false, true, Some(1500), false, false, LIMIT, now),
            ("a failed manage step writes ReplicaFailure at once", true, false, true, None, true, false, LIMIT, now),
            ("being deleted", true, false, true, None, false, true, LIMIT, now),
            ("hold 0s: upstream's write on every sync", true, false, true, None, false, false, 0, now),
            ("nothing done, nothing held", false, true, true, None, false, false, LIMIT, now),
        ];
        for (
            what,
            acted,
            unobserved_at_read,
            unobserved_now,
            held_ms,
            manage_failed,
            being_deleted,
            limit_ms,
            want,
        ) in cases
        {
            let inputs = StatusWriteInputs {
                hold_limit: Duration::from_millis(limit_ms),
                acted,
                unobserved_at_read,
                unobserved_now,
                manage_failed,
                being_deleted,
                held_for: held_ms.map(Duration::from_millis),
            };
            assert_eq!(decide_status_write(inputs), want, "{what}");
        }
    }
}
