//! The workload objects as the controllers cache them: types of our own, decoded straight from
//! the API server's JSON, that keep what the controllers read in far less memory than
//! k8s-openapi's types (a client-go transform, done at decode time).
//!
//! * [`CachedPod`]: only the fields the workload controllers read; never written back.
//! * [`CachedNode`]: a node's name, labels and taints, what the DaemonSet controller reads.
//! * [`RawObject`]: a whole object with the JSON the server sent, for the controllers whose
//!   revision data must be built from that JSON byte for byte (StatefulSets, DaemonSets).
//! * [`CachedReplicaSet`], [`CachedDeployment`]: the whole object, with the pod template and
//!   the selector held as compact JSON ([`CompactPodTemplate`], [`CompactLabelSelector`]) and
//!   the labels and annotations as [`CompactLabels`] ([`WorkloadMetadata`]); they serialize
//!   back losslessly, so the controllers PUT them as they are.
//!
//! Each implements k8s-openapi's `Resource` and `Metadata` under its API type's group, version
//! and kind, so `kube::Api`, the watcher and the informers take it like the API type.

mod compact_json;
mod compact_labels;
mod deployment;
#[cfg(test)]
mod hostile_decode;
mod metadata;
mod node;
mod pod;
mod raw;
mod replica_set;
mod template;

pub use compact_json::CompactJson;
#[cfg(test)]
pub(crate) use compact_labels::label_map;
pub use compact_labels::{CompactLabels, LabelEntries};
pub use deployment::{CachedDeployment, CachedDeploymentSpec};
pub use metadata::{PodMetadata, WorkloadMetadata};
pub use node::{CachedNode, CachedNodeSpec};
pub use pod::{
    CachedContainer, CachedContainerStatus, CachedPod, CachedPodCondition, CachedPodConditions,
    CachedPodSpec, CachedPodStatus, ClaimVolume, KUBELET_CONDITION_TYPES, PodNode, ReadyCondition,
    TerminatedState,
};
pub use raw::RawObject;
pub use replica_set::{CachedReplicaSet, CachedReplicaSetSpec};
pub use template::CompactPodTemplate;

/// A label selector held as compact JSON (k8s-openapi's serialization of a `LabelSelector`);
/// its default is the empty selector, `{}`. Decoded when a sync builds its selector.
pub type CompactLabelSelector =
    CompactJson<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>;

/// Declares a cached type standing for the k8s-openapi type `$api`, decoded straight from the
/// API server's JSON: its metadata of type `$metadata` (an `ObjectMeta`, or one that derefs to it;
/// missing or `null` is the default, as k8s-openapi decodes it), an optional
/// spec and an optional status, each documented at the call. Implements `k8s_openapi::Resource`
/// and `Metadata` for it with `$api`'s API identity, so every cached type is shaped and
/// identified alike.
macro_rules! cached_resource {
    (
        $(#[$attr:meta])*
        pub struct $cached:ident for $api:ty {
            $(#[$metadata_attr:meta])*
            metadata: $metadata:ty,
            $(#[$spec_attr:meta])*
            spec: $spec:ty,
            $(#[$status_attr:meta])*
            status: $status:ty,
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
        pub struct $cached {
            $(#[$metadata_attr])*
            #[serde(default, deserialize_with = "super::null_as_default")]
            pub metadata: $metadata,
            $(#[$spec_attr])*
            pub spec: Option<$spec>,
            $(#[$status_attr])*
            pub status: Option<$status>,
        }

        impl k8s_openapi::Resource for $cached {
            const API_VERSION: &'static str = <$api as k8s_openapi::Resource>::API_VERSION;
            const GROUP: &'static str = <$api as k8s_openapi::Resource>::GROUP;
            const KIND: &'static str = <$api as k8s_openapi::Resource>::KIND;
            const VERSION: &'static str = <$api as k8s_openapi::Resource>::VERSION;
            const URL_PATH_SEGMENT: &'static str =
                <$api as k8s_openapi::Resource>::URL_PATH_SEGMENT;
            type Scope = <$api as k8s_openapi::Resource>::Scope;
        }

        impl k8s_openapi::Metadata for $cached {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }
    };
}
pub(crate) use cached_resource;

/// Decodes `null` as the default value, as k8s-openapi decodes a `null` metadata: a cached
/// type must accept every object the API type accepts (one it could not decode would fail the
/// informer's whole list page).
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de> + Default,
{
    Ok(<Option<T> as serde::Deserialize>::deserialize(deserializer)?.unwrap_or_default())
}

/// For a cached type that keeps its whole object, with spec type `$spec`:
/// * `Serialize`: the body a PUT of the k8s-openapi type it stands for would send
///   ([`WireObject`]);
/// * `TryFrom<&$api>`: the cached form of a full object (one just written, or built in a test
///   or a fixture), failing only where `$spec`'s own `TryFrom` fails (the template cannot be
///   kept, [`CompactPodTemplate::encode`]).
macro_rules! whole_api_object {
    ($cached:ident, $api:ty, $spec:ty) => {
        impl serde::Serialize for $cached {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let wire = super::WireObject {
                    api_version: <$api as k8s_openapi::Resource>::API_VERSION,
                    kind: <$api as k8s_openapi::Resource>::KIND,
                    metadata: &self.metadata,
                    spec: self.spec.as_ref(),
                    status: self.status.as_ref(),
                };
                serde::Serialize::serialize(&wire, serializer)
            }
        }

        impl TryFrom<&$api> for $cached {
            type Error = serde_json::Error;

            fn try_from(object: &$api) -> Result<Self, Self::Error> {
                Ok($cached {
                    metadata: object.metadata.clone().into(),
                    spec: object.spec.as_ref().map(<$spec>::try_from).transpose()?,
                    status: object.status.clone(),
                })
            }
        }
    };
}
pub(crate) use whole_api_object;

/// An object as the API server takes it in a request body: `apiVersion` and `kind` first, as
/// k8s-openapi writes them, then metadata, spec and status.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct WireObject<'a, Metadata, Spec, Status> {
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a Metadata,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<&'a Spec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a Status>,
}
