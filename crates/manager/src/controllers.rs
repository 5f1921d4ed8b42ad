//! The registry of the controllers kcm-rs implements, with upstream's canonical names and
//! aliases, and the init functions that adapt each controller crate to the manager.

use controller_toolkit::{runtime::RuntimeOptions, stale_reads::StaleSyncSkips};
use deployment::{DeploymentController, DeploymentOptions};
use futures::{FutureExt, future::BoxFuture};
use informer::SharedInformerFactory;
use replicaset::{ReplicaSetController, ReplicaSetOptions, StatusWritesHeld};
use statefulset::{
    BrokenRolloutRecovery, StatefulSetController, StatefulSetMetrics, StatefulSetOptions,
};
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
    registry.register(ControllerDescriptor {
        name: deployment::CONTROLLER_NAME,
        aliases: &["deployment"],
        disabled_by_default: false,
        init: init_deployment,
    })?;
    registry.register(ControllerDescriptor {
        name: statefulset::CONTROLLER_NAME,
        aliases: &["statefulset"],
        disabled_by_default: false,
        init: init_statefulset,
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

/// Builds a controller crate's controller with its own client and binds its worker count:
/// what every init function does, upstream's `newXController` + `go Run(workers)`. The
/// controller's runtime options carry the shared metrics, its `<subsystem>_stale_sync_skips_total`
/// counter and, in shadow mode, the executor that records its writes instead of sending them.
fn bind<C, E>(
    context: &ControllerContext,
    name: &'static str,
    subsystem: &str,
    workers: usize,
    build: impl FnOnce(kube::Client, &SharedInformerFactory, RuntimeOptions) -> Result<C, E>,
    run: fn(C, usize, CancellationToken) -> BoxFuture<'static, ()>,
) -> Result<Option<Box<dyn Controller>>, InitError>
where
    C: Send + 'static,
    E: std::fmt::Display,
{
    let runtime = RuntimeOptions {
        metrics: context.controller_metrics.clone(),
        stale_sync_skips: Some(
            StaleSyncSkips::register(&context.metrics, subsystem)
                .map_err(|error| init_error(name, error))?,
        ),
        writes: context.write_executor(name),
    };
    let controller = build(context.client(name)?, &context.informers, runtime)
        .map_err(|error| init_error(name, error))?;
    Ok(Some(Box::new(Runner(Box::new(move |shutdown| {
        run(controller, workers, shutdown)
    })))))
}

fn init_replicaset(context: &ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError> {
    let name = replicaset::CONTROLLER_NAME;
    let held_writes =
        StatusWritesHeld::register(&context.metrics).map_err(|e| init_error(name, e))?;
    bind(
        context,
        name,
        "replicaset_controller",
        context.options.concurrent_replicaset_syncs,
        |client, informers, runtime| {
            ReplicaSetController::new(
                client,
                informers,
                ReplicaSetOptions {
                    runtime,
                    status_hold: context.options.replicaset_status_hold,
                    held_writes: Some(held_writes),
                },
            )
        },
        |controller, workers, shutdown| controller.run(workers, shutdown).boxed(),
    )
}

fn init_deployment(context: &ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError> {
    bind(
        context,
        deployment::CONTROLLER_NAME,
        "deployment_controller",
        context.options.concurrent_deployment_syncs,
        |client, informers, runtime| {
            DeploymentController::new(
                client,
                informers,
                DeploymentOptions {
                    runtime,
                    ..DeploymentOptions::default()
                },
            )
        },
        |controller, workers, shutdown| controller.run(workers, shutdown).boxed(),
    )
}

fn init_statefulset(context: &ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError> {
    let name = statefulset::CONTROLLER_NAME;
    let gates = context.options.feature_gates().statefulset;
    let recovery = BrokenRolloutRecovery {
        all_sets: context.options.statefulset_recover_broken_rollout,
        grace: context.options.statefulset_recover_grace,
    };
    let gauges = StatefulSetMetrics::register(&context.metrics).map_err(|e| init_error(name, e))?;
    bind(
        context,
        name,
        "statefulset_controller",
        context.options.concurrent_statefulset_syncs,
        |client, informers, runtime| {
            StatefulSetController::new(
                client,
                informers,
                StatefulSetOptions {
                    runtime,
                    gauges: Some(gauges),
                    gates,
                    recovery,
                },
            )
        },
        |controller, workers, shutdown| controller.run(workers, shutdown).boxed(),
    )
}
