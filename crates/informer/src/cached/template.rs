//! Pod templates as the workload caches keep them: compact JSON, decoded when a controller
//! needs the template.
//!
//! Why: every ReplicaSet and Deployment carries a pod template, and k8s-openapi's decoded
//! `PodTemplateSpec` is large before any string (`PodSpec` is 1,464 bytes inline, each
//! `Container` 2,144, each map of labels or annotations a 544-byte B-tree node). The same
//! template as JSON is a few hundred bytes. Controllers read a template only to create pods
//! from it, to compare it with another (which ReplicaSet is a Deployment's new one), to hash it
//! or to copy it (rollback), so decoding on those occasions costs little CPU and saves most of
//! each cached object.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::Deserialize;

use super::CompactJson;

/// A pod template held as compact JSON (k8s-openapi's serialization of a `PodTemplateSpec`).
/// Its default is Go's zero `PodTemplateSpec`, `{}`.
pub type CompactPodTemplate = CompactJson<PodTemplateSpec>;

impl CompactJson<PodTemplateSpec> {
    /// The template's labels (`metadata.labels`), read without decoding the rest.
    pub fn labels(&self) -> Option<BTreeMap<String, String>> {
        #[derive(Deserialize)]
        struct Template {
            metadata: Option<Metadata>,
        }
        #[derive(Deserialize)]
        struct Metadata {
            labels: Option<BTreeMap<String, String>>,
        }
        // The JSON decodes as a whole template, so it decodes as this subset of one.
        serde_json::from_str::<Template>(self.as_json())
            .ok()?
            .metadata?
            .labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> PodTemplateSpec {
        serde_json::from_value(serde_json::json!({
            "metadata": {"labels": {"app": "web", "pod-template-hash": "5d4f"},
                         "annotations": {"rollout": "2"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                     "resources": {"limits": {"cpu": "500m"}},
                                     "ports": [{"containerPort": 80}]}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30}
        }))
        .expect("template")
    }

    #[test]
    fn round_trips_through_encode_and_decode() {
        let compact = CompactPodTemplate::encode(&template()).expect("encodes");
        assert_eq!(compact.decode(), template());
        assert!(compact.as_json().len() < 300, "{}", compact.as_json());
        assert_eq!(
            compact.labels(),
            template().metadata.and_then(|metadata| metadata.labels)
        );
        assert_eq!(CompactPodTemplate::default().labels(), None);
    }

    #[test]
    fn deserializes_from_json_text_and_values_alike() {
        let text = serde_json::to_string(&template()).expect("json");
        let from_text: CompactPodTemplate = serde_json::from_str(&text).expect("from text");
        let from_value: CompactPodTemplate =
            serde_json::from_value(serde_json::to_value(template()).expect("value"))
                .expect("from value");
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.decode(), template());
    }

    #[test]
    fn serializes_as_the_embedded_template() {
        let compact = CompactPodTemplate::encode(&template()).expect("encodes");
        let wrapped = serde_json::json!({"template": compact});
        assert_eq!(
            wrapped["template"],
            serde_json::to_value(template()).expect("value")
        );
    }

    #[test]
    fn equality_follows_the_template() {
        let a = CompactPodTemplate::encode(&template()).expect("encodes");
        let mut changed = template();
        if let Some(spec) = changed.spec.as_mut() {
            spec.containers[0].image = Some("nginx:1.26".to_owned());
        }
        let b = CompactPodTemplate::encode(&changed).expect("encodes");
        assert_eq!(a, a.clone());
        assert_ne!(a, b);
        assert_eq!(
            CompactPodTemplate::default().decode(),
            PodTemplateSpec::default()
        );
    }

    #[test]
    fn a_template_that_does_not_decode_is_refused() {
        let refused = serde_json::from_value::<CompactPodTemplate>(serde_json::json!({
            "spec": {"containers": "not a list"}
        }));
        assert!(refused.is_err());
    }
}
