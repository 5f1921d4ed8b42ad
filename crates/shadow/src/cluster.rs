//! The cluster as shadow mode compares it: the shared informers' caches the controllers already
//! fill (no watch of its own but the namespaces'), read by resource name through each compared
//! kind's [`KindCache`], whatever type the cache holds; and a log of what the watch stream
//! delivered in the last few settle windows ([`KindEvents`]): when each object or one of its
//! dependents last changed (an object has not settled while its inputs still move), which
//! objects were created (those matched by template, a Deployment's ReplicaSets, with their
//! content) and which were deleted, by name and by owner. Creates and deletes are judged against
//! that log, so an object created and deleted again within the window still counts as created.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use controller_toolkit::shadow_view::{ComparedKind, KindCache, KindEvents, Snapshot};
use informer::{
    CachedNode, CachedPod, DeletedObject, EventHandler, SharedInformer, SharedInformerFactory,
};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use parking_lot::Mutex;
use serde_json::Value;

use crate::{
    catalog::Catalog,
    compare::{OwnerName, controller_owner_of},
    identity::{Creation, Deletion, claimable, matched_by_owner},
};

/// What a cached object's metadata says that the verdicts need.
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

/// An object as the watch log keys it: `resource/namespace/name`.
fn object_key(resource: &str, namespace: &str, name: &str) -> String {
    format!("{resource}/{namespace}/{name}")
}

/// The dependents of one owner as the watch log keys them:
/// `resource/namespace/ownerResource/ownerName`.
pub(crate) fn owner_key(resource: &str, namespace: &str, owner: &OwnerName) -> String {
    format!("{resource}/{namespace}/{}/{}", owner.resource, owner.name)
}

/// What the watch stream delivered recently; entries older than `keep` are dropped as newer
/// events come in.
struct WatchLog {
    keep: Duration,
    /// Which owners are followed, and how their dependents are matched.
    catalog: Arc<Catalog>,
    inner: Mutex<Logged>,
}

#[derive(Debug)]
struct Logged {
    /// When each object, or one it controls, last changed.
    changed: HashMap<String, Instant>,
    /// When each object's spec (its generation) last changed.
    spec_changed: HashMap<String, Instant>,
    created_by_name: HashMap<String, Vec<Creation>>,
    created_by_owner: HashMap<String, Vec<Creation>>,
    deleted_by_name: HashMap<String, Vec<Deletion>>,
    deleted_by_owner: HashMap<String, Vec<Deletion>>,
    pruned: Instant,
}

impl WatchLog {
    fn new(keep: Duration, catalog: Arc<Catalog>) -> Self {
        Self {
            keep,
            catalog,
            inner: Mutex::new(Logged {
                changed: HashMap::new(),
                spec_changed: HashMap::new(),
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
        let owner = controller_owner_of(&self.catalog, meta);
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
            Event::Changed { spec: false } => {}
            Event::Changed { spec: true } => {
                logged
                    .spec_changed
                    .insert(object_key(resource, namespace, name), now);
            }
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
                    Some(owner) if matched_by_owner(&self.catalog, &owner.resource, resource) => {
                        logged
                            .created_by_owner
                            .entry(owner_key(resource, namespace, owner))
                            .or_default()
                            .push(creation)
                    }
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
        self.spec_changed.retain(|_, at| fresh(at));
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

/// Which changes of an object [`ClusterView::last_changed`] tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// Any change of the object or of an object it controls.
    Any,
    /// A change of its spec (its generation moved).
    Spec,
}

/// What one watch event means to the log.
enum Event {
    /// Changed; `spec` when its generation moved.
    Changed {
        spec: bool,
    },
    Created(Option<Snapshot>),
    Deleted,
}

/// Feeds the watch log from one compared kind's watch.
struct LogFeed {
    resource: &'static str,
    /// Whether its created objects are kept whole, to be matched by template.
    kept_whole: bool,
    log: Arc<WatchLog>,
}

impl KindEvents for LogFeed {
    fn created(&self, meta: &ObjectMeta, snapshot: &dyn Fn() -> Snapshot) {
        let object = self.kept_whole.then(snapshot);
        self.log.record(self.resource, meta, Event::Created(object));
    }

    fn updated(&self, old: &ObjectMeta, new: &ObjectMeta) {
        let event = if old.deletion_timestamp.is_none() && new.deletion_timestamp.is_some() {
            Event::Deleted
        } else {
            Event::Changed {
                spec: old.generation != new.generation,
            }
        };
        self.log.record(self.resource, new, event);
    }

    fn deleted(&self, meta: &ObjectMeta) {
        self.log.record(self.resource, meta, Event::Deleted);
    }
}

/// Every cache shadow mode reads, by resource (plural), the namespaces, and the watch log.
pub struct ClusterView {
    caches: HashMap<&'static str, Arc<dyn KindCache>>,
    namespaces: Option<SharedInformer<Namespace>>,
    /// The nodes, where a controller caches them (the DaemonSet controller).
    nodes: Option<SharedInformer<CachedNode>>,
    /// The pods as the controllers cache them (their nodes, which the view's metadata-only
    /// pod cache leaves out).
    pods: Option<SharedInformer<CachedPod>>,
    /// When the watch last delivered a change of the node set, and of each node (see
    /// [`NodeMoves`]).
    nodes_moved: Arc<Mutex<NodeChanges>>,
    log: Arc<WatchLog>,
}

/// When the node watch last delivered a change the DaemonSet controller decides from: of the
/// node set (a node added after the first list, deleted, relabelled or retainted), and of each
/// node still there (added after the first list, relabelled or retainted).
#[derive(Debug, Default)]
struct NodeChanges {
    any: Option<Instant>,
    by_node: HashMap<String, Instant>,
}

/// Records [`NodeChanges`] as the node watch delivers them. Heartbeats change neither labels
/// nor taints, so they are not recorded.
struct NodeMoves(Arc<Mutex<NodeChanges>>);

impl NodeMoves {
    /// A change of the node set; of node `name` when it is still there.
    fn moved(&self, name: Option<String>) {
        let now = Instant::now();
        let mut changes = self.0.lock();
        changes.any = Some(now);
        if let Some(name) = name {
            changes.by_node.insert(name, now);
        }
    }
}

impl EventHandler<CachedNode> for NodeMoves {
    fn on_add(&self, node: &Arc<CachedNode>, is_in_initial_list: bool) {
        if !is_in_initial_list {
            self.moved(Some(node.name_any()));
        }
    }

    fn on_update(&self, old: &Arc<CachedNode>, new: &Arc<CachedNode>) {
        if !old.same_labels_and_taints(new) {
            self.moved(Some(new.name_any()));
        }
    }

    fn on_delete(&self, deleted: &DeletedObject<CachedNode>) {
        self.0.lock().by_node.remove(&deleted.object().name_any());
        self.moved(None);
    }
}

impl ClusterView {
    /// A view of the compared `kinds` that `factory` has caches for (those the controllers
    /// asked for), logging what their watches deliver and remembering it for `keep` (a few
    /// settle windows). The nodes are read from the controllers' node cache, if any.
    pub fn new(keep: Duration, kinds: &[ComparedKind], factory: &SharedInformerFactory) -> Self {
        let catalog = Arc::new(Catalog::new(kinds));
        let log = Arc::new(WatchLog::new(keep, catalog.clone()));
        let mut caches = HashMap::new();
        for (resource, compared) in catalog.resources() {
            let Some(cache) = (compared.cache)(factory) else {
                continue;
            };
            cache.follow(Arc::new(LogFeed {
                resource,
                kept_whole: catalog.kept_whole(resource),
                log: log.clone(),
            }));
            caches.insert(resource, cache);
        }
        let nodes = factory.existing::<CachedNode>();
        let nodes_moved = Arc::new(Mutex::new(NodeChanges::default()));
        if let Some(nodes) = &nodes {
            nodes.add_inline_handler(NodeMoves(nodes_moved.clone()));
        }
        Self {
            caches,
            namespaces: None,
            pods: factory.existing::<CachedPod>(),
            nodes,
            nodes_moved,
            log,
        }
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

    /// The node the cached pod `namespace/name` is for (its `spec.nodeName`, else the node its
    /// required affinity pins it to), when `resource` is pods and the nodes are cached.
    pub(crate) fn pod_node(&self, resource: &str, namespace: &str, name: &str) -> Option<String> {
        if resource != "pods" || self.nodes.is_none() {
            return None;
        }
        let pod = self.pods.as_ref()?.lister().get(namespace, name)?;
        pod.target_node_name().map(str::to_owned)
    }

    /// Whether the node `name` is gone (false while the nodes are not cached or not synced).
    pub(crate) fn node_gone(&self, name: &str) -> bool {
        self.nodes
            .as_ref()
            .is_some_and(|nodes| nodes.has_synced() && nodes.lister().get("", name).is_none())
    }

    /// When the watch last delivered a change of the node set ([`NodeMoves`]), if ever.
    pub(crate) fn nodes_last_moved(&self) -> Option<Instant> {
        self.nodes_moved.lock().any
    }

    /// Whether the watch delivered node `name`'s addition, or a change of its labels or taints,
    /// after `since`.
    pub(crate) fn node_changed_since(&self, name: &str, since: Instant) -> bool {
        let changes = self.nodes_moved.lock();
        changes.by_node.get(name).is_some_and(|at| *at > since)
    }

    /// Whether `resource` is cached.
    pub(crate) fn follows(&self, resource: &str) -> bool {
        self.caches.contains_key(resource)
    }

    /// The cached object `namespace/name` of `resource`: its metadata and its JSON (what the
    /// compared fields are read from; metadata only for kinds whose other fields are never
    /// compared).
    pub(crate) fn get(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<(ObjectMeta, Value)> {
        self.caches.get(resource)?.get(namespace, name)
    }

    /// The metadata of the cached object `namespace/name` of `resource`.
    pub(crate) fn meta(&self, resource: &str, namespace: &str, name: &str) -> Option<ObjectMeta> {
        self.caches.get(resource)?.meta(namespace, name)
    }

    /// What the cached object `namespace/name` of `resource` says of its identity and state.
    pub(crate) fn facts(&self, resource: &str, namespace: &str, name: &str) -> Option<ObjectFacts> {
        let mut facts = None;
        self.caches
            .get(resource)?
            .read_meta(namespace, name, &mut |meta| {
                facts = Some(ObjectFacts::of(meta))
            });
        facts
    }

    /// When the object last changed as `change` says (kept for a few settle windows): its
    /// inputs, itself or one it controls ([`Change::Any`]), or its spec ([`Change::Spec`]).
    pub(crate) fn last_changed(
        &self,
        change: Change,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Instant> {
        let logged = self.log.inner.lock();
        let times = match change {
            Change::Any => &logged.changed,
            Change::Spec => &logged.spec_changed,
        };
        times.get(&object_key(resource, namespace, name)).copied()
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
                controller_owner_of(&self.log.catalog, meta).is_some_and(|found| {
                    found.name == owner.name && found.resource == owner.resource
                })
            })
            .filter_map(|meta| meta.name)
            .collect();
        names.sort();
        names
    }

    /// A copy of the log's entries `entries` picks (none when it picks nothing).
    fn logged<T: Clone>(&self, entries: impl FnOnce(&Logged) -> Option<&Vec<T>>) -> Vec<T> {
        entries(&self.log.inner.lock()).cloned().unwrap_or_default()
    }

    /// The creations of `namespace/name` of `resource` the watch delivered (except those of
    /// objects matched by owner).
    pub(crate) fn created_named(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Vec<Creation> {
        self.logged(|log| {
            log.created_by_name
                .get(&object_key(resource, namespace, name))
        })
    }

    /// The creations of `resource` objects controlled by `owner` the watch delivered (only for
    /// owners whose objects are matched by owner).
    pub(crate) fn created_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
    ) -> Vec<Creation> {
        self.logged(|log| {
            log.created_by_owner
                .get(&owner_key(resource, namespace, owner))
        })
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
        self.logged(|log| {
            log.deleted_by_name
                .get(&object_key(resource, namespace, name))
        })
    }

    /// The deletions of `resource` objects controlled by `owner` the watch delivered.
    pub(crate) fn deleted_by(
        &self,
        resource: &str,
        namespace: &str,
        owner: &OwnerName,
    ) -> Vec<Deletion> {
        self.logged(|log| {
            log.deleted_by_owner
                .get(&owner_key(resource, namespace, owner))
        })
    }
}
