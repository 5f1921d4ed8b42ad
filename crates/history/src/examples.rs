//! The spec's worked examples (history.md section 8): the template of examples A and B as an
//! API server renders it, and the revision data bytes of examples A to D. Golden inputs of
//! history's tests and of every controller's revision tests that rest on the same bytes (the
//! DaemonSet's). Only with the `testing` feature.

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
