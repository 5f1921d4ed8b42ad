//! Questions about objects that more than one controller's tests ask.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|condition| condition.type_ == "Ready" && condition.status == "True")
        })
}

/// Whether the pod serves: ready and not terminating.
pub fn is_serving(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && is_ready(pod)
}

/// Whether the pod counts as active for a controller: not terminating and not finished
/// (phase neither `Succeeded` nor `Failed`).
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod
        .status
        .as_ref()
        .and_then(|status| status.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// The UID in the object's controller reference, if it has one.
pub fn controller_uid(meta: &ObjectMeta) -> Option<String> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.uid.clone())
}

/// The kind in the object's controller reference, if it has one that blocks its owner's
/// deletion (as every workload controller's reference does).
pub fn blocking_controller_kind(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|owner| owner.controller == Some(true) && owner.block_owner_deletion == Some(true))
        .map(|owner| owner.kind.as_str())
}

/// The object's annotation `key`, if set.
pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

/// A Deployment, ReplicaSet or StatefulSet (`kind`) named `name` in [`super::NAMESPACE`] with
/// `replicas` pods labelled `app=<name>` running `nginx:1.25` (a StatefulSet's service is named
/// after it), as JSON for a typed decode or a dynamic create.
pub fn workload(kind: &str, name: &str, replicas: i32) -> serde_json::Value {
    let mut object = serde_json::json!({
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": super::NAMESPACE},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
    });
    if kind == "StatefulSet" {
        object["spec"]["serviceName"] = serde_json::json!(name);
    }
    object
}
