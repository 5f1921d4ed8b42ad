//! Golden tests: the worked examples of history.md section 8 and the captured v1.28 fixtures,
//! reproduced byte for byte, with hashes and names.

mod common;

use common::*;
use history::examples::{EXAMPLE_A, EXAMPLE_B, EXAMPLE_C, EXAMPLE_D, foo_template};
use history::{
    CONTROLLER_REVISION_HASH_LABEL, UpdateRevisionChoice, choose_update_revision, equal_revision,
    hash_revision_data, new_statefulset_revision, revision_data_bytes, statefulset_revision_data,
};
use serde_json::json;

fn data_text(template: &serde_json::Value) -> String {
    let data = statefulset_revision_data(template).expect("template is an object");
    String::from_utf8(history::encode_go_json(&data).expect("encodable")).expect("utf-8")
}

#[test]
fn example_a_pre_v1_34_serialization() {
    let set = statefulset("test", foo_template(true));
    assert_eq!(data_text(&set["spec"]["template"]), EXAMPLE_A);
    let revision = new_statefulset_revision(&set, 1, 0).expect("valid set");
    assert_eq!(
        revision_data_bytes(&revision).expect("encodable"),
        EXAMPLE_A.as_bytes()
    );
    assert_eq!(revision.metadata.name.as_deref(), Some("test-c77f6d978"));
    let labels = revision.metadata.labels.expect("labels set");
    assert_eq!(
        labels
            .get(CONTROLLER_REVISION_HASH_LABEL)
            .map(String::as_str),
        Some("c77f6d978")
    );
    assert_eq!(labels.get("app").map(String::as_str), Some("foo"));
}

#[test]
fn example_b_collision_counts() {
    let set = statefulset("test", foo_template(false));
    assert_eq!(data_text(&set["spec"]["template"]), EXAMPLE_B);
    let cases = [
        (None, "6855cb9558"),
        (Some(0), "776999688b"),
        (Some(1), "776999688c"),
        (Some(2), "7769996888"),
    ];
    for (count, want_hash) in cases {
        assert_eq!(
            hash_revision_data(EXAMPLE_B.as_bytes(), count),
            want_hash,
            "count {count:?}"
        );
        if let Some(count) = count {
            let revision = new_statefulset_revision(&set, 1, count).expect("valid set");
            assert_eq!(
                revision.metadata.name,
                Some(format!("test-{want_hash}")),
                "count {count}"
            );
        }
    }
}

#[test]
fn example_c_escaping() {
    let template = json!({
        "metadata": {"labels": {"app": "web"}, "annotations": {"note": "a<b>&c"}},
        "spec": {
            "containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"
        }
    });
    let set = statefulset("web", template);
    assert_eq!(data_text(&set["spec"]["template"]), EXAMPLE_C);
    let revision = new_statefulset_revision(&set, 1, 0).expect("valid set");
    assert_eq!(revision.metadata.name.as_deref(), Some("web-78db95b44d"));
}

#[test]
fn example_d_matches_the_revision_a_v1_28_controller_wrote() {
    let set = fixture_statefulset();
    let stored = fixture_revisions();
    assert_eq!(data_text(&set["spec"]["template"]), EXAMPLE_D);

    let proposal = new_statefulset_revision(&set, 2, 0).expect("valid set");
    assert_eq!(proposal.metadata.name.as_deref(), Some("web-86f8dd76c9"));
    assert_eq!(proposal.metadata.name, stored[0].metadata.name);
    assert_eq!(proposal.metadata.labels, stored[0].metadata.labels);
    assert_eq!(
        proposal.metadata.owner_references,
        stored[0].metadata.owner_references
    );
    assert_eq!(proposal.metadata.annotations, None);
    // The stored data, parsed and re-encoded, is exactly the captured bytes.
    assert_eq!(
        revision_data_bytes(&stored[0]).expect("encodable"),
        EXAMPLE_D.as_bytes()
    );
    assert!(equal_revision(&proposal, &stored[0]));
    assert_eq!(
        choose_update_revision(&set, &stored, &proposal, true),
        UpdateRevisionChoice::Latest
    );
}

#[test]
fn set_annotations_are_copied_to_the_revision() {
    let mut set = statefulset("test", foo_template(false));
    set["metadata"]["annotations"] = json!({"team": "db"});
    let revision = new_statefulset_revision(&set, 1, 0).expect("valid set");
    let annotations = revision.metadata.annotations.expect("annotations copied");
    assert_eq!(annotations.get("team").map(String::as_str), Some("db"));
    // Annotations of the set do not change the data, hence not the name.
    assert_eq!(revision.metadata.name.as_deref(), Some("test-776999688b"));
}
