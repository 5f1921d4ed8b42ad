//! Informer event handlers (statefulset.md §2): StatefulSet and pod events become queue keys.
//! Claims and revisions have no handlers; they are only read.

use std::{sync::Arc, time::Duration};

use controller_toolkit::{controller_ref::controller_of, pod_predicates::is_pod_ready};
use informer::{CachedPod, DeletedObject, EventHandler, Lister, object_key};
use kube::{
    ResourceExt,
    core::{Selector, SelectorExt},
};
use workqueue::RateLimitingQueue;

use crate::{decide::min_ready_seconds, raw::RawStatefulSet};

/// What both handlers share with the controller.
#[derive(Clone)]
pub(crate) struct HandlerContext {
    pub(crate) sets: Lister<RawStatefulSet>,
    pub(crate) queue: RateLimitingQueue<String>,
}

impl HandlerContext {
    /// The set a pod's controller ref points to, if it exists with the same UID.
    fn resolve_owner(&self, pod: &CachedPod) -> Option<Arc<RawStatefulSet>> {
        self.sets.resolve_controller_ref(
            &pod.namespace().unwrap_or_default(),
            controller_of(&pod.metadata)?,
        )
    }

    /// Every set in the pod's namespace whose selector matches its labels (upstream
    /// `getPodStatefulSets`).
    fn matching_sets(&self, pod: &CachedPod) -> Vec<Arc<RawStatefulSet>> {
        let Some(labels) = pod
            .metadata
            .labels
            .as_ref()
            .filter(|labels| !labels.is_empty())
        else {
            return Vec::new();
        };
        self.sets
            .list_namespaced(&pod.namespace().unwrap_or_default(), &Selector::default())
            .into_iter()
            .filter(|set| {
                set.set
                    .spec
                    .as_ref()
                    .and_then(|spec| Selector::try_from(spec.selector.clone()).ok())
                    .is_some_and(|selector| !selector.selects_all() && selector.matches(labels))
            })
            .collect()
    }

    fn enqueue(&self, set: &RawStatefulSet) {
        self.queue.add(object_key(set));
    }

    fn pod_deleted(&self, pod: &CachedPod) {
        if let Some(set) = self.resolve_owner(pod) {
            self.enqueue(&set);
        }
    }
}

/// Handler for the StatefulSet informer: every add, update and delete is a sync.
pub(crate) struct SetHandler(pub(crate) HandlerContext);

impl EventHandler<RawStatefulSet> for SetHandler {
    fn on_add(&self, set: &Arc<RawStatefulSet>, _is_in_initial_list: bool) {
        self.0.enqueue(set);
    }

    fn on_update(&self, old: &Arc<RawStatefulSet>, new: &Arc<RawStatefulSet>) {
        let replicas = |set: &RawStatefulSet| set.set.status.as_ref().map(|status| status.replicas);
        if replicas(old) != replicas(new) {
            tracing::debug!(key = %object_key(new.as_ref()), old = ?replicas(old), new = ?replicas(new), "StatefulSet status replicas changed");
        }
        self.0.enqueue(new);
    }

    fn on_delete(&self, set: &DeletedObject<RawStatefulSet>) {
        self.0.queue.add(set.key());
    }
}

/// Handler for the pod informer.
pub(crate) struct PodHandler(pub(crate) HandlerContext);

impl EventHandler<CachedPod> for PodHandler {
    fn on_add(&self, pod: &Arc<CachedPod>, _is_in_initial_list: bool) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.0.pod_deleted(pod);
            return;
        }
        if controller_of(&pod.metadata).is_some() {
            if let Some(set) = self.0.resolve_owner(pod) {
                self.0.enqueue(&set);
            }
            return;
        }
        for set in self.0.matching_sets(pod) {
            self.0.enqueue(&set);
        }
    }

    fn on_update(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let new_ref = controller_of(&new.metadata);
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(previous) = self.0.resolve_owner(old)
        {
            self.0.enqueue(&previous);
        }
        if new_ref.is_some() {
            if let Some(set) = self.0.resolve_owner(new) {
                self.0.enqueue(&set);
                let min_ready = min_ready_seconds(&set.set);
                if min_ready > 0 && !is_pod_ready(old) && is_pod_ready(new) {
                    let delay = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
                    self.0.queue.add_after(object_key(set.as_ref()), delay);
                }
            }
            return;
        }
        if ref_changed || old.metadata.labels != new.metadata.labels {
            for set in self.0.matching_sets(new) {
                self.0.enqueue(&set);
            }
        }
    }

    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        self.0.pod_deleted(pod.object());
    }
}
