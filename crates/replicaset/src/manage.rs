//! upstream `manageReplicas`: create the missing pods in slow-start
//! batches, or delete the surplus, lowest-ranked first, keeping the expectations in step with
//! every write so the next sync neither repeats nor misses one.

use std::sync::Arc;

use controller_toolkit::{
    controller_ref::{gvk_of, new_controller_ref},
    keys::pod_key,
    ranking::{rank_by_related_pods_on_same_node, sort_for_deletion},
    runtime::Owner,
    writes::slow_start,
};
use futures::future::join_all;
use informer::{
    CONTROLLER_UID_INDEX, CachedPod, CachedReplicaSet, CompactPodTemplate, LabelMatcher,
    POD_CONTROLLER_UID_INDEX, controller_index_key, orphan_pod_index_key, owner_index_key,
};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::{
    controller::{ReplicaSetSync, SyncError},
    decide::{ReplicaPlan, plan_replicas},
};

/// What one manage step did.
#[derive(Debug, Default)]
pub(crate) struct ManageOutcome {
    /// Creates or deletes the API server accepted: the expectations wait to observe them.
    pub(crate) accepted: usize,
    /// The first failure, if any; the sync is retried with backoff.
    pub(crate) error: Option<SyncError>,
}

impl ManageOutcome {
    fn finished(accepted: usize, error: Option<impl Into<SyncError>>) -> Self {
        Self {
            accepted,
            error: error.map(Into::into),
        }
    }
}

impl ReplicaSetSync {
    /// upstream `manageReplicas`.
    pub(crate) async fn manage_replicas(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
    ) -> ManageOutcome {
        let desired = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.replicas)
            .unwrap_or(1);
        match plan_replicas(active_pods.len(), desired) {
            ReplicaPlan::Nothing => ManageOutcome::default(),
            ReplicaPlan::Create(count) => self.create_pods(replica_set, key, count).await,
            ReplicaPlan::Delete(count) => {
                self.delete_pods(active_pods, replica_set, key, count).await
            }
        }
    }

    /// Creates `count` pods in slow-start batches; stops after the first batch with a failure
    /// and lowers the expectations for every create that will never be observed.
    async fn create_pods(
        &self,
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
        count: usize,
    ) -> ManageOutcome {
        let namespace = replica_set.namespace().unwrap_or_default();
        let template = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.template.as_ref())
            .map(CompactPodTemplate::decode)
            .unwrap_or_default();
        let controller_ref =
            new_controller_ref(replica_set.as_ref(), &gvk_of::<CachedReplicaSet>());
        self.expectations
            .expect_creations_after_read(key, i64::try_from(count).unwrap_or(i64::MAX));
        let outcome = slow_start(count, |_| async {
            match self
                .pod_control
                .create_pods(&namespace, &template, replica_set.as_ref(), &controller_ref)
                .await
            {
                // No pod will appear, but the namespace is going away: nothing to retry.
                Err(error) if !error.is_namespace_terminating() => Err(error),
                _ => Ok(()),
            }
        })
        .await;
        for _ in outcome.successes..count {
            self.expectations.creation_observed(key);
        }
        ManageOutcome::finished(outcome.successes, outcome.errors.into_iter().next())
    }

    /// Deletes the `count` lowest-ranked pods, all at once.
    async fn delete_pods(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
        count: usize,
    ) -> ManageOutcome {
        let victims = self.choose_victims(active_pods, replica_set, count);
        self.expectations
            .expect_deletions(key, victims.iter().map(|pod| pod_key(pod)));
        let results = join_all(
            victims
                .iter()
                .map(|pod| self.pod_control.delete_pod(pod, replica_set.as_ref())),
        )
        .await;
        let mut first_error = None;
        let mut deleted = 0;
        for (pod, result) in victims.iter().zip(results) {
            match result {
                Ok(()) => deleted += 1,
                Err(error) => {
                    // No delete event will come for this pod: stop waiting for it.
                    self.expectations.deletion_observed(key, &pod_key(pod));
                    if !error.is_not_found() {
                        first_error.get_or_insert(error);
                    }
                }
            }
        }
        ManageOutcome::finished(deleted, first_error)
    }

    /// all pods if deleting at least as many as exist, otherwise the first
    /// `count` by upstream's ranking, with ranks counted over pods of sibling ReplicaSets.
    fn choose_victims(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &CachedReplicaSet,
        count: usize,
    ) -> Vec<Arc<CachedPod>> {
        if count >= active_pods.len() {
            return active_pods.to_vec();
        }
        let related = self.related_pods(replica_set);
        let ranked = rank_by_related_pods_on_same_node(active_pods, &related);
        sort_for_deletion(ranked, Timestamp::now())
            .into_iter()
            .take(count)
            .map(|ranked| ranked.pod)
            .collect()
    }

    /// Pods of every ReplicaSet with the same controller as this one (its siblings and itself).
    fn related_pods(&self, replica_set: &CachedReplicaSet) -> Vec<Arc<CachedPod>> {
        let Some(owner) = controller_toolkit::controller_ref::controller_of(&replica_set.metadata)
        else {
            return Vec::new();
        };
        let namespace = replica_set.namespace().unwrap_or_default();
        let orphans = self
            .pods
            .by_index(POD_CONTROLLER_UID_INDEX, &orphan_pod_index_key(&namespace));
        let mut seen = std::collections::HashSet::new();
        let mut related = Vec::new();
        let siblings = controller_index_key(&namespace, &owner.kind, &owner.name, &owner.uid);
        for sibling in self.replica_sets.by_index(CONTROLLER_UID_INDEX, &siblings) {
            let Some(selector) = sibling
                .label_selector()
                .and_then(|selector| LabelMatcher::try_from(selector).ok())
            else {
                continue;
            };
            // Upstream lists the namespace's pods matching the sibling's selector; the pods a
            // sibling owns plus the orphans are those, bar pods owned by an unrelated
            // controller, and need no namespace scan.
            let owned = self
                .pods
                .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(sibling.as_ref()));
            for pod in owned.iter().chain(&orphans) {
                if selector.selects(pod.as_ref()) && seen.insert(pod.uid().unwrap_or_default()) {
                    related.push(pod.clone());
                }
            }
        }
        related
    }
}
