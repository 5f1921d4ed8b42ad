//! The controller's one metric family, under upstream's name, buckets and stability prefix
//! (`pkg/controller/cronjob/metrics`), so a dashboard written for upstream's controller reads
//! kcm-rs's unchanged.

use prometheus::{Histogram, HistogramOpts, Registry, exponential_buckets};

/// The metrics subsystem.
pub const SUBSYSTEM: &str = "cronjob_controller";

/// Handles to the `cronjob_controller_*` family (the workqueue and sync families are the
/// runtime's).
#[derive(Clone)]
pub struct CronJobMetrics {
    /// `job_creation_skew_duration_seconds` (STABLE): from a run's scheduled time to its Job's
    /// creation.
    pub(crate) job_creation_skew: Histogram,
}

impl CronJobMetrics {
    /// Creates the family and registers it in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let job_creation_skew = Histogram::with_opts(
            HistogramOpts::new(
                "job_creation_skew_duration_seconds",
                "[STABLE] Time between when a cronjob is scheduled to be run, and when the \
                 corresponding job is created",
            )
            .subsystem(SUBSYSTEM)
            .buckets(exponential_buckets(1.0, 2.0, 10)?),
        )?;
        registry.register(Box::new(job_creation_skew.clone()))?;
        Ok(Self { job_creation_skew })
    }
}
