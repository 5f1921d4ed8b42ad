//! Choosing the update revision when taking over from an upstream controller: byte-equal reuse,
//! rollback renumbering, semantic comparison across serialization changes, and real changes.

mod common;

use common::*;
use history::examples::{EXAMPLE_A, EXAMPLE_B, foo_template};
use history::{
    UpdateRevisionChoice, choose_update_revision, latest_revision_is_semantically_current,
    new_statefulset_revision, next_revision, sort_controller_revisions,
};
use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

/// A template like example A/B but with another image, so its data differs.
fn changed_template(with_null_creation_timestamp: bool) -> Value {
    let mut template = foo_template(with_null_creation_timestamp);
    template["spec"]["containers"][0]["image"] = json!("test:v2");
    template
}

fn revision_of(set_name: &str, template: Value, number: i64) -> ControllerRevision {
    let mut revision =
        new_statefulset_revision(&statefulset(set_name, template), number, 0).expect("valid set");
    revision.metadata.namespace = Some("default".to_owned());
    revision
}

fn example_a_stored() -> ControllerRevision {
    stored_revision("test", "c77f6d978", EXAMPLE_A, 1)
}

fn example_b_stored() -> ControllerRevision {
    stored_revision("test", "776999688b", EXAMPLE_B, 1)
}

#[test]
fn choices() {
    struct Case {
        name: &'static str,
        set_template: Value,
        stored: Vec<ControllerRevision>,
        semantic_comparison: bool,
        want: UpdateRevisionChoice,
    }
    let cases = [
        Case {
            name: "no revisions yet",
            set_template: foo_template(false),
            stored: vec![],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Create,
        },
        Case {
            name: "v1.34+ server, revision written by v1.34+ (example B)",
            set_template: foo_template(false),
            stored: vec![example_b_stored()],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Latest,
        },
        Case {
            name: "v1.33 server, revision written by v1.33 (example A)",
            set_template: foo_template(true),
            stored: vec![example_a_stored()],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Latest,
        },
        Case {
            name: "v1.34+ server, revision written by v1.33 (example A): taken over",
            set_template: foo_template(false),
            stored: vec![example_a_stored()],
            semantic_comparison: true,
            want: UpdateRevisionChoice::LatestSemanticallyEqual,
        },
        Case {
            name: "v1.33 server, revision written by v1.34+ (example B): taken over",
            set_template: foo_template(true),
            stored: vec![example_b_stored()],
            semantic_comparison: true,
            want: UpdateRevisionChoice::LatestSemanticallyEqual,
        },
        Case {
            name: "gate off: serialization change creates a revision",
            set_template: foo_template(false),
            stored: vec![example_a_stored()],
            semantic_comparison: false,
            want: UpdateRevisionChoice::Create,
        },
        Case {
            name: "template changed",
            set_template: changed_template(false),
            stored: vec![example_a_stored()],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Create,
        },
        Case {
            name: "semantic comparison only looks at the latest revision",
            set_template: foo_template(false),
            stored: vec![
                example_a_stored(),
                revision_of("test", changed_template(false), 2),
            ],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Create,
        },
        Case {
            name: "rollback to an earlier byte-equal revision renumbers it",
            set_template: foo_template(false),
            stored: vec![
                example_b_stored(),
                revision_of("test", changed_template(false), 2),
            ],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Renumber {
                index: 0,
                revision: 3,
            },
        },
        Case {
            name: "latest wins when two revisions hold the data",
            set_template: foo_template(false),
            stored: vec![
                example_b_stored(),
                revision_of("test", changed_template(false), 2),
                {
                    let mut again = example_b_stored();
                    again.metadata.name = Some("test-776999688c".to_owned());
                    again.revision = 3;
                    again
                },
            ],
            semantic_comparison: true,
            want: UpdateRevisionChoice::Latest,
        },
    ];
    for case in cases {
        let set = statefulset("test", case.set_template);
        let mut stored = case.stored;
        sort_controller_revisions(&mut stored);
        let proposal =
            new_statefulset_revision(&set, next_revision(&stored), 0).expect("valid set");
        let got = choose_update_revision(&set, &stored, &proposal, case.semantic_comparison);
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn fixture_revision_is_taken_over_by_a_newer_server_serialization() {
    // The captured v1.28 set as a v1.34+ server would render it: no creationTimestamp.
    let mut set = fixture_statefulset();
    let template_metadata = set["spec"]["template"]["metadata"]
        .as_object_mut()
        .expect("template metadata");
    template_metadata.remove("creationTimestamp");
    let stored = fixture_revisions();
    let proposal = new_statefulset_revision(&set, next_revision(&stored), 0).expect("valid set");
    assert_ne!(
        proposal.metadata.name, stored[0].metadata.name,
        "bytes differ, so do the names"
    );
    assert_eq!(
        choose_update_revision(&set, &stored, &proposal, true),
        UpdateRevisionChoice::LatestSemanticallyEqual
    );
}

#[test]
fn semantic_comparison_failures_mean_changed() {
    let set = statefulset("test", foo_template(false));
    let proposal = new_statefulset_revision(&set, 2, 0).expect("valid set");
    let mut without_data = example_a_stored();
    without_data.data = None;
    let mut not_a_patch = example_a_stored();
    not_a_patch.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(
        json!({"spec": {"template": 5}}),
    ));
    for (name, latest) in [
        ("no data", without_data),
        ("template not an object", not_a_patch),
    ] {
        assert!(
            !latest_revision_is_semantically_current(&set, &latest, &proposal),
            "{name}"
        );
    }
}

#[test]
fn semantic_comparison_is_not_fooled_by_non_null_differences() {
    let set = statefulset("test", foo_template(false));
    let proposal = new_statefulset_revision(&set, 2, 0).expect("valid set");
    let cases = [
        (
            "empty string instead of absent",
            r#""labels":{"app":"foo"}}"#,
            r#""labels":{"app":"foo"},"name":""}"#,
        ),
        (
            "empty object instead of absent",
            r#""securityContext":{},"#,
            r#""securityContext":{},"hostAliases":[],"#,
        ),
        (
            "a real value",
            r#""dnsPolicy":"ClusterFirst""#,
            r#""dnsPolicy":"Default""#,
        ),
    ];
    for (name, from, to) in cases {
        assert!(EXAMPLE_B.contains(from), "{name}: bad fixture edit");
        let latest = stored_revision("test", "x", &EXAMPLE_B.replace(from, to), 1);
        assert!(
            !latest_revision_is_semantically_current(&set, &latest, &proposal),
            "{name}"
        );
    }
}
