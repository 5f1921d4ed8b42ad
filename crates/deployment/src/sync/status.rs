//! upstream `syncDeploymentStatus`: writes the status `status` calculated, when it changed.

use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::{api::apps::v1::DeploymentStatus, jiff::Timestamp};

use crate::controller::{Claimed, DeploymentSync, SyncError};
use crate::status::{calculate_status, changed_status};

impl DeploymentSync {
    /// syncStatusOnly for a Deployment being deleted.
    pub(crate) async fn sync_status_only(
        &self,
        Claimed { d, rs_list, .. }: Claimed<'_>,
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let (_, all) = resolved.old_and_all();
        self.sync_deployment_status(d, &all, resolved.new.as_deref())
            .await
    }

    /// syncDeploymentStatus: PUT the status when it changed.
    pub(crate) async fn sync_deployment_status(
        &self,
        d: &mut CachedDeployment,
        all: &[&CachedReplicaSet],
        new: Option<&CachedReplicaSet>,
    ) -> Result<(), SyncError> {
        let status = calculate_status(all, new, d, self.gates, Timestamp::now());
        if let Some(status) = changed_status(d, status) {
            *d = self.put_status(d, status).await?;
        }
        Ok(())
    }

    /// PUTs `d` with `status` through the status endpoint; the written Deployment.
    pub(crate) async fn put_status(
        &self,
        d: &CachedDeployment,
        status: DeploymentStatus,
    ) -> Result<CachedDeployment, kube::Error> {
        let mut updated = d.clone();
        updated.status = Some(status);
        self.writes.update_status(&updated).await
    }
}
