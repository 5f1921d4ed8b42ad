//! `times.rs`: upstream's `TestMostRecentScheduleTime`, `TestNextScheduleTime`,
//! `TestNextScheduleTimeDuration` and `TestGetJobFromTemplate2` (name and annotation), then
//! the schedule side of `TestControllerV2SyncCronJob` and `TestControllerV2UpdateCronJob`
//! (which slot a sync starts, whether it warns, and the requeue), and kcm-rs rows.

use jiff::{SignedDuration, Timestamp};

use super::{at, cronjob, cronjob_in, duration, top_of_the_hour, ts, zoned};
use crate::decide::schedule::{TimeZoneError, parse_schedule};
use crate::decide::times::{
    MissedSchedules, MostRecentSchedule, NEXT_SCHEDULE_DELTA, ScheduleError, UnmetSchedule,
    job_name, most_recent_schedule_time, next_schedule_time, next_schedule_time_duration,
    scheduled_timestamp_annotation,
};

use MissedSchedules::{Few, Many, None as NoneMissed};

/// `d` plus [`NEXT_SCHEDULE_DELTA`].
fn requeue(d: SignedDuration) -> SignedDuration {
    d + NEXT_SCHEDULE_DELTA
}

/// One row of `TestMostRecentScheduleTime`.
struct MostRecentRow {
    name: &'static str,
    schedule: &'static str,
    created: Timestamp,
    last: Option<Timestamp>,
    deadline: Option<i64>,
    include_sds: bool,
    now: Timestamp,
    want: Result<(Timestamp, Option<Timestamp>, MissedSchedules), ScheduleError>,
}

/// Upstream's `TestMostRecentScheduleTime`, every row: (earliest time, most recent time,
/// missed), or the error.
#[test]
#[rustfmt::skip]
fn most_recent_schedule_time_table() {
    let top = top_of_the_hour();
    let half_past = at(0, 30, 0);
    let rows = [
        MostRecentRow { name: "now before next schedule",                                                 schedule: "0 * * * *",           created: top,           last: None,               deadline: None,     include_sds: false, now: at(0, 0, 30),    want: Ok((top, None, NoneMissed)) },
        MostRecentRow { name: "now just after next schedule",                                             schedule: "0 * * * *",           created: top,           last: None,               deadline: None,     include_sds: false, now: at(0, 61, 0),    want: Ok((top, Some(at(0, 60, 0)), NoneMissed)) },
        MostRecentRow { name: "missed 5 schedules",                                                       schedule: "0 * * * *",           created: at(0, 0, 10),  last: None,               deadline: None,     include_sds: false, now: at(0, 301, 0),   want: Ok((at(0, 0, 10), Some(at(0, 300, 0)), Few)) },
        MostRecentRow { name: "complex schedule",                                                         schedule: "30 6-16/4 * * 1-5",   created: top,           last: Some(half_past),    deadline: None,     include_sds: false, now: at(24, 31, 0),   want: Ok((half_past, Some(at(24, 30, 0)), Few)) },
        MostRecentRow { name: "another complex schedule",                                                 schedule: "30 10,11,12 * * 1-5", created: top,           last: Some(half_past),    deadline: None,     include_sds: false, now: at(30, 30, 0),   want: Ok((half_past, None, Few)) },
        MostRecentRow { name: "complex schedule with longer diff between executions",                     schedule: "30 6-16/4 * * 1-5",   created: top,           last: Some(half_past),    deadline: None,     include_sds: false, now: at(96, 31, 0),   want: Ok((half_past, Some(at(96, 30, 0)), Few)) },
        MostRecentRow { name: "complex schedule with shorter diff between executions",                    schedule: "30 6-16/4 * * 1-5",   created: top,           last: None,               deadline: None,     include_sds: false, now: at(24, 31, 0),   want: Ok((top, Some(at(24, 30, 0)), Few)) },
        MostRecentRow { name: "@every schedule",                                                          schedule: "@every 1h",           created: at(0, -59, 0), last: Some(at(0, 1, 0)),  deadline: Some(10), include_sds: false, now: at(7 * 24, 0, 0), want: Ok((at(0, 1, 0), Some(at(6 * 24 + 23, 1, 0)), Many)) },
        MostRecentRow { name: "rogue cronjob",                                                            schedule: "59 23 31 2 *",        created: at(0, 0, 10),  last: None,               deadline: None,     include_sds: false, now: at(1, 0, 0),     want: Err(ScheduleError::IntervalUnderOneSecond) },
        MostRecentRow { name: "earliestTime being CreationTimestamp and LastScheduleTime",                schedule: "0 * * * *",           created: top,           last: Some(top),          deadline: None,     include_sds: false, now: at(0, 0, 30),    want: Ok((top, None, NoneMissed)) },
        MostRecentRow { name: "earliestTime being LastScheduleTime",                                      schedule: "*/5 * * * *",         created: top,           last: Some(half_past),    deadline: None,     include_sds: false, now: at(0, 31, 0),    want: Ok((half_past, None, NoneMissed)) },
        MostRecentRow { name: "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)",     schedule: "*/5 * * * *",         created: top,           last: Some(half_past),    deadline: Some(60), include_sds: false, now: at(0, 31, 0),    want: Ok((half_past, None, NoneMissed)) },
        MostRecentRow { name: "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)",    schedule: "*/5 * * * *",         created: top,           last: Some(half_past),    deadline: Some(60), include_sds: true,  now: at(0, 32, 0),    want: Ok((at(0, 31, 0), None, NoneMissed)) },
        // kcm-rs rows.
        MostRecentRow { name: "a deadline before the earliest time is ignored",                           schedule: "0 * * * *",           created: top,           last: Some(at(0, 30, 0)), deadline: Some(7200), include_sds: true, now: at(1, 1, 0),   want: Ok((at(0, 30, 0), Some(at(1, 0, 0)), NoneMissed)) },
        MostRecentRow { name: "now exactly on a slot: that slot is due",                                  schedule: "0 * * * *",           created: top,           last: None,               deadline: None,     include_sds: false, now: at(1, 0, 0),     want: Ok((top, Some(at(1, 0, 0)), NoneMissed)) },
        MostRecentRow { name: "101 missed slots are many",                                                schedule: "0 * * * *",           created: top,           last: None,               deadline: None,     include_sds: false, now: at(101, 0, 0),   want: Ok((top, Some(at(101, 0, 0)), Many)) },
        MostRecentRow { name: "100 missed slots are few",                                                 schedule: "0 * * * *",           created: top,           last: None,               deadline: None,     include_sds: false, now: at(100, 59, 0),  want: Ok((top, Some(at(100, 0, 0)), Few)) },
        MostRecentRow { name: "the time zone of the schedule",                                            schedule: "TZ=Europe/Rome 0 12 * * *", created: top,     last: None,               deadline: None,     include_sds: false, now: at(24, 30, 0),   want: Ok((top, Some(at(24, 0, 0)), NoneMissed)) },
    ];
    for row in rows {
        let schedule = parse_schedule(row.schedule).expect(row.name);
        let cronjob = cronjob(row.schedule, Some(row.created), row.last, row.deadline);
        let got = most_recent_schedule_time(&cronjob, &zoned(row.now, "UTC"), &schedule, row.include_sds);
        let want = row.want.map(|(earliest_time, most_recent_time, missed)| MostRecentSchedule { earliest_time, most_recent_time, missed });
        assert_eq!(got, want, "{}", row.name);
    }
}

/// Upstream's `TestNextScheduleTime` (hourly, T1 = 10:00, T2 = 11:00), its cases in order and
/// with the state they inherit from the one before (case 8 keeps case 7's deadline): the slot
/// and whether `TooManyMissedTimes` applies, `None` when nothing is due, or the error.
#[test]
#[rustfmt::skip]
fn next_schedule_time_table() {
    type Row = (&'static str, &'static str, Timestamp, Option<Timestamp>, Option<i64>, Timestamp, Result<Option<(Timestamp, bool)>, ScheduleError>);
    let (t1, t2) = (at(0, 0, 0), at(1, 0, 0));
    let cases: &[Row] = &[
        ("Case 1: no known start times, and none needed yet",                      "0 * * * ?",    at(0, -10, 0), None,              None,       at(0, -7, 0),  Ok(None)),
        ("Case 2: no known start times, and one needed",                           "0 * * * ?",    at(0, -10, 0), None,              None,       at(0, 0, 2),   Ok(Some((t1, false)))),
        ("Case 3: known LastScheduleTime, no start needed",                        "0 * * * ?",    at(0, -10, 0), Some(t1),          None,       at(0, 2, 0),   Ok(None)),
        ("Case 4: known LastScheduleTime, a start needed",                         "0 * * * ?",    at(0, -10, 0), Some(t1),          None,       at(1, 5, 0),   Ok(Some((t2, false)))),
        ("Case 5: known LastScheduleTime, two starts needed",                      "0 * * * ?",    at(-2, 0, 0),  Some(at(-1, 0, 0)), None,      at(1, 5, 0),   Ok(Some((t2, false)))),
        ("Case 6: now is way way ahead of last start time, and there is no deadline", "0 * * * ?", at(-2, 0, 0),  Some(at(-1, 0, 0)), None,      at(241, 0, 0), Ok(Some((at(241, 0, 0), true)))),
        ("Case 7: now is way way ahead of last start time, but there is a short deadline", "0 * * * ?", at(-2, 0, 0), Some(at(-1, 0, 0)), Some(7200), at(241, 0, 0), Ok(Some((at(241, 0, 0), false)))),
        ("Case 8: ensure the error from mostRecentScheduleTime gets populated up", "59 23 31 2 *", at(0, 0, 10),  None,              Some(7200), at(1, 0, 0),   Err(ScheduleError::IntervalUnderOneSecond)),
        // kcm-rs rows.
        ("a slot before the deadline is skipped silently",                         "0 * * * ?",    at(-2, 0, 0),  Some(at(-1, 0, 0)), Some(10),  at(0, 0, 11),  Ok(None)),
        ("a slot within the deadline is started",                                  "0 * * * ?",    at(-2, 0, 0),  Some(at(-1, 0, 0)), Some(10),  at(0, 0, 9),   Ok(Some((t1, false)))),
        ("a slot exactly at the deadline is skipped (Next is strictly after)",     "0 * * * ?",    at(-2, 0, 0),  Some(at(-1, 0, 0)), Some(10),  at(0, 0, 10),  Ok(None)),
    ];
    for (name, schedule, created, last, deadline, now, want) in cases {
        let cronjob = cronjob(schedule, Some(*created), *last, *deadline);
        let parsed = parse_schedule(schedule).expect(name);
        let got = next_schedule_time(&cronjob, &zoned(*now, "UTC"), &parsed);
        let want = want.map(|slot| slot.map(|(scheduled_time, too_many_missed)| UnmetSchedule { scheduled_time, too_many_missed }));
        assert_eq!(got, want, "{name}");
    }
}

/// Upstream's `TestNextScheduleTimeDuration`, then kcm-rs rows: the requeue.
#[test]
#[rustfmt::skip]
fn next_schedule_time_duration_table() {
    type Row = (&'static str, &'static str, Option<Timestamp>, Timestamp, SignedDuration);
    let cases: &[Row] = &[
        ("complex schedule skipping weekend",         "30 6-16/4 * * 1-5",   Some(at(0, 30, 0)), at(24, 31, 0),          requeue(duration(3, 59, 0, 0))),
        ("another complex schedule skipping weekend", "30 10,11,12 * * 1-5", Some(at(0, 30, 0)), at(30, 30, 0),          requeue(duration(66, 0, 0, 0))),
        ("once a week cronjob, missed two runs",      "0 12 * * 4",          Some(at(2, 0, 0)),  at(19 * 24 + 1, 30, 0), requeue(duration(48, 30, 0, 0))),
        ("no previous run of a cronjob",              "0 12 * * 5",          None,               at(6, 0, 0),            requeue(duration(20, 0, 0, 0))),
        // kcm-rs rows.
        ("a fraction of a second of now counts",      "0 * * * *",           Some(at(0, 0, 0)),  ts("2016-05-19T10:30:00.25Z"), requeue(duration(0, 29, 59, 750))),
        ("no slot ever: Go's zero time, saturated",   "59 23 31 2 *",        None,               at(1, 0, 0),            SignedDuration::from_nanos(i64::MIN)),
    ];
    for (name, schedule, last, now, want) in cases {
        let cronjob = cronjob(schedule, Some(top_of_the_hour()), *last, None);
        let parsed = parse_schedule(schedule).expect(name);
        assert_eq!(next_schedule_time_duration(&cronjob, &zoned(*now, "UTC"), &parsed), *want, "{name}");
    }
}

/// The schedule side of upstream's `TestControllerV2SyncCronJob` rows (creation 09:59 when it
/// never ran; 08:59 and last scheduled 09:01 when it ran before): the slot a sync starts and
/// whether it warns `TooManyMissedTimes`, then the requeue it returns, computed with the new
/// `lastScheduleTime` when it creates a Job (step 15), with the old one otherwise.
#[test]
#[rustfmt::skip]
fn sync_cronjob_schedule_table() {
    type Row = (&'static str, &'static str, Timestamp, Option<Timestamp>, Option<i64>, Timestamp, Option<(Timestamp, bool)>, bool, SignedDuration);
    let (never_ran, ran_at, last_ran) = (at(0, -1, 0), at(-1, -1, 0), Some(at(-1, 1, 0)));
    let week_later = ts("2016-05-26T10:00:00Z");
    let cases: &[Row] = &[
        ("never ran, not time",                                   "0 * * * ?", never_ran, None,     None,     at(0, -1, 0),  None,                         false, requeue(duration(0, 1, 0, 0))),
        ("never ran, is time",                                    "0 * * * ?", never_ran, None,     None,     at(0, 1, 0),   Some((at(0, 0, 0), false)),   true,  requeue(duration(0, 59, 0, 0))),
        ("never ran, is time, past deadline",                     "0 * * * ?", never_ran, None,     Some(10), at(0, 12, 0),  None,                         false, requeue(duration(0, 48, 0, 0))),
        ("prev ran but done, not time",                           "0 * * * ?", ran_at,    last_ran, None,     at(0, -1, 0),  None,                         false, requeue(duration(0, 1, 0, 0))),
        ("prev ran but done, is time, past deadline",             "0 * * * ?", ran_at,    last_ran, Some(10), at(0, 1, 0),   None,                         false, requeue(duration(0, 59, 0, 0))),
        ("still active, is time, F (not started)",                "0 * * * ?", ran_at,    last_ran, None,     at(0, 1, 0),   Some((at(0, 0, 0), false)),   false, requeue(duration(0, 59, 0, 0))),
        ("still active, is time, A",                              "0 * * * ?", ran_at,    last_ran, None,     at(0, 1, 0),   Some((at(0, 0, 0), false)),   true,  requeue(duration(0, 59, 0, 0))),
        ("prev ran but done, long overdue, no deadline, A",       "0 * * * ?", ran_at,    last_ran, None,     week_later,    Some((week_later, true)),     true,  requeue(duration(1, 0, 0, 0))),
        ("prev ran but done, long overdue, past short deadline, A", "0 * * * ?", ran_at,  last_ran, Some(10), week_later,    Some((week_later, false)),    true,  requeue(duration(1, 0, 0, 0))),
        ("this started but went missing, not past deadline, A",  "0 * * * ?", ran_at,    last_ran, None,     ts("2016-05-19T10:01:00.1Z"), Some((at(0, 0, 0), false)), false, requeue(duration(0, 58, 59, 900))),
        ("with @every schedule, never ran, is time",              "@every 1h", ran_at,    None,     None,     at(0, -1, 0),  Some((at(0, -1, 0), false)),  true,  requeue(duration(1, 0, 0, 0))),
        ("with @every schedule, prev ran but done, long overdue, no deadline", "@every 1h", at(-1, 1, 0), Some(at(0, 1, 0)), None, week_later, Some((ts("2016-05-26T09:01:00Z"), true)), true, requeue(duration(0, 1, 0, 0))),
    ];
    for (name, schedule, created, last, deadline, now, want_slot, creates, want_requeue) in cases {
        let parsed = parse_schedule(schedule).expect(name);
        let now = zoned(*now, "UTC");
        let mut cronjob = cronjob(schedule, Some(*created), *last, *deadline);
        let slot = next_schedule_time(&cronjob, &now, &parsed).expect(name);
        assert_eq!(slot.map(|slot| (slot.scheduled_time, slot.too_many_missed)), *want_slot, "{name}");
        if *creates && let (Some(slot), Some(status)) = (slot, cronjob.status.as_mut()) {
            status.last_schedule_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(slot.scheduled_time));
        }
        assert_eq!(next_schedule_time_duration(&cronjob, &now, &parsed), *want_requeue, "{name}");
    }
}

/// The requeues of upstream's `TestControllerV2UpdateCronJob` (now 09:59:59, last scheduled
/// 09:59): a changed schedule is requeued for its next slot.
#[test]
#[rustfmt::skip]
fn update_cronjob_requeue_table() {
    let cases: &[(&str, &str, SignedDuration)] = &[
        ("spec.schedule changed to every minute", "*/1 * * * *", requeue(duration(0, 0, 1, 0))),
        ("@every 1m changed to @every 3m",        "@every 3m",   requeue(duration(0, 2, 1, 0))),
        ("@every 3m changed to @every 1m",        "@every 1m",   requeue(duration(0, 0, 1, 0))),
    ];
    for (name, schedule, want) in cases {
        let cronjob = cronjob(schedule, Some(at(0, -1, 0)), Some(at(0, -1, 0)), None);
        let parsed = parse_schedule(schedule).expect(name);
        assert_eq!(next_schedule_time_duration(&cronjob, &zoned(at(0, 0, -1), "UTC"), &parsed), *want, "{name}");
    }
}

/// Upstream's `TestGetJobFromTemplate2` (the Job's name and its scheduled-timestamp
/// annotation), then kcm-rs rows.
#[test]
#[rustfmt::skip]
fn job_from_template_table() {
    type Row = (&'static str, Option<&'static str>, Timestamp, Result<&'static str, TimeZoneError>);
    let cases: &[Row] = &[
        ("UTC timezone and one annotation",            Some("UTC"),              top_of_the_hour(),          Ok("2016-05-19T10:00:00Z")),
        ("nil timezone and one annotation",            None,                     top_of_the_hour(),          Ok("2016-05-19T10:00:00Z")),
        ("correct timezone and multiple annotation",   Some("Europe/Rome"),      top_of_the_hour(),          Ok("2016-05-19T12:00:00+02:00")),
        // kcm-rs rows.
        ("a zone west of UTC",                         Some("America/New_York"), top_of_the_hour(),          Ok("2016-05-19T06:00:00-04:00")),
        ("a half-hour offset",                         Some("Asia/Kolkata"),     top_of_the_hour(),          Ok("2016-05-19T15:30:00+05:30")),
        ("a zero offset is Z, whatever the zone",      Some("Europe/London"),    ts("2016-01-19T10:00:00Z"), Ok("2016-01-19T10:00:00Z")),
        ("no fraction of a second",                    None,                     ts("2016-05-19T10:00:00.9Z"), Ok("2016-05-19T10:00:00Z")),
        ("a zone that does not load fails the build",  Some("bad timezone"),     top_of_the_hour(),          Err(TimeZoneError::Unknown("bad timezone".into()))),
    ];
    for (name, time_zone, scheduled, want) in cases {
        let cronjob = cronjob_in("* * * * ?", *time_zone);
        let got = scheduled_timestamp_annotation(&cronjob, *scheduled);
        assert_eq!(got, want.clone().map(String::from), "{name}");
        assert_eq!(job_name("mycronjob", top_of_the_hour()), "mycronjob-24394200", "{name}");
    }
}

/// `getJobName`: `<name>-<Unix seconds / 60>`, Go's floored seconds and truncating division.
#[test]
#[rustfmt::skip]
fn job_name_table() {
    let cases: &[(&str, &str, &str)] = &[
        ("upstream's fixture",                 "2016-05-19T10:00:00Z",    "mycronjob-24394200"),
        ("seconds within the minute drop",     "2016-05-19T10:00:59.9Z",  "mycronjob-24394200"),
        ("the next minute",                    "2016-05-19T10:01:00Z",    "mycronjob-24394201"),
        ("the epoch",                          "1970-01-01T00:00:00Z",    "mycronjob-0"),
        ("before 1970, truncated toward zero", "1969-12-31T23:59:30Z",    "mycronjob-0"),
        ("before 1970, a whole minute back",   "1969-12-31T23:58:59.5Z",  "mycronjob--1"),
    ];
    for (name, scheduled, want) in cases {
        assert_eq!(job_name("mycronjob", ts(scheduled)), *want, "{name}");
    }
}
