//! Carrying out the tracking step (upstream `trackJobStatusAndRemoveFinalizers` and
//! `flushUncountedAndRemoveFinalizers`): the status writes and finalizer patches around what
//! `decide::tracking` decided, in upstream's order, which is what makes every finished pod
//! count exactly once across crashes and handovers:
//! 1. write the status that records the finished pods (their UIDs in
//!    `uncountedTerminatedPods`, their indexes in `completedIndexes`) and the interim condition;
//! 2. remove those pods' finalizers;
//! 3. write the status that moves them into the counters and, once no pod is left running,
//!    carries the terminal condition.
//!
//! A sync that finishes the Job writes the counters and the terminal condition first and
//! removes the finalizers after (`decide::tracking::finishes_in_one_write` says when, and why
//! that keeps every pod counted exactly once): one status write fewer per finished Job.

use std::collections::BTreeMap;

use futures::future::join_all;
use informer::CachedPod;
use k8s_openapi::{
    api::batch::v1::{Job, JobStatus},
    jiff::Timestamp,
};

use controller_toolkit::events::EventType;

use crate::{
    context::{Shared, SyncError},
    decide::{
        backoff::BackoffRecord,
        indexes::indexes_count,
        pods::uid,
        spec::JobView,
        tracking::{
            TrackingPlan, enact_job_finished, finalizers_removed, finish_in_one_write,
            finishes_in_one_write,
        },
        types::{FinishedCondition, FinishedConditionType, PolicyAction},
    },
    orphans::OrphanKey,
};

/// The context of `adding uncounted pods to status` (the first write).
const ADDING_UNCOUNTED: &str = "adding uncounted pods to status";
/// The context of `removing uncounted pods from status` (the writes after the patches).
const REMOVING_UNCOUNTED: &str = "removing uncounted pods from status";
/// The context of the one write that finishes a Job before its finalizers go.
const FINISHING: &str = "finishing the job";

/// One Job's tracking writes in one sync.
pub struct StatusWrites<'a> {
    /// The sync's shared machinery.
    pub shared: &'a Shared,
    /// Its key.
    pub key: &'a str,
    /// The Job as the sync read it (spec and metadata; the status is the working copy).
    pub job: &'a Job,
    /// The backoff record to store once the finished pods are recorded.
    pub backoff: BackoffRecord,
    /// Terminating pods: a Job finishes only when none is left.
    pub terminating: i32,
    /// The clock.
    pub now: Timestamp,
}

impl StatusWrites<'_> {
    /// Writes `status` as planned, removes the planned finalizers, and writes again what that
    /// changed (with the terminal condition when the Job is done).
    pub async fn flush(
        &self,
        mut status: JobStatus,
        plan: TrackingPlan<'_>,
    ) -> Result<(), SyncError> {
        if finishes_in_one_write(&plan, self.terminating) {
            return self.finish(status, plan).await;
        }
        let mut job = self.job.clone();
        let mut old_counters = self.job.status.clone().unwrap_or_default();
        let mut needs_flush = plan.needs_flush;
        let mut uids_with_finalizer = plan.uids_with_finalizer;

        // 1. Record the finished pods (and the interim condition) before any finalizer goes.
        if needs_flush {
            job = self.write(job, status, ADDING_UNCOUNTED).await?;
            status = job.status.clone().unwrap_or_default();
            self.shared
                .backoff
                .lock()
                .update_backoff_record(self.key, self.backoff);
            self.record_pods_finished(&job, &old_counters);
            old_counters = status.clone();
            needs_flush = false;
        }
        self.record_policy_failures(&plan.pod_failures_by_policy_action);

        // 2. Remove the finalizers, expecting their removal first.
        if !plan.pods_to_remove_finalizer.is_empty() {
            let (removed, patch_error) =
                self.remove_finalizers(&plan.pods_to_remove_finalizer).await;
            // 3. The pods now free are counted.
            if finalizers_removed(
                &mut status,
                &mut uids_with_finalizer,
                removed.iter().map(String::as_str),
            ) {
                needs_flush = true;
            }
            if let Some(error) = patch_error {
                if needs_flush {
                    self.write(job, status, REMOVING_UNCOUNTED).await?;
                }
                return Err(SyncError::RemoveFinalizer(error));
            }
        }

        // 4. The terminal condition, once nothing is left to count or running.
        let finished = plan.finished_condition.as_ref();
        let job_finished = !plan.reached_max_uncounted_pods
            && enact_job_finished(&mut status, finished, self.terminating, self.now);
        if job_finished {
            needs_flush = true;
        }
        if needs_flush {
            let written = self.write(job, status, REMOVING_UNCOUNTED).await?;
            if job_finished && let Some(condition) = finished {
                self.record_job_finished(&written, condition);
                self.shared
                    .finished_jobs
                    .store(written.metadata.uid.as_deref().unwrap_or_default());
            }
            self.record_pods_finished(&written, &old_counters);
        }
        Ok(())
    }

    /// The finishing sync: one write that counts every recorded pod and carries the terminal
    /// condition, then the finalizers. A removal that fails goes to the orphan queue, which
    /// frees the pods of finished Jobs.
    async fn finish(&self, mut status: JobStatus, plan: TrackingPlan<'_>) -> Result<(), SyncError> {
        let old_counters = self.job.status.clone().unwrap_or_default();
        finish_in_one_write(&mut status, &plan, self.terminating, self.now);
        // Expected before the write: the finished Job's own update sends its pods to the orphan
        // queue, which must find these removals under way, not patch the pods a second time.
        self.expect_removals(&plan.pods_to_remove_finalizer);
        let written = match self.write(self.job.clone(), status, FINISHING).await {
            Ok(written) => written,
            Err(error) => {
                for pod in &plan.pods_to_remove_finalizer {
                    self.shared
                        .finalizers
                        .finalizer_removal_observed(self.key, uid(pod));
                }
                return Err(error);
            }
        };
        self.shared
            .backoff
            .lock()
            .update_backoff_record(self.key, self.backoff);
        self.record_policy_failures(&plan.pod_failures_by_policy_action);
        if let Some(condition) = &plan.finished_condition {
            self.record_job_finished(&written, condition);
        }
        self.shared
            .finished_jobs
            .store(written.metadata.uid.as_deref().unwrap_or_default());
        self.record_pods_finished(&written, &old_counters);

        let (removed, error) = self.patch_finalizers(&plan.pods_to_remove_finalizer).await;
        let Some(error) = error else {
            return Ok(());
        };
        for pod in &plan.pods_to_remove_finalizer {
            if !removed.iter().any(|freed| freed == uid(pod)) {
                self.shared.orphan_queue.add(OrphanKey::pod(pod).encode());
            }
        }
        Err(SyncError::RemoveFinalizer(error))
    }

    /// `pod_failures_handled_by_failure_policy_total`, once the failures are recorded.
    fn record_policy_failures(&self, failures: &BTreeMap<PolicyAction, usize>) {
        if let Some(metrics) = &self.shared.metrics {
            for (action, count) in failures {
                metrics
                    .pod_failures_by_policy
                    .with_label_values(&[action.as_str()])
                    .inc_by(*count as u64);
            }
        }
    }

    /// A `PUT /status` of `job` with `status`, at `job`'s resourceVersion (a conflict fails
    /// the sync, which reads the Job again from the cache); the written Job, recorded for the
    /// stale-read check.
    async fn write(
        &self,
        mut job: Job,
        status: JobStatus,
        context: &'static str,
    ) -> Result<Job, SyncError> {
        job.status = Some(status);
        let written = self
            .shared
            .writer
            .update_status(&job, "job status")
            .await
            .map_err(|source| SyncError::Status { context, source })?;
        self.shared.written.record(self.key, &written.metadata);
        Ok(written)
    }

    /// Removes the tracking finalizer of `pods` at once, expecting the removals first; returns
    /// the UIDs now free (a pod already gone counts) and the first failure.
    async fn remove_finalizers(&self, pods: &[&CachedPod]) -> (Vec<String>, Option<kube::Error>) {
        self.expect_removals(pods);
        self.patch_finalizers(pods).await
    }

    /// `expectFinalizersRemoved` for `pods`.
    fn expect_removals(&self, pods: &[&CachedPod]) {
        self.shared
            .finalizers
            .expect_finalizers_removed(self.key, pods.iter().map(|pod| uid(pod)));
    }

    /// The patches of [`Self::remove_finalizers`], their removals already expected. A failed
    /// removal is no longer expected.
    async fn patch_finalizers(&self, pods: &[&CachedPod]) -> (Vec<String>, Option<kube::Error>) {
        let results = join_all(
            pods.iter()
                .map(|pod| self.shared.remove_tracking_finalizer(Some(self.key), pod)),
        )
        .await;
        let mut removed = Vec::with_capacity(pods.len());
        let mut first_error = None;
        for (pod, result) in pods.iter().zip(results) {
            match result {
                Ok(()) => removed.push(uid(pod).to_owned()),
                Err(error) => {
                    self.shared
                        .finalizers
                        .finalizer_removal_observed(self.key, uid(pod));
                    first_error.get_or_insert(error);
                }
            }
        }
        (removed, first_error)
    }

    /// `recordJobFinished`: the events and `jobs_finished_total`.
    fn record_job_finished(&self, job: &Job, condition: &FinishedCondition) {
        let view = JobView::new(job);
        let mode = view.completion_mode_label();
        let result = if condition.type_ == FinishedConditionType::Complete {
            if view
                .completions()
                .is_some_and(|completions| view.status_succeeded() > completions)
            {
                self.shared.recorder.record(
                    job,
                    EventType::Warning,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached".to_owned(),
                );
            }
            self.shared.recorder.record(
                job,
                EventType::Normal,
                "Completed",
                "Job completed".to_owned(),
            );
            "succeeded"
        } else {
            self.shared.recorder.record(
                job,
                EventType::Warning,
                &condition.reason,
                condition.message.clone(),
            );
            "failed"
        };
        if let Some(metrics) = &self.shared.metrics {
            metrics
                .jobs_finished
                .with_label_values(&[mode, result, &condition.reason])
                .inc();
        }
    }

    /// `recordJobPodFinished`: the pods (and, Indexed, the indexes) counted since `old`.
    fn record_pods_finished(&self, job: &Job, old: &JobStatus) {
        let Some(metrics) = &self.shared.metrics else {
            return;
        };
        let view = JobView::new(job);
        let mode = view.completion_mode_label();
        let empty = JobStatus::default();
        let status = job.status.as_ref().unwrap_or(&empty);
        let succeeded_diff = if view.is_indexed() {
            let completions = view.indexed_completions();
            let diff = indexes_count(status.completed_indexes.as_deref(), completions)
                - indexes_count(old.completed_indexes.as_deref(), completions);
            let limit = if view.has_backoff_limit_per_index() {
                "perIndex"
            } else {
                "global"
            };
            add(
                &metrics
                    .finished_indexes
                    .with_label_values(&["succeeded", limit]),
                diff,
            );
            if view.has_backoff_limit_per_index() {
                let failed = indexes_count(status.failed_indexes.as_deref(), completions)
                    - indexes_count(old.failed_indexes.as_deref(), completions);
                add(
                    &metrics
                        .finished_indexes
                        .with_label_values(&["failed", limit]),
                    failed,
                );
            }
            diff
        } else {
            i64::from(status.succeeded.unwrap_or(0)) - i64::from(old.succeeded.unwrap_or(0))
        };
        add(
            &metrics
                .pods_finished
                .with_label_values(&[mode, "succeeded"]),
            succeeded_diff,
        );
        add(
            &metrics.pods_finished.with_label_values(&[mode, "failed"]),
            i64::from(status.failed.unwrap_or(0)) - i64::from(old.failed.unwrap_or(0)),
        );
    }
}

/// Adds a positive difference to a counter (a counter never goes down; upstream's `Add` of a
/// negative value panics in the Prometheus client and is never reached on purpose).
fn add(counter: &prometheus::IntCounter, diff: i64) {
    if let Ok(diff) = u64::try_from(diff) {
        counter.inc_by(diff);
    }
}
