//! Pod-state predicates (upstream's `isCreated`, `isRunningAndReady`...): what every phase
//! asks of a pod, in one place so that the phases agree on when a pod is unavailable.

use controller_toolkit::pod_predicates::{is_pod_available, is_pod_ready};
use informer::CachedPod;
use k8s_openapi::jiff::Timestamp;

/// Whether the pod came from the API server (upstream `isCreated`: it has a phase).
pub fn is_created(pod: &CachedPod) -> bool {
    !phase(pod).is_empty()
}

pub(super) fn phase(pod: &CachedPod) -> &str {
    pod.status
        .as_ref()
        .and_then(|status| status.phase.as_deref())
        .unwrap_or_default()
}

/// Phase Failed or Succeeded: the pod will never run again (upstream `isFailed`/`isSucceeded`).
pub fn is_finished(pod: &CachedPod) -> bool {
    matches!(phase(pod), "Failed" | "Succeeded")
}

/// Whether the pod is being deleted.
pub fn is_terminating(pod: &CachedPod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Phase Running and condition Ready (upstream `isRunningAndReady`).
pub fn is_running_and_ready(pod: &CachedPod) -> bool {
    phase(pod) == "Running" && is_pod_ready(pod)
}

/// Running, ready, and ready for `min_ready_seconds` at `now` (upstream
/// `isRunningAndAvailable`).
pub fn is_running_and_available(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_running_and_ready(pod) && is_pod_available(pod, min_ready_seconds, now)
}

/// Missing, not running and ready, terminating, or not yet available.
pub fn is_unavailable(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    !is_created(pod)
        || is_terminating(pod)
        || !is_running_and_available(pod, min_ready_seconds, now)
}
