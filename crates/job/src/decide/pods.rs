//! What the Job controller reads of a pod, in one place: phase, finalizer, deletion, readiness,
//! `isPodFailed`, upstream's `ActivePods` order and the pod's finish time.
//!
//! Every decision module reads pods through these functions, so an absent field always reads as
//! the Go zero value upstream would see (`""` phase, no conditions, the zero time) and nothing
//! unwraps. The module sits under the others (it imports only [`super::spec`]) so that the index,
//! backoff, failure-policy and tracking rules can all use it without importing one another.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod, PodCondition};
use k8s_openapi::jiff::Timestamp;

use super::spec::{JOB_TRACKING_FINALIZER, JobView};

/// Pod phase `Pending`.
pub const POD_PENDING: &str = "Pending";
/// Pod phase `Running`.
pub const POD_RUNNING: &str = "Running";
/// Pod phase `Succeeded`.
pub const POD_SUCCEEDED: &str = "Succeeded";
/// Pod phase `Failed`.
pub const POD_FAILED: &str = "Failed";
/// Pod phase `Unknown`.
pub const POD_UNKNOWN: &str = "Unknown";
/// Pod condition type `Ready`.
pub const POD_READY: &str = "Ready";
/// Container `restartPolicy` marking a restartable init container (a sidecar).
pub const CONTAINER_RESTART_POLICY_ALWAYS: &str = "Always";

/// Go's zero `time.Time` (0001-01-01T00:00:00Z): what upstream reads for an unset timestamp,
/// and what its `IsZero` checks compare against.
pub const GO_ZERO_TIME: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// Whether `time` is Go's zero time (an unset `metav1.Time` reads as it).
pub fn is_zero_time(time: Timestamp) -> bool {
    time == GO_ZERO_TIME
}

/// `status.phase`, `""` when unset.
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// `metadata.uid`, `""` when unset.
pub fn uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// `metadata.name`, `""` when unset.
pub fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// `metadata.namespace`, `""` when unset.
pub fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or_default()
}

/// The value of annotation `key`, if present.
pub fn annotation<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether the pod has a `deletionTimestamp`.
pub fn is_deleted(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `hasJobTrackingFinalizer`: the pod carries [`JOB_TRACKING_FINALIZER`].
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == JOB_TRACKING_FINALIZER)
}

/// `podutil.IsPodTerminal`: phase `Succeeded` or `Failed`.
pub fn is_pod_terminal(pod: &Pod) -> bool {
    matches!(phase(pod), POD_SUCCEEDED | POD_FAILED)
}

/// `controller.IsPodActive`: not terminal and not being deleted.
pub fn is_pod_active(pod: &Pod) -> bool {
    !is_pod_terminal(pod) && !is_deleted(pod)
}

/// `controller.IsPodTerminating`: not terminal but being deleted.
pub fn is_pod_terminating(pod: &Pod) -> bool {
    !is_pod_terminal(pod) && is_deleted(pod)
}

/// The pod's first `Ready` condition (`podutil.GetPodReadyCondition`).
pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == POD_READY)
}

/// `podutil.IsPodReady`: the first `Ready` condition has status `True`.
pub fn is_pod_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// `controller.FilterActivePods`, keeping the order.
pub fn filter_active_pods<'a>(pods: &[&'a Pod]) -> Vec<&'a Pod> {
    pods.iter().copied().filter(|p| is_pod_active(p)).collect()
}

/// `controller.CountTerminatingPods`.
pub fn count_terminating_pods(pods: &[&Pod]) -> i32 {
    len_i32(pods.iter().filter(|p| is_pod_terminating(p)).count())
}

/// `countReadyPods`: pods that are ready (upstream passes the active pods).
pub fn count_ready_pods(pods: &[&Pod]) -> i32 {
    len_i32(pods.iter().filter(|p| is_pod_ready(p)).count())
}

/// `isPodFailed`: the pod is `Failed`; or, unless the Job only replaces failed pods
/// ([`JobView::only_replace_failed_pods`]), it is being deleted and did not succeed (a
/// deleted pod may never reach `Failed`, so it counts as failed at once).
pub fn is_pod_failed(pod: &Pod, job: &JobView<'_>) -> bool {
    if phase(pod) == POD_FAILED {
        return true;
    }
    if job.only_replace_failed_pods() {
        return false;
    }
    is_deleted(pod) && phase(pod) != POD_SUCCEEDED
}

/// `status.containerStatuses`, empty when unset.
pub fn container_statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
}

/// `status.initContainerStatuses`, empty when unset.
pub fn init_container_statuses(pod: &Pod) -> &[ContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default()
}

/// The names of the pod's restartable init containers (sidecars: `restartPolicy: Always`).
pub fn sidecar_names(pod: &Pod) -> BTreeSet<&str> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some(CONTAINER_RESTART_POLICY_ALWAYS))
        .map(|c| c.name.as_str())
        .collect()
}

/// `metadata.creationTimestamp`, Go's zero time when unset.
pub fn creation_time(pod: &Pod) -> Timestamp {
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(GO_ZERO_TIME, |t| t.0)
}

/// `podReadyTime`: when the first `Ready=True` condition last changed; Go's zero time when the
/// pod is not ready or the time is unset.
pub fn ready_time(pod: &Pod) -> Timestamp {
    if !is_pod_ready(pod) {
        return GO_ZERO_TIME;
    }
    pod.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .find(|c| c.type_ == POD_READY && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map_or(GO_ZERO_TIME, |t| t.0)
}

/// `maxContainerRestarts` (v1.36): the highest restart count of the regular containers, and of
/// the restartable (sidecar) init containers.
pub fn max_container_restarts(pod: &Pod) -> (i32, i32) {
    let regular = container_statuses(pod)
        .iter()
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    let sidecars = sidecar_names(pod);
    let sidecar = init_container_statuses(pod)
        .iter()
        .filter(|c| sidecars.contains(c.name.as_str()))
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    (regular, sidecar)
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or_default()
}

/// Upstream's `podPhaseToOrdinal`: `Pending` 0, `Unknown` 1, `Running` 2; phases missing from
/// its map (terminal, empty) read as 0.
fn phase_ordinal(pod: &Pod) -> u8 {
    match phase(pod) {
        POD_UNKNOWN => 1,
        POD_RUNNING => 2,
        _ => 0,
    }
}

/// `afterOrZero`: `a` is after `b`, a zero time counting as after any other.
fn after_or_zero(a: Timestamp, b: Timestamp) -> bool {
    if is_zero_time(a) || is_zero_time(b) {
        return is_zero_time(a);
    }
    a > b
}

/// `controller.ActivePods.Less`: whether `a` sorts before `b`, the pod sorting first being the
/// cheapest to lose (deleted first). The first rule telling them apart decides:
/// 1. unscheduled before scheduled;
/// 2. `Pending` < `Unknown` < `Running`;
/// 3. not ready before ready;
/// 4. both ready: ready more recently first (a zero ready time first);
/// 5. more restarts first (regular containers, then sidecars);
/// 6. created more recently first (a zero creation time first).
pub fn active_pods_less(a: &Pod, b: &Pod) -> bool {
    let (node_a, node_b) = (node_name(a), node_name(b));
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return node_a.is_empty();
    }
    let (phase_a, phase_b) = (phase_ordinal(a), phase_ordinal(b));
    if phase_a != phase_b {
        return phase_a < phase_b;
    }
    let (ready_a, ready_b) = (is_pod_ready(a), is_pod_ready(b));
    if ready_a != ready_b {
        return !ready_a;
    }
    if ready_a && ready_b {
        let (since_a, since_b) = (ready_time(a), ready_time(b));
        if since_a != since_b {
            return after_or_zero(since_a, since_b);
        }
    }
    let (regular_a, sidecar_a) = max_container_restarts(a);
    let (regular_b, sidecar_b) = max_container_restarts(b);
    if regular_a != regular_b {
        return regular_a > regular_b;
    }
    if sidecar_a != sidecar_b {
        return sidecar_a > sidecar_b;
    }
    let (created_a, created_b) = (creation_time(a), creation_time(b));
    if created_a != created_b {
        return after_or_zero(created_a, created_b);
    }
    false
}

/// Sorts `pods` by [`active_pods_less`] (`sort.Sort(controller.ActivePods(pods))`), stably.
/// Upstream's sort is not stable, so pods equal under the order may come out in another order
/// there; here they keep their input order.
pub fn sort_active_pods(pods: &mut [&Pod]) {
    stable_sort_by_less(pods, |a, b| active_pods_less(a, b));
}

/// A stable sort driven by a "less" predicate. Unlike `slice::sort_by`, it never panics when
/// the predicate is not a strict weak order (hostile timestamps can make upstream's orders
/// inconsistent); it is a merge sort, O(n log n).
pub fn stable_sort_by_less<T: Copy>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    merge_sort(items, &less);
}

fn merge_sort<T: Copy>(items: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    if items.len() <= 1 {
        return;
    }
    let mid = items.len() / 2;
    merge_sort(&mut items[..mid], less);
    merge_sort(&mut items[mid..], less);
    let mut merged = Vec::with_capacity(items.len());
    let (mut i, mut j) = (0, mid);
    while i < mid && j < items.len() {
        if less(&items[j], &items[i]) {
            merged.push(items[j]);
            j += 1;
        } else {
            merged.push(items[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&items[i..mid]);
    merged.extend_from_slice(&items[j..]);
    items.copy_from_slice(&merged);
}

/// Go's `int32(len(x))`: a length as an `i32`, wrapping as Go's conversion does (no real list
/// comes near `i32::MAX`).
pub fn len_i32(len: usize) -> i32 {
    len as i32
}
