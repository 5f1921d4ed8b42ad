//! Small accessors on JSON objects (metadata fields, labels, owner references, finalizers)
//! and the canonical field order upstream serializes objects in.

use serde_json::{Map, Value};

use crate::selector::Labels;

/// A link from a dependent to its owner, as the garbage collector needs it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OwnerLink {
    pub uid: Box<str>,
    /// `blockOwnerDeletion`: foreground deletion of the owner waits for this dependent.
    pub block: bool,
}

/// The current time as upstream serializes `metav1.Time` (RFC 3339, seconds).
pub(crate) fn now_timestamp() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A time `secs` from now, in the same format.
pub(crate) fn timestamp_in(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `metadata`, if the object has one.
pub(crate) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created when missing (and replaced when not an object).
pub(crate) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    let Value::Object(map) = obj else {
        *obj = Value::Object(Map::new());
        return meta_mut(obj);
    };
    let entry = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string field of `metadata` ("" when absent).
pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.labels` as a map (non-string values are ignored).
pub(crate) fn labels_of(obj: &Value) -> Labels {
    meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|l| {
            l.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The array at `metadata.<field>`, empty when it is absent or not an array.
fn meta_array<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `metadata.ownerReferences` reduced to what the garbage collector uses.
pub(crate) fn owners_of(obj: &Value) -> Vec<OwnerLink> {
    meta_array(obj, "ownerReferences")
        .iter()
        .filter_map(|r| {
            let uid = r.get("uid")?.as_str()?;
            let block = r
                .get("blockOwnerDeletion")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            Some(OwnerLink {
                uid: uid.into(),
                block,
            })
        })
        .collect()
}

/// `metadata.finalizers`.
pub(crate) fn finalizers_of(obj: &Value) -> Vec<String> {
    meta_array(obj, "finalizers")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Replaces `metadata.finalizers` (removing the field when empty, as upstream omits it).
pub(crate) fn set_finalizers(obj: &mut Value, finalizers: Vec<String>) {
    let meta = meta_mut(obj);
    if finalizers.is_empty() {
        meta.remove("finalizers");
    } else {
        meta.insert("finalizers".into(), Value::from(finalizers));
    }
}

/// The order upstream's `ObjectMeta` serializes its fields in.
const META_ORDER: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Reorders `obj` as upstream serializes it: kind, apiVersion, metadata (fields in
/// `ObjectMeta` order), then the rest in their current order.
pub(crate) fn canonicalize(obj: Value, kind: &str, api_version: &str) -> Value {
    let Value::Object(mut map) = obj else {
        return obj;
    };
    let mut out = Map::new();
    out.insert("kind".into(), Value::from(kind));
    out.insert("apiVersion".into(), Value::from(api_version));
    map.remove("kind");
    map.remove("apiVersion");
    let mut meta = match map.remove("metadata") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut ordered = Map::new();
    for key in META_ORDER {
        if let Some(v) = meta.remove(*key) {
            ordered.insert((*key).to_string(), v);
        }
    }
    ordered.extend(meta);
    out.insert("metadata".into(), Value::Object(ordered));
    out.extend(map);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_order() {
        let obj = json!({"spec": {}, "metadata": {"labels": {"a": "b"}, "name": "x", "uid": "u"}, "kind": "Pod"});
        let out = canonicalize(obj, "Pod", "v1");
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x","uid":"u","labels":{"a":"b"}},"spec":{}}"#
        );
    }

    #[test]
    fn accessors() {
        let obj = json!({"metadata": {"name": "x", "labels": {"a": "b"}, "finalizers": ["f"],
            "ownerReferences": [{"uid": "o1", "blockOwnerDeletion": true}, {"uid": "o2"}]}});
        assert_eq!(meta_str(&obj, "name"), "x");
        assert_eq!(meta_str(&obj, "uid"), "");
        assert_eq!(labels_of(&obj).get("a").map(String::as_str), Some("b"));
        assert_eq!(finalizers_of(&obj), vec!["f".to_string()]);
        assert_eq!(
            owners_of(&obj),
            vec![
                OwnerLink {
                    uid: "o1".into(),
                    block: true
                },
                OwnerLink {
                    uid: "o2".into(),
                    block: false
                }
            ]
        );
        let mut obj = obj;
        set_finalizers(&mut obj, vec![]);
        assert!(meta(&obj).unwrap().get("finalizers").is_none());
    }
}
