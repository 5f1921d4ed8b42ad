//! kcm-rs only, opt-in: broken-rollout recovery (kubernetes#67250), its options and its rule,
//! kept apart from upstream's phases so that they read as upstream's do.

use std::{sync::Arc, time::Duration};

use controller_toolkit::pod_predicates::{is_pod_ready, pod_ready_condition};
use informer::CachedPod;
use k8s_openapi::{api::apps::v1::StatefulSet, jiff::Timestamp};

use super::{
    pod_state::{is_finished, is_terminating},
    slots::ReplicaSlots,
    spec::{is_monotonic, is_on_delete, max_unavailable, min_ready_seconds, partition},
};

use crate::{features::FeatureGates, identity::pod_revision};

/// kcm-rs only: StatefulSet annotation that opts one set in to broken-rollout recovery
/// (`"true"`) or, when the manager enables it for all sets, out of it (`"false"`).
pub const RECOVER_BROKEN_ROLLOUT_ANNOTATION: &str = "kcm-rs.io/recover-broken-rollout";
/// Default of `--statefulset-recover-grace`: long enough for a slow but healthy pod to turn
/// Ready, short enough that a reverted rollout resumes without a human.
pub const DEFAULT_RECOVER_GRACE: Duration = Duration::from_secs(30);
/// kcm-rs only: how the controller recovers from a broken `OrderedReady` rolling update
/// (kubernetes#67250). Off by default so that upstream's behavior (wait for a manual
/// `kubectl delete pod`) stays the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokenRolloutRecovery {
    /// Recover every set (`--statefulset-recover-broken-rollout`) unless its
    /// [`RECOVER_BROKEN_ROLLOUT_ANNOTATION`] says `"false"`; otherwise only sets whose
    /// annotation says `"true"`.
    pub all_sets: bool,
    /// How long past `minReadySeconds` a pod must have been not Ready before it counts as stuck
    /// (`--statefulset-recover-grace`): a pod that is merely slow to start is not deleted.
    pub grace: Duration,
}

impl Default for BrokenRolloutRecovery {
    fn default() -> Self {
        Self {
            all_sets: false,
            grace: DEFAULT_RECOVER_GRACE,
        }
    }
}

impl BrokenRolloutRecovery {
    /// The grace period when recovery applies to `set`, `None` when it does not: the set's
    /// annotation decides when present (`"true"` or `"false"`), the manager flag otherwise.
    pub fn grace_for(&self, set: &StatefulSet) -> Option<Duration> {
        let annotation = set
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(RECOVER_BROKEN_ROLLOUT_ANNOTATION))
            .map(String::as_str);
        let enabled = match annotation {
            Some("true") => true,
            Some("false") => false,
            _ => self.all_sets,
        };
        enabled.then_some(self.grace)
    }
}

/// A pod the recovery rule deletes, with what the event about it says.
#[derive(Debug, Clone, PartialEq)]
pub struct StuckPod {
    /// The pod as cached.
    pub pod: Arc<CachedPod>,
    /// The update revision it will be recreated at.
    pub update_revision: String,
    /// How long it has been not Ready (since its creation or last Ready transition).
    pub not_ready_for: Duration,
    /// Whether the status counts it in `currentReplicas` (it is at the current revision), so
    /// its deletion lowers that count as a deletion for update does.
    pub counted_current: bool,
}

impl StuckPod {
    /// The message of the `RecoveringBrokenPod` event: the pod, both revisions and how long
    /// it has been stuck, so the user can see why a pod went without asking for it.
    pub fn message(&self) -> String {
        format!(
            "Deleting pod {} stuck at revision {} (not Ready for {}s); it will be recreated at update revision {}",
            self.pod.metadata.name.as_deref().unwrap_or_default(),
            pod_revision(&self.pod),
            self.not_ready_for.as_secs(),
            self.update_revision,
        )
    }
}

/// What the recovery rule decided for one sync.
#[derive(Debug, Clone, PartialEq)]
pub enum Recovery {
    /// No pod is stuck (or recovery is off for the set).
    Nothing,
    /// Delete this stuck pod now.
    Delete(StuckPod),
    /// A pod will count as stuck after this long (its grace period has not elapsed); look
    /// again then, since no event the controller watches marks that moment.
    RecheckAfter(Duration),
}

/// The plain data the recovery rule judges pods by, besides the set and its pods.
#[derive(Debug, Clone, Copy)]
pub struct RecoveryRule<'a> {
    /// The set's grace period (recovery is on for it).
    pub grace: Duration,
    /// The current revision's name (for the status count only).
    pub current_revision: &'a str,
    /// The update revision's name.
    pub update_revision: &'a str,
    /// Names of other revisions whose data equals the update revision's: a pod at one of them
    /// already runs the update template and is never deleted by this rule.
    pub update_equivalents: &'a [String],
    /// The gates (`MaxUnavailableStatefulSet` decides the budget).
    pub gates: FeatureGates,
    /// The time the pods are judged at.
    pub now: Timestamp,
}
/// kcm-rs only, opt-in (kubernetes#67250): which pod of an `OrderedReady` rolling update to
/// delete because it is stuck, or when to look again because one will be.
///
/// Upstream's ordered pass waits for every pod to be Ready before it replaces anything, so a
/// pod updated to a broken template blocks the set forever, even after the user reverted the
/// template; the documented way out is a manual `kubectl delete pod`. A pod is stuck when the
/// set uses `RollingUpdate`, the pod's ordinal is at or above the partition, its revision is
/// neither the update revision nor one equal to it in content, it is not Ready, not finished
/// (those are recreated anyway) and not terminating, and it has been not Ready for
/// `minReadySeconds` plus `rule.grace` since its creation or its last Ready transition,
/// whichever is later. A pod at the update revision is never deleted: a broken *new* template
/// is the user's to fix, and recreating it would only loop.
///
/// At most one pod per sync (the lowest ordinal, the one the ordered pass waits for), none
/// while any pod of the set is terminating, and only when the unavailable replicas, the stuck
/// pod included, fit the budget: `maxUnavailable` with `MaxUnavailableStatefulSet` on, else 1
/// (one pod at a time, as the gate-off rolling update). `Parallel` sets already replace such
/// pods and are left alone, as are `OnDelete` sets.
///
/// `replicas` are the in-range slots; `pods` are all the set's pods, condemned ones included.
pub fn broken_rollout_recovery(
    set: &StatefulSet,
    replicas: &ReplicaSlots<'_>,
    pods: &[Arc<CachedPod>],
    rule: &RecoveryRule<'_>,
) -> Recovery {
    if !is_monotonic(set) || is_on_delete(set) || set.metadata.deletion_timestamp.is_some() {
        return Recovery::Nothing;
    }
    let min_ready = min_ready_seconds(set);
    let threshold =
        Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)).saturating_add(rule.grace);
    let update_min = usize::try_from(partition(set)).unwrap_or(0);
    let mut stuck = None;
    let mut recheck: Option<Duration> = None;
    for pod in replicas.filled_from(update_min) {
        let revision = pod_revision(pod);
        let outdated = revision != rule.update_revision
            && !rule.update_equivalents.iter().any(|name| name == revision);
        if !outdated || is_pod_ready(pod) || is_finished(pod) || is_terminating(pod) {
            continue;
        }
        let Some(since) = not_ready_since(pod) else {
            continue;
        };
        let not_ready_for =
            Duration::try_from(rule.now.duration_since(since)).unwrap_or(Duration::ZERO);
        if not_ready_for >= threshold {
            stuck = Some((pod, not_ready_for));
            break;
        }
        let remaining = threshold - not_ready_for;
        recheck = Some(recheck.map_or(remaining, |earliest| earliest.min(remaining)));
    }
    let Some((pod, not_ready_for)) = stuck else {
        return recheck.map_or(Recovery::Nothing, Recovery::RecheckAfter);
    };
    if pods.iter().any(|pod| is_terminating(pod)) {
        return Recovery::Nothing;
    }
    let budget = if rule.gates.max_unavailable_statefulset {
        usize::try_from(max_unavailable(set)).unwrap_or(1)
    } else {
        1
    };
    let unavailable = replicas.unavailable(min_ready, rule.now);
    if unavailable > budget {
        return Recovery::Nothing;
    }
    Recovery::Delete(StuckPod {
        pod: pod.clone(),
        update_revision: rule.update_revision.to_owned(),
        not_ready_for,
        counted_current: pod_revision(pod) == rule.current_revision,
    })
}

/// When the pod's current not-Ready spell began: its creation or its Ready condition's last
/// transition, whichever is later (`None` when neither is known, so it is never judged stuck).
fn not_ready_since(pod: &CachedPod) -> Option<Timestamp> {
    let created = pod.metadata.creation_timestamp.as_ref().map(|time| time.0);
    let transition = pod_ready_condition(pod)
        .and_then(|condition| condition.last_transition_time)
        .map(|time| time.0);
    created.max(transition)
}
