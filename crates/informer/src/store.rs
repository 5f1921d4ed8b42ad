//! The informer's cache: a thread-safe map from object key to the shared object, plus named
//! secondary indexes (client-go's `threadSafeMap` behind `cache.Indexer`).
//!
//! Only the informer writes to its own store (from watch events); listers and controllers read
//! it. Objects are kept as `Arc<K>` so reads hand out shared pointers instead of copies.
//!
//! The type is public as client-go's `cache.NewIndexer` is: a standalone store can be filled
//! by hand and read through [`Lister::from_store`](crate::Lister::from_store), e.g. to measure
//! the cache or to feed a lister without an API server. An informer never exposes its own store.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use kube::Resource;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::key::object_key;

/// The name of the index every store has: objects by namespace (`""` for cluster-scoped ones).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Computes the index values of one object; shared so it can be kept by the store.
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// A key -> object map with named indexes, safe to share between the informer and listers.
pub struct Store<K> {
    inner: RwLock<StoreInner<K>>,
    /// The highest resourceVersion the content is known to reflect: the last list's, then each
    /// watch event's and bookmark's since; 0 while unknown (before the first list is applied,
    /// during a relist, or after a version that is not an integer).
    last_sync_resource_version: AtomicU64,
    /// The highest version of a change the content took in: the last list's or a watch
    /// event's, never a bookmark's; 0 while none. It only grows (a relist does not reset it).
    last_change_resource_version: AtomicU64,
}

struct StoreInner<K> {
    /// Objects by key, ordered so that listings are deterministic. Each key is allocated once
    /// and shared with the index buckets that file its object (a pod is in two or three).
    items: BTreeMap<ObjectKey, Arc<K>>,
    /// Index functions by index name.
    indexers: HashMap<String, IndexFn<K>>,
    /// index name -> index value -> the objects with that value, by key. The index holds the
    /// shared objects themselves so a lookup never goes back to `items` key by key.
    indices: HashMap<String, HashMap<String, Bucket<K>>>,
}

/// An object key as the store holds it: one allocation shared by `items` and every index
/// bucket. Why: at 10,000 Deployments the store holds 100,000 objects, and a `String` per
/// object per index was about 10 MB of the manager's heap (heaptrack, issue 21).
pub type ObjectKey = Arc<str>;

/// The objects of one index value, by key (ordered, so lookups are deterministic).
type Bucket<K> = BTreeMap<ObjectKey, Arc<K>>;

impl<K: Resource> Store<K> {
    /// An empty store with the built-in namespace index.
    pub fn new() -> Self {
        let namespace_index: IndexFn<K> =
            Arc::new(|obj: &K| vec![obj.meta().namespace.clone().unwrap_or_default()]);
        let mut indexers = HashMap::new();
        indexers.insert(NAMESPACE_INDEX.to_string(), namespace_index);
        let mut indices = HashMap::new();
        indices.insert(NAMESPACE_INDEX.to_string(), HashMap::new());
        Self {
            inner: RwLock::new(StoreInner {
                items: BTreeMap::new(),
                indexers,
                indices,
            }),
            last_sync_resource_version: AtomicU64::new(0),
            last_change_resource_version: AtomicU64::new(0),
        }
    }

    /// client-go's "last store sync resourceVersion": the version of the last list applied, or
    /// of a later watch event or bookmark, whichever is highest; `None` while unknown (before
    /// the first list is applied, while a relist is in progress, or when versions are not
    /// integers). A watch delivers one resource type in resourceVersion order and a bookmark
    /// says every change up to its version was delivered, so a write whose version is at most
    /// this one is in the store.
    pub fn last_sync_resource_version(&self) -> Option<u64> {
        match self.last_sync_resource_version.load(Ordering::Acquire) {
            0 => None,
            version => Some(version),
        }
    }

    /// The version of the last change the cache took in: the last list's or watch event's,
    /// not a bookmark's (`None` before the first list). Why apart from
    /// [`Store::last_sync_resource_version`]: a leader that hands its Lease over says up to
    /// which version its decisions rested on this cache. A bookmark adds nothing to what it
    /// decided from, and the successor's watch gets its bookmarks at other moments, so
    /// counting them would make the successor wait for a bookmark of its own.
    pub fn last_change_resource_version(&self) -> Option<u64> {
        match self.last_change_resource_version.load(Ordering::Acquire) {
            0 => None,
            version => Some(version),
        }
    }

    /// Records that the list or watch event with `resource_version` was applied: a change.
    pub(crate) fn observe_change_version(&self, resource_version: Option<&str>) {
        if let Some(version) = resource_version.and_then(|version| version.parse::<u64>().ok()) {
            self.last_change_resource_version
                .fetch_max(version, Ordering::AcqRel);
        }
        self.observe_watch_version(resource_version);
    }

    /// Records that the list, watch event or bookmark with `resource_version` was applied.
    pub(crate) fn observe_watch_version(&self, resource_version: Option<&str>) {
        match resource_version.and_then(|version| version.parse::<u64>().ok()) {
            Some(version) => {
                self.last_sync_resource_version
                    .fetch_max(version, Ordering::AcqRel);
            }
            None => self.forget_sync_version(),
        }
    }

    /// Makes the last synced version unknown (a list is about to replace the content).
    pub(crate) fn forget_sync_version(&self) {
        self.last_sync_resource_version.store(0, Ordering::Release);
    }

    /// The object stored under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// Every stored object, in key order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
    }

    /// Number of stored objects.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts or replaces `obj`, returning the object it replaced.
    pub fn upsert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key: ObjectKey = object_key(obj.as_ref()).into();
        let mut inner = self.inner.write();
        let old = inner.items.insert(key.clone(), obj.clone());
        if let Some(old) = &old {
            inner.unindex(&key, old);
        }
        inner.index(&key, &obj);
        old
    }

    /// Removes the object stored under `key`, returning it.
    pub fn remove(&self, key: &str) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        let old = inner.items.remove(key)?;
        inner.unindex(key, &old);
        Some(old)
    }

    /// Replaces the whole content with `objects` (a relist), rebuilding every index, and
    /// returns the previous content so the caller can diff it.
    pub fn replace(&self, objects: Vec<Arc<K>>) -> BTreeMap<ObjectKey, Arc<K>> {
        let items: BTreeMap<ObjectKey, Arc<K>> = objects
            .into_iter()
            .map(|obj| (object_key(obj.as_ref()).into(), obj))
            .collect();
        let mut inner = self.inner.write();
        let previous = std::mem::replace(&mut inner.items, items);
        inner.rebuild_indices();
        previous
    }

    /// Registers an index; a name already registered keeps its original function, so
    /// registering the same index from several controllers is harmless. Objects already
    /// stored are indexed at once.
    pub fn add_indexer(&self, name: &str, index_fn: IndexFn<K>) {
        let mut inner = self.inner.write();
        if inner.indexers.contains_key(name) {
            return;
        }
        let index = build_index(&inner.items, &index_fn);
        inner.indexers.insert(name.to_string(), index_fn);
        inner.indices.insert(name.to_string(), index);
    }

    /// Objects whose `index_name` index has `value`, in key order; `None` if no such index.
    pub fn by_index(&self, index_name: &str, value: &str) -> Option<Vec<Arc<K>>> {
        let inner = self.inner.read();
        let index = inner.indices.get(index_name)?;
        let objects = index
            .get(value)
            .map(|bucket| bucket.values().cloned().collect())
            .unwrap_or_default();
        Some(objects)
    }
}

impl<K: Resource> Default for Store<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> StoreInner<K> {
    fn index(&mut self, key: &ObjectKey, obj: &Arc<K>) {
        for (name, index_fn) in &self.indexers {
            let index = self.indices.entry(name.clone()).or_default();
            insert_into_index(index, index_fn, key, obj);
        }
    }

    fn unindex(&mut self, key: &str, obj: &K) {
        for (name, index_fn) in &self.indexers {
            let Some(index) = self.indices.get_mut(name) else {
                continue;
            };
            for value in index_fn(obj) {
                if let Some(keys) = index.get_mut(&value) {
                    keys.remove(key);
                    if keys.is_empty() {
                        index.remove(&value);
                    }
                }
            }
        }
    }

    fn rebuild_indices(&mut self) {
        self.indices = self
            .indexers
            .iter()
            .map(|(name, index_fn)| (name.clone(), build_index(&self.items, index_fn)))
            .collect();
    }
}

/// The index `index_fn` gives `items`.
fn build_index<K>(
    items: &BTreeMap<ObjectKey, Arc<K>>,
    index_fn: &IndexFn<K>,
) -> HashMap<String, Bucket<K>> {
    let mut index = HashMap::new();
    for (key, obj) in items {
        insert_into_index(&mut index, index_fn, key, obj);
    }
    index
}

/// Files `obj` under `key` in `index` for every value `index_fn` gives it.
fn insert_into_index<K>(
    index: &mut HashMap<String, Bucket<K>>,
    index_fn: &IndexFn<K>,
    key: &ObjectKey,
    obj: &Arc<K>,
) {
    for value in index_fn(obj) {
        index
            .entry(value)
            .or_default()
            .insert(key.clone(), obj.clone());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::ObjectMeta;

    /// A pod with the given namespace, name, labels and resource version.
    pub fn pod(namespace: &str, name: &str, labels: &[(&str, &str)], rv: &str) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.to_string()),
                name: Some(name.to_string()),
                resource_version: Some(rv.to_string()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        })
    }

    fn names(objects: &[Arc<Pod>]) -> Vec<String> {
        objects.iter().map(|p| object_key(p.as_ref())).collect()
    }

    /// The keys of the objects under `value` in index `index` (none for an unknown index).
    fn indexed(store: &Store<Pod>, index: &str, value: &str) -> Vec<String> {
        names(&store.by_index(index, value).unwrap_or_default())
    }

    fn app_index() -> IndexFn<Pod> {
        Arc::new(|pod: &Pod| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|labels| labels.get("app").cloned())
                .into_iter()
                .collect()
        })
    }

    #[test]
    fn upsert_get_remove_keep_namespace_index_current() {
        let store = Store::new();
        assert!(store.upsert(pod("a", "p1", &[], "1")).is_none());
        assert!(store.upsert(pod("b", "p2", &[], "1")).is_none());
        let old = store.upsert(pod("a", "p1", &[], "2"));
        assert_eq!(
            old.and_then(|p| p.metadata.resource_version.clone())
                .as_deref(),
            Some("1")
        );
        assert_eq!(
            store
                .get("a/p1")
                .and_then(|p| p.metadata.resource_version.clone())
                .as_deref(),
            Some("2")
        );
        assert_eq!(
            names(&store.by_index(NAMESPACE_INDEX, "a").unwrap_or_default()),
            ["a/p1"]
        );
        assert!(store.remove("a/p1").is_some());
        assert!(store.remove("a/p1").is_none());
        assert!(store.get("a/p1").is_none());
        assert_eq!(store.by_index(NAMESPACE_INDEX, "a"), Some(vec![]));
        assert_eq!(names(&store.list()), ["b/p2"]);
        assert_eq!(store.len(), 1);
    }

    /// A store indexing by `app`, holding pods `a/p1` and `a/p2` of app `web`.
    fn two_web_pods_indexed_by_app() -> Store<Pod> {
        let store = Store::new();
        store.add_indexer("app", app_index());
        store.upsert(pod("a", "p1", &[("app", "web")], "1"));
        store.upsert(pod("a", "p2", &[("app", "web")], "1"));
        store
    }

    #[test]
    fn custom_index_follows_label_changes() {
        let store = two_web_pods_indexed_by_app();
        store.upsert(pod("a", "p1", &[("app", "db")], "2"));
        assert_eq!(indexed(&store, "app", "web"), ["a/p2"]);
        assert_eq!(indexed(&store, "app", "db"), ["a/p1"]);
        assert!(store.by_index("missing", "web").is_none());
    }

    #[test]
    fn indexer_added_late_indexes_existing_objects() {
        let store = Store::new();
        store.upsert(pod("a", "p1", &[("app", "web")], "1"));
        store.add_indexer("app", app_index());
        assert_eq!(indexed(&store, "app", "web"), ["a/p1"]);
    }

    #[test]
    fn add_indexer_is_idempotent_by_name() {
        let store = Store::new();
        store.upsert(pod("a", "p1", &[("app", "web")], "1"));
        store.add_indexer("app", app_index());
        let other: IndexFn<Pod> = Arc::new(|_: &Pod| vec!["other".to_string()]);
        store.add_indexer("app", other);
        assert_eq!(indexed(&store, "app", "web"), ["a/p1"]);
        assert_eq!(store.by_index("app", "other"), Some(vec![]));
    }

    #[test]
    fn replace_returns_previous_content_and_rebuilds_indices() {
        let store = two_web_pods_indexed_by_app();
        let previous = store.replace(vec![pod("b", "p3", &[("app", "web")], "5")]);
        assert_eq!(
            previous.keys().map(AsRef::as_ref).collect::<Vec<&str>>(),
            ["a/p1", "a/p2"]
        );
        assert_eq!(indexed(&store, "app", "web"), ["b/p3"]);
        assert_eq!(store.by_index(NAMESPACE_INDEX, "a"), Some(vec![]));
        assert_eq!(names(&store.list()), ["b/p3"]);
    }
}
