//! The Deployment controller's pod handler (upstream `deletePod`): a Recreate Deployment waits
//! for its old pods to be gone, so their deletion enqueues it once none is left. It lists
//! ReplicaSets from the API server, as upstream, on a spawned task so the handler itself never
//! blocks.
//!
//! kcm-rs only: a RollingUpdate Deployment is enqueued when a pod stops being active (it is
//! marked for deletion, ends, or goes while still active) that its rolling planner counted
//! beyond its ReplicaSet's `status.replicas` (see `sync::rolling`). No ReplicaSet event
//! announces the room that pod frees, since the status already said less, so without this the
//! rollout would wait for the next resync. The room is freed when the pod stops being active,
//! not when it is finally removed: a terminating pod is counted by no one.
//!
//! Deployment and ReplicaSet events are routed by the controller runtime; this is the one
//! handler of its own.

use std::sync::Arc;

use controller_toolkit::controller_ref::controller_of;
use controller_toolkit::pod_predicates::is_pod_active;
use controller_toolkit::runtime::Owner;
use informer::{
    CachedDeployment, CachedPod, CachedReplicaSet, DeletedObject, EventHandler, Lister,
    POD_CONTROLLER_UID_INDEX, object_key, owner_index_key,
};
use kube::{Api, Client, ResourceExt, api::ListParams, core::Selector};
use workqueue::RateLimitingQueue;

use crate::constants::STRATEGY_RECREATE;
use crate::replica_set::{rs_active_cached_pods, rs_status_replicas};
use crate::rollout_limits::strategy_type;

/// What the pod handler reads.
#[derive(Clone)]
pub(crate) struct PodHandler {
    pub(crate) client: Client,
    pub(crate) deployments: Lister<CachedDeployment>,
    pub(crate) replica_sets: Lister<CachedReplicaSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) queue: RateLimitingQueue<String>,
}

impl PodHandler {
    fn enqueue(&self, d: &CachedDeployment) {
        self.queue.add(object_key(d));
    }

    /// The Deployment a ReplicaSet's controller ref points to, if it exists with that UID.
    fn resolve_deployment(&self, rs: &CachedReplicaSet) -> Option<Arc<CachedDeployment>> {
        self.deployments.resolve_controller_ref(
            &rs.namespace().unwrap_or_default(),
            controller_of(&rs.metadata)?,
        )
    }

    /// The ReplicaSet a pod's controller ref points to, if it exists with that UID.
    fn resolve_replica_set(&self, pod: &CachedPod) -> Option<Arc<CachedReplicaSet>> {
        self.replica_sets.resolve_controller_ref(
            &pod.namespace().unwrap_or_default(),
            controller_of(&pod.metadata)?,
        )
    }

    /// The Deployment that controls `pod` through its ReplicaSet, with that ReplicaSet.
    fn resolve_owners(
        &self,
        pod: &CachedPod,
    ) -> Option<(Arc<CachedReplicaSet>, Arc<CachedDeployment>)> {
        let rs = self.resolve_replica_set(pod)?;
        let d = self.resolve_deployment(&rs)?;
        Some((rs, d))
    }

    /// Pod delete: a Recreate Deployment cares only once none of its ReplicaSets has a pod
    /// left (the ReplicaSets are listed from the API server); a RollingUpdate one only when
    /// the pod was still active, as for [`Self::pod_stopped`].
    fn pod_deleted(&self, pod: &CachedPod) {
        let Some((rs, d)) = self.resolve_owners(pod) else {
            return;
        };
        if strategy_type(&d) != STRATEGY_RECREATE {
            if is_pod_active(pod) && self.counted_beyond_status(&rs) {
                self.enqueue(&d);
            }
            return;
        }
        let context = self.clone();
        tokio::spawn(async move { context.enqueue_if_no_pods_left(&d).await });
    }

    /// A pod stopped being active (marked for deletion, or ended): a RollingUpdate
    /// Deployment is enqueued if its planner counted the pod beyond its ReplicaSet's status.
    fn pod_stopped(&self, pod: &CachedPod) {
        let Some((rs, d)) = self.resolve_owners(pod) else {
            return;
        };
        if strategy_type(&d) != STRATEGY_RECREATE && self.counted_beyond_status(&rs) {
            self.enqueue(&d);
        }
    }

    /// Whether the pod that just stopped being active was one the rolling planner counted
    /// beyond `rs`'s `status.replicas`: the active pods left in the cache are still at least
    /// that status. When the status already counts the pod (the ReplicaSet controller's own
    /// scale-down), it is not, and the ReplicaSet's next status write syncs the Deployment as
    /// upstream.
    fn counted_beyond_status(&self, rs: &CachedReplicaSet) -> bool {
        rs_active_cached_pods(&self.pods, rs) >= rs_status_replicas(rs)
    }

    async fn enqueue_if_no_pods_left(&self, d: &CachedDeployment) {
        let Some(selector) = d.label_selector().and_then(|s| Selector::try_from(s).ok()) else {
            return;
        };
        let api = Api::<CachedReplicaSet>::namespaced(
            self.client.clone(),
            &d.namespace().unwrap_or_default(),
        );
        let list = match api
            .list(&ListParams::default().labels_from(&selector))
            .await
        {
            Ok(list) => list,
            Err(error) => {
                tracing::debug!(deployment = %object_key(d), %error, "listing ReplicaSets after a pod delete");
                return;
            }
        };
        let uid = d.metadata.uid.as_deref();
        let pods: usize = list
            .items
            .iter()
            .filter(|rs| controller_of(&rs.metadata).is_some_and(|o| Some(o.uid.as_str()) == uid))
            .map(|rs| {
                self.pods
                    .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(rs))
                    .len()
            })
            .sum();
        if pods == 0 {
            self.enqueue(d);
        }
    }
}

/// Deletes, as upstream's `deletePod`, and (kcm-rs only) updates that end a pod's activity.
impl EventHandler<CachedPod> for PodHandler {
    fn on_add(&self, _pod: &Arc<CachedPod>, _is_in_initial_list: bool) {}

    fn on_update(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        if is_pod_active(old) && !is_pod_active(new) {
            self.pod_stopped(new);
        }
    }

    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        self.pod_deleted(pod.object());
    }
}
