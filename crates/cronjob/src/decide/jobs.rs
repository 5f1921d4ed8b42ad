//! The CronJob's Jobs as upstream reads them: which are its own, how each finished, which the
//! history limits remove (upstream `getJobsToBeReconciled`, `getFinishedStatus`,
//! `cleanupFinishedJobs`, `removeOldestJobs`, `byJobStartTime`).

use std::cmp::Ordering;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::ResourceExt;

/// How a Job finished: its first `Complete` or `Failed` condition with status `True`
/// (upstream `jobutil.FinishedCondition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// `Complete`.
    Complete,
    /// `Failed`.
    Failed,
}

impl Finished {
    /// The condition type, as upstream's `SawCompletedJob` message names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Finished::Complete => "Complete",
            Finished::Failed => "Failed",
        }
    }
}

/// How `job` finished, if it has (upstream `IsJobFinished`: the interim `SuccessCriteriaMet`
/// and `FailureTarget` do not count, the Job's pods may still run).
pub fn finished(job: &Job) -> Option<Finished> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .filter(|condition| condition.status == "True")
        .find_map(|condition| match condition.type_.as_str() {
            "Complete" => Some(Finished::Complete),
            "Failed" => Some(Finished::Failed),
            _ => None,
        })
}

/// Whether `job` succeeded: a `Complete` condition with status `True` anywhere in its list
/// (upstream `IsJobSucceeded`).
pub fn succeeded(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Complete" && condition.status == "True")
        })
}

/// The CronJob's Jobs among `jobs` of its namespace: those whose controller reference names it
/// (upstream `getJobsToBeReconciled` compares the name alone, not the kind or the UID).
pub fn jobs_of<'a>(cronjob: &CronJob, jobs: impl IntoIterator<Item = &'a Job>) -> Vec<&'a Job> {
    let name = cronjob.name_any();
    jobs.into_iter()
        .filter(|job| {
            job.owner_references()
                .iter()
                .any(|owner| owner.controller == Some(true) && owner.name == name)
        })
        .collect()
}

/// The finished Jobs the history limits remove, oldest first by start time (upstream
/// `cleanupFinishedJobs`): with `successfulJobsHistoryLimit` and `failedJobsHistoryLimit` both
/// unset, none.
pub fn beyond_history_limits<'a>(cronjob: &CronJob, jobs: &[&'a Job]) -> Vec<&'a Job> {
    let successful_limit = cronjob.spec.successful_jobs_history_limit;
    let failed_limit = cronjob.spec.failed_jobs_history_limit;
    let mut removed = Vec::new();
    for (kind, limit) in [
        (Finished::Complete, successful_limit),
        (Finished::Failed, failed_limit),
    ] {
        let Some(limit) = limit else {
            continue;
        };
        let mut of_kind: Vec<&Job> = jobs
            .iter()
            .copied()
            .filter(|job| finished(job) == Some(kind))
            .collect();
        removed.extend(oldest_beyond(&mut of_kind, limit));
    }
    removed
}

/// Upstream `removeOldestJobs`: all but the newest `limit`, in upstream's order.
fn oldest_beyond<'a>(jobs: &mut [&'a Job], limit: i32) -> Vec<&'a Job> {
    let keep = usize::try_from(limit).unwrap_or(0);
    if jobs.len() <= keep {
        return Vec::new();
    }
    jobs.sort_by(|a, b| by_start_time(a, b));
    jobs[..jobs.len() - keep].to_vec()
}

/// Upstream `byJobStartTime`: Jobs with a start time first, earlier first; equal times (both
/// unset included) by name.
pub fn by_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |job: &Job| {
        job.status
            .as_ref()
            .and_then(|status| status.start_time.clone())
    };
    match (start(a), start(b)) {
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (a_start, b_start) if a_start == b_start => a.name_any().cmp(&b.name_any()),
        (a_start, b_start) => a_start.cmp(&b_start),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::{
        api::batch::v1::{CronJobSpec, JobCondition, JobStatus},
        apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time},
        jiff::Timestamp,
    };

    use super::*;

    fn time(text: &str) -> Time {
        Time(text.parse::<Timestamp>().expect("timestamp"))
    }

    fn job(name: &str, start: Option<&str>, conditions: &[(&str, &str)]) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            status: Some(JobStatus {
                start_time: start.map(time),
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(type_, status)| JobCondition {
                            type_: (*type_).into(),
                            status: (*status).into(),
                            ..JobCondition::default()
                        })
                        .collect(),
                ),
                ..JobStatus::default()
            }),
            ..Job::default()
        }
    }

    fn names(jobs: &[&Job]) -> Vec<String> {
        jobs.iter().map(|job| job.name_any()).collect()
    }

    #[test]
    #[rustfmt::skip]
    fn finished_table() {
        let cases: &[(&str, Job, Option<Finished>, bool)] = &[
            ("no conditions: running",                job("a", None, &[]),                                         None, false),
            ("SuccessCriteriaMet alone: running",     job("a", None, &[("SuccessCriteriaMet", "True")]),           None, false),
            ("FailureTarget alone: running",          job("a", None, &[("FailureTarget", "True")]),                None, false),
            ("Complete",                              job("a", None, &[("SuccessCriteriaMet", "True"), ("Complete", "True")]), Some(Finished::Complete), true),
            ("Failed",                                job("a", None, &[("FailureTarget", "True"), ("Failed", "True")]),        Some(Finished::Failed), false),
            ("a False Complete does not count",       job("a", None, &[("Complete", "False")]),                    None, false),
            ("the first finished condition decides",  job("a", None, &[("Failed", "True"), ("Complete", "True")]), Some(Finished::Failed), true),
        ];
        for (name, job, want, want_succeeded) in cases {
            assert_eq!(finished(job), *want, "{name}");
            assert_eq!(succeeded(job), *want_succeeded, "{name}");
        }
    }

    /// Upstream's `TestByJobStartTime`.
    #[test]
    #[rustfmt::skip]
    fn by_start_time_table() {
        let t1 = Some("2016-05-19T10:00:00Z");
        let t2 = Some("2016-05-19T11:00:00Z");
        let cases: &[(&str, Job, Job, [&str; 2])] = &[
            ("both unset: by name",            job("b", None, &[]), job("a", None, &[]), ["a", "b"]),
            ("a unset, b set: b first",         job("a", None, &[]), job("b", t1, &[]),   ["b", "a"]),
            ("a set, b unset: a first",         job("a", t1, &[]),   job("b", None, &[]), ["a", "b"]),
            ("equal times: by name",            job("b", t1, &[]),   job("a", t1, &[]),   ["a", "b"]),
            ("different times: earlier first",  job("a", t2, &[]),   job("b", t1, &[]),   ["b", "a"]),
        ];
        for (name, first, second, want) in cases {
            let mut jobs = [first, second];
            jobs.sort_by(|a, b| by_start_time(a, b));
            assert_eq!(names(&jobs), want, "{name}");
        }
    }

    fn cronjob(successful: Option<i32>, failed: Option<i32>) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("mycronjob".into()),
                ..ObjectMeta::default()
            },
            spec: CronJobSpec {
                successful_jobs_history_limit: successful,
                failed_jobs_history_limit: failed,
                ..CronJobSpec::default()
            },
            ..CronJob::default()
        }
    }

    #[test]
    #[rustfmt::skip]
    fn history_limits_table() {
        let complete = &[("Complete", "True")][..];
        let failed = &[("Failed", "True")][..];
        let jobs = [
            job("ok-old", Some("2016-05-19T08:59:00Z"), complete),
            job("ok-new", Some("2016-05-19T09:59:00Z"), complete),
            job("ok-unstarted", None, complete),
            job("bad-old", Some("2016-05-19T08:00:00Z"), failed),
            job("bad-new", Some("2016-05-19T09:00:00Z"), failed),
            job("running", Some("2016-05-19T07:00:00Z"), &[]),
        ];
        let all: Vec<&Job> = jobs.iter().collect();
        let cases: &[(&str, CronJob, &[&str])] = &[
            ("no limits: nothing removed",                  cronjob(None, None),       &[]),
            ("successful 1: the two oldest by start time",  cronjob(Some(1), None),    &["ok-old", "ok-new"]),
            ("successful 2: the oldest (unstarted kept last)", cronjob(Some(2), None), &["ok-old"]),
            ("successful 3: all kept",                      cronjob(Some(3), None),    &[]),
            ("failed 1: the older failed one",              cronjob(None, Some(1)),    &["bad-old"]),
            ("both 0: every finished Job",                  cronjob(Some(0), Some(0)), &["ok-old", "ok-new", "ok-unstarted", "bad-old", "bad-new"]),
        ];
        for (name, cronjob, want) in cases {
            assert_eq!(names(&beyond_history_limits(cronjob, &all)), *want, "{name}");
        }
    }

    fn owned_by(name: &str, owner: &str, controller: bool) -> Job {
        let mut job = job(name, None, &[]);
        job.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            name: owner.into(),
            uid: "any".into(),
            controller: Some(controller),
            ..OwnerReference::default()
        }]);
        job
    }

    /// Upstream's `TestControllerV2GetJobsToBeReconciled`: the controller reference's name alone
    /// decides.
    #[test]
    fn its_jobs_are_those_whose_controller_reference_names_it() {
        let jobs = [
            owned_by("mine", "mycronjob", true),
            owned_by("another", "another-cronjob", true),
            owned_by("not-controller", "mycronjob", false),
            job("orphan", None, &[]),
        ];
        assert_eq!(names(&jobs_of(&cronjob(None, None), &jobs)), ["mine"]);
    }
}
