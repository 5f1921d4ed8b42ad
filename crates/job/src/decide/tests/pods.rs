//! The pod predicates: `isPodFailed`, active, terminating and ready pods, and upstream's
//! `ActivePods` order (rows in the spirit of `TestSortingActivePods`, plus the v1.36 sidecar
//! restart rule), with a hostile order that must not panic.

use serde_json::json;

use super::{PodBuilder, build, job, now_plus, pod, refs, uids};
use crate::decide::pods::{
    GO_ZERO_TIME, active_pods_less, count_ready_pods, count_terminating_pods, filter_active_pods,
    is_pod_active, is_pod_failed, is_pod_ready, is_pod_terminating, is_zero_time,
    max_container_restarts, sort_active_pods, stable_sort_by_less,
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
fn active_pods_order() {
    // From first to delete to last.
    let ordered = build(vec![
        pod().uid("unscheduled").phase("Pending"),
        pod().uid("pending").phase("Pending").node("n"),
        pod().uid("unknown").phase("Unknown").node("n"),
        pod().uid("running-not-ready").phase("Running").node("n"),
        pod()
            .uid("ready-zero-time")
            .phase("Running")
            .node("n")
            .condition("Ready", "True"),
        pod()
            .uid("ready-recently")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-10)),
        pod()
            .uid("ready-long-restarted")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100))
            .restarts("c", 3),
        pod()
            .uid("ready-long-sidecar-restarted")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100))
            .sidecar("s")
            .init_restarts("s", 2),
        pod()
            .uid("ready-long-no-creation")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100)),
        pod()
            .uid("ready-long-new")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100))
            .created(now_plus(-200)),
        pod()
            .uid("ready-long-old")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100))
            .created(now_plus(-300)),
    ]);
    let want = uids(&refs(&ordered));
    for rotation in 0..ordered.len() {
        let mut shuffled = refs(&ordered);
        shuffled.rotate_left(rotation);
        shuffled.reverse();
        sort_active_pods(&mut shuffled);
        assert_eq!(uids(&shuffled), want, "rotation {rotation}");
    }
    for (i, a) in ordered.iter().enumerate() {
        for (j, b) in ordered.iter().enumerate() {
            assert_eq!(active_pods_less(a, b), i < j, "{i} < {j}");
        }
    }
}

#[test]
fn sidecar_restarts_only_count_for_sidecars() {
    let pod = pod()
        .restarts("a", 2)
        .restarts("b", 5)
        .sidecar("s")
        .init_restarts("s", 7)
        .init_restarts("plain-init", 9)
        .build();
    assert_eq!(max_container_restarts(&pod), (5, 7));
}

#[test]
fn sorting_with_an_inconsistent_order_does_not_panic() {
    let mut items: Vec<u32> = (0..200).rev().collect();
    // Not a strict weak order: everything is less than everything.
    stable_sort_by_less(&mut items, |_, _| true);
    assert_eq!(items.len(), 200);
    let mut items: Vec<u32> = (0..200).rev().collect();
    stable_sort_by_less(&mut items, |a, b| a < b);
    assert_eq!(items, (0..200).collect::<Vec<_>>());
    let mut pairs = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
    stable_sort_by_less(&mut pairs, |a, b| a.0 < b.0);
    assert_eq!(pairs, [(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c')], "stable");
}

#[test]
fn go_zero_time() {
    assert_eq!(GO_ZERO_TIME.to_string(), "0001-01-01T00:00:00Z");
    assert!(is_zero_time(GO_ZERO_TIME));
    assert!(!is_zero_time(now_plus(0)));
}
