//! `indexed_job_utils.go`: upstream's `TestCalculateSucceededIndexes`, `TestIsIndexFailed`,
//! `TestCalculateFailedIndexes`, `TestIntervalsHaveIndex`, `TestFirstPendingIndexes`,
//! `TestAppendDuplicatedIndexPodsForRemoval`, `TestPodGenerateNameWithIndex` and
//! `TestGetIndexFailureCount` tables, plus parsing, formatting and merging rows for odd and
//! hostile input.

use serde_json::json;

use super::{build, hollow_pods, index_phases, indexed_job, owned, pod, refs};
use crate::decide::indexes::{
    Interval, OrderedIntervals, PendingIndexesInput, add_completion_index,
    add_completion_index_env_variables, calculate_failed_indexes, calculate_succeeded_indexes,
    completion_index, duplicated_index_pods_for_removal, first_pending_indexes,
    index_absolute_failure_count, index_failure_count, indexes_count, is_index_failed, parse_int32,
    pod_generate_name_with_index, pod_hostname, valid_pods_with_filter,
};
use crate::decide::spec::JobView;
use crate::decide::types::UidSet;

/// Intervals as `(first, last)` pairs.
type Pairs = &'static [(i64, i64)];

fn ivs(pairs: &[(i64, i64)]) -> OrderedIntervals {
    OrderedIntervals::new(pairs.iter().map(|&(a, b)| Interval::new(a, b)).collect())
}

struct SucceededRow {
    name: &'static str,
    prev_succeeded: &'static str,
    pods: &'static [(&'static str, &'static str)],
    completions: i32,
    want_status_intervals: &'static [(i64, i64)],
    want_intervals: &'static [(i64, i64)],
}

#[test]
fn calculate_succeeded_indexes_table() {
    let rows = [
        SucceededRow {
            name: "one index",
            prev_succeeded: "",
            pods: &[("1", "Succeeded")],
            completions: 2,
            want_status_intervals: &[],
            want_intervals: &[(1, 1)],
        },
        SucceededRow {
            name: "two separate",
            prev_succeeded: "",
            pods: &[
                ("2", "Failed"),
                ("5", "Succeeded"),
                ("5", "Succeeded"),
                ("10", "Failed"),
                ("10", "Succeeded"),
            ],
            completions: 11,
            want_status_intervals: &[],
            want_intervals: &[(5, 5), (10, 10)],
        },
        SucceededRow {
            name: "two intervals",
            prev_succeeded: "",
            pods: &[
                ("0", "Running"),
                ("1", "Pending"),
                ("2", "Succeeded"),
                ("3", "Succeeded"),
                ("5", "Succeeded"),
                ("6", "Succeeded"),
                ("7", "Succeeded"),
            ],
            completions: 8,
            want_status_intervals: &[],
            want_intervals: &[(2, 3), (5, 7)],
        },
        SucceededRow {
            name: "one index and one interval",
            prev_succeeded: "",
            pods: &[
                ("0", "Succeeded"),
                ("1", "Failed"),
                ("2", "Succeeded"),
                ("3", "Succeeded"),
                ("4", "Succeeded"),
                ("5", "Succeeded"),
                ("-", "Succeeded"),
                ("-2", "Succeeded"),
            ],
            completions: 6,
            want_status_intervals: &[],
            want_intervals: &[(0, 0), (2, 5)],
        },
        SucceededRow {
            name: "out of range",
            prev_succeeded: "",
            pods: &[
                ("0", "Succeeded"),
                ("1", "Succeeded"),
                ("2", "Succeeded"),
                ("3", "Failed"),
                ("4", "Succeeded"),
                ("5", "Succeeded"),
                ("-", "Succeeded"),
                ("-2", "Succeeded"),
            ],
            completions: 5,
            want_status_intervals: &[],
            want_intervals: &[(0, 2), (4, 4)],
        },
        SucceededRow {
            name: "prev interval out of range",
            prev_succeeded: "0-5,8-10",
            pods: &[],
            completions: 8,
            want_status_intervals: &[(0, 5)],
            want_intervals: &[(0, 5)],
        },
        SucceededRow {
            name: "prev interval partially out of range",
            prev_succeeded: "0-5,8-10",
            pods: &[],
            completions: 10,
            want_status_intervals: &[(0, 5), (8, 9)],
            want_intervals: &[(0, 5), (8, 9)],
        },
        SucceededRow {
            name: "prev and new separate",
            prev_succeeded: "0,4,5,10-12",
            pods: &[("2", "Succeeded"), ("7", "Succeeded"), ("8", "Succeeded")],
            completions: 13,
            want_status_intervals: &[(0, 0), (4, 5), (10, 12)],
            want_intervals: &[(0, 0), (2, 2), (4, 5), (7, 8), (10, 12)],
        },
        SucceededRow {
            name: "prev between new",
            prev_succeeded: "3,4,6",
            pods: &[("2", "Succeeded"), ("7", "Succeeded"), ("8", "Succeeded")],
            completions: 9,
            want_status_intervals: &[(3, 4), (6, 6)],
            want_intervals: &[(2, 4), (6, 8)],
        },
        SucceededRow {
            name: "new between prev",
            prev_succeeded: "2,7,8",
            pods: &[("3", "Succeeded"), ("4", "Succeeded"), ("6", "Succeeded")],
            completions: 9,
            want_status_intervals: &[(2, 2), (7, 8)],
            want_intervals: &[(2, 4), (6, 8)],
        },
        SucceededRow {
            name: "new within prev",
            prev_succeeded: "2-7",
            pods: &[
                ("0", "Succeeded"),
                ("3", "Succeeded"),
                ("5", "Succeeded"),
                ("9", "Succeeded"),
            ],
            completions: 10,
            want_status_intervals: &[(2, 7)],
            want_intervals: &[(0, 0), (2, 7), (9, 9)],
        },
        SucceededRow {
            name: "corrupted interval",
            prev_succeeded: "0,1-foo,bar",
            pods: &[("3", "Succeeded")],
            completions: 4,
            want_status_intervals: &[(0, 0)],
            want_intervals: &[(0, 0), (3, 3)],
        },
    ];
    for row in rows {
        let job = indexed_job(
            row.completions,
            json!({"status": {"completedIndexes": row.prev_succeeded}}),
        );
        let pods: Vec<_> = hollow_pods(row.pods)
            .into_iter()
            .map(|mut p| {
                p.metadata.finalizers = Some(vec!["batch.kubernetes.io/job-tracking".into()]);
                p
            })
            .collect();
        let (status, all) = calculate_succeeded_indexes(&JobView::new(&job), &refs(&pods));
        assert_eq!(
            status,
            ivs(row.want_status_intervals),
            "{}: status",
            row.name
        );
        assert_eq!(all, ivs(row.want_intervals), "{}: all", row.name);
    }
}

#[test]
fn succeeded_pods_without_finalizer_are_already_counted() {
    let job = indexed_job(4, json!({}));
    let pods = build(vec![
        pod().phase("Succeeded").index("1"),
        pod().phase("Succeeded").index("2").tracking_finalizer(),
    ]);
    let (_, all) = calculate_succeeded_indexes(&JobView::new(&job), &refs(&pods));
    assert_eq!(all, ivs(&[(2, 2)]));
}

struct IndexFailedRow {
    name: &'static str,
    backoff_limit_per_index: i32,
    policy: serde_json::Value,
    pod: super::PodBuilder,
    want: bool,
}

#[test]
fn is_index_failed_table() {
    let fail_index_on_3 = json!({"rules": [{"action": "FailIndex",
        "onExitCodes": {"operator": "In", "values": [3]}}]});
    let rows = [
        IndexFailedRow {
            name: "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=0",
            backoff_limit_per_index: 0,
            policy: json!(null),
            pod: pod()
                .index_failure_count("0")
                .phase("Failed")
                .index("0")
                .tracking_finalizer(),
            want: true,
        },
        IndexFailedRow {
            name: "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=1",
            backoff_limit_per_index: 1,
            policy: json!(null),
            pod: pod()
                .index_failure_count("1")
                .phase("Failed")
                .index("1")
                .tracking_finalizer(),
            want: true,
        },
        IndexFailedRow {
            name: "matching FailIndex pod failure policy",
            backoff_limit_per_index: 1,
            policy: fail_index_on_3.clone(),
            pod: pod()
                .index_failure_count("0")
                .phase("Failed")
                .exited("c", 3)
                .index("0")
                .tracking_finalizer(),
            want: true,
        },
        IndexFailedRow {
            name: "failed pod below backoffLimitPerIndex",
            backoff_limit_per_index: 1,
            policy: json!(null),
            pod: pod().index_failure_count("0").phase("Failed").index("0"),
            want: false,
        },
        IndexFailedRow {
            name: "ignored failure does not fail the index",
            backoff_limit_per_index: 0,
            policy: json!({"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}),
            pod: pod()
                .index_failure_count("5")
                .phase("Failed")
                .condition("DisruptionTarget", "True")
                .index("0"),
            want: false,
        },
        IndexFailedRow {
            name: "running pod is not failed",
            backoff_limit_per_index: 0,
            policy: json!(null),
            pod: pod().index_failure_count("3").phase("Running").index("0"),
            want: false,
        },
        IndexFailedRow {
            name: "hostile failure count reads as 0",
            backoff_limit_per_index: 1,
            policy: json!(null),
            pod: pod()
                .index_failure_count("99999999999")
                .phase("Failed")
                .index("0"),
            want: false,
        },
    ];
    for row in rows {
        let job = indexed_job(
            2,
            json!({"spec": {"backoffLimitPerIndex": row.backoff_limit_per_index,
                "podFailurePolicy": row.policy}}),
        );
        let pod = row.pod.build();
        assert_eq!(
            is_index_failed(&JobView::new(&job), &pod),
            row.want,
            "{}",
            row.name
        );
    }
    // Without backoffLimitPerIndex no index fails.
    let job = indexed_job(2, json!({}));
    let failed = pod()
        .index_failure_count("9")
        .phase("Failed")
        .index("0")
        .build();
    assert!(!is_index_failed(&JobView::new(&job), &failed));
}

struct FailedIndexesRow {
    name: &'static str,
    backoff_limit_per_index: i32,
    failed_indexes: Option<&'static str>,
    pods: Vec<super::PodBuilder>,
    want: &'static [(i64, i64)],
}

#[test]
fn calculate_failed_indexes_table() {
    let rows = [
        FailedIndexesRow {
            name: "one new index failed",
            backoff_limit_per_index: 1,
            failed_indexes: None,
            pods: vec![
                pod()
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
            ],
            want: &[(1, 1)],
        },
        FailedIndexesRow {
            name: "pod without finalizer is ignored",
            backoff_limit_per_index: 0,
            failed_indexes: None,
            pods: vec![pod().index_failure_count("0").phase("Failed").index("0")],
            want: &[],
        },
        FailedIndexesRow {
            name: "pod outside completions is ignored",
            backoff_limit_per_index: 0,
            failed_indexes: None,
            pods: vec![pod().index_failure_count("0").phase("Failed").index("3")],
            want: &[],
        },
        FailedIndexesRow {
            name: "extend the failed indexes",
            backoff_limit_per_index: 0,
            failed_indexes: Some("0"),
            pods: vec![
                pod()
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
            ],
            want: &[(0, 1)],
        },
        FailedIndexesRow {
            name: "prev failed indexes empty",
            backoff_limit_per_index: 0,
            failed_indexes: Some(""),
            pods: vec![
                pod()
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
            ],
            want: &[(1, 1)],
        },
        FailedIndexesRow {
            name: "prev failed indexes outside the completions",
            backoff_limit_per_index: 0,
            failed_indexes: Some("9"),
            pods: vec![
                pod()
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
            ],
            want: &[(1, 1)],
        },
        FailedIndexesRow {
            name: "corrupted prev failed indexes are skipped",
            backoff_limit_per_index: 0,
            failed_indexes: Some("x,0-,1"),
            pods: vec![],
            want: &[(1, 1)],
        },
    ];
    for row in rows {
        let job = indexed_job(
            2,
            json!({"spec": {"backoffLimitPerIndex": row.backoff_limit_per_index},
                "status": {"failedIndexes": row.failed_indexes}}),
        );
        let pods = build(row.pods);
        assert_eq!(
            calculate_failed_indexes(&JobView::new(&job), &refs(&pods)),
            ivs(row.want),
            "{}",
            row.name
        );
    }
}

#[test]
fn intervals_have_index_table() {
    let rows: [(&str, Pairs, i64, bool); 9] = [
        ("empty", &[], 4, false),
        ("before all", &[(2, 4), (5, 7)], 1, false),
        ("after all", &[(2, 4), (6, 8)], 9, false),
        ("in between", &[(2, 4), (6, 8)], 5, false),
        ("in first", &[(2, 4), (6, 8)], 2, true),
        ("in second", &[(2, 4), (6, 8)], 8, true),
        ("negative index", &[(0, 4)], -1, false),
        ("huge index", &[(0, 4)], i64::MAX, false),
        ("reversed interval holds nothing", &[(5, 3)], 4, false),
    ];
    for (name, intervals, index, want) in rows {
        assert_eq!(ivs(intervals).has(index), want, "{name}");
    }
}

#[test]
fn parse_and_format_table() {
    // (name, string, completions, intervals, formatted back)
    let rows: [(&str, &str, i32, Pairs, &str); 24] = [
        ("empty", "", 10, &[], ""),
        ("single", "3", 10, &[(3, 3)], "3"),
        ("pair is written with a comma", "3,4", 10, &[(3, 4)], "3,4"),
        ("run of three is a range", "3-5", 10, &[(3, 5)], "3-5"),
        (
            "mixed",
            "0-2,4,5,7",
            10,
            &[(0, 2), (4, 5), (7, 7)],
            "0-2,4,5,7",
        ),
        ("adjacent parts merge", "1,2,3,4", 10, &[(1, 4)], "1-4"),
        ("adjacent ranges merge", "1-3,4-6", 10, &[(1, 6)], "1-6"),
        (
            "end clipped to completions",
            "0-5,8-10",
            10,
            &[(0, 5), (8, 9)],
            "0-5,8,9",
        ),
        (
            "stops at first part at or past completions",
            "0,12,3",
            10,
            &[(0, 0)],
            "0",
        ),
        ("zero completions keeps nothing", "0-3", 0, &[], ""),
        ("negative completions keeps nothing", "0-3", -5, &[], ""),
        (
            "corrupted parts are skipped",
            "0,1-foo,bar",
            4,
            &[(0, 0)],
            "0",
        ),
        ("trailing comma", "1,", 10, &[(1, 1)], "1"),
        ("only commas", ",,", 10, &[], ""),
        ("leading dash is unparsable", "-1", 10, &[], ""),
        ("dangling dash is unparsable", "2-", 10, &[], ""),
        ("third dash part is ignored", "1-3-7", 10, &[(1, 3)], "1-3"),
        (
            "plus sign parses as Go's Atoi does",
            "+2",
            10,
            &[(2, 2)],
            "2",
        ),
        ("leading zeros parse", "007", 10, &[(7, 7)], "7"),
        ("spaces are unparsable", " 1, 2", 10, &[], ""),
        (
            "out of int64 range is unparsable",
            "99999999999999999999,1",
            10,
            &[(1, 1)],
            "1",
        ),
        (
            "reversed range is kept as upstream keeps it",
            "5-3",
            10,
            &[(5, 3)],
            "5",
        ),
        (
            "unordered parts are not sorted",
            "5,1",
            10,
            &[(5, 5), (1, 1)],
            "5,1",
        ),
        (
            "max completions",
            "0-2147483646",
            i32::MAX,
            &[(0, 2_147_483_646)],
            "0-2147483646",
        ),
    ];
    for (name, input, completions, want, formatted) in rows {
        let parsed = OrderedIntervals::parse(input, completions);
        assert_eq!(parsed, ivs(want), "{name}");
        assert_eq!(parsed.to_string(), formatted, "{name}: formatted");
    }
}

#[test]
fn total_and_count_table() {
    let rows: [(&str, Pairs, i64); 5] = [
        ("empty", &[], 0),
        ("singles", &[(1, 1), (3, 3)], 2),
        ("ranges", &[(0, 4), (6, 9)], 9),
        ("reversed counts negatively as upstream's", &[(5, 3)], -1),
        (
            "huge does not overflow",
            &[(i64::MIN, i64::MAX), (0, i64::MAX)],
            i64::MAX,
        ),
    ];
    for (name, intervals, want) in rows {
        assert_eq!(ivs(intervals).total(), want, "{name}");
    }
    assert_eq!(indexes_count(None, 10), 0);
    assert_eq!(indexes_count(Some("0-3,7"), 10), 5);
    assert_eq!(indexes_count(Some("0-3,7"), 5), 4);
}

#[test]
fn merge_table() {
    let rows: [(&str, Pairs, Pairs, Pairs); 7] = [
        ("both empty", &[], &[], &[]),
        ("into empty", &[], &[(1, 2)], &[(1, 2)]),
        ("disjoint", &[(0, 1)], &[(5, 6)], &[(0, 1), (5, 6)]),
        ("adjacent join", &[(0, 1)], &[(2, 3)], &[(0, 3)]),
        ("overlapping join", &[(0, 4)], &[(2, 6)], &[(0, 6)]),
        ("contained", &[(0, 9)], &[(2, 3), (5, 5)], &[(0, 9)]),
        (
            "interleaved",
            &[(0, 0), (4, 5), (10, 12)],
            &[(2, 2), (7, 8)],
            &[(0, 0), (2, 2), (4, 5), (7, 8), (10, 12)],
        ),
    ];
    for (name, a, b, want) in rows {
        assert_eq!(ivs(a).merge(&ivs(b)), ivs(want), "{name}");
        assert_eq!(ivs(b).merge(&ivs(a)), ivs(want), "{name}: swapped");
    }
    assert_eq!(
        ivs(&[(1, 1), (i64::MAX, i64::MAX)]).with_ordered_indexes(&[0, 2, i64::MAX]),
        ivs(&[(0, 2), (i64::MAX, i64::MAX)]),
        "the largest index does not overflow"
    );
}

struct PendingRow {
    name: &'static str,
    cnt: usize,
    completions: i32,
    active_pods: &'static [(&'static str, &'static str)],
    succeeded_indexes: &'static [(i64, i64)],
    failed_indexes: Option<&'static [(i64, i64)]>,
    want: &'static [i64],
}

#[test]
fn first_pending_indexes_table() {
    let rows = [
        PendingRow {
            name: "cnt greater than completions",
            cnt: 5,
            completions: 3,
            active_pods: &[],
            succeeded_indexes: &[],
            failed_indexes: None,
            want: &[0, 1, 2],
        },
        PendingRow {
            name: "cnt less than completions",
            cnt: 2,
            completions: 5,
            active_pods: &[],
            succeeded_indexes: &[],
            failed_indexes: None,
            want: &[0, 1],
        },
        PendingRow {
            name: "first pods active",
            cnt: 3,
            completions: 10,
            active_pods: &[("0", "Running"), ("1", "Pending")],
            succeeded_indexes: &[],
            failed_indexes: None,
            want: &[2, 3, 4],
        },
        PendingRow {
            name: "last pods active or succeeded",
            cnt: 6,
            completions: 6,
            active_pods: &[("6", "Pending")],
            succeeded_indexes: &[(4, 5)],
            failed_indexes: None,
            want: &[0, 1, 2, 3],
        },
        PendingRow {
            name: "mixed",
            cnt: 5,
            completions: 20,
            active_pods: &[
                ("3", "Pending"),
                ("5", "Running"),
                ("8", "Pending"),
                ("-", "Running"),
                ("-3", "Running"),
            ],
            succeeded_indexes: &[(2, 4), (9, 9)],
            failed_indexes: None,
            want: &[0, 1, 6, 7, 10],
        },
        PendingRow {
            name: "with failed indexes",
            cnt: 5,
            completions: 20,
            active_pods: &[("3", "Pending"), ("9", "Pending")],
            succeeded_indexes: &[(1, 1), (5, 5), (9, 9)],
            failed_indexes: Some(&[(2, 2), (6, 7)]),
            want: &[0, 4, 8, 10, 11],
        },
        PendingRow {
            name: "zero count",
            cnt: 0,
            completions: 20,
            active_pods: &[],
            succeeded_indexes: &[],
            failed_indexes: None,
            want: &[],
        },
        PendingRow {
            name: "negative completions",
            cnt: 3,
            completions: -1,
            active_pods: &[],
            succeeded_indexes: &[],
            failed_indexes: None,
            want: &[],
        },
        PendingRow {
            name: "everything taken",
            cnt: 3,
            completions: 3,
            active_pods: &[("1", "Running")],
            succeeded_indexes: &[(0, 0), (2, 2)],
            failed_indexes: None,
            want: &[],
        },
    ];
    let job = indexed_job(1, json!({}));
    for row in rows {
        let active = hollow_pods(row.active_pods);
        let active = refs(&active);
        let succeeded = ivs(row.succeeded_indexes);
        let failed = row.failed_indexes.map(ivs);
        let input = PendingIndexesInput {
            job: JobView::new(&job),
            active_pods: &active,
            pods: &active,
            succeeded_indexes: &succeeded,
            failed_indexes: failed.as_ref(),
        };
        assert_eq!(
            first_pending_indexes(&input, row.cnt, row.completions),
            row.want,
            "{}",
            row.name
        );
    }
}

#[test]
fn terminating_indexes_are_taken_only_when_replacing_failed_pods() {
    let pods = build(vec![
        pod().phase("Running").index("0").deletion_timestamp(),
        pod().phase("Running").index("1"),
    ]);
    let all = refs(&pods);
    let active = vec![all[1]];
    let empty = OrderedIntervals::default();
    for (policy, want) in [("TerminatingOrFailed", vec![0, 2]), ("Failed", vec![2, 3])] {
        let job = indexed_job(4, json!({"spec": {"podReplacementPolicy": policy}}));
        let input = PendingIndexesInput {
            job: JobView::new(&job),
            active_pods: &active,
            pods: &all,
            succeeded_indexes: &empty,
            failed_indexes: None,
        };
        assert_eq!(first_pending_indexes(&input, 2, 4), want, "{policy}");
    }
}

struct DuplicatesRow {
    name: &'static str,
    pods: &'static [(&'static str, &'static str)],
    want_rm: &'static [(&'static str, &'static str)],
    want_left: &'static [(&'static str, &'static str)],
    completions: i32,
}

#[test]
fn duplicated_index_pods_for_removal_table() {
    let rows = [
        DuplicatesRow {
            name: "all unique",
            pods: &[
                ("-", "Pending"),
                ("2", "Pending"),
                ("5", "Running"),
                ("6", "Running"),
            ],
            want_rm: &[("-", "Pending"), ("6", "Running")],
            want_left: &[("2", "Pending"), ("5", "Running")],
            completions: 6,
        },
        DuplicatesRow {
            name: "all with index",
            pods: &[
                ("5", "Pending"),
                ("0", "Running"),
                ("3", "Pending"),
                ("0", "Running"),
                ("3", "Running"),
                ("0", "Pending"),
                ("6", "Running"),
                ("6", "Pending"),
            ],
            want_rm: &[
                ("0", "Pending"),
                ("0", "Running"),
                ("3", "Pending"),
                ("6", "Running"),
                ("6", "Pending"),
            ],
            want_left: &[("0", "Running"), ("3", "Running"), ("5", "Pending")],
            completions: 6,
        },
        DuplicatesRow {
            name: "mixed",
            pods: &[
                ("-", "Pending"),
                ("invalid", "Running"),
                ("-2", "Running"),
                ("0", "Pending"),
                ("1", "Pending"),
                ("1", "Pending"),
                ("1", "Running"),
            ],
            want_rm: &[
                ("-", "Pending"),
                ("invalid", "Running"),
                ("-2", "Running"),
                ("1", "Pending"),
                ("1", "Pending"),
            ],
            want_left: &[("0", "Pending"), ("1", "Running")],
            completions: 6,
        },
        DuplicatesRow {
            name: "zero completions removes every indexed pod",
            pods: &[("0", "Running"), ("-", "Running")],
            // Pods at or above completions are removed as the scan meets them, before the
            // pods without index gathered so far.
            want_rm: &[("0", "Running"), ("-", "Running")],
            want_left: &[],
            completions: 0,
        },
        DuplicatesRow {
            name: "huge index sorts last and is removed",
            pods: &[("99999999999", "Running"), ("1", "Running")],
            want_rm: &[("99999999999", "Running")],
            want_left: &[("1", "Running")],
            completions: 6,
        },
        DuplicatesRow {
            name: "no pods",
            pods: &[],
            want_rm: &[],
            want_left: &[],
            completions: 6,
        },
    ];
    for row in rows {
        let pods = hollow_pods(row.pods);
        let (rm, left) = duplicated_index_pods_for_removal(&refs(&pods), row.completions);
        assert_eq!(index_phases(&rm), owned(row.want_rm), "{}: rm", row.name);
        assert_eq!(
            index_phases(&left),
            owned(row.want_left),
            "{}: left",
            row.name
        );
    }
}

#[test]
fn pod_generate_name_with_index_table() {
    let rows = [
        ("short job name", "indexed-job", 1, "indexed-job-1-"),
        (
            "job name exceeds MaxGeneneratedNameLength",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo",
            1,
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
        ),
        (
            "job name with index suffix exceeds MaxGeneratedNameLength",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhoo",
            1,
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
        ),
        (
            "exactly the limit is kept",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh",
            1,
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
        ),
        (
            "multi-byte name is cut at a character boundary",
            "aééééééééééééééééééééééééééééééééé",
            12,
            "aéééééééééééééééééééééééééé-12-",
        ),
    ];
    for (name, job_name, index, want) in rows {
        let got = pod_generate_name_with_index(job_name, index);
        assert_eq!(got, want, "{name}");
        assert!(got.len() <= 58, "{name}: {} bytes", got.len());
    }
    assert_eq!(pod_hostname("job", 3), "job-3");
}

#[test]
fn index_failure_count_table() {
    let rows = [
        ("no annotation", None, 0),
        ("valid value", Some("2"), 2),
        ("valid maxint32 value", Some("2147483647"), i32::MAX),
        ("too large value", Some("2147483648"), 0),
        ("negative value", Some("-1"), 0),
        ("invalid int value", Some("xyz"), 0),
        ("empty value", Some(""), 0),
        ("plus sign", Some("+4"), 4),
    ];
    for (name, value, want) in rows {
        let builder = pod();
        let pod = match value {
            Some(v) => builder.index_failure_count(v),
            None => builder,
        }
        .build();
        assert_eq!(index_failure_count(&pod), want, "{name}");
    }
    assert_eq!(parse_int32("0"), 0);
    let both = pod()
        .index_failure_count("2147483647")
        .index_ignored_failure_count("1")
        .build();
    assert_eq!(
        index_absolute_failure_count(&both),
        i32::MIN,
        "the int32 sum wraps as Go's"
    );
}

#[test]
fn completion_index_table() {
    let rows = [
        ("missing", None, None),
        ("zero", Some("0"), Some(0)),
        ("valid", Some("12"), Some(12)),
        ("negative", Some("-2"), None),
        ("invalid", Some("invalid"), None),
        ("empty", Some(""), None),
        ("plus sign", Some("+3"), Some(3)),
        ("beyond int32", Some("99999999999"), Some(99_999_999_999)),
        ("beyond int64", Some("99999999999999999999"), None),
    ];
    for (name, value, want) in rows {
        let builder = pod();
        let pod = match value {
            Some(v) => builder.index(v),
            None => builder,
        }
        .build();
        assert_eq!(completion_index(&pod), want, "{name}");
    }
}

#[test]
fn valid_pods_filter_finalizer_uncounted_expected_and_index() {
    let job = indexed_job(3, json!({}));
    let pods = build(vec![
        pod()
            .uid("a")
            .phase("Succeeded")
            .index("0")
            .tracking_finalizer(),
        pod().uid("b").phase("Succeeded").index("1"),
        pod()
            .uid("c")
            .phase("Succeeded")
            .index("1")
            .tracking_finalizer(),
        pod()
            .uid("d")
            .phase("Succeeded")
            .index("2")
            .tracking_finalizer(),
        pod()
            .uid("e")
            .phase("Succeeded")
            .index("3")
            .tracking_finalizer(),
        pod().uid("f").phase("Succeeded").tracking_finalizer(),
        pod()
            .uid("g")
            .phase("Failed")
            .index("2")
            .tracking_finalizer(),
    ]);
    let uncounted: UidSet = ["c".to_owned()].into();
    let expected: UidSet = ["d".to_owned()].into();
    let valid = valid_pods_with_filter(
        &JobView::new(&job),
        &refs(&pods),
        Some(&uncounted),
        &expected,
        |p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Succeeded"),
    );
    assert_eq!(super::uids(&valid), ["a"]);
}

#[test]
fn template_index_annotation_label_and_env() {
    let job = indexed_job(
        3,
        json!({"spec": {"template": {"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [
                {"name": "c1"},
                {"name": "c2", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]}
            ]
        }}}}),
    );
    let mut template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    add_completion_index_env_variables(&mut template);
    add_completion_index_env_variables(&mut template);
    add_completion_index(&mut template, 2);
    let value = serde_json::to_value(&template).unwrap_or_default();
    let path = "metadata.labels['batch.kubernetes.io/job-completion-index']";
    assert_eq!(
        value["spec"]["initContainers"][0]["env"],
        json!([{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": path}}}])
    );
    assert_eq!(
        value["spec"]["containers"][0]["env"],
        json!([{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": path}}}])
    );
    assert_eq!(
        value["spec"]["containers"][1]["env"],
        json!([{"name": "JOB_COMPLETION_INDEX", "value": "mine"}]),
        "a container's own variable is kept"
    );
    assert_eq!(
        value["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"],
        "2"
    );
    assert_eq!(
        value["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
        "2"
    );
    assert_eq!(value["metadata"]["labels"]["app"], "job");
}
