//! `updateDaemonSetStatus` / `storeDaemonSetStatus`: the counters, the skipped write and the
//! `minReadySeconds` requeue.

use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSetStatus;
use serde_json::json;

use super::{daemon_set, nodes_to_pods, now, pod};
use crate::decide::SyncInput;
use crate::decide::node_fit::NodeFit;
use crate::decide::status::{
    StatusCounts, availability_requeue, count_status, status_needs_write, status_to_write,
};

fn fit(node: &str, should_run: bool, should_continue_running: bool) -> NodeFit {
    NodeFit {
        node: node.to_owned(),
        should_run,
        should_continue_running,
    }
}

#[test]
fn counters_over_the_node_list() {
    let ds = daemon_set(json!({"spec": {"minReadySeconds": 60}}));
    let fits = [
        fit("up-to-date", true, true),
        fit("empty", true, true),
        fit("unwanted", false, false),
        fit("tainted-no-schedule", false, true),
        fit("two-pods", true, true),
        fit("warming-up", true, true),
        fit("old", true, true),
        fit("terminating", true, true),
    ];
    let taken = now().as_second();
    let map = nodes_to_pods(vec![
        (
            "up-to-date",
            vec![pod("a").on("up-to-date").hash("h1").ready()],
        ),
        ("unwanted", vec![pod("b").on("unwanted").hash("h1").ready()]),
        (
            "tainted-no-schedule",
            vec![pod("c").on("tainted-no-schedule").hash("h1").ready()],
        ),
        (
            "two-pods",
            vec![
                // The first by creation order counts: bound before older.
                pod("unbound-ready").hash("h1").ready().created(1),
                pod("bound-unready").on("two-pods").hash("h0").created(5),
            ],
        ),
        (
            "warming-up",
            vec![pod("d").on("warming-up").hash("h1").ready_since(taken - 30)],
        ),
        ("old", vec![pod("e").on("old").hash("h0").ready()]),
        (
            "terminating",
            vec![pod("f").on("terminating").hash("h1").deleting()],
        ),
        ("vanished", vec![pod("g").on("vanished").hash("h1").ready()]),
    ]);
    let input = SyncInput {
        daemon_set: &ds,
        fits: &fits,
        nodes_to_pods: &map,
        hash: "h1",
        now: now(),
    };
    assert_eq!(
        count_status(&input),
        StatusCounts {
            desired_number_scheduled: 6,
            current_number_scheduled: 5,
            number_misscheduled: 2,
            number_ready: 3,
            updated_number_scheduled: 3,
            number_available: 2,
            number_unavailable: 4,
        }
    );
}

fn counts(value: i32) -> StatusCounts {
    StatusCounts {
        desired_number_scheduled: value,
        current_number_scheduled: value,
        number_misscheduled: 0,
        number_ready: value,
        updated_number_scheduled: value,
        number_available: value,
        number_unavailable: 0,
    }
}

/// A DaemonSet at `generation` whose stored status has the counters of [`counts`]`(3)`.
fn stored(generation: i64, observed: i64) -> k8s_openapi::api::apps::v1::DaemonSet {
    daemon_set(json!({
        "metadata": {"generation": generation},
        "status": {
            "desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberMisscheduled": 0,
            "numberReady": 3, "updatedNumberScheduled": 3, "numberAvailable": 3,
            "observedGeneration": observed, "collisionCount": 2,
            "conditions": [{"type": "Custom", "status": "True"}]
        }
    }))
}

#[test]
fn unchanged_status_is_not_written() {
    // (rule, generation, observed, counters, write)
    let cases = [
        (
            "same counters, generation observed: no write",
            4,
            4,
            counts(3),
            false,
        ),
        (
            "observed beyond the generation: no write",
            4,
            5,
            counts(3),
            false,
        ),
        ("a counter changed", 4, 4, counts(2), true),
        ("a new generation", 5, 4, counts(3), true),
    ];
    for (rule, generation, observed, new_counts, write) in cases {
        let ds = stored(generation, observed);
        assert_eq!(status_needs_write(&ds, &new_counts), write, "{rule}");
        assert_eq!(
            status_to_write(&ds, &new_counts, true).is_some(),
            write,
            "{rule}"
        );
    }
    let no_status = daemon_set(json!({"metadata": {"generation": 0}}));
    assert!(
        !status_needs_write(&no_status, &StatusCounts::default()),
        "all zero"
    );
}

#[test]
fn the_written_status_keeps_what_this_controller_does_not_own() {
    let ds = stored(5, 4);
    let raised = status_to_write(&ds, &counts(2), true).expect("a write");
    let expected = |observed: i64| -> DaemonSetStatus {
        serde_json::from_value(json!({
            "desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberMisscheduled": 0,
            "numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2,
            "numberUnavailable": 0, "observedGeneration": observed, "collisionCount": 2,
            "conditions": [{"type": "Custom", "status": "True"}]
        }))
        .expect("a valid status")
    };
    assert_eq!(
        raised,
        expected(5),
        "expectations satisfied: the generation is observed"
    );
    let kept = status_to_write(&ds, &counts(2), false).expect("a write");
    assert_eq!(
        kept,
        expected(4),
        "expectations pending: observedGeneration stays"
    );
}

#[test]
fn ready_but_not_available_pods_requeue_after_min_ready_seconds() {
    let with_min_ready = daemon_set(json!({"spec": {"minReadySeconds": 30}}));
    let waiting = StatusCounts {
        number_ready: 3,
        number_available: 1,
        ..StatusCounts::default()
    };
    assert_eq!(
        availability_requeue(&with_min_ready, &waiting),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        availability_requeue(&with_min_ready, &counts(3)),
        None,
        "all available"
    );
    assert_eq!(
        availability_requeue(&daemon_set(json!({})), &waiting),
        None,
        "no minReadySeconds"
    );
}
