//! upstream `syncRolloutStatus`: writes the status `progress` computed, or requeues a stuck rollout to notice its deadline; counts-only changes coalesce (kcm-rs only).

use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use crate::controller::{DeploymentSync, SyncError};
use crate::progress::Requeue;
use crate::status_coalescing::{COALESCE_WINDOW, counts_only_change};

impl DeploymentSync {
    /// syncRolloutStatus: PUT the new status, or requeue a stuck rollout to notice the
    /// progress deadline.
    pub(crate) async fn sync_rollout_status(
        &self,
        d: &mut CachedDeployment,
        all: &[&CachedReplicaSet],
        new: Option<&CachedReplicaSet>,
        key: &str,
    ) -> Result<(), SyncError> {
        let decision =
            crate::progress::sync_rollout_status(all, new, d, self.gates, Timestamp::now());
        match decision.update {
            // kcm-rs only: a change of counters alone waits for the next ones (issue 21).
            Some(status) if counts_only_change(d.status.as_ref(), &status) => {
                match self
                    .status_holds
                    .hold_within(key, Instant::now(), COALESCE_WINDOW)
                {
                    Some(wait) => {
                        tracing::debug!(key, ?wait, "counts-only status change held");
                        self.queue.add_after(key.to_owned(), wait);
                    }
                    None => *d = self.put_status(d, status).await?,
                }
            }
            Some(status) => {
                self.status_holds.release(key);
                *d = self.put_status(d, status).await?;
            }
            None => match decision.requeue {
                Requeue::Never => {}
                Requeue::RateLimited => self.queue.add_rate_limited(key.to_owned()),
                Requeue::After(delay) => self.queue.add_after(key.to_owned(), delay),
            },
        }
        Ok(())
    }
}
