//! The Deployment as the controllers cache it: the whole object, its pod template and selector
//! as compact JSON (see [`CompactPodTemplate`] and [`CompactLabelSelector`] for why), its labels
//! and annotations compact ([`super::WorkloadMetadata`]).

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStatus, DeploymentStrategy,
};
use serde::{Deserialize, Serialize};

use super::{CompactLabelSelector, CompactPodTemplate};

super::cached_resource! {
    /// A Deployment: metadata, spec and status as the API server sent them, the template
    /// compact. It serializes back to the same JSON as the `Deployment` it was decoded from, so
    /// a controller can PUT it.
    pub struct CachedDeployment for Deployment {
        /// The Deployment's metadata.
        metadata: super::WorkloadMetadata,
        /// The Deployment's spec.
        spec: CachedDeploymentSpec,
        /// The Deployment's status.
        status: DeploymentStatus,
    }
}

/// A `DeploymentSpec` with the template compact; field names follow `DeploymentSpec`'s.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedDeploymentSpec {
    /// `minReadySeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// `paused`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// `progressDeadlineSeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
    /// `replicas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// `revisionHistoryLimit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// `selector`, as compact JSON.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub selector: CompactLabelSelector,
    /// `strategy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    /// `template`, as compact JSON.
    #[serde(default, deserialize_with = "super::null_as_default")]
    pub template: CompactPodTemplate,
}

super::whole_api_object!(CachedDeployment, Deployment, CachedDeploymentSpec);

impl TryFrom<&DeploymentSpec> for CachedDeploymentSpec {
    type Error = serde_json::Error;

    fn try_from(spec: &DeploymentSpec) -> Result<Self, Self::Error> {
        Ok(CachedDeploymentSpec {
            min_ready_seconds: spec.min_ready_seconds,
            paused: spec.paused,
            progress_deadline_seconds: spec.progress_deadline_seconds,
            replicas: spec.replicas,
            revision_history_limit: spec.revision_history_limit,
            selector: CompactLabelSelector::encode(&spec.selector)?,
            strategy: spec.strategy.clone(),
            template: CompactPodTemplate::encode(&spec.template)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures/apiserver-v1.28/deployment.json"
    ));

    #[test]
    fn decodes_what_the_api_server_sends_and_writes_it_back_unchanged() {
        let cached: CachedDeployment = serde_json::from_str(FIXTURE).expect("decodes");
        let full: Deployment = serde_json::from_str(FIXTURE).expect("decodes");
        assert_eq!(
            serde_json::to_value(&cached).expect("serializes"),
            serde_json::to_value(&full).expect("serializes"),
            "a PUT of the cached copy sends what a PUT of the full object would"
        );
        let spec = cached.spec.as_ref().expect("spec");
        assert_eq!(
            spec.template.decode(),
            full.spec.as_ref().expect("spec").template
        );
        assert_eq!(CachedDeployment::try_from(&full).expect("converts"), cached);
    }

    #[test]
    fn resource_identity_is_the_deployments() {
        use kube::Resource;
        assert_eq!(CachedDeployment::kind(&()), "Deployment");
        assert_eq!(CachedDeployment::plural(&()), "deployments");
    }
}
