//! Carrying out what `manageJob` decided ([`ManagePlan`]) and `deleteActivePods` (a finishing
//! Job's running pods): the pod creates and deletes, their expectations, events and metrics.
//! Every decision is the `decide` layer's; this module only writes.

use controller_toolkit::{
    controller_ref::{gvk_of, new_controller_ref},
    pod_control::PodControlError,
    pod_key,
    writes::slow_start,
};
use futures::future::join_all;
use informer::CachedPod;
use k8s_openapi::api::batch::v1::Job;

use crate::{
    context::{PodCounts, Shared, SyncError},
    decide::{
        manage::{IndexedPod, ManagePlan, indexed_pod, pod_template},
        pods::{is_pod_ready, len_i32},
        spec::JobView,
    },
};

/// One Job's pod writes in one sync.
pub struct PodWrites<'a> {
    /// The sync's shared machinery.
    pub shared: &'a Shared,
    /// The Job (the owner of the pods and of their events).
    pub job: &'a Job,
    /// Its key.
    pub key: &'a str,
}

/// The result of a round of writes: the first error, if any.
pub type WriteOutcome = Result<(), SyncError>;

impl PodWrites<'_> {
    /// `deleteActivePods` (a finishing Job): deletes every active pod at once, expecting
    /// nothing and keeping the finalizers (tracking counts the pods as failed). Returns how
    /// many are gone (NotFound counts) and how many of the pods were ready (counted whether
    /// or not their delete succeeded, as upstream), and the first error.
    pub async fn delete_active_pods(&self, pods: &[&CachedPod]) -> (i32, i32, WriteOutcome) {
        let results = join_all(pods.iter().map(|pod| self.delete(pod))).await;
        let mut deleted = 0;
        let mut error = None;
        for result in results {
            match result {
                Ok(()) => deleted += 1,
                Err(failure) => {
                    error.get_or_insert(failure);
                }
            }
        }
        let ready = len_i32(pods.iter().filter(|pod| is_pod_ready(pod)).count());
        (deleted, ready, error.map_or(Ok(()), |e| Err(e.into())))
    }

    /// A pod delete with its event; NotFound is success, and the write is recorded for the
    /// stale-read check.
    async fn delete(&self, pod: &CachedPod) -> Result<(), PodControlError> {
        match self.shared.pod_control.delete_pod(pod, self.job).await {
            Ok(()) => Ok(()),
            Err(error) if error.is_not_found() => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Carries out a [`ManagePlan`], moving `counts` as upstream's `manageJob` does; returns
    /// the first error. `pods_being_replaced` gives, per index, the failed pod a new pod of
    /// that index inherits its failure counts from.
    pub async fn run<'p>(
        &self,
        plan: ManagePlan<'p>,
        counts: &mut PodCounts,
        pods_being_replaced: impl Fn(i64) -> Option<&'p CachedPod>,
        creation_reason: &'static str,
    ) -> WriteOutcome {
        match plan {
            ManagePlan::Delete { pods, .. } => {
                let (deleted, ready, outcome) = self.delete_job_pods(&pods).await;
                counts.deleted(deleted, ready);
                outcome
            }
            ManagePlan::Create { count, indexes } => {
                self.create(
                    count,
                    &indexes,
                    counts,
                    pods_being_replaced,
                    creation_reason,
                )
                .await
            }
            ManagePlan::WaitForBackoff { requeue_after } => {
                self.shared.enqueue_with_delay(self.key, requeue_after);
                // Upstream's `manageJob` reports no active pod while it waits.
                counts.active = 0;
                Ok(())
            }
            ManagePlan::Nothing => Ok(()),
        }
    }

    /// `deleteJobPods`: expects the deletions, then per pod at once removes the tracking
    /// finalizer (so the pod is not counted as failed) and deletes it. A pod whose finalizer or
    /// delete failed is no longer expected to go.
    async fn delete_job_pods(&self, pods: &[&CachedPod]) -> (i32, i32, WriteOutcome) {
        self.shared
            .expectations
            .expect_deletions(self.key, pods.iter().map(|pod| pod_key(pod)));
        let results = join_all(pods.iter().map(|pod| async move {
            self.shared
                .remove_tracking_finalizer(Some(self.key), pod)
                .await
                .map_err(SyncError::RemoveCompletionFinalizer)?;
            self.delete(pod).await.map_err(SyncError::from)
        }))
        .await;
        let mut deleted = 0;
        let mut error = None;
        for (pod, result) in pods.iter().zip(results) {
            match result {
                Ok(()) => deleted += 1,
                Err(failure) => {
                    self.shared
                        .expectations
                        .deletion_observed(self.key, &pod_key(pod));
                    error.get_or_insert(failure);
                }
            }
        }
        let ready = len_i32(pods.iter().filter(|pod| is_pod_ready(pod)).count());
        (deleted, ready, error.map_or(Ok(()), Err))
    }

    /// `manageJob`'s creation: expects `count` pods, then creates them in slow-start batches
    /// (for an Indexed Job one per index of `indexes`), each from the Job's template with the
    /// tracking finalizer. A pod that was not created is no longer expected nor active; the
    /// namespace being deleted is not an error (no pod will appear, none is retried).
    async fn create<'p>(
        &self,
        count: usize,
        indexes: &[i64],
        counts: &mut PodCounts,
        pods_being_replaced: impl Fn(i64) -> Option<&'p CachedPod>,
        creation_reason: &'static str,
    ) -> WriteOutcome {
        if count == 0 {
            return Ok(());
        }
        let view = JobView::new(self.job);
        self.shared
            .expectations
            .expect_creations(self.key, i64::try_from(count).unwrap_or(i64::MAX));
        counts.active = counts.active.wrapping_add(len_i32(count));
        let template = pod_template(&view);
        let controller_ref = new_controller_ref(self.job, &gvk_of::<Job>());
        let namespace = view.namespace();
        // An Indexed Job's pods each get their own template; a NonIndexed Job's all share one.
        let indexed: Vec<IndexedPod> = if view.is_indexed() {
            indexes
                .iter()
                .map(|&index| indexed_pod(&template, &view, index, pods_being_replaced(index)))
                .collect()
        } else {
            Vec::new()
        };
        let creates = if view.is_indexed() {
            indexed.len()
        } else {
            count
        };
        let outcome = slow_start(creates, |i| {
            let (template, generate_name) = match indexed.get(i) {
                Some(pod) => (&pod.template, pod.generate_name.as_str()),
                None => (&template, ""),
            };
            let controller_ref = &controller_ref;
            async move {
                match self
                    .shared
                    .pod_control
                    .create_pods_with_generate_name(
                        namespace,
                        template,
                        self.job,
                        controller_ref,
                        generate_name,
                    )
                    .await
                {
                    Ok(created) => {
                        self.shared.pod_writes.record(self.key, &created);
                        Ok(())
                    }
                    // No pod will appear, but the namespace is going away: nothing to retry.
                    Err(error) if error.is_namespace_terminating() => Ok(()),
                    Err(error) => Err(error),
                }
            }
        })
        .await;
        let not_created = creates - outcome.successes;
        for _ in 0..not_created {
            self.shared.expectations.creation_observed(self.key);
        }
        counts.active = counts.active.wrapping_sub(len_i32(not_created));
        if let Some(metrics) = &self.shared.metrics {
            let created = metrics
                .pods_creation
                .with_label_values(&[creation_reason, "succeeded"]);
            created.inc_by(outcome.successes as u64);
            metrics
                .pods_creation
                .with_label_values(&[creation_reason, "failed"])
                .inc_by(outcome.errors.len() as u64);
        }
        outcome
            .errors
            .into_iter()
            .next()
            .map_or(Ok(()), |error| Err(error.into()))
    }
}
