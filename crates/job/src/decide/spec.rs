//! The Job's fields as upstream reads them, and the well-known names of `batch/v1`.
//!
//! Upstream dereferences pointers the API server defaulted (`*job.Spec.BackoffLimit`,
//! `*job.Spec.Parallelism`, `*job.Spec.Completions` of an Indexed Job) and reads Go zero values
//! for what is unset; k8s-openapi leaves all of these `Option`. [`JobView`] answers each read
//! once, with the API default or the zero value upstream would see, so every decision module
//! reads the Job alike and none of them unwraps. It also holds the v1.36 feature-gate answers
//! that matter here: every gate the Job controller checks is on and locked in v1.36
//! (`JobPodFailurePolicy`, `JobBackoffLimitPerIndex`, `JobSuccessPolicy`,
//! `JobPodReplacementPolicy`, `JobManagedBy`, `PodIndexLabel`), so the view has no gate inputs.

use k8s_openapi::api::batch::v1::{
    Job, JobCondition, JobSpec, JobStatus, PodFailurePolicy, SuccessPolicy,
};
use k8s_openapi::jiff::Timestamp;

/// The pod finalizer the controller puts on every pod it creates or adopts
/// (`batch.JobTrackingFinalizer`); a finished pod is counted once its finalizer is removed.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The pod annotation (and label) holding an Indexed Job pod's completion index
/// (`batch.JobCompletionIndexAnnotation`).
pub const JOB_COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The pod annotation counting the failures of an index before this pod
/// (`batch.JobIndexFailureCountAnnotation`), written with `backoffLimitPerIndex`.
pub const JOB_INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// The pod annotation counting the failures of an index that matched an `Ignore` rule
/// (`batch.JobIndexIgnoredFailureCountAnnotation`), written only when non-zero.
pub const JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
/// The environment variable every container of an Indexed Job pod gets
/// (`completionIndexEnvName`).
pub const COMPLETION_INDEX_ENV_NAME: &str = "JOB_COMPLETION_INDEX";
/// The reserved `spec.managedBy` value naming this controller (`batch.JobControllerName`).
pub const JOB_CONTROLLER_NAME: &str = "kubernetes.io/job-controller";

/// `spec.completionMode` of an Indexed Job (`batch.IndexedCompletion`).
pub const INDEXED_COMPLETION: &str = "Indexed";
/// `spec.completionMode` of a NonIndexed Job (`batch.NonIndexedCompletion`), the default.
pub const NON_INDEXED_COMPLETION: &str = "NonIndexed";
/// `spec.podReplacementPolicy` replacing pods only once they reached `Failed` (`batch.Failed`).
pub const POD_REPLACEMENT_POLICY_FAILED: &str = "Failed";
/// `spec.podReplacementPolicy` replacing terminating pods too (`batch.TerminatingOrFailed`),
/// the default without a pod failure policy.
pub const POD_REPLACEMENT_POLICY_TERMINATING_OR_FAILED: &str = "TerminatingOrFailed";
/// The pod template's `restartPolicy` under which container restarts count against
/// `backoffLimit` (`v1.RestartPolicyOnFailure`).
pub const RESTART_POLICY_ON_FAILURE: &str = "OnFailure";

/// `spec.backoffLimit` when unset (the API default).
pub const DEFAULT_BACKOFF_LIMIT: i32 = 6;
/// `spec.parallelism` when unset (the API default).
pub const DEFAULT_PARALLELISM: i32 = 1;
/// The cap on UIDs and new indexes added to `status.uncountedTerminatedPods` in one sync
/// (`MaxUncountedPods`).
pub const MAX_UNCOUNTED_PODS: usize = 500;
/// The cap on pod creations or deletions in one `manageJob` call (`MaxPodCreateDeletePerSync`).
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// Job condition type `Complete`.
pub const CONDITION_COMPLETE: &str = "Complete";
/// Job condition type `Failed`.
pub const CONDITION_FAILED: &str = "Failed";
/// Job condition type `Suspended`.
pub const CONDITION_SUSPENDED: &str = "Suspended";
/// Job condition type `FailureTarget`: the interim condition recorded before the pods are
/// cleaned up and `Failed` is written.
pub const CONDITION_FAILURE_TARGET: &str = "FailureTarget";
/// Job condition type `SuccessCriteriaMet`: the interim condition recorded before the pods are
/// cleaned up and `Complete` is written.
pub const CONDITION_SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
/// Condition status `True`.
pub const CONDITION_TRUE: &str = "True";
/// Condition status `False`.
pub const CONDITION_FALSE: &str = "False";

/// Reason: a pod matched a `FailJob` rule (`batch.JobReasonPodFailurePolicy`).
pub const REASON_POD_FAILURE_POLICY: &str = "PodFailurePolicy";
/// Reason: too many failures (`batch.JobReasonBackoffLimitExceeded`).
pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
/// Reason: `activeDeadlineSeconds` passed (`batch.JobReasonDeadlineExceeded`).
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// Reason: more failed indexes than `maxFailedIndexes` (`batch.JobReasonMaxFailedIndexesExceeded`).
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
/// Reason: every index finished and some failed (`batch.JobReasonFailedIndexes`).
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
/// Reason: a success policy rule matched (`batch.JobReasonSuccessPolicy`).
pub const REASON_SUCCESS_POLICY: &str = "SuccessPolicy";
/// Reason: `completions` pods succeeded (`batch.JobReasonCompletionsReached`).
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
/// Reason of the `Suspended=True` condition.
pub const REASON_JOB_SUSPENDED: &str = "JobSuspended";
/// Reason of the `Suspended=False` condition.
pub const REASON_JOB_RESUMED: &str = "JobResumed";

/// Message of [`REASON_BACKOFF_LIMIT_EXCEEDED`].
pub const MESSAGE_BACKOFF_LIMIT_EXCEEDED: &str = "Job has reached the specified backoff limit";
/// Message of [`REASON_DEADLINE_EXCEEDED`].
pub const MESSAGE_DEADLINE_EXCEEDED: &str = "Job was active longer than specified deadline";
/// Message of [`REASON_MAX_FAILED_INDEXES_EXCEEDED`].
pub const MESSAGE_MAX_FAILED_INDEXES_EXCEEDED: &str =
    "Job has exceeded the specified maximal number of failed indexes";
/// Message of [`REASON_FAILED_INDEXES`].
pub const MESSAGE_FAILED_INDEXES: &str = "Job has failed indexes";
/// Message of [`REASON_COMPLETIONS_REACHED`].
pub const MESSAGE_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";
/// Message of the `Suspended=True` condition (and of the `Suspended` event).
pub const MESSAGE_JOB_SUSPENDED: &str = "Job suspended";
/// Message of the `Suspended=False` condition (and of the `Resumed` event).
pub const MESSAGE_JOB_RESUMED: &str = "Job resumed";

/// A read-only view of a Job answering each field as upstream reads it.
#[derive(Debug, Clone, Copy)]
pub struct JobView<'a> {
    job: &'a Job,
}

impl<'a> JobView<'a> {
    /// A view of `job`.
    pub fn new(job: &'a Job) -> Self {
        Self { job }
    }

    /// The Job itself.
    pub fn job(&self) -> &'a Job {
        self.job
    }

    fn spec(&self) -> Option<&'a JobSpec> {
        self.job.spec.as_ref()
    }

    fn status(&self) -> Option<&'a JobStatus> {
        self.job.status.as_ref()
    }

    /// `metadata.name`, `""` when unset.
    pub fn name(&self) -> &'a str {
        self.job.metadata.name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace`, `""` when unset.
    pub fn namespace(&self) -> &'a str {
        self.job.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// `metadata.uid`, `""` when unset.
    pub fn uid(&self) -> &'a str {
        self.job.metadata.uid.as_deref().unwrap_or_default()
    }

    /// Whether the Job has a `deletionTimestamp` (it is being deleted: every finalizer may go).
    pub fn is_being_deleted(&self) -> bool {
        self.job.metadata.deletion_timestamp.is_some()
    }

    /// `spec.completionMode` as written, `None` when unset (NonIndexed).
    pub fn completion_mode(&self) -> Option<&'a str> {
        self.spec()?.completion_mode.as_deref()
    }

    /// `isIndexedJob`: `completionMode` is `Indexed`.
    pub fn is_indexed(&self) -> bool {
        self.completion_mode() == Some(INDEXED_COMPLETION)
    }

    /// Whether the completion mode is one the controller knows (unset, `NonIndexed` or
    /// `Indexed`); upstream skips the sync with an `UnknownCompletionMode` event otherwise.
    pub fn has_known_completion_mode(&self) -> bool {
        matches!(
            self.completion_mode(),
            None | Some(INDEXED_COMPLETION) | Some(NON_INDEXED_COMPLETION)
        )
    }

    /// The completion mode as a metrics label (`completionModeStr`): `NonIndexed` when unset.
    pub fn completion_mode_label(&self) -> &'a str {
        self.completion_mode().unwrap_or(NON_INDEXED_COMPLETION)
    }

    /// `spec.completions`, `None` when unset (a Job done at its first success).
    pub fn completions(&self) -> Option<i32> {
        self.spec()?.completions
    }

    /// `*job.Spec.Completions` as the index rules read it: the API requires it for Indexed
    /// Jobs; an unset value (which would panic upstream) reads as 0, so no index is valid.
    pub fn indexed_completions(&self) -> i32 {
        self.completions().unwrap_or(0)
    }

    /// `spec.parallelism`, [`DEFAULT_PARALLELISM`] when unset (the API default).
    pub fn parallelism(&self) -> i32 {
        self.spec()
            .and_then(|spec| spec.parallelism)
            .unwrap_or(DEFAULT_PARALLELISM)
    }

    /// `spec.backoffLimit` as defaulted by the API server: [`DEFAULT_BACKOFF_LIMIT`], or
    /// `i32::MAX` when `backoffLimitPerIndex` is set (then only the per-index limit applies).
    pub fn backoff_limit(&self) -> i32 {
        match self.spec().and_then(|spec| spec.backoff_limit) {
            Some(limit) => limit,
            None if self.has_backoff_limit_per_index() => i32::MAX,
            None => DEFAULT_BACKOFF_LIMIT,
        }
    }

    /// `spec.backoffLimitPerIndex`, if set.
    pub fn backoff_limit_per_index(&self) -> Option<i32> {
        self.spec()?.backoff_limit_per_index
    }

    /// `hasBackoffLimitPerIndex`: `backoffLimitPerIndex` is set (the gate is GA and on).
    pub fn has_backoff_limit_per_index(&self) -> bool {
        self.backoff_limit_per_index().is_some()
    }

    /// `spec.maxFailedIndexes`, if set.
    pub fn max_failed_indexes(&self) -> Option<i32> {
        self.spec()?.max_failed_indexes
    }

    /// `spec.activeDeadlineSeconds`, if set.
    pub fn active_deadline_seconds(&self) -> Option<i64> {
        self.spec()?.active_deadline_seconds
    }

    /// `jobSuspended`: `spec.suspend` is true.
    pub fn is_suspended(&self) -> bool {
        self.spec().and_then(|spec| spec.suspend).unwrap_or(false)
    }

    /// `spec.podFailurePolicy`, if set.
    pub fn pod_failure_policy(&self) -> Option<&'a PodFailurePolicy> {
        self.spec()?.pod_failure_policy.as_ref()
    }

    /// `spec.successPolicy`, if set.
    pub fn success_policy(&self) -> Option<&'a SuccessPolicy> {
        self.spec()?.success_policy.as_ref()
    }

    /// `spec.podReplacementPolicy` as written, `None` when unset.
    pub fn pod_replacement_policy(&self) -> Option<&'a str> {
        self.spec()?.pod_replacement_policy.as_deref()
    }

    /// `onlyReplaceFailedPods`: `podReplacementPolicy` is `Failed` or a pod failure policy is
    /// set. Then pods are replaced only once they reach `Failed`, terminating pods count
    /// against the wanted active pods, and a deleted but still running pod is not failed.
    pub fn only_replace_failed_pods(&self) -> bool {
        self.pod_replacement_policy() == Some(POD_REPLACEMENT_POLICY_FAILED)
            || self.pod_failure_policy().is_some()
    }

    /// The pod template's `spec.restartPolicy`, `""` when unset.
    pub fn template_restart_policy(&self) -> &'a str {
        self.spec()
            .and_then(|spec| spec.template.spec.as_ref())
            .and_then(|pod_spec| pod_spec.restart_policy.as_deref())
            .unwrap_or_default()
    }

    /// `spec.managedBy`, if set.
    pub fn managed_by(&self) -> Option<&'a str> {
        self.spec()?.managed_by.as_deref()
    }

    /// `managedByExternalController`: `spec.managedBy` is set to another value than
    /// [`JOB_CONTROLLER_NAME`]; such Jobs are left to their controller.
    pub fn managed_by_external_controller(&self) -> Option<&'a str> {
        self.managed_by()
            .filter(|name| *name != JOB_CONTROLLER_NAME)
    }

    /// `status.active`, 0 when unset.
    pub fn status_active(&self) -> i32 {
        self.status().and_then(|s| s.active).unwrap_or(0)
    }

    /// `status.ready`, `None` when unset (upstream compares the pointer).
    pub fn status_ready(&self) -> Option<i32> {
        self.status()?.ready
    }

    /// `status.terminating`, `None` when unset (upstream compares the pointer).
    pub fn status_terminating(&self) -> Option<i32> {
        self.status()?.terminating
    }

    /// `status.succeeded`, 0 when unset.
    pub fn status_succeeded(&self) -> i32 {
        self.status().and_then(|s| s.succeeded).unwrap_or(0)
    }

    /// `status.failed`, 0 when unset.
    pub fn status_failed(&self) -> i32 {
        self.status().and_then(|s| s.failed).unwrap_or(0)
    }

    /// `status.completedIndexes`, `""` when unset.
    pub fn completed_indexes(&self) -> &'a str {
        self.status()
            .and_then(|s| s.completed_indexes.as_deref())
            .unwrap_or_default()
    }

    /// `status.failedIndexes`, `None` when unset (upstream keeps the pointer: `""` differs
    /// from unset).
    pub fn failed_indexes(&self) -> Option<&'a str> {
        self.status()?.failed_indexes.as_deref()
    }

    /// `status.startTime`, if set.
    pub fn start_time(&self) -> Option<Timestamp> {
        self.status()?.start_time.as_ref().map(|time| time.0)
    }

    /// `status.conditions`, empty when unset.
    pub fn conditions(&self) -> &'a [JobCondition] {
        self.status()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }

    /// `status.uncountedTerminatedPods.succeeded`, empty when unset.
    pub fn uncounted_succeeded(&self) -> &'a [String] {
        self.status()
            .and_then(|s| s.uncounted_terminated_pods.as_ref())
            .and_then(|u| u.succeeded.as_deref())
            .unwrap_or_default()
    }

    /// `status.uncountedTerminatedPods.failed`, empty when unset.
    pub fn uncounted_failed(&self) -> &'a [String] {
        self.status()
            .and_then(|s| s.uncounted_terminated_pods.as_ref())
            .and_then(|u| u.failed.as_deref())
            .unwrap_or_default()
    }

    /// `findConditionByType`: the first condition of `type_`.
    pub fn find_condition(&self, type_: &str) -> Option<&'a JobCondition> {
        find_condition(self.conditions(), type_)
    }

    /// Whether the Job has a condition of `type_` with status `True`.
    pub fn has_true_condition(&self, type_: &str) -> bool {
        self.find_condition(type_)
            .is_some_and(|c| c.status == CONDITION_TRUE)
    }

    /// `util.IsJobFinished`: a `Complete` or `Failed` condition with status `True` (any of
    /// them, not only the first of each type).
    pub fn is_finished(&self) -> bool {
        self.conditions().iter().any(|c| {
            (c.type_ == CONDITION_COMPLETE || c.type_ == CONDITION_FAILED)
                && c.status == CONDITION_TRUE
        })
    }
}

/// `findConditionByType`: the first condition of `type_` in `conditions`.
pub fn find_condition<'c>(conditions: &'c [JobCondition], type_: &str) -> Option<&'c JobCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}
