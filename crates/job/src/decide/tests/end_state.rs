//! The end-state evaluation: the condition parts of upstream's `TestSyncJobPastDeadline`,
//! `TestJobBackoffForOnFailure` and `TestJobBackoffOnRestartPolicyNever` tables (v1.36 rows:
//! interim `FailureTarget`), plus rows for the order of the rules, the Indexed rules, the
//! deadline requeue, the completions rule and the `Suspended` condition.

use std::time::Duration;

use informer::CachedPod;
use serde_json::{Value, json};

use super::{PodBuilder, build, indexed_job, job, now, now_plus, pod, refs};
use crate::decide::end_state::{
    EndStateInput, completions_reached, evaluate_end_state, past_active_deadline,
    past_backoff_limit_on_failure, start_time, update_suspended_condition,
};
use crate::decide::pods::filter_active_pods;
use crate::decide::spec::JobView;
use crate::decide::types::{FinishedCondition, FinishedConditionType, UidSet};

/// `(type, reason, message)` of the finished condition, if any.
type Want = Option<(FinishedConditionType, &'static str, &'static str)>;

fn evaluate(
    job: &k8s_openapi::api::batch::v1::Job,
    pods: &[CachedPod],
    failed: i32,
    succeeded: i32,
) -> (Option<FinishedCondition>, Option<Duration>) {
    let view = JobView::new(job);
    let all = refs(pods);
    let active = filter_active_pods(&all);
    let expected = UidSet::new();
    let state = evaluate_end_state(&EndStateInput {
        job: view,
        pods: &all,
        active_pods: &active,
        expected_rm_finalizers: &expected,
        succeeded,
        failed,
        start_time: start_time(&view, now()),
        now: now(),
    });
    (state.finished_condition, state.active_deadline_requeue)
}

fn summary(
    condition: Option<FinishedCondition>,
) -> Option<(FinishedConditionType, String, String)> {
    condition.map(|c| (c.type_, c.reason, c.message))
}

fn want(w: Want) -> Option<(FinishedConditionType, String, String)> {
    w.map(|(t, r, m)| (t, r.to_owned(), m.to_owned()))
}

const DEADLINE: Want = Some((
    FinishedConditionType::FailureTarget,
    "DeadlineExceeded",
    "Job was active longer than specified deadline",
));
const BACKOFF: Want = Some((
    FinishedConditionType::FailureTarget,
    "BackoffLimitExceeded",
    "Job has reached the specified backoff limit",
));

struct DeadlineRow {
    name: &'static str,
    active_deadline_seconds: i64,
    started_seconds_ago: i64,
    backoff_limit: i32,
    suspend: bool,
    failed: i32,
    want: Want,
    want_requeue: Option<u64>,
}

#[test]
fn past_deadline_table() {
    let rows = [
        DeadlineRow {
            name: "activeDeadlineSeconds less than single pod execution",
            active_deadline_seconds: 10,
            started_seconds_ago: 15,
            backoff_limit: 6,
            suspend: false,
            failed: 0,
            want: DEADLINE,
            want_requeue: None,
        },
        DeadlineRow {
            name: "activeDeadlineSeconds times-out before any pod starts",
            active_deadline_seconds: 10,
            started_seconds_ago: 10,
            backoff_limit: 6,
            suspend: false,
            failed: 0,
            want: DEADLINE,
            want_requeue: None,
        },
        DeadlineRow {
            name: "activeDeadlineSeconds with backofflimit reach",
            active_deadline_seconds: 1,
            started_seconds_ago: 10,
            backoff_limit: 0,
            suspend: false,
            failed: 1,
            want: BACKOFF,
            want_requeue: None,
        },
        DeadlineRow {
            name: "activeDeadlineSeconds is not triggered when Job is suspended",
            active_deadline_seconds: 10,
            started_seconds_ago: 15,
            backoff_limit: 6,
            suspend: true,
            failed: 0,
            want: None,
            want_requeue: None,
        },
        DeadlineRow {
            name: "before the deadline: requeue at it",
            active_deadline_seconds: 10,
            started_seconds_ago: 4,
            backoff_limit: 6,
            suspend: false,
            failed: 0,
            want: None,
            want_requeue: Some(6),
        },
        DeadlineRow {
            name: "a huge deadline does not overflow (upstream's Duration would)",
            active_deadline_seconds: i64::MAX,
            started_seconds_ago: 4,
            backoff_limit: 6,
            suspend: false,
            failed: 0,
            want: None,
            want_requeue: Some(i64::MAX as u64 - 4),
        },
    ];
    for row in rows {
        let start = now_plus(-row.started_seconds_ago).to_string();
        let job = job(json!({
            "spec": {"activeDeadlineSeconds": row.active_deadline_seconds,
                "backoffLimit": row.backoff_limit, "suspend": row.suspend,
                "completions": 1, "parallelism": 1},
            "status": {"startTime": start}
        }));
        let (condition, requeue) = evaluate(&job, &[], row.failed, 0);
        assert_eq!(summary(condition), want(row.want), "{}", row.name);
        assert_eq!(
            requeue,
            row.want_requeue.map(Duration::from_secs),
            "{}: requeue",
            row.name
        );
    }
}

#[test]
fn past_active_deadline_needs_a_start_and_no_suspension() {
    let started = job(json!({"spec": {"activeDeadlineSeconds": 5}}));
    let view = JobView::new(&started);
    assert!(!past_active_deadline(&view, None, now()));
    assert!(past_active_deadline(&view, Some(now_plus(-5)), now()));
    assert!(!past_active_deadline(&view, Some(now_plus(-4)), now()));
    assert!(
        !past_active_deadline(&view, Some(now_plus(10)), now()),
        "a start in the future"
    );
    let without = job(json!({}));
    assert!(!past_active_deadline(
        &JobView::new(&without),
        Some(now_plus(-99)),
        now()
    ));
}

#[test]
fn backoff_for_on_failure_table() {
    // (name, backoffLimit, restart counts, phase, exceeded)
    let rows: [(&str, i32, &[i32], &str, bool); 9] = [
        (
            "backoffLimit 0 should have 1 pod active",
            0,
            &[0],
            "Running",
            false,
        ),
        (
            "backoffLimit 1 with restartCount 0 should have 1 pod active",
            1,
            &[0],
            "Running",
            false,
        ),
        (
            "backoffLimit 1 with restartCount 1 and podRunning should have 0 pod active",
            1,
            &[1],
            "Running",
            true,
        ),
        (
            "backoffLimit 1 with restartCount 1 and podPending should have 0 pod active",
            1,
            &[1],
            "Pending",
            true,
        ),
        (
            "too many job failures with podRunning - single pod",
            2,
            &[2],
            "Running",
            true,
        ),
        (
            "too many job failures with podPending - single pod",
            2,
            &[2],
            "Pending",
            true,
        ),
        (
            "too many job failures with podRunning - multiple pods",
            2,
            &[1, 1],
            "Running",
            true,
        ),
        (
            "too many job failures with podPending - multiple pods",
            2,
            &[1, 1],
            "Pending",
            true,
        ),
        ("not enough failures", 3, &[1, 1], "Running", false),
    ];
    for (name, backoff_limit, restarts, phase, exceeded) in rows {
        let job = job(json!({"spec": {"backoffLimit": backoff_limit,
            "template": {"spec": {"restartPolicy": "OnFailure"}}}}));
        let pods: Vec<CachedPod> = restarts
            .iter()
            .map(|&count| pod().phase(phase).restarts("c", count).build())
            .collect();
        assert_eq!(
            past_backoff_limit_on_failure(&JobView::new(&job), &refs(&pods)),
            exceeded,
            "{name}"
        );
        let (condition, _) = evaluate(&job, &pods, 0, 0);
        assert_eq!(
            summary(condition),
            want(if exceeded { BACKOFF } else { None }),
            "{name}: condition"
        );
    }
}

#[test]
fn restarts_count_only_on_failure_and_only_unfinished_pods() {
    let rows: [(&str, &str, PodBuilder, bool); 5] = [
        (
            "Never ignores restarts",
            "Never",
            pod().phase("Running").restarts("c", 9),
            false,
        ),
        (
            "init container restarts count",
            "OnFailure",
            pod().phase("Pending").init_restarts("init", 2),
            true,
        ),
        (
            "finished pods do not count",
            "OnFailure",
            pod().phase("Failed").restarts("c", 9),
            false,
        ),
        (
            "unknown phase does not count",
            "OnFailure",
            pod().phase("Unknown").restarts("c", 9),
            false,
        ),
        (
            "the int32 sum wraps as Go's",
            "OnFailure",
            pod()
                .phase("Running")
                .restarts("a", i32::MAX)
                .restarts("b", 1),
            false,
        ),
    ];
    for (name, policy, pod, want) in rows {
        let job = job(json!({"spec": {"backoffLimit": 2,
            "template": {"spec": {"restartPolicy": policy}}}}));
        let pods = vec![pod.build()];
        assert_eq!(
            past_backoff_limit_on_failure(&JobView::new(&job), &refs(&pods)),
            want,
            "{name}"
        );
    }
}

#[test]
fn backoff_on_restart_policy_never_table() {
    // (name, backoffLimit, failed, exceeded)
    let rows = [
        (
            "not enough failures with backoffLimit 0 - single pod",
            0,
            0,
            false,
        ),
        (
            "not enough failures with backoffLimit 1 - single pod",
            1,
            1,
            false,
        ),
        (
            "too many failures with backoffLimit 1 - single pod",
            1,
            2,
            true,
        ),
        (
            "not enough failures with backoffLimit 6 - multiple pods",
            6,
            6,
            false,
        ),
        (
            "too many failures with backoffLimit 6 - multiple pods",
            6,
            7,
            true,
        ),
        ("default backoffLimit is 6", -1, 7, true),
        ("negative failed count never exceeds", 0, -5, false),
    ];
    for (name, backoff_limit, failed, exceeded) in rows {
        let spec = if backoff_limit < 0 {
            json!({})
        } else {
            json!({"spec": {"backoffLimit": backoff_limit}})
        };
        let job = job(spec);
        let (condition, _) = evaluate(&job, &[], failed, 0);
        assert_eq!(
            summary(condition),
            want(if exceeded { BACKOFF } else { None }),
            "{name}"
        );
    }
}

struct OrderRow {
    name: &'static str,
    patch: Value,
    pods: Vec<PodBuilder>,
    failed: i32,
    want: Want,
}

#[test]
fn rules_apply_in_upstream_order() {
    let fail_job_policy = json!({"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
    ]});
    let rows = [
        OrderRow {
            name: "stored SuccessCriteriaMet wins over a FailJob pod and the backoff limit",
            patch: json!({
                "spec": {"backoffLimit": 0, "podFailurePolicy": fail_job_policy},
                "status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True",
                    "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}]}
            }),
            pods: vec![pod().name("p").phase("Failed").exited("c", 42)],
            failed: 3,
            want: Some((
                FinishedConditionType::SuccessCriteriaMet,
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )),
        },
        OrderRow {
            name: "stored FailureTarget becomes Failed with its reason",
            patch: json!({
                "spec": {"podFailurePolicy": fail_job_policy},
                "status": {"conditions": [{"type": "FailureTarget", "status": "True",
                    "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}]}
            }),
            pods: vec![pod().name("p").phase("Failed").exited("c", 42)],
            failed: 0,
            want: Some((
                FinishedConditionType::Failed,
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            )),
        },
        OrderRow {
            name: "a False FailureTarget is not reused",
            patch: json!({
                "status": {"conditions": [{"type": "FailureTarget", "status": "False"}]}
            }),
            pods: vec![],
            failed: 0,
            want: None,
        },
        OrderRow {
            name: "a FailJob pod wins over the backoff limit",
            patch: json!({"spec": {"backoffLimit": 0, "podFailurePolicy": fail_job_policy}}),
            pods: vec![pod().name("p").phase("Failed").exited("c", 42)],
            failed: 1,
            want: Some((
                FinishedConditionType::FailureTarget,
                "PodFailurePolicy",
                "Container c for pod default/p failed with exit code 42 matching FailJob rule at index 0",
            )),
        },
        OrderRow {
            name: "a FailJob match on a pod not failed yet does not count",
            patch: json!({"spec": {"podFailurePolicy": fail_job_policy}}),
            pods: vec![
                pod()
                    .name("p")
                    .phase("Running")
                    .exited("c", 42)
                    .deletion_timestamp(),
            ],
            failed: 0,
            want: None,
        },
        OrderRow {
            name: "backoff limit wins over the deadline",
            patch: json!({"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 1},
                "status": {"startTime": now_plus(-60).to_string()}}),
            pods: vec![],
            failed: 2,
            want: BACKOFF,
        },
        OrderRow {
            name: "backoffLimitPerIndex leaves the global limit at MaxInt32",
            patch: json!({"spec": {"backoffLimitPerIndex": 1}}),
            pods: vec![],
            failed: 1000,
            want: None,
        },
    ];
    for row in rows {
        let job = job(row.patch);
        let pods = build(row.pods);
        let (condition, _) = evaluate(&job, &pods, row.failed, 0);
        assert_eq!(summary(condition), want(row.want), "{}", row.name);
    }
}

struct IndexedRow {
    name: &'static str,
    completions: i32,
    patch: Value,
    pods: Vec<PodBuilder>,
    want: Want,
    want_succeeded: i32,
    want_failed_indexes: Option<&'static str>,
    want_delayed: &'static [i64],
}

#[test]
fn indexed_rules_table() {
    let rows = [
        IndexedRow {
            name: "succeeded becomes the number of succeeded indexes",
            completions: 4,
            patch: json!({"status": {"completedIndexes": "0"}}),
            pods: vec![
                pod().phase("Succeeded").index("2").tracking_finalizer(),
                pod().phase("Succeeded").index("2").tracking_finalizer(),
            ],
            want: None,
            want_succeeded: 2,
            want_failed_indexes: None,
            want_delayed: &[],
        },
        IndexedRow {
            name: "more failed indexes than maxFailedIndexes",
            completions: 4,
            patch: json!({"spec": {"backoffLimitPerIndex": 0, "maxFailedIndexes": 1}}),
            pods: vec![
                pod().phase("Failed").index("0").tracking_finalizer(),
                pod().phase("Failed").index("1").tracking_finalizer(),
            ],
            want: Some((
                FinishedConditionType::FailureTarget,
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            )),
            want_succeeded: 0,
            want_failed_indexes: Some("0,1"),
            want_delayed: &[],
        },
        IndexedRow {
            name: "every index finished, some failed",
            completions: 3,
            patch: json!({"spec": {"backoffLimitPerIndex": 0},
                "status": {"completedIndexes": "0,1"}}),
            pods: vec![pod().phase("Failed").index("2").tracking_finalizer()],
            want: Some((
                FinishedConditionType::FailureTarget,
                "FailedIndexes",
                "Job has failed indexes",
            )),
            want_succeeded: 2,
            want_failed_indexes: Some("2"),
            want_delayed: &[],
        },
        IndexedRow {
            name: "a failed index with others running does not finish the Job",
            completions: 3,
            patch: json!({"spec": {"backoffLimitPerIndex": 1}}),
            pods: vec![
                pod()
                    .phase("Failed")
                    .index("0")
                    .index_failure_count("1")
                    .tracking_finalizer(),
                pod()
                    .phase("Failed")
                    .index("1")
                    .index_failure_count("0")
                    .tracking_finalizer(),
                pod().phase("Running").index("2").tracking_finalizer(),
            ],
            want: None,
            want_succeeded: 0,
            want_failed_indexes: Some("0"),
            want_delayed: &[1],
        },
        IndexedRow {
            name: "the success policy",
            completions: 5,
            patch: json!({"spec": {"successPolicy": {"rules": [{"succeededIndexes": "0,3"}]}},
                "status": {"completedIndexes": "0"}}),
            pods: vec![pod().phase("Succeeded").index("3").tracking_finalizer()],
            want: Some((
                FinishedConditionType::SuccessCriteriaMet,
                "SuccessPolicy",
                "Matched rules at index 0",
            )),
            want_succeeded: 2,
            want_failed_indexes: None,
            want_delayed: &[],
        },
        IndexedRow {
            name: "a failure rule wins over the success policy",
            completions: 3,
            patch: json!({"spec": {"backoffLimitPerIndex": 0,
                    "successPolicy": {"rules": [{"succeededCount": 1}]}},
                "status": {"completedIndexes": "0,1"}}),
            pods: vec![pod().phase("Failed").index("2").tracking_finalizer()],
            want: Some((
                FinishedConditionType::FailureTarget,
                "FailedIndexes",
                "Job has failed indexes",
            )),
            want_succeeded: 2,
            want_failed_indexes: Some("2"),
            want_delayed: &[],
        },
        IndexedRow {
            name: "an Indexed Job without completions has no valid index",
            completions: 0,
            patch: json!({"spec": {"completions": null}, "status": {"completedIndexes": "0-3"}}),
            pods: vec![pod().phase("Succeeded").index("0").tracking_finalizer()],
            want: None,
            want_succeeded: 0,
            want_failed_indexes: None,
            want_delayed: &[],
        },
    ];
    for row in rows {
        let job = indexed_job(row.completions, row.patch);
        let view = JobView::new(&job);
        let pods = build(row.pods);
        let all = refs(&pods);
        let active = filter_active_pods(&all);
        let expected = UidSet::new();
        let state = evaluate_end_state(&EndStateInput {
            job: view,
            pods: &all,
            active_pods: &active,
            expected_rm_finalizers: &expected,
            succeeded: 99,
            failed: 0,
            start_time: None,
            now: now(),
        });
        assert_eq!(
            summary(state.finished_condition),
            want(row.want),
            "{}",
            row.name
        );
        assert_eq!(
            state.succeeded, row.want_succeeded,
            "{}: succeeded",
            row.name
        );
        let indexed = state.indexed.expect("an Indexed Job has index state");
        assert_eq!(
            indexed.failed_indexes.map(|f| f.to_string()).as_deref(),
            row.want_failed_indexes,
            "{}: failed indexes",
            row.name
        );
        assert_eq!(
            indexed
                .pods_with_delayed_deletion_per_index
                .keys()
                .copied()
                .collect::<Vec<_>>(),
            row.want_delayed,
            "{}: delayed",
            row.name
        );
    }
}

#[test]
fn non_indexed_jobs_have_no_index_state() {
    let job = job(json!({}));
    let view = JobView::new(&job);
    let expected = UidSet::new();
    let state = evaluate_end_state(&EndStateInput {
        job: view,
        pods: &[],
        active_pods: &[],
        expected_rm_finalizers: &expected,
        succeeded: 3,
        failed: 0,
        start_time: None,
        now: now(),
    });
    assert_eq!(state.succeeded, 3);
    assert!(state.indexed.is_none());
    assert!(state.finished_condition.is_none());
}

#[test]
fn completions_reached_table() {
    // (name, completions, succeeded, active, reached)
    let rows: [(&str, Option<i32>, i32, i32, bool); 7] = [
        (
            "no completions: first success with nothing active",
            None,
            1,
            0,
            true,
        ),
        ("no completions: wait for active pods", None, 1, 2, false),
        ("no completions: no success yet", None, 0, 0, false),
        ("completions reached", Some(3), 3, 0, true),
        ("more than completions", Some(3), 5, 0, true),
        (
            "completions reached with active pods left",
            Some(3),
            3,
            1,
            false,
        ),
        ("zero completions are reached at once", Some(0), 0, 0, true),
    ];
    for (name, completions, succeeded, active, reached) in rows {
        let job = job(json!({"spec": {"completions": completions}}));
        assert_eq!(
            completions_reached(&JobView::new(&job), succeeded, active),
            reached,
            "{name}"
        );
    }
}

#[test]
fn suspended_condition_table() {
    let suspended = json!([{"type": "Suspended", "status": "True", "reason": "JobSuspended",
        "message": "Job suspended"}]);
    let resumed = json!([{"type": "Suspended", "status": "False", "reason": "JobResumed",
        "message": "Job resumed"}]);
    // (name, conditions, suspended, event reason, resulting (status, reason))
    type Row = (
        &'static str,
        Value,
        bool,
        Option<&'static str>,
        Option<(&'static str, &'static str)>,
    );
    let rows: [Row; 5] = [
        (
            "suspending adds the condition",
            json!([]),
            true,
            Some("Suspended"),
            Some(("True", "JobSuspended")),
        ),
        (
            "still suspended: no change",
            suspended.clone(),
            true,
            None,
            Some(("True", "JobSuspended")),
        ),
        (
            "resuming flips it",
            suspended,
            false,
            Some("Resumed"),
            Some(("False", "JobResumed")),
        ),
        (
            "never suspended: no False condition is added",
            json!([]),
            false,
            None,
            None,
        ),
        (
            "still resumed: no change",
            resumed,
            false,
            None,
            Some(("False", "JobResumed")),
        ),
    ];
    for (name, conditions, is_suspended, event, result) in rows {
        let mut conditions: Vec<k8s_openapi::api::batch::v1::JobCondition> =
            serde_json::from_value(conditions).expect("conditions");
        let got = update_suspended_condition(&mut conditions, is_suspended, now());
        assert_eq!(got.map(|e| e.reason), event, "{name}");
        if let Some(e) = got {
            assert_eq!(e.resumed, !is_suspended, "{name}: resumed");
        }
        let found = conditions
            .iter()
            .find(|c| c.type_ == "Suspended")
            .map(|c| (c.status.as_str(), c.reason.as_deref().unwrap_or_default()));
        assert_eq!(found, result, "{name}: condition");
    }
}

#[test]
fn start_time_table() {
    let stored = now_plus(-100);
    let rows = [
        (
            "stored start time is kept",
            json!({"status": {"startTime": stored.to_string()}}),
            Some(stored),
        ),
        ("first sync starts the Job", json!({}), Some(now())),
        (
            "a suspended Job does not start",
            json!({"spec": {"suspend": true}}),
            None,
        ),
        (
            "a suspended Job keeps its start time",
            json!({"spec": {"suspend": true}, "status": {"startTime": stored.to_string()}}),
            Some(stored),
        ),
    ];
    for (name, patch, want) in rows {
        let job = job(patch);
        assert_eq!(start_time(&JobView::new(&job), now()), want, "{name}");
    }
}
