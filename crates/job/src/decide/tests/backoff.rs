//! `backoff_utils.go` and the per-index backoff: upstream's `TestNewBackoffRecord`,
//! `TestGetFinishedTime`, `TestGetRemainingBackoffTime`, `TestGetRemainingBackoffTimePerIndex`,
//! `TestGetPodsWithDelayedDeletionPerIndex` and `TestGetNewIndexFailureCountValue` tables, plus
//! rows for clocks going back, hostile counts and the per-index creation choice.

use std::collections::BTreeMap;
use std::time::Duration;

use informer::CachedPod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

use super::{PodBuilder, build, indexed_job, job, now, now_plus, pod, refs, uid_set};
use crate::decide::backoff::{
    BackoffRecord, BackoffStore, DEFAULT_JOB_POD_FAILURE_BACKOFF, DelayedDeletionInput,
    MAX_JOB_POD_FAILURE_BACKOFF, finished_time, index_failure_count_annotations,
    new_index_failure_counts, pod_creation_info_for_independent_indexes,
    pods_with_delayed_deletion_per_index, remaining_time_for_failures_count,
    remaining_time_per_index,
};
use crate::decide::indexes::{calculate_failed_indexes, calculate_succeeded_indexes};
use crate::decide::pods::{GO_ZERO_TIME, filter_active_pods};
use crate::decide::spec::JobView;

fn ms(offset: i64) -> Timestamp {
    now()
        .checked_add(SignedDuration::from_millis(offset))
        .expect("a valid time")
}

fn finished_pod(phase: &str, at: Timestamp) -> CachedPod {
    pod().phase(phase).finished("c", Some(at)).build()
}

struct RecordRow {
    name: &'static str,
    stored: BackoffRecord,
    new_succeeded: &'static [i64],
    new_failed: &'static [i64],
    want: BackoffRecord,
}

#[test]
fn new_backoff_record_table() {
    let none = BackoffRecord::default();
    let rows = [
        RecordRow {
            name: "Empty backoff store and one new failure",
            stored: none,
            new_succeeded: &[],
            new_failed: &[0],
            want: BackoffRecord {
                failures_after_last_success: 1,
                last_failure_time: Some(ms(0)),
            },
        },
        RecordRow {
            name: "Empty backoff store and two new failures",
            stored: none,
            new_succeeded: &[],
            new_failed: &[0, -1],
            want: BackoffRecord {
                failures_after_last_success: 2,
                last_failure_time: Some(ms(0)),
            },
        },
        RecordRow {
            name: "Empty backoff store, two failures followed by success",
            stored: none,
            new_succeeded: &[0],
            new_failed: &[-2, -1],
            want: none,
        },
        RecordRow {
            name: "Empty backoff store, two failures, one success and two more failures",
            stored: none,
            new_succeeded: &[-2],
            new_failed: &[0, -4, -3, -1],
            want: BackoffRecord {
                failures_after_last_success: 2,
                last_failure_time: Some(ms(0)),
            },
        },
        RecordRow {
            name: "Backoff store having failure count 2 and one new failure",
            stored: BackoffRecord {
                failures_after_last_success: 2,
                last_failure_time: None,
            },
            new_succeeded: &[],
            new_failed: &[0],
            want: BackoffRecord {
                failures_after_last_success: 3,
                last_failure_time: Some(ms(0)),
            },
        },
        RecordRow {
            name: "Empty backoff store with success and failure at same timestamp",
            stored: none,
            new_succeeded: &[0],
            new_failed: &[0],
            want: none,
        },
        RecordRow {
            name: "Empty backoff store with no success/failure",
            stored: none,
            new_succeeded: &[],
            new_failed: &[],
            want: none,
        },
        RecordRow {
            name: "Empty backoff store with one success",
            stored: none,
            new_succeeded: &[0],
            new_failed: &[],
            want: none,
        },
        // kcm-rs rows.
        RecordRow {
            name: "no new pod keeps the stored record",
            stored: BackoffRecord {
                failures_after_last_success: 4,
                last_failure_time: Some(ms(-9)),
            },
            new_succeeded: &[],
            new_failed: &[],
            want: BackoffRecord {
                failures_after_last_success: 4,
                last_failure_time: Some(ms(-9)),
            },
        },
        RecordRow {
            name: "a success resets a stored record",
            stored: BackoffRecord {
                failures_after_last_success: 4,
                last_failure_time: Some(ms(-9)),
            },
            new_succeeded: &[-5],
            new_failed: &[-6],
            want: none,
        },
        RecordRow {
            name: "the count wraps as Go's int32",
            stored: BackoffRecord {
                failures_after_last_success: i32::MAX,
                last_failure_time: None,
            },
            new_succeeded: &[],
            new_failed: &[0],
            want: BackoffRecord {
                failures_after_last_success: i32::MIN,
                last_failure_time: Some(ms(0)),
            },
        },
    ];
    for row in rows {
        let succeeded: Vec<CachedPod> = row
            .new_succeeded
            .iter()
            .map(|&t| finished_pod("Succeeded", ms(t)))
            .collect();
        let failed: Vec<CachedPod> = row
            .new_failed
            .iter()
            .map(|&t| finished_pod("Failed", ms(t)))
            .collect();
        assert_eq!(
            row.stored.next(&refs(&succeeded), &refs(&failed)),
            row.want,
            "{}",
            row.name
        );
    }
}

#[test]
fn backoff_store_keeps_records_per_job() {
    let mut store = BackoffStore::new();
    assert!(store.is_empty());
    let failed = vec![finished_pod("Failed", ms(0))];
    let record = store.new_backoff_record("ns/a", &[], &refs(&failed));
    assert!(
        store.get("ns/a").is_none(),
        "computing a record stores nothing"
    );
    store.update_backoff_record("ns/a", record);
    let next = store.new_backoff_record("ns/a", &[], &refs(&failed));
    assert_eq!(next.failures_after_last_success, 2);
    assert_eq!(
        store
            .new_backoff_record("ns/b", &[], &refs(&failed))
            .failures_after_last_success,
        1
    );
    assert_eq!(store.len(), 1);
    store.remove_backoff_record("ns/a");
    store.remove_backoff_record("ns/missing");
    assert!(store.is_empty());
}

#[test]
fn finished_time_table() {
    let t = now();
    let minus = |s: i64| now_plus(-s);
    let rows: [(&str, PodBuilder, Timestamp); 14] = [
        (
            "Pod with multiple containers and all containers terminated",
            pod()
                .finished("a", Some(minus(1)))
                .finished("b", Some(t))
                .finished("c", Some(minus(2))),
            t,
        ),
        (
            "Pod with multiple containers; two containers in terminated state and one in running state; fallback to deletionTimestamp",
            pod()
                .finished("a", Some(minus(1)))
                .running("b")
                .finished("c", Some(minus(2)))
                .deleted_at(t),
            t,
        ),
        (
            "fallback to deletionTimestamp",
            pod().running("a").deleted_at(t),
            t,
        ),
        (
            "fallback to deletionTimestamp, decremented by grace period",
            pod().running("a").deleted_at(t).grace_period(30),
            minus(30),
        ),
        (
            "fallback to PodReady.LastTransitionTime when status of the condition is False",
            pod()
                .finished("a", None)
                .condition_at("Ready", "False", Some(t)),
            t,
        ),
        (
            "skip fallback to PodReady.LastTransitionTime when status of the condition is True",
            pod()
                .finished("a", None)
                .condition_at("Ready", "True", Some(minus(30)))
                .deleted_at(t),
            t,
        ),
        (
            "fallback to creationTimestamp",
            pod().finished("a", None).created(t),
            t,
        ),
        (
            "Pod with sidecar container and all containers terminated",
            pod()
                .sidecar("sidecar")
                .finished("main", Some(minus(1)))
                .init_exited("sidecar", 0, Some(t)),
            t,
        ),
        // kcm-rs rows.
        (
            "a regular init container is not looked at",
            pod()
                .finished("main", Some(minus(1)))
                .init_exited("setup", 0, Some(t)),
            minus(1),
        ),
        (
            "a sidecar still running defers to the next source",
            pod()
                .sidecar("sidecar")
                .finished("main", Some(minus(1)))
                .init_restarts("sidecar", 0)
                .condition_at("Ready", "False", Some(minus(5))),
            minus(5),
        ),
        (
            "nothing at all reads as Go's zero time",
            pod(),
            GO_ZERO_TIME,
        ),
        (
            "a huge grace period saturates",
            pod().deleted_at(t).grace_period(i64::MAX),
            Timestamp::MIN,
        ),
        (
            "only the first Ready condition is read, a True one (not kept by the cache) included",
            pod()
                .phase("Running")
                .condition_at("Ready", "True", Some(minus(30)))
                .condition_at("Ready", "False", Some(minus(5)))
                .deleted_at(t),
            t,
        ),
        (
            "a Ready condition neither True nor False defers to the next source",
            pod()
                .phase("Failed")
                .condition_at("Ready", "Unknown", Some(minus(5)))
                .created(minus(60)),
            minus(60),
        ),
    ];
    for (name, pod, want) in rows {
        assert_eq!(finished_time(&pod.build()), want, "{name}");
    }
}

#[test]
fn remaining_backoff_time_table() {
    let secs = Duration::from_secs;
    let rows: [(&str, i32, Option<Timestamp>, Timestamp, u64); 13] = [
        ("no failures", 0, None, now(), 0),
        (
            "one failure; current time and failure time are same",
            1,
            Some(now()),
            now(),
            5,
        ),
        (
            "one failure; current time == 1 second + failure time",
            1,
            Some(now()),
            now_plus(1),
            4,
        ),
        (
            "one failure; current time == expected backoff time",
            1,
            Some(now()),
            now_plus(5),
            0,
        ),
        (
            "one failure; current time == expected backoff time + 1 Second",
            1,
            Some(now()),
            now_plus(6),
            0,
        ),
        (
            "three failures; current time and failure time are same",
            3,
            Some(now()),
            now(),
            20,
        ),
        (
            "eight failures; current time and failure time are same; backoff not exceeding maxBackoff",
            8,
            Some(now()),
            now(),
            640,
        ),
        (
            "nine failures; current time and failure time are same; backoff exceeding maxBackoff",
            9,
            Some(now()),
            now(),
            700,
        ),
        // kcm-rs rows.
        (
            "a last failure in the future waits longer, as upstream's subtraction",
            1,
            Some(now_plus(3)),
            now(),
            8,
        ),
        ("a count without a time waits nothing", 2, None, now(), 0),
        (
            "a negative (wrapped) count waits the first backoff",
            -3,
            Some(now()),
            now(),
            5,
        ),
        ("a huge count is capped", i32::MAX, Some(now()), now(), 700),
        (
            "a failure at the epoch is long over",
            1,
            Some(GO_ZERO_TIME),
            now(),
            0,
        ),
    ];
    for (name, failures, last, current, want) in rows {
        let record = BackoffRecord {
            failures_after_last_success: failures,
            last_failure_time: last,
        };
        assert_eq!(
            record.remaining_time(current, secs(5), secs(700)),
            secs(want),
            "{name}"
        );
    }
    assert_eq!(
        remaining_time_for_failures_count(
            now(),
            DEFAULT_JOB_POD_FAILURE_BACKOFF,
            MAX_JOB_POD_FAILURE_BACKOFF,
            7,
            Some(now())
        ),
        secs(600),
        "10 s doubled six times is past 10 min"
    );
}

#[test]
fn remaining_backoff_time_per_index_table() {
    let secs = Duration::from_secs;
    let rows: [(&str, Option<PodBuilder>, u64); 4] = [
        ("no failures", None, 0),
        (
            "two prev failures; current time and failure time are same",
            Some(
                pod()
                    .phase("Failed")
                    .index_failure_count("2")
                    .deleted_at(now()),
            ),
            20,
        ),
        (
            "one prev failure counted and one ignored; current time and failure time are same",
            Some(
                pod()
                    .phase("Failed")
                    .index_failure_count("1")
                    .index_ignored_failure_count("1")
                    .deleted_at(now()),
            ),
            20,
        ),
        (
            "hostile counts read as 0",
            Some(
                pod()
                    .phase("Failed")
                    .index_failure_count("-4")
                    .index_ignored_failure_count("x")
                    .deleted_at(now()),
            ),
            5,
        ),
    ];
    for (name, last_failed, want) in rows {
        let last_failed = last_failed.map(PodBuilder::build);
        assert_eq!(
            remaining_time_per_index(now(), secs(5), secs(700), last_failed.as_ref()),
            secs(want),
            "{name}"
        );
    }
}

struct DelayedRow {
    name: &'static str,
    completions: i32,
    backoff_limit_per_index: i32,
    pods: Vec<PodBuilder>,
    expected_rm_finalizers: &'static [&'static str],
    want: &'static [&'static str],
}

#[test]
fn pods_with_delayed_deletion_per_index_table() {
    let rows = [
        DelayedRow {
            name: "failed pods are kept corresponding to non-failed indexes are kept",
            completions: 3,
            backoff_limit_per_index: 1,
            pods: vec![
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("b")
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
                pod()
                    .uid("c")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("2")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &["a", "c"],
        },
        DelayedRow {
            name: "failed pod without finalizer; the pod's deletion is not delayed as it already started",
            completions: 2,
            backoff_limit_per_index: 0,
            pods: vec![
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0"),
            ],
            expected_rm_finalizers: &[],
            want: &[],
        },
        DelayedRow {
            name: "failed pod with expected finalizer removal; the pod's deletion is not delayed as it already started",
            completions: 2,
            backoff_limit_per_index: 0,
            pods: vec![
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &["a"],
            want: &[],
        },
        DelayedRow {
            name: "failed pod with index outside of completions; the pod's deletion is not delayed",
            completions: 2,
            backoff_limit_per_index: 0,
            pods: vec![
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("4")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &[],
        },
        DelayedRow {
            name: "failed pod for active index; the pod's deletion is not delayed as it is already replaced",
            completions: 2,
            backoff_limit_per_index: 1,
            pods: vec![
                pod()
                    .uid("a1")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("a2")
                    .index_failure_count("1")
                    .phase("Running")
                    .index("0")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &[],
        },
        DelayedRow {
            name: "failed pod for succeeded index; the pod's deletion is not delayed as it is already replaced",
            completions: 2,
            backoff_limit_per_index: 1,
            pods: vec![
                pod()
                    .uid("a1")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("a2")
                    .index_failure_count("1")
                    .phase("Succeeded")
                    .index("0")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &[],
        },
        DelayedRow {
            name: "multiple failed pods for index with different failure count; only the pod with highest failure count is kept",
            completions: 2,
            backoff_limit_per_index: 4,
            pods: vec![
                pod()
                    .uid("a1")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("a3")
                    .index_failure_count("2")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("a2")
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &["a3"],
        },
        DelayedRow {
            name: "multiple failed pods for index with different finish times; only the last failed pod is kept",
            completions: 2,
            backoff_limit_per_index: 4,
            pods: vec![
                pod()
                    .uid("a1")
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("0")
                    .deleted_at(now_plus(-1))
                    .tracking_finalizer(),
                pod()
                    .uid("a3")
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("0")
                    .deleted_at(now())
                    .tracking_finalizer(),
                pod()
                    .uid("a2")
                    .index_failure_count("1")
                    .phase("Failed")
                    .index("0")
                    .deleted_at(now_plus(-2))
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &["a3"],
        },
        // kcm-rs rows.
        DelayedRow {
            name: "a failed index's pods are not delayed",
            completions: 2,
            backoff_limit_per_index: 0,
            pods: vec![
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("1")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &[],
        },
        DelayedRow {
            name: "ignored failures count towards the absolute count",
            completions: 1,
            backoff_limit_per_index: 9,
            pods: vec![
                pod()
                    .uid("b")
                    .index_failure_count("2")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
                pod()
                    .uid("a")
                    .index_failure_count("1")
                    .index_ignored_failure_count("2")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
            ],
            expected_rm_finalizers: &[],
            want: &["a"],
        },
    ];
    for row in rows {
        let job = indexed_job(
            row.completions,
            json!({"spec": {"backoffLimitPerIndex": row.backoff_limit_per_index}}),
        );
        let view = JobView::new(&job);
        let pods = build(row.pods);
        let all = refs(&pods);
        let active = filter_active_pods(&all);
        let failed = calculate_failed_indexes(&view, &all);
        let (_, succeeded) = calculate_succeeded_indexes(&view, &all);
        let expected = uid_set(row.expected_rm_finalizers);
        let delayed = pods_with_delayed_deletion_per_index(&DelayedDeletionInput {
            job: view,
            pods: &all,
            active_pods: &active,
            expected_rm_finalizers: &expected,
            succeeded_indexes: &succeeded,
            failed_indexes: &failed,
        });
        let mut got: Vec<&str> = delayed
            .values()
            .map(|p| p.metadata.uid.as_deref().unwrap_or_default())
            .collect();
        got.sort_unstable();
        assert_eq!(got, row.want, "{}", row.name);
    }
}

#[test]
fn new_index_failure_count_table() {
    let ignore_disruption = json!({"spec": {"podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]}}});
    // (name, job patch, pod being replaced, (failure count, ignored failure count))
    type Row = (
        &'static str,
        serde_json::Value,
        Option<PodBuilder>,
        (i32, i32),
    );
    let rows: [Row; 6] = [
        ("first pod created", json!({}), None, (0, 0)),
        (
            "failed pod being replaced with 0 index failure count",
            json!({}),
            Some(
                pod()
                    .uid("a")
                    .index_failure_count("0")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
            ),
            (1, 0),
        ),
        (
            "failed pod being replaced with >0 index failure count",
            json!({}),
            Some(
                pod()
                    .uid("a")
                    .index_failure_count("3")
                    .phase("Failed")
                    .index("0")
                    .tracking_finalizer(),
            ),
            (4, 0),
        ),
        (
            "failed pod being replaced, matching the ignore rule",
            ignore_disruption.clone(),
            Some(
                pod()
                    .uid("a")
                    .index_failure_count("3")
                    .phase("Failed")
                    .condition("DisruptionTarget", "True")
                    .index("3")
                    .tracking_finalizer(),
            ),
            (3, 1),
        ),
        // kcm-rs rows.
        (
            "counted failure with a policy keeps the ignored count",
            ignore_disruption,
            Some(
                pod()
                    .index_failure_count("1")
                    .index_ignored_failure_count("2")
                    .phase("Failed"),
            ),
            (2, 2),
        ),
        (
            "the int32 count wraps as Go's",
            json!({}),
            Some(pod().index_failure_count("2147483647").phase("Failed")),
            (i32::MIN, 0),
        ),
    ];
    for (name, patch, replaced, want) in rows {
        let job = job(patch);
        let replaced = replaced.map(PodBuilder::build);
        assert_eq!(
            new_index_failure_counts(&JobView::new(&job), replaced.as_ref()),
            want,
            "{name}"
        );
    }
}

#[test]
fn index_failure_count_annotations_write_ignored_only_when_positive() {
    let job = job(json!({}));
    let view = JobView::new(&job);
    assert_eq!(
        index_failure_count_annotations(&view, None),
        vec![(
            "batch.kubernetes.io/job-index-failure-count",
            "0".to_owned()
        )]
    );
    let replaced = pod()
        .index_failure_count("1")
        .index_ignored_failure_count("4")
        .phase("Failed")
        .build();
    assert_eq!(
        index_failure_count_annotations(&view, Some(&replaced)),
        vec![
            (
                "batch.kubernetes.io/job-index-failure-count",
                "2".to_owned()
            ),
            (
                "batch.kubernetes.io/job-index-ignored-failure-count",
                "4".to_owned()
            ),
        ]
    );
}

#[test]
fn pod_creation_info_for_independent_indexes_table() {
    let recent = pod()
        .phase("Failed")
        .index("1")
        .index_failure_count("0")
        .deleted_at(now_plus(-4))
        .build();
    let old = pod()
        .phase("Failed")
        .index("2")
        .index_failure_count("0")
        .deleted_at(now_plus(-60))
        .build();
    let busier = pod()
        .phase("Failed")
        .index("3")
        .index_failure_count("2")
        .deleted_at(now_plus(-1))
        .build();
    let delayed: BTreeMap<i64, &CachedPod> = [(1, &recent), (2, &old), (3, &busier)].into();
    let rows: [(&str, &[i64], &[i64], u64); 5] = [
        ("no index", &[], &[], 0),
        ("an index without failed pod is ready", &[0, 1], &[0], 0),
        ("an index whose backoff passed is ready", &[1, 2], &[2], 0),
        (
            "none ready: the shortest remaining backoff",
            &[1, 3],
            &[],
            6,
        ),
        ("one index still backing off", &[3], &[], 39),
    ];
    for (name, indexes, want_ready, want_secs) in rows {
        let (ready, remaining) =
            pod_creation_info_for_independent_indexes(indexes, &delayed, now());
        assert_eq!(ready, want_ready, "{name}");
        assert_eq!(remaining, Duration::from_secs(want_secs), "{name}");
    }
}
