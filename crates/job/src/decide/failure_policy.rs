//! The pod failure policy (upstream `pod_failure_policy.go`, `matchPodFailurePolicy`): what a
//! failed pod means for its Job.
//!
//! A Job may say, per exit code or per pod condition, that a failure fails the whole Job
//! (`FailJob`), fails only the pod's index (`FailIndex`), does not count against the backoff
//! limits (`Ignore`, e.g. for a pod evicted with `DisruptionTarget`) or counts as usual
//! (`Count`). The rules are tried in order and the first match wins. The same answer drives the
//! failed count, the `FailJob` end state, the failed indexes, the per-index failure-count
//! annotations and the `pod_failures_handled_by_failure_policy_total` metric, so it is computed
//! in this one place.

use informer::{CachedContainerStatus, CachedPod};
use k8s_openapi::api::batch::v1::{
    PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern,
};

use super::pods::{container_statuses, init_container_statuses, is_pod_failed, name, namespace};
use super::spec::JobView;
use super::types::PolicyAction;

/// `onExitCodes.operator` matching exit codes in the values.
pub const OPERATOR_IN: &str = "In";
/// `onExitCodes.operator` matching exit codes not in the values.
pub const OPERATOR_NOT_IN: &str = "NotIn";

/// `onPodConditions[].status` when unset (the API default).
pub const PATTERN_STATUS_DEFAULT: &str = "True";

/// What a failed pod means under the policy (`matchPodFailurePolicy`'s three results).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyMatch {
    /// The Job failure message, when the pod matched a `FailJob` rule.
    pub fail_job_message: Option<String>,
    /// Whether the failure counts against `backoffLimit` (and `backoffLimitPerIndex`): false
    /// only for an `Ignore` match.
    pub count_failed: bool,
    /// The action of the matching rule, if any rule matched.
    pub action: Option<PolicyAction>,
    /// The index of the matching rule in `spec.podFailurePolicy.rules`, if any.
    pub rule_index: Option<usize>,
}

impl PolicyMatch {
    /// No rule matched (or there is no policy): the failure counts.
    pub fn no_match() -> Self {
        Self {
            fail_job_message: None,
            count_failed: true,
            action: None,
            rule_index: None,
        }
    }
}

/// `matchPodFailurePolicy`: matches a failed pod against the policy's rules in order.
///
/// A rule with `onExitCodes` looks for a terminated container with a non-zero exit code,
/// among the app containers first and then the init containers (`matchOnExitCodes`); a rule
/// with `onPodConditions` (and no `onExitCodes`) looks for a pod condition whose type and
/// status equal a pattern's (`matchOnPodConditions`). A matching rule with an action the
/// controller does not know is skipped and the next rule is tried. Without a policy, or when
/// no rule matches, the failure counts.
///
/// Exact for any cached pod but in one part of one case: a pod that has not finished (which
/// only a failing Job matches, for the action and whether the failure counts) whose matching
/// `onPodConditions` rule matches both a kubelet `True` condition (the cache keeps those by
/// type only) and another condition: the `FailJob` message may name the other one first.
pub fn match_pod_failure_policy(policy: Option<&PodFailurePolicy>, pod: &CachedPod) -> PolicyMatch {
    let Some(policy) = policy else {
        return PolicyMatch::no_match();
    };
    for (index, rule) in policy.rules.iter().enumerate() {
        // What matched: the terminated container, or the pod condition.
        let matched = if let Some(requirement) = rule.on_exit_codes.as_ref() {
            match match_on_exit_codes(pod, requirement) {
                Some(status) => Matched::Container(status),
                None => continue,
            }
        } else if let Some(patterns) = rule.on_pod_conditions.as_deref() {
            match match_on_pod_conditions(pod, patterns) {
                Some(condition) => Matched::Condition(condition),
                None => continue,
            }
        } else {
            continue;
        };
        let Some(action) = PolicyAction::parse(&rule.action) else {
            continue;
        };
        let fail_job_message = (action == PolicyAction::FailJob).then(|| match matched {
            Matched::Container(status) => format!(
                "Container {} for pod {}/{} failed with exit code {} matching {} rule at index {}",
                status.name,
                namespace(pod),
                name(pod),
                exit_code(status),
                action,
                index
            ),
            Matched::Condition(condition_type) => format!(
                "Pod {}/{} has condition {} matching {} rule at index {}",
                namespace(pod),
                name(pod),
                condition_type,
                action,
                index
            ),
        });
        return PolicyMatch {
            fail_job_message,
            count_failed: action != PolicyAction::Ignore,
            action: Some(action),
            rule_index: Some(index),
        };
    }
    PolicyMatch::no_match()
}

/// What a rule matched: the terminated container, or the type of the pod condition.
enum Matched<'p> {
    Container(&'p CachedContainerStatus),
    Condition(&'p str),
}

fn exit_code(status: &CachedContainerStatus) -> i32 {
    status.terminated.as_ref().map_or(0, |t| t.exit_code)
}

/// `matchOnExitCodes`: the first matching terminated container among the app containers,
/// else among the init containers.
fn match_on_exit_codes<'p>(
    pod: &'p CachedPod,
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'p CachedContainerStatus> {
    matching_container(container_statuses(pod), requirement)
        .or_else(|| matching_container(init_container_statuses(pod), requirement))
}

/// `getMatchingContainerFromList`: the first container that terminated with a non-zero exit
/// code, has the required name (if one is required) and matches the operator. A container
/// that exited 0 never matches, not even `NotIn [1]`.
fn matching_container<'p>(
    statuses: &'p [CachedContainerStatus],
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> Option<&'p CachedContainerStatus> {
    statuses.iter().find(|status| {
        let Some(terminated) = status.terminated.as_ref() else {
            // Still running or waiting: there is no exit code to match.
            return false;
        };
        requirement
            .container_name
            .as_deref()
            .is_none_or(|wanted| wanted == status.name)
            && terminated.exit_code != 0
            && is_on_exit_codes_operator_matching(terminated.exit_code, requirement)
    })
}

/// `isOnExitCodesOperatorMatching`: `In` matches a code in the values, `NotIn` one outside
/// them; any other operator matches nothing.
fn is_on_exit_codes_operator_matching(
    exit_code: i32,
    requirement: &PodFailurePolicyOnExitCodesRequirement,
) -> bool {
    let listed = requirement.values.contains(&exit_code);
    match requirement.operator.as_str() {
        OPERATOR_IN => listed,
        OPERATOR_NOT_IN => !listed,
        _ => false,
    }
}

/// `matchOnPodConditions`: the type of the first pod condition (in the pod's order) whose type
/// and status equal one of the patterns'. A pattern without a status reads as `True`, the
/// value the API server defaults it to.
///
/// The cached pod has every condition by type and status
/// (`CachedPodStatus::condition_statuses`), so whether a rule matches is exact for any pod. The
/// order is the pod's for a pod in a terminal phase; a pod that has not finished lists the
/// kubelet's `True` conditions (not kept) after the others, so when a rule matches both kinds
/// the type named may not be upstream's. Only the `FailJob` message names it, and it is read
/// for failed pods only ([`fail_job_message`]: with a policy, `Failed` ones).
fn match_on_pod_conditions<'p>(
    pod: &'p CachedPod,
    patterns: &[PodFailurePolicyOnPodConditionsPattern],
) -> Option<&'p str> {
    pod.status
        .as_ref()?
        .condition_statuses()
        .find(|(type_, status)| {
            patterns.iter().any(|p| {
                p.type_ == *type_
                    && p.status.as_deref().unwrap_or(PATTERN_STATUS_DEFAULT) == *status
            })
        })
        .map(|(type_, _)| type_)
}

/// `getFailJobMessage`: the `FailJob` message of the first pod that is failed
/// ([`is_pod_failed`]) and matches a `FailJob` rule, among all of the Job's pods (counted ones
/// still present included); `None` without a policy.
pub fn fail_job_message(job: &JobView<'_>, pods: &[&CachedPod]) -> Option<String> {
    let policy = job.pod_failure_policy()?;
    pods.iter()
        .filter(|pod| is_pod_failed(pod, job))
        .find_map(|pod| match_pod_failure_policy(Some(policy), pod).fail_job_message)
}

/// `nonIgnoredFailedPodsCount`: how many of the newly failed pods count, i.e. did not match an
/// `Ignore` rule.
pub fn non_ignored_failed_pods_count(job: &JobView<'_>, failed_pods: &[&CachedPod]) -> usize {
    match job.pod_failure_policy() {
        None => failed_pods.len(),
        Some(policy) => failed_pods
            .iter()
            .filter(|pod| match_pod_failure_policy(Some(policy), pod).count_failed)
            .count(),
    }
}
