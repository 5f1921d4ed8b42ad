//! The success policy of Indexed Jobs (upstream `success_policy.go`, `matchSuccessPolicy`):
//! when enough of the right indexes succeeded, the Job succeeds before every index has.
//!
//! Each rule names a set of indexes (`succeededIndexes`, the interval format of
//! `status.completedIndexes`), a count (`succeededCount`), or both: the rule is met when all
//! its indexes succeeded, or when at least `succeededCount` of them (of all indexes, without
//! `succeededIndexes`) did. The first met rule wins and its position is the condition message.

use k8s_openapi::api::batch::v1::{JobCondition, SuccessPolicy};

use super::indexes::OrderedIntervals;
use super::spec::{CONDITION_SUCCESS_CRITERIA_MET, CONDITION_TRUE, JobView, find_condition};

/// The message prefix of a met success policy (`rulesMatchedMsg`).
pub const RULES_MATCHED_MESSAGE: &str = "Matched rules at index";

/// `matchSuccessPolicy`: the `SuccessCriteriaMet` message (`Matched rules at index <i>`) of
/// the first rule the succeeded indexes meet; `None` without a policy, without any succeeded
/// index, or when no rule is met. A rule whose `succeededIndexes` parse to nothing (invalid, or
/// all at or above `completions`) is skipped.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded_indexes: &OrderedIntervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded_indexes.is_empty() {
        return None;
    }
    policy.rules.iter().enumerate().find_map(|(index, rule)| {
        let met = match rule.succeeded_indexes.as_deref() {
            Some(indexes) => {
                let required = OrderedIntervals::parse(indexes, completions);
                !required.is_empty()
                    && match_succeeded_indexes_rule(
                        &required,
                        succeeded_indexes,
                        rule.succeeded_count,
                    )
            }
            None => rule
                .succeeded_count
                .is_some_and(|count| succeeded_indexes.total() >= i64::from(count)),
        };
        met.then(|| format!("{RULES_MATCHED_MESSAGE} {index}"))
    })
}

/// `matchSucceededIndexesRule`: whether the succeeded indexes hold all of the rule's indexes,
/// or at least `succeeded_count` of them. Both lists are walked once, summing their overlap.
pub fn match_succeeded_indexes_rule(
    rule_indexes: &OrderedIntervals,
    succeeded_indexes: &OrderedIntervals,
    succeeded_count: Option<i32>,
) -> bool {
    let (rule, succeeded) = (rule_indexes.intervals(), succeeded_indexes.intervals());
    let (mut contains, mut r, mut s) = (0i64, 0, 0);
    while r < rule.len() && s < succeeded.len() {
        let overlap = rule[r]
            .last
            .min(succeeded[s].last)
            .saturating_sub(rule[r].first.max(succeeded[s].first))
            .saturating_add(1);
        if overlap > 0 {
            contains = contains.saturating_add(overlap);
        }
        if succeeded[s].last < rule[r].last {
            // The succeeded interval is behind: move to the next one.
            s += 1;
        } else if succeeded[s].last > rule[r].last {
            // The rule interval is behind: move to the next one.
            r += 1;
        } else {
            s += 1;
            r += 1;
        }
    }
    contains == rule_indexes.total()
        || succeeded_count.is_some_and(|count| contains >= i64::from(count))
}

/// `hasSuccessCriteriaMetCondition`: the Job's `SuccessCriteriaMet` condition, if it is
/// `True` (only the first condition of that type is looked at).
pub fn success_criteria_met_condition<'a>(job: &JobView<'a>) -> Option<&'a JobCondition> {
    success_criteria_met_in(job.conditions())
}

/// [`success_criteria_met_condition`] over a condition list (the working copy of a status).
pub fn success_criteria_met_in(conditions: &[JobCondition]) -> Option<&JobCondition> {
    find_condition(conditions, CONDITION_SUCCESS_CRITERIA_MET)
        .filter(|c| c.status == CONDITION_TRUE)
}
