//! The Deployment controller's executors: the methods of
//! [`DeploymentSync`](crate::controller::DeploymentSync) that read the caches, apply a pure
//! planner's decision through the write layer, record events and requeue.
//!
//! Each file is named after the planner module at the crate root whose decisions it applies.
//! The split is one-way: executors import planners, planners import no executor, no
//! `DeploymentSync` and no error of the sync, so every rule of upstream's stays a function of
//! plain data, table-tested without a server.

mod cleanup;
mod new_replica_set;
mod progress;
mod proportional;
mod recreate;
mod rollback;
mod rolling;
mod scaling;
mod status;
