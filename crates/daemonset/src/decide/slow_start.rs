//! What one `syncNodes` call sends (upstream `syncNodes`): at most [`BURST_REPLICAS`] creates
//! and as many deletes, the expectations raised before the first request, and the creates in
//! slow-start batches of 1, 2, 4, ... so a create that fails for everyone (a quota, a webhook)
//! is not made 250 times. Deletes all go at once.
//!
//! The batch sizes are the toolkit's `slowStartBatch` sizes ([`slow_start_batches`]): its
//! 500 cap never applies under the burst of 250, so the DaemonSet's own loop is the same.

use std::ops::Range;

use controller_toolkit::writes::slow_start_batches;

/// At most this many creates and as many deletes per `syncNodes` (`BurstReplicas`, not
/// configurable in v1.36).
pub const BURST_REPLICAS: usize = 250;

/// The creates and deletes of one `syncNodes`, already cut to the burst.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncNodesPlan {
    /// Nodes to create a pod on (the first [`BURST_REPLICAS`] of those asked for).
    pub create_on_nodes: Vec<String>,
    /// Keys of the pods to delete (the first [`BURST_REPLICAS`] of those asked for).
    pub delete_pods: Vec<String>,
}

impl SyncNodesPlan {
    /// The plan for `nodes_needing_pods` and `pods_to_delete` (`createDiff`, `deleteDiff`):
    /// each list cut to [`BURST_REPLICAS`]; the rest waits for a later sync.
    pub fn new(mut nodes_needing_pods: Vec<String>, mut pods_to_delete: Vec<String>) -> Self {
        nodes_needing_pods.truncate(BURST_REPLICAS);
        pods_to_delete.truncate(BURST_REPLICAS);
        Self {
            create_on_nodes: nodes_needing_pods,
            delete_pods: pods_to_delete,
        }
    }

    /// `(adds, deletes)` to set the DaemonSet's expectations to before any request; set even
    /// when both are 0.
    pub fn expectations(&self) -> (usize, usize) {
        (self.create_on_nodes.len(), self.delete_pods.len())
    }

    /// The create batches as index ranges into [`Self::create_on_nodes`]: 1, 2, 4, ... Each
    /// batch runs concurrently; after a batch with a failure (other than the namespace being
    /// deleted) the executor stops and lowers the add expectations by
    /// [`Self::creates_skipped_after`] that batch.
    pub fn create_batches(&self) -> Vec<Range<usize>> {
        let mut start = 0;
        slow_start_batches(self.create_on_nodes.len())
            .into_iter()
            .map(|size| {
                let batch = start..start + size;
                start = batch.end;
                batch
            })
            .collect()
    }

    /// How many creates are never attempted when the run stops after `batch`
    /// (`skippedPods = createDiff - (pos + batchSize)`).
    pub fn creates_skipped_after(&self, batch: &Range<usize>) -> usize {
        self.create_on_nodes.len().saturating_sub(batch.end)
    }
}
