//! [`RawObject`]: an API object cached together with the JSON the API server sent.
//!
//! Why: ControllerRevision data must be byte-identical to upstream's, and it is built from
//! `spec.template` exactly as the server rendered it: a typed round-trip drops fields such as
//! `"creationTimestamp":null` and reorders nothing back. The StatefulSet and DaemonSet
//! controllers cache their own kind in this wrapper, so every sync has both the typed object
//! (for logic) and the raw JSON (for revisions). Their objects are few, so keeping the JSON
//! twice costs little.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

/// An object as typed struct plus the raw JSON object it was decoded from. It is the typed
/// object's kind for informers and listers (`informer::<RawObject<StatefulSet>>()` watches
/// StatefulSets).
#[derive(Debug, Clone, PartialEq)]
pub struct RawObject<K> {
    /// The typed object; its metadata is the one informers and listers use.
    pub object: K,
    /// The object exactly as the server sent it, minus `metadata.managedFields` (never read,
    /// dropped to save memory as kcm's informer transform does).
    pub raw: Value,
}

impl<K: DeserializeOwned> RawObject<K> {
    /// Decodes an object from its raw JSON, keeping the JSON.
    pub fn from_raw(mut raw: Value) -> Result<Self, serde_json::Error> {
        if let Some(metadata) = raw.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
        let object = serde_json::from_value(raw.clone())?;
        Ok(Self { object, raw })
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for RawObject<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_raw(raw).map_err(serde::de::Error::custom)
    }
}

impl<K: kube::Resource<DynamicType = ()>> kube::Resource for RawObject<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        self.object.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.object.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
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
        let decoded: RawObject<StatefulSet> = serde_json::from_value(raw).expect("decodes");
        assert_eq!(
            decoded
                .raw
                .pointer("/spec/template/metadata/creationTimestamp"),
            Some(&Value::Null)
        );
        assert!(decoded.raw.pointer("/metadata/managedFields").is_none());
        assert_eq!(decoded.object.metadata.name.as_deref(), Some("web"));
        assert_eq!(
            <RawObject<StatefulSet> as kube::Resource>::plural(&()),
            "statefulsets"
        );
    }

    #[test]
    fn is_the_typed_objects_kind() {
        use kube::Resource;
        assert_eq!(RawObject::<DaemonSet>::kind(&()), "DaemonSet");
        assert_eq!(RawObject::<DaemonSet>::group(&()), "apps");
        assert_eq!(RawObject::<DaemonSet>::plural(&()), "daemonsets");
        let raw = json!({"metadata": {"name": "agent", "namespace": "kube-system", "uid": "u1"}});
        let decoded: RawObject<DaemonSet> = serde_json::from_value(raw).expect("decodes");
        assert_eq!(decoded.meta().uid.as_deref(), Some("u1"));
        assert_eq!(crate::object_key(&decoded), "kube-system/agent");
    }
}
