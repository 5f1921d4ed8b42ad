//! The Job controller's own metric families, under upstream's names (`job_controller_*`,
//! `pkg/controller/job/metrics`), with upstream's labels, buckets and stability prefixes, so a
//! dashboard or alert written for upstream's controller reads kcm-rs's unchanged.
//!
//! Registered once per registry by the descriptor's `init`; the sync holds a clone.

use prometheus::{
    HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry, core::Collector,
    exponential_buckets,
};

/// The metrics subsystem of every family here.
pub const SUBSYSTEM: &str = "job_controller";

/// Handles to the `job_controller_*` families (bar `stale_sync_skips_total`, which the runtime
/// registers for every controller).
#[derive(Clone)]
pub struct JobMetrics {
    /// `job_sync_duration_seconds{completion_mode,result,action}` (STABLE).
    pub(crate) sync_duration: HistogramVec,
    /// `job_syncs_total{completion_mode,result,action}` (STABLE).
    pub(crate) syncs: IntCounterVec,
    /// `jobs_finished_total{completion_mode,result,reason}` (STABLE).
    pub(crate) jobs_finished: IntCounterVec,
    /// `job_pods_finished_total{completion_mode,result}` (STABLE).
    pub(crate) pods_finished: IntCounterVec,
    /// `pod_failures_handled_by_failure_policy_total{action}` (BETA).
    pub(crate) pod_failures_by_policy: IntCounterVec,
    /// `terminated_pods_tracking_finalizer_total{event}` (BETA).
    pub(crate) terminated_pods_tracking_finalizer: IntCounterVec,
    /// `job_finished_indexes_total{status,backoffLimit}` (ALPHA).
    pub(crate) finished_indexes: IntCounterVec,
    /// `job_pods_creation_total{reason,status}` (ALPHA).
    pub(crate) pods_creation: IntCounterVec,
    /// `jobs_by_external_controller_total{controller_name}` (ALPHA).
    pub(crate) jobs_by_external_controller: IntCounterVec,
}

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let counter = IntCounterVec::new(Opts::new(name, help).subsystem(SUBSYSTEM), labels)?;
    register(registry, counter)
}

fn register<C: Collector + Clone + 'static>(
    registry: &Registry,
    collector: C,
) -> Result<C, prometheus::Error> {
    registry.register(Box::new(collector.clone()))?;
    Ok(collector)
}

impl JobMetrics {
    /// Creates every family and registers it in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let sync_duration = register(
            registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "job_sync_duration_seconds",
                    "[STABLE] The time it took to sync a job",
                )
                .subsystem(SUBSYSTEM)
                .buckets(exponential_buckets(0.004, 2.0, 15)?),
                &["completion_mode", "result", "action"],
            )?,
        )?;
        Ok(Self {
            sync_duration,
            syncs: counter(
                registry,
                "job_syncs_total",
                "[STABLE] The number of job syncs",
                &["completion_mode", "result", "action"],
            )?,
            jobs_finished: counter(
                registry,
                "jobs_finished_total",
                "[STABLE] The number of finished jobs",
                &["completion_mode", "result", "reason"],
            )?,
            pods_finished: counter(
                registry,
                "job_pods_finished_total",
                "[STABLE] The number of finished Pods that are fully tracked",
                &["completion_mode", "result"],
            )?,
            pod_failures_by_policy: counter(
                registry,
                "pod_failures_handled_by_failure_policy_total",
                "[BETA] The number of failed Pods handled by failure policy with respect to the failure policy action applied based on the matched rule. Possible values of the action label correspond to the possible values for the failure policy rule action, which are: \"FailJob\", \"Ignore\" and \"Count\".",
                &["action"],
            )?,
            terminated_pods_tracking_finalizer: counter(
                registry,
                "terminated_pods_tracking_finalizer_total",
                "[BETA] The number of terminated pods (phase=Failed|Succeeded) that have the finalizer batch.kubernetes.io/job-tracking. The event label can be \"add\" or \"delete\".",
                &["event"],
            )?,
            finished_indexes: counter(
                registry,
                "job_finished_indexes_total",
                "[ALPHA] The number of finished indexes. Possible values for the\n\t\t\tstatus label are: \"succeeded\", \"failed\". Possible values for the\n\t\t\tbackoffLimit label are: \"perIndex\" and \"global\"",
                &["status", "backoffLimit"],
            )?,
            pods_creation: counter(
                registry,
                "job_pods_creation_total",
                "[ALPHA] The number of Pods created by the Job controller labelled with a reason for the Pod creation.\nThis metric also distinguishes between Pods created using different PodReplacementPolicy settings.\nPossible values of the \"reason\" label are:\n\"new\", \"recreate_terminating_or_failed\", \"recreate_failed\".\nPossible values of the \"status\" label are:\n\"succeeded\", \"failed\".",
                &["reason", "status"],
            )?,
            jobs_by_external_controller: counter(
                registry,
                "jobs_by_external_controller_total",
                "[ALPHA] The number of Jobs managed by an external controller",
                &["controller_name"],
            )?,
        })
    }
}
