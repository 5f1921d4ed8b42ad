//! Shared inputs of the golden tests: the spec's worked examples (history.md section 8) and the
//! captured v1.28 fixtures.

#![allow(dead_code)] // Each test binary uses a different subset.

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

/// Example A's data bytes (serialization of v1.33 and earlier).
pub const EXAMPLE_A: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// Example B's data bytes (serialization of v1.34 and later).
pub const EXAMPLE_B: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// Example C's data bytes (escaping).
pub const EXAMPLE_C: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"note":"a\u003cb\u003e\u0026c"},"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx:1.27","imagePullPolicy":"IfNotPresent","name":"nginx","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// Example D's data bytes (observed on a v1.28 server).
pub const EXAMPLE_D: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"note":"a\u003cb \u0026 c\u003ed"},"creationTimestamp":null,"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"X","value":"1"}],"image":"nginx:1.25","imagePullPolicy":"IfNotPresent","name":"c","resources":{"requests":{"cpu":"500m","memory":"1536Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

/// The A/B template as an API server renders it (server field order, not sorted), with or
/// without the pre-v1.34 `"creationTimestamp":null`.
pub fn foo_template(with_null_creation_timestamp: bool) -> Value {
    let mut metadata = serde_json::Map::new();
    if with_null_creation_timestamp {
        metadata.insert("creationTimestamp".into(), Value::Null);
    }
    metadata.insert("labels".into(), json!({"app": "foo"}));
    metadata.insert("annotations".into(), json!({"test": "value"}));
    json!({
        "metadata": metadata,
        "spec": {
            "containers": [{
                "name": "test",
                "image": "test",
                "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "Always"
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler"
        }
    })
}

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
