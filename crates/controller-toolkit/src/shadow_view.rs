//! How shadow mode compares the kinds a controller writes, as the controller declares it in its
//! descriptor ([`ComparedKind`]), and a type-erased view of one informer's cache
//! ([`KindCache`]) through which shadow mode reads and follows those kinds.
//!
//! Why here: shadow mode must know, per kind, which fields a write is judged on and how an
//! object the cluster created is recognized, and it must read each kind from the cache the
//! controller already fills, whatever Rust type that cache holds (a compact cached pod, a
//! StatefulSet kept as raw JSON). The controller crate knows both; shadow mode knows neither
//! and reads them through these types, so it depends on no controller.

use std::sync::Arc;

use informer::{
    CachedPod, DeletedObject, EventHandler, InformerResource, Labeled, Lister, SharedInformer,
    SharedInformerFactory,
};
use k8s_openapi::{
    api::{apps::v1::ControllerRevision, core::v1::PodTemplateSpec},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::Resource;
use serde_json::Value;

/// One kind as shadow mode compares it. Several controllers may declare the same resource
/// (pods are written by the ReplicaSet and StatefulSet controllers): shadow mode takes the union
/// of what they compare.
#[derive(Debug, Clone, Copy)]
pub struct ComparedKind {
    /// The resource (plural), e.g. `replicasets`.
    pub resource: &'static str,
    /// The kind as owner references name it, e.g. `ReplicaSet`.
    pub kind: &'static str,
    /// The fields a status write is compared on (conditions' type/status/reason come on top).
    pub status_fields: &'static [&'static str],
    /// The fields a write of the whole object is compared on.
    pub object_fields: &'static [&'static str],
    /// Annotations with these prefixes are compared on writes of the whole object.
    pub annotation_prefixes: &'static [&'static str],
    /// Whether those annotations are compared on status writes too (the Deployment controller
    /// persists its revision annotation through `/status`).
    pub annotations_on_status: bool,
    /// For a kind the controller reconciles (an owner shadow mode follows): how each kind of
    /// object the controller creates for an owner of this kind is recognized. Empty for a kind
    /// it only writes as a dependent (pods, claims, revisions, a Deployment's ReplicaSets as
    /// the Deployment controller sees them).
    pub dependents: &'static [Dependents],
    /// Whether the controller decides this kind's writes from the nodes too (the DaemonSet
    /// controller): a node added, deleted, relabelled or retainted after a write was decided
    /// moved its inputs, as a change of the object itself does, so a status decided on a node
    /// set the cluster no longer has is not judged against the cluster's.
    pub decided_from_nodes: bool,
    /// The cache shadow mode reads this kind from, if the controllers asked for it.
    pub cache: fn(&SharedInformerFactory) -> Option<Arc<dyn KindCache>>,
}

/// Pods as the controllers that create them are compared: by their labels (adoption and
/// release change them), read from the compact cached pods.
pub const PODS: ComparedKind = ComparedKind {
    resource: "pods",
    kind: "Pod",
    status_fields: &[],
    object_fields: &["metadata.labels"],
    annotation_prefixes: &[],
    annotations_on_status: false,
    dependents: &[],
    decided_from_nodes: false,
    cache: pod_cache,
};

/// ControllerRevisions as the controllers that write them (StatefulSet, DaemonSet) are
/// compared: by their revision number; named by the controller.
pub const CONTROLLER_REVISIONS: ComparedKind = ComparedKind {
    resource: "controllerrevisions",
    kind: "ControllerRevision",
    status_fields: &[],
    object_fields: &["revision"],
    annotation_prefixes: &[],
    annotations_on_status: false,
    dependents: &[],
    decided_from_nodes: false,
    cache: revision_cache,
};

fn revision_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<ControllerRevision>(factory, whole)
}

fn pod_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<CachedPod>(factory, metadata_only)
}

/// How the objects of one resource that a controller creates for an owner are recognized
/// among the cluster's.
#[derive(Debug, Clone, Copy)]
pub struct Dependents {
    /// The created resource (plural), e.g. `pods`.
    pub resource: &'static str,
    /// How its objects are recognized.
    pub matched: DependentsMatch,
}

/// How an object a controller creates for an owner is recognized among the cluster's.
#[derive(Debug, Clone, Copy)]
pub enum DependentsMatch {
    /// By name: the controller decides it (a StatefulSet's pods, claims and revisions, named
    /// after a hash of their data that upstream computes the same way).
    Name,
    /// By owner and count: their names are generated (a ReplicaSet's or a DaemonSet's pods).
    Count,
    /// By owner and pod template, with `equal` deciding whether two templates are the same
    /// (a Deployment's ReplicaSets: the pod-template-hash label differs between
    /// implementations); the objects are kept whole when created, to be matched.
    Template {
        /// Whether two pod templates are the same for the controller.
        equal: fn(&PodTemplateSpec, &PodTemplateSpec) -> bool,
    },
    /// By owner and `data`: a ControllerRevision named after the hash of its pod template,
    /// which upstream computes from Go's printed struct and kcm-rs does not reproduce (a
    /// DaemonSet's); the objects are kept whole when created, to be matched.
    Data,
}

/// Read access to one kind's cache, whatever type the cache holds.
pub trait KindCache: Send + Sync {
    /// The object's metadata and its JSON (what compared fields are read from).
    fn get(&self, namespace: &str, name: &str) -> Option<(ObjectMeta, Value)>;
    /// The object's metadata alone (no JSON built).
    fn meta(&self, namespace: &str, name: &str) -> Option<ObjectMeta>;
    /// Calls `read` with the object's metadata where the cache holds it, without copying it
    /// (for checks that read a few fields of many objects); not called when it is not cached.
    fn read_meta(&self, namespace: &str, name: &str, read: &mut dyn FnMut(&ObjectMeta));
    /// The metadata of every object in `namespace`.
    fn in_namespace(&self, namespace: &str) -> Vec<ObjectMeta>;
    /// Delivers the cache's watch events to `events` as the cache applies them (an inline
    /// handler): a change the cache showed at some instant was delivered by then.
    fn follow(&self, events: Arc<dyn KindEvents>);
}

/// An object as the watch delivered it, read as JSON only when asked: it holds the cached
/// object itself (shared with the cache while unchanged), not its JSON, which is built only
/// for the rare create that is matched by content.
#[derive(Clone)]
pub struct Snapshot(Arc<dyn Fn() -> Value + Send + Sync>);

impl Snapshot {
    /// `object`, read as JSON by `to_json` when asked.
    pub fn of<K: Send + Sync + 'static>(object: Arc<K>, to_json: fn(&K) -> Value) -> Self {
        Self(Arc::new(move || to_json(&object)))
    }

    /// A snapshot of JSON already built (tests, and kinds cached as JSON).
    pub fn of_json(json: Value) -> Self {
        Self(Arc::new(move || json.clone()))
    }

    /// The object as JSON.
    pub fn json(&self) -> Value {
        (self.0)()
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Snapshot")
    }
}

/// What a [`KindCache`]'s watch delivers, by metadata, on the informer's own task: each call
/// must be quick and must not block.
pub trait KindEvents: Send + Sync {
    /// An object was created (not in the cache's first list); `snapshot` gives it whole.
    fn created(&self, meta: &ObjectMeta, snapshot: &dyn Fn() -> Snapshot);
    /// An object changed (a resync with the same resourceVersion is not delivered).
    fn updated(&self, old: &ObjectMeta, new: &ObjectMeta);
    /// An object was removed.
    fn deleted(&self, meta: &ObjectMeta);
}

/// The [`KindCache`] of the shared informer for `K`, if a controller asked for one, with
/// `to_json` giving the JSON compared fields are read from ([`whole`] or [`metadata_only`]).
pub fn cache_of<K: InformerResource>(
    factory: &SharedInformerFactory,
    to_json: fn(&K) -> Value,
) -> Option<Arc<dyn KindCache>> {
    let informer = factory.existing::<K>()?;
    Some(Arc::new(InformerCache {
        lister: informer.lister(),
        informer,
        to_json,
    }))
}

struct InformerCache<K> {
    informer: SharedInformer<K>,
    lister: Lister<K>,
    to_json: fn(&K) -> Value,
}

impl<K: InformerResource> KindCache for InformerCache<K> {
    fn get(&self, namespace: &str, name: &str) -> Option<(ObjectMeta, Value)> {
        let object = self.lister.get(namespace, name)?;
        Some((object.meta().clone(), (self.to_json)(&object)))
    }

    fn meta(&self, namespace: &str, name: &str) -> Option<ObjectMeta> {
        Some(self.lister.get(namespace, name)?.meta().clone())
    }

    fn read_meta(&self, namespace: &str, name: &str, read: &mut dyn FnMut(&ObjectMeta)) {
        if let Some(object) = self.lister.get(namespace, name) {
            read(object.meta());
        }
    }

    fn in_namespace(&self, namespace: &str) -> Vec<ObjectMeta> {
        self.lister
            .in_namespace(namespace)
            .into_iter()
            .map(|object| object.meta().clone())
            .collect()
    }

    fn follow(&self, events: Arc<dyn KindEvents>) {
        self.informer.add_inline_handler(Following {
            events,
            to_json: self.to_json,
        });
    }
}

struct Following<K> {
    events: Arc<dyn KindEvents>,
    to_json: fn(&K) -> Value,
}

impl<K: InformerResource> EventHandler<K> for Following<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if !is_in_initial_list {
            let snapshot = || Snapshot::of(obj.clone(), self.to_json);
            self.events.created(obj.meta(), &snapshot);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().resource_version != new.meta().resource_version {
            self.events.updated(old.meta(), new.meta());
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        self.events.deleted(obj.object().meta());
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
