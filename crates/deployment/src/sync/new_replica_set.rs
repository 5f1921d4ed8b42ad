//! upstream `getAllReplicaSetsAndSyncRevision`: resolves the new and old ReplicaSets, syncs an existing new ReplicaSet's annotations or creates it (`new_replica_set` builds it), handling name collisions.

use std::sync::Arc;

use controller_toolkit::api_errors::{
    NAMESPACE_TERMINATING_CAUSE, error_message, has_status_cause, is_already_exists,
};
use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::controller::{DeploymentSync, Resolved, SyncError, borrowed};
use crate::new_replica_set::{
    CreateConflict, ExistingNewReplicaSet, after_create, build_new_replica_set, create_failed,
    resolve_create_conflict, sync_existing_new_replica_set,
};
use crate::replica_set::rs_name;
use crate::template::split_replica_sets;

impl DeploymentSync {
    /// getAllReplicaSetsAndSyncRevision without create: the new ReplicaSet
    /// (with its annotations brought up to date) if one exists, and all old ones.
    pub(crate) async fn resolve_existing(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<Resolved, SyncError> {
        let list = borrowed(rs_list);
        let split = split_replica_sets(d, &list);
        let is_new = |rs: &Arc<CachedReplicaSet>| {
            split.new.is_some_and(|new| std::ptr::eq(new, rs.as_ref()))
        };
        let old: Vec<Arc<CachedReplicaSet>> =
            rs_list.iter().filter(|rs| !is_new(rs)).cloned().collect();
        let Some(new) = rs_list.iter().find(|rs| is_new(rs)).cloned() else {
            return Ok(Resolved { new: None, old });
        };
        let new = match sync_existing_new_replica_set(d, &new, &split.old, Timestamp::now()) {
            ExistingNewReplicaSet::UpdateReplicaSet(body) => {
                let reason = "new replica set annotations";
                Arc::new(self.writes.update_replica_set(&body, reason).await?)
            }
            ExistingNewReplicaSet::UpdateDeploymentStatus(updated) => {
                *d = self.writes.update_status(&updated).await?;
                new
            }
            ExistingNewReplicaSet::Unchanged => new,
        };
        Ok(Resolved {
            new: Some(new),
            old,
        })
    }
    /// getAllReplicaSetsAndSyncRevision with create: the new ReplicaSet always exists
    /// afterwards.
    pub(crate) async fn resolve_or_create(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<(Arc<CachedReplicaSet>, Vec<Arc<CachedReplicaSet>>), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let new = match resolved.new {
            Some(new) => new,
            None => {
                self.create_new_replica_set(d, &borrowed(&resolved.old))
                    .await?
            }
        };
        Ok((new, resolved.old))
    }
    /// getNewReplicaSet, creating: POST the new ReplicaSet; on AlreadyExists reuse ours or
    /// count a hash collision; on other failures set the ReplicaSetCreateError condition and
    /// event.
    pub(crate) async fn create_new_replica_set(
        &self,
        d: &mut CachedDeployment,
        old: &[&CachedReplicaSet],
    ) -> Result<Arc<CachedReplicaSet>, SyncError> {
        let now = Timestamp::now();
        let planned = build_new_replica_set(d, old)?;
        let name = rs_name(&planned).to_owned();
        let (new, created) = match self
            .writes
            .create_replica_set(&informer::object_key(d), &planned)
            .await
        {
            Ok(created) => (Arc::new(created), true),
            Err(error) if is_already_exists(&error) => {
                let Some(existing) = self
                    .replica_sets
                    .get(&d.namespace().unwrap_or_default(), &name)
                else {
                    return Err(error.into());
                };
                match resolve_create_conflict(d, &existing) {
                    CreateConflict::UseExisting => (existing, false),
                    CreateConflict::Collision(status) => {
                        match self.put_status(d, status).await {
                            Ok(written) => *d = written,
                            Err(update_error) => {
                                tracing::debug!(replica_set = %name, error = %update_error, "recording collisionCount");
                            }
                        }
                        return Err(error.into());
                    }
                }
            }
            Err(error) if has_status_cause(&error, NAMESPACE_TERMINATING_CAUSE) => {
                return Err(error.into());
            }
            Err(error) => {
                let failure = create_failed(d, &name, &error_message(&error), now);
                if let Some(status) = failure.status
                    && let Err(update_error) = self.put_status(d, status).await
                {
                    tracing::debug!(replica_set = %name, error = %update_error, "recording ReplicaSetCreateError");
                }
                self.record(d, failure.event);
                return Err(error.into());
            }
        };
        let after = after_create(d, &planned, old, created, now);
        if let Some(event) = after.event {
            self.record(d, event);
        }
        if let Some(update) = after.update {
            *d = self.writes.update_status(&update).await?;
        }
        Ok(new)
    }
}
