//! What the Job controller reads of a pod, in one place: phase, finalizer, deletion,
//! annotations, `isPodFailed`, container statuses and creation time, all over the pod as the
//! informer caches it ([`CachedPod`]).
//!
//! Every decision module reads pods through these functions, so an absent field always reads as
//! the Go zero value upstream would see (`""` phase, no conditions, the zero time) and nothing
//! unwraps. The predicates every workload controller shares (active, terminating, terminal,
//! ready) are `controller_toolkit::pod_predicates`', re-exported here; upstream's `ActivePods`
//! order is `controller_toolkit::ranking`'s. The module sits under the others (it imports only
//! [`super::spec`]) so that the index, backoff, failure-policy and tracking rules can all use it
//! without importing one another.

use std::collections::BTreeSet;

use informer::{CachedContainerStatus, CachedPod};
use k8s_openapi::jiff::Timestamp;

pub use controller_toolkit::pod_predicates::{
    is_pod_active, is_pod_ready, is_pod_terminal, is_pod_terminating,
};

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
pub fn phase(pod: &CachedPod) -> &str {
    pod.phase().unwrap_or_default()
}

/// `metadata.uid`, `""` when unset.
pub fn uid(pod: &CachedPod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// `metadata.name`, `""` when unset.
pub fn name(pod: &CachedPod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// `metadata.namespace`, `""` when unset.
pub fn namespace(pod: &CachedPod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or_default()
}

/// The value of annotation `key`, if present.
pub fn annotation<'p>(pod: &'p CachedPod, key: &str) -> Option<&'p str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// Whether the pod has a `deletionTimestamp`.
pub fn is_deleted(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `hasJobTrackingFinalizer`: the pod carries [`JOB_TRACKING_FINALIZER`].
pub fn has_tracking_finalizer(pod: &CachedPod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == JOB_TRACKING_FINALIZER)
}

/// Whether no rule reads `pod` any more: a pod a Job controls that finished (`Succeeded` or
/// `Failed`) and carries no finalizer. Its Job counted it (the tracking finalizer goes only
/// once the status holds the pod), and every rule reads finished pods only while they hold
/// that finalizer (the `FailJob` message of a counted pod was written with it, as the
/// `FailureTarget` condition later syncs read). No other controller reads a Job's pods, so the
/// pod cache forgets them (`informer::SharedInformer::forget_when`): the manager's memory does
/// not grow with the finished pods of its Jobs, and a sync does not walk them.
pub fn is_counted_and_freed(pod: &CachedPod) -> bool {
    is_pod_terminal(pod)
        && pod.metadata.finalizers.as_ref().is_none_or(Vec::is_empty)
        && controller_toolkit::controller_ref::controller_of(&pod.metadata)
            .is_some_and(|owner| owner.kind == "Job" && owner.api_version == "batch/v1")
}

/// `controller.FilterActivePods`, keeping the order.
pub fn filter_active_pods<'a>(pods: &[&'a CachedPod]) -> Vec<&'a CachedPod> {
    pods.iter().copied().filter(|p| is_pod_active(p)).collect()
}

/// `controller.CountTerminatingPods`.
pub fn count_terminating_pods(pods: &[&CachedPod]) -> i32 {
    len_i32(pods.iter().filter(|p| is_pod_terminating(p)).count())
}

/// `countReadyPods`: pods that are ready (upstream passes the active pods).
pub fn count_ready_pods(pods: &[&CachedPod]) -> i32 {
    len_i32(pods.iter().filter(|p| is_pod_ready(p)).count())
}

/// `isPodFailed`: the pod is `Failed`; or, unless the Job only replaces failed pods
/// ([`JobView::only_replace_failed_pods`]), it is being deleted and did not succeed (a
/// deleted pod may never reach `Failed`, so it counts as failed at once).
pub fn is_pod_failed(pod: &CachedPod, job: &JobView<'_>) -> bool {
    if phase(pod) == POD_FAILED {
        return true;
    }
    if job.only_replace_failed_pods() {
        return false;
    }
    is_deleted(pod) && phase(pod) != POD_SUCCEEDED
}

/// `status.containerStatuses`, empty when unset.
pub fn container_statuses(pod: &CachedPod) -> &[CachedContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or_default()
}

/// `status.initContainerStatuses`, empty when unset.
pub fn init_container_statuses(pod: &CachedPod) -> &[CachedContainerStatus] {
    pod.status
        .as_ref()
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or_default()
}

/// The names of the pod's restartable init containers (sidecars: `restartPolicy: Always`).
pub fn sidecar_names(pod: &CachedPod) -> BTreeSet<&str> {
    pod.spec
        .iter()
        .flat_map(|spec| spec.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some(CONTAINER_RESTART_POLICY_ALWAYS))
        .map(|c| c.name.as_str())
        .collect()
}

/// `metadata.creationTimestamp`, Go's zero time when unset.
pub fn creation_time(pod: &CachedPod) -> Timestamp {
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(GO_ZERO_TIME, |t| t.0)
}

/// Go's `int32(len(x))`: a length as an `i32`, wrapping as Go's conversion does (no real list
/// comes near `i32::MAX`).
pub fn len_i32(len: usize) -> i32 {
    len as i32
}
