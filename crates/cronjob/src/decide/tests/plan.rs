//! The plan of a sync (`syncCronJob` steps 3 to 12) against rows of upstream's
//! `TestControllerV2SyncCronJob`: what it records and whether it starts, waits or stops.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::decide::plan::{Outcome, plan};

/// Upstream's hourly CronJob, created at 09:59 (`justBeforeTheHour`), with `policy`.
fn hourly(policy: &str) -> CronJob {
    let mut cronjob = cronjob("0 * * * ?", Some(at(0, -1, 0)), None, None);
    cronjob.spec.concurrency_policy = Some(policy.into());
    cronjob
}

fn with(mut cronjob: CronJob, edit: impl FnOnce(&mut CronJob)) -> CronJob {
    edit(&mut cronjob);
    cronjob
}

fn active_run(name: &str) -> ObjectReference {
    ObjectReference {
        name: Some(name.into()),
        namespace: Some("snazzycats".into()),
        uid: Some("1234".into()),
        ..ObjectReference::default()
    }
}

/// A wait of `h`:`m` plus upstream's 100 ms.
fn wait(hours: u64, minutes: u64) -> Outcome {
    Outcome::Wait {
        requeue: Duration::from_secs(hours * 3600 + minutes * 60) + Duration::from_millis(100),
    }
}

fn start(replace_active: bool) -> Outcome {
    Outcome::Start {
        scheduled: top_of_the_hour(),
        job_name: "mycronjob-24394200".into(),
        replace_active,
    }
}

#[test]
#[rustfmt::skip]
fn plan_table() {
    let cases: Vec<(&str, CronJob, Timestamp, Outcome, &[&str])> = vec![
        ("never ran, not valid schedule",         with(hourly("Allow"), |c| c.spec.schedule = "obvious error schedule".into()), at(0, -1, 0), Outcome::Idle, &["UnparseableSchedule"]),
        ("never ran, not valid time zone",        with(hourly("Allow"), |c| c.spec.time_zone = Some("bad timezone".into())),   at(0, 1, 0), Outcome::Idle, &["UnknownTimeZone"]),
        ("never ran, not time",                   hourly("Allow"),                                                               at(0, -1, 0), wait(0, 1), &[]),
        ("never ran, is time, Allow",             hourly("Allow"),                                                               at(0, 1, 0), start(false), &[]),
        ("never ran, is time, Forbid",            hourly("Forbid"),                                                              at(0, 1, 0), start(false), &[]),
        ("never ran, is time, Replace",           hourly("Replace"),                                                             at(0, 1, 0), start(true), &[]),
        ("is time in zone, but TZ in schedule",   with(hourly("Allow"), |c| { c.spec.schedule = "TZ=UTC 0 * * * ?".into(); c.spec.time_zone = Some("America/New_York".into()); }), at(0, 1, 0), start(false), &["UnsupportedSchedule"]),
        ("never ran, is time, suspended",         with(hourly("Allow"), |c| c.spec.suspend = Some(true)),                        at(0, 1, 0), Outcome::Idle, &[]),
        ("being deleted",                         with(hourly("Allow"), |c| c.metadata.deletion_timestamp = Some(Time(top_of_the_hour()))), at(0, 1, 0), Outcome::Idle, &[]),
        ("never ran, is time, past deadline",     with(hourly("Allow"), |c| c.spec.starting_deadline_seconds = Some(10)),        at(0, 12, 0), wait(0, 48), &[]),
        ("still active, is time, Forbid",         with(hourly("Forbid"), |c| c.status.get_or_insert_default().active = Some(vec![active_run("mycronjob-24394140")])), at(0, 1, 0), wait(0, 59), &["JobAlreadyActive"]),
        ("still active, is time, Allow",          with(hourly("Allow"), |c| c.status.get_or_insert_default().active = Some(vec![active_run("mycronjob-24394140")])), at(0, 1, 0), start(false), &[]),
        ("its run's Job is already active",       with(hourly("Forbid"), |c| c.status.get_or_insert_default().active = Some(vec![active_run("mycronjob-24394200")])), at(0, 1, 0), wait(0, 59), &[]),
        ("its run is the last scheduled",         with(hourly("Allow"), |c| c.status.get_or_insert_default().last_schedule_time = Some(Time(top_of_the_hour()))), at(0, 1, 0), wait(0, 59), &[]),
        ("long overdue: warned, the latest run",  with(hourly("Allow"), |c| c.metadata.creation_timestamp = Some(Time(at(-200, 0, 0)))), at(0, 1, 0), start(false), &["TooManyMissedTimes"]),
    ];
    for (name, cronjob, now, want, reasons) in cases {
        let planned = plan(&cronjob, &now.to_zoned(TimeZone::UTC));
        assert_eq!(planned.outcome, want, "{name}");
        let got: Vec<&str> = planned.events.iter().map(|event| event.reason).collect();
        assert_eq!(got, reasons, "{name}");
    }
}

#[test]
fn event_messages_are_upstreams() {
    let now = at(0, 1, 0).to_zoned(TimeZone::UTC);
    let forbid = with(hourly("Forbid"), |c| {
        c.status.get_or_insert_default().active = Some(vec![active_run("mycronjob-24394140")]);
    });
    assert_eq!(
        plan(&forbid, &now).events[0].message,
        "Not starting job because prior execution is running and concurrency policy is Forbid"
    );
    let zone = with(hourly("Allow"), |c| {
        c.spec.time_zone = Some("bad timezone".into())
    });
    assert_eq!(
        plan(&zone, &now).events[0].message,
        "invalid timeZone: \"bad timezone\": unknown time zone bad timezone"
    );
    let unparseable = with(hourly("Allow"), |c| {
        c.spec.schedule = "obvious error schedule".into()
    });
    assert_eq!(
        plan(&unparseable, &now).events[0].message,
        "unparseable schedule: \"obvious error schedule\" : expected exactly 5 fields, found 3: [obvious error schedule]"
    );
}
