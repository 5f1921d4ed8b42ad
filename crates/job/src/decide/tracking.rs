//! Pod tracking with finalizers (spec section 11, upstream `trackJobStatusAndRemoveFinalizers`,
//! `getNewFinishedPods`, `cleanUncountedPodsWithoutFinalizers`, `canRemoveFinalizer` and
//! `enactJobFinished`): how finished pods are counted exactly once.
//!
//! Every pod of a Job carries the `batch.kubernetes.io/job-tracking` finalizer, so it cannot
//! vanish before it is counted. A finished pod is first recorded by UID in
//! `status.uncountedTerminatedPods` (at most 500 per sync), then its finalizer is removed, and
//! only once it is gone does its UID move into `status.succeeded`/`failed`. A crash between
//! these steps leaves the UID in the status, so the pod is neither lost nor counted twice.
//! Succeeded pods of an Indexed Job are tracked by index (`completedIndexes`) instead of UID.
//! This module computes each step's status and the pods whose finalizer to remove; the
//! executor writes the status and patches the pods in between.

use std::collections::BTreeMap;

use informer::CachedPod;
use k8s_openapi::api::batch::v1::{JobStatus, UncountedTerminatedPods};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::failure_policy::{match_pod_failure_policy, non_ignored_failed_pods_count};
use super::indexes::{
    OrderedIntervals, completion_index, sort_by_completion_index, valid_completion_index,
    valid_pods_with_filter,
};
use super::pods::{POD_SUCCEEDED, has_tracking_finalizer, is_pod_failed, len_i32, phase, uid};
use super::spec::{CONDITION_TRUE, JobView, MAX_UNCOUNTED_PODS};
use super::success_policy::success_criteria_met_in;
use super::types::{
    FinishedCondition, FinishedConditionType, PolicyAction, UidSet, UncountedUids,
    ensure_job_condition_status,
};

/// The finished pods not accounted for yet (`getNewFinishedPods`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewFinishedPods<'a> {
    /// `Succeeded` pods with the finalizer, not in `uncountedTerminatedPods.succeeded`.
    pub succeeded: Vec<&'a CachedPod>,
    /// Failed pods ([`is_pod_failed`]) with the finalizer, not in
    /// `uncountedTerminatedPods.failed`.
    pub failed: Vec<&'a CachedPod>,
}

/// `getNewFinishedPods`: the pods that finished since the last sync: they still carry the
/// tracking finalizer, are neither recorded as uncounted nor expected to lose their
/// finalizer, and (Indexed) have a valid index.
pub fn new_finished_pods<'a>(
    job: &JobView<'_>,
    pods: &[&'a CachedPod],
    uncounted: &UncountedUids,
    expected_rm_finalizers: &UidSet,
) -> NewFinishedPods<'a> {
    NewFinishedPods {
        succeeded: valid_pods_with_filter(
            job,
            pods,
            Some(&uncounted.succeeded),
            expected_rm_finalizers,
            |p| phase(p) == POD_SUCCEEDED,
        ),
        failed: valid_pods_with_filter(
            job,
            pods,
            Some(&uncounted.failed),
            expected_rm_finalizers,
            |p| is_pod_failed(p, job),
        ),
    }
}

/// `jobCtx.succeeded` and `jobCtx.failed` (step 12 of `syncJob`): the stored counters plus the
/// uncounted UIDs plus the newly finished pods, new failures matching an `Ignore` rule left
/// out. `int32` sums, wrapping as Go's do.
pub fn sync_counts(
    job: &JobView<'_>,
    new_finished: &NewFinishedPods<'_>,
    uncounted: &UncountedUids,
) -> (i32, i32) {
    let succeeded = job
        .status_succeeded()
        .wrapping_add(len_i32(new_finished.succeeded.len()))
        .wrapping_add(len_i32(uncounted.succeeded.len()));
    let failed = job
        .status_failed()
        .wrapping_add(len_i32(non_ignored_failed_pods_count(
            job,
            &new_finished.failed,
        )))
        .wrapping_add(len_i32(uncounted.failed.len()));
    (succeeded, failed)
}

/// The UIDs of the pods that carry the tracking finalizer and are not expected to lose it
/// (`uidsWithFinalizer`).
pub fn uids_with_finalizer(pods: &[&CachedPod], expected_rm_finalizers: &UidSet) -> UidSet {
    pods.iter()
        .filter(|p| has_tracking_finalizer(p) && !expected_rm_finalizers.contains(uid(p)))
        .map(|p| uid(p).to_owned())
        .collect()
}

/// `cleanUncountedPodsWithoutFinalizers`: every UID of `uncountedTerminatedPods` whose pod no
/// longer has a finalizer to remove (removed, pod gone, or removal expected) leaves the list
/// and is counted in `status.succeeded`/`failed`. Returns whether the status changed. An
/// emptied list is unset, as Go's `nil` slice.
pub fn clean_uncounted_pods_without_finalizers(
    status: &mut JobStatus,
    uids_with_finalizer: &UidSet,
) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let moved_succeeded = keep_with_finalizer(&mut uncounted.succeeded, uids_with_finalizer);
    let moved_failed = keep_with_finalizer(&mut uncounted.failed, uids_with_finalizer);
    if moved_succeeded > 0 {
        let counted = status.succeeded.unwrap_or(0);
        status.succeeded = Some(counted.wrapping_add(len_i32(moved_succeeded)));
    }
    if moved_failed > 0 {
        let counted = status.failed.unwrap_or(0);
        status.failed = Some(counted.wrapping_add(len_i32(moved_failed)));
    }
    moved_succeeded > 0 || moved_failed > 0
}

/// `filterInUncountedUIDs`: keeps the UIDs with a finalizer; returns how many left.
fn keep_with_finalizer(list: &mut Option<Vec<String>>, uids_with_finalizer: &UidSet) -> usize {
    let Some(uids) = list.as_mut() else {
        return 0;
    };
    let before = uids.len();
    uids.retain(|u| uids_with_finalizer.contains(u));
    let moved = before - uids.len();
    if uids.is_empty() {
        *list = None;
    }
    moved
}

/// `canRemoveFinalizer`: a pod's finalizer may go when the Job is being deleted, is finishing,
/// or the pod succeeded; a failed pod's too, unless it is its index's delayed-deletion pod
/// (kept until a replacement inherits its failure counts).
pub fn can_remove_finalizer(
    job: &JobView<'_>,
    finished_condition: Option<&FinishedCondition>,
    pod: &CachedPod,
    consider_pod_failed: bool,
    pods_with_delayed_deletion_per_index: &BTreeMap<i64, &CachedPod>,
) -> bool {
    if job.is_being_deleted() || finished_condition.is_some() || phase(pod) == POD_SUCCEEDED {
        return true;
    }
    if !consider_pod_failed {
        return false;
    }
    if job.has_backoff_limit_per_index() {
        let delayed = completion_index(pod)
            .and_then(|ix| pods_with_delayed_deletion_per_index.get(&ix))
            .is_some_and(|p| uid(p) == uid(pod));
        if delayed {
            return false;
        }
    }
    true
}

/// What the tracking step reads of the sync.
#[derive(Debug, Clone, Copy)]
pub struct TrackingInput<'a, 'p> {
    /// The Job as read at the start of the sync (its spec; its status only through
    /// `uncounted`).
    pub job: JobView<'a>,
    /// All its pods.
    pub pods: &'a [&'p CachedPod],
    /// `uncountedTerminatedPods` as read at the start of the sync.
    pub uncounted: &'a UncountedUids,
    /// The pods whose finalizer removal is expected.
    pub expected_rm_finalizers: &'a UidSet,
    /// The condition finishing the Job, if any (after `syncJob` step 16/17).
    pub finished_condition: Option<&'a FinishedCondition>,
    /// With `backoffLimitPerIndex`, the delayed-deletion pod of each index.
    pub pods_with_delayed_deletion_per_index: &'a BTreeMap<i64, &'p CachedPod>,
    /// Indexed: the succeeded indexes of the status (`prevSucceededIndexes`).
    pub prev_succeeded_indexes: &'a OrderedIntervals,
    /// Indexed: the succeeded indexes (`succeededIndexes`).
    pub succeeded_indexes: &'a OrderedIntervals,
    /// Indexed with `backoffLimitPerIndex`: the failed indexes.
    pub failed_indexes: Option<&'a OrderedIntervals>,
    /// Whether the status already needs a write (active, ready, terminating or the
    /// `Suspended` condition changed).
    pub needs_flush: bool,
    /// The clock.
    pub now: Timestamp,
}

/// The tracking step's first half: what to write and which finalizers to remove.
#[derive(Debug, Clone, PartialEq)]
pub struct TrackingPlan<'p> {
    /// Whether the status must be written before removing finalizers (`needsFlush`). After a
    /// successful write the executor stores the new backoff record.
    pub needs_flush: bool,
    /// The pods whose tracking finalizer to remove (expect the removals first), in pod order.
    pub pods_to_remove_finalizer: Vec<&'p CachedPod>,
    /// The UIDs still carrying a finalizer; the executor drops those it removed and passes the
    /// set to [`finalizers_removed`].
    pub uids_with_finalizer: UidSet,
    /// Whether the 500 cap stopped the scan (then the Job is not finished this sync).
    pub reached_max_uncounted_pods: bool,
    /// Newly counted failures per matched policy action
    /// (`pod_failures_handled_by_failure_policy_total`).
    pub pod_failures_by_policy_action: BTreeMap<PolicyAction, usize>,
    /// The terminal condition to write once no pod is left (`Failed` or `Complete`, made at
    /// `now`), if the Job is finishing.
    pub finished_condition: Option<FinishedCondition>,
}

/// `trackJobStatusAndRemoveFinalizers` up to the first status write (steps 1–5): moves the
/// UIDs whose finalizer is gone into the counters; records the finished pods whose finalizer
/// may go (succeeded ones by UID, or by index for an Indexed Job; failed ones by UID when
/// their failure counts; when the Job is failing, every unfinished pod as failed) and stops at
/// 500; writes the Indexed counters and interval strings; appends the interim `FailureTarget`
/// (or a new `SuccessCriteriaMet`) condition and turns it into the terminal one. `status` is
/// the working copy of the Job's status.
pub fn track_job_status<'p>(
    status: &mut JobStatus,
    input: &TrackingInput<'_, 'p>,
) -> TrackingPlan<'p> {
    let job = &input.job;
    let is_indexed = job.is_indexed();
    let completions = job.indexed_completions();
    let mut needs_flush = input.needs_flush;

    let mut pods: Vec<&'p CachedPod> = input.pods.to_vec();
    if is_indexed {
        // Completed indexes are introduced in order.
        sort_by_completion_index(&mut pods);
    }
    let uids_with_finalizer = uids_with_finalizer(&pods, input.expected_rm_finalizers);
    if clean_uncounted_pods_without_finalizers(status, &uids_with_finalizer) {
        needs_flush = true;
    }

    let failing = input
        .finished_condition
        .is_some_and(|c| !c.is_success_criteria_met());
    let mut pods_to_remove_finalizer = Vec::new();
    let mut new_succeeded_indexes: Vec<i64> = Vec::new();
    let mut by_action: BTreeMap<PolicyAction, usize> = BTreeMap::new();
    let mut reached_max = false;
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    for pod in pods {
        if !has_tracking_finalizer(pod) || input.expected_rm_finalizers.contains(uid(pod)) {
            // Processed in a previous sync.
            continue;
        }
        let consider_failed = is_pod_failed(pod, job);
        if !can_remove_finalizer(
            job,
            input.finished_condition,
            pod,
            consider_failed,
            input.pods_with_delayed_deletion_per_index,
        ) {
            continue;
        }
        pods_to_remove_finalizer.push(pod);
        if phase(pod) == POD_SUCCEEDED && !input.uncounted.failed.contains(uid(pod)) {
            if is_indexed {
                // The completion index is enough to avoid counting twice.
                if let Some(ix) = valid_completion_index(pod, completions)
                    .filter(|ix| !input.prev_succeeded_indexes.has(*ix))
                {
                    new_succeeded_indexes.push(ix);
                    needs_flush = true;
                }
            } else if !input.uncounted.succeeded.contains(uid(pod)) {
                needs_flush = true;
                uncounted
                    .succeeded
                    .get_or_insert_with(Vec::new)
                    .push(uid(pod).to_owned());
            }
        } else if (consider_failed || failing)
            && !input.uncounted.failed.contains(uid(pod))
            && (!is_indexed || valid_completion_index(pod, completions).is_some())
        {
            let counts = match job.pod_failure_policy() {
                Some(policy) => {
                    let matched = match_pod_failure_policy(Some(policy), pod);
                    if let Some(action) = matched.action {
                        *by_action.entry(action).or_default() += 1;
                    }
                    matched.count_failed
                }
                None => true,
            };
            if counts {
                needs_flush = true;
                uncounted
                    .failed
                    .get_or_insert_with(Vec::new)
                    .push(uid(pod).to_owned());
            }
        }
        let recorded = new_succeeded_indexes.len()
            + uncounted.succeeded.as_ref().map_or(0, Vec::len)
            + uncounted.failed.as_ref().map_or(0, Vec::len);
        if recorded >= MAX_UNCOUNTED_PODS {
            // Keeps the status under ~20 KB and the sync from starving other Jobs; the status
            // and pod updates requeue the Job.
            reached_max = true;
            break;
        }
    }

    if is_indexed {
        let succeeded_indexes = input
            .succeeded_indexes
            .with_ordered_indexes(&new_succeeded_indexes);
        let completed = succeeded_indexes.to_string();
        if completed != status.completed_indexes.as_deref().unwrap_or_default() {
            needs_flush = true;
        }
        status.succeeded = Some(succeeded_indexes.total() as i32);
        status.completed_indexes = (!completed.is_empty()).then_some(completed);
        let failed = input.failed_indexes.map(ToString::to_string);
        if status.failed_indexes != failed {
            status.failed_indexes = failed;
            needs_flush = true;
        }
    }

    let finished_condition = input.finished_condition.map(|condition| {
        match condition.type_ {
            FinishedConditionType::FailureTarget => {
                // Recorded before the finalizers go, so the failure survives a crash.
                status
                    .conditions
                    .get_or_insert_with(Vec::new)
                    .push(condition.to_job_condition());
                needs_flush = true;
                condition.to_terminal(input.now)
            }
            FinishedConditionType::SuccessCriteriaMet => {
                let conditions = status.conditions.get_or_insert_with(Vec::new);
                if success_criteria_met_in(conditions).is_none() {
                    conditions.push(condition.to_job_condition());
                    needs_flush = true;
                }
                condition.to_terminal(input.now)
            }
            FinishedConditionType::Failed | FinishedConditionType::Complete => condition.clone(),
        }
    });

    TrackingPlan {
        needs_flush,
        pods_to_remove_finalizer,
        uids_with_finalizer,
        reached_max_uncounted_pods: reached_max,
        pod_failures_by_policy_action: by_action,
        finished_condition,
    }
}

/// Whether this sync finishes the Job in one status write, before the finalizers go (kcm-rs:
/// one write fewer than upstream per finishing Job; docs/spec/job.md, "Finishing in one write").
///
/// Upstream records the last finished pods in `uncountedTerminatedPods` with the interim
/// condition, removes their finalizers, then writes the counters and the terminal condition.
/// When nothing can stop the Job from finishing in this sync (a finishing condition, no pod
/// terminating, the 500 cap not reached: every pod still holding a finalizer is then planned
/// for removal), the final status can be written first instead: the pods are counted in it
/// and the Job is finished, so no sync ever counts them again (a finished Job is not synced),
/// and a finalizer whose removal then fails is removed by the orphan queue, which takes the
/// pods of finished Jobs. No pod loses its finalizer before the status holds it, and the
/// interim condition is written, beside the terminal one.
pub fn finishes_in_one_write(plan: &TrackingPlan<'_>, terminating: i32) -> bool {
    plan.finished_condition.is_some() && !plan.reached_max_uncounted_pods && terminating == 0
}

/// The status of [`finishes_in_one_write`]'s write: every recorded pod counted as if its
/// finalizer were already gone, and the terminal condition. Returns whether the Job finished
/// (always, when [`finishes_in_one_write`] holds).
pub fn finish_in_one_write(
    status: &mut JobStatus,
    plan: &TrackingPlan<'_>,
    terminating: i32,
    now: Timestamp,
) -> bool {
    let mut with_finalizer = plan.uids_with_finalizer.clone();
    finalizers_removed(
        status,
        &mut with_finalizer,
        plan.pods_to_remove_finalizer.iter().map(|pod| uid(pod)),
    );
    enact_job_finished(status, plan.finished_condition.as_ref(), terminating, now)
}

/// After the finalizer patches (`flushUncountedAndRemoveFinalizers` step 3): the UIDs whose
/// finalizer was removed (a pod already gone counts as removed) leave `uids_with_finalizer`,
/// and [`clean_uncounted_pods_without_finalizers`] moves them into the counters. Returns
/// whether the status changed (then, if a patch failed, upstream writes it at once; else the
/// final write carries it).
pub fn finalizers_removed<'u>(
    status: &mut JobStatus,
    uids_with_finalizer: &mut UidSet,
    removed: impl IntoIterator<Item = &'u str>,
) -> bool {
    for removed in removed {
        uids_with_finalizer.remove(removed);
    }
    clean_uncounted_pods_without_finalizers(status, uids_with_finalizer)
}

/// `enactJobFinished`: writes the terminal condition once nothing is left to track: a
/// finishing Job (`finished_condition`) with no uncounted UID and no terminating pod gets
/// `finished_condition` (status `True`, through `ensureJobConditionStatus` at `now`); a
/// `Complete` Job also gets `completionTime`. Returns whether the Job finished. The caller
/// skips this when the 500 cap was reached.
pub fn enact_job_finished(
    status: &mut JobStatus,
    finished_condition: Option<&FinishedCondition>,
    terminating: i32,
    now: Timestamp,
) -> bool {
    let Some(finished) = finished_condition else {
        return false;
    };
    let uncounted = status.uncounted_terminated_pods.as_ref().map_or(0, |u| {
        u.succeeded.as_ref().map_or(0, Vec::len) + u.failed.as_ref().map_or(0, Vec::len)
    });
    if uncounted > 0 || terminating > 0 {
        return false;
    }
    ensure_job_condition_status(
        status.conditions.get_or_insert_with(Vec::new),
        finished.type_.as_str(),
        CONDITION_TRUE,
        &finished.reason,
        &finished.message,
        now,
    );
    if finished.type_ == FinishedConditionType::Complete {
        status.completion_time = Some(Time(finished.at));
    }
    true
}
