//! ControllerRevisions: the golden revision data bytes (spec section 9's example, the same
//! template and bytes as history's examples A and B), `snapshot`, `Match`, `constructHistory`,
//! `dedupCurHistories` and `cleanupHistory`.

use history::examples::{EXAMPLE_A, EXAMPLE_B, foo_template};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use serde_json::{Value, json};

use super::{PodBuilder, daemon_set, keys, nodes_to_pods, pod};
use crate::decide::revision::{
    CurrentRevision, choose_current, dedup_current, matches, new_revision, next_revision_number,
    pods_to_relabel, relabel_patch, revision_data_bytes_of, revision_hash_label,
    revisions_to_clean_up, split_current_and_old, template_hash, with_legacy_hash_label,
};

/// The revision name kcm-rs gives the example's template (`compute_hash`, no collision
/// count). Golden: a change renames every DaemonSet revision kcm-rs creates from then on.
const EXAMPLE_REVISION_NAME: &str = "test-79d45787c5";

/// The spec's example DaemonSet as an API server sends it: server field order, defaulted,
/// with the pre-v1.34 `"creationTimestamp":null` in the template when asked.
fn example_daemon_set(with_null_creation_timestamp: bool) -> Value {
    json!({
        "kind": "DaemonSet",
        "apiVersion": "apps/v1",
        "metadata": {
            "name": "test", "namespace": "default", "uid": "0b5c7a54-0000-4000-8000-000000000002",
            "resourceVersion": "812", "generation": 1,
            "annotations": {"deprecated.daemonset.template.generation": "1",
                            "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"DaemonSet\"}"}
        },
        "spec": {
            "selector": {"matchLabels": {"app": "foo"}},
            "template": foo_template(with_null_creation_timestamp),
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10
        },
        "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                   "desiredNumberScheduled": 0, "numberReady": 0}
    })
}

fn typed(raw: &Value) -> DaemonSet {
    serde_json::from_value(raw.clone()).expect("a valid DaemonSet")
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("utf-8")
}

#[test]
fn golden_revision_data_bytes() {
    let v134 = example_daemon_set(false);
    assert_eq!(
        text(revision_data_bytes_of(&v134).expect("valid")),
        EXAMPLE_B
    );
    let v133 = example_daemon_set(true);
    assert_eq!(
        text(revision_data_bytes_of(&v133).expect("valid")),
        EXAMPLE_A
    );
}

#[test]
fn golden_snapshot() {
    let raw = example_daemon_set(false);
    let revision = new_revision(&typed(&raw), &raw, 3).expect("valid");
    let hash = EXAMPLE_REVISION_NAME.trim_start_matches("test-");
    let expected: Value = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": EXAMPLE_REVISION_NAME,
            "namespace": "default",
            "labels": {"app": "foo", "controller-revision-hash": hash},
            "annotations": {"deprecated.daemonset.template.generation": "1",
                            "kubectl.kubernetes.io/last-applied-configuration": "{\"kind\":\"DaemonSet\"}"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "test",
                                 "uid": "0b5c7a54-0000-4000-8000-000000000002",
                                 "controller": true, "blockOwnerDeletion": true}]
        },
        "data": serde_json::from_str::<Value>(EXAMPLE_B).expect("JSON"),
        "revision": 3
    });
    assert_eq!(
        serde_json::to_value(&revision).expect("serializes"),
        expected
    );
    // What goes over the wire keeps the data's bytes.
    let sent = serde_json::to_string(&revision.data).expect("serializes");
    assert_eq!(sent, EXAMPLE_B);
    assert_eq!(revision_hash_label(&revision), hash);
}

#[test]
fn the_collision_count_renames_the_revision() {
    let mut names = Vec::new();
    for count in [Value::Null, json!(0), json!(1)] {
        let mut raw = example_daemon_set(false);
        raw["status"]["collisionCount"] = count;
        let revision = new_revision(&typed(&raw), &raw, 1).expect("valid");
        names.push(revision.metadata.name.clone().expect("named"));
        assert_eq!(revision_hash_label(&revision), template_hash(&typed(&raw)));
    }
    assert_ne!(names[0], names[1], "nil and 0 differ");
    assert_ne!(names[1], names[2]);
}

fn stored(name: &str, number: i64, data: &str, hash: Option<&str>) -> ControllerRevision {
    let labels = match hash {
        Some(hash) => json!({"app": "foo", "controller-revision-hash": hash}),
        None => json!({"app": "foo"}),
    };
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": serde_json::from_str::<Value>(data).expect("JSON"),
        "revision": number
    }))
    .expect("a valid revision")
}

fn names<R: std::borrow::Borrow<ControllerRevision>>(revisions: &[&R]) -> Vec<String> {
    revisions
        .iter()
        .filter_map(|revision| (*revision).borrow().metadata.name.clone())
        .collect()
}

#[test]
fn match_splits_current_from_old_by_data_bytes() {
    let v134 = revision_data_bytes_of(&example_daemon_set(false)).expect("valid");
    let changed = EXAMPLE_B.replace(r#""image":"test""#, r#""image":"test:v2""#);
    let revisions = vec![
        stored("test-a", 1, EXAMPLE_A, Some("a")),
        stored("test-b", 2, EXAMPLE_B, Some("b")),
        stored("test-c", 4, &changed, Some("c")),
    ];
    assert!(matches(&v134, &revisions[1]));
    assert!(
        !matches(&v134, &revisions[0]),
        "no semantic comparison: a serialization change is a new revision"
    );
    let (current, old) = split_current_and_old(&v134, &revisions);
    assert_eq!(names(&current), ["test-b"]);
    assert_eq!(names(&old), ["test-a", "test-c"]);
    assert_eq!(next_revision_number(&old), 5);
    assert_eq!(next_revision_number::<ControllerRevision>(&[]), 1);
    let negative = [stored("x", -4, EXAMPLE_B, None)];
    assert_eq!(
        next_revision_number(&negative),
        1,
        "maxRevision starts at 0"
    );
}

#[test]
fn legacy_revisions_are_labelled_with_their_own_name() {
    let legacy = stored("test-legacy", 1, EXAMPLE_B, None);
    let labelled = with_legacy_hash_label(&legacy).expect("needs the label");
    assert_eq!(revision_hash_label(&labelled), "test-legacy");
    let mut unlabelled = legacy.clone();
    unlabelled.metadata.labels = None;
    let labelled = with_legacy_hash_label(&unlabelled).expect("needs the label");
    assert_eq!(revision_hash_label(&labelled), "test-legacy");
    let current = stored("test-b", 1, EXAMPLE_B, Some("b"));
    assert_eq!(with_legacy_hash_label(&current), None);
}

#[test]
fn choose_and_dedup_the_current_revision() {
    let revision = |name: &str, number: i64| stored(name, number, EXAMPLE_B, Some(name));
    // (rule, current revisions, next number, decision)
    let cases = [
        (
            "no current revision: create one",
            vec![],
            3,
            CurrentRevision::Create { revision: 3 },
        ),
        (
            "one current revision, already the latest",
            vec![revision("a", 5)],
            5,
            CurrentRevision::Existing {
                keep: 0,
                duplicates: vec![],
                renumber_to: None,
            },
        ),
        (
            "rollback: the current revision is renumbered above the old ones",
            vec![revision("a", 1)],
            4,
            CurrentRevision::Existing {
                keep: 0,
                duplicates: vec![],
                renumber_to: Some(4),
            },
        ),
        (
            "duplicates: the highest revision is kept",
            vec![revision("a", 2), revision("b", 7), revision("c", 3)],
            4,
            CurrentRevision::Existing {
                keep: 1,
                duplicates: vec![0, 2],
                renumber_to: None,
            },
        ),
        (
            "duplicates with equal numbers: the later one is kept",
            vec![revision("a", 2), revision("b", 2)],
            3,
            CurrentRevision::Existing {
                keep: 1,
                duplicates: vec![0],
                renumber_to: Some(3),
            },
        ),
    ];
    for (rule, current, next, want) in cases {
        assert_eq!(choose_current(&current, next), want, "{rule}");
    }
    let negative = [revision("a", -3), revision("b", -1), revision("c", -2)];
    assert_eq!(
        dedup_current(&negative),
        Some(1),
        "all negative: the highest"
    );
}

#[test]
fn duplicates_relabel_pods_to_the_kept_hash() {
    let pods: Vec<_> = [
        pod("kept").hash("keep"),
        pod("other").hash("dup"),
        pod("unlabelled"),
    ]
    .into_iter()
    .map(PodBuilder::build)
    .collect();
    assert_eq!(
        pods_to_relabel(&pods, "keep"),
        keys(&["other", "unlabelled"])
    );
    assert_eq!(
        text(relabel_patch("keep").expect("encodes")),
        r#"{"metadata":{"labels":{"controller-revision-hash":"keep"}}}"#
    );
}

#[test]
fn cleanup_keeps_the_limit_and_every_live_revision() {
    let revision = |name: &str, number: i64| stored(name, number, EXAMPLE_B, Some(name));
    let old = vec![
        revision("r3", 3),
        revision("r1", 1),
        revision("r4", 4),
        revision("r2", 2),
        stored("unlabelled", 0, EXAMPLE_B, None),
    ];
    let live_pods = || {
        nodes_to_pods(vec![
            ("node-1", vec![pod("p1").on("node-1").hash("r1")]),
            (
                "node-2",
                vec![pod("p2").on("node-2").hash("r3").phase("Failed").deleting()],
            ),
            ("node-3", vec![pod("p3").on("node-3")]),
        ])
    };
    // (rule, revisionHistoryLimit, deleted in order)
    let cases = [
        ("within the limit", json!(5), vec![]),
        ("unset: the API default of 10", Value::Null, vec![]),
        (
            "oldest first, live ones skipped",
            json!(2),
            vec!["unlabelled", "r2", "r4"],
        ),
        (
            "limit 0: every non-live one",
            json!(0),
            vec!["unlabelled", "r2", "r4"],
        ),
        (
            "a negative limit deletes like 0",
            json!(-1),
            vec!["unlabelled", "r2", "r4"],
        ),
        ("one over the limit", json!(4), vec!["unlabelled"]),
    ];
    let pods = live_pods();
    for (rule, limit, want) in cases {
        let ds = daemon_set(json!({"spec": {"revisionHistoryLimit": limit}}));
        assert_eq!(
            names(&revisions_to_clean_up(&ds, &old, &pods)),
            want,
            "{rule}"
        );
    }
}
