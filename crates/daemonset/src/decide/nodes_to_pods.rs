//! The pods of each node and what `manage` does about them (upstream `getNodesToDaemonPods`,
//! `util.GetTargetNodeName`, `podsShouldBeOnNode`, `getUnscheduledPodsWithoutNode`,
//! `manage`): nodes that need a daemon pod, and pods to delete because they failed,
//! succeeded, are surplus on their node, or sit on a node they may not stay on.
//!
//! A daemon pod is created unbound, pinned to its node by a required node affinity, and
//! counts for that node before the scheduler binds it; otherwise every sync would create
//! another one. Its node is therefore `spec.nodeName` or the pinning term, which the informer's
//! [`CachedPod`] keeps for this (`CachedPod::target_node_name`, upstream's
//! `util.GetTargetNodeName`).

use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;

use controller_toolkit::{pod_key, pod_predicates::is_pod_available, pod_predicates::is_pod_ready};
use informer::CachedPod;

use super::backoff::{FailedPodBackoff, failed_pods_backoff_key};
use super::budget::allows_surge;
use super::events::{Event, failed_daemon_pod, succeeded_daemon_pod};
use super::node_fit::NodeFit;
use super::spec::min_ready_seconds;
use super::template::DAEMONSET_REVISION_HASH_LABEL;
use super::{NodesToPods, SyncInput};

const PHASE_FAILED: &str = "Failed";
const PHASE_SUCCEEDED: &str = "Succeeded";

fn is_terminal(pod: &CachedPod) -> bool {
    matches!(pod.phase(), Some(PHASE_FAILED | PHASE_SUCCEEDED))
}

fn is_deleting(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `getNodesToDaemonPods`: the claimed `pods` grouped by the node each is for
/// (`CachedPod::target_node_name`; a pod for no node is left out, as upstream skips a pod
/// whose `GetTargetNodeName` fails). Pods both terminal (`Failed`/`Succeeded`) and being
/// deleted are left out too, unless `include_deleted_terminal` (only history cleanup counts
/// them); terminating pods still running stay.
pub fn nodes_to_daemon_pods(
    pods: &[Arc<CachedPod>],
    include_deleted_terminal: bool,
) -> NodesToPods {
    let mut nodes_to_pods = NodesToPods::new();
    for pod in pods {
        if !include_deleted_terminal && is_terminal(pod) && is_deleting(pod) {
            continue;
        }
        if let Some(node) = pod.target_node_name() {
            nodes_to_pods
                .entry(node.to_owned())
                .or_default()
                .push(pod.clone());
        }
    }
    nodes_to_pods
}

/// `podByCreationTimestampAndPhase`: bound pods (non-empty `spec.nodeName`) first, then the
/// earlier `creationTimestamp` (a missing one is Go's zero time, the earliest), then the
/// smaller name. The first pod of a node is the one kept and the one its status counts.
pub fn creation_order(lhs: &CachedPod, rhs: &CachedPod) -> Ordering {
    let unbound = |pod: &CachedPod| pod.node_name().is_none_or(str::is_empty);
    let created = |pod: &CachedPod| pod.metadata.creation_timestamp.as_ref().map(|time| time.0);
    unbound(lhs)
        .cmp(&unbound(rhs))
        .then_with(|| created(lhs).cmp(&created(rhs)))
        .then_with(|| lhs.metadata.name.cmp(&rhs.metadata.name))
}

/// Sorts `pods` by [`creation_order`].
pub fn sort_by_creation_timestamp_and_phase(pods: &mut [Arc<CachedPod>]) {
    pods.sort_by(|lhs, rhs| creation_order(lhs, rhs));
}

/// What `manage` hands to `syncNodes`, with what it does on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagePlan {
    /// Nodes that need a daemon pod, in node-list order.
    pub create_on_nodes: Vec<String>,
    /// Keys (`namespace/name`) of the pods to delete.
    pub delete_pods: Vec<String>,
    /// Events to record on the DaemonSet (`FailedDaemonPod`, `SucceededDaemonPod`).
    pub events: Vec<Event>,
    /// Sync again after this long: a failed pod waits out its backoff
    /// (`enqueueDaemonSetAfter`; of several, the earliest).
    pub requeue_after: Option<Duration>,
}

impl ManagePlan {
    fn requeue_within(&mut self, delay: Duration) {
        self.requeue_after = Some(
            self.requeue_after
                .map_or(delay, |current| current.min(delay)),
        );
    }

    fn append(&mut self, other: ManagePlan) {
        self.create_on_nodes.extend(other.create_on_nodes);
        self.delete_pods.extend(other.delete_pods);
        self.events.extend(other.events);
        if let Some(delay) = other.requeue_after {
            self.requeue_within(delay);
        }
    }
}

/// `podsShouldBeOnNode` for the node of `fit`:
/// 1. it should run a pod and has none: create one;
/// 2. else, if a pod may keep running there: failed pods are deleted (at most once per
///    backoff window, with a `FailedDaemonPod` warning; within the window the DaemonSet is
///    requeued after the window instead), succeeded ones too (`SucceededDaemonPod`); of the
///    others ("running"), without surge all but the first by [`creation_order`] are deleted;
///    with surge a node that should run a pod and has no running one gets one, and of
///    several the oldest pod at the current hash and the oldest other one are kept, the
///    other one only while it is Ready and the current one is not yet available;
/// 3. else, if it has pods, all of them not being deleted are deleted.
///
/// Pods being deleted are never deleted again; one that is still running blocks a new pod
/// unless the DaemonSet surges.
pub fn pods_should_be_on_node(
    input: &SyncInput<'_>,
    fit: &NodeFit,
    backoff: &mut FailedPodBackoff,
) -> ManagePlan {
    let mut plan = ManagePlan::default();
    let pods = input.nodes_to_pods.get(&fit.node);
    match pods {
        None if fit.should_run => plan.create_on_nodes.push(fit.node.clone()),
        _ if fit.should_continue_running => {
            let pods = pods.map_or(&[][..], Vec::as_slice);
            let running = delete_finished_pods(input, fit, pods, backoff, &mut plan);
            keep_running_pods(input, fit, running, &mut plan);
        }
        Some(pods) => plan.delete_pods.extend(
            pods.iter()
                .filter(|pod| !is_deleting(pod))
                .map(|pod| pod_key(pod)),
        ),
        None => {}
    }
    plan
}

/// Step 2's walk: deletes failed (outside their backoff) and succeeded pods; returns the
/// others not being deleted.
fn delete_finished_pods(
    input: &SyncInput<'_>,
    fit: &NodeFit,
    pods: &[Arc<CachedPod>],
    backoff: &mut FailedPodBackoff,
    plan: &mut ManagePlan,
) -> Vec<Arc<CachedPod>> {
    let mut running = Vec::new();
    for pod in pods.iter().filter(|pod| !is_deleting(pod)) {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        match pod.phase() {
            Some(PHASE_FAILED) => {
                // The kubelet may reject the pod again at once: back off per node.
                let key = failed_pods_backoff_key(input.daemon_set, &fit.node);
                if backoff.is_in_backoff_since_update(&key, input.now) {
                    plan.requeue_within(backoff.get(&key));
                    continue;
                }
                backoff.next(&key, input.now);
                plan.events
                    .push(failed_daemon_pod(namespace, name, &fit.node));
                plan.delete_pods.push(pod_key(pod));
            }
            Some(PHASE_SUCCEEDED) => {
                plan.events
                    .push(succeeded_daemon_pod(namespace, name, &fit.node));
                plan.delete_pods.push(pod_key(pod));
            }
            _ => running.push(pod.clone()),
        }
    }
    running
}

/// Step 2's choice among the running pods of a node.
fn keep_running_pods(
    input: &SyncInput<'_>,
    fit: &NodeFit,
    mut running: Vec<Arc<CachedPod>>,
    plan: &mut ManagePlan,
) {
    if !allows_surge(input.daemon_set) {
        // Without surge a node runs one pod: the first one stays.
        sort_by_creation_timestamp_and_phase(&mut running);
        plan.delete_pods
            .extend(running.iter().skip(1).map(|pod| pod_key(pod)));
        return;
    }
    if running.len() <= 1 {
        // Surging: a node needs one pod not being deleted.
        if running.is_empty() && fit.should_run {
            plan.create_on_nodes.push(fit.node.clone());
        }
        return;
    }
    sort_by_creation_timestamp_and_phase(&mut running);
    let mut oldest_new: Option<&Arc<CachedPod>> = None;
    let mut oldest_old: Option<&Arc<CachedPod>> = None;
    for pod in &running {
        let current = pod
            .metadata
            .labels
            .get(DAEMONSET_REVISION_HASH_LABEL)
            .unwrap_or_default()
            == input.hash;
        let slot = if current {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(pod);
        } else {
            plan.delete_pods.push(pod_key(pod));
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        let min_ready = min_ready_seconds(input.daemon_set);
        if !is_pod_ready(old) || is_pod_available(new, min_ready, input.now) {
            plan.delete_pods.push(pod_key(old));
        }
    }
}

/// `getUnscheduledPodsWithoutNode`: keys of the pods for nodes missing from the node list
/// that are not bound (pod GC only collects bound pods of vanished nodes).
pub fn unscheduled_pods_without_node(fits: &[NodeFit], nodes_to_pods: &NodesToPods) -> Vec<String> {
    nodes_to_pods
        .iter()
        .filter(|(node, _)| !fits.iter().any(|fit| &fit.node == *node))
        .flat_map(|(_, pods)| pods)
        .filter(|pod| pod.node_name().is_none_or(str::is_empty))
        .map(|pod| pod_key(pod))
        .collect()
}

/// `manage`: [`pods_should_be_on_node`] for every node of the node list, in order, then the
/// unbound pods of vanished nodes ([`unscheduled_pods_without_node`]). The result goes to
/// [`super::slow_start::SyncNodesPlan::new`].
pub fn manage(input: &SyncInput<'_>, backoff: &mut FailedPodBackoff) -> ManagePlan {
    let mut plan = ManagePlan::default();
    for fit in input.fits {
        plan.append(pods_should_be_on_node(input, fit, backoff));
    }
    plan.delete_pods.extend(unscheduled_pods_without_node(
        input.fits,
        input.nodes_to_pods,
    ));
    plan
}
