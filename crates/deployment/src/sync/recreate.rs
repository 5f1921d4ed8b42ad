//! upstream `rolloutRecreate`: applies `recreate`'s steps (scale the old down, wait for their pods, scale the new up).

use informer::CachedPod;

use crate::controller::{Claimed, DeploymentSync, SyncError, old_and_new};
use crate::recreate::{RecreatePlan, plan_recreate, plan_recreate_scale_up};

impl DeploymentSync {
    /// rolloutRecreate, applying [`plan_recreate`] as its contract says.
    pub(crate) async fn rollout_recreate(
        &self,
        Claimed { d, rs_list, key }: Claimed<'_>,
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let (old, all) = resolved.old_and_all();
        let pods = self.pod_map(rs_list);
        let pods: Vec<&CachedPod> = pods.iter().map(AsRef::as_ref).collect();
        let (new, scale_up) = match plan_recreate(d, resolved.new.as_deref(), &old, &pods) {
            RecreatePlan::ScaleDownOld(actions) => {
                self.apply_scales(d, &all, &actions).await?;
                return self
                    .sync_rollout_status(d, &all, resolved.new.as_deref(), key)
                    .await;
            }
            RecreatePlan::WaitForOldPods => {
                return self
                    .sync_rollout_status(d, &all, resolved.new.as_deref(), key)
                    .await;
            }
            RecreatePlan::CreateNewReplicaSet => {
                let new = self.create_new_replica_set(d, &old).await?;
                let scale_up = plan_recreate_scale_up(d, &new);
                (new, scale_up)
            }
            RecreatePlan::ScaleUp(scale_up) => match resolved.new.clone() {
                Some(new) => (new, scale_up),
                None => return Ok(()),
            },
        };
        let all = old_and_new(&old, Some(&new));
        if let Some(action) = scale_up.scale {
            self.apply_scales(d, &all, &[action]).await?;
        }
        if scale_up.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new), key).await
    }
}
