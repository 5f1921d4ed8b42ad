//! Keys that identify pods in controller bookkeeping.
//!
//! Controller keys (`namespace/name` of the owner, tombstone tolerant) come from the informer
//! crate's `object_key`; this module only holds the pod key, which upstream uses as the "UID" in
//! UID-tracking expectations. It is *not* the object UID: a pod deleted and
//! recreated under the same name has the same key, which is what the expectations want.

use informer::CachedPod;

/// `"<namespace>/<name>"` of a pod, as upstream's `PodKey`.
///
/// The separator is always present (even for an empty namespace) so keys produced for the same
/// pod by the delete path and by the event handlers always compare equal.
pub fn pod_key(pod: &CachedPod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn pod(namespace: Option<&str>, name: Option<&str>, uid: &str) -> CachedPod {
        CachedPod {
            metadata: ObjectMeta {
                namespace: namespace.map(str::to_owned),
                name: name.map(str::to_owned),
                uid: Some(uid.to_owned()),
                ..ObjectMeta::default()
            }
            .into(),
            ..CachedPod::default()
        }
    }

    #[test]
    fn pod_key_is_namespace_slash_name_not_uid() {
        let cases = [
            (Some("default"), Some("web-abc12"), "default/web-abc12"),
            (Some("kube-system"), Some("dns"), "kube-system/dns"),
            (None, Some("loose"), "/loose"),
            (Some("ns"), None, "ns/"),
        ];
        for (namespace, name, want) in cases {
            assert_eq!(pod_key(&pod(namespace, name, "uid-1")), want);
        }
    }

    #[test]
    fn recreated_pod_with_new_uid_keeps_its_key() {
        assert_eq!(
            pod_key(&pod(Some("ns"), Some("p"), "uid-1")),
            pod_key(&pod(Some("ns"), Some("p"), "uid-2"))
        );
    }
}
