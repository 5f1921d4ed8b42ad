//! The cluster as shadow mode compares it: the shared informers' caches the controllers already
//! fill (no watch of its own), read by resource name; when each object or one of its
//! dependents last changed (an object has not settled while its inputs still move); and a
//! short log of pod deletions so a ranking difference can name the pod the cluster deleted
//! instead.

use std::{
    collections::{HashMap, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use informer::{DeletedObject, EventHandler, InformerResource, Labeled, Lister, SharedInformer};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use parking_lot::Mutex;
use serde_json::Value;

/// One object as read from a cache: its metadata and its JSON (what the compared fields are
/// read from; metadata only for kinds whose other fields are never compared).
#[derive(Debug, Clone)]
pub struct CachedObject {
    /// The object's metadata.
    pub meta: ObjectMeta,
    /// The object as JSON.
    pub json: Value,
}

/// Read access to one resource's cache.
trait ResourceCache: Send + Sync {
    fn get(&self, namespace: &str, name: &str) -> Option<CachedObject>;
    /// The metadata alone: no JSON is built, for the checks that read nothing else.
    fn meta(&self, namespace: &str, name: &str) -> Option<ObjectMeta>;
    fn in_namespace(&self, namespace: &str) -> Vec<CachedObject>;
}

/// A lister and how to turn its objects into JSON.
struct Listed<K> {
    lister: Lister<K>,
    to_json: fn(&K) -> Value,
}

impl<K: InformerResource> ResourceCache for Listed<K> {
    fn get(&self, namespace: &str, name: &str) -> Option<CachedObject> {
        let object = self.lister.get(namespace, name)?;
        Some(CachedObject {
            meta: object.meta().clone(),
            json: (self.to_json)(&object),
        })
    }

    fn meta(&self, namespace: &str, name: &str) -> Option<ObjectMeta> {
        Some(self.lister.get(namespace, name)?.meta().clone())
    }

    fn in_namespace(&self, namespace: &str) -> Vec<CachedObject> {
        self.lister
            .in_namespace(namespace)
            .into_iter()
            .map(|object| CachedObject {
                meta: object.meta().clone(),
                json: (self.to_json)(&object),
            })
            .collect()
    }
}

/// A pod the cluster deleted (or started deleting).
#[derive(Debug, Clone)]
struct Deletion {
    namespace: String,
    name: String,
    owner: Option<String>,
    at: Instant,
}

/// Recent pod deletions, newest last; entries older than `keep` are dropped.
#[derive(Debug)]
pub(crate) struct DeletionLog {
    keep: Duration,
    entries: Mutex<VecDeque<Deletion>>,
}

impl DeletionLog {
    pub(crate) fn new(keep: Duration) -> Self {
        Self {
            keep,
            entries: Mutex::new(VecDeque::new()),
        }
    }

    fn record(&self, meta: &ObjectMeta) {
        let mut entries = self.entries.lock();
        let now = Instant::now();
        while entries
            .front()
            .is_some_and(|entry| now.duration_since(entry.at) > self.keep)
        {
            entries.pop_front();
        }
        let name = meta.name.clone().unwrap_or_default();
        let namespace = meta.namespace.clone().unwrap_or_default();
        if entries
            .iter()
            .any(|entry| entry.name == name && entry.namespace == namespace)
        {
            return;
        }
        entries.push_back(Deletion {
            namespace,
            name,
            owner: controller_name(meta),
            at: now,
        });
    }

    /// Pods of `owner` in `namespace` deleted since `since`.
    pub(crate) fn deleted_since(
        &self,
        namespace: &str,
        owner: &str,
        since: Instant,
    ) -> Vec<String> {
        self.entries
            .lock()
            .iter()
            .filter(|entry| {
                entry.at >= since
                    && entry.namespace == namespace
                    && entry.owner.as_deref() == Some(owner)
            })
            .map(|entry| entry.name.clone())
            .collect()
    }
}

/// The name of the object's controller owner.
fn controller_name(meta: &ObjectMeta) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true))
        .map(|owner| owner.name.clone())
}

/// Feeds the deletion log from the pod informer.
struct DeletionHandler(Arc<DeletionLog>);

impl<K: InformerResource> EventHandler<K> for DeletionHandler {
    fn on_add(&self, _obj: &Arc<K>, _is_in_initial_list: bool) {}

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().deletion_timestamp.is_none() && new.meta().deletion_timestamp.is_some() {
            self.0.record(new.meta());
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.0.record(obj.object().meta());
    }
}

/// An object as the activity log keys it: `resource/namespace/name`.
fn activity_key(resource: &str, namespace: &str, name: &str) -> String {
    format!("{resource}/{namespace}/{name}")
}

/// When each object, or one it controls, last changed in the caches. Entries older than
/// `keep` are dropped as newer changes come in.
#[derive(Debug)]
struct ActivityLog {
    keep: Duration,
    last: Mutex<(HashMap<String, Instant>, Instant)>,
}

impl ActivityLog {
    fn new(keep: Duration) -> Self {
        Self {
            keep,
            last: Mutex::new((HashMap::new(), Instant::now())),
        }
    }

    /// A change of `meta` (of `resource`): the object and its controller owner were active.
    fn touch(&self, resource: &'static str, meta: &ObjectMeta) {
        let now = Instant::now();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true))
            .and_then(|owner| {
                let resource = crate::compare::owner_resource(&owner.kind)?;
                Some(activity_key(resource, namespace, &owner.name))
            });
        let mut guard = self.last.lock();
        let (last, pruned) = &mut *guard;
        if now.duration_since(*pruned) > self.keep {
            last.retain(|_, at| now.duration_since(*at) <= self.keep);
            *pruned = now;
        }
        last.insert(activity_key(resource, namespace, name), now);
        if let Some(owner) = owner {
            last.insert(owner, now);
        }
    }

    fn changed_since(&self, resource: &str, namespace: &str, name: &str, since: Instant) -> bool {
        self.last
            .lock()
            .0
            .get(&activity_key(resource, namespace, name))
            .is_some_and(|at| *at > since)
    }
}

/// Feeds the activity log from one informer.
struct ActivityHandler {
    resource: &'static str,
    log: Arc<ActivityLog>,
}

impl<K: InformerResource> EventHandler<K> for ActivityHandler {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if !is_in_initial_list {
            self.log.touch(self.resource, obj.meta());
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().resource_version != new.meta().resource_version {
            self.log.touch(self.resource, new.meta());
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.log.touch(self.resource, obj.object().meta());
    }
}

/// Every cache shadow mode reads, by resource (plural).
pub struct ClusterView {
    caches: HashMap<&'static str, Box<dyn ResourceCache>>,
    activity: Arc<ActivityLog>,
    deletions: Arc<DeletionLog>,
}

impl ClusterView {
    /// An empty view remembering changes and deletions for `keep` (a few settle windows); add
    /// each resource's informer with [`ClusterView::with`].
    pub fn new(keep: Duration) -> Self {
        Self {
            caches: HashMap::new(),
            activity: Arc::new(ActivityLog::new(keep)),
            deletions: Arc::new(DeletionLog::new(keep)),
        }
    }

    /// Reads `resource` (plural) from `informer`'s cache, with `to_json` giving the JSON the
    /// compared fields are read from.
    pub fn with<K: InformerResource>(
        mut self,
        resource: &'static str,
        informer: &SharedInformer<K>,
        to_json: fn(&K) -> Value,
    ) -> Self {
        informer.add_event_handler(ActivityHandler {
            resource,
            log: self.activity.clone(),
        });
        self.caches.insert(
            resource,
            Box::new(Listed {
                lister: informer.lister(),
                to_json,
            }),
        );
        self
    }

    /// Also logs the deletions `informer` sees (the pods).
    pub fn logging_deletions<K: InformerResource>(self, informer: &SharedInformer<K>) -> Self {
        informer.add_event_handler(DeletionHandler(self.deletions.clone()));
        self
    }

    /// The cached object `namespace/name` of `resource`.
    pub(crate) fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<CachedObject> {
        self.caches.get(resource)?.get(namespace, name)
    }

    /// The metadata of the cached object `namespace/name` of `resource`.
    pub(crate) fn meta(&self, resource: &str, namespace: &str, name: &str) -> Option<ObjectMeta> {
        self.caches.get(resource)?.meta(namespace, name)
    }

    /// Whether the object, or an object it controls, changed after `since`: the inputs of a
    /// decision about it were still moving.
    pub(crate) fn changed_since(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        since: Instant,
    ) -> bool {
        self.activity
            .changed_since(resource, namespace, name, since)
    }

    /// Names of the cached `resource` objects in `namespace` whose controller is `owner`.
    pub(crate) fn owned_by(&self, resource: &str, namespace: &str, owner: &str) -> Vec<String> {
        let Some(cache) = self.caches.get(resource) else {
            return Vec::new();
        };
        let mut names: Vec<String> = cache
            .in_namespace(namespace)
            .into_iter()
            .filter(|object| controller_name(&object.meta).as_deref() == Some(owner))
            .filter_map(|object| object.meta.name)
            .collect();
        names.sort();
        names
    }

    /// The logged deletions.
    pub(crate) fn deletions(&self) -> &DeletionLog {
        &self.deletions
    }
}

/// JSON with only the metadata, for kinds whose other fields are never compared (pods, claims).
/// The labels are read through [`Labeled`]: a cached pod keeps them outside its `ObjectMeta`.
pub fn metadata_only<K: Resource + Labeled>(object: &K) -> Value {
    let mut meta = object.meta().clone();
    let labels = object.labels();
    if !labels.is_empty() {
        meta.labels = Some(
            labels
                .iter()
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .collect(),
        );
    }
    serde_json::json!({ "metadata": meta })
}

/// The whole object as JSON (for types that serialize as the API object).
pub fn whole<K: serde::Serialize>(object: &K) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use informer::CachedPod;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;

    use super::*;

    /// Shadow mode compares a pod write's labels with the pod as cached, so the cached pod's
    /// JSON must carry them, whatever type holds them.
    #[test]
    fn metadata_only_carries_the_labels_of_every_kind() {
        let object = serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "ns", "labels": {"app": "web"}}});
        let pod: CachedPod = serde_json::from_value(object.clone()).expect("a pod");
        let claim: PersistentVolumeClaim = serde_json::from_value(object).expect("a claim");
        for json in [metadata_only(&pod), metadata_only(&claim)] {
            assert_eq!(
                json.pointer("/metadata/labels/app"),
                Some(&Value::from("web"))
            );
            assert_eq!(json.pointer("/metadata/name"), Some(&Value::from("web-1")));
        }
    }
}
