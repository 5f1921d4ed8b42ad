//! upstream `sync`: applies `proportional`'s plan for scaling events and paused Deployments, then the status.

use crate::controller::{Claimed, DeploymentSync, SyncError};
use crate::proportional::plan_sync;

impl DeploymentSync {
    /// upstream `sync` (named for what it handles, apart from `Reconciler::sync`): proportional
    /// scaling for paused Deployments and scaling events, history cleanup when paused, then
    /// the status.
    pub(crate) async fn sync_scaling_or_paused(
        &self,
        Claimed { d, rs_list, .. }: Claimed<'_>,
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let (old, all) = resolved.old_and_all();
        let plan = plan_sync(d, resolved.new.as_deref(), &old);
        self.apply_scales(d, &all, &plan.actions).await?;
        if plan.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_deployment_status(d, &all, resolved.new.as_deref())
            .await
    }
}
