//! The end state of a Job (spec section 6, upstream `syncJob`'s evaluation block with
//! `pastBackoffLimitOnFailure`, `pastActiveDeadline`, `newFailureCondition`,
//! `newSuccessCondition`, and the `Suspended` condition): whether this sync finishes the Job,
//! and with which condition.
//!
//! A Job can meet several end criteria at once (e.g. too many failures past its deadline), and
//! the condition it ends with is part of its API, so the rules are checked in upstream's order
//! and the first hit wins: a stored `SuccessCriteriaMet`, a stored `FailureTarget`, a `FailJob`
//! rule, `backoffLimit`, `activeDeadlineSeconds`, the failed indexes, the success policy and
//! finally `completions` (checked after `manageJob`, see [`completions_reached`]). Since v1.31
//! the failure and success conditions made here are the interim `FailureTarget` and
//! `SuccessCriteriaMet` (`delayTerminalCondition()` is true in v1.36): the terminal `Failed` or
//! `Complete` is written by the tracking step once no pod is left running.

use std::collections::BTreeMap;
use std::time::Duration;

use informer::CachedPod;
use k8s_openapi::api::batch::v1::JobCondition;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::backoff::{DelayedDeletionInput, pods_with_delayed_deletion_per_index};
use super::failure_policy::fail_job_message;
use super::indexes::{OrderedIntervals, calculate_failed_indexes, calculate_succeeded_indexes};
use super::pods::{POD_PENDING, POD_RUNNING, container_statuses, init_container_statuses, phase};
use super::spec::{
    CONDITION_FAILURE_TARGET, CONDITION_FALSE, CONDITION_SUSPENDED, CONDITION_TRUE, JobView,
    MESSAGE_BACKOFF_LIMIT_EXCEEDED, MESSAGE_COMPLETIONS_REACHED, MESSAGE_DEADLINE_EXCEEDED,
    MESSAGE_FAILED_INDEXES, MESSAGE_JOB_RESUMED, MESSAGE_JOB_SUSPENDED,
    MESSAGE_MAX_FAILED_INDEXES_EXCEEDED, REASON_BACKOFF_LIMIT_EXCEEDED, REASON_COMPLETIONS_REACHED,
    REASON_DEADLINE_EXCEEDED, REASON_FAILED_INDEXES, REASON_JOB_RESUMED, REASON_JOB_SUSPENDED,
    REASON_MAX_FAILED_INDEXES_EXCEEDED, REASON_POD_FAILURE_POLICY, REASON_SUCCESS_POLICY,
    RESTART_POLICY_ON_FAILURE,
};
use super::success_policy::{match_success_policy, success_criteria_met_condition};
use super::types::{FinishedCondition, FinishedConditionType, UidSet, ensure_job_condition_status};

/// What the end-state evaluation reads of the sync (upstream's `jobCtx` at that point).
#[derive(Debug, Clone, Copy)]
pub struct EndStateInput<'a, 'p> {
    /// The Job.
    pub job: JobView<'a>,
    /// All its pods (claimed, counted or not).
    pub pods: &'a [&'p CachedPod],
    /// Its active pods.
    pub active_pods: &'a [&'p CachedPod],
    /// The pods whose finalizer removal is expected.
    pub expected_rm_finalizers: &'a UidSet,
    /// `jobCtx.succeeded`: stored, uncounted and newly succeeded pods.
    pub succeeded: i32,
    /// `jobCtx.failed`: stored, uncounted and newly failed pods that count.
    pub failed: i32,
    /// The Job's start time for this sync (see [`start_time`]).
    pub start_time: Option<Timestamp>,
    /// The clock.
    pub now: Timestamp,
}

/// The indexes of an Indexed Job as the sync computed them.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedState<'p> {
    /// The succeeded indexes recorded in the status (`prevSucceededIndexes`).
    pub prev_succeeded_indexes: OrderedIntervals,
    /// Those plus the newly succeeded pods' indexes (`succeededIndexes`).
    pub succeeded_indexes: OrderedIntervals,
    /// The failed indexes, with `backoffLimitPerIndex` (`failedIndexes`).
    pub failed_indexes: Option<OrderedIntervals>,
    /// With `backoffLimitPerIndex`, the failed pod of each index whose removal waits for a
    /// replacement (`podsWithDelayedDeletionPerIndex`).
    pub pods_with_delayed_deletion_per_index: BTreeMap<i64, &'p CachedPod>,
}

/// The outcome of the end-state evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct EndState<'p> {
    /// The condition finishing the Job, if one does (`jobCtx.finishedCondition`).
    pub finished_condition: Option<FinishedCondition>,
    /// With `activeDeadlineSeconds`, not suspended and no failure found by the deadline
    /// check: requeue the Job after this long (the deadline minus the time since the start;
    /// zero once it passed).
    pub active_deadline_requeue: Option<Duration>,
    /// `jobCtx.succeeded`, for an Indexed Job the number of succeeded indexes.
    pub succeeded: i32,
    /// The indexes, for an Indexed Job.
    pub indexed: Option<IndexedState<'p>>,
}

/// Step 13 of `syncJob`: the start time the sync works with: the stored one, else `now`
/// unless the Job is suspended (a suspended Job has not started).
pub fn start_time(job: &JobView<'_>, now: Timestamp) -> Option<Timestamp> {
    job.start_time()
        .or_else(|| (!job.is_suspended()).then_some(now))
}

/// `newFailureCondition` (v1.36): a `FailureTarget` condition.
pub fn new_failure_condition(reason: &str, message: &str, now: Timestamp) -> FinishedCondition {
    FinishedCondition::new(FinishedConditionType::FailureTarget, reason, message, now)
}

/// `newSuccessCondition` (v1.36): `SuccessCriteriaMet`, reason `CompletionsReached`.
pub fn new_success_condition(now: Timestamp) -> FinishedCondition {
    FinishedCondition::new(
        FinishedConditionType::SuccessCriteriaMet,
        REASON_COMPLETIONS_REACHED,
        MESSAGE_COMPLETIONS_REACHED,
        now,
    )
}

/// `pastBackoffLimitOnFailure`: with the template's `restartPolicy: OnFailure` (failed
/// containers restart in place, so pods do not fail), whether the container restarts of the
/// running and pending pods (init and app containers, summed as Go's `int32`) reach
/// `backoffLimit`; with a limit of 0, any restart does.
pub fn past_backoff_limit_on_failure(job: &JobView<'_>, pods: &[&CachedPod]) -> bool {
    if job.template_restart_policy() != RESTART_POLICY_ON_FAILURE {
        return false;
    }
    let restarts = pods
        .iter()
        .filter(|p| matches!(phase(p), POD_RUNNING | POD_PENDING))
        .flat_map(|p| {
            init_container_statuses(p)
                .iter()
                .chain(container_statuses(p))
        })
        .fold(0i32, |sum, status| sum.wrapping_add(status.restart_count));
    let limit = job.backoff_limit();
    if limit == 0 {
        return restarts > 0;
    }
    restarts >= limit
}

/// `pastActiveDeadline`: with `activeDeadlineSeconds`, a start time and not suspended, whether
/// at least that long passed since the start.
pub fn past_active_deadline(
    job: &JobView<'_>,
    start_time: Option<Timestamp>,
    now: Timestamp,
) -> bool {
    let (Some(deadline), Some(start)) = (job.active_deadline_seconds(), start_time) else {
        return false;
    };
    if job.is_suspended() {
        return false;
    }
    now.duration_since(start) >= SignedDuration::from_secs(deadline)
}

/// The requeue upstream schedules when `activeDeadlineSeconds` is set, the Job is not
/// suspended and not past its deadline: `deadline − (now − start)`, zero if negative (a
/// missing start time reads as `now`).
fn active_deadline_requeue(
    job: &JobView<'_>,
    start_time: Option<Timestamp>,
    now: Timestamp,
) -> Option<Duration> {
    let deadline = job.active_deadline_seconds()?;
    if job.is_suspended() {
        return None;
    }
    let elapsed = now.duration_since(start_time.unwrap_or(now));
    let remaining = SignedDuration::from_secs(deadline).saturating_sub(elapsed);
    Some(Duration::try_from(remaining).unwrap_or(Duration::ZERO))
}

/// Evaluates the end state (section 6, steps 1–7), in upstream's order:
/// 1. a stored `SuccessCriteriaMet=True` is reused (the failure policy is not looked at);
/// 2. else a stored `FailureTarget=True` becomes `Failed` at `now`;
/// 3. else a failed pod matching a `FailJob` rule gives `FailureTarget`/`PodFailurePolicy`;
/// 4. else `failed > backoffLimit` or [`past_backoff_limit_on_failure`] gives
///    `BackoffLimitExceeded`; else [`past_active_deadline`] gives `DeadlineExceeded`; else,
///    with a deadline, the requeue before it;
/// 5. Indexed: the succeeded indexes (and `succeeded` becomes their number); with
///    `backoffLimitPerIndex`, the failed indexes and, if nothing finished the Job yet, more
///    than `maxFailedIndexes` of them gives `MaxFailedIndexesExceeded`, or every index
///    finished with some failed gives `FailedIndexes`; then the pods whose deletion waits;
/// 6. Indexed, still nothing: a met success policy gives `SuccessCriteriaMet`/`SuccessPolicy`.
///
/// The completions rule comes after `manageJob` ([`completions_reached`]).
pub fn evaluate_end_state<'p>(input: &EndStateInput<'_, 'p>) -> EndState<'p> {
    let job = &input.job;
    let now = input.now;
    let mut finished: Option<FinishedCondition> = None;
    let mut requeue = None;

    if let Some(stored) = success_criteria_met_condition(job) {
        finished = Some(stored_condition(
            stored,
            FinishedConditionType::SuccessCriteriaMet,
            now,
        ));
    } else if let Some(target) = job
        .find_condition(CONDITION_FAILURE_TARGET)
        .filter(|c| c.status == CONDITION_TRUE)
    {
        finished = Some(stored_condition(target, FinishedConditionType::Failed, now));
    } else if let Some(message) = fail_job_message(job, input.pods) {
        finished = Some(new_failure_condition(
            REASON_POD_FAILURE_POLICY,
            &message,
            now,
        ));
    }

    if finished.is_none() {
        if input.failed > job.backoff_limit() || past_backoff_limit_on_failure(job, input.pods) {
            finished = Some(new_failure_condition(
                REASON_BACKOFF_LIMIT_EXCEEDED,
                MESSAGE_BACKOFF_LIMIT_EXCEEDED,
                now,
            ));
        } else if past_active_deadline(job, input.start_time, now) {
            finished = Some(new_failure_condition(
                REASON_DEADLINE_EXCEEDED,
                MESSAGE_DEADLINE_EXCEEDED,
                now,
            ));
        } else {
            requeue = active_deadline_requeue(job, input.start_time, now);
        }
    }

    let mut succeeded = input.succeeded;
    let mut indexed = None;
    if job.is_indexed() {
        let completions = job.indexed_completions();
        let (prev_succeeded_indexes, succeeded_indexes) =
            calculate_succeeded_indexes(job, input.pods);
        succeeded = total_i32(&succeeded_indexes);
        let mut failed_indexes = None;
        let mut delayed = BTreeMap::new();
        if job.has_backoff_limit_per_index() {
            let failed = calculate_failed_indexes(job, input.pods);
            if finished.is_none() {
                if job
                    .max_failed_indexes()
                    .is_some_and(|max| failed.total() > i64::from(max))
                {
                    finished = Some(new_failure_condition(
                        REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                        now,
                    ));
                } else if failed.total() > 0
                    && failed.total().saturating_add(succeeded_indexes.total())
                        >= i64::from(completions)
                {
                    finished = Some(new_failure_condition(
                        REASON_FAILED_INDEXES,
                        MESSAGE_FAILED_INDEXES,
                        now,
                    ));
                }
            }
            delayed = pods_with_delayed_deletion_per_index(&DelayedDeletionInput {
                job: *job,
                pods: input.pods,
                active_pods: input.active_pods,
                expected_rm_finalizers: input.expected_rm_finalizers,
                succeeded_indexes: &succeeded_indexes,
                failed_indexes: &failed,
            });
            failed_indexes = Some(failed);
        }
        if finished.is_none()
            && let Some(message) =
                match_success_policy(job.success_policy(), completions, &succeeded_indexes)
        {
            finished = Some(FinishedCondition::new(
                FinishedConditionType::SuccessCriteriaMet,
                REASON_SUCCESS_POLICY,
                message,
                now,
            ));
        }
        indexed = Some(IndexedState {
            prev_succeeded_indexes,
            succeeded_indexes,
            failed_indexes,
            pods_with_delayed_deletion_per_index: delayed,
        });
    }

    EndState {
        finished_condition: finished,
        active_deadline_requeue: requeue,
        succeeded,
        indexed,
    }
}

/// A stored condition as the finished condition of `type_`: its reason and message, at its
/// transition time for a reused `SuccessCriteriaMet`, at `now` for the `Failed` made from a
/// `FailureTarget`.
fn stored_condition(
    condition: &JobCondition,
    type_: FinishedConditionType,
    now: Timestamp,
) -> FinishedCondition {
    let at = match type_ {
        FinishedConditionType::SuccessCriteriaMet => {
            condition.last_transition_time.as_ref().map_or(now, |t| t.0)
        }
        _ => now,
    };
    FinishedCondition::new(
        type_,
        condition.reason.as_deref().unwrap_or_default(),
        condition.message.as_deref().unwrap_or_default(),
        at,
    )
}

fn total_i32(intervals: &OrderedIntervals) -> i32 {
    // Go's `int32(total())`: truncating (no real Job has 2^31 indexes).
    intervals.total() as i32
}

/// The completions rule (step 17 of `syncJob`, after `manageJob`): without `completions` the
/// Job is done once a pod succeeded and none is active; with it, once `completions` pods (or
/// indexes) succeeded and none is active.
pub fn completions_reached(job: &JobView<'_>, succeeded: i32, active: i32) -> bool {
    match job.completions() {
        None => succeeded > 0 && active == 0,
        Some(completions) => succeeded >= completions && active == 0,
    }
}

/// An event to record when the `Suspended` condition changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuspendEvent {
    /// The event reason: `Suspended` or `Resumed`.
    pub reason: &'static str,
    /// The event message: `Job suspended` or `Job resumed`.
    pub message: &'static str,
    /// Whether the Job resumed (then upstream resets `status.startTime` to now, so
    /// `activeDeadlineSeconds` counts continuous activity).
    pub resumed: bool,
}

/// The `Suspended` condition after a sync that ran `manageJob` without completing the Job:
/// `Suspended=True/JobSuspended` for a suspended Job, else `Suspended=False/JobResumed` (only
/// flipping an existing condition, never adding a `False` one). Returns the event to record
/// when the conditions changed.
pub fn update_suspended_condition(
    conditions: &mut Vec<JobCondition>,
    suspended: bool,
    now: Timestamp,
) -> Option<SuspendEvent> {
    if suspended {
        ensure_job_condition_status(
            conditions,
            CONDITION_SUSPENDED,
            CONDITION_TRUE,
            REASON_JOB_SUSPENDED,
            MESSAGE_JOB_SUSPENDED,
            now,
        )
        .then_some(SuspendEvent {
            reason: "Suspended",
            message: MESSAGE_JOB_SUSPENDED,
            resumed: false,
        })
    } else {
        ensure_job_condition_status(
            conditions,
            CONDITION_SUSPENDED,
            CONDITION_FALSE,
            REASON_JOB_RESUMED,
            MESSAGE_JOB_RESUMED,
            now,
        )
        .then_some(SuspendEvent {
            reason: "Resumed",
            message: MESSAGE_JOB_RESUMED,
            resumed: true,
        })
    }
}
