//! Proptest strategies for the values a user (or a third party) may write into a workload's
//! spec, valid or not, shared by the controllers' property tests (`deployment::planner_bounds`,
//! `statefulset::plan_bounds`), so both planners face the same hostile input. Only with the
//! `testing` feature.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;

/// A count (`replicas`, `partition`, a status counter): mostly below `typical`, sometimes
/// anywhere in int32, `i32::MAX`, 0, and small negatives (only a corrupt cache could hold one;
/// the planners must survive them too).
pub fn count(typical: i32) -> impl Strategy<Value = i32> {
    prop_oneof![
        6 => 0..typical,
        2 => any::<i32>(),
        1 => Just(i32::MAX),
        1 => Just(0),
        1 => -3..0i32,
    ]
}

/// An intstr as a user can write it, valid or not: small counts and percentages mostly, and
/// anything in int32, `"-5%"`, `"99999999999999999999%"` (past i64) and `"abc%"`.
pub fn int_or_string() -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        3 => (0..10i32).prop_map(IntOrString::Int),
        1 => any::<i32>().prop_map(IntOrString::Int),
        3 => (0..=100i32).prop_map(|p| IntOrString::String(format!("{p}%"))),
        1 => "-?[0-9]{1,20}%".prop_map(IntOrString::String),
        1 => "[a-z0-9%.+-]{0,6}".prop_map(IntOrString::String),
    ]
}

/// A string field with a fixed set of values (a strategy or policy type) as a user can write
/// it: one of the two `values`, each with its weight, unset (weight 1), or garbage matching the
/// regex `garbage` (weight 1).
pub fn one_of_two_or_garbage(
    values: [(u32, &'static str); 2],
    garbage: &'static str,
) -> impl Strategy<Value = Option<String>> {
    let [(first_weight, first), (second_weight, second)] = values;
    prop_oneof![
        first_weight => Just(Some(first.to_owned())),
        second_weight => Just(Some(second.to_owned())),
        1 => Just(None),
        1 => garbage.prop_map(Some),
    ]
}
