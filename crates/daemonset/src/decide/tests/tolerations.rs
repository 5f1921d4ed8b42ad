//! `Toleration.ToleratesTaint` (the cases of k8s.io/api's `TestTolerationToleratesTaint`,
//! with and without `TaintTolerationComparisonOperators`) and `FindMatchingUntoleratedTaint`.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::decide::tolerations::{find_untolerated_taint, tolerates_taint};

/// A toleration from `(key, operator, value, effect)`; an empty string leaves the field out.
fn toleration((key, operator, value, effect): (&str, &str, &str, &str)) -> Toleration {
    let field = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    Toleration {
        key: field(key),
        operator: field(operator),
        value: field(value),
        effect: field(effect),
        toleration_seconds: None,
    }
}

/// A taint in `kubectl taint` notation: `key=value:Effect` or `key:Effect`.
fn taint(notation: &str) -> Taint {
    let (key_value, effect) = notation.rsplit_once(':').expect("key[=value]:Effect");
    let (key, value) = match key_value.split_once('=') {
        Some((key, value)) => (key, Some(value.to_owned())),
        None => (key_value, None),
    };
    Taint {
        key: key.to_owned(),
        value,
        effect: effect.to_owned(),
        time_added: None,
    }
}

#[test]
fn tolerates_taint_cases() {
    // (rule, toleration, taint, tolerated without the comparison gate, with it)
    #[rustfmt::skip]
    let cases = [
        ("same key and effect, Exists, taint without value: tolerated", ("foo", "Exists", "", "NoSchedule"), "foo:NoSchedule", true, true),
        ("same key and effect, Exists, taint with a value: tolerated", ("foo", "Exists", "", "NoSchedule"), "foo=bar:NoSchedule", true, true),
        ("empty key with Exists matches every key", ("", "Exists", "", "NoSchedule"), "foo=bar:NoSchedule", true, true),
        ("empty effect matches every effect", ("foo", "Exists", "", ""), "foo:NoExecute", true, true),
        ("same key, effect and value, Equal: tolerated", ("foo", "Equal", "bar", "NoSchedule"), "foo=bar:NoSchedule", true, true),
        ("empty operator means Equal", ("foo", "", "bar", "NoSchedule"), "foo=bar:NoSchedule", true, true),
        ("same key and effect, different values, Equal: not tolerated", ("foo", "Equal", "value1", "NoSchedule"), "foo=value2:NoSchedule", false, false),
        ("same key and value, different effects: not tolerated", ("foo", "Equal", "bar", "NoSchedule"), "foo=bar:NoExecute", false, false),
        ("different keys: not tolerated", ("foo", "Exists", "", ""), "other:NoSchedule", false, false),
        ("Lt: taint value below the toleration's, only with the gate", ("foo", "Lt", "10", "NoSchedule"), "foo=5:NoSchedule", false, true),
        ("Lt: taint value above the toleration's", ("foo", "Lt", "10", "NoSchedule"), "foo=15:NoSchedule", false, false),
        ("Gt: taint value above the toleration's, only with the gate", ("foo", "Gt", "-3", "NoSchedule"), "foo=0:NoSchedule", false, true),
        ("Gt: equal values do not tolerate", ("foo", "Gt", "7", "NoSchedule"), "foo=7:NoSchedule", false, false),
        ("comparison: a leading zero is not a canonical decimal", ("foo", "Lt", "10", "NoSchedule"), "foo=05:NoSchedule", false, false),
        ("comparison: -0 is not a canonical decimal", ("foo", "Gt", "-0", "NoSchedule"), "foo=3:NoSchedule", false, false),
        ("comparison: a value past int64 does not parse", ("foo", "Lt", "99999999999999999999", "NoSchedule"), "foo=1:NoSchedule", false, false),
        ("comparison: a non-numeric taint value", ("foo", "Gt", "1", "NoSchedule"), "foo=high:NoSchedule", false, false),
        ("unknown operator tolerates nothing", ("foo", "Sometimes", "", "NoSchedule"), "foo:NoSchedule", false, false),
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
        taint("soft:PreferNoSchedule"),
        taint("tolerated:NoSchedule"),
        taint("blocking:NoSchedule"),
        taint("evicting:NoExecute"),
    ];
    let tolerations = vec![toleration(("tolerated", "Exists", "", ""))];
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
