//! The values several decision modules share: the condition that finishes a Job, the uncounted
//! pod UID sets, the pod failure policy actions, and the condition-list helpers
//! (`newCondition`, `ensureJobConditionStatus`).
//!
//! They live here, under every module that uses them, so that `end_state` (which produces a
//! [`FinishedCondition`]) and `tracking` (which consumes it) do not import each other, and
//! `failure_policy`, `indexes` and `tracking` share one [`PolicyAction`].

use std::collections::BTreeSet;
use std::fmt;

use k8s_openapi::api::batch::v1::JobCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::spec::{
    CONDITION_COMPLETE, CONDITION_FAILED, CONDITION_FAILURE_TARGET, CONDITION_FALSE,
    CONDITION_SUCCESS_CRITERIA_MET, CONDITION_TRUE, JobView,
};

/// A set of pod UIDs (ordered, so plans built from it are deterministic).
pub type UidSet = BTreeSet<String>;

/// The type of a condition that finishes a Job: an interim one recorded while the pods are
/// cleaned up, or the terminal one written once none is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishedConditionType {
    /// `FailureTarget`: the Job will fail.
    FailureTarget,
    /// `Failed`: the Job failed.
    Failed,
    /// `SuccessCriteriaMet`: the Job will complete.
    SuccessCriteriaMet,
    /// `Complete`: the Job completed.
    Complete,
}

impl FinishedConditionType {
    /// The condition type as written in `status.conditions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailureTarget => CONDITION_FAILURE_TARGET,
            Self::Failed => CONDITION_FAILED,
            Self::SuccessCriteriaMet => CONDITION_SUCCESS_CRITERIA_MET,
            Self::Complete => CONDITION_COMPLETE,
        }
    }

    /// Whether the Job succeeds (`SuccessCriteriaMet` or `Complete`).
    pub fn is_success(self) -> bool {
        matches!(self, Self::SuccessCriteriaMet | Self::Complete)
    }

    /// The terminal type an interim one becomes (`FailureTarget` → `Failed`,
    /// `SuccessCriteriaMet` → `Complete`); terminal types stay.
    pub fn terminal(self) -> Self {
        match self {
            Self::FailureTarget | Self::Failed => Self::Failed,
            Self::SuccessCriteriaMet | Self::Complete => Self::Complete,
        }
    }
}

impl fmt::Display for FinishedConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The condition that finishes a Job (upstream's `jobCtx.finishedCondition`): always status
/// `True`, with a reason, a message and the time it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinishedCondition {
    /// The condition type.
    pub type_: FinishedConditionType,
    /// The reason (e.g. `BackoffLimitExceeded`).
    pub reason: String,
    /// The human-readable message.
    pub message: String,
    /// When the condition was made (its `lastProbeTime` and `lastTransitionTime`).
    pub at: Timestamp,
}

impl FinishedCondition {
    /// A condition of `type_` made at `at`.
    pub fn new(
        type_: FinishedConditionType,
        reason: impl Into<String>,
        message: impl Into<String>,
        at: Timestamp,
    ) -> Self {
        Self {
            type_,
            reason: reason.into(),
            message: message.into(),
            at,
        }
    }

    /// `isSuccessCriteriaMetCondition`.
    pub fn is_success_criteria_met(&self) -> bool {
        self.type_ == FinishedConditionType::SuccessCriteriaMet
    }

    /// The terminal condition this one becomes at `now`, same reason and message
    /// (`newFailedConditionForFailureTarget`, and the `Complete` made from
    /// `SuccessCriteriaMet`).
    pub fn to_terminal(&self, now: Timestamp) -> Self {
        Self::new(self.type_.terminal(), &*self.reason, &*self.message, now)
    }

    /// The condition as written in `status.conditions` (`newCondition`).
    pub fn to_job_condition(&self) -> JobCondition {
        new_condition(
            self.type_.as_str(),
            CONDITION_TRUE,
            &self.reason,
            &self.message,
            self.at,
        )
    }
}

/// The UIDs of `status.uncountedTerminatedPods` as read at the start of a sync
/// (`newUncountedTerminatedPods`): finished pods already recorded, whose finalizer removal is
/// pending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UncountedUids {
    /// `uncountedTerminatedPods.succeeded`.
    pub succeeded: UidSet,
    /// `uncountedTerminatedPods.failed`.
    pub failed: UidSet,
}

impl UncountedUids {
    /// The uncounted UIDs of `job`'s status.
    pub fn from_job(job: &JobView<'_>) -> Self {
        Self {
            succeeded: job.uncounted_succeeded().iter().cloned().collect(),
            failed: job.uncounted_failed().iter().cloned().collect(),
        }
    }
}

/// A pod failure policy rule's action (`batch.PodFailurePolicyAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyAction {
    /// `FailJob`: fail the whole Job.
    FailJob,
    /// `FailIndex`: fail the pod's index (with `backoffLimitPerIndex`).
    FailIndex,
    /// `Ignore`: do not count the failure.
    Ignore,
    /// `Count`: count the failure as usual.
    Count,
}

impl PolicyAction {
    /// The action as written in the policy and in the
    /// `pod_failures_handled_by_failure_policy_total{action}` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FailJob => "FailJob",
            Self::FailIndex => "FailIndex",
            Self::Ignore => "Ignore",
            Self::Count => "Count",
        }
    }

    /// The action written as `value`; `None` for an action the controller does not know
    /// (such a rule matches nothing).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "FailJob" => Some(Self::FailJob),
            "FailIndex" => Some(Self::FailIndex),
            "Ignore" => Some(Self::Ignore),
            "Count" => Some(Self::Count),
            _ => None,
        }
    }
}

impl fmt::Display for PolicyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `newCondition`: a Job condition probed and transitioned at `now`. An empty reason or
/// message is left unset, as Go's `omitempty` writes it.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: non_empty(reason),
        message: non_empty(message),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_owned())
}

/// `ensureJobConditionStatus`: makes the condition of `type_` have `status`, `reason` and
/// `message`. An existing condition that differs in any of them is replaced in place by a
/// fresh one (new timestamps); an identical one is left alone; an absent one is appended only
/// when `status` is not `False` (going from nothing to `False` means nothing). Returns whether
/// the list changed.
pub fn ensure_job_condition_status(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    // `findConditionByType`: the first condition of the type.
    if let Some(position) = conditions.iter().position(|c| c.type_ == type_) {
        let existing = &conditions[position];
        if existing.status != status
            || existing.reason.as_deref().unwrap_or_default() != reason
            || existing.message.as_deref().unwrap_or_default() != message
        {
            conditions[position] = new_condition(type_, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status != CONDITION_FALSE {
        conditions.push(new_condition(type_, status, reason, message, now));
        return true;
    }
    false
}
