//! When a CronJob is due (`docs/spec/cronjob.md` sections 5 and 7.1): upstream's `utils.go`
//! arithmetic, `mostRecentScheduleTime`, `nextScheduleTime` and `nextScheduleTimeDuration`,
//! and the name and scheduled-timestamp annotation of the Job for a slot
//! (`getJobFromTemplate2`, `getTimeHashInMinutes`). The arithmetic is upstream's to the
//! nanosecond, approximations included: the count of missed slots is a rough one (an
//! irregular schedule can have a missed slot go unseen), more than 100 of them only warns and
//! starts the most recent, and an unsatisfiable schedule surfaces as Go's zero time.
//!
//! `now` is a [`Zoned`]: the instant, and the zone that stands for Go's `time.Local` (the
//! process's local zone in the manager, UTC in upstream's tests). Upstream's times all carry
//! `Local` (`time.Now()`, and metav1 decodes every timestamp into it), so a schedule without
//! a zone runs on that zone's wall clock; Go's zero time alone is UTC.

use jiff::{SignedDuration, Timestamp, Zoned, tz::TimeZone};
use k8s_openapi::api::batch::v1::CronJob;

use super::golang::{self, NANOS_PER_SECOND, ZERO_TIME};
use super::schedule::{Schedule, TimeZoneError, load_time_zone};

/// Added to every schedule-based requeue (`nextScheduleDelta`), so that a wake-up a little
/// early for the clock (NTP skew) still finds the slot due.
pub const NEXT_SCHEDULE_DELTA: SignedDuration = SignedDuration::from_millis(100);

/// The annotation on a created Job holding its scheduled time
/// (`batchv1.CronJobScheduledTimestampAnnotation`).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Above this many (roughly counted) missed slots, upstream warns `TooManyMissedTimes`.
const MANY_MISSED: i64 = 100;

/// How many slots passed unstarted since the earliest time (upstream's `missedSchedulesType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissedSchedules {
    /// At most one slot is due (`noneMissed`).
    None,
    /// Two or more, up to 100 by the rough count (`fewMissed`).
    Few,
    /// More than 100 by the rough count (`manyMissed`).
    Many,
}

/// What `mostRecentScheduleTime` finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MostRecentSchedule {
    /// Where the search started: `status.lastScheduleTime`, else `metadata.creationTimestamp`
    /// (Go's zero time if unset), moved up to `now − startingDeadlineSeconds` when asked to
    /// and later.
    pub earliest_time: Timestamp,
    /// The latest slot at or before `now`, if one was found.
    pub most_recent_time: Option<Timestamp>,
    /// How many slots were missed.
    pub missed: MissedSchedules,
}

/// The schedule's slots cannot be told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// Two consecutive slots less than a second apart (after rounding): in practice a
    /// schedule that never fires (`59 23 31 2 *`), whose slots are both Go's zero time.
    #[error("time difference between two schedules is less than 1 second")]
    IntervalUnderOneSecond,
}

/// Upstream's `mostRecentScheduleTime(cj, now, schedule, includeStartingDeadlineSeconds)`.
///
/// 1. The earliest time is `status.lastScheduleTime`, else `metadata.creationTimestamp`; with
///    `include_starting_deadline_seconds` and `spec.startingDeadlineSeconds` set, `now` minus
///    the deadline replaces it when later.
/// 2. `t1` is the first slot after it, `t2` the next. Before `t1` nothing is due; before `t2`
///    `t1` is, and nothing was missed.
/// 3. Otherwise the interval `t2 − t1`, rounded to seconds, must be at least a second; the
///    rough count is `n = (now − t1) / interval + 1` (whole seconds), and the walk for the
///    most recent slot starts from the slot after `t1 + (n − 2) · interval`. An irregular
///    schedule can make that start late and leave the most recent slot unset although one
///    was missed; kept. `n > 100` is many, otherwise few.
///
/// Where the walk meets Go's zero time (a schedule with a gap over five years) it stops;
/// upstream would record the zero time and restart from year 1.
pub fn most_recent_schedule_time(
    cronjob: &CronJob,
    now: &Zoned,
    schedule: &Schedule,
    include_starting_deadline_seconds: bool,
) -> Result<MostRecentSchedule, ScheduleError> {
    let local = now.time_zone();
    let now = now.timestamp();
    let status_time = cronjob
        .status
        .as_ref()
        .and_then(|status| status.last_schedule_time.as_ref());
    let mut earliest_time = status_time
        .or(cronjob.metadata.creation_timestamp.as_ref())
        .map_or(ZERO_TIME, |time| time.0);
    if include_starting_deadline_seconds
        && let Some(seconds) = cronjob.spec.starting_deadline_seconds
    {
        // `now.Add(-time.Second * time.Duration(seconds))`, Go's wrapping multiplication kept.
        let deadline = golang::add(now, (-NANOS_PER_SECOND).wrapping_mul(seconds));
        if deadline > earliest_time {
            earliest_time = deadline;
        }
    }
    let found = |most_recent_time, missed| MostRecentSchedule {
        earliest_time,
        most_recent_time,
        missed,
    };

    let t1 = next(schedule, earliest_time, local);
    let t2 = next(schedule, t1, local);
    if now < t1 {
        return Ok(found(None, MissedSchedules::None));
    }
    if now < t2 {
        return Ok(found(Some(t1), MissedSchedules::None));
    }

    let interval = golang::whole_seconds(golang::round_to_second(golang::sub(t2, t1)));
    if interval < 1 {
        return Err(ScheduleError::IntervalUnderOneSecond);
    }
    let elapsed = golang::whole_seconds(golang::sub(now, t1));
    let missed_count = elapsed / interval + 1;
    let potential_earliest = golang::add(
        t1,
        missed_count
            .wrapping_sub(2)
            .wrapping_mul(interval)
            .wrapping_mul(NANOS_PER_SECOND),
    );
    let mut most_recent_time = None;
    let mut t = next(schedule, potential_earliest, local);
    while t <= now && t != ZERO_TIME {
        most_recent_time = Some(t);
        t = next(schedule, t, local);
    }
    let missed = if missed_count > MANY_MISSED {
        MissedSchedules::Many
    } else if missed_count > 0 {
        MissedSchedules::Few
    } else {
        MissedSchedules::None
    };
    Ok(found(most_recent_time, missed))
}

/// A slot due and not started yet (what `nextScheduleTime` returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnmetSchedule {
    /// The slot: the most recent one at or before `now`.
    pub scheduled_time: Timestamp,
    /// More than 100 slots were missed: upstream records the Warning `TooManyMissedTimes`
    /// (`too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check
    /// clock skew`) and logs `too many missed times`, then starts this slot all the same.
    pub too_many_missed: bool,
}

/// Upstream's `nextScheduleTime(cj, now, schedule, recorder)`: the most recent slot within
/// the starting deadline, or `None` when none is due; the `TooManyMissedTimes` warning comes
/// back as [`UnmetSchedule::too_many_missed`]. An error is `InvalidSchedule` for the sync.
pub fn next_schedule_time(
    cronjob: &CronJob,
    now: &Zoned,
    schedule: &Schedule,
) -> Result<Option<UnmetSchedule>, ScheduleError> {
    let found = most_recent_schedule_time(cronjob, now, schedule, true)?;
    Ok(found
        .most_recent_time
        .filter(|time| *time <= now.timestamp())
        .map(|scheduled_time| UnmetSchedule {
            scheduled_time,
            too_many_missed: found.missed == MissedSchedules::Many,
        }))
}

/// Upstream's `nextScheduleTimeDuration(cj, now, schedule)`: how long until the slot after
/// the most recent due one (found without the starting deadline), plus
/// [`NEXT_SCHEDULE_DELTA`]. The base is `now` on an error or when slots were missed but none
/// found, the earliest time when none was missed, the most recent slot otherwise.
///
/// A `time.Duration`: negative (down to about −292 years, Go's saturation) only when the
/// schedule has no slot after the base, where upstream's queue takes it as "now".
pub fn next_schedule_time_duration(
    cronjob: &CronJob,
    now: &Zoned,
    schedule: &Schedule,
) -> SignedDuration {
    let local = now.time_zone();
    let instant = now.timestamp();
    let base = match most_recent_schedule_time(cronjob, now, schedule, false) {
        Ok(MostRecentSchedule {
            most_recent_time: Some(most_recent_time),
            ..
        }) => most_recent_time,
        Ok(MostRecentSchedule {
            earliest_time,
            missed: MissedSchedules::None,
            ..
        }) => earliest_time,
        Ok(_) | Err(_) => instant,
    };
    let delta = i64::try_from(NEXT_SCHEDULE_DELTA.as_nanos()).unwrap_or(i64::MAX);
    let wake_up = golang::add(next(schedule, base, local), delta);
    SignedDuration::from_nanos(golang::sub(wake_up, instant))
}

/// `schedule.Next(t)` for a time as upstream holds it: in the local zone, but for Go's zero
/// time, which is UTC; Go's zero time again when there is no next slot.
fn next(schedule: &Schedule, t: Timestamp, local: &TimeZone) -> Timestamp {
    let zone = if t == ZERO_TIME {
        TimeZone::UTC
    } else {
        local.clone()
    };
    schedule
        .next(&t.to_zoned(zone))
        .map_or(ZERO_TIME, |next| next.timestamp())
}

/// The name of the Job for a slot (`getJobName`): `<cronjob name>-<minutes since 1970>`
/// (`getTimeHashInMinutes`: Unix seconds divided by 60), so that a slot always gets the same
/// Job, whoever creates it; e.g. 2016-05-19T10:00:00Z gives `mycronjob-24394200`.
pub fn job_name(cronjob_name: &str, scheduled_time: Timestamp) -> String {
    format!("{cronjob_name}-{}", golang::unix(scheduled_time) / 60)
}

/// The value of [`SCHEDULED_TIMESTAMP_ANNOTATION`] (`getJobFromTemplate2`): the slot in
/// `spec.timeZone`, or in UTC when that is unset (not in the manager's local zone the
/// schedule then runs in), as RFC 3339 with seconds: `2016-05-19T10:00:00Z`,
/// `2016-05-19T12:00:00+02:00`. A zone that does not load fails the Job's build.
pub fn scheduled_timestamp_annotation(
    cronjob: &CronJob,
    scheduled_time: Timestamp,
) -> Result<String, TimeZoneError> {
    let zone = cronjob.spec.time_zone.as_deref().unwrap_or("");
    Ok(golang::format_rfc3339(
        scheduled_time,
        &load_time_zone(zone)?,
    ))
}
