//! Pod management (spec section 7, upstream `manageJob` with `activePodsForRemoval`,
//! `getPodCreationInfoForIndependentIndexes` and the creation template): how many pods the Job
//! wants running, which to delete, how many to create and with which indexes.
//!
//! Upstream decides and acts in one function; here the decision is a [`ManagePlan`] that an
//! executor carries out (expectations, deletes with their finalizer patch, slow-start creates),
//! so every branch is table-tested. A sync either deletes or creates, never both; it creates at
//! most 500 pods, and not before the failure backoff is over. A suspended Job has all its active
//! pods deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use controller_toolkit::ranking::sort_active_pods;
use informer::CachedPod;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::jiff::Timestamp;

use super::backoff::{
    BackoffRecord, DEFAULT_JOB_POD_FAILURE_BACKOFF, MAX_JOB_POD_FAILURE_BACKOFF,
    index_failure_count_annotations, pod_creation_info_for_independent_indexes,
};
use super::indexes::{
    OrderedIntervals, PendingIndexesInput, add_completion_index,
    add_completion_index_env_variables, duplicated_index_pods_for_removal, first_pending_indexes,
    pod_generate_name_with_index, pod_hostname,
};
use super::pods::len_i32;
use super::spec::{
    JOB_TRACKING_FINALIZER, JobView, MAX_POD_CREATE_DELETE_PER_SYNC, POD_REPLACEMENT_POLICY_FAILED,
};

/// Sync action label: expectations pending, or the Job finishing (`JobSyncActionReconciling`).
pub const SYNC_ACTION_RECONCILING: &str = "reconciling";
/// Sync action label: nothing to create or delete (`JobSyncActionTracking`).
pub const SYNC_ACTION_TRACKING: &str = "tracking";
/// Sync action label: pods created, or waiting for the backoff (`JobSyncActionPodsCreated`).
pub const SYNC_ACTION_PODS_CREATED: &str = "pods_created";
/// Sync action label: pods deleted (`JobSyncActionPodsDeleted`).
pub const SYNC_ACTION_PODS_DELETED: &str = "pods_deleted";

/// `job_pods_creation_total{reason}`: first pods (`PodCreateNew`).
pub const CREATION_REASON_NEW: &str = "new";
/// `job_pods_creation_total{reason}`: replacing terminating or failed pods.
pub const CREATION_REASON_RECREATE_TERMINATING_OR_FAILED: &str = "recreate_terminating_or_failed";
/// `job_pods_creation_total{reason}`: replacing failed pods (`podReplacementPolicy: Failed`).
pub const CREATION_REASON_RECREATE_FAILED: &str = "recreate_failed";

/// What `manageJob` reads of the sync.
#[derive(Debug, Clone, Copy)]
pub struct ManageInput<'a, 'p> {
    /// The Job.
    pub job: JobView<'a>,
    /// All its pods (their terminating indexes are not pending under `onlyReplaceFailedPods`).
    pub pods: &'a [&'p CachedPod],
    /// Its active pods.
    pub active_pods: &'a [&'p CachedPod],
    /// `jobCtx.succeeded` (succeeded indexes for an Indexed Job).
    pub succeeded: i32,
    /// `jobCtx.terminating`: the terminating pods.
    pub terminating: i32,
    /// The succeeded indexes (empty for a NonIndexed Job).
    pub succeeded_indexes: &'a OrderedIntervals,
    /// The failed indexes, with `backoffLimitPerIndex`.
    pub failed_indexes: Option<&'a OrderedIntervals>,
    /// With `backoffLimitPerIndex`, the last failed pod of each index waiting for a
    /// replacement.
    pub pods_with_delayed_deletion_per_index: &'a BTreeMap<i64, &'p CachedPod>,
    /// The Job's backoff record after this sync's finished pods (`newBackoffRecord`).
    pub backoff: BackoffRecord,
    /// The clock.
    pub now: Timestamp,
}

/// What `manageJob` does.
#[derive(Debug, Clone, PartialEq)]
pub enum ManagePlan<'p> {
    /// Delete these pods (expect their deletions, remove each one's tracking finalizer, then
    /// delete it); a deleted pod leaves `active` for `terminating`. `suspended`: all active
    /// pods of a suspended Job (no cap); else the excess over the wanted active pods, at most
    /// 500.
    Delete {
        /// The pods, in deletion order.
        pods: Vec<&'p CachedPod>,
        /// Whether the Job is suspended.
        suspended: bool,
    },
    /// Create `count` pods (expect them first), in slow-start batches
    /// (`controller_toolkit::writes::slow_start`); for an Indexed Job one per index of
    /// `indexes`.
    Create {
        /// How many pods (at most 500; may be 0 for an Indexed Job without pending index).
        count: usize,
        /// The indexes, for an Indexed Job, in increasing order.
        indexes: Vec<i64>,
    },
    /// Pods are missing but the failure backoff is not over: requeue after `requeue_after`
    /// (upstream `enqueueSyncJobWithDelay`, which waits at least 1 s). Upstream's `manageJob`
    /// then reports **0** active pods, so `status.active` is written as 0 even with pods
    /// running (a quirk to reproduce).
    WaitForBackoff {
        /// The remaining backoff.
        requeue_after: Duration,
    },
    /// Nothing to create or delete.
    Nothing,
}

impl ManagePlan<'_> {
    /// The sync's `action` metrics label.
    pub fn action(&self) -> &'static str {
        match self {
            Self::Delete { .. } => SYNC_ACTION_PODS_DELETED,
            Self::Create { .. } | Self::WaitForBackoff { .. } => SYNC_ACTION_PODS_CREATED,
            Self::Nothing => SYNC_ACTION_TRACKING,
        }
    }
}

/// `wantActive`: without `completions`, `parallelism` until a pod succeeded, then the pods
/// already active (never replace after a success); with `completions`, the remaining
/// completions clamped to `0..=parallelism`.
pub fn want_active(job: &JobView<'_>, active: i32, succeeded: i32) -> i32 {
    let parallelism = job.parallelism();
    match job.completions() {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(completions) => completions.wrapping_sub(succeeded).min(parallelism).max(0),
    }
}

/// `activePodsForRemoval`: the pods to delete to remove at least `rm_at_least`. An Indexed
/// Job first removes pods without a valid index, above `completions` or duplicating another
/// pod's index (this may exceed `rm_at_least`); then the rest sorted by upstream's
/// `ActivePods` order (unscheduled, pending, not ready, ready most recently, most restarted,
/// newest first) gives the remainder.
pub fn active_pods_for_removal<'a>(
    job: &JobView<'_>,
    active_pods: &[&'a CachedPod],
    rm_at_least: usize,
) -> Vec<&'a CachedPod> {
    let (mut rm, mut left) = if job.is_indexed() {
        duplicated_index_pods_for_removal(active_pods, job.indexed_completions())
    } else {
        (Vec::new(), active_pods.to_vec())
    };
    if rm.len() < rm_at_least {
        sort_active_pods(&mut left);
        let take = (rm_at_least - rm.len()).min(left.len());
        rm.extend_from_slice(&left[..take]);
    }
    rm
}

/// `manageJob`'s decision (section 7): suspend → delete every active pod; too many active →
/// delete the excess (at most 500); too few (counting terminating pods as present when the
/// Job only replaces failed pods) → create, unless the backoff is not over, at most 500, for
/// an Indexed Job the lowest pending indexes (with `backoffLimitPerIndex`, those whose own
/// backoff is over).
pub fn plan_manage<'p>(input: &ManageInput<'_, 'p>) -> ManagePlan<'p> {
    let job = &input.job;
    let active = len_i32(input.active_pods.len());
    if job.is_suspended() {
        return ManagePlan::Delete {
            pods: active_pods_for_removal(job, input.active_pods, input.active_pods.len()),
            suspended: true,
        };
    }

    let want = want_active(job, active, input.succeeded);
    let rm_at_least = usize::try_from(active.wrapping_sub(want)).unwrap_or(0);
    let mut to_delete = active_pods_for_removal(job, input.active_pods, rm_at_least);
    to_delete.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
    if !to_delete.is_empty() {
        return ManagePlan::Delete {
            pods: to_delete,
            suspended: false,
        };
    }

    let terminating = if job.only_replace_failed_pods() {
        input.terminating
    } else {
        0
    };
    let diff = want.wrapping_sub(terminating).wrapping_sub(active);
    if diff <= 0 {
        return ManagePlan::Nothing;
    }
    if !job.has_backoff_limit_per_index() {
        let remaining = input.backoff.remaining_time(
            input.now,
            DEFAULT_JOB_POD_FAILURE_BACKOFF,
            MAX_JOB_POD_FAILURE_BACKOFF,
        );
        if !remaining.is_zero() {
            return ManagePlan::WaitForBackoff {
                requeue_after: remaining,
            };
        }
    }
    let count = usize::try_from(diff)
        .unwrap_or(0)
        .min(MAX_POD_CREATE_DELETE_PER_SYNC);
    if !job.is_indexed() {
        return ManagePlan::Create {
            count,
            indexes: Vec::new(),
        };
    }
    let mut indexes = first_pending_indexes(
        &PendingIndexesInput {
            job: *job,
            active_pods: input.active_pods,
            pods: input.pods,
            succeeded_indexes: input.succeeded_indexes,
            failed_indexes: input.failed_indexes,
        },
        count,
        job.indexed_completions(),
    );
    if job.has_backoff_limit_per_index() {
        let (ready, remaining) = pod_creation_info_for_independent_indexes(
            &indexes,
            input.pods_with_delayed_deletion_per_index,
            input.now,
        );
        if !remaining.is_zero() {
            return ManagePlan::WaitForBackoff {
                requeue_after: remaining,
            };
        }
        indexes = ready;
    }
    ManagePlan::Create {
        count: indexes.len(),
        indexes,
    }
}

/// `recordJobPodsCreationTotal`'s `reason` label: `recreate_failed` when
/// `podReplacementPolicy` is `Failed` and pods failed; else `recreate_terminating_or_failed`
/// when pods failed or are terminating; else `new`.
pub fn pods_creation_reason(job: &JobView<'_>, failed: i32, terminating: i32) -> &'static str {
    if job.pod_replacement_policy() == Some(POD_REPLACEMENT_POLICY_FAILED) && failed > 0 {
        CREATION_REASON_RECREATE_FAILED
    } else if failed > 0 || terminating > 0 {
        CREATION_REASON_RECREATE_TERMINATING_OR_FAILED
    } else {
        CREATION_REASON_NEW
    }
}

/// The template every pod of this sync is created from (`manageJob` step 7): a copy of
/// `spec.template`, with (Indexed) the `JOB_COMPLETION_INDEX` variable in every container and
/// the tracking finalizer.
pub fn pod_template(job: &JobView<'_>) -> PodTemplateSpec {
    let mut template = job
        .job()
        .spec
        .as_ref()
        .map(|spec| spec.template.clone())
        .unwrap_or_default();
    if job.is_indexed() {
        add_completion_index_env_variables(&mut template);
    }
    let finalizers = template
        .metadata
        .get_or_insert_with(Default::default)
        .finalizers
        .get_or_insert_with(Vec::new);
    if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
        finalizers.push(JOB_TRACKING_FINALIZER.to_owned());
    }
    template
}

/// One pod of an Indexed Job to create.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedPod {
    /// Its template.
    pub template: PodTemplateSpec,
    /// Its `generateName` (`<job>-<index>-`).
    pub generate_name: String,
}

/// The pod of `index` (`manageJob` step 8): [`pod_template`]'s copy with the completion index
/// annotation and label, the hostname `<job>-<index>` and, with `backoffLimitPerIndex`, the
/// failure-count annotations inherited from `pod_being_replaced` (the index's delayed-deletion
/// pod).
pub fn indexed_pod(
    base: &PodTemplateSpec,
    job: &JobView<'_>,
    index: i64,
    pod_being_replaced: Option<&CachedPod>,
) -> IndexedPod {
    let mut template = base.clone();
    add_completion_index(&mut template, index);
    template.spec.get_or_insert_with(Default::default).hostname =
        Some(pod_hostname(job.name(), index));
    if job.has_backoff_limit_per_index() {
        let annotations = template
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .get_or_insert_with(Default::default);
        for (key, value) in index_failure_count_annotations(job, pod_being_replaced) {
            annotations.insert(key.to_owned(), value);
        }
    }
    IndexedPod {
        template,
        generate_name: pod_generate_name_with_index(job.name(), index),
    }
}
