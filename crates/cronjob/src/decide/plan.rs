//! Whether a CronJob starts a run now, and which (upstream `syncCronJob` after its children
//! passes: steps 3 to 12 of `docs/spec/cronjob.md` section 6), as data: the events to record
//! and the outcome. The controller carries it out.

use std::time::Duration;

use k8s_openapi::{
    api::batch::v1::CronJob,
    jiff::{SignedDuration, Timestamp, Zoned},
};

use crate::decide::{
    schedule::{format_schedule, load_time_zone, parse_schedule},
    times::{job_name, next_schedule_time, next_schedule_time_duration},
};

/// An event the plan records on the CronJob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedEvent {
    /// `Warning` (true) or `Normal`.
    pub warning: bool,
    /// Upstream's reason.
    pub reason: &'static str,
    /// Upstream's message.
    pub message: String,
}

impl PlannedEvent {
    fn warning(reason: &'static str, message: String) -> Self {
        Self {
            warning: true,
            reason,
            message,
        }
    }
}

/// What the sync does about the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing, and no requeue: the CronJob is being deleted, suspended, or its schedule or
    /// time zone is unusable (an event of the CronJob's brings it back).
    Idle,
    /// Nothing now: look again after `requeue` (the next run's time, plus upstream's 100 ms).
    Wait {
        /// How long until the next look.
        requeue: Duration,
    },
    /// Start the run scheduled at `scheduled`, as the Job `job_name`; with `replace_active`,
    /// the active Jobs are deleted first (concurrencyPolicy `Replace`).
    Start {
        /// The run's scheduled time.
        scheduled: Timestamp,
        /// The Job's name (upstream `getJobName`).
        job_name: String,
        /// Delete the active Jobs before creating it.
        replace_active: bool,
    },
}

/// The events to record and the outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Events, in upstream's order.
    pub events: Vec<PlannedEvent>,
    /// What to do.
    pub outcome: Outcome,
}

/// upstream `syncCronJob` from the deletion check to the concurrency policy, at `now` (in the
/// zone a schedule without one runs in), for a CronJob whose `status.active` the children
/// passes have brought up to date.
pub fn plan(cronjob: &CronJob, now: &Zoned) -> Plan {
    let mut events = Vec::new();
    let outcome = decide(cronjob, now, &mut events);
    Plan { events, outcome }
}

/// A requeue as the work queue takes it: a negative wait (a schedule with no next slot) is
/// "now", as upstream's queue takes it.
pub fn requeue_delay(delay: SignedDuration) -> Duration {
    if delay.is_negative() {
        Duration::ZERO
    } else {
        delay.unsigned_abs()
    }
}

fn decide(cronjob: &CronJob, now: &Zoned, events: &mut Vec<PlannedEvent>) -> Outcome {
    let spec = &cronjob.spec;
    let status = cronjob.status.clone().unwrap_or_default();
    // 3. Being deleted.
    if cronjob.metadata.deletion_timestamp.is_some() {
        return Outcome::Idle;
    }
    // 4. A time zone the database does not know.
    if let Some(zone) = &spec.time_zone
        && let Err(error) = load_time_zone(zone)
    {
        events.push(PlannedEvent::warning(
            "UnknownTimeZone",
            format!("invalid timeZone: {zone:?}: {error}"),
        ));
        return Outcome::Idle;
    }
    // 5. Suspended.
    if spec.suspend == Some(true) {
        return Outcome::Idle;
    }
    // 6. The schedule (an inline TZ= is used, with a warning).
    let formatted = format_schedule(cronjob);
    let schedule = match parse_schedule(&formatted.spec) {
        Ok(schedule) => schedule,
        Err(error) => {
            events.push(PlannedEvent::warning(
                "UnparseableSchedule",
                format!("unparseable schedule: {:?} : {error}", spec.schedule),
            ));
            return Outcome::Idle;
        }
    };
    if formatted.unsupported_time_zone {
        events.push(PlannedEvent::warning(
            "UnsupportedSchedule",
            format!(
                "CRON_TZ or TZ used in schedule {:?} is not officially supported, see \
                 https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more \
                 details",
                spec.schedule
            ),
        ));
    }
    // 7. The most recent unmet run.
    let unmet = match next_schedule_time(cronjob, now, &schedule) {
        Ok(unmet) => unmet,
        Err(error) => {
            events.push(PlannedEvent::warning(
                "InvalidSchedule",
                format!("invalid schedule: {} : {error}", spec.schedule),
            ));
            return Outcome::Idle;
        }
    };
    if unmet.is_some_and(|unmet| unmet.too_many_missed) {
        events.push(PlannedEvent::warning(
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check \
             clock skew"
                .into(),
        ));
    }
    let wait = || Outcome::Wait {
        requeue: requeue_delay(next_schedule_time_duration(cronjob, now, &schedule)),
    };
    // 8. None due.
    let Some(scheduled) = unmet.map(|unmet| unmet.scheduled_time) else {
        return wait();
    };
    // 9. Too late to start it (unreachable in practice: step 7 honours the deadline).
    if let Some(deadline) = spec.starting_deadline_seconds
        && scheduled
            .saturating_add(SignedDuration::from_secs(deadline))
            .is_ok_and(|latest| latest < now.timestamp())
    {
        events.push(PlannedEvent::warning(
            "MissSchedule",
            format!(
                "Missed scheduled time to start a job: {}",
                scheduled.strftime("%a, %d %b %Y %H:%M:%S %z")
            ),
        ));
        return wait();
    }
    // 10. Already started: its Job is active, or it is the last scheduled run.
    let name = job_name(
        &cronjob.metadata.name.clone().unwrap_or_default(),
        scheduled,
    );
    let namespace = cronjob.metadata.namespace.clone();
    let active = status.active.clone().unwrap_or_default();
    let in_active = active.iter().any(|reference| {
        reference.name.as_deref() == Some(name.as_str()) && reference.namespace == namespace
    });
    if in_active || status.last_schedule_time.as_ref().map(|time| time.0) == Some(scheduled) {
        return wait();
    }
    // 11-12. The concurrency policy.
    match spec.concurrency_policy.as_deref() {
        Some("Forbid") if !active.is_empty() => {
            events.push(PlannedEvent {
                warning: false,
                reason: "JobAlreadyActive",
                message: "Not starting job because prior execution is running and concurrency \
                          policy is Forbid"
                    .into(),
            });
            wait()
        }
        policy => Outcome::Start {
            scheduled,
            job_name: name,
            replace_active: policy == Some("Replace"),
        },
    }
}
