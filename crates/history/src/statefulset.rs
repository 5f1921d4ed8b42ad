//! StatefulSet revision data (`getPatch`) and revisions (`newRevision`).
//!
//! The data is a strategic merge patch `{"spec":{"template":{"$patch":"replace", ...}}}` built
//! from the set's `spec.template` **exactly as the API server sent it**
//! ([`template_revision_data`], shared with the DaemonSet controller).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::Value;

use crate::Error;
#[cfg(test)]
use crate::go_json;
use crate::revision::{RevisionParent, new_controller_revision};
use crate::template_patch::template_revision_data;

/// Pod label naming the ControllerRevision (by *name*) a StatefulSet pod was built from.
pub const STATEFULSET_REVISION_LABEL: &str = "controller-revision-hash";

/// `getPatch`: the revision data for a raw `spec.template`, keys sorted at every level, with
/// `"$patch":"replace"` added to the template (the same data as a DaemonSet's:
/// [`template_revision_data`]).
pub fn statefulset_revision_data(raw_template: &Value) -> Result<Value, Error> {
    template_revision_data(raw_template)
}

/// `newRevision`: the revision upstream would propose for the raw StatefulSet `set` (the whole
/// object as the server sent it): data from its template, labels from the template's labels,
/// annotations copied from the set, a controller reference to the set, and name and hash from
/// the data and `collision_count` (upstream always passes a count: `status.collisionCount`,
/// or 0).
pub fn new_statefulset_revision(
    set: &Value,
    revision: i64,
    collision_count: i32,
) -> Result<ControllerRevision, Error> {
    let parent = RevisionParent {
        api_version: "apps/v1".to_owned(),
        kind: "StatefulSet".to_owned(),
        name: required_string(set, "/metadata/name")?,
        uid: required_string(set, "/metadata/uid")?,
    };
    let template = set
        .pointer("/spec/template")
        .ok_or_else(|| Error::NotAnObject {
            path: "spec.template".to_owned(),
        })?;
    let data = statefulset_revision_data(template)?;
    let labels = string_map(set, "/spec/template/metadata/labels")?;
    let mut created =
        new_controller_revision(&parent, &labels, &data, revision, Some(collision_count))?;
    let annotations = string_map(set, "/metadata/annotations")?;
    if !annotations.is_empty() {
        created.metadata.annotations = Some(annotations);
    }
    Ok(created)
}

fn dotted(pointer: &str) -> String {
    pointer.trim_start_matches('/').replace('/', ".")
}

fn required_string(object: &Value, pointer: &str) -> Result<String, Error> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Error::NotAString {
            path: dotted(pointer),
        })
}

/// A string map such as labels; absent or `null` means empty, as in Go.
fn string_map(object: &Value, pointer: &str) -> Result<BTreeMap<String, String>, Error> {
    match object.pointer(pointer) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => Ok((key.clone(), text.clone())),
                _ => Err(Error::NotAString {
                    path: format!("{}.{key}", dotted(pointer)),
                }),
            })
            .collect(),
        Some(_) => Err(Error::NotAnObject {
            path: dotted(pointer),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn set(template: Value) -> Value {
        json!({"metadata": {"name": "web", "uid": "u"}, "spec": {"template": template}})
    }

    #[test]
    fn data_shape() {
        let data =
            statefulset_revision_data(&json!({"spec": {"b": 1, "a": null}, "$patch": "merge"}))
                .expect("object");
        let text = String::from_utf8(go_json::encode(&data).expect("encodable")).expect("utf-8");
        // An existing directive is overwritten, nulls are kept, keys sorted.
        assert_eq!(
            text,
            r#"{"spec":{"template":{"$patch":"replace","spec":{"a":null,"b":1}}}}"#
        );
        assert_eq!(serde_json::to_string(&data).expect("serializable"), text);
    }

    #[test]
    fn invalid_sets_are_errors() {
        let cases = [
            (
                "template not an object",
                set(json!([1])),
                "spec.template must be a JSON object",
            ),
            (
                "template missing",
                json!({"metadata": {"name": "web", "uid": "u"}, "spec": {}}),
                "spec.template must be a JSON object",
            ),
            (
                "name missing",
                json!({"metadata": {"uid": "u"}, "spec": {"template": {}}}),
                "metadata.name must be a string",
            ),
            (
                "uid missing",
                json!({"metadata": {"name": "web"}, "spec": {"template": {}}}),
                "metadata.uid must be a string",
            ),
            (
                "labels not a map",
                set(json!({"metadata": {"labels": ["a"]}})),
                "spec.template.metadata.labels must be a JSON object",
            ),
            (
                "label not a string",
                set(json!({"metadata": {"labels": {"a": 1}}})),
                "spec.template.metadata.labels.a must be a string",
            ),
        ];
        for (name, input, want) in cases {
            let error = new_statefulset_revision(&input, 1, 0).expect_err(name);
            assert_eq!(error.to_string(), want, "{name}");
        }
    }

    #[test]
    fn null_labels_are_empty() {
        let revision = new_statefulset_revision(&set(json!({"metadata": {"labels": null}})), 1, 0)
            .expect("valid");
        let labels = revision.metadata.labels.expect("hash label present");
        assert_eq!(
            labels.keys().collect::<Vec<_>>(),
            vec![crate::CONTROLLER_REVISION_HASH_LABEL]
        );
    }
}
