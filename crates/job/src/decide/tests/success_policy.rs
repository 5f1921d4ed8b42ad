//! `matchSuccessPolicy`: upstream's `TestMatchSuccessPolicy` table (its "JobSuccessPolicy is
//! disabled" row is left out: the gate is GA and locked on in v1.36), plus rows for odd rule
//! strings and counts.

use k8s_openapi::api::batch::v1::SuccessPolicy;
use serde_json::{Value, json};

use super::indexed_job;
use crate::decide::indexes::{Interval, OrderedIntervals};
use crate::decide::spec::JobView;
use crate::decide::success_policy::{
    match_succeeded_indexes_rule, match_success_policy, success_criteria_met_condition,
};

fn ivs(pairs: &[(i64, i64)]) -> OrderedIntervals {
    OrderedIntervals::new(pairs.iter().map(|&(a, b)| Interval::new(a, b)).collect())
}

struct Row {
    name: &'static str,
    rules: Option<Value>,
    completions: i32,
    succeeded_indexes: &'static [(i64, i64)],
    want_message: Option<&'static str>,
}

fn rule(indexes: Option<&str>, count: Option<i32>) -> Value {
    json!({"succeededIndexes": indexes, "succeededCount": count})
}

#[test]
fn match_success_policy_table() {
    let matched = Some("Matched rules at index 0");
    let rows = [
        Row {
            name: "successPolicy is null",
            rules: None,
            completions: 10,
            succeeded_indexes: &[(0, 0)],
            want_message: None,
        },
        Row {
            name: "any rules are nothing",
            rules: Some(json!([])),
            completions: 10,
            succeeded_indexes: &[(0, 0)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is invalid format",
            rules: Some(json!([rule(Some("invalid-form"), None)])),
            completions: 10,
            succeeded_indexes: &[(0, 0)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules",
            rules: Some(json!([rule(Some("0-2"), None)])),
            completions: 10,
            succeeded_indexes: &[(0, 2), (4, 7)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules",
            rules: Some(json!([rule(Some("3"), None)])),
            completions: 10,
            succeeded_indexes: &[(0, 2)],
            want_message: None,
        },
        Row {
            name: "rules.succeededCount is specified; succeededIndexes matched rules",
            rules: Some(json!([rule(None, Some(2))])),
            completions: 10,
            succeeded_indexes: &[(0, 2)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededCount is specified; succeededIndexes didn't match rules",
            rules: Some(json!([rule(None, Some(4))])),
            completions: 10,
            succeeded_indexes: &[(0, 2)],
            want_message: None,
        },
        Row {
            name: "multiple rules; rules.succeededIndexes is specified; succeededIndexes met one of rules",
            rules: Some(json!([rule(Some("9"), None), rule(Some("4,6"), None)])),
            completions: 10,
            succeeded_indexes: &[(0, 2), (4, 7)],
            want_message: Some("Matched rules at index 1"),
        },
        Row {
            name: "multiple rules; rules.succeededIndexes is specified; succeededIndexes met all rules",
            rules: Some(json!([rule(Some("0,1"), None), rule(Some("5"), None)])),
            completions: 10,
            succeeded_indexes: &[(0, 2), (4, 7)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes met all rules",
            rules: Some(json!([rule(Some("3-6"), Some(2))])),
            completions: 10,
            succeeded_indexes: &[(0, 2), (4, 7)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes didn't match rules",
            rules: Some(json!([rule(Some("3-6"), Some(2))])),
            completions: 10,
            succeeded_indexes: &[(0, 2), (6, 7)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes are nothing",
            rules: Some(json!([rule(None, Some(4))])),
            completions: 10,
            succeeded_indexes: &[],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is proper subset of succeededIndexes",
            rules: Some(json!([rule(Some("2-4,6-8"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 5), (6, 9)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules equals succeededIndexes",
            rules: Some(json!([rule(Some("2-4,6-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(2, 4), (6, 9)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is subset of succeededIndexes",
            rules: Some(json!([rule(Some("2-4,8-12"), None)])),
            completions: 10,
            succeeded_indexes: &[(2, 5), (7, 15)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules is an empty set",
            rules: Some(json!([rule(Some(""), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 3)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; succeededIndexes is an empty set",
            rules: Some(json!([rule(Some(""), None)])),
            completions: 10,
            succeeded_indexes: &[],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules and succeededIndexes are empty set",
            rules: Some(json!([rule(Some(""), None)])),
            completions: 10,
            succeeded_indexes: &[],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; all elements of rules.succeededIndexes aren't included in succeededIndexes",
            rules: Some(json!([rule(Some("10-12,14-16"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (5, 7)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at first",
            rules: Some(json!([rule(Some("1-3,5-7"), None)])),
            completions: 10,
            succeeded_indexes: &[(2, 4), (6, 8)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at first",
            rules: Some(json!([rule(Some("1-3,5-7"), Some(4))])),
            completions: 10,
            succeeded_indexes: &[(2, 4), (6, 8)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at last",
            rules: Some(json!([rule(Some("2-4,6-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (5, 7)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at last",
            rules: Some(json!([rule(Some("2-4,6-9"), Some(4))])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (5, 7)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules completely overlaps succeededIndexes",
            rules: Some(json!([rule(Some("0-4,6-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (7, 8)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules completely overlaps succeededIndexes",
            rules: Some(json!([rule(Some("0-4,6-9"), Some(5))])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (7, 8)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps multiple succeededIndexes at last",
            rules: Some(json!([rule(Some("0-6,8-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (5, 9)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps multiple succeededIndexes at last",
            rules: Some(json!([rule(Some("0-6,8-9"), Some(7))])),
            completions: 10,
            succeeded_indexes: &[(1, 3), (5, 9)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at first, and rules equals succeededIndexes at last",
            rules: Some(json!([rule(Some("0-5,7-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 5), (7, 10)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at first, and rules equals succeededIndexes at last",
            rules: Some(json!([rule(Some("0-5,7-9"), Some(8))])),
            completions: 10,
            succeeded_indexes: &[(1, 5), (7, 10)],
            want_message: matched,
        },
        Row {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; the first rules overlaps succeededIndexes at first",
            rules: Some(json!([rule(Some("0-3,6-9"), None)])),
            completions: 10,
            succeeded_indexes: &[(1, 10)],
            want_message: None,
        },
        Row {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; the first rules overlaps succeededIndexes at first",
            rules: Some(json!([rule(Some("0-3,6-9"), Some(7))])),
            completions: 10,
            succeeded_indexes: &[(1, 10)],
            want_message: matched,
        },
        // kcm-rs rows.
        Row {
            name: "rule indexes are clipped to completions",
            rules: Some(json!([rule(Some("0-99"), None)])),
            completions: 3,
            succeeded_indexes: &[(0, 2)],
            want_message: matched,
        },
        Row {
            name: "a rule entirely past completions is skipped",
            rules: Some(json!([rule(Some("5-9"), None), rule(None, Some(1))])),
            completions: 3,
            succeeded_indexes: &[(0, 0)],
            want_message: Some("Matched rules at index 1"),
        },
        Row {
            name: "a rule with neither field matches nothing",
            rules: Some(json!([rule(None, None)])),
            completions: 3,
            succeeded_indexes: &[(0, 2)],
            want_message: None,
        },
        Row {
            name: "a zero count matches at the first success",
            rules: Some(json!([rule(None, Some(0))])),
            completions: 3,
            succeeded_indexes: &[(1, 1)],
            want_message: matched,
        },
        Row {
            name: "a negative count in a rule with indexes always matches",
            rules: Some(json!([rule(Some("0-2"), Some(-1))])),
            completions: 3,
            succeeded_indexes: &[(1, 1)],
            want_message: matched,
        },
        Row {
            name: "a partly corrupted rule keeps its parsable parts",
            rules: Some(json!([rule(Some("x,1,y"), None)])),
            completions: 3,
            succeeded_indexes: &[(1, 1)],
            want_message: matched,
        },
        Row {
            name: "max int32 count is not reached",
            rules: Some(json!([rule(None, Some(i32::MAX))])),
            completions: i32::MAX,
            succeeded_indexes: &[(0, 2_147_483_645)],
            want_message: None,
        },
    ];
    for row in rows {
        let policy: Option<SuccessPolicy> = row
            .rules
            .map(|rules| serde_json::from_value(json!({ "rules": rules })).expect("a policy"));
        assert_eq!(
            match_success_policy(
                policy.as_ref(),
                row.completions,
                &ivs(row.succeeded_indexes)
            )
            .as_deref(),
            row.want_message,
            "{}",
            row.name
        );
    }
}

#[test]
fn succeeded_indexes_rule_walks_unordered_input_without_looping() {
    // Hostile unordered lists still terminate (each step advances a list).
    assert!(!match_succeeded_indexes_rule(
        &ivs(&[(5, 6), (0, 1)]),
        &ivs(&[(0, 1)]),
        None
    ));
    assert!(match_succeeded_indexes_rule(
        &ivs(&[]),
        &ivs(&[(0, 1)]),
        None
    ));
}

#[test]
fn stored_success_criteria_met_condition() {
    let rows = [
        ("none", json!([]), false),
        (
            "true",
            json!([{"type": "SuccessCriteriaMet", "status": "True"}]),
            true,
        ),
        (
            "false",
            json!([{"type": "SuccessCriteriaMet", "status": "False"}]),
            false,
        ),
        (
            "only the first of the type counts",
            json!([{"type": "SuccessCriteriaMet", "status": "False"},
                   {"type": "SuccessCriteriaMet", "status": "True"}]),
            false,
        ),
    ];
    for (name, conditions, want) in rows {
        let job = indexed_job(3, json!({"status": {"conditions": conditions}}));
        assert_eq!(
            success_criteria_met_condition(&JobView::new(&job)).is_some(),
            want,
            "{name}"
        );
    }
}
