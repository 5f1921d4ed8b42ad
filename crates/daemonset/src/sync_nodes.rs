//! Carrying out the pod plans (upstream `manage`, `rollingUpdate` and `syncNodes`): the
//! expectations set before any request, creates in slow-start batches of 1, 2, 4, ... (at
//! most 250 per sync) through the toolkit's pod control, deletes all at once, and the
//! expectations lowered for every write that will never be observed.
//!
//! Why the expectations first: a pod created here reaches the cache through the watch some
//! time later, and a sync in between would see the node still without a pod and create a
//! second one. `syncDaemonSet` does not manage pods until every create and delete of the last
//! `syncNodes` was observed (or given up on).

use std::{collections::HashMap, sync::Arc};

use controller_toolkit::{
    controller_ref::{gvk_of, new_controller_ref},
    pod_control::PodControlError,
};
use futures::future::join_all;
use informer::CachedPod;
use k8s_openapi::api::apps::v1::DaemonSet;

use crate::{
    controller::{DaemonSetSync, SyncContext, SyncError, pods_by_key},
    decide::{
        nodes_to_pods::manage,
        rolling_update::rolling_update,
        slow_start::SyncNodesPlan,
        spec::{namespace, pod_template, template_generation},
        template::{create_pod_template, pod_template_for_node},
    },
};

/// An expectation count as the expectations take it.
fn count(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl DaemonSetSync {
    /// upstream `manage`: per node, what `podsShouldBeOnNode` says (failed pods deleted at
    /// most once per backoff window, with a `FailedDaemonPod` warning; a node in its window
    /// requeues the DaemonSet after it), plus the unbound pods of vanished nodes; then
    /// `syncNodes`.
    pub(crate) async fn manage(&self, context: &SyncContext<'_>) -> Result<(), SyncError> {
        let nodes_to_pods = self.nodes_to_pods(context, false).await?;
        let input = context.input(&nodes_to_pods);
        let plan = self.with_backoff(input.now, |backoff| manage(&input, backoff));
        for event in plan.events {
            self.recorder
                .record(&context.ds.object, event.type_, event.reason, event.message);
        }
        if let Some(delay) = plan.requeue_after {
            self.queue.add_after(context.key.to_owned(), delay);
        }
        let plan = SyncNodesPlan::new(plan.create_on_nodes, plan.delete_pods);
        self.sync_nodes(context, &plan, &pods_by_key(&nodes_to_pods))
            .await
    }

    /// upstream `rollingUpdate`: old pods deleted within `maxUnavailable`, or new pods
    /// surged beside old ones within `maxSurge`; then `syncNodes`.
    pub(crate) async fn rolling_update(&self, context: &SyncContext<'_>) -> Result<(), SyncError> {
        let nodes_to_pods = self.nodes_to_pods(context, false).await?;
        let plan = rolling_update(&context.input(&nodes_to_pods))?;
        let plan = SyncNodesPlan::new(plan.create_on_nodes, plan.delete_pods);
        self.sync_nodes(context, &plan, &pods_by_key(&nodes_to_pods))
            .await
    }

    /// upstream `syncNodes`: sets the expectations to the plan's creates and the pods it
    /// deletes, by key (also 0/0; upstream counts deletions only), creates the pods in slow-start batches (stopping after a batch with a failure
    /// and lowering the expectations by the creates never tried; a create refused because
    /// the namespace is going away is dropped silently, as upstream), then deletes the pods
    /// (`pods` holds them by key), all at once. Every failure is returned, aggregated.
    async fn sync_nodes(
        &self,
        context: &SyncContext<'_>,
        plan: &SyncNodesPlan,
        pods: &HashMap<String, Arc<CachedPod>>,
    ) -> Result<(), SyncError> {
        let key = context.key;
        let ds = &context.ds.object;
        let (creates, _) = plan.expectations();
        self.expectations
            .expect_deletions(key, plan.delete_pods.iter().cloned());
        self.expectations.raise_expectations(key, count(creates), 0);
        let template = create_pod_template(
            &pod_template(ds).cloned().unwrap_or_default(),
            template_generation(ds),
            context.hash,
        );
        let controller_ref = new_controller_ref(ds, &gvk_of::<DaemonSet>());
        let mut errors: Vec<PodControlError> = Vec::new();
        for batch in plan.create_batches() {
            let results = join_all(plan.create_on_nodes[batch.clone()].iter().map(|node| {
                let pod = pod_template_for_node(&template, node);
                let controller_ref = &controller_ref;
                async move {
                    self.pod_control
                        .create_pods(namespace(ds), &pod, ds, controller_ref)
                        .await
                }
            }))
            .await;
            let failed_before = errors.len();
            for result in results {
                match result {
                    Ok(created) => self.pod_writes.record(key, &created),
                    // The namespace is going away: every later create fails too, and the
                    // expectation is left for the namespace's deletion to clear.
                    Err(error) if error.is_namespace_terminating() => {}
                    Err(error) => {
                        self.expectations.creation_observed(key);
                        errors.push(error);
                    }
                }
            }
            let skipped = plan.creates_skipped_after(&batch);
            if errors.len() > failed_before && skipped > 0 {
                tracing::debug!(
                    key,
                    skipped,
                    "slow-start failure: skipping the other creates"
                );
                self.expectations.lower_expectations(key, count(skipped), 0);
                break;
            }
        }
        let deleted = join_all(plan.delete_pods.iter().map(|pod_key| async move {
            // Every key of the plan is a claimed pod's.
            let deleted = match pods.get(pod_key) {
                Some(pod) => Some(self.pod_control.delete_pod(pod, ds).await),
                None => None,
            };
            (pod_key, deleted)
        }))
        .await;
        for (pod_key, result) in deleted {
            match result {
                Some(Ok(())) => {}
                // No delete event will come for this pod: stop waiting for it.
                None => self.expectations.deletion_observed(key, pod_key),
                Some(Err(error)) => {
                    self.expectations.deletion_observed(key, pod_key);
                    if !error.is_not_found() {
                        errors.push(error);
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SyncError::SyncNodes(errors))
        }
    }
}
