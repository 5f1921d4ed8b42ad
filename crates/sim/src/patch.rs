//! The three patch types upstream accepts from controllers and kubectl: JSON merge patch
//! (RFC 7386), JSON patch (RFC 6902) and strategic merge patch (lists merged by their merge
//! key — containers by `name`, ownerReferences by `uid`, conditions by `type` — with the
//! `$patch`, `$deleteFromPrimitiveList` and `$setElementOrder` directives).

use serde_json::{Map, Value};

use crate::status::ApiError;

/// A patch body's type, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    Merge,
    Json,
    Strategic,
    /// Server-side apply, approximated as a merge patch that may create the object.
    Apply,
}

impl PatchType {
    /// Parses the Content-Type header of a PATCH.
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        match mime {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchType::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Applies `body` as a patch of type `patch_type` to `target`.
pub(crate) fn apply(
    patch_type: PatchType,
    target: &mut Value,
    body: &[u8],
) -> Result<(), ApiError> {
    match patch_type {
        PatchType::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(target, &ops.0).map_err(|e| {
                let mut err = ApiError::bad_request(format!(
                    "the server rejected our request due to an error in our request: {e}"
                ));
                err.code = 422;
                err.reason = "Invalid";
                err
            })
        }
        PatchType::Merge | PatchType::Apply => {
            let patch: Value = parse(body)?;
            json_patch::merge(target, &patch);
            Ok(())
        }
        PatchType::Strategic => {
            let patch: Value = parse(body)?;
            strategic_merge(target, &patch);
            Ok(())
        }
    }
}

fn parse(body: &[u8]) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if !patch.is_object() {
        return Err(ApiError::bad_request("patch body must be a JSON object"));
    }
    Ok(patch)
}

/// How a list field merges in a strategic merge patch.
enum ListStrategy {
    /// Elements are maps merged by this key.
    MergeByKey(&'static str),
    /// Elements are primitives; the union is kept (finalizers).
    MergePrimitives,
    /// The patch list replaces the list.
    Replace,
}

/// Upstream's patch strategies for the list fields controllers and kubectl patch.
fn list_strategy(field: &str) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => ListStrategy::MergeByKey("name"),
        "ownerReferences" => ListStrategy::MergeByKey("uid"),
        "conditions" => ListStrategy::MergeByKey("type"),
        "ports" => ListStrategy::MergeByKey("containerPort"),
        "volumeMounts" => ListStrategy::MergeByKey("mountPath"),
        "volumeDevices" => ListStrategy::MergeByKey("devicePath"),
        "podIPs" | "hostIPs" | "hostAliases" => ListStrategy::MergeByKey("ip"),
        // A node's status addresses.
        "addresses" => ListStrategy::MergeByKey("type"),
        "topologySpreadConstraints" => ListStrategy::MergeByKey("topologyKey"),
        "finalizers" => ListStrategy::MergePrimitives,
        _ => ListStrategy::Replace,
    }
}

/// Strategic merge of `patch` into `target` (both JSON objects at the top).
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) {
    let Some(patch_map) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut replaced = patch_map.clone();
            replaced.remove("$patch");
            *target = Value::Object(replaced);
            return;
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(target_map) = target.as_object_mut() else {
        return;
    };
    for (key, value) in patch_map {
        if key == "$patch" || key.starts_with("$setElementOrder/") || key == "$retainKeys" {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Some(remove)) =
                (target_map.get_mut(field), value.as_array())
            {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if value.is_null() {
            target_map.remove(key);
            continue;
        }
        match value {
            Value::Object(obj) if obj.get("$patch").and_then(Value::as_str) == Some("delete") => {
                target_map.remove(key);
            }
            Value::Object(_) => {
                let entry = target_map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                strategic_merge(entry, value);
            }
            Value::Array(items) => {
                let merged = merge_list(target_map.get(key), items, list_strategy(key));
                target_map.insert(key.clone(), Value::Array(merged));
            }
            other => {
                target_map.insert(key.clone(), other.clone());
            }
        }
    }
}

fn merge_list(current: Option<&Value>, patch: &[Value], strategy: ListStrategy) -> Vec<Value> {
    if patch
        .iter()
        .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        return patch
            .iter()
            .filter(|p| p.get("$patch").is_none())
            .cloned()
            .collect();
    }
    let mut list: Vec<Value> = current
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match strategy {
        ListStrategy::Replace => patch.to_vec(),
        ListStrategy::MergePrimitives => {
            for item in patch {
                if !list.contains(item) {
                    list.push(item.clone());
                }
            }
            list
        }
        ListStrategy::MergeByKey(merge_key) => {
            for item in patch {
                let Some(key_value) = item.get(merge_key) else {
                    list.push(item.clone());
                    continue;
                };
                let position = list
                    .iter()
                    .position(|e| e.get(merge_key) == Some(key_value));
                let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                match (position, delete) {
                    (Some(i), true) => {
                        list.remove(i);
                    }
                    (None, true) => {}
                    (Some(i), false) => strategic_merge(&mut list[i], item),
                    (None, false) => {
                        let mut fresh = Value::Object(Map::new());
                        strategic_merge(&mut fresh, item);
                        list.push(fresh);
                    }
                }
            }
            list
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_cases() {
        let cases = [
            (
                "maps merge, null deletes",
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
                json!({"metadata": {"labels": {"b": null, "c": "3"}}}),
                json!({"metadata": {"labels": {"a": "1", "c": "3"}}}),
            ),
            (
                "ownerReferences merged by uid",
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}),
            ),
            (
                "ownerReferences deleted by uid",
                json!({"metadata": {"ownerReferences": [{"uid": "1"}, {"uid": "2"}]}}),
                json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2"}]}}),
            ),
            (
                "containers merged by name",
                json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}),
                json!({"spec": {"containers": [{"name": "b", "image": "z"}]}}),
                json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]}}),
            ),
            (
                "other lists replaced",
                json!({"spec": {"args": ["a", "b"]}}),
                json!({"spec": {"args": ["c"]}}),
                json!({"spec": {"args": ["c"]}}),
            ),
            (
                "finalizers union and delete directive",
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["b", "c"]}}),
            ),
            (
                "$patch replace on a map",
                json!({"spec": {"template": {"a": 1, "b": 2}}}),
                json!({"spec": {"template": {"$patch": "replace", "c": 3}}}),
                json!({"spec": {"template": {"c": 3}}}),
            ),
            (
                "$setElementOrder ignored",
                json!({"spec": {"containers": [{"name": "a"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "a", "image": "i"}]}}),
                json!({"spec": {"containers": [{"name": "a", "image": "i"}]}}),
            ),
        ];
        for (what, mut target, patch, expected) in cases {
            strategic_merge(&mut target, &patch);
            assert_eq!(target, expected, "{what}");
        }
    }

    #[test]
    fn merge_and_json_patch() {
        let mut doc = json!({"spec": {"replicas": 1, "paused": true}});
        apply(
            PatchType::Merge,
            &mut doc,
            br#"{"spec":{"replicas":3,"paused":null}}"#,
        )
        .unwrap();
        assert_eq!(doc, json!({"spec": {"replicas": 3}}));
        apply(
            PatchType::Json,
            &mut doc,
            br#"[{"op":"replace","path":"/spec/replicas","value":5}]"#,
        )
        .unwrap();
        assert_eq!(doc, json!({"spec": {"replicas": 5}}));
        let err = apply(
            PatchType::Json,
            &mut doc,
            br#"[{"op":"test","path":"/spec/replicas","value":1}]"#,
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json").unwrap(),
            PatchType::Strategic
        );
        assert_eq!(
            PatchType::from_content_type("text/plain").unwrap_err().code,
            415
        );
    }
}
