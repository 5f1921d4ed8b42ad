//! upstream `cleanupDeployment`: deletes the old ReplicaSets past `revisionHistoryLimit` that `cleanup` chose.

use informer::{CachedDeployment, CachedReplicaSet};

use crate::cleanup::cleanup_victims;
use crate::controller::{DeploymentSync, SyncError};
use crate::replica_set::rs_name;

impl DeploymentSync {
    /// cleanupDeployment: DELETE the history beyond revisionHistoryLimit.
    pub(crate) async fn cleanup_deployment(
        &self,
        d: &CachedDeployment,
        old: &[&CachedReplicaSet],
    ) -> Result<(), SyncError> {
        for victim in cleanup_victims(d, old) {
            tracing::debug!(deployment = %informer::object_key(d), replica_set = rs_name(victim), "trying to cleanup replica set");
            self.writes.delete_replica_set(victim).await?;
        }
        Ok(())
    }
}
