//! The Job view: API defaults, Go zero values and the derived predicates.

use serde_json::json;

use super::{indexed_job, job};
use crate::decide::spec::JobView;

#[test]
fn defaults_of_an_empty_job() {
    let bare = k8s_openapi::api::batch::v1::Job::default();
    let view = JobView::new(&bare);
    assert_eq!((view.name(), view.namespace(), view.uid()), ("", "", ""));
    assert_eq!(view.parallelism(), 1);
    assert_eq!(view.backoff_limit(), 6);
    assert_eq!(view.completions(), None);
    assert_eq!(view.indexed_completions(), 0);
    assert!(!view.is_indexed());
    assert!(view.has_known_completion_mode());
    assert_eq!(view.completion_mode_label(), "NonIndexed");
    assert!(!view.is_suspended());
    assert!(!view.only_replace_failed_pods());
    assert_eq!(view.template_restart_policy(), "");
    assert_eq!(
        (
            view.status_active(),
            view.status_succeeded(),
            view.status_failed()
        ),
        (0, 0, 0)
    );
    assert_eq!(
        (view.status_ready(), view.status_terminating()),
        (None, None)
    );
    assert_eq!(view.completed_indexes(), "");
    assert_eq!(view.failed_indexes(), None);
    assert!(view.conditions().is_empty());
    assert!(view.uncounted_succeeded().is_empty());
    assert!(!view.is_finished());
    assert!(!view.is_being_deleted());
}

#[test]
fn backoff_limit_table() {
    let rows = [
        ("unset", json!({}), 6),
        ("set", json!({"backoffLimit": 2}), 2),
        (
            "unset with backoffLimitPerIndex",
            json!({"backoffLimitPerIndex": 1}),
            i32::MAX,
        ),
        (
            "set with backoffLimitPerIndex",
            json!({"backoffLimit": 3, "backoffLimitPerIndex": 1}),
            3,
        ),
        ("negative is kept", json!({"backoffLimit": -1}), -1),
    ];
    for (name, spec, want) in rows {
        let job = job(json!({ "spec": spec }));
        assert_eq!(JobView::new(&job).backoff_limit(), want, "{name}");
    }
}

#[test]
fn completion_mode_table() {
    let rows = [
        ("unset", json!(null), false, true),
        ("NonIndexed", json!("NonIndexed"), false, true),
        ("Indexed", json!("Indexed"), true, true),
        ("unknown", json!("Sometimes"), false, false),
        ("case matters", json!("indexed"), false, false),
    ];
    for (name, mode, indexed, known) in rows {
        let job = job(json!({"spec": {"completionMode": mode}}));
        let view = JobView::new(&job);
        assert_eq!(view.is_indexed(), indexed, "{name}");
        assert_eq!(view.has_known_completion_mode(), known, "{name}");
    }
}

#[test]
fn replacement_and_management_table() {
    let rows = [
        ("default", json!({}), false, None),
        (
            "Failed",
            json!({"podReplacementPolicy": "Failed"}),
            true,
            None,
        ),
        (
            "TerminatingOrFailed",
            json!({"podReplacementPolicy": "TerminatingOrFailed"}),
            false,
            None,
        ),
        (
            "failure policy",
            json!({"podFailurePolicy": {"rules": []}}),
            true,
            None,
        ),
        (
            "managed by this controller",
            json!({"managedBy": "kubernetes.io/job-controller"}),
            false,
            None,
        ),
        (
            "managed elsewhere",
            json!({"managedBy": "example.com/queue"}),
            false,
            Some("example.com/queue"),
        ),
    ];
    for (name, spec, only_failed, external) in rows {
        let job = job(json!({ "spec": spec }));
        let view = JobView::new(&job);
        assert_eq!(view.only_replace_failed_pods(), only_failed, "{name}");
        assert_eq!(view.managed_by_external_controller(), external, "{name}");
    }
}

#[test]
fn finished_table() {
    let rows = [
        ("none", json!([]), false),
        (
            "complete",
            json!([{"type": "Complete", "status": "True"}]),
            true,
        ),
        (
            "failed",
            json!([{"type": "Failed", "status": "True"}]),
            true,
        ),
        (
            "complete false",
            json!([{"type": "Complete", "status": "False"}]),
            false,
        ),
        (
            "interim only",
            json!([{"type": "FailureTarget", "status": "True"},
            {"type": "SuccessCriteriaMet", "status": "True"}]),
            false,
        ),
        (
            "a later true one counts",
            json!([{"type": "Failed", "status": "False"},
            {"type": "Failed", "status": "True"}]),
            true,
        ),
    ];
    for (name, conditions, want) in rows {
        let job = indexed_job(2, json!({"status": {"conditions": conditions}}));
        assert_eq!(JobView::new(&job).is_finished(), want, "{name}");
    }
}
