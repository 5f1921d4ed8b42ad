//! `SurgeCount`, `UnavailableCount`, `AllowsSurge` and `GetScaledValueFromIntOrPercent`
//! (rounding up).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use super::{daemon_set, rolling};
use crate::decide::budget::{
    IntOrPercentError, allows_surge, scaled_value_rounded_up, surge_count, unavailable_count,
};

#[test]
fn percentages_round_up() {
    let percent = |text: &str| IntOrString::String(text.to_owned());
    // (rule, value, total, result)
    let cases = [
        ("an integer is itself", IntOrString::Int(3), 10, Ok(3)),
        ("10% of 7 rounds up to 1", percent("10%"), 7, Ok(1)),
        ("25% of 10 rounds up to 3", percent("25%"), 10, Ok(3)),
        ("50% of 3 rounds up to 2", percent("50%"), 3, Ok(2)),
        ("100% of 2", percent("100%"), 2, Ok(2)),
        ("0% of 0", percent("0%"), 0, Ok(0)),
        ("1% of 1 is 1", percent("1%"), 1, Ok(1)),
        (
            "a leading + parses as Go's Atoi does",
            percent("+20%"),
            10,
            Ok(2),
        ),
        (
            "no % sign",
            percent("25"),
            10,
            Err(IntOrPercentError::NotAPercentage),
        ),
    ];
    for (rule, value, total, want) in cases {
        assert_eq!(scaled_value_rounded_up(Some(&value), total), want, "{rule}");
    }
    assert_eq!(
        scaled_value_rounded_up(None, 3),
        Err(IntOrPercentError::Nil)
    );
}

#[test]
fn invalid_values_carry_upstreams_messages() {
    let error = |value: Option<IntOrString>| {
        scaled_value_rounded_up(value.as_ref(), 10)
            .expect_err("invalid")
            .to_string()
    };
    assert_eq!(error(None), "nil value for IntOrString");
    assert_eq!(
        error(Some(IntOrString::String("x".to_owned()))),
        "invalid value for IntOrString: invalid type: string is not a percentage"
    );
    assert_eq!(
        error(Some(IntOrString::String("x%".to_owned()))),
        r#"invalid value for IntOrString: invalid value "x%": strconv.Atoi: parsing "x": invalid syntax"#
    );
    assert_eq!(
        error(Some(IntOrString::String(
            "99999999999999999999%".to_owned()
        ))),
        r#"invalid value for IntOrString: invalid value "99999999999999999999%": strconv.Atoi: parsing "99999999999999999999": value out of range"#
    );
}

#[test]
fn surge_and_unavailable_counts_by_strategy() {
    let on_delete = json!({"spec": {"updateStrategy": {"type": "OnDelete",
        "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 2}}}});
    let no_params = json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}});
    // (rule, DaemonSet patch, nodes, surge, unavailable, allows surge)
    type Count = Result<i64, IntOrPercentError>;
    let cases: [(&str, Value, i64, Count, Count, bool); 6] = [
        ("OnDelete: neither", on_delete, 10, Ok(0), Ok(0), false),
        (
            "RollingUpdate without parameters: neither",
            no_params,
            10,
            Ok(0),
            Ok(0),
            false,
        ),
        (
            "maxUnavailable only: no surge",
            rolling(json!({"maxUnavailable": "25%"})),
            10,
            Ok(0),
            Ok(3),
            false,
        ),
        (
            "surge of 50% of 2 nodes (newUpdateSurge)",
            rolling(json!({"maxUnavailable": 0, "maxSurge": "50%"})),
            2,
            Ok(1),
            Ok(0),
            true,
        ),
        (
            "1% surges one pod on one node",
            rolling(json!({"maxUnavailable": 0, "maxSurge": "1%"})),
            100,
            Ok(1),
            Ok(0),
            true,
        ),
        (
            "maxSurge set, maxUnavailable unset: upstream's nil pointer error",
            rolling(json!({"maxSurge": 1})),
            3,
            Ok(1),
            Err(IntOrPercentError::Nil),
            true,
        ),
    ];
    for (rule, patch, nodes, surge, unavailable, surges) in cases {
        let ds = daemon_set(patch);
        assert_eq!(surge_count(&ds, nodes), surge, "{rule}: surge");
        assert_eq!(
            unavailable_count(&ds, nodes),
            unavailable,
            "{rule}: unavailable"
        );
        assert_eq!(allows_surge(&ds), surges, "{rule}: allows surge");
    }
}

#[test]
fn an_invalid_surge_allows_no_surge() {
    let ds = daemon_set(rolling(json!({"maxUnavailable": 0, "maxSurge": "lots"})));
    assert!(!allows_surge(&ds));
}
