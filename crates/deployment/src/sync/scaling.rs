//! upstream `scaleReplicaSet`: writes each scale `scaling` decided on, with its annotations and event.

use std::collections::HashMap;

use informer::{CachedDeployment, CachedReplicaSet};

use crate::controller::DeploymentSync;
use crate::replica_set::{rs_available_replicas, rs_name, rs_spec_replicas, rs_status_replicas};
use crate::scaling::{ScaleAction, scaled_replica_set};

impl DeploymentSync {
    /// Applies scale actions in order (upstream `scaleReplicaSet`): each PUT is based on the latest
    /// copy of its ReplicaSet (a ReplicaSet may be resized twice in one plan) and followed by
    /// its ScalingReplicaSet event. The first API error stops the sequence.
    pub(crate) async fn apply_scales(
        &self,
        d: &CachedDeployment,
        all: &[&CachedReplicaSet],
        actions: &[ScaleAction],
    ) -> Result<(), kube::Error> {
        let mut latest: HashMap<&str, CachedReplicaSet> = HashMap::new();
        for action in actions {
            let current = match latest.remove(action.replica_set.as_str()) {
                Some(current) => current,
                None => match all.iter().find(|rs| rs_name(rs) == action.replica_set) {
                    Some(rs) => (*rs).clone(),
                    None => continue,
                },
            };
            // What the decision saw, for reading a rollout back from the log.
            tracing::debug!(
                replica_set = action.replica_set,
                from = rs_spec_replicas(&current),
                to = action.to,
                status_replicas = rs_status_replicas(&current),
                status_available = rs_available_replicas(&current),
                "scaling replica set"
            );
            let written = self
                .writes
                .update_replica_set(&scaled_replica_set(&current, action.to, d), action.reason())
                .await?;
            if let Some(event) = action.event() {
                self.record(d, event);
            }
            latest.insert(action.replica_set.as_str(), written);
        }
        Ok(())
    }
}
