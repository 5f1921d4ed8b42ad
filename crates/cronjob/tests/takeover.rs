//! Taking CronJobs over from upstream's controller: CronJobs and Jobs written as upstream's
//! `cronjob-controller` writes them (runs named `<cronjob>-<minutes since 1970>`, the
//! scheduled-timestamp annotation, a blocking controller reference, `status.active` and
//! `lastScheduleTime`) are taken over by kcm-rs's controller with no run missed or started
//! twice, and the history limits hold; a run whose Job upstream created but whose status it
//! never wrote (a crash between the two) is recognized, not started again.

mod support;

use std::sync::Arc;

use k8s_openapi::{
    api::{
        batch::v1::{CronJob, Job},
        core::v1::ObjectReference,
    },
    jiff::Timestamp,
};
use kube::{
    ResourceExt,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;
use sim::testing::{eventually, quiet_config};
use support::{CONTROLLER_AGENT, FastClock, Harness, WAIT, just_before_a_minute};

/// The Job upstream creates for the run of `cronjob` at `minute` (minutes since 1970).
fn upstream_run(cronjob: &CronJob, minute: i64) -> Job {
    let name = cronjob.name_any();
    let scheduled = Timestamp::from_second(minute * 60).expect("in range");
    serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": format!("{name}-{minute}"),
            "labels": {"app": name},
            "annotations": {
                "batch.kubernetes.io/cronjob-scheduled-timestamp": scheduled.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            },
            "ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "name": name,
                "uid": cronjob.metadata.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 0"]}]
                }
            }
        }
    }))
    .expect("valid Job")
}

/// What upstream's status write records for `runs` active and `last` scheduled.
async fn write_upstream_status(harness: &Harness, name: &str, runs: &[&Job], last: i64) {
    let active: Vec<ObjectReference> = runs
        .iter()
        .map(|job| ObjectReference {
            api_version: Some("batch/v1".into()),
            kind: Some("Job".into()),
            namespace: job.namespace(),
            name: Some(job.name_any()),
            uid: job.metadata.uid.clone(),
            resource_version: job.metadata.resource_version.clone(),
            ..ObjectReference::default()
        })
        .collect();
    let last = Timestamp::from_second(last * 60).expect("in range");
    harness
        .api::<CronJob>()
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"active": active, "lastScheduleTime": last.to_string()}}),
            ),
        )
        .await
        .expect("upstream's status");
}

fn minute_of(job: &Job, cronjob: &str) -> i64 {
    job.name_any()
        .strip_prefix(&format!("{cronjob}-"))
        .and_then(|minute| minute.parse().ok())
        .unwrap_or_else(|| panic!("a run's name: {}", job.name_any()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_continue_from_upstreams_last_with_none_missed_or_doubled_and_the_history_kept() {
    // The clock starts just before minute `next`; upstream ran the three minutes before it.
    let origin = just_before_a_minute();
    let next = origin.as_second().div_euclid(60) + 1;
    let mut harness = Harness::without_controller(quiet_config()).await;
    let cronjob = harness
        .create_cronjob(
            "nightly",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 1}),
        )
        .await;
    let jobs = harness.api::<Job>();
    let mut upstream = Vec::new();
    for minute in [next - 3, next - 2, next - 1] {
        let job = jobs
            .create(&PostParams::default(), &upstream_run(&cronjob, minute))
            .await
            .expect("upstream's run");
        upstream.push(job);
    }
    // The two older runs succeeded; the last is still running, listed as active.
    harness
        .finish_job(&upstream[0].name_any(), "Complete", Timestamp::now())
        .await;
    harness
        .finish_job(&upstream[1].name_any(), "Complete", Timestamp::now())
        .await;
    write_upstream_status(&harness, "nightly", &[&upstream[2]], next - 1).await;

    harness.start_controller(Arc::new(FastClock::new(origin, 60)));
    // Three more minutes: runs next, next+1, next+2, each once.
    let runs: Vec<Job> = eventually("three runs after upstream's", WAIT, || async {
        let runs: Vec<Job> = harness
            .jobs_of("nightly")
            .await
            .into_iter()
            .filter(|job| minute_of(job, "nightly") >= next)
            .collect();
        (runs.len() >= 3).then_some(runs)
    })
    .await;
    let minutes: Vec<i64> = runs.iter().map(|job| minute_of(job, "nightly")).collect();
    assert_eq!(&minutes[..3], &[next, next + 1, next + 2], "{minutes:?}");
    assert_eq!(
        harness.requests_by(CONTROLLER_AGENT, "create", "jobs") as usize,
        runs.len(),
        "a create per run, none for upstream's"
    );
    // History: of upstream's two succeeded runs, the older is removed; the running one stays.
    eventually("the older succeeded run removed", WAIT, || async {
        let names: Vec<String> = harness
            .jobs_of("nightly")
            .await
            .iter()
            .map(|job| job.name_any())
            .collect();
        (!names.contains(&upstream[0].name_any())).then_some(names)
    })
    .await;
    let names: Vec<String> = harness
        .jobs_of("nightly")
        .await
        .iter()
        .map(|job| job.name_any())
        .collect();
    assert!(names.contains(&upstream[1].name_any()), "{names:?}");
    let status = harness.cronjob("nightly").await.status.expect("status");
    let active: Vec<String> = status
        .active
        .iter()
        .flatten()
        .filter_map(|r| r.name.clone())
        .collect();
    assert!(
        active.contains(&upstream[2].name_any()),
        "upstream's running run stays active: {active:?}"
    );
    assert!(
        status.last_successful_time.is_some(),
        "upstream's successes are seen"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_upstream_created_but_never_recorded_is_recognized_not_started_again() {
    // Upstream created the run of minute `due` and stopped before writing the status: the
    // CronJob still says its last run was the minute before. The clock reads the middle of
    // minute `due` and runs at the wall clock's pace: `due` is the only unmet run.
    let due = Timestamp::now().as_second().div_euclid(60);
    let origin = Timestamp::from_second(due * 60 + 30).expect("in range");
    let mut harness = Harness::without_controller(quiet_config()).await;
    let cronjob = harness
        .create_cronjob("crashed", "* * * * *", json!({}))
        .await;
    let orphaned = harness
        .api::<Job>()
        .create(&PostParams::default(), &upstream_run(&cronjob, due))
        .await
        .expect("upstream's run");
    write_upstream_status(&harness, "crashed", &[], due - 1).await;

    harness.start_controller(Arc::new(FastClock::new(origin, 1)));
    let cronjob: CronJob = eventually("the run recorded as active", WAIT, || async {
        let cronjob = harness.cronjob("crashed").await;
        let listed = cronjob
            .status
            .iter()
            .flat_map(|status| status.active.iter().flatten())
            .any(|reference| reference.uid == orphaned.metadata.uid);
        listed.then_some(cronjob)
    })
    .await;
    let last = cronjob
        .status
        .expect("status")
        .last_schedule_time
        .expect("lastScheduleTime")
        .0;
    assert_eq!(last.as_second(), due * 60);
    let runs = harness.jobs_of("crashed").await;
    assert_eq!(
        runs.len(),
        1,
        "started again: {:?}",
        runs.iter().map(|job| job.name_any()).collect::<Vec<_>>()
    );
    assert_eq!(runs[0].metadata.uid, orphaned.metadata.uid);
    harness.stop().await;
}
