//! `manageJob`: the wanted active pods, deletion (suspension, excess, duplicated indexes),
//! creation (the 500 cap, `podReplacementPolicy`, the backoff, pending and per-index backoff
//! indexes), the slow-start batches, the creation metric reason and the pod templates. Rows
//! follow the create/delete counts of upstream's `TestControllerSyncJob` where they apply to
//! `manageJob` alone, and spec section 7.

use std::collections::BTreeMap;

use informer::CachedPod;
use serde_json::{Value, json};

use super::{PodBuilder, build, indexed_job, job, now, now_plus, pod, refs, uids};
use crate::decide::backoff::BackoffRecord;
use crate::decide::indexes::OrderedIntervals;
use crate::decide::manage::{
    ManageInput, ManagePlan, active_pods_for_removal, indexed_pod, plan_manage, pod_template,
    pods_creation_reason, want_active,
};
use crate::decide::pods::filter_active_pods;
use crate::decide::spec::JobView;

/// What a plan did, comparable across rows.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Delete(Vec<String>, bool),
    Create(usize, Vec<i64>),
    Wait(u64),
    Nothing,
}

fn got(plan: ManagePlan<'_>) -> Got {
    match plan {
        ManagePlan::Delete { pods, suspended } => Got::Delete(uids(&pods), suspended),
        ManagePlan::Create { count, indexes } => Got::Create(count, indexes),
        ManagePlan::WaitForBackoff { requeue_after } => Got::Wait(requeue_after.as_secs()),
        ManagePlan::Nothing => Got::Nothing,
    }
}

fn del(uids: &[&str]) -> Got {
    Got::Delete(uids.iter().map(|u| (*u).to_owned()).collect(), false)
}

struct Row {
    name: &'static str,
    job: k8s_openapi::api::batch::v1::Job,
    pods: Vec<PodBuilder>,
    succeeded: i32,
    succeeded_indexes: &'static str,
    backoff: BackoffRecord,
    want: Got,
}

fn running(uid: &str) -> PodBuilder {
    pod()
        .uid(uid)
        .phase("Running")
        .node("n")
        .tracking_finalizer()
}

fn plain(patch: Value) -> k8s_openapi::api::batch::v1::Job {
    job(patch)
}

fn run_row(row: Row) {
    let view = JobView::new(&row.job);
    let pods = build(row.pods);
    let all = refs(&pods);
    let active = filter_active_pods(&all);
    let terminating = crate::decide::pods::count_terminating_pods(&all);
    let succeeded_indexes =
        OrderedIntervals::parse(row.succeeded_indexes, view.indexed_completions());
    let delayed = BTreeMap::new();
    let plan = plan_manage(&ManageInput {
        job: view,
        pods: &all,
        active_pods: &active,
        succeeded: row.succeeded,
        terminating,
        succeeded_indexes: &succeeded_indexes,
        failed_indexes: None,
        pods_with_delayed_deletion_per_index: &delayed,
        backoff: row.backoff,
        now: now(),
    });
    assert_eq!(got(plan), row.want, "{}", row.name);
}

#[test]
fn manage_table() {
    let none = BackoffRecord::default();
    let recent_failure = BackoffRecord {
        failures_after_last_success: 2,
        last_failure_time: Some(now_plus(-5)),
    };
    let old_failure = BackoffRecord {
        failures_after_last_success: 2,
        last_failure_time: Some(now_plus(-60)),
    };
    let many: Vec<PodBuilder> = (0..600).map(|i| running(&format!("p{i:03}"))).collect();
    let rows = [
        Row {
            name: "job start",
            job: plain(json!({"spec": {"parallelism": 2, "completions": 5}})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(2, vec![]),
        },
        Row {
            name: "WQ job start (no completions)",
            job: plain(json!({"spec": {"parallelism": 2}})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(2, vec![]),
        },
        Row {
            name: "correct # of pods",
            job: plain(json!({"spec": {"parallelism": 2, "completions": 5}})),
            pods: vec![running("a"), running("b")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Nothing,
        },
        Row {
            name: "too few active pods",
            job: plain(json!({"spec": {"parallelism": 2, "completions": 5}})),
            pods: vec![running("a")],
            succeeded: 1,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(1, vec![]),
        },
        Row {
            name: "too many active pods",
            job: plain(json!({"spec": {"parallelism": 2, "completions": 5}})),
            pods: vec![running("a"), running("b"), running("c")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["a"]),
        },
        Row {
            name: "remaining completions cap the wanted pods",
            job: plain(json!({"spec": {"parallelism": 5, "completions": 5}})),
            pods: vec![running("a"), running("b"), running("c")],
            succeeded: 4,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["a", "b"]),
        },
        Row {
            name: "WQ job: after a success, running pods are left alone",
            job: plain(json!({"spec": {"parallelism": 5}})),
            pods: vec![running("a")],
            succeeded: 1,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Nothing,
        },
        Row {
            name: "more succeeded than completions: nothing wanted",
            job: plain(json!({"spec": {"parallelism": 2, "completions": 2}})),
            pods: vec![running("a")],
            succeeded: 3,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["a"]),
        },
        Row {
            name: "suspended: every active pod is deleted",
            job: plain(json!({"spec": {"parallelism": 1, "suspend": true}})),
            pods: vec![
                running("a"),
                running("b"),
                pod().uid("done").phase("Succeeded"),
            ],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Delete(vec!["a".into(), "b".into()], true),
        },
        Row {
            name: "suspended without pods still deletes (nothing)",
            job: plain(json!({"spec": {"suspend": true}})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Delete(vec![], true),
        },
        Row {
            name: "suspended: no 500 cap",
            job: plain(json!({"spec": {"suspend": true, "parallelism": 600}})),
            pods: many.clone(),
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Delete((0..600).map(|i| format!("p{i:03}")).collect(), true),
        },
        Row {
            name: "excess deletions are capped at 500",
            job: plain(json!({"spec": {"parallelism": 1}})),
            pods: many,
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Delete((0..500).map(|i| format!("p{i:03}")).collect(), false),
        },
        Row {
            name: "creations are capped at 500",
            job: plain(json!({"spec": {"parallelism": 1000}})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(500, vec![]),
        },
        Row {
            name: "backoff not over: wait",
            job: plain(json!({"spec": {"parallelism": 2}})),
            pods: vec![running("a")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: recent_failure,
            want: Got::Wait(15),
        },
        Row {
            name: "backoff over: create",
            job: plain(json!({"spec": {"parallelism": 2}})),
            pods: vec![running("a")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: old_failure,
            want: Got::Create(1, vec![]),
        },
        Row {
            name: "backoff does not delay deletions",
            job: plain(json!({"spec": {"parallelism": 1}})),
            pods: vec![running("a"), running("b")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: recent_failure,
            want: del(&["a"]),
        },
        Row {
            name: "TerminatingOrFailed: terminating pods are replaced at once",
            job: plain(json!({"spec": {"parallelism": 2}})),
            pods: vec![running("a"), running("t").deletion_timestamp()],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(1, vec![]),
        },
        Row {
            name: "podReplacementPolicy Failed: terminating pods are waited for",
            job: plain(json!({"spec": {"parallelism": 2, "podReplacementPolicy": "Failed"}})),
            pods: vec![running("a"), running("t").deletion_timestamp()],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Nothing,
        },
        Row {
            name: "a pod failure policy also waits for terminating pods",
            job: plain(json!({"spec": {"parallelism": 3, "podFailurePolicy": {"rules": []}}})),
            pods: vec![running("a"), running("t").deletion_timestamp()],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(1, vec![]),
        },
        Row {
            name: "negative parallelism wants nothing",
            job: plain(json!({"spec": {"parallelism": -3}})),
            pods: vec![running("a")],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["a"]),
        },
        Row {
            name: "negative succeeded count does not overflow",
            job: plain(json!({"spec": {"parallelism": 2, "completions": i32::MAX}})),
            pods: vec![],
            succeeded: i32::MIN,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Nothing,
        },
        // Indexed.
        Row {
            name: "indexed job start",
            job: indexed_job(3, json!({})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: Got::Create(3, vec![0, 1, 2]),
        },
        Row {
            name: "indexed: pending indexes skip active and succeeded ones",
            job: indexed_job(5, json!({"spec": {"parallelism": 3}})),
            pods: vec![running("a").index("0")],
            succeeded: 2,
            succeeded_indexes: "1,2",
            backoff: none,
            want: Got::Create(2, vec![3, 4]),
        },
        Row {
            name: "indexed: duplicated and invalid indexes are deleted even when not in excess",
            job: indexed_job(4, json!({})),
            pods: vec![
                running("a").index("0"),
                running("b").index("0").ready_since(now_plus(-100)),
                running("c").index("9"),
                running("d"),
            ],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["d", "c", "a"]),
        },
        Row {
            name: "indexed: lowering completions deletes the pods above it",
            job: indexed_job(2, json!({})),
            pods: vec![
                running("a").index("0"),
                running("b").index("1"),
                running("c").index("2"),
            ],
            succeeded: 0,
            succeeded_indexes: "",
            backoff: none,
            want: del(&["c"]),
        },
        Row {
            name: "indexed: a terminating pod's index is recreated under TerminatingOrFailed",
            job: indexed_job(3, json!({})),
            pods: vec![running("t").index("2").deletion_timestamp()],
            succeeded: 2,
            succeeded_indexes: "0,1",
            backoff: none,
            want: Got::Create(1, vec![2]),
        },
        Row {
            name: "indexed: a terminating pod's index waits under podReplacementPolicy Failed",
            job: indexed_job(3, json!({"spec": {"podReplacementPolicy": "Failed"}})),
            pods: vec![running("t").index("2").deletion_timestamp()],
            succeeded: 2,
            succeeded_indexes: "0,1",
            backoff: none,
            want: Got::Nothing,
        },
        Row {
            name: "indexed: a stale succeeded count with every index done creates nothing",
            job: indexed_job(3, json!({})),
            pods: vec![],
            succeeded: 0,
            succeeded_indexes: "0-2",
            backoff: none,
            want: Got::Create(0, vec![]),
        },
    ];
    for row in rows {
        run_row(row);
    }
}

#[test]
fn per_index_backoff_table() {
    let job = indexed_job(3, json!({"spec": {"backoffLimitPerIndex": 3}}));
    let view = JobView::new(&job);
    let recent = pod()
        .uid("r")
        .phase("Failed")
        .index("0")
        .index_failure_count("1")
        .deleted_at(now_plus(-5))
        .tracking_finalizer()
        .build();
    let old = pod()
        .uid("o")
        .phase("Failed")
        .index("1")
        .index_failure_count("0")
        .deleted_at(now_plus(-30))
        .tracking_finalizer()
        .build();
    let rows: [(&str, BTreeMap<i64, &CachedPod>, Got); 3] = [
        (
            "no failed pod: every index",
            BTreeMap::new(),
            Got::Create(3, vec![0, 1, 2]),
        ),
        (
            "indexes still backing off are left for later",
            [(0, &recent), (1, &old)].into(),
            Got::Create(2, vec![1, 2]),
        ),
        (
            "an index without a failed pod is ready at once",
            [(0, &recent)].into(),
            Got::Create(2, vec![1, 2]),
        ),
    ];
    for (name, delayed, want) in rows {
        let empty = OrderedIntervals::default();
        let plan = plan_manage(&ManageInput {
            job: view,
            pods: &[],
            active_pods: &[],
            succeeded: 0,
            terminating: 0,
            succeeded_indexes: &empty,
            failed_indexes: None,
            pods_with_delayed_deletion_per_index: &delayed,
            // The global backoff is not used with backoffLimitPerIndex.
            backoff: BackoffRecord {
                failures_after_last_success: 5,
                last_failure_time: Some(now()),
            },
            now: now(),
        });
        assert_eq!(got(plan), want, "{name}");
    }
    // Only index 0 is pending and it is backing off.
    let running_pods = build(vec![
        pod().uid("a").phase("Running").index("1"),
        pod().uid("b").phase("Running").index("2"),
    ]);
    let all = refs(&running_pods);
    let empty = OrderedIntervals::default();
    let delayed: BTreeMap<i64, &CachedPod> = [(0, &recent)].into();
    let plan = plan_manage(&ManageInput {
        job: view,
        pods: &all,
        active_pods: &all,
        succeeded: 0,
        terminating: 0,
        succeeded_indexes: &empty,
        failed_indexes: None,
        pods_with_delayed_deletion_per_index: &delayed,
        backoff: BackoffRecord::default(),
        now: now(),
    });
    assert_eq!(got(plan), Got::Wait(15), "2 failures: 20 s, 5 s ago");
}

#[test]
fn failed_indexes_are_not_recreated() {
    let job = indexed_job(4, json!({"spec": {"backoffLimitPerIndex": 0}}));
    let failed = OrderedIntervals::parse("0,2", 4);
    let empty = OrderedIntervals::default();
    let delayed = BTreeMap::new();
    let plan = plan_manage(&ManageInput {
        job: JobView::new(&job),
        pods: &[],
        active_pods: &[],
        succeeded: 0,
        terminating: 0,
        succeeded_indexes: &empty,
        failed_indexes: Some(&failed),
        pods_with_delayed_deletion_per_index: &delayed,
        backoff: BackoffRecord::default(),
        now: now(),
    });
    assert_eq!(got(plan), Got::Create(2, vec![1, 3]));
}

#[test]
fn want_active_table() {
    // (name, completions, parallelism, active, succeeded, want)
    type Row = (&'static str, Option<i32>, i32, i32, i32, i32);
    let rows: [Row; 7] = [
        ("WQ before a success", None, 3, 1, 0, 3),
        ("WQ after a success keeps the active pods", None, 3, 1, 1, 1),
        ("remaining completions", Some(5), 3, 0, 4, 1),
        ("parallelism caps", Some(5), 3, 0, 0, 3),
        ("never negative", Some(5), 3, 0, 9, 0),
        ("zero parallelism", Some(5), 0, 0, 0, 0),
        (
            "wrapping subtraction as Go's int32",
            Some(i32::MAX),
            3,
            0,
            -1,
            0,
        ),
    ];
    for (name, completions, parallelism, active, succeeded, want) in rows {
        let job = job(json!({"spec": {"completions": completions, "parallelism": parallelism}}));
        assert_eq!(
            want_active(&JobView::new(&job), active, succeeded),
            want,
            "{name}"
        );
    }
}

#[test]
fn removal_order_follows_active_pods() {
    let job = job(json!({}));
    let pods = build(vec![
        pod()
            .uid("ready-old")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-100)),
        pod()
            .uid("ready-new")
            .phase("Running")
            .node("n")
            .ready_since(now_plus(-10)),
        pod().uid("running").phase("Running").node("n"),
        pod().uid("pending").phase("Pending").node("n"),
        pod().uid("unscheduled").phase("Pending"),
    ]);
    let all = refs(&pods);
    let rows: [(&str, usize, &[&str]); 4] = [
        ("none", 0, &[]),
        ("the cheapest", 1, &["unscheduled"]),
        (
            "all, cheapest first",
            5,
            &[
                "unscheduled",
                "pending",
                "running",
                "ready-new",
                "ready-old",
            ],
        ),
        (
            "more than there are",
            9,
            &[
                "unscheduled",
                "pending",
                "running",
                "ready-new",
                "ready-old",
            ],
        ),
    ];
    for (name, at_least, want) in rows {
        assert_eq!(
            uids(&active_pods_for_removal(
                &JobView::new(&job),
                &all,
                at_least
            )),
            want,
            "{name}"
        );
    }
}

#[test]
fn pods_creation_reason_table() {
    let rows = [
        ("first pods", None, 0, 0, "new"),
        (
            "failed pods replaced",
            None,
            1,
            0,
            "recreate_terminating_or_failed",
        ),
        (
            "terminating pods replaced",
            None,
            0,
            2,
            "recreate_terminating_or_failed",
        ),
        (
            "Failed policy with failures",
            Some("Failed"),
            1,
            0,
            "recreate_failed",
        ),
        (
            "Failed policy with terminating pods only",
            Some("Failed"),
            0,
            1,
            "recreate_terminating_or_failed",
        ),
        ("negative counts are not failures", None, -1, -1, "new"),
    ];
    for (name, policy, failed, terminating, want) in rows {
        let job = job(json!({"spec": {"podReplacementPolicy": policy}}));
        assert_eq!(
            pods_creation_reason(&JobView::new(&job), failed, terminating),
            want,
            "{name}"
        );
    }
}

#[test]
fn pod_templates() {
    let job = indexed_job(
        3,
        json!({"metadata": {"name": "work"}, "spec": {"backoffLimitPerIndex": 2,
            "podFailurePolicy": {"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
            "template": {"metadata": {"finalizers": ["user/keep"]},
                "spec": {"hostname": "mine", "subdomain": "svc"}}}}),
    );
    let view = JobView::new(&job);
    let base = pod_template(&view);
    let value = serde_json::to_value(&base).unwrap_or_default();
    assert_eq!(
        value["metadata"]["finalizers"],
        json!(["user/keep", "batch.kubernetes.io/job-tracking"])
    );
    assert_eq!(
        value["spec"]["containers"][0]["env"][0]["name"],
        "JOB_COMPLETION_INDEX"
    );
    assert_eq!(pod_template(&view), pod_template(&view), "deterministic");

    let evicted = pod()
        .phase("Failed")
        .index("1")
        .index_failure_count("1")
        .condition("DisruptionTarget", "True")
        .build();
    let pod = indexed_pod(&base, &view, 1, Some(&evicted));
    assert_eq!(pod.generate_name, "work-1-");
    let value = serde_json::to_value(&pod.template).unwrap_or_default();
    assert_eq!(
        value["spec"]["hostname"], "work-1",
        "the hostname overrides the template's"
    );
    assert_eq!(
        value["spec"]["subdomain"], "svc",
        "the subdomain is the user's"
    );
    let annotations = &value["metadata"]["annotations"];
    assert_eq!(annotations["batch.kubernetes.io/job-completion-index"], "1");
    assert_eq!(
        annotations["batch.kubernetes.io/job-index-failure-count"],
        "1"
    );
    assert_eq!(
        annotations["batch.kubernetes.io/job-index-ignored-failure-count"],
        "1"
    );
    assert_eq!(
        value["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
        "1"
    );

    // A NonIndexed template gets the finalizer once and no variable.
    let plain = super::job(json!({"spec": {"template": {"metadata":
        {"finalizers": ["batch.kubernetes.io/job-tracking"]}}}}));
    let value = serde_json::to_value(pod_template(&JobView::new(&plain))).unwrap_or_default();
    assert_eq!(
        value["metadata"]["finalizers"],
        json!(["batch.kubernetes.io/job-tracking"])
    );
    assert!(value["spec"]["containers"][0].get("env").is_none());
    // A Job without spec gets an empty template with the finalizer.
    let bare: k8s_openapi::api::batch::v1::Job = Default::default();
    let value = serde_json::to_value(pod_template(&JobView::new(&bare))).unwrap_or_default();
    assert_eq!(
        value["metadata"]["finalizers"],
        json!(["batch.kubernetes.io/job-tracking"])
    );
}
