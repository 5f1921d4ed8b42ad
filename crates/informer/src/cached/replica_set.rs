//! The ReplicaSet as the controllers cache it: the whole object, its pod template and selector
//! as compact JSON.
//!
//! Why: a k8s-openapi `ReplicaSet` is 2,336 bytes inline and its template's containers 2,144
//! each, plus a B-tree node per label and annotation map; a Deployment keeps its old
//! ReplicaSets as history, so they outnumber the Deployments. The pod template is large and
//! read only to create pods or to compare it, and the selector's `matchLabels` is a 544-byte
//! B-tree node read only when a sync builds its selector, so both are kept as JSON
//! ([`CompactPodTemplate`], [`CompactLabelSelector`]), the labels and annotations as
//! [`super::CompactLabels`] ([`super::WorkloadMetadata`]), and everything else as k8s-openapi
//! decodes it.

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use serde::{Deserialize, Serialize};

use super::{CompactLabelSelector, CompactPodTemplate};

super::cached_resource! {
    /// A ReplicaSet: metadata, spec and status as the API server sent them, the template
    /// compact. It serializes back to the same JSON as the `ReplicaSet` it was decoded from, so
    /// a controller can PUT it.
    pub struct CachedReplicaSet for ReplicaSet {
        /// The ReplicaSet's metadata.
        metadata: super::WorkloadMetadata,
        /// The ReplicaSet's spec.
        spec: CachedReplicaSetSpec,
        /// The ReplicaSet's status.
        status: ReplicaSetStatus,
    }
}

/// A `ReplicaSetSpec` with the template compact; field names follow `ReplicaSetSpec`'s.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedReplicaSetSpec {
    /// `minReadySeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// `replicas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// `selector`, as compact JSON.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub selector: CompactLabelSelector,
    /// `template`, as compact JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<CompactPodTemplate>,
}

super::whole_api_object!(CachedReplicaSet, ReplicaSet, CachedReplicaSetSpec);

impl TryFrom<&ReplicaSetSpec> for CachedReplicaSetSpec {
    type Error = serde_json::Error;

    fn try_from(spec: &ReplicaSetSpec) -> Result<Self, Self::Error> {
        Ok(CachedReplicaSetSpec {
            min_ready_seconds: spec.min_ready_seconds,
            replicas: spec.replicas,
            selector: CompactLabelSelector::encode(&spec.selector)?,
            template: spec
                .template
                .as_ref()
                .map(CompactPodTemplate::encode)
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::List;

    use super::*;

    fn fixture() -> List<ReplicaSet> {
        serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/apiserver-v1.28/replicaset-list.json"
        )))
        .expect("fixture parses")
    }

    #[test]
    fn decodes_what_the_api_server_sends_and_writes_it_back_unchanged() {
        let text = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/fixtures/apiserver-v1.28/replicaset-list.json"
        ));
        let cached: kube::core::ObjectList<CachedReplicaSet> =
            serde_json::from_str(text).expect("decodes, as `Api::list` does");
        for (cached, full) in cached.items.iter().zip(fixture().items) {
            assert_eq!(
                serde_json::to_value(cached).expect("serializes"),
                serde_json::to_value(&full).expect("serializes"),
                "a PUT of the cached copy sends what a PUT of the full object would"
            );
            let template = cached
                .spec
                .as_ref()
                .and_then(|spec| spec.template.as_ref())
                .expect("template");
            assert_eq!(
                Some(template.decode()),
                full.spec.and_then(|spec| spec.template)
            );
        }
    }

    #[test]
    fn converting_a_full_replica_set_keeps_what_decoding_keeps() {
        for full in fixture().items {
            let decoded: CachedReplicaSet =
                serde_json::from_value(serde_json::to_value(&full).expect("serializes"))
                    .expect("decodes");
            assert_eq!(
                CachedReplicaSet::try_from(&full).expect("converts"),
                decoded
            );
        }
        let bare = ReplicaSet::default();
        assert_eq!(
            CachedReplicaSet::try_from(&bare).expect("converts"),
            CachedReplicaSet::default()
        );
    }

    #[test]
    fn resource_identity_is_the_replica_sets() {
        use kube::Resource;
        assert_eq!(CachedReplicaSet::kind(&()), "ReplicaSet");
        assert_eq!(CachedReplicaSet::api_version(&()), "apps/v1");
        assert_eq!(CachedReplicaSet::plural(&()), "replicasets");
    }
}
