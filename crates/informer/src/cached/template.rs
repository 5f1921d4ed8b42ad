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

use std::{collections::BTreeMap, fmt};

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// A pod template held as compact JSON (k8s-openapi's serialization of a `PodTemplateSpec`).
///
/// Invariant: the JSON decodes back into a `PodTemplateSpec`. [`encode`](Self::encode) checks
/// it once, so [`decode`](Self::decode) cannot fail.
#[derive(Clone)]
pub struct CompactPodTemplate(Box<RawValue>);

impl CompactPodTemplate {
    /// Encodes `template`. Fails only where k8s-openapi cannot serialize the template or read
    /// its own output back (a timestamp outside the years it prints), so no template ever
    /// stored here fails to decode.
    pub fn encode(template: &PodTemplateSpec) -> Result<Self, serde_json::Error> {
        let json = serde_json::value::to_raw_value(template)?;
        serde_json::from_str::<PodTemplateSpec>(json.get())?;
        Ok(Self(json))
    }

    /// The template, decoded.
    pub fn decode(&self) -> PodTemplateSpec {
        // Cannot fail: `encode`, the only way in, decoded this very text.
        serde_json::from_str(self.0.get()).expect("a CompactPodTemplate decodes")
    }

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
        serde_json::from_str::<Template>(self.0.get())
            .ok()?
            .metadata?
            .labels
    }

    /// The template's JSON text.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

/// The empty template (Go's zero `PodTemplateSpec`), as k8s-openapi serializes it.
impl Default for CompactPodTemplate {
    fn default() -> Self {
        Self(RawValue::from_string("{}".to_owned()).expect("`{}` is JSON"))
    }
}

/// Equal templates have equal JSON: k8s-openapi writes fields in a fixed order and maps in
/// key order.
impl PartialEq for CompactPodTemplate {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl Eq for CompactPodTemplate {}

impl fmt::Debug for CompactPodTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompactPodTemplate")
            .field(&self.as_json())
            .finish()
    }
}

impl TryFrom<&PodTemplateSpec> for CompactPodTemplate {
    type Error = serde_json::Error;

    fn try_from(template: &PodTemplateSpec) -> Result<Self, Self::Error> {
        Self::encode(template)
    }
}

/// Decodes a whole `PodTemplateSpec` (any deserializer, so `serde_json::from_value` works as
/// well as the watch stream) and keeps its compact JSON.
impl<'de> Deserialize<'de> for CompactPodTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let template = PodTemplateSpec::deserialize(deserializer)?;
        Self::encode(&template).map_err(serde::de::Error::custom)
    }
}

/// Writes the JSON as it is (the template is embedded, not quoted).
impl Serialize for CompactPodTemplate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
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
