//! When a workload controller looks again so that ready pods turning available are counted.
//!
//! A pod becomes available `minReadySeconds` after its Ready transition without any event the
//! controller watches, so after a status write that still counts ready-but-unavailable pods the
//! owner is requeued. Upstream computes the delay the same way in the ReplicaSet controller
//! (`syncReplicaSet`, kubernetes#132121) and, since v1.36, the StatefulSet controller
//! (`sync`, kubernetes#135428): the earliest moment a ready pod passes `minReadySeconds`,
//! falling back to `minReadySeconds` itself, instead of always waiting the full
//! `minReadySeconds`.

use std::{sync::Arc, time::Duration};

use informer::CachedPod;
use k8s_openapi::jiff::Timestamp;

use crate::pod_predicates::{is_pod_ready, pod_ready_time};

/// When to look again for pods turning available, or `None` when no re-check is needed
/// (`min_ready_seconds` is 0, or every ready pod is already available).
///
/// `ready` and `available` are the counts of the status just written; `pods` are the owner's
/// pods. The delay defaults to `min_ready_seconds` and is overridden by the earliest moment a
/// ready pod's `lastTransitionTime + min_ready_seconds` still lies strictly after `now` (the
/// clock the status was computed with); that moment is then measured again against
/// `after_write`, the clock after the status write, and a moment already past gives zero.
pub fn availability_requeue(
    min_ready_seconds: i32,
    ready: i32,
    available: i32,
    pods: &[Arc<CachedPod>],
    now: Timestamp,
    after_write: Timestamp,
) -> Option<Duration> {
    if min_ready_seconds <= 0 || ready == available {
        return None;
    }
    let min_ready = Duration::from_secs(u64::try_from(min_ready_seconds).unwrap_or(0));
    let earliest = pods
        .iter()
        .filter(|pod| is_pod_ready(pod))
        .filter_map(|pod| pod_ready_time(pod))
        .filter_map(|ready_since| {
            let available_at = ready_since.checked_add(min_ready).ok()?;
            let remaining = available_at.duration_since(now);
            remaining.is_positive().then_some(available_at)
        })
        .min();
    match earliest {
        Some(available_at) => {
            let remaining = available_at.duration_since(after_write);
            Some(Duration::try_from(remaining).unwrap_or(Duration::ZERO))
        }
        None => Some(min_ready),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::SignedDuration;
    use serde_json::json;

    use super::*;

    fn now() -> Timestamp {
        "2026-11-22T10:00:00Z".parse().unwrap()
    }

    /// A running pod Ready since `ready_since` seconds before `now()`, or not ready.
    fn pod(ready_since: Option<i64>) -> Arc<CachedPod> {
        let conditions = match ready_since {
            Some(seconds) => {
                let at = now() - SignedDuration::from_secs(seconds);
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": at.to_string()}])
            }
            None => json!([{"type": "Ready", "status": "False"}]),
        };
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": "p"},
                "status": {"phase": "Running", "conditions": conditions}
            }))
            .unwrap(),
        )
    }

    #[test]
    fn requeues_for_the_first_pod_to_turn_available() {
        let second = SignedDuration::from_secs(1);
        let pods = vec![pod(Some(2)), pod(Some(7)), pod(None)];
        // (name, minReadySeconds, ready, available, pods, clock after the write, want)
        type Case = (
            &'static str,
            i32,
            i32,
            i32,
            Vec<Arc<CachedPod>>,
            Timestamp,
            Option<Duration>,
        );
        let cases: Vec<Case> = vec![
            (
                "no minReadySeconds: ready is available",
                0,
                2,
                0,
                pods.clone(),
                now(),
                None,
            ),
            (
                "every ready pod available",
                10,
                2,
                2,
                pods.clone(),
                now(),
                None,
            ),
            (
                "nobody ready yet: fall back to minReadySeconds",
                10,
                1,
                0,
                vec![pod(None)],
                now(),
                Some(Duration::from_secs(10)),
            ),
            (
                "the pod ready for 7 s turns available first, in 3 s; one second went by writing",
                10,
                2,
                0,
                pods.clone(),
                now() + second,
                Some(Duration::from_secs(2)),
            ),
            (
                "measured again after the write: never negative",
                10,
                2,
                0,
                pods.clone(),
                now() + second * 5,
                Some(Duration::ZERO),
            ),
            (
                "a pod exactly at minReadySeconds is not in the future: fall back",
                7,
                2,
                1,
                vec![pod(Some(7))],
                now(),
                Some(Duration::from_secs(7)),
            ),
        ];
        for (name, min_ready, ready, available, pods, after_write, want) in cases {
            assert_eq!(
                availability_requeue(min_ready, ready, available, &pods, now(), after_write),
                want,
                "{name}"
            );
        }
    }
}
