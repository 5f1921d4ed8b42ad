//! Read access to an informer's cache (client-go's generated listers): get by name, list by
//! label selector (cluster-wide or in one namespace, via the namespace index), and by index.
//!
//! Controllers read only through listers, never from the API server, so these reads must be
//! cheap: they return shared `Arc<K>` pointers into the cache. Never mutate them.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use crate::{
    labels::{LabelMatcher, Labeled},
    pod_index::{ControllerIndexed, owner_index_key},
    store::{NAMESPACE_INDEX, Store},
};

/// A cheap, cloneable read handle on one informer's cache.
pub struct Lister<K> {
    store: Arc<Store<K>>,
}

clone_shares_state!(Lister, store);

impl<K: Resource> Lister<K> {
    /// A lister reading `store` (client-go's `NewPodLister(indexer)` and kin). Informers hand
    /// out listers of their own cache through `SharedInformer::lister`; this constructor is for
    /// a standalone [`Store`] filled by hand.
    pub fn from_store(store: Arc<Store<K>>) -> Self {
        Self { store }
    }

    /// The cached object `namespace/name` (pass `""` as namespace for cluster-scoped objects).
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        if namespace.is_empty() {
            self.store.get(name)
        } else {
            self.store.get(&format!("{namespace}/{name}"))
        }
    }

    /// The object a dependent's controller ref points to (upstream `resolveControllerRef`):
    /// the cached object of that kind and name in the dependent's `namespace`, and only if it
    /// still has the referenced UID (not a namesake created since).
    pub fn resolve_controller_ref(&self, namespace: &str, owner: &OwnerReference) -> Option<Arc<K>>
    where
        K::DynamicType: Default,
    {
        if owner.kind != K::kind(&K::DynamicType::default()) {
            return None;
        }
        let object = self.get(namespace, &owner.name)?;
        (object.meta().uid.as_deref() == Some(owner.uid.as_str())).then_some(object)
    }

    /// The cached object stored under a work-queue key (`namespace/name` or `name`).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.store.get(key)
    }

    /// All cached objects in every namespace whose labels match `selector`, in key order.
    /// As upstream, an empty selector matches everything.
    pub fn list(&self, selector: &LabelMatcher) -> Vec<Arc<K>>
    where
        K: Labeled,
    {
        self.store
            .list()
            .into_iter()
            .filter(|obj| selector.selects(obj.as_ref()))
            .collect()
    }

    /// Cached objects of one namespace whose labels match `selector`, found through the
    /// namespace index. An empty namespace means all namespaces, as upstream's `NamespaceAll`.
    pub fn list_namespaced(&self, namespace: &str, selector: &LabelMatcher) -> Vec<Arc<K>>
    where
        K: Labeled,
    {
        if namespace.is_empty() {
            return self.list(selector);
        }
        let mut objects = self.in_namespace(namespace);
        objects.retain(|obj| selector.selects(obj.as_ref()));
        objects
    }

    /// Every cached object of one namespace, found through the namespace index, in key
    /// order. An empty namespace means all namespaces.
    pub fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        if namespace.is_empty() {
            return self.store.list();
        }
        self.store
            .by_index(NAMESPACE_INDEX, namespace)
            .unwrap_or_default()
    }

    /// The informer's last synced resourceVersion ([`Store::last_sync_resource_version`]).
    pub fn last_sync_resource_version(&self) -> Option<u64> {
        self.store.last_sync_resource_version()
    }

    /// Cached objects whose index `index_name` contains `value`, in key order. An index that
    /// was never registered yields nothing (and a warning, since it is a programming error).
    pub fn by_index(&self, index_name: &str, value: &str) -> Vec<Arc<K>> {
        match self.store.by_index(index_name, value) {
            Some(objects) => objects,
            None => {
                tracing::warn!(
                    index = index_name,
                    "lookup in an index that was never registered"
                );
                Vec::new()
            }
        }
    }

    /// The cached objects `owner` controls plus the orphans of its namespace: what a claim
    /// looks at (upstream lists the namespace; only these can be adopted, kept or released).
    pub fn controlled_by_or_orphaned<O>(&self, owner: &O) -> Vec<Arc<K>>
    where
        K: ControllerIndexed,
        O: Resource<DynamicType = ()>,
    {
        let namespace = owner.meta().namespace.as_deref().unwrap_or_default();
        let mut candidates = self.by_index(K::INDEX, &owner_index_key(owner));
        candidates.extend(self.by_index(K::INDEX, &K::orphan_key(namespace)));
        candidates
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{key::object_key, store::tests::pod};
    use k8s_openapi::{
        api::core::v1::Pod,
        apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
    };
    use kube::core::{Expression, Selector};

    fn lister() -> Lister<Pod> {
        let store = Arc::new(Store::new());
        store.upsert(pod("a", "web-1", &[("app", "web"), ("tier", "fe")], "1"));
        store.upsert(pod("a", "db-1", &[("app", "db")], "1"));
        store.upsert(pod("b", "web-2", &[("app", "web")], "1"));
        store.upsert(pod("b", "bare", &[], "1"));
        Lister::from_store(store)
    }

    #[test]
    fn resolves_controller_refs_by_kind_name_and_uid() {
        let store = Arc::new(Store::new());
        let mut owner = pod("a", "web-1", &[("app", "web")], "1").as_ref().clone();
        owner.metadata.uid = Some("uid-1".into());
        store.upsert(Arc::new(owner));
        let lister = Lister::<Pod>::from_store(store);
        let reference = |kind: &str, name: &str, uid: &str| OwnerReference {
            api_version: "v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            ..OwnerReference::default()
        };
        let cases = [
            (reference("Pod", "web-1", "uid-1"), "a", true),
            (reference("Pod", "web-1", "uid-2"), "a", false),
            (reference("ReplicaSet", "web-1", "uid-1"), "a", false),
            (reference("Pod", "web-2", "uid-1"), "a", false),
            (reference("Pod", "web-1", "uid-1"), "b", false),
        ];
        for (owner, namespace, found) in cases {
            assert_eq!(
                lister.resolve_controller_ref(namespace, &owner).is_some(),
                found,
                "{owner:?} in {namespace}"
            );
        }
    }

    fn keys(objects: Vec<Arc<Pod>>) -> Vec<String> {
        objects.iter().map(|p| object_key(p.as_ref())).collect()
    }

    #[test]
    fn get_finds_by_namespace_and_name() {
        let lister = lister();
        assert!(lister.get("a", "web-1").is_some());
        assert!(lister.get("b", "web-1").is_none());
        assert!(lister.get_by_key("b/web-2").is_some());
        assert_eq!(lister.len(), 4);
        assert!(!lister.is_empty());
    }

    #[test]
    fn list_filters_by_selector() {
        let lister = lister();
        let web: Selector = LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            ..LabelSelector::default()
        }
        .try_into()
        .expect("valid selector");
        let not_web: Selector = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "NotIn".into(),
                values: Some(vec!["web".into()]),
            }]),
            ..LabelSelector::default()
        }
        .try_into()
        .expect("valid selector");
        let cases: Vec<(&str, Selector, Vec<&str>)> = vec![
            (
                "empty selector matches all",
                Selector::default(),
                vec!["a/db-1", "a/web-1", "b/bare", "b/web-2"],
            ),
            ("match labels", web.clone(), vec!["a/web-1", "b/web-2"]),
            (
                "notin includes unlabelled",
                not_web,
                vec!["a/db-1", "b/bare"],
            ),
            (
                "exists",
                Expression::Exists("tier".into()).into(),
                vec!["a/web-1"],
            ),
            (
                "no match",
                Expression::Equal("app".into(), "none".into()).into(),
                vec![],
            ),
        ];
        for (name, selector, want) in cases {
            assert_eq!(keys(lister.list(&selector.into())), want, "{name}");
        }
    }

    #[test]
    fn list_namespaced_uses_namespace_and_selector() {
        let lister = lister();
        let web: Selector = Expression::Equal("app".into(), "web".into()).into();
        let cases: Vec<(&str, Selector, Vec<&str>)> = vec![
            ("a", Selector::default(), vec!["a/db-1", "a/web-1"]),
            ("a", web.clone(), vec!["a/web-1"]),
            ("b", web.clone(), vec!["b/web-2"]),
            ("c", Selector::default(), vec![]),
            ("", web, vec!["a/web-1", "b/web-2"]),
        ];
        for (namespace, selector, want) in cases {
            assert_eq!(
                keys(lister.list_namespaced(namespace, &selector.into())),
                want,
                "ns {namespace:?}"
            );
        }
    }

    #[test]
    fn by_index_of_unknown_index_is_empty() {
        let lister = lister();
        assert!(lister.by_index("nope", "a").is_empty());
        assert_eq!(
            keys(lister.by_index(NAMESPACE_INDEX, "b")),
            ["b/bare", "b/web-2"]
        );
    }
}
