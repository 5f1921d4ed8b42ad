//! The DaemonSet's status (upstream `updateDaemonSetStatus`, `storeDaemonSetStatus`): the seven
//! counters over the node list, whether they warrant a write, and when to look again for pods
//! turning available.
//!
//! Each node counts once, by its first pod ([`creation_order`]); pods on nodes missing from
//! the node list are not counted. `conditions` and `collisionCount` are never touched here.

use std::time::Duration;

use controller_toolkit::pod_predicates::{is_pod_available, is_pod_ready};
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};

use super::SyncInput;
use super::nodes_to_pods::creation_order;
use super::rolling_update::is_pod_updated;
use super::spec::{min_ready_seconds, template_generation};

/// The counters upstream computes (int32 in the status).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// `desiredNumberScheduled`: nodes that should run a pod.
    pub desired_number_scheduled: i32,
    /// `currentNumberScheduled`: of those, nodes with a pod (terminating ones included).
    pub current_number_scheduled: i32,
    /// `numberMisscheduled`: nodes with a pod that should not run one (a pod tolerated only
    /// for `NoExecute` counts here too).
    pub number_misscheduled: i32,
    /// `numberReady`: nodes whose first pod is Ready.
    pub number_ready: i32,
    /// `updatedNumberScheduled`: nodes whose first pod is up to date.
    pub updated_number_scheduled: i32,
    /// `numberAvailable`: nodes whose first pod is Ready for `minReadySeconds`.
    pub number_available: i32,
    /// `numberUnavailable`: `desiredNumberScheduled - numberAvailable`.
    pub number_unavailable: i32,
}

/// The status counters of `updateDaemonSetStatus` over the node list.
pub fn count_status(input: &SyncInput<'_>) -> StatusCounts {
    let mut counts = StatusCounts::default();
    let generation = template_generation(input.daemon_set);
    let min_ready = min_ready_seconds(input.daemon_set);
    for fit in input.fits {
        let first_pod = input
            .nodes_to_pods
            .get(&fit.node)
            .and_then(|pods| pods.iter().min_by(|lhs, rhs| creation_order(lhs, rhs)));
        match (fit.should_run, first_pod) {
            (true, None) => counts.desired_number_scheduled += 1,
            (true, Some(pod)) => {
                counts.desired_number_scheduled += 1;
                counts.current_number_scheduled += 1;
                if is_pod_ready(pod) {
                    counts.number_ready += 1;
                    if is_pod_available(pod, min_ready, input.now) {
                        counts.number_available += 1;
                    }
                }
                if is_pod_updated(pod, input.hash, generation) {
                    counts.updated_number_scheduled += 1;
                }
            }
            (false, Some(_)) => counts.number_misscheduled += 1,
            (false, None) => {}
        }
    }
    counts.number_unavailable = counts.desired_number_scheduled - counts.number_available;
    counts
}

/// `storeDaemonSetStatus`'s early return, inverted: a write is needed unless all seven
/// counters equal the stored ones and `status.observedGeneration` has caught up with
/// `metadata.generation` (whether or not this sync may raise it).
pub fn status_needs_write(daemon_set: &DaemonSet, counts: &StatusCounts) -> bool {
    let stored = daemon_set.status.as_ref();
    let generation = daemon_set.metadata.generation.unwrap_or(0);
    let observed = stored
        .and_then(|status| status.observed_generation)
        .unwrap_or(0);
    stored.map(stored_counts).unwrap_or_default() != *counts || observed < generation
}

fn stored_counts(status: &DaemonSetStatus) -> StatusCounts {
    StatusCounts {
        desired_number_scheduled: status.desired_number_scheduled,
        current_number_scheduled: status.current_number_scheduled,
        number_misscheduled: status.number_misscheduled,
        number_ready: status.number_ready,
        updated_number_scheduled: status.updated_number_scheduled.unwrap_or(0),
        number_available: status.number_available.unwrap_or(0),
        number_unavailable: status.number_unavailable.unwrap_or(0),
    }
}

/// Sets the counters on `status` (a copy of the lister's, or on the retry a fresh read) and,
/// when the sync processed this generation (`update_observed_generation`: expectations were
/// satisfied), `observedGeneration` to `daemon_set`'s `metadata.generation`.
pub fn apply_counts(
    status: &mut DaemonSetStatus,
    daemon_set: &DaemonSet,
    counts: &StatusCounts,
    update_observed_generation: bool,
) {
    if update_observed_generation {
        status.observed_generation = Some(daemon_set.metadata.generation.unwrap_or(0));
    }
    status.desired_number_scheduled = counts.desired_number_scheduled;
    status.current_number_scheduled = counts.current_number_scheduled;
    status.number_misscheduled = counts.number_misscheduled;
    status.number_ready = counts.number_ready;
    status.updated_number_scheduled = Some(counts.updated_number_scheduled);
    status.number_available = Some(counts.number_available);
    status.number_unavailable = Some(counts.number_unavailable);
}

/// The status to PUT, or `None` when nothing changed ([`status_needs_write`]): the stored
/// status with [`apply_counts`].
pub fn status_to_write(
    daemon_set: &DaemonSet,
    counts: &StatusCounts,
    update_observed_generation: bool,
) -> Option<DaemonSetStatus> {
    if !status_needs_write(daemon_set, counts) {
        return None;
    }
    let mut status = daemon_set.status.clone().unwrap_or_default();
    apply_counts(&mut status, daemon_set, counts, update_observed_generation);
    Some(status)
}

/// After a successful (or skipped) status write: sync again after `minReadySeconds` while some
/// ready pod is not yet available (upstream's safety net against clock skew; the pod handler
/// also requeues after `minReadySeconds + 1s` when a pod turns Ready).
pub fn availability_requeue(daemon_set: &DaemonSet, counts: &StatusCounts) -> Option<Duration> {
    let min_ready = min_ready_seconds(daemon_set);
    (min_ready > 0 && counts.number_ready != counts.number_available)
        .then(|| Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)))
}
