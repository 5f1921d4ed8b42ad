//! The CronJob controller against the sim on a fast clock (60 times the wall clock, so a
//! minute passes in a second): runs start on their minute, named and annotated as upstream
//! names them, each requeued for exactly the next; the concurrency policies, suspend, the
//! history limits, a missed-start flood and an unparseable schedule behave as upstream's.

mod support;

use std::sync::Arc;

use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    jiff::{SignedDuration, Timestamp},
};
use kube::ResourceExt;
use serde_json::json;
use sim::testing::quiet_config;
use support::{FastClock, Harness, WAIT, just_before_a_minute};

/// A clock at 60 times the wall clock, just before a minute.
fn fast_clock() -> Arc<FastClock> {
    Arc::new(FastClock::new(just_before_a_minute(), 60))
}

fn scheduled_minutes(jobs: &[Job], cronjob: &str) -> Vec<i64> {
    jobs.iter()
        .map(|job| {
            job.name_any()
                .strip_prefix(&format!("{cronjob}-"))
                .and_then(|minutes| minutes.parse().ok())
                .unwrap_or_else(|| panic!("a run's name: {}", job.name_any()))
        })
        .collect()
}

fn active_names(cronjob: &CronJob) -> Vec<String> {
    cronjob
        .status
        .iter()
        .flat_map(|status| status.active.iter().flatten())
        .filter_map(|reference| reference.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_minute_for_five_minutes_starts_five_runs_one_a_minute() {
    let clock = fast_clock();
    let harness = Harness::start_with_clock(quiet_config(), clock).await;
    harness
        .create_cronjob(
            "tick",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 10}),
        )
        .await;
    let jobs = harness.wait_for_jobs("tick", 5).await;

    // One run a minute, named after its minute since the epoch, nothing skipped or doubled.
    let minutes = scheduled_minutes(&jobs, "tick");
    for pair in minutes.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{minutes:?}");
    }
    let first = &jobs[0];
    let scheduled = Timestamp::from_second(minutes[0] * 60).expect("in range");
    assert_eq!(
        first
            .annotations()
            .get("batch.kubernetes.io/cronjob-scheduled-timestamp"),
        Some(&scheduled.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
    );
    assert_eq!(
        first.annotations().get("team").map(String::as_str),
        Some("batch")
    );
    assert_eq!(first.labels().get("app").map(String::as_str), Some("tick"));
    let owner = &first.owner_references()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("CronJob", "tick", Some(true), Some(true))
    );

    // Allow: every run is active (no Job controller finishes them); the last is the last
    // scheduled.
    let cronjob: CronJob = sim::testing::eventually("five active runs", WAIT, || async {
        let cronjob = harness.cronjob("tick").await;
        (active_names(&cronjob).len() >= 5).then_some(cronjob)
    })
    .await;
    // The status write that lists a run also records it as the last scheduled.
    let latest_run = active_names(&cronjob)
        .iter()
        .filter_map(|name| name.strip_prefix("tick-")?.parse::<i64>().ok())
        .max()
        .expect("active runs");
    let last = cronjob
        .status
        .expect("status")
        .last_schedule_time
        .expect("lastScheduleTime")
        .0;
    assert_eq!(last.as_second(), latest_run * 60);
    let created = harness.events_with_reason("tick", "SuccessfulCreate").await;
    assert!(
        created.len() >= 5,
        "{} SuccessfulCreate events",
        created.len()
    );
    let message = created[0].message.clone().unwrap_or_default();
    assert!(message.starts_with("Created job tick-"), "{message}");
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbid_skips_a_run_while_one_is_active_and_starts_once_it_finished() {
    let harness = Harness::start_with_clock(quiet_config(), fast_clock()).await;
    harness
        .create_cronjob(
            "single",
            "* * * * *",
            json!({"concurrencyPolicy": "Forbid"}),
        )
        .await;
    let jobs = harness.wait_for_jobs("single", 1).await;
    let message = harness
        .wait_for_event_reason("single", "JobAlreadyActive")
        .await;
    assert_eq!(
        message,
        "Not starting job because prior execution is running and concurrency policy is Forbid"
    );
    assert_eq!(
        harness.jobs_of("single").await.len(),
        1,
        "a second run while one is active"
    );

    harness
        .finish_job(&jobs[0].name_any(), "Complete", Timestamp::now())
        .await;
    harness.wait_for_jobs("single", 2).await;
    let completed = harness
        .wait_for_event_reason("single", "SawCompletedJob")
        .await;
    assert_eq!(
        completed,
        format!(
            "Saw completed job: {}, condition: Complete",
            jobs[0].name_any()
        )
    );
    let cronjob = harness.cronjob("single").await;
    let status = cronjob.status.expect("status");
    assert!(status.last_successful_time.is_some());
    assert_eq!(active_names(&harness.cronjob("single").await).len(), 1);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_deletes_the_active_run_before_starting_the_next() {
    let harness = Harness::start_with_clock(quiet_config(), fast_clock()).await;
    harness
        .create_cronjob(
            "latest",
            "* * * * *",
            json!({"concurrencyPolicy": "Replace"}),
        )
        .await;
    let first = harness.wait_for_jobs("latest", 1).await.remove(0);
    let deleted = harness
        .wait_for_event_reason("latest", "SuccessfulDelete")
        .await;
    assert_eq!(deleted, format!("Deleted job {}", first.name_any()));
    let cronjob: CronJob = sim::testing::eventually("one newer active run", WAIT, || async {
        let cronjob = harness.cronjob("latest").await;
        let active = active_names(&cronjob);
        (active.len() == 1 && active[0] != first.name_any()).then_some(cronjob)
    })
    .await;
    assert_eq!(active_names(&cronjob).len(), 1);
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_cronjob_starts_nothing_and_the_history_limits_remove_the_oldest() {
    let harness = Harness::start_with_clock(quiet_config(), fast_clock()).await;
    harness
        .create_cronjob("paused", "* * * * *", json!({"suspend": true}))
        .await;
    harness
        .create_cronjob(
            "kept",
            "* * * * *",
            json!({"successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1}),
        )
        .await;
    let jobs = harness.wait_for_jobs("kept", 4).await;
    harness
        .finish_job(&jobs[0].name_any(), "Complete", Timestamp::now())
        .await;
    harness
        .finish_job(&jobs[1].name_any(), "Complete", Timestamp::now())
        .await;
    harness
        .finish_job(&jobs[2].name_any(), "Complete", Timestamp::now())
        .await;
    // The oldest of the three succeeded runs goes; the next two are kept.
    sim::testing::eventually("the oldest succeeded run removed", WAIT, || async {
        let names: Vec<String> = harness
            .jobs_of("kept")
            .await
            .iter()
            .map(|job| job.name_any())
            .collect();
        (!names.contains(&jobs[0].name_any())).then_some(())
    })
    .await;
    let names: Vec<String> = harness
        .jobs_of("kept")
        .await
        .iter()
        .map(|job| job.name_any())
        .collect();
    assert!(
        names.contains(&jobs[1].name_any()) && names.contains(&jobs[2].name_any()),
        "{names:?}"
    );
    assert!(
        harness.jobs_of("paused").await.is_empty(),
        "a suspended CronJob ran"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_a_hundred_missed_starts_warn_and_start_only_the_most_recent() {
    // The clock reads three hours after the CronJob's creation: 180 minutes were missed.
    let late = just_before_a_minute()
        .saturating_add(SignedDuration::from_hours(3))
        .expect("in range");
    let harness =
        Harness::start_with_clock(quiet_config(), Arc::new(FastClock::new(late, 1))).await;
    harness
        .create_cronjob("behind", "* * * * *", json!({}))
        .await;
    let message = harness
        .wait_for_event_reason("behind", "TooManyMissedTimes")
        .await;
    assert_eq!(
        message,
        "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
    );
    let jobs = harness.wait_for_jobs("behind", 1).await;
    let minute = scheduled_minutes(&jobs, "behind")[0];
    assert_eq!(
        minute,
        late.as_second().div_euclid(60),
        "the most recent slot only"
    );
    harness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unparseable_schedule_is_warned_about_and_starts_nothing() {
    // The API server does not parse the cron grammar (kube-apiserver does; a CronJob stored
    // before a stricter parser has the same fate): the controller warns instead.
    let harness = Harness::start_with_clock(quiet_config(), fast_clock()).await;
    harness
        .create_cronjob("nonsense", "obvious error schedule", json!({}))
        .await;
    let unparseable = harness
        .wait_for_event_reason("nonsense", "UnparseableSchedule")
        .await;
    assert_eq!(
        unparseable,
        "unparseable schedule: \"obvious error schedule\" : expected exactly 5 fields, found 3: \
         [obvious error schedule]"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(harness.jobs_of("nonsense").await.is_empty());
    harness.stop().await;
}
