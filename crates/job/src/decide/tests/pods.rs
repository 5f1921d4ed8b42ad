//! The pod predicates: `isPodFailed`, active, terminating and ready pods. (Upstream's
//! `ActivePods` order is `controller_toolkit::ranking`'s, tested there.)

use serde_json::json;

use super::{PodBuilder, build, job, now_plus, pod, refs, uids};
use crate::decide::pods::{
    GO_ZERO_TIME, count_ready_pods, count_terminating_pods, filter_active_pods,
    is_counted_and_freed, is_pod_active, is_pod_failed, is_pod_ready, is_pod_terminating,
    is_zero_time,
};
use crate::decide::spec::JobView;

#[test]
fn is_pod_failed_table() {
    // (name, job spec patch, pod, failed)
    let policy = json!({"podFailurePolicy": {"rules": []}});
    let rows: [(&str, serde_json::Value, PodBuilder, bool); 9] = [
        ("failed", json!({}), pod().phase("Failed"), true),
        ("running", json!({}), pod().phase("Running"), false),
        (
            "deleted running pod counts as failed",
            json!({}),
            pod().phase("Running").deletion_timestamp(),
            true,
        ),
        (
            "deleted pending pod counts as failed",
            json!({}),
            pod().phase("Pending").deletion_timestamp(),
            true,
        ),
        (
            "deleted pod without phase counts as failed",
            json!({}),
            pod().deletion_timestamp(),
            true,
        ),
        (
            "deleted succeeded pod did not fail",
            json!({}),
            pod().phase("Succeeded").deletion_timestamp(),
            false,
        ),
        (
            "with a failure policy a deleted running pod is not failed yet",
            policy.clone(),
            pod().phase("Running").deletion_timestamp(),
            false,
        ),
        (
            "with podReplacementPolicy Failed neither",
            json!({"podReplacementPolicy": "Failed"}),
            pod().phase("Running").deletion_timestamp(),
            false,
        ),
        (
            "with a failure policy a Failed pod is failed",
            policy,
            pod().phase("Failed"),
            true,
        ),
    ];
    for (name, spec, pod, want) in rows {
        let job = job(json!({ "spec": spec }));
        assert_eq!(
            is_pod_failed(&pod.build(), &JobView::new(&job)),
            want,
            "{name}"
        );
    }
}

#[test]
fn active_terminating_ready_table() {
    // (name, pod, active, terminating, ready)
    let rows: [(&str, PodBuilder, bool, bool, bool); 8] = [
        ("pending", pod().phase("Pending"), true, false, false),
        (
            "running ready",
            pod().phase("Running").condition("Ready", "True"),
            true,
            false,
            true,
        ),
        (
            "running not ready",
            pod().phase("Running").condition("Ready", "False"),
            true,
            false,
            false,
        ),
        ("no phase", pod(), true, false, false),
        ("succeeded", pod().phase("Succeeded"), false, false, false),
        (
            "failed and deleted",
            pod().phase("Failed").deletion_timestamp(),
            false,
            false,
            false,
        ),
        (
            "running and deleted",
            pod().phase("Running").deletion_timestamp(),
            false,
            true,
            false,
        ),
        (
            "only the first Ready condition counts",
            pod()
                .phase("Running")
                .condition("Ready", "False")
                .condition("Ready", "True"),
            true,
            false,
            false,
        ),
    ];
    for (name, pod, active, terminating, ready) in rows {
        let pod = pod.build();
        assert_eq!(is_pod_active(&pod), active, "{name}: active");
        assert_eq!(is_pod_terminating(&pod), terminating, "{name}: terminating");
        assert_eq!(is_pod_ready(&pod), ready, "{name}: ready");
    }
    let pods = build(vec![
        pod().uid("a").phase("Running").condition("Ready", "True"),
        pod().uid("b").phase("Running").deletion_timestamp(),
        pod().uid("c").phase("Succeeded"),
        pod().uid("d").phase("Pending"),
    ]);
    let all = refs(&pods);
    assert_eq!(uids(&filter_active_pods(&all)), ["a", "d"]);
    assert_eq!(count_terminating_pods(&all), 1);
    assert_eq!(count_ready_pods(&all), 1);
}

#[test]
fn go_zero_time() {
    assert_eq!(GO_ZERO_TIME.to_string(), "0001-01-01T00:00:00Z");
    assert!(is_zero_time(GO_ZERO_TIME));
    assert!(!is_zero_time(now_plus(0)));
}

#[rustfmt::skip]
#[test]
fn counted_and_freed_table() {
    let job = || pod().controlled_by("batch/v1", "Job");
    let rows: [(&str, PodBuilder, bool); 8] = [
        ("a Job's succeeded pod, free",               job().phase("Succeeded"), true),
        ("a Job's failed pod, free",                  job().phase("Failed"), true),
        ("still holding the tracking finalizer",      job().phase("Succeeded").tracking_finalizer(), false),
        ("holding another finalizer",                 job().phase("Succeeded").other_finalizer(), false),
        ("running",                                   job().phase("Running"), false),
        ("being deleted, not finished",               job().phase("Running").deletion_timestamp(), false),
        ("finished orphan (a Job may adopt it)",      pod().phase("Succeeded"), false),
        ("another controller's finished pod",         pod().controlled_by("apps/v1", "ReplicaSet").phase("Failed"), false),
    ];
    for (name, pod, want) in rows {
        assert_eq!(is_counted_and_freed(&pod.build()), want, "{name}");
    }
}
