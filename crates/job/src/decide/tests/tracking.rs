//! Tracking with finalizers: upstream's `TestGetNewFinshedPods` table and its
//! `TestTrackJobStatusAndRemoveFinalizers` table (the v1.36 rows: the gates off rows and the
//! failed status-write row, an executor concern, are left out), run through a small executor
//! that writes "statuses" into a list as upstream's fake `updateStatusHandler` does; plus rows
//! for `canRemoveFinalizer`, the counters and `enactJobFinished`.

use std::collections::BTreeMap;

use informer::CachedPod;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use serde_json::{Value, json};

use super::{PodBuilder, build, indexed_job, job, now, pod, refs, uid_set, uids};
use crate::decide::backoff::{DelayedDeletionInput, pods_with_delayed_deletion_per_index};
use crate::decide::indexes::{OrderedIntervals, calculate_failed_indexes};
use crate::decide::pods::{count_terminating_pods, filter_active_pods};
use crate::decide::spec::JobView;
use crate::decide::tracking::{
    TrackingInput, can_remove_finalizer, clean_uncounted_pods_without_finalizers,
    enact_job_finished, finalizers_removed, finish_in_one_write, finishes_in_one_write,
    new_finished_pods, sync_counts, track_job_status,
};
use crate::decide::types::{FinishedCondition, FinishedConditionType, UidSet, UncountedUids};

struct NewFinishedRow {
    name: &'static str,
    status: Value,
    ignore_disruptions: bool,
    pods: Vec<PodBuilder>,
    expected_rm_finalizers: &'static [&'static str],
    want_succeeded: i32,
    want_failed: i32,
}

#[test]
fn new_finished_pods_table() {
    let rows = [
        NewFinishedRow {
            name: "some counted",
            status: json!({"succeeded": 2, "failed": 1, "uncountedTerminatedPods": {}}),
            ignore_disruptions: false,
            pods: vec![
                pod().uid("a").phase("Succeeded"),
                pod().uid("b").phase("Succeeded").tracking_finalizer(),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Failed"),
                pod().uid("e").phase("Failed").tracking_finalizer(),
                pod().uid("f").phase("Running"),
            ],
            expected_rm_finalizers: &[],
            want_succeeded: 4,
            want_failed: 2,
        },
        NewFinishedRow {
            name: "some uncounted",
            status: json!({"succeeded": 1, "failed": 1, "uncountedTerminatedPods":
                {"succeeded": ["a", "c"], "failed": ["e", "f"]}}),
            ignore_disruptions: false,
            pods: vec![
                pod().uid("a").phase("Succeeded"),
                pod().uid("b").phase("Succeeded"),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Succeeded").tracking_finalizer(),
                pod().uid("e").phase("Failed"),
                pod().uid("f").phase("Failed").tracking_finalizer(),
                pod().uid("g").phase("Failed").tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want_succeeded: 4,
            want_failed: 4,
        },
        NewFinishedRow {
            name: "with expected removed finalizers",
            status: json!({"succeeded": 2, "failed": 2, "uncountedTerminatedPods":
                {"succeeded": ["a"], "failed": ["d"]}}),
            ignore_disruptions: false,
            pods: vec![
                pod().uid("a").phase("Succeeded"),
                pod().uid("b").phase("Succeeded").tracking_finalizer(),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Failed"),
                pod().uid("e").phase("Failed").tracking_finalizer(),
                pod().uid("f").phase("Failed").tracking_finalizer(),
                pod().uid("g").phase("Failed").tracking_finalizer(),
            ],
            expected_rm_finalizers: &["b", "f"],
            want_succeeded: 4,
            want_failed: 5,
        },
        NewFinishedRow {
            name: "deleted pods",
            status: json!({"succeeded": 1, "failed": 1, "uncountedTerminatedPods": {}}),
            ignore_disruptions: false,
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Succeeded")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod()
                    .uid("b")
                    .phase("Failed")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod()
                    .uid("c")
                    .phase("Running")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod()
                    .uid("d")
                    .phase("Pending")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod().uid("e").phase("Running").deletion_timestamp(),
                pod().uid("f").phase("Pending").deletion_timestamp(),
            ],
            expected_rm_finalizers: &[],
            want_succeeded: 2,
            want_failed: 4,
        },
        NewFinishedRow {
            name: "ignored failures are not counted",
            status: json!({"failed": 1}),
            ignore_disruptions: true,
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Failed")
                    .condition("DisruptionTarget", "True")
                    .tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want_succeeded: 0,
            want_failed: 2,
        },
        NewFinishedRow {
            name: "negative stored counters are kept as they are",
            status: json!({"succeeded": -5, "failed": -2}),
            ignore_disruptions: false,
            pods: vec![pod().uid("a").phase("Succeeded").tracking_finalizer()],
            expected_rm_finalizers: &[],
            want_succeeded: -4,
            want_failed: -2,
        },
    ];
    for row in rows {
        let policy = row.ignore_disruptions.then(|| json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
        ]}));
        let job = job(json!({"status": row.status, "spec": {"podFailurePolicy": policy}}));
        let view = JobView::new(&job);
        let pods = build(row.pods);
        let uncounted = UncountedUids::from_job(&view);
        let expected = uid_set(row.expected_rm_finalizers);
        let new = new_finished_pods(&view, &refs(&pods), &uncounted, &expected);
        assert_eq!(
            sync_counts(&view, &new, &uncounted),
            (row.want_succeeded, row.want_failed),
            "{}",
            row.name
        );
    }
}

/// The status fields upstream's table compares, as JSON (condition times left out).
fn summary(status: &JobStatus) -> Value {
    let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
    json!({
        "active": status.active.unwrap_or(0),
        "succeeded": status.succeeded.unwrap_or(0),
        "failed": status.failed.unwrap_or(0),
        "completedIndexes": status.completed_indexes.clone().unwrap_or_default(),
        "failedIndexes": status.failed_indexes,
        "uncountedSucceeded": uncounted.succeeded.unwrap_or_default(),
        "uncountedFailed": uncounted.failed.unwrap_or_default(),
        "conditions": status.conditions.iter().flatten().map(|c| json!([c.type_, c.status,
            c.reason.clone().unwrap_or_default()])).collect::<Vec<_>>(),
        "completionTime": status.completion_time.is_some(),
    })
}

/// An expected status: `fields` over the zero summary.
fn want_status(fields: Value) -> Value {
    let mut base = json!({
        "active": 0, "succeeded": 0, "failed": 0, "completedIndexes": "",
        "failedIndexes": null, "uncountedSucceeded": [], "uncountedFailed": [],
        "conditions": [], "completionTime": false,
    });
    json_patch::merge(&mut base, &fields);
    base
}

fn condition(type_: FinishedConditionType) -> FinishedCondition {
    FinishedCondition::new(type_, "", "", now())
}

/// Runs `trackJobStatusAndRemoveFinalizers` with pure steps and an executor whose finalizer
/// patches all succeed (`patches_fail: false`) or all fail. Returns the status writes and the
/// number of finalizer patches.
fn simulate(
    job: &Job,
    pods: &[CachedPod],
    finished: Option<FinishedConditionType>,
    expected_rm: &UidSet,
    needs_flush: bool,
    patches_fail: bool,
) -> (Vec<Value>, usize) {
    let view = JobView::new(job);
    let all = refs(pods);
    let mut status = job.status.clone().unwrap_or_default();
    status
        .uncounted_terminated_pods
        .get_or_insert_with(Default::default);
    let uncounted = UncountedUids::from_job(&view);
    let completions = view.indexed_completions();
    let succeeded_indexes = OrderedIntervals::parse(view.completed_indexes(), completions);
    let failed_indexes = (view.is_indexed() && view.has_backoff_limit_per_index())
        .then(|| calculate_failed_indexes(&view, &all));
    let active = filter_active_pods(&all);
    let delayed = match &failed_indexes {
        Some(failed) => pods_with_delayed_deletion_per_index(&DelayedDeletionInput {
            job: view,
            pods: &all,
            active_pods: &active,
            expected_rm_finalizers: expected_rm,
            succeeded_indexes: &succeeded_indexes,
            failed_indexes: failed,
        }),
        None => BTreeMap::new(),
    };
    let finished = finished.map(condition);
    let plan = track_job_status(
        &mut status,
        &TrackingInput {
            job: view,
            pods: &all,
            uncounted: &uncounted,
            expected_rm_finalizers: expected_rm,
            finished_condition: finished.as_ref(),
            pods_with_delayed_deletion_per_index: &delayed,
            prev_succeeded_indexes: &succeeded_indexes,
            succeeded_indexes: &succeeded_indexes,
            failed_indexes: failed_indexes.as_ref(),
            needs_flush,
            now: now(),
        },
    );
    let mut writes = Vec::new();
    let terminating = count_terminating_pods(&all);
    if finishes_in_one_write(&plan, terminating) {
        assert!(finish_in_one_write(&mut status, &plan, terminating, now()));
        writes.push(summary(&status));
        return (writes, plan.pods_to_remove_finalizer.len());
    }
    if plan.needs_flush {
        writes.push(summary(&status));
    }
    let patches = plan.pods_to_remove_finalizer.len();
    let removed: Vec<String> = if patches_fail {
        Vec::new()
    } else {
        uids(&plan.pods_to_remove_finalizer)
    };
    let mut with_finalizer = plan.uids_with_finalizer.clone();
    let mut needs_flush = finalizers_removed(
        &mut status,
        &mut with_finalizer,
        removed.iter().map(String::as_str),
    );
    if patches_fail && patches > 0 {
        if needs_flush {
            writes.push(summary(&status));
        }
        return (writes, patches);
    }
    if !plan.reached_max_uncounted_pods
        && enact_job_finished(
            &mut status,
            plan.finished_condition.as_ref(),
            terminating,
            now(),
        )
    {
        needs_flush = true;
    }
    if needs_flush {
        writes.push(summary(&status));
    }
    (writes, patches)
}

struct TrackRow {
    name: &'static str,
    job: Job,
    pods: Vec<PodBuilder>,
    finished: Option<FinishedConditionType>,
    expected_rm_finalizers: &'static [&'static str],
    needs_flush: bool,
    patches_fail: bool,
    want_rm_finalizers: usize,
    want_status_updates: Vec<Value>,
}

fn many_succeeded(count: usize, indexed: bool) -> Vec<PodBuilder> {
    (0..count)
        .map(|i| {
            let p = pod()
                .uid(&i.to_string())
                .phase("Succeeded")
                .tracking_finalizer();
            if indexed { p.index(&i.to_string()) } else { p }
        })
        .collect()
}

/// The rows whose Job finishes in the sync: upstream writes the recorded pods, then the
/// counters with the terminal condition; kcm-rs writes only the second
/// (`finishes_in_one_write`).
const FINISHED_IN_ONE_WRITE: &[&str] = &[
    "succeeding job by JobSuccessPolicy",
    "completing job",
    "failing job",
];

#[test]
fn track_job_status_and_remove_finalizers_table() {
    use FinishedConditionType::{Complete, Failed, SuccessCriteriaMet};
    let scm = json!(["SuccessCriteriaMet", "True", ""]);
    let complete = json!(["Complete", "True", ""]);
    let failed = json!(["Failed", "True", ""]);
    let target = json!(["FailureTarget", "True", ""]);
    let target_condition = json!({"type": "FailureTarget", "status": "True"});
    let scm_condition = json!({"type": "SuccessCriteriaMet", "status": "True"});
    let first_499: Vec<String> = (0..499).map(|i| i.to_string()).collect();
    let mut too_many = many_succeeded(500, false);
    too_many.push(pod().uid("b").phase("Failed").tracking_finalizer());
    let rows = vec![
        TrackRow {
            name: "no updates",
            job: job(json!({})),
            pods: vec![],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![],
        },
        TrackRow {
            name: "new active",
            job: job(json!({"status": {"active": 1}})),
            pods: vec![],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: true,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![want_status(json!({"active": 1}))],
        },
        TrackRow {
            name: "track finished pods",
            job: job(json!({})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod()
                    .uid("c")
                    .phase("Succeeded")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod()
                    .uid("d")
                    .phase("Failed")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod()
                    .uid("e")
                    .phase("Pending")
                    .tracking_finalizer()
                    .deletion_timestamp(),
                pod().phase("Pending").tracking_finalizer(),
                pod().phase("Running").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 5,
            want_status_updates: vec![
                want_status(
                    json!({"uncountedSucceeded": ["a", "c"], "uncountedFailed": ["b", "d", "e"]}),
                ),
                want_status(json!({"succeeded": 2, "failed": 3})),
            ],
        },
        TrackRow {
            name: "past and new finished pods",
            job: job(json!({"status": {"active": 1, "succeeded": 2, "failed": 3,
                "uncountedTerminatedPods": {"succeeded": ["a", "e"], "failed": ["b", "f"]}}})),
            pods: vec![
                pod().uid("e").phase("Succeeded"),
                pod().phase("Failed"),
                pod().phase("Pending"),
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Failed").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 4,
            want_status_updates: vec![
                want_status(json!({"active": 1, "succeeded": 3, "failed": 4,
                    "uncountedSucceeded": ["a", "c"], "uncountedFailed": ["b", "d"]})),
                want_status(json!({"active": 1, "succeeded": 5, "failed": 6})),
            ],
        },
        TrackRow {
            name: "expecting removed finalizers",
            job: job(json!({"status": {"succeeded": 2, "failed": 3,
                "uncountedTerminatedPods": {"succeeded": ["a", "g"], "failed": ["b", "h"]}}})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Failed").tracking_finalizer(),
                pod().uid("e").phase("Succeeded").tracking_finalizer(),
                pod().uid("f").phase("Failed").tracking_finalizer(),
                pod().uid("g").phase("Succeeded").tracking_finalizer(),
                pod().uid("h").phase("Failed").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &["c", "d", "g", "h"],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 4,
            want_status_updates: vec![
                want_status(json!({"succeeded": 3, "failed": 4,
                    "uncountedSucceeded": ["a", "e"], "uncountedFailed": ["b", "f"]})),
                want_status(json!({"succeeded": 5, "failed": 6})),
            ],
        },
        TrackRow {
            name: "succeeding job by JobSuccessPolicy",
            job: job(json!({})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod().uid("c").phase("Pending").tracking_finalizer(),
            ],
            finished: Some(SuccessCriteriaMet),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 3,
            want_status_updates: vec![
                want_status(
                    json!({"uncountedSucceeded": ["a"], "uncountedFailed": ["b"],
                    "conditions": [scm]}),
                ),
                want_status(json!({"succeeded": 1, "failed": 1,
                    "conditions": [scm, complete], "completionTime": true})),
            ],
        },
        TrackRow {
            name: "completing job",
            job: job(json!({})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
            ],
            finished: Some(Complete),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 2,
            want_status_updates: vec![
                want_status(json!({"uncountedSucceeded": ["a"], "uncountedFailed": ["b"]})),
                want_status(
                    json!({"succeeded": 1, "failed": 1, "conditions": [complete],
                    "completionTime": true}),
                ),
            ],
        },
        TrackRow {
            name: "failing job",
            job: job(json!({})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod().uid("c").phase("Running").tracking_finalizer(),
            ],
            finished: Some(Failed),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            // The running pod counts as failed.
            want_rm_finalizers: 3,
            want_status_updates: vec![
                want_status(json!({"uncountedSucceeded": ["a"], "uncountedFailed": ["b", "c"]})),
                want_status(json!({"succeeded": 1, "failed": 2, "conditions": [failed]})),
            ],
        },
        TrackRow {
            name: "deleted job",
            job: job(
                json!({"metadata": {"deletionTimestamp": "2009-11-10T23:00:00Z"},
                "status": {"active": 1}}),
            ),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
                pod().phase("Running").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            // The running pod's finalizer goes, but it does not count as failed.
            want_rm_finalizers: 3,
            want_status_updates: vec![
                want_status(
                    json!({"active": 1, "uncountedSucceeded": ["a"], "uncountedFailed": ["b"]}),
                ),
                want_status(json!({"active": 1, "succeeded": 1, "failed": 1})),
            ],
        },
        TrackRow {
            name: "pod patch errors",
            job: job(json!({})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Failed").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: true,
            want_rm_finalizers: 2,
            want_status_updates: vec![want_status(
                json!({"uncountedSucceeded": ["a"], "uncountedFailed": ["b"]}),
            )],
        },
        TrackRow {
            name: "pod patch errors with partial success",
            job: job(json!({"status": {"uncountedTerminatedPods":
                {"succeeded": ["a"], "failed": ["b"]}}})),
            pods: vec![
                pod().uid("a").phase("Succeeded"),
                pod().uid("c").phase("Succeeded").tracking_finalizer(),
                pod().uid("d").phase("Failed").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: true,
            want_rm_finalizers: 2,
            want_status_updates: vec![want_status(json!({"succeeded": 1, "failed": 1,
                "uncountedSucceeded": ["c"], "uncountedFailed": ["d"]}))],
        },
        TrackRow {
            name: "indexed job new successful pods",
            job: indexed_job(
                6,
                json!({"spec": {"parallelism": null}, "status": {"active": 1}}),
            ),
            pods: vec![
                pod().phase("Succeeded").tracking_finalizer().index("1"),
                pod().phase("Succeeded").tracking_finalizer().index("3"),
                pod().phase("Succeeded").tracking_finalizer().index("3"),
                pod().phase("Running").tracking_finalizer().index("5"),
                pod().phase("Succeeded").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 4,
            want_status_updates: vec![want_status(
                json!({"active": 1, "succeeded": 2, "completedIndexes": "1,3"}),
            )],
        },
        TrackRow {
            name: "indexed job prev successful pods outside current completions index range with no new succeeded pods",
            job: indexed_job(
                2,
                json!({"status": {"active": 2, "succeeded": 1, "completedIndexes": "3"}}),
            ),
            pods: vec![
                pod().phase("Running").tracking_finalizer().index("0"),
                pod().phase("Running").tracking_finalizer().index("1"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![want_status(
                json!({"active": 2, "succeeded": 0, "completedIndexes": ""}),
            )],
        },
        TrackRow {
            name: "indexed job prev successful pods outside current completions index range with new succeeded pods in range",
            job: indexed_job(
                2,
                json!({"status": {"active": 2, "succeeded": 1, "completedIndexes": "3"}}),
            ),
            pods: vec![
                pod().phase("Running").tracking_finalizer().index("0"),
                pod().phase("Succeeded").tracking_finalizer().index("1"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![want_status(
                json!({"active": 2, "succeeded": 1, "completedIndexes": "1"}),
            )],
        },
        TrackRow {
            name: "indexed job new failed pods",
            job: indexed_job(6, json!({"status": {"active": 1}})),
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Failed")
                    .tracking_finalizer()
                    .index("1"),
                pod()
                    .uid("b")
                    .phase("Failed")
                    .tracking_finalizer()
                    .index("3"),
                pod()
                    .uid("c")
                    .phase("Failed")
                    .tracking_finalizer()
                    .index("3"),
                pod()
                    .uid("d")
                    .phase("Running")
                    .tracking_finalizer()
                    .index("5"),
                pod().phase("Failed").tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 4,
            want_status_updates: vec![
                want_status(json!({"active": 1, "uncountedFailed": ["a", "b", "c"]})),
                want_status(json!({"active": 1, "failed": 3})),
            ],
        },
        TrackRow {
            name: "indexed job past and new pods",
            job: indexed_job(
                7,
                json!({"status": {"failed": 2, "succeeded": 5,
                "completedIndexes": "0-2,4,6,7"}}),
            ),
            pods: vec![
                pod().phase("Succeeded").index("0"),
                pod().phase("Failed").index("1"),
                pod().phase("Succeeded").tracking_finalizer().index("1"),
                pod().phase("Succeeded").tracking_finalizer().index("3"),
                pod()
                    .uid("a")
                    .phase("Failed")
                    .tracking_finalizer()
                    .index("2"),
                pod()
                    .uid("b")
                    .phase("Failed")
                    .tracking_finalizer()
                    .index("5"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 4,
            want_status_updates: vec![
                want_status(
                    json!({"succeeded": 6, "failed": 2, "completedIndexes": "0-4,6",
                    "uncountedFailed": ["a", "b"]}),
                ),
                want_status(json!({"succeeded": 6, "failed": 4, "completedIndexes": "0-4,6"})),
            ],
        },
        TrackRow {
            name: "too many finished",
            job: job(json!({"status": {"uncountedTerminatedPods": {"failed": ["a", "b"]}}})),
            pods: too_many,
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 499,
            want_status_updates: vec![
                want_status(
                    json!({"uncountedSucceeded": first_499, "uncountedFailed": ["b"], "failed": 1}),
                ),
                want_status(json!({"uncountedFailed": ["b"], "succeeded": 499, "failed": 1})),
            ],
        },
        TrackRow {
            name: "too many indexed finished",
            job: indexed_job(501, json!({"spec": {"parallelism": null}})),
            pods: many_succeeded(501, true),
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 500,
            want_status_updates: vec![want_status(
                json!({"completedIndexes": "0-499", "succeeded": 500}),
            )],
        },
        TrackRow {
            name: "pod flips from failed to succeeded",
            job: job(json!({"spec": {"completions": 2, "parallelism": 2},
                "status": {"uncountedTerminatedPods": {"failed": ["a", "b"]}}})),
            pods: vec![
                pod().uid("a").phase("Failed").tracking_finalizer(),
                pod().uid("b").phase("Succeeded").tracking_finalizer(),
            ],
            finished: Some(Failed),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 2,
            want_status_updates: vec![want_status(json!({"failed": 2, "conditions": [failed]}))],
        },
        TrackRow {
            name: "pod is terminal; JobFailed condition is set",
            job: job(json!({"spec": {"completions": 1, "parallelism": 1},
                "status": {"uncountedTerminatedPods": {"failed": ["a"]}}})),
            pods: vec![pod().uid("a").phase("Failed").tracking_finalizer()],
            finished: Some(Failed),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![want_status(json!({"failed": 1, "conditions": [failed]}))],
        },
        TrackRow {
            name: "pod is terminating; counted as failed, but the JobFailed condition is delayed",
            job: job(json!({"spec": {"completions": 1, "parallelism": 1},
                "status": {"uncountedTerminatedPods": {"failed": ["a"]},
                    "conditions": [target_condition]}})),
            pods: vec![pod().uid("a").phase("Running").deletion_timestamp()],
            finished: Some(Failed),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![want_status(json!({"failed": 1, "conditions": [target]}))],
        },
        TrackRow {
            name: "pod is terminating; JobSuccessCriteriaMet, but JobComplete condition is delayed",
            job: job(json!({"spec": {"completions": 1, "parallelism": 1},
                "status": {"uncountedTerminatedPods": {"failed": ["a"], "succeeded": ["b"]},
                    "conditions": [scm_condition]}})),
            pods: vec![pod().uid("a").phase("Running").deletion_timestamp()],
            finished: Some(Complete),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![want_status(
                json!({"succeeded": 1, "failed": 1, "conditions": [scm]}),
            )],
        },
        TrackRow {
            name: "indexed job with a failed pod with delayed finalizer removal; the pod is not counted",
            job: indexed_job(
                6,
                json!({"spec": {"parallelism": null, "backoffLimitPerIndex": 1}}),
            ),
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Failed")
                    .index_failure_count("0")
                    .tracking_finalizer()
                    .index("1"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![want_status(json!({"failedIndexes": ""}))],
        },
        TrackRow {
            name: "indexed job with a failed pod which is recreated by a running pod; the pod is counted",
            job: indexed_job(
                6,
                json!({"spec": {"parallelism": null, "backoffLimitPerIndex": 1},
                "status": {"active": 1}}),
            ),
            pods: vec![
                pod()
                    .uid("a1")
                    .phase("Failed")
                    .index_failure_count("0")
                    .tracking_finalizer()
                    .index("1"),
                pod()
                    .uid("a2")
                    .phase("Running")
                    .index_failure_count("1")
                    .tracking_finalizer()
                    .index("1"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![
                want_status(json!({"active": 1, "uncountedFailed": ["a1"], "failedIndexes": ""})),
                want_status(json!({"active": 1, "failed": 1, "failedIndexes": ""})),
            ],
        },
        TrackRow {
            name: "indexed job with a failed pod for a failed index; the pod is counted",
            job: indexed_job(
                6,
                json!({"spec": {"parallelism": null, "backoffLimitPerIndex": 1}}),
            ),
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Failed")
                    .index_failure_count("1")
                    .tracking_finalizer()
                    .index("1"),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![
                want_status(json!({"failedIndexes": "1", "uncountedFailed": ["a"]})),
                want_status(json!({"failed": 1, "failedIndexes": "1"})),
            ],
        },
        // kcm-rs rows.
        TrackRow {
            name: "a failing Job's interim FailureTarget is written with Failed, the pod counted",
            job: job(json!({})),
            pods: vec![pod().uid("a").phase("Failed").tracking_finalizer()],
            finished: Some(FinishedConditionType::FailureTarget),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![want_status(
                json!({"failed": 1, "conditions": [target.clone(), failed.clone()]}),
            )],
        },
        TrackRow {
            name: "a finishing Job is finished before its finalizer patches, which may fail",
            job: job(json!({"status": {"uncountedTerminatedPods": {"succeeded": ["a"]}}})),
            pods: vec![
                pod().uid("a").phase("Succeeded").tracking_finalizer(),
                pod().uid("b").phase("Succeeded").tracking_finalizer(),
            ],
            finished: Some(SuccessCriteriaMet),
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: true,
            want_rm_finalizers: 2,
            want_status_updates: vec![want_status(
                json!({"succeeded": 2, "conditions": [scm.clone(), complete.clone()],
                "completionTime": true}),
            )],
        },
        TrackRow {
            name: "ignored failures lose their finalizer without being counted",
            job: job(
                json!({"spec": {"podFailurePolicy": {"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}}),
            ),
            pods: vec![
                pod()
                    .uid("a")
                    .phase("Failed")
                    .condition("DisruptionTarget", "True")
                    .tracking_finalizer(),
            ],
            finished: None,
            expected_rm_finalizers: &[],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 1,
            want_status_updates: vec![],
        },
        TrackRow {
            name: "a pod whose removal is expected is not touched again",
            job: job(json!({})),
            pods: vec![pod().uid("a").phase("Succeeded").tracking_finalizer()],
            finished: None,
            expected_rm_finalizers: &["a"],
            needs_flush: false,
            patches_fail: false,
            want_rm_finalizers: 0,
            want_status_updates: vec![],
        },
    ];
    for row in rows {
        let pods = build(row.pods);
        let expected = uid_set(row.expected_rm_finalizers);
        let (writes, patches) = simulate(
            &row.job,
            &pods,
            row.finished,
            &expected,
            row.needs_flush,
            row.patches_fail,
        );
        assert_eq!(
            patches, row.want_rm_finalizers,
            "{}: finalizer patches",
            row.name
        );
        // Where kcm-rs finishes the Job in one write, that write is upstream's last one.
        let want = if FINISHED_IN_ONE_WRITE.contains(&row.name) {
            row.want_status_updates
                .last()
                .cloned()
                .into_iter()
                .collect()
        } else {
            row.want_status_updates
        };
        assert_eq!(writes, want, "{}: status writes", row.name);
    }
}

#[test]
fn policy_actions_are_counted_for_the_metric() {
    let job = job(json!({"spec": {"podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}}
    ]}}}));
    let view = JobView::new(&job);
    let pods = build(vec![
        pod()
            .uid("a")
            .phase("Failed")
            .condition("DisruptionTarget", "True")
            .tracking_finalizer(),
        pod()
            .uid("b")
            .phase("Failed")
            .exited("c", 1)
            .tracking_finalizer(),
        pod()
            .uid("c")
            .phase("Failed")
            .exited("c", 1)
            .tracking_finalizer(),
        pod()
            .uid("d")
            .phase("Failed")
            .exited("c", 2)
            .tracking_finalizer(),
    ]);
    let all = refs(&pods);
    let mut status = JobStatus::default();
    let uncounted = UncountedUids::default();
    let empty = OrderedIntervals::default();
    let plan = track_job_status(
        &mut status,
        &TrackingInput {
            job: view,
            pods: &all,
            uncounted: &uncounted,
            expected_rm_finalizers: &UidSet::new(),
            finished_condition: None,
            pods_with_delayed_deletion_per_index: &BTreeMap::new(),
            prev_succeeded_indexes: &empty,
            succeeded_indexes: &empty,
            failed_indexes: None,
            needs_flush: false,
            now: now(),
        },
    );
    let counts: Vec<(&str, usize)> = plan
        .pod_failures_by_policy_action
        .iter()
        .map(|(a, n)| (a.as_str(), *n))
        .collect();
    assert_eq!(counts, [("Ignore", 1), ("Count", 2)]);
    assert_eq!(
        status.uncounted_terminated_pods.and_then(|u| u.failed),
        Some(vec!["b".to_owned(), "c".to_owned(), "d".to_owned()])
    );
}

#[test]
fn can_remove_finalizer_table() {
    let delayed_pod = pod().uid("delayed").phase("Failed").index("0").build();
    let delayed: BTreeMap<i64, &CachedPod> = [(0, &delayed_pod)].into();
    let per_index = indexed_job(2, json!({"spec": {"backoffLimitPerIndex": 1}}));
    let deleted = job(json!({"metadata": {"deletionTimestamp": "2009-11-10T23:00:00Z"}}));
    let plain = job(json!({}));
    let finishing = condition(FinishedConditionType::FailureTarget);
    let other_failed = pod().uid("other").phase("Failed").index("0").build();
    let rows: [(&str, &Job, bool, CachedPod, bool, bool); 7] = [
        (
            "job deleted",
            &deleted,
            false,
            pod().phase("Running").build(),
            false,
            true,
        ),
        (
            "job finishing",
            &plain,
            true,
            pod().phase("Running").build(),
            false,
            true,
        ),
        (
            "succeeded pod",
            &plain,
            false,
            pod().phase("Succeeded").build(),
            false,
            true,
        ),
        (
            "running pod",
            &plain,
            false,
            pod().phase("Running").build(),
            false,
            false,
        ),
        (
            "failed pod",
            &plain,
            false,
            pod().phase("Failed").build(),
            true,
            true,
        ),
        (
            "the delayed pod of its index",
            &per_index,
            false,
            delayed_pod.clone(),
            true,
            false,
        ),
        (
            "another failed pod of that index",
            &per_index,
            false,
            other_failed,
            true,
            true,
        ),
    ];
    for (name, job, is_finishing, pod, consider_failed, want) in rows {
        let finished = is_finishing.then_some(&finishing);
        assert_eq!(
            can_remove_finalizer(
                &JobView::new(job),
                finished,
                &pod,
                consider_failed,
                &delayed
            ),
            want,
            "{name}"
        );
    }
}

#[test]
fn clean_uncounted_moves_only_uids_without_finalizer() {
    let mut status: JobStatus = serde_json::from_value(json!({
        "succeeded": 1,
        "uncountedTerminatedPods": {"succeeded": ["a", "b"], "failed": ["c", "d"]}
    }))
    .expect("a status");
    assert!(clean_uncounted_pods_without_finalizers(
        &mut status,
        &uid_set(&["b", "c", "d"])
    ));
    assert_eq!(status.succeeded, Some(2));
    assert_eq!(status.failed, None, "nothing failed moved");
    assert!(!clean_uncounted_pods_without_finalizers(
        &mut status,
        &uid_set(&["b", "c", "d"])
    ));
    assert!(clean_uncounted_pods_without_finalizers(
        &mut status,
        &UidSet::new()
    ));
    assert_eq!((status.succeeded, status.failed), (Some(3), Some(2)));
    let uncounted = status.uncounted_terminated_pods.unwrap_or_default();
    assert_eq!(
        (uncounted.succeeded, uncounted.failed),
        (None, None),
        "emptied lists are unset"
    );
    // A status without the uncounted struct gets an empty one.
    let mut bare = JobStatus::default();
    assert!(!clean_uncounted_pods_without_finalizers(
        &mut bare,
        &UidSet::new()
    ));
    assert!(bare.uncounted_terminated_pods.is_some());
}

#[test]
fn enact_job_finished_table() {
    let complete = condition(FinishedConditionType::Complete);
    let failed = FinishedCondition::new(
        FinishedConditionType::Failed,
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        now(),
    );
    let rows: [(&str, Option<&FinishedCondition>, Value, i32, bool); 6] = [
        ("no condition", None, json!({}), 0, false),
        (
            "uncounted pods left",
            Some(&complete),
            json!({"uncountedTerminatedPods": {"failed": ["a"]}}),
            0,
            false,
        ),
        ("terminating pods left", Some(&failed), json!({}), 1, false),
        ("complete", Some(&complete), json!({}), 0, true),
        (
            "failed",
            Some(&failed),
            json!({"uncountedTerminatedPods": {}}),
            0,
            true,
        ),
        (
            "a negative terminating count does not hold it",
            Some(&failed),
            json!({}),
            -1,
            true,
        ),
    ];
    for (name, finished, status, terminating, want) in rows {
        let mut status: JobStatus = serde_json::from_value(status).expect("a status");
        assert_eq!(
            enact_job_finished(&mut status, finished, terminating, now()),
            want,
            "{name}"
        );
        if want {
            let finished = finished.expect("finished");
            let conditions = status.conditions.clone().unwrap_or_default();
            assert_eq!(conditions.len(), 1, "{name}");
            assert_eq!(conditions[0].type_, finished.type_.as_str(), "{name}");
            assert_eq!(
                conditions[0].reason.as_deref().unwrap_or_default(),
                finished.reason,
                "{name}"
            );
            assert_eq!(
                status.completion_time.is_some(),
                finished.type_ == FinishedConditionType::Complete,
                "{name}: completionTime"
            );
        } else {
            assert!(status.conditions.is_none(), "{name}: untouched");
        }
    }
}
