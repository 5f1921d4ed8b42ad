//! The Job controller: construction, and the sync (`Reconciler::sync`), which follows
//! upstream's `syncJob` step by step. Every decision is the `decide` layer's; the pod writes
//! are in `manage.rs`, the status writes and finalizer removals in `tracking.rs`, the
//! handlers in `handlers.rs`, the orphan queue in `orphans.rs`. This file reads the caches,
//! runs the steps in order and hands the plans to those modules.

use std::{sync::Arc, time::Instant};

use controller_toolkit::{
    controller_ref::{ControllerRefManager, controller_of},
    events::EventType,
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync, Reconciler,
        RetryBackoff,
    },
};
use informer::{CachedPod, LabelMatcher, Lister, SharedInformerFactory};
use k8s_openapi::{
    api::batch::v1::{Job, JobStatus},
    apimachinery::pkg::apis::meta::v1::Time,
    jiff::Timestamp,
};
use kube::Client;

use crate::{
    context::{
        DEFAULT_JOB_API_BACKOFF, JobOptions, MAX_JOB_API_BACKOFF, PodCounts, Shared, SyncError,
    },
    decide::{
        end_state::{
            EndStateInput, completions_reached, evaluate_end_state, new_success_condition,
            start_time, update_suspended_condition,
        },
        indexes::OrderedIntervals,
        manage::{ManageInput, SYNC_ACTION_RECONCILING, plan_manage, pods_creation_reason},
        pods::{
            count_ready_pods, count_terminating_pods, filter_active_pods, is_counted_and_freed,
            len_i32,
        },
        spec::{JOB_TRACKING_FINALIZER, JobView},
        tracking::{TrackingInput, new_finished_pods, sync_counts, track_job_status},
        types::UncountedUids,
    },
    handlers::{Handlers, JOBS_BY_SELECTED_UID, jobs_by_selected_uid},
    manage::PodWrites,
    orphans::Orphans,
    tracking::StatusWrites,
};

/// Canonical controller name: event source, health check, `--controllers`.
pub const CONTROLLER_NAME: &str = "job-controller";
/// The name upstream builds the controller's API client under.
pub const CLIENT_NAME: &str = "job-controller";
/// Work queue name of the Jobs (and `name` label of its workqueue metrics).
pub const QUEUE_NAME: &str = "job";
/// Work queue name of the orphan pods.
pub const ORPHAN_QUEUE_NAME: &str = "job_orphan_pod";
/// No retry ceiling, and upstream's own per-Job backoff (1 s doubling to a minute) on both
/// queues.
pub(crate) const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::PerKey {
        base: DEFAULT_JOB_API_BACKOFF,
        max: MAX_JOB_API_BACKOFF,
    },
};
/// The finalizers a Job's claim adds to the pods it adopts and removes from those it releases.
const CLAIM_FINALIZERS: &[&str] = &[JOB_TRACKING_FINALIZER];

/// Construction failed (the queue or an informer index could not be set up).
pub type JobError = BuildError;

/// The Job controller: build it with `JobController::new` (client, informer factory, options)
/// before the informer factory starts, then `run(workers, shutdown)` it (that many workers on
/// the Job queue and as many on the orphan-pod queue).
pub type JobController = Controller<JobSync>;

/// The Job controller's sync (upstream `syncJob`) and orphan worker (`syncOrphanPod`), and
/// what they read and write through; built by [`JobController::new`].
pub struct JobSync {
    jobs: Lister<Job>,
    pods: Lister<CachedPod>,
    shared: Arc<Shared>,
}

impl ControllerSync for JobSync {
    type Options = JobOptions;

    /// Wires the Job and pod informers (the pod controller index, the handlers, the inline
    /// expectations observer) and both queues. Must be called inside a tokio runtime; starts
    /// no informer.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: JobOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let job_informer = informers.informer::<Job>();
        job_informer.add_indexer(JOBS_BY_SELECTED_UID, jobs_by_selected_uid)?;
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_controller_indexer()?;
        pod_informer.forget_when(is_counted_and_freed);

        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        let orphan_queue = runtime.add_queue(ORPHAN_QUEUE_NAME)?;
        let shared = Arc::new(Shared::new(&runtime, orphan_queue, &options));
        let handlers = Handlers::new(job_informer.lister(), shared.clone());
        pod_informer.add_inline_handler(handlers.observer);
        runtime.handles(&job_informer, handlers.jobs);
        runtime.handles(&pod_informer, handlers.pods);
        let sync = JobSync {
            jobs: job_informer.lister(),
            pods: pod_informer.lister(),
            shared,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for JobSync {
    type Error = SyncError;

    /// upstream `syncJob`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let shared = &self.shared;
        // 1. The key names a namespace and a Job.
        if !key
            .split_once('/')
            .is_some_and(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
        {
            return Err(SyncError::InvalidKey(key.to_owned()));
        }

        // 2-3. The Job from the cache; gone means nothing is expected any more.
        let Some(cached) = self.jobs.get_by_key(key) else {
            tracing::debug!(key, "Job has been deleted");
            shared.forget(key);
            return Ok(());
        };
        // Never compute from a copy older than our own last status write, nor from a pod
        // cache that has not applied our own pod writes (StaleControllerConsistencyJob).
        shared.written.check(key, &cached.metadata)?;
        shared.check_pod_writes(key, self.pods.last_sync_resource_version())?;
        let view = JobView::new(&cached);

        // 4. Another controller's Job.
        if let Some(controller) = view.managed_by_external_controller() {
            tracing::debug!(
                key,
                controller,
                "skip syncing the job as it is managed by an external controller"
            );
            return Ok(());
        }

        // 5-7. A finished Job, or one we finished whose copy the cache has not caught up with.
        if view.is_finished() {
            shared.backoff.lock().remove_backoff_record(key);
            shared.finished_jobs.delete(view.uid());
            return Ok(());
        }
        if shared.finished_jobs.contains(view.uid()) {
            tracing::debug!(
                key,
                "skip syncing the job as its finished status is not observed yet"
            );
            return Ok(());
        }

        // 8. A completion mode this controller does not know.
        if !view.has_known_completion_mode() {
            shared.recorder.record(
                cached.as_ref(),
                EventType::Warning,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            );
            return Ok(());
        }

        // 9. The sync metrics are recorded whatever happens below.
        let started = Instant::now();
        let mut action = SYNC_ACTION_RECONCILING;
        let result = self.sync_job(key, &cached, &mut action).await;
        if let Some(metrics) = &shared.metrics {
            let labels = [
                view.completion_mode_label(),
                if result.is_ok() { "success" } else { "error" },
                action,
            ];
            metrics
                .sync_duration
                .with_label_values(&labels)
                .observe(started.elapsed().as_secs_f64());
            metrics.syncs.with_label_values(&labels).inc();
        }
        result
    }

    /// upstream `syncOrphanPod`, for a key of [`ORPHAN_QUEUE_NAME`].
    async fn sync_other(&self, _queue: &'static str, key: &str) -> Result<(), SyncError> {
        Orphans {
            jobs: &self.jobs,
            pods: &self.pods,
            shared: &self.shared,
        }
        .sync(key)
        .await
    }
}

impl JobSync {
    /// `syncJob` from step 10: the pods, the end state, `manageJob`, the status.
    async fn sync_job(
        &self,
        key: &str,
        cached: &Arc<Job>,
        action: &mut &'static str,
    ) -> Result<(), SyncError> {
        let shared = &self.shared;
        let view = JobView::new(cached);
        let now = Timestamp::now();

        // 10. Whether earlier creates and deletes were all observed: read before the pods.
        let satisfied = shared.expectations.satisfied_expectations(key);

        // 11. The Job's pods, claimed; what the sync counts from them.
        let pods = self.pods_for_job(cached).await?;
        let pods: Vec<&CachedPod> = pods.iter().map(AsRef::as_ref).collect();
        let uncounted = UncountedUids::from_job(&view);
        let expected_rm_finalizers = shared.finalizers.expected_uids(key);
        let active_pods = filter_active_pods(&pods);
        let mut counts = PodCounts {
            active: len_i32(active_pods.len()),
            ready: count_ready_pods(&active_pods),
            terminating: count_terminating_pods(&pods),
        };

        // 12. Succeeded and failed: stored, uncounted and newly finished pods.
        let new_finished = new_finished_pods(&view, &pods, &uncounted, &expected_rm_finalizers);
        let (succeeded, failed) = sync_counts(&view, &new_finished, &uncounted);

        // 13. The start time (a suspended Job has not started).
        let mut status: JobStatus = cached.status.clone().unwrap_or_default();
        let started_at = start_time(&view, now);
        if view.start_time().is_none()
            && let Some(start) = started_at
        {
            status.start_time = Some(Time(start));
        }

        // 14. The backoff record after this sync's finished pods (stored once they are).
        let backoff = shared.backoff.lock().new_backoff_record(
            key,
            &new_finished.succeeded,
            &new_finished.failed,
        );

        // 15. Whether the Job is finishing, and why.
        let end = evaluate_end_state(&EndStateInput {
            job: view,
            pods: &pods,
            active_pods: &active_pods,
            expected_rm_finalizers: &expected_rm_finalizers,
            succeeded,
            failed,
            start_time: started_at,
            now,
        });
        if let Some(requeue) = end.active_deadline_requeue {
            shared.queue.add_after(key.to_owned(), requeue);
        }
        let mut finished = end.finished_condition;
        let succeeded = end.succeeded;
        let empty_intervals = OrderedIntervals::default();
        let empty_delayed = Default::default();
        let (prev_succeeded_indexes, succeeded_indexes, failed_indexes, delayed) =
            match &end.indexed {
                Some(indexed) => (
                    &indexed.prev_succeeded_indexes,
                    &indexed.succeeded_indexes,
                    indexed.failed_indexes.as_ref(),
                    &indexed.pods_with_delayed_deletion_per_index,
                ),
                None => (&empty_intervals, &empty_intervals, None, &empty_delayed),
            };

        let writes = PodWrites {
            shared,
            job: cached,
            key,
        };
        let mut suspend_changed = false;
        let mut pod_error = Ok(());
        if finished.is_some() {
            // 16. A finishing Job's running pods go; it finishes only once all went.
            let (deleted, deleted_ready, outcome) = writes.delete_active_pods(&active_pods).await;
            if deleted != len_i32(active_pods.len()) || !satisfied {
                finished = None;
            }
            counts.deleted(deleted, deleted_ready);
            pod_error = outcome;
        } else {
            // 17. manageJob, then the completions rule and the Suspended condition.
            let mut managed = false;
            if satisfied && !view.is_being_deleted() {
                let plan = plan_manage(&ManageInput {
                    job: view,
                    pods: &pods,
                    active_pods: &active_pods,
                    succeeded,
                    terminating: counts.terminating,
                    succeeded_indexes,
                    failed_indexes,
                    pods_with_delayed_deletion_per_index: delayed,
                    backoff,
                    now,
                });
                *action = plan.action();
                let creation_reason = pods_creation_reason(&view, failed, counts.terminating);
                let replaced = |index: i64| delayed.get(&index).copied();
                pod_error = writes
                    .run(plan, &mut counts, replaced, creation_reason)
                    .await;
                managed = true;
            }
            if completions_reached(&view, succeeded, counts.active) {
                finished = Some(new_success_condition(now));
            } else if managed
                && let Some(event) = update_suspended_condition(
                    status.conditions.get_or_insert_with(Vec::new),
                    view.is_suspended(),
                    now,
                )
            {
                suspend_changed = true;
                shared.recorder.record(
                    cached.as_ref(),
                    EventType::Normal,
                    event.reason,
                    event.message,
                );
                // A resumed Job starts again, so `activeDeadlineSeconds` counts continuous
                // activity; a suspended one has not started (v1.36's
                // MutableSchedulingDirectivesForSuspendedJobs, beta and on, lets its template's
                // scheduling directives change then).
                status.start_time = event.resumed.then_some(Time(now));
            }
        }

        // 18. The pod counters.
        let needs_flush = suspend_changed
            || counts.active != view.status_active()
            || Some(counts.ready) != view.status_ready()
            || Some(counts.terminating) != view.status_terminating();
        status.active = Some(counts.active);
        status.ready = Some(counts.ready);
        status.terminating = Some(counts.terminating);

        // 19. Tracking: record the finished pods, free them, count them, finish the Job.
        let plan = track_job_status(
            &mut status,
            &TrackingInput {
                job: view,
                pods: &pods,
                uncounted: &uncounted,
                expected_rm_finalizers: &expected_rm_finalizers,
                finished_condition: finished.as_ref(),
                pods_with_delayed_deletion_per_index: delayed,
                prev_succeeded_indexes,
                succeeded_indexes,
                failed_indexes,
                needs_flush,
                now,
            },
        );
        StatusWrites {
            shared,
            key,
            job: cached,
            backoff,
            terminating: counts.terminating,
            now,
        }
        .flush(status, plan)
        .await?;
        pod_error
    }

    /// `getPodsForJob`: the pods the Job controls and the namespace's orphans, claimed with
    /// the tracking finalizer (adopted pods get it, released pods lose it); an adopted pod is
    /// treated as carrying the finalizer from then on.
    async fn pods_for_job(&self, job: &Arc<Job>) -> Result<Vec<Arc<CachedPod>>, SyncError> {
        let selector = job
            .spec
            .as_ref()
            .and_then(|spec| spec.selector.clone())
            .unwrap_or_default();
        let selector = LabelMatcher::try_from(selector)
            .map_err(|error| SyncError::Selector(error.to_string()))?;
        let candidates = self.pods.controlled_by_or_orphaned(job.as_ref());
        let manager =
            ControllerRefManager::for_owner(self.shared.writer.clone(), job.as_ref(), selector)
                .with_finalizers(CLAIM_FINALIZERS);
        let claimed = manager.claim(&candidates).await.into_result()?;
        Ok(claimed
            .into_iter()
            .map(|pod| {
                let adopted = controller_of(&pod.metadata).is_none();
                if adopted && !crate::decide::pods::has_tracking_finalizer(&pod) {
                    let mut pod = (*pod).clone();
                    pod.metadata
                        .finalizers
                        .get_or_insert_with(Vec::new)
                        .push(JOB_TRACKING_FINALIZER.to_owned());
                    Arc::new(pod)
                } else {
                    pod
                }
            })
            .collect())
    }
}
