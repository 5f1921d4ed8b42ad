//! A cached pod's metadata: `ObjectMeta` with the labels taken out and kept as
//! [`CompactLabels`] (see that type for why).
//!
//! [`PodMetadata`] derefs to its `ObjectMeta`, so `pod.metadata.name` reads as on a `Pod`,
//! while `pod.metadata.labels` names the compact labels: a field of `PodMetadata` is found
//! before one of the `ObjectMeta` behind it. Code written for a `Pod`'s map therefore fails to
//! compile instead of reading the empty `ObjectMeta::labels`; generic code reads labels
//! through [`crate::Labeled`].

use std::{
    collections::BTreeMap,
    ops::{Deref, DerefMut},
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;

use super::CompactLabels;

/// A pod's metadata as cached: everything but `managedFields` (never read), the labels
/// compact.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodMetadata {
    /// The rest of the metadata; its `labels` and `managed_fields` are always `None`.
    object_meta: ObjectMeta,
    /// `metadata.labels`.
    pub labels: CompactLabels,
}

impl Deref for PodMetadata {
    type Target = ObjectMeta;

    fn deref(&self) -> &ObjectMeta {
        &self.object_meta
    }
}

impl DerefMut for PodMetadata {
    fn deref_mut(&mut self) -> &mut ObjectMeta {
        &mut self.object_meta
    }
}

impl PodMetadata {
    /// The metadata as an `ObjectMeta`, labels included (for a `Pod` built from a cached one).
    pub fn to_object_meta(&self) -> ObjectMeta {
        ObjectMeta {
            labels: (!self.labels.is_empty()).then(|| self.labels.to_map()),
            ..self.object_meta.clone()
        }
    }
}

/// The cached form of a pod's full metadata.
impl From<ObjectMeta> for PodMetadata {
    fn from(mut object_meta: ObjectMeta) -> Self {
        let labels = object_meta
            .labels
            .take()
            .map(|labels| CompactLabels::from(&labels))
            .unwrap_or_default();
        object_meta.managed_fields = None;
        Self {
            object_meta,
            labels,
        }
    }
}

/// `ObjectMeta`'s fields as the API server writes them, but the labels decoded straight into
/// [`CompactLabels`] (no map built on the way) and `managedFields` skipped unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    #[serde(default)]
    labels: CompactLabels,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl<'de> Deserialize<'de> for PodMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::deserialize(deserializer)?;
        Ok(Self {
            object_meta: ObjectMeta {
                annotations: wire.annotations,
                creation_timestamp: wire.creation_timestamp,
                deletion_grace_period_seconds: wire.deletion_grace_period_seconds,
                deletion_timestamp: wire.deletion_timestamp,
                finalizers: wire.finalizers,
                generate_name: wire.generate_name,
                generation: wire.generation,
                labels: None,
                managed_fields: None,
                name: wire.name,
                namespace: wire.namespace,
                owner_references: wire.owner_references,
                resource_version: wire.resource_version,
                self_link: wire.self_link,
                uid: wire.uid,
            },
            labels: wire.labels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata as a real API server returns it, every field set.
    fn full_metadata() -> serde_json::Value {
        serde_json::json!({
            "annotations": {"a": "1"},
            "creationTimestamp": "2026-11-23T10:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "deletionTimestamp": "2026-11-23T10:05:00Z",
            "finalizers": ["f"],
            "generateName": "web-",
            "generation": 2,
            "labels": {"app": "web", "pod-template-hash": "5d8f7c9b4"},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
            "name": "web-x",
            "namespace": "ns",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                 "uid": "u1", "controller": true}],
            "resourceVersion": "7",
            "selfLink": "/api/v1/namespaces/ns/pods/web-x",
            "uid": "u0"
        })
    }

    /// Decoding keeps every field `ObjectMeta` decodes, bar `managedFields`, and the labels
    /// compact: the same as converting the decoded `ObjectMeta`.
    #[test]
    fn decoding_keeps_what_object_meta_keeps() {
        let decoded: PodMetadata = serde_json::from_value(full_metadata()).expect("decodes");
        let object_meta: ObjectMeta = serde_json::from_value(full_metadata()).expect("decodes");
        assert!(object_meta.managed_fields.is_some());
        assert_eq!(decoded, PodMetadata::from(object_meta.clone()));
        assert_eq!(
            decoded.labels.to_map(),
            object_meta.labels.unwrap_or_default()
        );
        assert_eq!(decoded.name.as_deref(), Some("web-x"));
        assert!(decoded.object_meta.labels.is_none());
        assert!(decoded.managed_fields.is_none());
    }

    #[test]
    fn missing_and_null_parts_decode_as_object_meta_decodes_them() {
        for json in [
            serde_json::json!({}),
            serde_json::json!({"labels": null, "annotations": null, "ownerReferences": null}),
        ] {
            let decoded: PodMetadata = serde_json::from_value(json.clone()).expect("decodes");
            let object_meta: ObjectMeta = serde_json::from_value(json.clone()).expect("decodes");
            assert_eq!(decoded, PodMetadata::from(object_meta), "{json}");
            assert!(decoded.labels.is_empty(), "{json}");
        }
    }
}
