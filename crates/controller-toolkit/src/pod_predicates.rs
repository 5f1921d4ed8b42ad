//! Pod and ReplicaSet predicates shared by the workload controllers.
//!
//! These decide which pods count towards replicas, which are ready and which are available,
//! so every controller must agree on them exactly. Availability uses the Ready condition's
//! `lastTransitionTime` (not the pod start time) and takes `now` as a parameter so callers and
//! tests control the clock.

use std::sync::Arc;

use informer::{CachedPod, ReadyCondition};
use k8s_openapi::jiff::Timestamp;

const PHASE_SUCCEEDED: &str = "Succeeded";
const PHASE_FAILED: &str = "Failed";
const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// A pod whose containers will not run again: phase `Succeeded` or `Failed` (upstream
/// `podutil.IsPodTerminal`).
pub fn is_pod_terminal(pod: &CachedPod) -> bool {
    matches!(pod.phase(), Some(PHASE_SUCCEEDED | PHASE_FAILED))
}

/// A pod that still counts as a replica: not Succeeded, not Failed and not being deleted
/// (upstream `IsPodActive`).
pub fn is_pod_active(pod: &CachedPod) -> bool {
    !is_pod_terminal(pod) && pod.metadata.deletion_timestamp.is_none()
}

/// The active pods of `pods`, in their original order (upstream `FilterActivePods`).
pub fn filter_active_pods(pods: &[Arc<CachedPod>]) -> Vec<Arc<CachedPod>> {
    pods.iter()
        .filter(|pod| {
            let active = is_pod_active(pod);
            if !active {
                tracing::trace!(
                    pod = %crate::keys::pod_key(pod),
                    phase = pod.phase().unwrap_or_default(),
                    deleting = pod.metadata.deletion_timestamp.is_some(),
                    "ignoring inactive pod"
                );
            }
            active
        })
        .cloned()
        .collect()
}

/// A pod that is being deleted but whose containers may still run: deletionTimestamp set and
/// phase not terminal (upstream `isPodTerminating`, feeds `status.terminatingReplicas`).
pub fn is_pod_terminating(pod: &CachedPod) -> bool {
    !is_pod_terminal(pod) && pod.metadata.deletion_timestamp.is_some()
}

/// The first condition of type `Ready`, as upstream's `GetPodReadyCondition` (the cache's
/// ready slot, kept whatever other conditions it keeps).
pub fn pod_ready_condition(pod: &CachedPod) -> Option<ReadyCondition> {
    pod.ready_condition()
}

/// Whether the pod's Ready condition exists and is `True` (upstream `IsPodReady`).
pub fn is_pod_ready(pod: &CachedPod) -> bool {
    pod_ready_condition(pod).is_some_and(|c| c.is_true)
}

/// When the pod last became ready: the `lastTransitionTime` of its True Ready condition.
/// `None` stands for upstream's zero time (not ready, or no transition time recorded).
pub fn pod_ready_time(pod: &CachedPod) -> Option<Timestamp> {
    pod_ready_condition(pod)
        .filter(|c| c.is_true)
        .and_then(|c| c.last_transition_time)
        .map(|t| t.0)
}

/// Whether the pod is ready and has been for at least `min_ready_seconds` at `now`
/// (upstream `IsPodAvailable`): ready, and either `min_ready_seconds == 0` or the Ready
/// condition's transition time plus `min_ready_seconds` is at or before `now`.
///
/// The boundary is inclusive since v1.34 (kubernetes#132122): a pod Ready for exactly
/// `minReadySeconds` is available, so the requeue scheduled for that moment finds it available
/// instead of waiting for another sync. Callers computing a status pass one `now` for all pods.
pub fn is_pod_available(pod: &CachedPod, min_ready_seconds: i32, now: Timestamp) -> bool {
    if !is_pod_ready(pod) {
        return false;
    }
    if min_ready_seconds == 0 {
        return true;
    }
    let Some(ready_since) = pod_ready_condition(pod).and_then(|c| c.last_transition_time) else {
        return false;
    };
    let available_at =
        ready_since.0.as_nanosecond() + i128::from(min_ready_seconds) * NANOS_PER_SECOND;
    available_at <= now.as_nanosecond()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const CONDITION_READY: &str = "Ready";
    const CONDITION_TRUE: &str = "True";

    fn ts(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("valid timestamp")
    }

    struct PodShape {
        phase: Option<&'static str>,
        deleting: bool,
        ready: Option<(&'static str, Option<i64>)>,
    }

    fn pod(shape: PodShape) -> CachedPod {
        CachedPod::from(full_pod(shape))
    }

    /// The pod as the API server returns it, before the cache keeps what it reads.
    fn full_pod(shape: PodShape) -> Pod {
        let mut conditions = vec![PodCondition {
            type_: "PodScheduled".to_owned(),
            status: "True".to_owned(),
            ..PodCondition::default()
        }];
        if let Some((status, transition)) = shape.ready {
            conditions.push(PodCondition {
                type_: CONDITION_READY.to_owned(),
                status: status.to_owned(),
                last_transition_time: transition.map(|s| Time(ts(s))),
                ..PodCondition::default()
            });
        }
        Pod {
            metadata: ObjectMeta {
                namespace: Some("ns".to_owned()),
                name: Some("p".to_owned()),
                deletion_timestamp: shape.deleting.then(|| Time(ts(100))),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                phase: shape.phase.map(str::to_owned),
                conditions: Some(conditions),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    fn phase_pod(phase: Option<&'static str>, deleting: bool) -> CachedPod {
        pod(PodShape {
            phase,
            deleting,
            ready: None,
        })
    }

    #[test]
    fn active_and_terminating_by_phase_and_deletion() {
        // (phase, deleting, active, terminating)
        let cases = [
            (Some("Pending"), false, true, false),
            (Some("Running"), false, true, false),
            (Some("Unknown"), false, true, false),
            (None, false, true, false),
            (Some("Succeeded"), false, false, false),
            (Some("Failed"), false, false, false),
            (Some("Pending"), true, false, true),
            (Some("Running"), true, false, true),
            (None, true, false, true),
            (Some("Succeeded"), true, false, false),
            (Some("Failed"), true, false, false),
        ];
        for (phase, deleting, active, terminating) in cases {
            let p = phase_pod(phase, deleting);
            assert_eq!(is_pod_active(&p), active, "active {phase:?} {deleting}");
            assert_eq!(
                is_pod_terminating(&p),
                terminating,
                "terminating {phase:?} {deleting}"
            );
        }
    }

    #[test]
    fn filters_keep_order_and_count_terminating() {
        let pods: Vec<Arc<CachedPod>> = [
            (Some("Running"), false),
            (Some("Running"), true),
            (Some("Failed"), false),
            (Some("Pending"), false),
            (Some("Pending"), true),
            (Some("Succeeded"), true),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (phase, deleting))| {
            let mut p = phase_pod(phase, deleting);
            p.metadata.name = Some(format!("p{i}"));
            Arc::new(p)
        })
        .collect();
        let names = |pods: Vec<Arc<CachedPod>>| -> Vec<String> {
            pods.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(names(filter_active_pods(&pods)), ["p0", "p3"]);
        let terminating: Vec<String> = pods
            .iter()
            .filter(|pod| is_pod_terminating(pod))
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(terminating, ["p1", "p4"]);
    }

    #[test]
    fn readiness_and_ready_time() {
        // (ready condition, ready, ready time)
        let cases = [
            (None, false, None),
            (Some(("False", Some(50))), false, None),
            (Some(("Unknown", Some(50))), false, None),
            (Some(("True", Some(50))), true, Some(ts(50))),
            (Some(("True", None)), true, None),
        ];
        for (ready, want_ready, want_time) in cases {
            let p = pod(PodShape {
                phase: Some("Running"),
                deleting: false,
                ready,
            });
            assert_eq!(is_pod_ready(&p), want_ready, "{ready:?}");
            assert_eq!(pod_ready_time(&p), want_time, "{ready:?}");
        }
    }

    #[test]
    fn only_the_first_ready_condition_counts() {
        let mut full = full_pod(PodShape {
            phase: Some("Running"),
            deleting: false,
            ready: Some(("False", Some(10))),
        });
        if let Some(conditions) = full.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            conditions.push(PodCondition {
                type_: CONDITION_READY.to_owned(),
                status: CONDITION_TRUE.to_owned(),
                ..PodCondition::default()
            });
        }
        let decoded: CachedPod =
            serde_json::from_value(serde_json::to_value(&full).expect("a pod encodes"))
                .expect("a pod decodes");
        for p in [CachedPod::from(&full), decoded] {
            assert!(!is_pod_ready(&p));
            assert_eq!(pod_ready_time(&p), None);
        }
    }

    #[test]
    fn availability_needs_ready_for_at_least_min_ready_seconds() {
        // (ready condition, minReadySeconds, now, available)
        let cases = [
            (None, 0, 1000, false),
            (Some(("False", Some(100))), 0, 1000, false),
            (Some(("True", Some(100))), 0, 100, true),
            (Some(("True", None)), 0, 100, true),
            (Some(("True", None)), 5, 1000, false),
            (Some(("True", Some(100))), 10, 109, false),
            (Some(("True", Some(100))), 10, 110, true),
            (Some(("True", Some(100))), 10, 111, true),
            // The case: Ready for exactly 51 s with minReadySeconds 51.
            (Some(("True", Some(100))), 51, 151, true),
            (Some(("True", Some(100))), 51, 150, false),
            (Some(("True", Some(100))), 10, 50, false),
        ];
        for (ready, min_ready, now, want) in cases {
            let p = pod(PodShape {
                phase: Some("Running"),
                deleting: false,
                ready,
            });
            assert_eq!(
                is_pod_available(&p, min_ready, ts(now)),
                want,
                "{ready:?} min={min_ready} now={now}"
            );
        }
    }

    #[test]
    fn availability_boundary_is_inclusive_at_nanosecond_precision() {
        let p = pod(PodShape {
            phase: Some("Running"),
            deleting: false,
            ready: Some(("True", Some(100))),
        });
        let at = |nanos: i128| Timestamp::from_nanosecond(nanos).expect("valid");
        assert!(!is_pod_available(&p, 10, at(110 * NANOS_PER_SECOND - 1)));
        assert!(is_pod_available(&p, 10, at(110 * NANOS_PER_SECOND)));
        assert!(is_pod_available(&p, 10, at(110 * NANOS_PER_SECOND + 1)));
    }
}
