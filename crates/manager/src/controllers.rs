//! The controllers this binary can run: one line per controller crate, its descriptor.

use crate::registry::{ControllerRegistry, RegistryError};

/// Every controller this binary can run.
pub fn default_registry() -> Result<ControllerRegistry, RegistryError> {
    ControllerRegistry::of(&[
        replicaset::DESCRIPTOR,
        deployment::DESCRIPTOR,
        statefulset::DESCRIPTOR,
        daemonset::DESCRIPTOR,
        job::DESCRIPTOR,
        cronjob::DESCRIPTOR,
        ttlafterfinished::DESCRIPTOR,
    ])
}
