//! Object keys: the `namespace/name` strings that identify objects in the store and in
//! controllers' work queues (client-go's `MetaNamespaceKeyFunc` / `SplitMetaNamespaceKey`).

use kube::Resource;

/// The store key of an object: `namespace/name`, or just `name` for cluster-scoped objects.
///
/// Controllers put these keys in their work queues and look objects up with them, so the
/// format must match upstream exactly.
pub fn object_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(namespace) if !namespace.is_empty() => format!("{namespace}/{name}"),
        _ => name.to_string(),
    }
}

/// Splits a key made by [`object_key`] back into `(namespace, name)`.
///
/// A key without a `/` is a cluster-scoped object's name. Only the first `/` separates, so a
/// malformed key never panics; the name keeps any further slashes.
pub fn split_key(key: &str) -> (Option<&str>, &str) {
    match key.split_once('/') {
        Some((namespace, name)) => (Some(namespace), name),
        None => (None, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube::api::ObjectMeta;

    #[test]
    fn object_key_formats_namespaced_and_cluster_scoped_objects() {
        let cases: Vec<(Option<&str>, &str, &str)> = vec![
            (Some("default"), "web-0", "default/web-0"),
            (Some(""), "web-0", "web-0"),
            (None, "web-0", "web-0"),
        ];
        for (namespace, name, want) in cases {
            let pod = Pod {
                metadata: ObjectMeta {
                    namespace: namespace.map(str::to_string),
                    name: Some(name.to_string()),
                    ..ObjectMeta::default()
                },
                ..Pod::default()
            };
            assert_eq!(object_key(&pod), want, "namespace {namespace:?}");
        }
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kube-system".into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        assert_eq!(object_key(&ns), "kube-system");
    }

    #[test]
    fn split_key_reverses_object_key() {
        let cases = [
            ("default/web-0", (Some("default"), "web-0")),
            ("kube-system", (None, "kube-system")),
            ("a/b/c", (Some("a"), "b/c")),
            ("", (None, "")),
        ];
        for (key, want) in cases {
            assert_eq!(split_key(key), want, "key {key:?}");
        }
    }
}
