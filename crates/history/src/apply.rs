//! `ApplyRevision`: rebuild a StatefulSet as it was at a revision by applying the revision's
//! data to the current set as a strategic merge patch.
//!
//! StatefulSet revision data only ever holds `spec.template` with `"$patch":"replace"`, so the
//! template becomes exactly the stored one and everything else (replicas, strategy, status) stays
//! the current set's. The merge implemented here covers what such patches use: recursive map
//! merge, `null` deleting a key, and the `replace` and `delete` directives on maps. Lists are
//! replaced wholesale (no merge keys); other `$`-directives are ignored.

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use serde_json::{Map, Value};

use crate::Error;

const PATCH_DIRECTIVE: &str = "$patch";

/// The raw set with the revision's data merged in.
pub fn apply_revision(set: &Value, revision: &ControllerRevision) -> Result<Value, Error> {
    let patch = revision
        .data
        .as_ref()
        .map(|data| &data.0)
        .filter(|data| !data.is_null())
        .ok_or_else(|| Error::MissingData(revision.metadata.name.clone().unwrap_or_default()))?;
    let mut applied = set.clone();
    merge(&mut applied, patch);
    Ok(applied)
}

/// [`apply_revision`] for a typed set, for building pods from the current and update revisions.
pub fn apply_revision_to_statefulset(
    set: &StatefulSet,
    revision: &ControllerRevision,
) -> Result<StatefulSet, Error> {
    let applied = apply_revision(&serde_json::to_value(set)?, revision)?;
    Ok(serde_json::from_value(applied)?)
}

fn directive(patch: &Map<String, Value>) -> Option<&str> {
    patch.get(PATCH_DIRECTIVE).and_then(Value::as_str)
}

fn without_directives(patch: &Map<String, Value>) -> Map<String, Value> {
    patch
        .iter()
        .filter(|(key, _)| !key.starts_with('$'))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if directive(patch_map) == Some("replace") {
        *target = Value::Object(without_directives(patch_map));
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else {
        return;
    };
    for (key, patch_value) in patch_map {
        if key.starts_with('$') {
            continue;
        }
        let deletes = match patch_value {
            Value::Null => true,
            Value::Object(nested) => directive(nested) == Some("delete"),
            _ => false,
        };
        if deletes {
            target_map.remove(key);
        } else {
            merge(
                target_map.entry(key.clone()).or_insert(Value::Null),
                patch_value,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    use serde_json::json;

    use super::*;

    fn revision_with(data: Option<Value>) -> ControllerRevision {
        ControllerRevision {
            data: data.map(RawExtension),
            revision: 1,
            ..ControllerRevision::default()
        }
    }

    #[test]
    fn merging() {
        let cases = [
            (
                "replace swaps the whole template",
                json!({"spec":{"replicas":3,"template":{"metadata":{"labels":{"a":"1"}},"spec":{"x":1}}}}),
                json!({"spec":{"template":{"$patch":"replace","spec":{"y":2}}}}),
                json!({"spec":{"replicas":3,"template":{"spec":{"y":2}}}}),
            ),
            (
                "replace keeps nulls of the stored template",
                json!({"spec":{"template":{}}}),
                json!({"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null}}}}),
                json!({"spec":{"template":{"metadata":{"creationTimestamp":null}}}}),
            ),
            (
                "maps merge recursively",
                json!({"a":{"b":1,"c":2}}),
                json!({"a":{"c":3,"d":4}}),
                json!({"a":{"b":1,"c":3,"d":4}}),
            ),
            (
                "null deletes",
                json!({"a":{"b":1,"c":2}}),
                json!({"a":{"b":null}}),
                json!({"a":{"c":2}}),
            ),
            (
                "delete directive removes a map",
                json!({"a":{"b":1},"z":0}),
                json!({"a":{"$patch":"delete"}}),
                json!({"z":0}),
            ),
            (
                "lists are replaced",
                json!({"a":[1,2,3]}),
                json!({"a":[4]}),
                json!({"a":[4]}),
            ),
            (
                "missing target is created",
                json!({}),
                json!({"spec":{"template":{"$patch":"replace","k":"v"}}}),
                json!({"spec":{"template":{"k":"v"}}}),
            ),
            (
                "scalar target becomes a map",
                json!({"a":1}),
                json!({"a":{"b":2}}),
                json!({"a":{"b":2}}),
            ),
            (
                "other directives are ignored",
                json!({"a":{"b":1}}),
                json!({"a":{"$retainKeys":["b"],"c":2}}),
                json!({"a":{"b":1,"c":2}}),
            ),
        ];
        for (name, set, patch, want) in cases {
            let applied = apply_revision(&set, &revision_with(Some(patch))).expect("data present");
            assert_eq!(applied, want, "{name}");
        }
    }

    #[test]
    fn missing_data_is_an_error() {
        for data in [None, Some(Value::Null)] {
            let result = apply_revision(&json!({}), &revision_with(data));
            assert!(matches!(result, Err(Error::MissingData(_))), "{result:?}");
        }
    }

    #[test]
    fn typed_application_changes_only_the_template() {
        let set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "serviceName": "web",
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "new"}]}}
            }
        }))
        .expect("valid set");
        let revision = revision_with(Some(
            json!({"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"old"}]}}}}),
        ));
        let applied = apply_revision_to_statefulset(&set, &revision).expect("applies");
        let spec = applied.spec.expect("spec kept");
        assert_eq!(spec.replicas, Some(3));
        let image = spec
            .template
            .spec
            .and_then(|pod| pod.containers.into_iter().next())
            .and_then(|c| c.image);
        assert_eq!(image.as_deref(), Some("old"));
    }
}
