//! `Toleration.ToleratesTaint` (the cases of k8s.io/api's `TestTolerationToleratesTaint`,
//! with and without `TaintTolerationComparisonOperators`) and `FindMatchingUntoleratedTaint`.

use k8s_openapi::api::core::v1::{Taint, Toleration};
use serde_json::{Value, json};

use crate::decide::tolerations::{find_untolerated_taint, tolerates_taint};

fn toleration(value: Value) -> Toleration {
    serde_json::from_value(value).expect("a valid toleration")
}

fn taint(value: Value) -> Taint {
    serde_json::from_value(value).expect("a valid taint")
}

#[test]
fn tolerates_taint_cases() {
    // (rule, toleration, taint, tolerated without the comparison gate, with it)
    let cases = [
        (
            "same key and effect, Exists, taint without value: tolerated",
            json!({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}),
            json!({"key": "foo", "effect": "NoSchedule"}),
            true,
            true,
        ),
        (
            "same key and effect, Exists, taint with a value: tolerated",
            json!({"key": "foo", "operator": "Exists", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
            true,
            true,
        ),
        (
            "empty key with Exists matches every key",
            json!({"operator": "Exists", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
            true,
            true,
        ),
        (
            "empty effect matches every effect",
            json!({"key": "foo", "operator": "Exists"}),
            json!({"key": "foo", "effect": "NoExecute"}),
            true,
            true,
        ),
        (
            "same key, effect and value, Equal: tolerated",
            json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
            true,
            true,
        ),
        (
            "empty operator means Equal",
            json!({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "bar", "effect": "NoSchedule"}),
            true,
            true,
        ),
        (
            "same key and effect, different values, Equal: not tolerated",
            json!({"key": "foo", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "value2", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "same key and value, different effects: not tolerated",
            json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "bar", "effect": "NoExecute"}),
            false,
            false,
        ),
        (
            "different keys: not tolerated",
            json!({"key": "foo", "operator": "Exists"}),
            json!({"key": "other", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "Lt: taint value below the toleration's, only with the gate",
            json!({"key": "foo", "operator": "Lt", "value": "10", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "5", "effect": "NoSchedule"}),
            false,
            true,
        ),
        (
            "Lt: taint value above the toleration's",
            json!({"key": "foo", "operator": "Lt", "value": "10", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "15", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "Gt: taint value above the toleration's, only with the gate",
            json!({"key": "foo", "operator": "Gt", "value": "-3", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "0", "effect": "NoSchedule"}),
            false,
            true,
        ),
        (
            "Gt: equal values do not tolerate",
            json!({"key": "foo", "operator": "Gt", "value": "7", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "7", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "comparison: a leading zero is not a canonical decimal",
            json!({"key": "foo", "operator": "Lt", "value": "10", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "05", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "comparison: -0 is not a canonical decimal",
            json!({"key": "foo", "operator": "Gt", "value": "-0", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "3", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "comparison: a value past int64 does not parse",
            json!({"key": "foo", "operator": "Lt", "value": "99999999999999999999", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "1", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "comparison: a non-numeric taint value",
            json!({"key": "foo", "operator": "Gt", "value": "1", "effect": "NoSchedule"}),
            json!({"key": "foo", "value": "high", "effect": "NoSchedule"}),
            false,
            false,
        ),
        (
            "unknown operator tolerates nothing",
            json!({"key": "foo", "operator": "Sometimes", "effect": "NoSchedule"}),
            json!({"key": "foo", "effect": "NoSchedule"}),
            false,
            false,
        ),
    ];
    for (rule, tol, tnt, without_gate, with_gate) in cases {
        let (tol, tnt) = (toleration(tol), taint(tnt));
        assert_eq!(
            tolerates_taint(&tol, &tnt, false),
            without_gate,
            "{rule} (gate off)"
        );
        assert_eq!(
            tolerates_taint(&tol, &tnt, true),
            with_gate,
            "{rule} (gate on)"
        );
    }
}

#[test]
fn find_untolerated_taint_returns_the_first_included_untolerated_one() {
    let taints = vec![
        taint(json!({"key": "soft", "effect": "PreferNoSchedule"})),
        taint(json!({"key": "tolerated", "effect": "NoSchedule"})),
        taint(json!({"key": "blocking", "effect": "NoSchedule"})),
        taint(json!({"key": "evicting", "effect": "NoExecute"})),
    ];
    let tolerations = vec![toleration(
        json!({"key": "tolerated", "operator": "Exists"}),
    )];
    let key = |taint: Option<&Taint>| taint.map(|taint| taint.key.clone());
    let hard = |taint: &Taint| taint.effect == "NoSchedule" || taint.effect == "NoExecute";
    assert_eq!(
        key(find_untolerated_taint(&taints, &tolerations, hard, false)),
        Some("blocking".to_owned()),
        "PreferNoSchedule is not included, the tolerated one is skipped"
    );
    let no_execute = |taint: &Taint| taint.effect == "NoExecute";
    assert_eq!(
        key(find_untolerated_taint(
            &taints,
            &tolerations,
            no_execute,
            false
        )),
        Some("evicting".to_owned())
    );
    assert_eq!(
        find_untolerated_taint(&taints[..2], &tolerations, hard, false),
        None,
        "everything included is tolerated"
    );
}
