//! Informer event handlers (replicaset.md §2): turn ReplicaSet and pod events into queue keys
//! and expectation observations. Handlers only read the caches and enqueue; all API work happens
//! in the sync.

use std::{sync::Arc, time::Duration};

use controller_toolkit::{
    controller_ref::controller_of, keys::pod_key, pod_predicates::is_pod_ready,
};
use expectations::UidTrackingExpectations;
use informer::{CachedPod, CachedReplicaSet, DeletedObject, EventHandler, Lister, object_key};
use kube::{
    ResourceExt,
    core::{Selector, SelectorExt},
};
use workqueue::RateLimitingQueue;

/// What both handlers share with the controller.
#[derive(Clone)]
pub(crate) struct HandlerContext {
    pub(crate) replica_sets: Lister<CachedReplicaSet>,
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) expectations: Arc<UidTrackingExpectations>,
}

impl HandlerContext {
    fn enqueue(&self, replica_set: &CachedReplicaSet) {
        self.queue.add(object_key(replica_set));
    }

    /// The ReplicaSet a pod's controller ref points to, if it exists with the same UID.
    fn resolve_owner(&self, pod: &CachedPod) -> Option<Arc<CachedReplicaSet>> {
        self.replica_sets.resolve_controller_ref(
            &pod.namespace().unwrap_or_default(),
            controller_of(&pod.metadata)?,
        )
    }

    /// Every ReplicaSet in the pod's namespace whose (non-empty) selector matches its labels.
    fn matching_replica_sets(&self, pod: &CachedPod) -> Vec<Arc<CachedReplicaSet>> {
        let Some(labels) = pod
            .metadata
            .labels
            .as_ref()
            .filter(|labels| !labels.is_empty())
        else {
            return Vec::new();
        };
        let namespace = pod.namespace().unwrap_or_default();
        let matching: Vec<_> = self
            .replica_sets
            .list_namespaced(&namespace, &Selector::default())
            .into_iter()
            .filter(|replica_set| {
                replica_set
                    .spec
                    .as_ref()
                    .map(|spec| spec.selector.clone())
                    .filter(|selector| {
                        selector
                            .match_labels
                            .as_ref()
                            .is_some_and(|m| !m.is_empty())
                            || selector
                                .match_expressions
                                .as_ref()
                                .is_some_and(|e| !e.is_empty())
                    })
                    .and_then(|selector| Selector::try_from(selector).ok())
                    .is_some_and(|selector| selector.matches(labels))
            })
            .collect();
        if matching.len() > 1 {
            tracing::warn!(
                pod = %pod_key(pod),
                "user error: more than one ReplicaSet selects this pod"
            );
        }
        matching
    }

    fn pod_deleted(&self, pod: &CachedPod) {
        let Some(replica_set) = self.resolve_owner(pod) else {
            return;
        };
        let key = object_key(replica_set.as_ref());
        self.expectations.deletion_observed(&key, &pod_key(pod));
        self.queue.add(key);
    }
}

/// Handler for the ReplicaSet informer.
pub(crate) struct ReplicaSetHandler(pub(crate) HandlerContext);

impl EventHandler<CachedReplicaSet> for ReplicaSetHandler {
    fn on_add(&self, replica_set: &Arc<CachedReplicaSet>, _is_in_initial_list: bool) {
        self.0.enqueue(replica_set);
    }

    fn on_update(&self, old: &Arc<CachedReplicaSet>, new: &Arc<CachedReplicaSet>) {
        if old.metadata.uid != new.metadata.uid {
            // Deleted and recreated under the same name between two events.
            self.0
                .expectations
                .delete_expectations(&object_key(old.as_ref()));
        }
        self.0.enqueue(new);
    }

    fn on_delete(&self, replica_set: &DeletedObject<CachedReplicaSet>) {
        let key = replica_set.key();
        self.0.expectations.delete_expectations(&key);
        self.0.queue.add(key);
    }
}

/// Handler for the pod informer.
pub(crate) struct PodHandler(pub(crate) HandlerContext);

impl EventHandler<CachedPod> for PodHandler {
    fn on_add(&self, pod: &Arc<CachedPod>, _is_in_initial_list: bool) {
        if pod.metadata.deletion_timestamp.is_some() {
            // Restarted controller seeing a pod already being deleted: count it as deleted.
            self.0.pod_deleted(pod);
            return;
        }
        if controller_of(&pod.metadata).is_some() {
            if let Some(replica_set) = self.0.resolve_owner(pod) {
                let key = object_key(replica_set.as_ref());
                self.0.expectations.creation_observed(&key);
                self.0.queue.add(key);
            }
            return;
        }
        for replica_set in self.0.matching_replica_sets(pod) {
            self.0.enqueue(&replica_set);
        }
    }

    fn on_update(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let labels_changed = old.metadata.labels != new.metadata.labels;
        if new.metadata.deletion_timestamp.is_some() {
            // A graceful delete counts as the deletion right away, so replacements do not wait
            // for the kubelet; the old labels may have selected another ReplicaSet.
            self.0.pod_deleted(new);
            if labels_changed {
                self.0.pod_deleted(old);
            }
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let new_ref = controller_of(&new.metadata);
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(previous_owner) = self.0.resolve_owner(old)
        {
            self.0.enqueue(&previous_owner);
        }
        if new_ref.is_some() {
            if let Some(replica_set) = self.0.resolve_owner(new) {
                self.0.enqueue(&replica_set);
                let min_ready_seconds = replica_set
                    .spec
                    .as_ref()
                    .and_then(|spec| spec.min_ready_seconds)
                    .unwrap_or(0);
                if min_ready_seconds > 0 && !is_pod_ready(old) && is_pod_ready(new) {
                    let delay = Duration::from_secs(u64::try_from(min_ready_seconds).unwrap_or(0));
                    self.0
                        .queue
                        .add_after(object_key(replica_set.as_ref()), delay);
                }
            }
            return;
        }
        if labels_changed || ref_changed {
            for replica_set in self.0.matching_replica_sets(new) {
                self.0.enqueue(&replica_set);
            }
        }
    }

    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        self.0.pod_deleted(pod.object());
    }
}
