//! The shared values: upstream's `TestEnsureJobConditions` table, the finished condition types
//! and the policy actions.

use k8s_openapi::api::batch::v1::JobCondition;
use serde_json::json;

use super::{job, now, now_plus};
use crate::decide::spec::JobView;
use crate::decide::types::{
    FinishedCondition, FinishedConditionType, PolicyAction, UncountedUids,
    ensure_job_condition_status, new_condition,
};

fn suspended(status: &str, reason: &str) -> JobCondition {
    new_condition("Suspended", status, reason, "", now_plus(-60))
}

#[test]
fn ensure_job_conditions_table() {
    // (name, have, status, reason, message, expect, updated)
    type Row = (
        &'static str,
        Vec<JobCondition>,
        &'static str,
        &'static str,
        &'static str,
        Vec<JobCondition>,
        bool,
    );
    let rows: [Row; 8] = [
        (
            "append true condition",
            vec![],
            "True",
            "foo",
            "",
            vec![suspended("True", "foo")],
            true,
        ),
        (
            "append false condition",
            vec![],
            "False",
            "foo",
            "",
            vec![],
            false,
        ),
        (
            "update true condition reason",
            vec![suspended("True", "foo")],
            "True",
            "bar",
            "",
            vec![suspended("True", "bar")],
            true,
        ),
        (
            "update true condition status",
            vec![suspended("True", "foo")],
            "False",
            "foo",
            "",
            vec![suspended("False", "foo")],
            true,
        ),
        (
            "update false condition status",
            vec![suspended("False", "foo")],
            "True",
            "foo",
            "",
            vec![suspended("True", "foo")],
            true,
        ),
        (
            "condition already exists",
            vec![suspended("True", "foo")],
            "True",
            "foo",
            "",
            vec![suspended("True", "foo")],
            false,
        ),
        (
            "update message",
            vec![suspended("True", "foo")],
            "True",
            "foo",
            "now with a message",
            vec![new_condition(
                "Suspended",
                "True",
                "foo",
                "now with a message",
                now(),
            )],
            true,
        ),
        (
            "only the first condition of the type is looked at",
            vec![suspended("True", "foo"), suspended("False", "bar")],
            "True",
            "foo",
            "",
            vec![suspended("True", "foo"), suspended("False", "bar")],
            false,
        ),
    ];
    for (name, mut have, status, reason, message, expect, updated) in rows {
        let got =
            ensure_job_condition_status(&mut have, "Suspended", status, reason, message, now());
        assert_eq!(got, updated, "{name}");
        let strip =
            |list: &[JobCondition]| -> Vec<(String, String, Option<String>, Option<String>)> {
                list.iter()
                    .map(|c| {
                        (
                            c.type_.clone(),
                            c.status.clone(),
                            c.reason.clone(),
                            c.message.clone(),
                        )
                    })
                    .collect()
            };
        assert_eq!(strip(&have), strip(&expect), "{name}");
        if updated {
            let changed = have
                .iter()
                .find(|c| c.type_ == "Suspended")
                .expect("a condition");
            assert_eq!(
                changed.last_transition_time.as_ref().map(|t| t.0),
                Some(now()),
                "{name}: a changed condition gets new timestamps"
            );
        }
    }
}

#[test]
fn finished_condition_types() {
    use FinishedConditionType::*;
    let rows = [
        (FailureTarget, "FailureTarget", Failed, false),
        (Failed, "Failed", Failed, false),
        (SuccessCriteriaMet, "SuccessCriteriaMet", Complete, true),
        (Complete, "Complete", Complete, true),
    ];
    for (type_, name, terminal, success) in rows {
        assert_eq!(type_.as_str(), name);
        assert_eq!(type_.to_string(), name);
        assert_eq!(type_.terminal(), terminal, "{name}");
        assert_eq!(type_.is_success(), success, "{name}");
    }
    let target = FinishedCondition::new(FailureTarget, "DeadlineExceeded", "late", now_plus(-5));
    let failed = target.to_terminal(now());
    assert_eq!(
        (
            failed.type_,
            failed.reason.as_str(),
            failed.message.as_str(),
            failed.at
        ),
        (Failed, "DeadlineExceeded", "late", now())
    );
    let condition = FinishedCondition::new(Complete, "", "", now()).to_job_condition();
    assert_eq!(
        serde_json::to_value(&condition).unwrap_or_default(),
        json!({"type": "Complete", "status": "True",
            "lastProbeTime": "2009-11-10T23:00:00Z", "lastTransitionTime": "2009-11-10T23:00:00Z"}),
        "empty reason and message are omitted"
    );
}

#[test]
fn policy_actions() {
    for action in [
        PolicyAction::FailJob,
        PolicyAction::FailIndex,
        PolicyAction::Ignore,
        PolicyAction::Count,
    ] {
        assert_eq!(PolicyAction::parse(action.as_str()), Some(action));
        assert_eq!(action.to_string(), action.as_str());
    }
    assert_eq!(PolicyAction::parse("failjob"), None);
    assert_eq!(PolicyAction::parse(""), None);
}

#[test]
fn uncounted_uids_from_status() {
    let job = job(json!({"status": {"uncountedTerminatedPods":
        {"succeeded": ["b", "a", "a"], "failed": ["c"]}}}));
    let uncounted = UncountedUids::from_job(&JobView::new(&job));
    assert_eq!(
        uncounted.succeeded.into_iter().collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(uncounted.failed.into_iter().collect::<Vec<_>>(), ["c"]);
}
