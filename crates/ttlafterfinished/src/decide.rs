//! What the controller decides about one Job, from the Job and `now` alone: whether it is
//! this controller's to delete, and when (upstream's `needsCleanup`, `processTTL`, `timeLeft`,
//! `getFinishAndExpireTime` and `jobFinishTime`). No client and no clock, so the tests are
//! tables.

use std::time::Duration;

use k8s_openapi::{
    api::batch::v1::Job,
    jiff::{SignedDuration, Timestamp},
};
use kube::ResourceExt;

/// A Job's TTL could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpiryError {
    /// The Job has no TTL or has not finished (a caller asked about a Job that
    /// [`needs_cleanup`] turns down).
    #[error("job {0} should not be cleaned up")]
    ShouldNotBeCleanedUp(String),
    /// Its `Complete` or `Failed` condition carries no `lastTransitionTime`.
    #[error("unable to find the time when the Job {0} finished")]
    NoFinishTime(String),
    /// It has no `Complete` or `Failed` condition (unreachable behind [`needs_cleanup`]).
    #[error("unable to find the status of the finished Job {0}")]
    NoFinishedCondition(String),
}

/// What becomes of a Job (upstream `processTTL`'s outcomes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// Not this controller's to delete: no TTL, not finished, or already being deleted.
    NotApplicable,
    /// Its TTL has passed: delete it. `expired_at` is when it became due (the deletion-latency
    /// metric measures from there).
    Expired {
        /// When the TTL passed.
        expired_at: Timestamp,
    },
    /// Its TTL passes in `remaining`: look again then.
    Pending {
        /// How long until the TTL passes.
        remaining: Duration,
    },
}

/// How long a finished Job has left (upstream `timeLeft`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLeft {
    /// The TTL left from `since`; zero or negative once it has passed.
    pub remaining: SignedDuration,
    /// When the Job finished (its terminal condition's `lastTransitionTime`).
    pub finished_at: Timestamp,
    /// `finished_at` plus the TTL.
    pub expires_at: Timestamp,
}

impl TimeLeft {
    /// The Job finished after `since`: a clock skew between the API server and this manager.
    /// Upstream logs it and defers the cleanup (the TTL simply has not passed yet).
    pub fn finished_in_the_future(&self, since: Timestamp) -> bool {
        self.finished_at > since
    }
}

/// Whether the Job has finished: a `Complete` or `Failed` condition with status `True`
/// (upstream `jobutil.IsJobFinished`). The interim `SuccessCriteriaMet` and `FailureTarget`
/// do not count: their pods may still be terminating.
pub fn is_finished(job: &Job) -> bool {
    finished_condition_time(job).is_some()
}

/// Whether the Job is this controller's: it has a TTL and has finished (upstream
/// `needsCleanup`).
pub fn needs_cleanup(job: &Job) -> bool {
    ttl_seconds(job).is_some() && is_finished(job)
}

/// Upstream `processTTL` at `now`: nothing for a Job being deleted or not to be cleaned up;
/// otherwise expired, or pending for the time left.
pub fn expiry(job: &Job, now: Timestamp) -> Result<Expiry, ExpiryError> {
    if job.metadata.deletion_timestamp.is_some() || !needs_cleanup(job) {
        return Ok(Expiry::NotApplicable);
    }
    let left = time_left(job, now)?;
    if left.remaining <= SignedDuration::ZERO {
        return Ok(Expiry::Expired {
            expired_at: left.expires_at,
        });
    }
    Ok(Expiry::Pending {
        remaining: left.remaining.unsigned_abs(),
    })
}

/// Upstream `timeLeft`: when the Job finished, when its TTL passes, and how long that is
/// after `since`.
pub fn time_left(job: &Job, since: Timestamp) -> Result<TimeLeft, ExpiryError> {
    let Some(ttl) = ttl_seconds(job).filter(|_| is_finished(job)) else {
        return Err(ExpiryError::ShouldNotBeCleanedUp(name_of(job)));
    };
    let finished_at = job_finish_time(job)?;
    // Adding a `SignedDuration` saturates and never fails (only calendar units can).
    let expires_at = finished_at
        .saturating_add(SignedDuration::from_secs(i64::from(ttl)))
        .unwrap_or(Timestamp::MAX);
    Ok(TimeLeft {
        remaining: expires_at.duration_since(since),
        finished_at,
        expires_at,
    })
}

/// Upstream `jobFinishTime`: the `lastTransitionTime` of the first `Complete` or `Failed`
/// condition that is `True` (not `status.completionTime`, which a failed Job lacks).
pub fn job_finish_time(job: &Job) -> Result<Timestamp, ExpiryError> {
    match finished_condition_time(job) {
        Some(Some(time)) => Ok(time),
        Some(None) => Err(ExpiryError::NoFinishTime(name_of(job))),
        None => Err(ExpiryError::NoFinishedCondition(name_of(job))),
    }
}

/// `spec.ttlSecondsAfterFinished`.
fn ttl_seconds(job: &Job) -> Option<i32> {
    job.spec.as_ref()?.ttl_seconds_after_finished
}

/// The first finished condition's transition time: `None` without one, `Some(None)` when it
/// carries no time (upstream's zero time).
fn finished_condition_time(job: &Job) -> Option<Option<Timestamp>> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|condition| {
            matches!(condition.type_.as_str(), "Complete" | "Failed") && condition.status == "True"
        })
        .map(|condition| condition.last_transition_time.as_ref().map(|time| time.0))
}

/// `namespace/name`, as upstream's messages name a Job.
fn name_of(job: &Job) -> String {
    format!("{}/{}", job.namespace().unwrap_or_default(), job.name_any())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{
        api::batch::v1::{JobCondition, JobSpec, JobStatus},
        apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    };

    use super::*;

    /// A moment to measure from.
    fn now() -> Timestamp {
        "2026-12-06T10:00:00Z".parse().expect("timestamp")
    }

    fn at(offset_seconds: i64) -> Timestamp {
        now()
            .saturating_add(SignedDuration::from_secs(offset_seconds))
            .expect("no calendar units")
    }

    fn condition(type_: &str, status: &str, at: Option<Timestamp>) -> JobCondition {
        JobCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: at.map(Time),
            ..JobCondition::default()
        }
    }

    /// Upstream's `newJob(completionTime, failedTime, ttl)`: a `Complete` condition at
    /// `completed`, a `Failed` one at `failed`, each only when given.
    fn job(completed: Option<i64>, failed: Option<i64>, ttl: Option<i32>) -> Job {
        let mut conditions = Vec::new();
        if let Some(offset) = completed {
            conditions.push(condition("Complete", "True", Some(at(offset))));
        }
        if let Some(offset) = failed {
            conditions.push(condition("Failed", "True", Some(at(offset))));
        }
        with_conditions(conditions, ttl)
    }

    fn with_conditions(conditions: Vec<JobCondition>, ttl: Option<i32>) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some("test".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            spec: Some(JobSpec {
                ttl_seconds_after_finished: ttl,
                ..JobSpec::default()
            }),
            status: Some(JobStatus {
                conditions: Some(conditions),
                ..JobStatus::default()
            }),
        }
    }

    /// A `time_left` row's expectation: the seconds left and the expiry's offset from now, or
    /// a part of the error's message.
    type Expected = Result<(i64, i64), &'static str>;

    /// Upstream's `TestTimeLeft`, row for row.
    #[test]
    #[rustfmt::skip]
    fn time_left_table() {
        let cases: &[(&str, Job, Expected)] = &[
            ("Error case: Job unfinished",             job(None, None, Some(100)),        Err("should not be cleaned up")),
            ("Error case: Job completed now, no TTL",  job(Some(0), None, None),          Err("should not be cleaned up")),
            ("Job completed now, 0s TTL",              job(Some(0), None, Some(0)),       Ok((0, 0))),
            ("Job completed now, 10s TTL",             job(Some(0), None, Some(10)),      Ok((10, 10))),
            ("Job completed 10s ago, 15s TTL",         job(Some(-10), None, Some(15)),    Ok((5, 5))),
            ("Error case: Job failed now, no TTL",     job(None, Some(0), None),          Err("should not be cleaned up")),
            ("Job failed now, 0s TTL",                 job(None, Some(0), Some(0)),       Ok((0, 0))),
            ("Job failed now, 10s TTL",                job(None, Some(0), Some(10)),      Ok((10, 10))),
            ("Job failed 10s ago, 15s TTL",            job(None, Some(-10), Some(15)),    Ok((5, 5))),
            ("a finish time in the future leaves more than the TTL", job(Some(30), None, Some(10)), Ok((40, 40))),
            ("a TTL long past leaves a negative time", job(Some(-100), None, Some(10)),   Ok((-90, -90))),
        ];
        for (name, job, want) in cases {
            let got = time_left(job, now());
            match (want, got) {
                (Ok((remaining, expires)), Ok(left)) => {
                    assert_eq!(left.remaining, SignedDuration::from_secs(*remaining), "{name}");
                    assert_eq!(left.expires_at, at(*expires), "{name}");
                }
                (Err(part), Err(error)) => {
                    assert!(error.to_string().contains(part), "{name}: {error}");
                }
                (want, got) => panic!("{name}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    #[rustfmt::skip]
    fn expiry_table() {
        let deleting = {
            let mut job = job(Some(-10), None, Some(0));
            job.metadata.deletion_timestamp = Some(Time(now()));
            job
        };
        let cases: &[(&str, Job, Result<Expiry, ExpiryError>)] = &[
            ("no TTL: not ours",                        job(Some(-10), None, None),   Ok(Expiry::NotApplicable)),
            ("unfinished: not ours",                    job(None, None, Some(0)),     Ok(Expiry::NotApplicable)),
            ("being deleted: not ours",                 deleting,                     Ok(Expiry::NotApplicable)),
            ("SuccessCriteriaMet alone is not finished", with_conditions(vec![condition("SuccessCriteriaMet", "True", Some(at(-10)))], Some(0)), Ok(Expiry::NotApplicable)),
            ("FailureTarget alone is not finished",     with_conditions(vec![condition("FailureTarget", "True", Some(at(-10)))], Some(0)), Ok(Expiry::NotApplicable)),
            ("a False Complete is not finished",        with_conditions(vec![condition("Complete", "False", Some(at(-10)))], Some(0)), Ok(Expiry::NotApplicable)),
            ("TTL 0: expired at the finish",            job(Some(-10), None, Some(0)), Ok(Expiry::Expired { expired_at: at(-10) })),
            ("TTL just passed: expired",                job(Some(-10), None, Some(10)), Ok(Expiry::Expired { expired_at: at(0) })),
            ("TTL not passed: pending for the rest",    job(Some(-10), None, Some(15)), Ok(Expiry::Pending { remaining: Duration::from_secs(5) })),
            ("failed: the Failed condition's time",     job(None, Some(-3), Some(5)),  Ok(Expiry::Pending { remaining: Duration::from_secs(2) })),
            ("the first finished condition counts",     with_conditions(vec![condition("SuccessCriteriaMet", "True", Some(at(-50))), condition("Complete", "True", Some(at(-1))), condition("Failed", "True", Some(at(-40)))], Some(3)), Ok(Expiry::Pending { remaining: Duration::from_secs(2) })),
            ("no transition time: an error, retried",   with_conditions(vec![condition("Complete", "True", None)], Some(0)), Err(ExpiryError::NoFinishTime("default/test".into()))),
        ];
        for (name, job, want) in cases {
            assert_eq!(&expiry(job, now()), want, "{name}");
        }
    }

    #[test]
    fn a_finish_after_now_is_a_clock_skew() {
        let left = time_left(&job(Some(5), None, Some(0)), now()).expect("finished");
        assert!(left.finished_in_the_future(now()));
        let left = time_left(&job(Some(0), None, Some(0)), now()).expect("finished");
        assert!(!left.finished_in_the_future(now()));
    }
}
