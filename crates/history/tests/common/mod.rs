//! Shared inputs of the golden tests: the spec's worked examples (history.md section 8) and the
//! captured v1.28 fixtures.

#![allow(dead_code)] // Each test binary uses a different subset.

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

/// A StatefulSet as the server sends it, around a raw template.
pub fn statefulset(name: &str, template: Value) -> Value {
    json!({
        "kind": "StatefulSet",
        "apiVersion": "apps/v1",
        "metadata": {"name": name, "namespace": "default", "uid": "0b5c7a54-0000-4000-8000-000000000001", "generation": 1},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": template["metadata"]["labels"].clone()},
            "template": template,
            "serviceName": name,
            "podManagementPolicy": "OrderedReady",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "revisionHistoryLimit": 10
        },
        "status": {"collisionCount": 0}
    })
}

/// A stored revision as an upstream controller wrote it: the given data bytes, hash label and
/// name `<set>-<hash>`, and revision number.
pub fn stored_revision(set_name: &str, hash: &str, data: &str, number: i64) -> ControllerRevision {
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{set_name}-{hash}"),
            "namespace": "default",
            "labels": {"controller.kubernetes.io/hash": hash},
        },
        "data": serde_json::from_str::<Value>(data).expect("example data is JSON"),
        "revision": number
    }))
    .expect("valid ControllerRevision")
}

/// The captured v1.28 StatefulSet (example D's set).
pub fn fixture_statefulset() -> Value {
    serde_json::from_str(include_str!("../fixtures/statefulset.json")).expect("fixture is JSON")
}

/// The captured v1.28 ControllerRevision list (example D's revision).
pub fn fixture_revisions() -> Vec<ControllerRevision> {
    let list: Value =
        serde_json::from_str(include_str!("../fixtures/controllerrevision-list.json"))
            .expect("fixture is JSON");
    serde_json::from_value(list["items"].clone()).expect("fixture items are ControllerRevisions")
}
