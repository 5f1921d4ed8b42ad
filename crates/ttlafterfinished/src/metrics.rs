//! The controller's one metric family, under upstream's name, buckets and stability prefix
//! (`pkg/controller/ttlafterfinished/metrics`), so a dashboard written for upstream's
//! controller reads kcm-rs's unchanged.

use prometheus::{Histogram, HistogramOpts, Registry, exponential_buckets};

/// The metrics subsystem.
pub const SUBSYSTEM: &str = "ttl_after_finished_controller";

/// Handles to the `ttl_after_finished_controller_*` family (the workqueue and sync families
/// are the runtime's).
#[derive(Clone)]
pub struct TtlAfterFinishedMetrics {
    /// `job_deletion_duration_seconds` (ALPHA): from when a Job's TTL passed to its deletion.
    pub(crate) job_deletion_duration: Histogram,
}

impl TtlAfterFinishedMetrics {
    /// Creates the family and registers it in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let job_deletion_duration = Histogram::with_opts(
            HistogramOpts::new(
                "job_deletion_duration_seconds",
                "[ALPHA] The time it took to delete the job since it became eligible for deletion",
            )
            .subsystem(SUBSYSTEM)
            // 100 ms doubling 14 times: the last bucket starts at ~27 minutes.
            .buckets(exponential_buckets(0.1, 2.0, 14)?),
        )?;
        registry.register(Box::new(job_deletion_duration.clone()))?;
        Ok(Self {
            job_deletion_duration,
        })
    }
}
