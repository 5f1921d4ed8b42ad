//! upstream `rollback`: applies `rollback`'s plan (copy the template back, or give up with an event).

use crate::controller::{Claimed, DeploymentSync, SyncError, borrowed};
use crate::rollback::plan_rollback;

impl DeploymentSync {
    /// Legacy rollback: PUT the Deployment with the target template (or just without the
    /// request), recording the events [`plan_rollback`] gives.
    pub(crate) async fn rollback(
        &self,
        Claimed { d, rs_list, .. }: Claimed<'_>,
    ) -> Result<(), SyncError> {
        let (new, old) = self.resolve_or_create(d, rs_list).await?;
        let Some(plan) = plan_rollback(d, Some(&new), &borrowed(&old))? else {
            return Ok(());
        };
        if let Some(warning) = plan.warning {
            self.record(d, warning);
        }
        *d = self.writes.update_deployment(&plan.deployment).await?;
        if let Some(done) = plan.on_success {
            self.record(d, done);
        }
        Ok(())
    }
}
