//! The Job and pod informers' handlers (upstream `addJob`/`updateJob`/`deleteJob` and
//! `addPod`/`updatePod`/`deletePod`): which keys an event enqueues, and when.
//!
//! Unlike the apps/v1 controllers', a pod event enqueues its Job *batched*
//! ([`SYNC_JOB_BATCH_PERIOD`] later): a Job of a thousand pods sees thousands of pod changes a
//! minute, and one sync a second takes them all in, with one status write. A spec change
//! (a new `generation`) enqueues at once. Pods that carry the tracking finalizer but have no
//! live, unfinished Job are sent to the orphan queue, which removes the finalizer.
//!
//! What the expectations learn from pod events is observed inline with the cache
//! ([`PodObserver`]), so a sync never reads a pod its expectations have not counted; the
//! enqueueing ([`PodEvents`]) runs on the informer's queued handlers like every other.

use std::sync::Arc;

use controller_toolkit::{controller_ref::controller_of, pod_key};
use informer::{CachedPod, DeletedObject, EventHandler, LabelLookup, Labeled, Lister, object_key};
use k8s_openapi::{
    api::batch::v1::Job,
    apimachinery::pkg::apis::meta::v1::OwnerReference,
    jiff::{SignedDuration, Timestamp},
};

use crate::{
    context::{SYNC_JOB_BATCH_PERIOD, Shared},
    decide::{
        pods::{has_tracking_finalizer, is_pod_terminal},
        spec::JobView,
    },
    metrics::JobMetrics,
    orphans::OrphanKey,
};

/// The label the API server puts on a Job's pods and requires in the selector it generates.
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";

/// The Job informer's index of the Jobs by the `batch.kubernetes.io/controller-uid` value
/// their selector's `matchLabels` require, under `<namespace>/<value>` (`<namespace>/` when
/// they require none: a manual selector).
pub const JOBS_BY_SELECTED_UID: &str = "job-selected-controller-uid";

fn selected_uid_key(namespace: &str, uid: &str) -> String {
    format!("{namespace}/{uid}")
}

/// [`JOBS_BY_SELECTED_UID`]'s index function.
pub fn jobs_by_selected_uid(job: &Job) -> Vec<String> {
    let uid = job
        .spec
        .as_ref()
        .and_then(|spec| {
            spec.selector
                .as_ref()?
                .match_labels
                .as_ref()?
                .get(CONTROLLER_UID_LABEL)
        })
        .map_or("", String::as_str);
    vec![selected_uid_key(
        job.metadata.namespace.as_deref().unwrap_or_default(),
        uid,
    )]
}

/// The Job a pod's controller reference names, if it is a Job cached with that UID.
fn resolve_job(jobs: &Lister<Job>, pod: &CachedPod) -> Option<Arc<Job>> {
    let owner: &OwnerReference = controller_of(&pod.metadata)?;
    if owner.kind != "Job" {
        return None;
    }
    jobs.resolve_controller_ref(pod.metadata.namespace.as_deref().unwrap_or_default(), owner)
}

/// `recordFinishedPodWithTrackingFinalizer`: counts a pod that became, or stopped being,
/// terminal with the tracking finalizer (`terminated_pods_tracking_finalizer_total`).
fn record_finished_pod_with_tracking_finalizer(
    metrics: Option<&JobMetrics>,
    old: Option<&CachedPod>,
    new: Option<&CachedPod>,
) {
    let Some(metrics) = metrics else {
        return;
    };
    let was = old.is_some_and(|pod| is_pod_terminal(pod) && has_tracking_finalizer(pod));
    let is = new.is_some_and(|pod| is_pod_terminal(pod) && has_tracking_finalizer(pod));
    if was == is {
        return;
    }
    let event = if is { "add" } else { "delete" };
    metrics
        .terminated_pods_tracking_finalizer
        .with_label_values(&[event])
        .inc();
}

/// The three handlers of the Job controller, over the Jobs in `jobs`: registered by the
/// controller's construction (the observer inline with the pod cache, the others queued).
pub struct Handlers {
    /// The Job informer's handler.
    pub jobs: JobEvents,
    /// The pod informer's queued handler.
    pub pods: PodEvents,
    /// The pod informer's inline expectations observer.
    pub observer: PodObserver,
}

impl Handlers {
    /// The handlers routing to `shared`'s queues and expectations.
    pub fn new(jobs: Lister<Job>, shared: Arc<Shared>) -> Self {
        Self {
            jobs: JobEvents {
                shared: shared.clone(),
            },
            pods: PodEvents {
                jobs: jobs.clone(),
                shared: shared.clone(),
            },
            observer: PodObserver { jobs, shared },
        }
    }
}

/// The Job informer's handler.
pub struct JobEvents {
    /// The sync's shared machinery (queues, finished Jobs, backoff records, metrics).
    pub shared: Arc<Shared>,
}

impl JobEvents {
    /// `enqueueLabelSelector`: the Job's selector on the orphan queue, so the pods it leaves
    /// behind lose their finalizer.
    fn enqueue_label_selector(&self, job: &Job) {
        if let Some(key) = OrphanKey::selector_of(job) {
            self.shared.orphan_queue.add(key.encode());
        }
    }
}

impl EventHandler<Job> for JobEvents {
    /// `addJob`.
    fn on_add(&self, job: &Arc<Job>, _is_in_initial_list: bool) {
        self.shared.queue.add(object_key(job.as_ref()));
        if let (Some(metrics), Some(controller)) = (
            &self.shared.metrics,
            JobView::new(job).managed_by_external_controller(),
        ) {
            metrics
                .jobs_by_external_controller
                .with_label_values(&[controller])
                .inc();
        }
    }

    /// `updateJob`: a finished Job only sends its pods' finalizers to the orphan queue; a spec
    /// change syncs at once, a status change batched; a new deadline requeues for it.
    ///
    /// The finished copy in the cache also ends the Job's finished mark (upstream keeps it until
    /// the Job is deleted): no sync can read the unfinished copy any more, so keeping one UID per
    /// finished Job for the Job's lifetime protects nothing.
    fn on_update(&self, old: &Arc<Job>, new: &Arc<Job>) {
        let key = object_key(new.as_ref());
        if JobView::new(new).is_finished() {
            self.shared
                .finished_jobs
                .delete(new.metadata.uid.as_deref().unwrap_or_default());
            self.enqueue_label_selector(new);
            return;
        }
        if old.metadata.generation == new.metadata.generation {
            self.shared
                .queue
                .add_after(key.clone(), SYNC_JOB_BATCH_PERIOD);
        } else {
            self.shared.queue.add(key.clone());
        }
        let view = JobView::new(new);
        let old_deadline = JobView::new(old).active_deadline_seconds();
        if let (Some(start), Some(deadline)) = (view.start_time(), view.active_deadline_seconds())
            && old_deadline != Some(deadline)
        {
            let left = SignedDuration::from_secs(deadline)
                .saturating_sub(Timestamp::now().duration_since(start));
            self.shared
                .queue
                .add_after(key, std::time::Duration::try_from(left).unwrap_or_default());
        }
    }

    /// `deleteJob`: sync (it will find the Job gone), forget its finished mark and backoff
    /// record, and free its pods' finalizers.
    fn on_delete(&self, job: &DeletedObject<Job>) {
        let key = job.key();
        let job = job.object();
        self.shared.queue.add(key.clone());
        self.shared
            .finished_jobs
            .delete(job.metadata.uid.as_deref().unwrap_or_default());
        self.enqueue_label_selector(job);
        self.shared.backoff.lock().remove_backoff_record(&key);
    }
}

/// The pod informer's queued handler: enqueues the Jobs a pod event concerns, batched, and
/// sends pods with a finalizer and no live Job to the orphan queue.
pub struct PodEvents {
    /// The Jobs.
    pub jobs: Lister<Job>,
    /// The sync's shared machinery (queues, metrics).
    pub shared: Arc<Shared>,
}

impl PodEvents {
    fn enqueue_batched(&self, job: &Job) {
        self.shared
            .queue
            .add_after(object_key(job), SYNC_JOB_BATCH_PERIOD);
    }

    fn enqueue_orphan(&self, pod: &CachedPod) {
        self.shared.orphan_queue.add(OrphanKey::pod(pod).encode());
    }

    fn metrics(&self) -> Option<&JobMetrics> {
        self.shared.metrics.as_ref()
    }

    /// `getPodJobs`: the Jobs of the pod's namespace whose selector matches its labels. Only
    /// the Jobs whose selector requires the pod's `batch.kubernetes.io/controller-uid` label
    /// value, or no such label at all, can match ([`JOBS_BY_SELECTED_UID`]): the others are
    /// not looked at, so an orphan's event costs the same beside 10 Jobs or 10,000.
    fn matching_jobs(&self, pod: &CachedPod) -> Vec<Arc<Job>> {
        let labels = pod.labels();
        if labels.is_empty() {
            return Vec::new();
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let mut candidates = self
            .jobs
            .by_index(JOBS_BY_SELECTED_UID, &selected_uid_key(namespace, ""));
        if let Some(uid) = labels
            .label(CONTROLLER_UID_LABEL)
            .filter(|uid| !uid.is_empty())
        {
            candidates.extend(
                self.jobs
                    .by_index(JOBS_BY_SELECTED_UID, &selected_uid_key(namespace, uid)),
            );
        }
        let jobs: Vec<Arc<Job>> = candidates
            .into_iter()
            .filter(|job| {
                job.spec
                    .as_ref()
                    .and_then(|spec| spec.selector.clone())
                    .and_then(controller_toolkit::runtime::owner_selector)
                    .is_some_and(|selector| selector.matches(&labels))
            })
            .collect();
        if jobs.len() > 1 {
            tracing::info!(
                pod = %pod_key(pod),
                jobs = jobs.len(),
                "user error: more than one job is selecting pods with these labels"
            );
        }
        jobs
    }

    /// `deletePod`'s routing: the pod's live, unfinished Job is synced; a pod with a
    /// finalizer and no such Job goes to the orphan queue.
    fn deleted(&self, pod: &CachedPod) {
        let job = resolve_job(&self.jobs, pod).filter(|job| !JobView::new(job).is_finished());
        match job {
            Some(job) => self.enqueue_batched(&job),
            None if has_tracking_finalizer(pod) => self.enqueue_orphan(pod),
            None => {}
        }
    }

    /// An orphan: its finalizer to the orphan queue, and the Jobs that may adopt it synced.
    fn orphaned(&self, pod: &CachedPod) {
        if has_tracking_finalizer(pod) {
            self.enqueue_orphan(pod);
        }
        for job in self.matching_jobs(pod) {
            self.enqueue_batched(&job);
        }
    }
}

impl EventHandler<CachedPod> for PodEvents {
    /// `addPod`.
    fn on_add(&self, pod: &Arc<CachedPod>, _is_in_initial_list: bool) {
        record_finished_pod_with_tracking_finalizer(self.metrics(), None, Some(pod));
        if pod.metadata.deletion_timestamp.is_some() {
            self.deleted(pod);
            return;
        }
        if controller_of(&pod.metadata).is_some() {
            if let Some(job) = resolve_job(&self.jobs, pod) {
                self.enqueue_batched(&job);
            }
            return;
        }
        self.orphaned(pod);
    }

    /// `updatePod`.
    fn on_update(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        record_finished_pod_with_tracking_finalizer(self.metrics(), Some(old), Some(new));
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        if new.metadata.deletion_timestamp.is_some() {
            self.deleted(new);
            return;
        }
        let old_ref = controller_of(&old.metadata);
        let new_ref = controller_of(&new.metadata);
        let ref_changed = old_ref != new_ref;
        if ref_changed
            && old_ref.is_some()
            && let Some(previous) = resolve_job(&self.jobs, old)
        {
            self.enqueue_batched(&previous);
        }
        if new_ref.is_some() {
            if let Some(job) = resolve_job(&self.jobs, new) {
                self.enqueue_batched(&job);
            }
            return;
        }
        if has_tracking_finalizer(new) {
            self.enqueue_orphan(new);
        }
        if ref_changed || old.labels() != new.labels() {
            for job in self.matching_jobs(new) {
                self.enqueue_batched(&job);
            }
        }
    }

    /// `deletePod(final)`.
    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        let pod = pod.object();
        record_finished_pod_with_tracking_finalizer(self.metrics(), Some(pod), None);
        self.deleted(pod);
    }
}

/// What the expectations learn from pod events, inline with the cache: creations and
/// deletions of a Job's pods (the deletions tracked by pod, so a graceful deletion counts
/// once) and finalizer removals. Upstream's `addPod`/`updatePod`/`deletePod` bookkeeping.
pub struct PodObserver {
    /// The Jobs.
    pub jobs: Lister<Job>,
    /// The sync's shared machinery (the expectations).
    pub shared: Arc<Shared>,
}

impl PodObserver {
    /// A pod of the Job `key` is gone (`is_final`) or going: its deletion is observed, and its
    /// finalizer removal when it is gone or has no finalizer left.
    fn deleted(&self, pod: &CachedPod, is_final: bool) {
        let Some(job) = resolve_job(&self.jobs, pod) else {
            return;
        };
        let key = object_key(job.as_ref());
        self.shared
            .expectations
            .deletion_observed(&key, &pod_key(pod));
        if is_final || !has_tracking_finalizer(pod) {
            self.finalizer_removed(&key, pod);
        }
    }

    fn finalizer_removed(&self, key: &str, pod: &CachedPod) {
        self.shared
            .finalizers
            .finalizer_removal_observed(key, pod.metadata.uid.as_deref().unwrap_or_default());
    }
}

impl EventHandler<CachedPod> for PodObserver {
    fn on_add(&self, pod: &Arc<CachedPod>, _is_in_initial_list: bool) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.deleted(pod, false);
        } else if let Some(job) = resolve_job(&self.jobs, pod) {
            self.shared
                .expectations
                .creation_observed(&object_key(job.as_ref()));
        }
    }

    fn on_update(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        if new.metadata.deletion_timestamp.is_some() {
            self.deleted(new, false);
            return;
        }
        // Upstream looks only at the current pod: a pod without the finalizer has had its
        // removal observed, whichever update removed it.
        if has_tracking_finalizer(new) {
            return;
        }
        if controller_of(&old.metadata) != controller_of(&new.metadata)
            && let Some(previous) = resolve_job(&self.jobs, old)
        {
            self.finalizer_removed(&object_key(previous.as_ref()), new);
        }
        if let Some(job) = resolve_job(&self.jobs, new) {
            self.finalizer_removed(&object_key(job.as_ref()), new);
        }
    }

    fn on_delete(&self, pod: &DeletedObject<CachedPod>) {
        self.deleted(pod.object(), true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(namespace: &str, selector: serde_json::Value) -> Job {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "j", "namespace": namespace},
            "spec": {"selector": selector, "template": {}}
        }))
        .expect("job")
    }

    /// A Job is filed under the controller UID its selector requires, or under none; an
    /// orphan pod is matched against the Jobs filed under its own label's value and under
    /// none, which are all the Jobs whose selector can select it.
    #[test]
    fn jobs_are_indexed_by_the_controller_uid_their_selector_requires() {
        #[rustfmt::skip]
        let cases = [
            ("generated selector", job("ns", serde_json::json!({"matchLabels": {CONTROLLER_UID_LABEL: "u1"}})), "ns/u1"),
            ("more labels", job("ns", serde_json::json!({"matchLabels": {CONTROLLER_UID_LABEL: "u2", "app": "x"}})), "ns/u2"),
            ("manual selector", job("ns", serde_json::json!({"matchLabels": {"app": "x"}})), "ns/"),
            ("uid only in an expression", job("ns", serde_json::json!({"matchExpressions": [
                {"key": CONTROLLER_UID_LABEL, "operator": "In", "values": ["u3"]}]})), "ns/"),
            ("other namespace", job("other", serde_json::json!({"matchLabels": {CONTROLLER_UID_LABEL: "u1"}})), "other/u1"),
        ];
        for (case, job, key) in cases {
            assert_eq!(jobs_by_selected_uid(&job), [key], "{case}");
        }
    }
}
