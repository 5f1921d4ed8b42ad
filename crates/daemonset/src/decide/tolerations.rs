//! Taints against tolerations (k8s.io/api `Toleration.ToleratesTaint` and component-helpers
//! `FindMatchingUntoleratedTaint`): whether a daemon pod may be placed on, or stay on, a
//! tainted node.
//!
//! k8s-openapi leaves absent strings `None` where Go has `""`; both read as empty here.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Taint effect that keeps new pods off a node.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// Taint effect that also evicts running pods.
pub const NO_EXECUTE: &str = "NoExecute";
/// Toleration operator matching any value.
pub const OPERATOR_EXISTS: &str = "Exists";
/// Toleration operator matching one value (also what an empty operator means).
pub const OPERATOR_EQUAL: &str = "Equal";
/// Toleration operator: the taint's value is below the toleration's (comparison gate).
pub const OPERATOR_LT: &str = "Lt";
/// Toleration operator: the taint's value is above the toleration's (comparison gate).
pub const OPERATOR_GT: &str = "Gt";

fn text(value: Option<&String>) -> &str {
    value.map_or("", String::as_str)
}

/// `Toleration.ToleratesTaint`: an empty effect matches every effect; an empty key matches
/// every key; `Equal` (or no operator) needs equal values, `Exists` matches any value; `Lt` and
/// `Gt` compare the values as decimal int64s when `comparison_operators` is on
/// (`TaintTolerationComparisonOperators`) and match nothing when it is off; any other
/// operator matches nothing.
pub fn tolerates_taint(toleration: &Toleration, taint: &Taint, comparison_operators: bool) -> bool {
    let effect = text(toleration.effect.as_ref());
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = text(toleration.key.as_ref());
    if !key.is_empty() && key != taint.key {
        return false;
    }
    let toleration_value = text(toleration.value.as_ref());
    let taint_value = text(taint.value.as_ref());
    match text(toleration.operator.as_ref()) {
        "" | OPERATOR_EQUAL => toleration_value == taint_value,
        OPERATOR_EXISTS => true,
        operator @ (OPERATOR_LT | OPERATOR_GT) if comparison_operators => {
            compare_numeric_values(toleration_value, taint_value, operator)
        }
        _ => false,
    }
}

/// `compareNumericValues`: both values must be decimal integers in canonical form
/// (`content.IsDecimalInteger`: `0` or an optional `-` and a non-zero leading digit) that fit
/// an int64; `Lt` holds when the taint's value is below the toleration's, `Gt` when above.
fn compare_numeric_values(toleration_value: &str, taint_value: &str, operator: &str) -> bool {
    let (Some(toleration_value), Some(taint_value)) = (
        canonical_decimal(toleration_value),
        canonical_decimal(taint_value),
    ) else {
        return false;
    };
    match operator {
        OPERATOR_LT => taint_value < toleration_value,
        OPERATOR_GT => taint_value > toleration_value,
        _ => false,
    }
}

/// The int64 a canonical decimal integer stands for (`IsDecimalInteger`, then `ParseInt`).
fn canonical_decimal(value: &str) -> Option<i64> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    let canonical = match digits.as_bytes() {
        [] => false,
        [b'0'] => digits.len() == value.len(),
        [first, rest @ ..] => (b'1'..=b'9').contains(first) && rest.iter().all(u8::is_ascii_digit),
    };
    if canonical { value.parse().ok() } else { None }
}

/// `TolerationsTolerateTaint`: whether any of `tolerations` tolerates `taint`.
pub fn tolerations_tolerate_taint(
    tolerations: &[Toleration],
    taint: &Taint,
    comparison_operators: bool,
) -> bool {
    tolerations
        .iter()
        .any(|toleration| tolerates_taint(toleration, taint, comparison_operators))
}

/// `FindMatchingUntoleratedTaint`: the first of `taints` that `included` selects and no
/// toleration tolerates.
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    included: impl Fn(&Taint) -> bool,
    comparison_operators: bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|taint| included(taint))
        .find(|taint| !tolerations_tolerate_taint(tolerations, taint, comparison_operators))
}
