//! The registry of the controllers kcm-rs implements, with upstream's canonical names and
//! aliases, and the init functions that adapt each controller crate to the manager.

use futures::FutureExt;
use replicaset::ReplicaSetController;

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

/// A constructed controller crate plus its worker count.
struct Runner<C> {
    controller: C,
    workers: usize,
}

impl Controller for Runner<ReplicaSetController> {
    fn run(
        self: Box<Self>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> futures::future::BoxFuture<'static, ()> {
        self.controller.run(self.workers, shutdown).boxed()
    }
}

fn init_replicaset(context: &ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError> {
    let init_error = |message: String| InitError {
        controller: replicaset::CONTROLLER_NAME.to_string(),
        message,
    };
    let controller = ReplicaSetController::new(
        context.client(replicaset::CONTROLLER_NAME)?,
        &context.informers,
        context.controller_metrics.clone(),
    )
    .map_err(|error| init_error(error.to_string()))?;
    Ok(Some(Box::new(Runner {
        controller,
        workers: context.options.concurrent_replicaset_syncs,
    })))
}
