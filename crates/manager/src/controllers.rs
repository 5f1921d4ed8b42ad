//! The registry of the controllers kcm-rs implements, with upstream's canonical names and
//! aliases, and the init functions that adapt each controller crate to the manager.

use futures::{FutureExt, future::BoxFuture};
use replicaset::ReplicaSetController;
use tokio_util::sync::CancellationToken;

use crate::{
    context::ControllerContext,
    registry::{Controller, ControllerDescriptor, ControllerRegistry, InitError, RegistryError},
};

/// Every controller this binary can run.
pub fn default_registry() -> Result<ControllerRegistry, RegistryError> {
    let mut registry = ControllerRegistry::new();
    registry.register(ControllerDescriptor {
        name: replicaset::CONTROLLER_NAME,
        aliases: &["replicaset"],
        disabled_by_default: false,
        init: init_replicaset,
    })?;
    Ok(registry)
}

/// A constructed controller crate, bound to its worker count, waiting to be run.
struct Runner(Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, ()> + Send>);

impl Controller for Runner {
    fn run(self: Box<Self>, shutdown: CancellationToken) -> BoxFuture<'static, ()> {
        (self.0)(shutdown)
    }
}

fn init_error(controller: &str, error: impl std::fmt::Display) -> InitError {
    InitError {
        controller: controller.to_string(),
        message: error.to_string(),
    }
}

fn init_replicaset(context: &ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError> {
    let name = replicaset::CONTROLLER_NAME;
    let controller = ReplicaSetController::new(
        context.client(name)?,
        &context.informers,
        context.controller_metrics.clone(),
    )
    .map_err(|error| init_error(name, error))?;
    let workers = context.options.concurrent_replicaset_syncs;
    Ok(Some(Box::new(Runner(Box::new(move |shutdown| {
        controller.run(workers, shutdown).boxed()
    })))))
}
