//! Cached metadata with its string maps compact ([`CompactLabels`]; see that type for why):
//!
//! * [`PodMetadata`]: a pod's, the labels compact (the annotations stay a map, so that a
//!   cached pod in its `Arc` keeps within 512 bytes; the controllers read one annotation).
//! * [`WorkloadMetadata`]: a ReplicaSet's or Deployment's, labels and annotations compact; it
//!   serializes back to `ObjectMeta`'s JSON, as these objects are written back whole.
//!
//! Both deref to an `ObjectMeta` whose compacted maps are always `None`, so `rs.metadata.name`
//! reads as on the API type, while `pod.metadata.labels` or `rs.metadata.annotations` names
//! the compact map: a field of the outer type is found before one of the `ObjectMeta` behind
//! it. Code written for a map therefore fails to compile instead of reading the empty map;
//! generic code reads labels through [`crate::Labeled`]. One hole the compiler leaves: deref
//! coercion passes `&pod.metadata` to a function taking `&ObjectMeta`, which then sees no
//! labels (or, for a workload, no annotations); such functions must read only other fields,
//! or take the cached metadata type (as the Deployment controller's `revision` does).

use std::{
    collections::BTreeMap,
    ops::{Deref, DerefMut},
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use serde::{Deserialize, Serialize};

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

/// A ReplicaSet's or Deployment's metadata as cached: the labels and annotations compact, the
/// rest as `ObjectMeta` decodes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadMetadata {
    /// The rest of the metadata; its `labels` and `annotations` are always `None`.
    object_meta: ObjectMeta,
    /// `metadata.labels`.
    pub labels: CompactLabels,
    /// `metadata.annotations`.
    pub annotations: CompactLabels,
}

/// `Deref` and `DerefMut` to the `ObjectMeta` that `$metadata` holds the rest in.
macro_rules! deref_to_object_meta {
    ($($metadata:ty),*) => {
        $(
            impl Deref for $metadata {
                type Target = ObjectMeta;

                fn deref(&self) -> &ObjectMeta {
                    &self.object_meta
                }
            }

            impl DerefMut for $metadata {
                fn deref_mut(&mut self) -> &mut ObjectMeta {
                    &mut self.object_meta
                }
            }
        )*
    };
}

deref_to_object_meta!(PodMetadata, WorkloadMetadata);

/// A map of `ObjectMeta`, compact.
fn compact(map: Option<BTreeMap<String, String>>) -> CompactLabels {
    map.map(|map| CompactLabels::from(&map)).unwrap_or_default()
}

impl PodMetadata {
    /// The metadata as an `ObjectMeta`, labels included (for a `Pod` built from a cached one).
    pub fn to_object_meta(&self) -> ObjectMeta {
        ObjectMeta {
            labels: self.labels.to_optional_map(),
            ..self.object_meta.clone()
        }
    }
}

impl WorkloadMetadata {
    /// The metadata as an `ObjectMeta`, labels and annotations included.
    pub fn to_object_meta(&self) -> ObjectMeta {
        ObjectMeta {
            labels: self.labels.to_optional_map(),
            annotations: self.annotations.to_optional_map(),
            ..self.object_meta.clone()
        }
    }
}

/// The cached form of a pod's full metadata.
impl From<ObjectMeta> for PodMetadata {
    fn from(mut object_meta: ObjectMeta) -> Self {
        let labels = compact(object_meta.labels.take());
        object_meta.managed_fields = None;
        Self {
            object_meta,
            labels,
        }
    }
}

/// The cached form of a workload's full metadata.
impl From<ObjectMeta> for WorkloadMetadata {
    fn from(mut object_meta: ObjectMeta) -> Self {
        let labels = compact(object_meta.labels.take());
        let annotations = compact(object_meta.annotations.take());
        Self {
            object_meta,
            labels,
            annotations,
        }
    }
}

/// The JSON of the `ObjectMeta` it stands for (a workload is written back whole).
impl Serialize for WorkloadMetadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_object_meta().serialize(serializer)
    }
}

/// `ObjectMeta`'s fields as the API server writes them, with the labels decoded straight into
/// [`CompactLabels`] (no map built on the way) and the annotations as `Annotations`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<Annotations, ManagedFields> {
    #[serde(default)]
    annotations: Annotations,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    #[serde(default)]
    labels: CompactLabels,
    #[serde(default)]
    managed_fields: ManagedFields,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl<A, M> Wire<A, M> {
    /// The `ObjectMeta` of every field but the labels, annotations and managed fields.
    fn rest(self) -> (ObjectMeta, CompactLabels, A, M) {
        let object_meta = ObjectMeta {
            creation_timestamp: self.creation_timestamp,
            deletion_grace_period_seconds: self.deletion_grace_period_seconds,
            deletion_timestamp: self.deletion_timestamp,
            finalizers: self.finalizers,
            generate_name: self.generate_name,
            generation: self.generation,
            name: self.name,
            namespace: self.namespace,
            owner_references: self.owner_references,
            resource_version: self.resource_version,
            self_link: self.self_link,
            uid: self.uid,
            ..ObjectMeta::default()
        };
        (
            object_meta,
            self.labels,
            self.annotations,
            self.managed_fields,
        )
    }
}

/// Managed fields a pod's decode skips unread.
#[derive(Default)]
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Skipped)
    }
}

impl<'de> Deserialize<'de> for PodMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = Wire::<Option<BTreeMap<String, String>>, Skipped>::deserialize(deserializer)?;
        let (object_meta, labels, annotations, Skipped) = wire.rest();
        Ok(Self {
            object_meta: ObjectMeta {
                annotations,
                ..object_meta
            },
            labels,
        })
    }
}

impl<'de> Deserialize<'de> for WorkloadMetadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire =
            Wire::<CompactLabels, Option<Vec<ManagedFieldsEntry>>>::deserialize(deserializer)?;
        let (object_meta, labels, annotations, managed_fields) = wire.rest();
        Ok(Self {
            object_meta: ObjectMeta {
                managed_fields,
                ..object_meta
            },
            labels,
            annotations,
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

    /// A workload is written back whole: its metadata encodes to the JSON `ObjectMeta` would,
    /// an empty map kept and an absent one left out.
    #[test]
    fn workload_metadata_writes_back_what_object_meta_writes() {
        let cases = [
            full_metadata(),
            serde_json::json!({}),
            serde_json::json!({"name": "web", "labels": {}, "annotations": null}),
            serde_json::json!({"labels": null, "annotations": {}}),
        ];
        for json in cases {
            let decoded: WorkloadMetadata = serde_json::from_value(json.clone()).expect("decodes");
            let object_meta: ObjectMeta = serde_json::from_value(json.clone()).expect("decodes");
            assert_eq!(
                serde_json::to_value(&decoded).expect("encodes"),
                serde_json::to_value(&object_meta).expect("encodes"),
                "{json}"
            );
            assert_eq!(
                decoded,
                WorkloadMetadata::from(object_meta.clone()),
                "{json}"
            );
            assert_eq!(decoded.to_object_meta(), object_meta, "{json}");
        }
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
