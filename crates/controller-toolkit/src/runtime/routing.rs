//! Turning informer events into queue keys: [`PrimaryHandler`] for the controller's own kind
//! and [`OwnerRouting`] for dependents (pods of a ReplicaSet, StatefulSet or DaemonSet,
//! ReplicaSets of a Deployment), upstream's `addPod`/`updatePod`/`deletePod` (and
//! `addReplicaSet`/...) written once.
//!
//! A dependent with a controller reference enqueues the owner it resolves to (same kind, name
//! and UID in the cache); one without enqueues every owner of its namespace whose selector
//! matches its labels, so an orphan is adopted. The creations and deletions a controller's
//! expectations count are observed apart from that, inline with the cache
//! ([`DependentObserver`]), so that whatever a sync reads from the cache has been observed.
//! One selector rule for every controller ([`owner_selector`]): an empty or unparsable
//! selector selects nothing here. The owner kinds are implemented here ([`Owner`]), the typed
//! ones also when cached with their raw JSON ([`RawObject`]).

use std::{marker::PhantomData, sync::Arc, time::Duration};

use expectations::UidTrackingExpectations;
use informer::{
    CachedDeployment, CachedPod, CachedReplicaSet, DeletedObject, EventHandler, LabelMatcher,
    Labeled, Lister, RawObject, object_key,
};
use k8s_openapi::{
    api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet},
    apimachinery::pkg::apis::meta::v1::LabelSelector,
};
use kube::{Resource, ResourceExt};
use workqueue::RateLimitingQueue;

use crate::{controller_ref::controller_of, keys::pod_key, pod_predicates::is_pod_ready};

/// The selector an owner adopts orphans with, or `None` when it is empty (it would select
/// everything) or cannot be parsed: such an owner adopts nothing (upstream's
/// `getPodReplicaSets`, `getPodStatefulSets`, `getDeploymentsForReplicaSet`).
pub fn owner_selector(selector: LabelSelector) -> Option<LabelMatcher> {
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        return None;
    }
    LabelMatcher::try_from(selector).ok()
}

/// A kind that owns dependents through controller references.
pub trait Owner: informer::InformerResource {
    /// `spec.selector`, decoded (the cached kinds keep it as compact JSON).
    fn label_selector(&self) -> Option<LabelSelector>;

    /// Added to `minReadySeconds` when a dependent turning ready enqueues the owner again:
    /// upstream's DaemonSet controller adds a second "to avoid milliseconds skew"; the v1.36
    /// ReplicaSet and StatefulSet controllers add nothing.
    const READY_REQUEUE_SLACK: Duration = Duration::ZERO;

    /// `spec.minReadySeconds`: when positive, a dependent turning ready enqueues the owner
    /// again after that long, so availability is counted on time.
    fn min_ready_seconds(&self) -> i32 {
        0
    }
}

/// A kind that is owned.
pub trait Dependent: Resource<DynamicType = ()> + Labeled + Send + Sync + 'static {
    /// Whether it turned ready between `old` and `new` (only pods ever do).
    fn became_ready(_old: &Self, _new: &Self) -> bool {
        false
    }
}

impl Dependent for CachedPod {
    fn became_ready(old: &Self, new: &Self) -> bool {
        !is_pod_ready(old) && is_pod_ready(new)
    }
}

impl Dependent for CachedReplicaSet {}

impl Dependent for ControllerRevision {}

/// Implements [`Owner`] for a kind whose `spec` has `selector` and `minReadySeconds`: the
/// selector as `$selector` reads it from the spec, the minimum readiness `0` when unset. One
/// body for the ReplicaSet, StatefulSet and DaemonSet, which differ only in how the selector
/// is stored (compact JSON in the cache or typed) and in the ready requeue slack.
macro_rules! owner_with_min_ready_seconds {
    ($(#[$doc:meta])* $kind:ty, |$spec:ident| $selector:expr $(, slack: $slack:expr)?) => {
        $(#[$doc])*
        impl Owner for $kind {
            $(const READY_REQUEUE_SLACK: Duration = $slack;)?

            fn label_selector(&self) -> Option<LabelSelector> {
                self.spec.as_ref().map(|$spec| $selector)
            }

            fn min_ready_seconds(&self) -> i32 {
                self.spec
                    .as_ref()
                    .and_then(|spec| spec.min_ready_seconds)
                    .unwrap_or(0)
            }
        }
    };
}

owner_with_min_ready_seconds!(
    /// A ReplicaSet owns its pods (upstream `getPodReplicaSets`, `resolveControllerRef`).
    CachedReplicaSet,
    |spec| spec.selector.decode()
);

owner_with_min_ready_seconds!(
    /// A StatefulSet owns its pods (upstream `getPodStatefulSets`, `resolveControllerRef`).
    StatefulSet,
    |spec| spec.selector.clone()
);

owner_with_min_ready_seconds!(
    /// A DaemonSet owns its pods (upstream `getDaemonSetsForPod`, `resolveControllerRef`).
    DaemonSet,
    |spec| spec.selector.clone(),
    slack: Duration::from_secs(1)
);

/// A Deployment owns its ReplicaSets (upstream `getDeploymentsForReplicaSet`); a ReplicaSet
/// never turns ready ([`Dependent::became_ready`]), so no ready requeue needs its minimum.
impl Owner for CachedDeployment {
    fn label_selector(&self) -> Option<LabelSelector> {
        self.spec.as_ref().map(|spec| spec.selector.decode())
    }
}

/// An owner cached with its raw JSON owns what the typed object owns.
impl<K: Owner> Owner for RawObject<K> {
    const READY_REQUEUE_SLACK: Duration = K::READY_REQUEUE_SLACK;

    fn label_selector(&self) -> Option<LabelSelector> {
        self.object.label_selector()
    }

    fn min_ready_seconds(&self) -> i32 {
        self.object.min_ready_seconds()
    }
}

/// What a controller learns from its dependents' events besides "sync the owner": the
/// ReplicaSet and DaemonSet controllers' expectations observe creations and deletions here.
pub trait DependentEvents<D>: Send + Sync + 'static {
    /// Whether anything is recorded (no observer is registered for the unit type).
    const RECORDS: bool = true;
    /// A dependent of the owner with key `owner_key` appeared.
    fn created(&self, _owner_key: &str, _dependent: &D) {}
    /// A dependent of the owner with key `owner_key` is gone or being deleted.
    fn deleted(&self, _owner_key: &str, _dependent: &D) {}
}

/// No bookkeeping beyond enqueueing.
impl<D> DependentEvents<D> for () {
    const RECORDS: bool = false;
}

/// Pods as UID-tracking expectations see them: a pod of the owner appearing is an observed
/// creation, one going (or starting to go) the observed deletion of that pod. Tracked by pod,
/// a graceful deletion (the update setting `deletionTimestamp`, then the delete) counts once,
/// so a sync never runs while a pod it deleted is still in the cache as if it were not going.
impl DependentEvents<CachedPod> for Arc<UidTrackingExpectations> {
    fn created(&self, owner_key: &str, _pod: &CachedPod) {
        self.creation_observed(owner_key);
    }

    fn deleted(&self, owner_key: &str, pod: &CachedPod) {
        self.deletion_observed(owner_key, &pod_key(pod));
    }
}

/// Called with the key of an object that is gone.
type OnGone = Arc<dyn Fn(&str) + Send + Sync>;

/// The handler of the controller's own kind: every event enqueues the object's key.
pub struct PrimaryHandler {
    queue: RateLimitingQueue<String>,
    on_gone: Option<OnGone>,
}

impl PrimaryHandler {
    /// Enqueues on every add, update (resyncs included) and delete.
    pub fn new(queue: &RateLimitingQueue<String>) -> Self {
        Self {
            queue: queue.clone(),
            on_gone: None,
        }
    }

    /// Also calls `on_gone(key)` when an object is deleted, or replaced by a namesake with
    /// another UID between two events (the ReplicaSet controller drops its expectations).
    pub fn on_gone(mut self, on_gone: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_gone = Some(Arc::new(on_gone));
        self
    }
}

impl<K: Resource<DynamicType = ()> + Send + Sync + 'static> EventHandler<K> for PrimaryHandler {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        self.queue.add(object_key(obj.as_ref()));
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(on_gone) = &self.on_gone
            && old.meta().uid != new.meta().uid
        {
            on_gone(&object_key(old.as_ref()));
        }
        self.queue.add(object_key(new.as_ref()));
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let key = obj.key();
        if let Some(on_gone) = &self.on_gone {
            on_gone(&key);
        }
        self.queue.add(key);
    }
}

/// What an update that sets a dependent's `deletionTimestamp` is to the routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GracefulDelete {
    /// An update like any other (the StatefulSet and Deployment controllers).
    Update,
    /// The deletion itself, of the new object and, when the labels changed in the same
    /// update, of the old one too (the ReplicaSet controller).
    DeleteOldAndNew,
    /// The deletion itself, of the new object only (the DaemonSet controller).
    DeleteNew,
}

/// The owner in `owners` a dependent's controller reference names, if it is cached with that
/// UID (upstream `resolveControllerRef`).
fn resolve_owner<O: Owner, D: Dependent>(owners: &Lister<O>, dependent: &D) -> Option<Arc<O>> {
    owners.resolve_controller_ref(
        &dependent.namespace().unwrap_or_default(),
        controller_of(dependent.meta())?,
    )
}

/// Routes a dependent kind's events to its owners' keys.
pub struct OwnerRouting<O, E = ()> {
    owners: Lister<O>,
    queue: RateLimitingQueue<String>,
    events: E,
    graceful_delete: GracefulDelete,
    quiet_owned_adds: bool,
    _owner: PhantomData<fn() -> O>,
}

impl<O: Owner> OwnerRouting<O, ()> {
    /// Routes to the owners in `owners`, enqueueing into `queue`.
    pub fn new(owners: Lister<O>, queue: &RateLimitingQueue<String>) -> Self {
        Self {
            owners,
            queue: queue.clone(),
            events: (),
            graceful_delete: GracefulDelete::Update,
            quiet_owned_adds: false,
            _owner: PhantomData,
        }
    }
}

impl<O: Owner, E> OwnerRouting<O, E> {
    /// Reports creations and deletions to `events` too, inline with the cache
    /// ([`Self::split`]).
    pub fn with_events<E2>(self, events: E2) -> OwnerRouting<O, E2> {
        OwnerRouting {
            owners: self.owners,
            queue: self.queue,
            events,
            graceful_delete: self.graceful_delete,
            quiet_owned_adds: self.quiet_owned_adds,
            _owner: PhantomData,
        }
    }

    /// Treats an update that sets `deletionTimestamp` as the deletion itself (upstream's
    /// ReplicaSet controller: replacements are created without waiting for the kubelet), of
    /// the old object too when its labels changed in the same update (they may have selected
    /// another owner).
    pub fn graceful_delete_is_delete(mut self) -> Self {
        self.graceful_delete = GracefulDelete::DeleteOldAndNew;
        self
    }

    /// Treats an update that sets `deletionTimestamp` as the deletion of the new object only
    /// (upstream's DaemonSet controller `updatePod`).
    pub fn graceful_delete_of_new_is_delete(mut self) -> Self {
        self.graceful_delete = GracefulDelete::DeleteNew;
        self
    }

    /// An added dependent whose controller reference resolves enqueues nothing (upstream's
    /// DaemonSet controller for its ControllerRevisions, which it creates itself); orphans,
    /// updates and deletes are routed as usual.
    pub fn quiet_owned_adds(mut self) -> Self {
        self.quiet_owned_adds = true;
        self
    }

    /// The routing that enqueues, and the observer reporting to the events given with
    /// [`Self::with_events`] (`None` without any): [`ControllerRuntime::owns`] registers the
    /// observer inline with the cache and the routing as a queued handler.
    ///
    /// [`ControllerRuntime::owns`]: crate::runtime::ControllerRuntime::owns
    pub fn split<D>(self) -> (OwnerRouting<O, ()>, Option<DependentObserver<O, E>>)
    where
        E: DependentEvents<D>,
    {
        let observer = E::RECORDS.then(|| DependentObserver {
            owners: self.owners.clone(),
            events: self.events,
            graceful_delete: self.graceful_delete,
        });
        let routing = OwnerRouting {
            owners: self.owners,
            queue: self.queue,
            events: (),
            graceful_delete: self.graceful_delete,
            quiet_owned_adds: self.quiet_owned_adds,
            _owner: PhantomData,
        };
        (routing, observer)
    }

    fn enqueue(&self, owner: &O) {
        self.queue.add(object_key(owner));
    }

    fn resolve<D: Dependent>(&self, dependent: &D) -> Option<Arc<O>> {
        resolve_owner(&self.owners, dependent)
    }

    /// The owners of the dependent's namespace whose selector matches its labels.
    fn matching<D: Dependent>(&self, dependent: &D) -> Vec<Arc<O>> {
        let labels = dependent.labels();
        if labels.is_empty() {
            return Vec::new();
        }
        let matching: Vec<Arc<O>> = self
            .owners
            .in_namespace(&dependent.namespace().unwrap_or_default())
            .into_iter()
            .filter(|owner| {
                owner
                    .label_selector()
                    .and_then(owner_selector)
                    .is_some_and(|selector| selector.matches(&labels))
            })
            .collect();
        if matching.len() > 1 {
            tracing::info!(
                dependent = %object_key(dependent),
                owners = matching.len(),
                "user error: more than one {} selects this object",
                O::kind(&())
            );
        }
        matching
    }
}

impl<O: Owner> OwnerRouting<O, ()> {
    /// Enqueues the owner of a dependent that is gone or going.
    fn deleted<D: Dependent>(&self, dependent: &D) {
        if let Some(owner) = self.resolve(dependent) {
            self.enqueue(&owner);
        }
    }
}

impl<D, O> EventHandler<D> for OwnerRouting<O, ()>
where
    D: Dependent,
    O: Owner,
{
    fn on_add(&self, dependent: &Arc<D>, _is_in_initial_list: bool) {
        if dependent.meta().deletion_timestamp.is_some() {
            // A restarted controller seeing a dependent already being deleted.
            self.deleted(dependent.as_ref());
            return;
        }
        if controller_of(dependent.meta()).is_some() {
            if !self.quiet_owned_adds
                && let Some(owner) = self.resolve(dependent.as_ref())
            {
                self.enqueue(&owner);
            }
            return;
        }
        for owner in self.matching(dependent.as_ref()) {
            self.enqueue(&owner);
        }
    }

    fn on_update(&self, old: &Arc<D>, new: &Arc<D>) {
        if old.meta().resource_version == new.meta().resource_version {
            return;
        }
        let labels_changed = old.labels() != new.labels();
        if self.graceful_delete != GracefulDelete::Update && new.meta().deletion_timestamp.is_some()
        {
            self.deleted(new.as_ref());
            if labels_changed && self.graceful_delete == GracefulDelete::DeleteOldAndNew {
                self.deleted(old.as_ref());
            }
            return;
        }
        let old_ref = controller_of(old.meta());
        let new_ref = controller_of(new.meta());
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(previous) = self.resolve(old.as_ref())
        {
            self.enqueue(&previous);
        }
        if new_ref.is_some() {
            if let Some(owner) = self.resolve(new.as_ref()) {
                self.enqueue(&owner);
                let min_ready = owner.min_ready_seconds();
                if min_ready > 0 && D::became_ready(old, new) {
                    let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0))
                        + O::READY_REQUEUE_SLACK;
                    self.queue.add_after(object_key(owner.as_ref()), delay);
                }
            }
            return;
        }
        if labels_changed || ref_changed {
            for owner in self.matching(new.as_ref()) {
                self.enqueue(&owner);
            }
        }
    }

    fn on_delete(&self, dependent: &DeletedObject<D>) {
        self.deleted(dependent.object().as_ref());
    }
}

/// The bookkeeping half of an [`OwnerRouting`] with events ([`OwnerRouting::split`]): a
/// dependent appearing under its owner is a creation, one going (its deletion, or the update
/// that starts a graceful one, as the routing treats it) a deletion, reported to `events`.
///
/// Registered inline with the cache ([`informer::SharedInformer::add_inline_handler`]), so a
/// dependent a sync reads from the cache has been observed by then, and expectations a sync sets
/// after its read count only what it did not see. Observed from a queued handler, as upstream's
/// informer handlers do, a dependent another writer created (the other manager's pod in shadow
/// mode, a pod the previous leader created just before a handover) could be counted by a sync
/// and then lower the expectations that sync set for its own creates: the next sync, no longer
/// waiting, did not see the pod that satisfied them yet and created one too many.
pub struct DependentObserver<O, E> {
    owners: Lister<O>,
    events: E,
    graceful_delete: GracefulDelete,
}

impl<O: Owner, E> DependentObserver<O, E> {
    fn resolve<D: Dependent>(&self, dependent: &D) -> Option<Arc<O>> {
        resolve_owner(&self.owners, dependent)
    }

    fn deleted<D: Dependent>(&self, dependent: &D)
    where
        E: DependentEvents<D>,
    {
        if let Some(owner) = self.resolve(dependent) {
            self.events.deleted(&object_key(owner.as_ref()), dependent);
        }
    }
}

impl<D, O, E> EventHandler<D> for DependentObserver<O, E>
where
    D: Dependent,
    O: Owner,
    E: DependentEvents<D>,
{
    fn on_add(&self, dependent: &Arc<D>, _is_in_initial_list: bool) {
        if dependent.meta().deletion_timestamp.is_some() {
            self.deleted(dependent.as_ref());
        } else if let Some(owner) = self.resolve(dependent.as_ref()) {
            self.events.created(&object_key(owner.as_ref()), dependent);
        }
    }

    fn on_update(&self, old: &Arc<D>, new: &Arc<D>) {
        if old.meta().resource_version == new.meta().resource_version
            || self.graceful_delete == GracefulDelete::Update
            || new.meta().deletion_timestamp.is_none()
        {
            return;
        }
        self.deleted(new.as_ref());
        if self.graceful_delete == GracefulDelete::DeleteOldAndNew && old.labels() != new.labels() {
            self.deleted(old.as_ref());
        }
    }

    fn on_delete(&self, dependent: &DeletedObject<D>) {
        self.deleted(dependent.object().as_ref());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use informer::Store;
    use workqueue::QueueConfig;

    use super::*;

    /// Counts the deletions routed to owners.
    #[derive(Clone, Default)]
    struct Deletions(Arc<AtomicUsize>);

    impl DependentEvents<CachedPod> for Deletions {
        fn deleted(&self, _owner_key: &str, _pod: &CachedPod) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A pod `name` in namespace `ns`, being deleted or not.
    fn named_pod(name: &str, deleting: bool) -> CachedPod {
        let mut pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}")},
        });
        if deleting {
            pod["metadata"]["deletionTimestamp"] = serde_json::json!("2026-01-01T00:00:00Z");
        }
        typed(pod)
    }

    #[test]
    fn a_graceful_deletion_seen_twice_is_one_observed_deletion() {
        let expectations = Arc::new(UidTrackingExpectations::new());
        let observed = expectations.clone();
        expectations.expect_deletions("ns/ds", ["ns/a", "ns/b"]);
        // Pod a goes gracefully: the update that sets deletionTimestamp, then the delete.
        observed.deleted("ns/ds", &named_pod("a", true));
        observed.deleted("ns/ds", &named_pod("a", false));
        assert!(
            !expectations.satisfied_expectations("ns/ds"),
            "pod b is still there: the sync must not run on a cache that still shows it"
        );
        // A pod the sync did not delete does not count either.
        observed.deleted("ns/ds", &named_pod("c", false));
        assert!(!expectations.satisfied_expectations("ns/ds"));
        observed.deleted("ns/ds", &named_pod("b", false));
        assert!(expectations.satisfied_expectations("ns/ds"));
    }

    fn typed<K: serde::de::DeserializeOwned>(json: serde_json::Value) -> K {
        serde_json::from_value(json).expect("valid object")
    }

    /// A pod of the DaemonSet `ds` labelled `app=<app>`, at resourceVersion `version`.
    fn daemon_pod(app: &str, version: &str, deleting: bool) -> Arc<CachedPod> {
        let mut pod = serde_json::json!({"metadata": {
            "name": "ds-x", "namespace": "ns", "resourceVersion": version,
            "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                 "uid": "ds-uid", "controller": true}]}});
        if deleting {
            pod["metadata"]["deletionTimestamp"] = serde_json::json!("2026-11-23T10:00:00Z");
        }
        Arc::new(typed(pod))
    }

    /// An update that starts a graceful deletion and changes the labels in one go: deleted
    /// once (the DaemonSet controller, new object only) or twice (the ReplicaSet controller,
    /// old and new), or not at all (an ordinary update).
    #[tokio::test]
    async fn a_graceful_delete_is_the_deletion_of_the_new_object_or_of_both() {
        let store = Arc::new(Store::new());
        store.upsert(Arc::new(typed::<RawObject<DaemonSet>>(serde_json::json!({
            "metadata": {"name": "ds", "namespace": "ns", "uid": "ds-uid"},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}}}}
        }))));
        let owners = Lister::from_store(store);
        let queue = RateLimitingQueue::new(QueueConfig::new("test")).expect("queue");
        let (old, new) = (daemon_pod("a", "1", false), daemon_pod("b", "2", true));
        type Routing = OwnerRouting<RawObject<DaemonSet>, Deletions>;
        type Configure = fn(Routing) -> Routing;
        let cases: [(&str, Configure, usize); 3] = [
            ("update", |routing| routing, 0),
            (
                "new only",
                OwnerRouting::graceful_delete_of_new_is_delete,
                1,
            ),
            ("old and new", OwnerRouting::graceful_delete_is_delete, 2),
        ];
        for (case, configure, deletions) in cases {
            let counted = Deletions::default();
            let (routing, observer) =
                configure(OwnerRouting::new(owners.clone(), &queue).with_events(counted.clone()))
                    .split::<CachedPod>();
            routing.on_update(&old, &new);
            observer.expect("events are observed").on_update(&old, &new);
            assert_eq!(counted.0.load(Ordering::SeqCst), deletions, "{case}");
        }
        assert_eq!(
            queue.len(),
            1,
            "the DaemonSet is enqueued (once, deduplicated)"
        );
    }

    #[test]
    fn empty_and_unparsable_selectors_select_nothing() {
        let labels: std::collections::BTreeMap<String, String> =
            [("app".to_owned(), "web".to_owned())].into();
        let cases = [
            (serde_json::json!({}), None),
            (serde_json::json!({"matchLabels": {}}), None),
            (serde_json::json!({"matchExpressions": []}), None),
            (
                serde_json::json!({"matchLabels": {"app": "web"}}),
                Some(true),
            ),
            (
                serde_json::json!({"matchLabels": {"app": "api"}}),
                Some(false),
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}),
                Some(true),
            ),
            (
                serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Bogus"}]}),
                None,
            ),
        ];
        for (selector, expected) in cases {
            let parsed: LabelSelector = serde_json::from_value(selector.clone()).expect("selector");
            assert_eq!(
                owner_selector(parsed).map(|s| s.matches(&labels)),
                expected,
                "{selector}"
            );
        }
    }
}
