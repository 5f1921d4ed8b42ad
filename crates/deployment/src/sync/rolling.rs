//! upstream `rolloutRolling`: applies `rolling`'s scale-up of the new ReplicaSet and scale-down of the old ones.

use std::borrow::Cow;

use informer::CachedReplicaSet;

use crate::controller::{Claimed, DeploymentSync, SyncError, borrowed, old_and_new};
use crate::replica_set::{rs_active_cached_pods, rs_status_replicas};
use crate::rolling::{RollingStep, plan_rolling_update};

impl DeploymentSync {
    /// kcm-rs only: `rs` as the rolling planner counts it, its `status.replicas` raised to the
    /// active pods the pod cache holds for it. The surge bound counts each ReplicaSet at
    /// `max(spec, status.replicas)`; a ReplicaSet controller that died (a crash, a failover)
    /// after creating pods but before writing their status leaves `status.replicas` and
    /// `availableReplicas` below the pods that run, so `cleanupUnhealthyReplicas` scales that
    /// ReplicaSet down as if its pods were missing and the new ReplicaSet grows while they
    /// still run (`make chaos`: 8 and 9 live pods for 5 replicas + 2 surge after kill -9).
    fn counted_with_cached_pods<'a>(&self, rs: &'a CachedReplicaSet) -> Cow<'a, CachedReplicaSet> {
        let active = rs_active_cached_pods(&self.pods, rs);
        if active <= rs_status_replicas(rs) {
            return Cow::Borrowed(rs);
        }
        let mut counted = rs.clone();
        counted.status.get_or_insert_with(Default::default).replicas = active;
        Cow::Owned(counted)
    }

    /// rolloutRolling, applying [`plan_rolling_update`] as its contract says.
    pub(crate) async fn rollout_rolling(
        &self,
        Claimed { d, rs_list, key }: Claimed<'_>,
    ) -> Result<(), SyncError> {
        let (new, old) = self.resolve_or_create(d, rs_list).await?;
        let old = borrowed(&old);
        let all = old_and_new(&old, Some(&new));
        let counted_new = self.counted_with_cached_pods(&new);
        let counted_old: Vec<Cow<'_, CachedReplicaSet>> = old
            .iter()
            .map(|rs| self.counted_with_cached_pods(rs))
            .collect();
        let counted_old: Vec<&CachedReplicaSet> = counted_old.iter().map(AsRef::as_ref).collect();
        let plan = plan_rolling_update(d, &counted_new, &counted_old)?;
        let mut scale_down_failed = None;
        match plan.step {
            RollingStep::ScaleNew(action) => {
                self.apply_scales(d, &all, &[action]).await?;
                return self.sync_rollout_status(d, &all, Some(&new), key).await;
            }
            RollingStep::ScaleOld { actions, scaled } => {
                match self.apply_scales(d, &all, &actions).await {
                    Ok(()) if scaled => {
                        return self.sync_rollout_status(d, &all, Some(&new), key).await;
                    }
                    Ok(()) => {}
                    // Upstream swallows errors while scaling old ReplicaSets down and goes on
                    // to the status; it then waits for some other event to try again, which a
                    // failed write (a 500, or a 409 with nothing changed) never sends. kcm-rs
                    // goes on the same way, then fails the sync so it is retried with backoff.
                    Err(error) => {
                        tracing::debug!(key, %error, "scaling old replica sets down");
                        scale_down_failed = Some(error);
                    }
                }
            }
            RollingStep::Settled => {}
        }
        if plan.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new), key).await?;
        scale_down_failed.map_or(Ok(()), |error| Err(error.into()))
    }
}
