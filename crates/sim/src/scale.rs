//! The `scale` subresource: the autoscaling/v1 `Scale` view of a workload's replicas.

use serde_json::{Value, json};

use crate::object::meta;
use crate::selector::LabelSelector;
use crate::status::ApiError;

/// The Scale of a workload object.
pub(crate) fn scale_of(obj: &Value) -> Value {
    let meta = meta(obj).cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.into(), v.clone());
        }
    }
    let selector = obj
        .pointer("/spec/selector")
        .and_then(|s| LabelSelector::from_json(s).ok())
        .map(|s| s.to_query())
        .unwrap_or_default();
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": obj.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": {
            "replicas": obj.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0),
            "selector": selector,
        }
    })
}

/// Writes a Scale's `spec.replicas` into the workload object. A Scale carrying a
/// resourceVersion is a precondition (stale → 409 Conflict, checked by the update).
pub(crate) fn apply_scale(obj: &mut Value, scale: &Value) -> Result<(), ApiError> {
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.replicas of a Scale must be an integer"))?,
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("replicas".into(), Value::from(replicas));
    }
    let rv = scale
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !rv.is_empty() {
        crate::object::meta_mut(obj).insert("resourceVersion".into(), Value::from(rv));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_round_trip() {
        let mut deploy = json!({"metadata": {"name": "web", "namespace": "default", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}, "status": {"replicas": 1}});
        let scale = scale_of(&deploy);
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(
            scale["status"],
            json!({"replicas": 1, "selector": "app=web"})
        );
        assert_eq!(scale["metadata"]["resourceVersion"], "7");
        assert!(scale["metadata"].get("labels").is_none());
        apply_scale(&mut deploy, &json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(deploy["spec"]["replicas"], 5);
        assert_eq!(deploy["metadata"]["resourceVersion"], "7");
        apply_scale(
            &mut deploy,
            &json!({"metadata": {"resourceVersion": "3"}, "spec": {"replicas": 1}}),
        )
        .unwrap();
        assert_eq!(deploy["metadata"]["resourceVersion"], "3");
        assert_eq!(
            apply_scale(&mut deploy, &json!({"spec": {"replicas": "x"}}))
                .unwrap_err()
                .code,
            400
        );
    }
}
