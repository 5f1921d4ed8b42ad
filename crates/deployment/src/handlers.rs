//! Informer event handlers (spec §2): turn Deployment, ReplicaSet and pod events into
//! Deployment keys. Handlers only read the caches and enqueue; the one exception is upstream's
//! pod-delete path for Recreate Deployments, which lists ReplicaSets from the API server (on a
//! spawned task, so the handler itself never blocks).

use std::sync::Arc;

use controller_toolkit::controller_ref::controller_of;
use informer::{
    CachedDeployment, CachedPod, CachedReplicaSet, DeletedObject, EventHandler, Lister,
    POD_CONTROLLER_UID_INDEX, object_key, owner_index_key,
};
use kube::{
    Api, Client, ResourceExt,
    api::ListParams,
    core::{Selector, SelectorExt},
};
use workqueue::RateLimitingQueue;

use crate::constants::STRATEGY_RECREATE;
use crate::fenceposts::strategy_type;

/// What the handlers share with the controller.
#[derive(Clone)]
pub(crate) struct HandlerContext {
    pub(crate) client: Client,
    pub(crate) deployments: Lister<CachedDeployment>,
    pub(crate) replica_sets: Lister<CachedReplicaSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) queue: RateLimitingQueue<String>,
}

/// The Deployment's selector, if it is non-empty and parseable (an empty selector selects
/// nothing here, as upstream's `getDeploymentsForReplicaSet`).
pub(crate) fn non_empty_selector(d: &CachedDeployment) -> Option<Selector> {
    let selector = d.spec.as_ref()?.selector.clone();
    let empty = selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        return None;
    }
    Selector::try_from(selector).ok()
}

impl HandlerContext {
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

    /// getDeploymentsForReplicaSet: Deployments of the namespace whose non-empty selector
    /// matches the ReplicaSet's labels (a ReplicaSet without labels matches nothing).
    fn matching_deployments(&self, rs: &CachedReplicaSet) -> Vec<Arc<CachedDeployment>> {
        let Some(labels) = rs.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
            return Vec::new();
        };
        let matching: Vec<_> = self
            .deployments
            .list_namespaced(&rs.namespace().unwrap_or_default(), &Selector::default())
            .into_iter()
            .filter(|d| non_empty_selector(d).is_some_and(|s| s.matches(labels)))
            .collect();
        if matching.len() > 1 {
            tracing::info!(
                replica_set = %object_key(rs),
                "user error: more than one Deployment selects this ReplicaSet"
            );
        }
        matching
    }

    fn replica_set_deleted(&self, rs: &CachedReplicaSet) {
        if let Some(d) = self.resolve_deployment(rs) {
            self.enqueue(&d);
        }
    }

    /// Pod delete (spec §2.5): only a Recreate Deployment cares, and only once none of its
    /// ReplicaSets has a pod left; the ReplicaSets are listed from the API server.
    fn pod_deleted(&self, pod: &CachedPod) {
        let Some(rs) = self.resolve_replica_set(pod) else {
            return;
        };
        let Some(d) = self.resolve_deployment(&rs) else {
            return;
        };
        if strategy_type(&d) != STRATEGY_RECREATE {
            return;
        }
        let context = self.clone();
        tokio::spawn(async move { context.enqueue_if_no_pods_left(&d).await });
    }

    async fn enqueue_if_no_pods_left(&self, d: &CachedDeployment) {
        let Some(selector) = d
            .spec
            .as_ref()
            .and_then(|spec| Selector::try_from(spec.selector.clone()).ok())
        else {
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

/// Handler for the Deployment informer: every add, update (resyncs included) and delete.
pub(crate) struct DeploymentHandler(pub(crate) HandlerContext);

impl EventHandler<CachedDeployment> for DeploymentHandler {
    fn on_add(&self, d: &Arc<CachedDeployment>, _is_in_initial_list: bool) {
        self.0.enqueue(d);
    }

    fn on_update(&self, _old: &Arc<CachedDeployment>, new: &Arc<CachedDeployment>) {
        self.0.enqueue(new);
    }

    fn on_delete(&self, d: &DeletedObject<CachedDeployment>) {
        self.0.queue.add(d.key());
    }
}

/// Handler for the ReplicaSet informer.
pub(crate) struct ReplicaSetHandler(pub(crate) HandlerContext);

impl EventHandler<CachedReplicaSet> for ReplicaSetHandler {
    fn on_add(&self, rs: &Arc<CachedReplicaSet>, _is_in_initial_list: bool) {
        if rs.metadata.deletion_timestamp.is_some() {
            self.0.replica_set_deleted(rs);
            return;
        }
        if controller_of(&rs.metadata).is_some() {
            if let Some(d) = self.0.resolve_deployment(rs) {
                self.0.enqueue(&d);
            }
            return;
        }
        for d in self.0.matching_deployments(rs) {
            self.0.enqueue(&d);
        }
    }

    fn on_update(&self, old: &Arc<CachedReplicaSet>, new: &Arc<CachedReplicaSet>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let new_ref = controller_of(&new.metadata);
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(d) = self.0.resolve_deployment(old)
        {
            self.0.enqueue(&d);
        }
        if new_ref.is_some() {
            if let Some(d) = self.0.resolve_deployment(new) {
                self.0.enqueue(&d);
            }
            return;
        }
        if ref_changed || old.metadata.labels != new.metadata.labels {
            for d in self.0.matching_deployments(new) {
                self.0.enqueue(&d);
            }
        }
    }

    fn on_delete(&self, rs: &DeletedObject<CachedReplicaSet>) {
        self.0.replica_set_deleted(rs.object());
    }
}

/// Handler for the pod informer: deletes only (upstream has no pod add/update handlers).
pub(crate) struct PodHandler(pub(crate) HandlerContext);

impl EventHandler<CachedPod> for PodHandler {
    fn on_add(&self, _pod: &Arc<CachedPod>, _is_in_initial_list: bool) {}

    fn on_update(&self, _old: &Arc<CachedPod>, _new: &Arc<CachedPod>) {}

    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        self.0.pod_deleted(pod.object());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_selector(selector: serde_json::Value) -> CachedDeployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": selector, "template": {}}
        }))
        .expect("deployment")
    }

    #[test]
    fn only_non_empty_parseable_selectors_match_replica_sets() {
        let labels: std::collections::BTreeMap<String, String> =
            [("app".to_owned(), "web".to_owned())].into();
        let cases = [
            (serde_json::json!({}), None),
            (serde_json::json!({"matchLabels": {}}), None),
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
            let d = with_selector(selector.clone());
            assert_eq!(
                non_empty_selector(&d).map(|s| s.matches(&labels)),
                expected,
                "{selector}"
            );
        }
    }
}
