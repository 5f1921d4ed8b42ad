//! The cluster as shadow mode compares it: the shared informers' caches the controllers already
//! fill (no watch of its own but the namespaces'), read by resource name; and a log of what the
//! watch stream delivered in the last few settle windows: when each object or one of its
//! dependents last changed (an object has not settled while its inputs still move), which
//! objects were created (a ReplicaSet with its content, to be matched by template) and which
//! were deleted, by name and by owner. Creates and deletes are judged against that log, so an
//! object created and deleted again within the window still counts as created.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use informer::{DeletedObject, EventHandler, InformerResource, Labeled, Lister, SharedInformer};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use parking_lot::Mutex;
use serde_json::Value;

use crate::{
    compare::{OwnerName, controller_owner_of},
    identity::{Creation, Deletion, Snapshot, claimable, matched_by_owner},
};

/// One object as read from a cache: its metadata and its JSON (what the compared fields are
/// read from; metadata only for kinds whose other fields are never compared).
#[derive(Debug, Clone)]
pub struct CachedObject {
    /// The object's metadata.
    pub meta: ObjectMeta,
    /// The object as JSON.
    pub json: Value,
}

/// What a cached object's metadata says that the verdicts need, read without copying the
/// metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectFacts {
    pub(crate) uid: Option<String>,
    pub(crate) resource_version: Option<String>,
    pub(crate) generation: Option<i64>,
    pub(crate) terminating: bool,
}

impl ObjectFacts {
    fn of(meta: &ObjectMeta) -> Self {
        Self {
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
            generation: meta.generation,
            terminating: meta.deletion_timestamp.is_some(),
        }
    }
}

/// Read access to one resource's cache.
trait ResourceCache: Send + Sync {
    fn get(&self, namespace: &str, name: &str) -> Option<CachedObject>;
    /// The metadata alone: no JSON is built, for the checks that read nothing else.
    fn meta(&self, namespace: &str, name: &str) -> Option<ObjectMeta>;
    fn facts(&self, namespace: &str, name: &str) -> Option<ObjectFacts>;
    fn in_namespace(&self, namespace: &str) -> Vec<ObjectMeta>;
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

    fn facts(&self, namespace: &str, name: &str) -> Option<ObjectFacts> {
        Some(ObjectFacts::of(self.lister.get(namespace, name)?.meta()))
    }

    fn in_namespace(&self, namespace: &str) -> Vec<ObjectMeta> {
        self.lister
            .in_namespace(namespace)
            .into_iter()
            .map(|object| object.meta().clone())
            .collect()
    }
}

/// An object as the watch log keys it: `resource/namespace/name`.
fn object_key(resource: &str, namespace: &str, name: &str) -> String {
    format!("{resource}/{namespace}/{name}")
}

/// The dependents of one owner as the watch log keys them:
/// `resource/namespace/ownerResource/ownerName`.
pub(crate) fn owner_key(resource: &str, namespace: &str, owner: &OwnerName) -> String {
    format!("{resource}/{namespace}/{}/{}", owner.resource, owner.name)
}

/// The kinds whose created objects are kept, to be matched by content.
const KEPT_WHOLE: &[&str] = &["replicasets"];

/// What the watch stream delivered recently; entries older than `keep` are dropped as newer
/// events come in.
#[derive(Debug)]
struct WatchLog {
    keep: Duration,
    inner: Mutex<Logged>,
}

#[derive(Debug)]
struct Logged {
    /// When each object, or one it controls, last changed.
    changed: HashMap<String, Instant>,
    created_by_name: HashMap<String, Vec<Creation>>,
    created_by_owner: HashMap<String, Vec<Creation>>,
    deleted_by_name: HashMap<String, Vec<Deletion>>,
    deleted_by_owner: HashMap<String, Vec<Deletion>>,
    pruned: Instant,
}

impl WatchLog {
    fn new(keep: Duration) -> Self {
        Self {
            keep,
            inner: Mutex::new(Logged {
                changed: HashMap::new(),
                created_by_name: HashMap::new(),
                created_by_owner: HashMap::new(),
                deleted_by_name: HashMap::new(),
                deleted_by_owner: HashMap::new(),
                pruned: Instant::now(),
            }),
        }
    }

    /// An event about `meta` (of `resource`): the object and its controller owner were active;
    /// `event` says whether it was created or deleted, with the created object when kept whole.
    fn record(&self, resource: &'static str, meta: &ObjectMeta, event: Event) {
        let now = Instant::now();
        let namespace = meta.namespace.as_deref().unwrap_or_default();
        let name = meta.name.as_deref().unwrap_or_default();
        let uid = meta.uid.clone().unwrap_or_default();
        let owner = controller_owner_of(meta);
        let mut guard = self.inner.lock();
        let logged = &mut *guard;
        if now.duration_since(logged.pruned) > self.keep {
            logged.prune(now, self.keep);
        }
        logged
            .changed
            .insert(object_key(resource, namespace, name), now);
        if let Some(owner) = &owner {
            logged
                .changed
                .insert(object_key(&owner.resource, namespace, &owner.name), now);
        }
        match event {
            Event::Changed => {}
            Event::Created(object) => {
                let creation = Creation {
                    name: name.to_owned(),
                    uid,
                    at: now,
                    object,
                    claimed: false,
                };
                // Objects matched by owner are never looked up by name: logged once.
                match &owner {
                    Some(owner) if matched_by_owner(&owner.resource) => logged
                        .created_by_owner
                        .entry(owner_key(resource, namespace, owner))
                        .or_default()
                        .push(creation),
                    _ => logged
                        .created_by_name
                        .entry(object_key(resource, namespace, name))
                        .or_insert_with(|| Vec::with_capacity(1))
                        .push(creation),
                }
            }
            Event::Deleted => {
                // Logged once, when first seen (the deletion timestamp, then the removal).
                let key = object_key(resource, namespace, name);
                // Mostly one deletion of a name: no room for more until needed.
                let by_name = logged
                    .deleted_by_name
                    .entry(key)
                    .or_insert_with(|| Vec::with_capacity(1));
                if by_name.iter().any(|deletion| *deletion.uid == uid) {
                    return;
                }
                let deletion = Deletion {
                    name: name.into(),
                    uid: uid.into(),
                    at: now,
                };
                if let Some(owner) = &owner {
                    logged
                        .deleted_by_owner
                        .entry(owner_key(resource, namespace, owner))
                        .or_default()
                        .push(deletion.clone());
                }
                by_name.push(deletion);
            }
        }
    }
}

impl Logged {
    fn prune(&mut self, now: Instant, keep: Duration) {
        let fresh = |at: &Instant| now.duration_since(*at) <= keep;
        self.changed.retain(|_, at| fresh(at));
        for log in [&mut self.created_by_name, &mut self.created_by_owner] {
            log.retain(|_, entries| {
                entries.retain(|entry| fresh(&entry.at));
                !entries.is_empty()
            });
        }
        for log in [&mut self.deleted_by_name, &mut self.deleted_by_owner] {
            log.retain(|_, entries| {
                entries.retain(|entry| fresh(&entry.at));
                !entries.is_empty()
            });
        }
        self.pruned = now;
    }
}

/// What one watch event means to the log.
enum Event {
    Changed,
    Created(Option<Snapshot>),
    Deleted,
}

/// Feeds the watch log from one informer.
struct WatchHandler<K> {
    resource: &'static str,
    log: Arc<WatchLog>,
    /// How to read a created object as JSON, for the kinds matched by content.
    whole: Option<fn(&K) -> Value>,
}

impl<K: InformerResource> EventHandler<K> for WatchHandler<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if !is_in_initial_list {
            let object = self.whole.map(|to_json| Snapshot::of(obj.clone(), to_json));
            self.log
                .record(self.resource, obj.meta(), Event::Created(object));
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().resource_version == new.meta().resource_version {
            return;
        }
        let event =
            if old.meta().deletion_timestamp.is_none() && new.meta().deletion_timestamp.is_some() {
                Event::Deleted
            } else {
                Event::Changed
            };
        self.log.record(self.resource, new.meta(), event);
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.log
            .record(self.resource, obj.object().meta(), Event::Deleted);
    }
}

/// Every cache shadow mode reads, by resource (plural), the namespaces, and the watch log.
pub struct ClusterView {
    caches: HashMap<&'static str, Box<dyn ResourceCache>>,
    namespaces: Option<SharedInformer<Namespace>>,
    log: Arc<WatchLog>,
}

impl ClusterView {
    /// An empty view remembering what the watch delivered for `keep` (a few settle windows);
    /// add each resource's informer with [`ClusterView::with`].
    pub fn new(keep: Duration) -> Self {
        Self {
            caches: HashMap::new(),
            namespaces: None,
            log: Arc::new(WatchLog::new(keep)),
        }
    }

    /// Reads `resource` (plural) from `informer`'s cache, with `to_json` giving the JSON the
    /// compared fields are read from, and logs what its watch delivers.
    pub fn with<K: InformerResource>(
        mut self,
        resource: &'static str,
        informer: &SharedInformer<K>,
        to_json: fn(&K) -> Value,
    ) -> Self {
        informer.add_event_handler(WatchHandler {
            resource,
            log: self.log.clone(),
            whole: KEPT_WHOLE.contains(&resource).then_some(to_json),
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

    /// Reads the namespaces from `informer`, so that nothing in a namespace being deleted is
    /// compared.
    pub fn with_namespaces(mut self, informer: SharedInformer<Namespace>) -> Self {
        self.namespaces = Some(informer);
        self
    }

    /// Whether `namespace` is being deleted or gone (false until the namespaces are synced).
    pub(crate) fn namespace_deleting(&self, namespace: &str) -> bool {
        let Some(namespaces) = &self.namespaces else {
            return false;
        };
        if !namespaces.has_synced() {
            return false;
        }
        namespaces
            .lister()
            .get("", namespace)
            .is_none_or(|found| found.metadata.deletion_timestamp.is_some())
    }

    /// Whether `resource` is cached.
    pub(crate) fn follows(&self, resource: &str) -> bool {
        self.caches.contains_key(resource)
    }

    /// The cached object `namespace/name` of `resource`.
    pub(crate) fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<CachedObject> {
        self.caches.get(resource)?.get(namespace, name)
    }

    /// The metadata of the cached object `namespace/name` of `resource`.
    pub(crate) fn meta(&self, resource: &str, namespace: &str, name: &str) -> Option<ObjectMeta> {
        self.caches.get(resource)?.meta(namespace, name)
    }

    /// What the cached object `namespace/name` of `resource` says of its identity and state.
    pub(crate) fn facts(&self, resource: &str, namespace: &str, name: &str) -> Option<ObjectFacts> {
        self.caches.get(resource)?.facts(namespace, name)
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
        self.log
            .inner
            .lock()
            .changed
            .get(&object_key(resource, namespace, name))
            .is_some_and(|at| *at > since)
    }

    /// Names of the cached `resource` objects in `namespace` whose controller is `owner`.
    pub(crate) fn owned_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
    ) -> Vec<String> {
        let Some(cache) = self.caches.get(resource) else {
            return Vec::new();
        };
        let mut names: Vec<String> = cache
            .in_namespace(namespace)
            .into_iter()
            .filter(|meta| {
                controller_owner_of(meta).is_some_and(|found| {
                    found.name == owner.name && found.resource == owner.resource
                })
            })
            .filter_map(|meta| meta.name)
            .collect();
        names.sort();
        names
    }

    /// The creations of `namespace/name` of `resource` the watch delivered (except those of
    /// objects matched by owner).
    pub(crate) fn created_named(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Vec<Creation> {
        self.log
            .inner
            .lock()
            .created_by_name
            .get(&object_key(resource, namespace, name))
            .cloned()
            .unwrap_or_default()
    }

    /// The creations of `resource` objects controlled by `owner` the watch delivered (only for
    /// owners whose objects are matched by owner).
    pub(crate) fn created_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
    ) -> Vec<Creation> {
        self.log
            .inner
            .lock()
            .created_by_owner
            .get(&owner_key(resource, namespace, owner))
            .cloned()
            .unwrap_or_default()
    }

    /// Claims, for one create decided on, the oldest creation of a `resource` object
    /// controlled by `owner` at or after `since` that no other create claimed; its name.
    pub(crate) fn claim_created_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
        since: Instant,
    ) -> Option<String> {
        let mut logged = self.log.inner.lock();
        let created = logged
            .created_by_owner
            .get_mut(&owner_key(resource, namespace, owner))?;
        let index = claimable(created, since)?;
        let claim = &mut created[index];
        claim.claimed = true;
        Some(claim.name.clone())
    }

    /// The deletions of `namespace/name` of `resource` the watch delivered.
    pub(crate) fn deleted_named(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Vec<Deletion> {
        self.log
            .inner
            .lock()
            .deleted_by_name
            .get(&object_key(resource, namespace, name))
            .cloned()
            .unwrap_or_default()
    }

    /// The deletions of `resource` objects controlled by `owner` the watch delivered.
    pub(crate) fn deleted_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
    ) -> Vec<Deletion> {
        self.log
            .inner
            .lock()
            .deleted_by_owner
            .get(&owner_key(resource, namespace, owner))
            .cloned()
            .unwrap_or_default()
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
