//! Table tests of the schedule layer, one file per module, mirroring upstream's tables
//! (`TestMostRecentScheduleTime`, `TestNextScheduleTime`, `TestNextScheduleTimeDuration`,
//! `TestParseCronSchedule`, `TestGetJobFromTemplate2`, with their case names as row names)
//! and adding kcm-rs tables for the parser, `Next` and the Go pieces. Every time is built
//! from upstream's fixture, 2016-05-19T10:00:00Z, and every `now` is in UTC, as upstream's
//! tests run, so no row depends on the machine's zone.

use jiff::{SignedDuration, Timestamp, Zoned, tz::TimeZone};
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, CronJobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

mod golang;
mod plan;
mod schedule;
mod times;

/// Upstream's `topOfTheHour()`: 2016-05-19T10:00:00Z, a Thursday.
fn top_of_the_hour() -> Timestamp {
    ts("2016-05-19T10:00:00Z")
}

/// Upstream's `deltaTimeAfterTopOfTheHour(h·hour + m·minute + s·second)`.
fn at(hours: i64, minutes: i64, seconds: i64) -> Timestamp {
    top_of_the_hour()
        .checked_add(SignedDuration::from_secs(
            hours * 3600 + minutes * 60 + seconds,
        ))
        .expect("a valid time")
}

/// A timestamp from RFC 3339 text.
fn ts(text: &str) -> Timestamp {
    text.parse().expect("a valid timestamp")
}

/// `t` in `zone`.
fn zoned(t: Timestamp, zone: &str) -> Zoned {
    t.to_zoned(TimeZone::get(zone).expect("a known zone"))
}

/// A duration of `h` hours, `m` minutes, `s` seconds and `ms` milliseconds.
fn duration(hours: i64, minutes: i64, seconds: i64, millis: i64) -> SignedDuration {
    SignedDuration::from_millis(((hours * 60 + minutes) * 60 + seconds) * 1000 + millis)
}

/// A CronJob as upstream's tables write one: `mycronjob` in `snazzycats`, the schedule, the
/// creation time, `status.lastScheduleTime` and `spec.startingDeadlineSeconds`.
fn cronjob(
    schedule: &str,
    created: Option<Timestamp>,
    last: Option<Timestamp>,
    deadline: Option<i64>,
) -> CronJob {
    CronJob {
        metadata: ObjectMeta {
            name: Some("mycronjob".into()),
            namespace: Some("snazzycats".into()),
            uid: Some("1a2b3c".into()),
            creation_timestamp: created.map(Time),
            ..ObjectMeta::default()
        },
        spec: CronJobSpec {
            schedule: schedule.into(),
            starting_deadline_seconds: deadline,
            ..CronJobSpec::default()
        },
        status: Some(CronJobStatus {
            last_schedule_time: last.map(Time),
            ..CronJobStatus::default()
        }),
    }
}

/// [`cronjob`] with `spec.timeZone`.
fn cronjob_in(schedule: &str, time_zone: Option<&str>) -> CronJob {
    let mut cronjob = cronjob(schedule, Some(top_of_the_hour()), None, None);
    cronjob.spec.time_zone = time_zone.map(Into::into);
    cronjob
}
