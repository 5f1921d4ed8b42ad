//! The Deployment controller's executors: the methods of
//! [`DeploymentSync`](crate::controller::DeploymentSync) that read the caches, apply a pure
//! planner's decision through the write layer, record events and requeue.
//!
//! Each file is named after the planner module at the crate root whose decisions it applies.
//! The split is one-way: executors import planners, planners import no executor, no
//! `DeploymentSync` and no error of the sync, so every rule of upstream's stays a function of
//! plain data, table-tested without a server.

use std::sync::Arc;

use informer::{CachedDeployment, CachedReplicaSet};

mod cleanup;
mod new_replica_set;
mod progress;
mod proportional;
mod recreate;
mod rollback;
mod rolling;
mod scaling;
mod status;

/// What a sync path works on once the ReplicaSets are claimed (upstream passes `d` and
/// `rsList` to each of `sync`, `rollback`, `rolloutRecreate`, `rolloutRolling` and
/// `syncStatusOnly`).
pub(crate) struct Claimed<'a> {
    /// The queue key of the Deployment.
    pub(crate) key: &'a str,
    /// The Deployment; a path that writes its status leaves the written copy here.
    pub(crate) d: &'a mut CachedDeployment,
    /// The ReplicaSets it owns after the claim.
    pub(crate) rs_list: &'a [Arc<CachedReplicaSet>],
}
