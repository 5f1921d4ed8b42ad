//! [`RawStatefulSet`]: a StatefulSet cached together with the JSON the API server sent.
//!
//! Revision data must be byte-identical to upstream's, and it is built from `spec.template`
//! exactly as the server rendered it: a typed round-trip drops fields such as
//! `"creationTimestamp":null`. The informer caches this wrapper, so every sync has both the
//! typed set (for logic) and the raw JSON (for revisions).

use std::borrow::Cow;

use controller_toolkit::runtime::Owner;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::{NamespaceResourceScope, api::apps::v1::StatefulSet};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A StatefulSet as typed struct plus the raw JSON object it was decoded from.
#[derive(Debug, Clone)]
pub struct RawStatefulSet {
    /// The typed set; its metadata is the one informers and listers use.
    pub set: StatefulSet,
    /// The object exactly as the server sent it, minus `metadata.managedFields` (never read,
    /// dropped to save memory as kcm's informer transform does).
    pub raw: Value,
}

impl RawStatefulSet {
    /// Decodes a set from its raw JSON, keeping the JSON.
    pub fn from_raw(mut raw: Value) -> Result<Self, serde_json::Error> {
        if let Some(metadata) = raw.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        let set = serde_json::from_value(raw.clone())?;
        Ok(Self { set, raw })
    }
}

impl<'de> Deserialize<'de> for RawStatefulSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_raw(raw).map_err(serde::de::Error::custom)
    }
}

impl kube::Resource for RawStatefulSet {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        <StatefulSet as kube::Resource>::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        <StatefulSet as kube::Resource>::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        <StatefulSet as kube::Resource>::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        <StatefulSet as kube::Resource>::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.set.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.set.metadata
    }
}

/// A set owns its pods (upstream `getPodStatefulSets`, `resolveControllerRef`).
impl Owner for RawStatefulSet {
    fn label_selector(&self) -> Option<LabelSelector> {
        self.set.spec.as_ref().map(|spec| spec.selector.clone())
    }

    fn min_ready_seconds(&self) -> i32 {
        crate::decide::min_ready_seconds(&self.set)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keeps_the_raw_template_and_drops_managed_fields() {
        let raw = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "managedFields": [{"manager": "x"}]},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "serviceName": "web",
                "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "web"}}}
            }
        });
        let decoded: RawStatefulSet = serde_json::from_value(raw).expect("decodes");
        assert_eq!(
            decoded
                .raw
                .pointer("/spec/template/metadata/creationTimestamp"),
            Some(&Value::Null)
        );
        assert!(decoded.raw.pointer("/metadata/managedFields").is_none());
        assert_eq!(decoded.set.metadata.name.as_deref(), Some("web"));
        assert_eq!(
            <RawStatefulSet as kube::Resource>::plural(&()),
            "statefulsets"
        );
    }
}
