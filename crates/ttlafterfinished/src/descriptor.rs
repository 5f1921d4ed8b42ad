//! What the manager knows of the TTL-after-finished controller: its [`DESCRIPTOR`] (names, the
//! workers flag, what shadow mode compares, RBAC) and how it is built from the manager's
//! context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        ControllerDescriptor, EVENTS_RULE, InitContext, InitError, PolicyRule, Runnable,
        WorkersFlag,
    },
    shadow_view::{ComparedKind, KindCache, cache_of, whole},
};
use informer::SharedInformerFactory;
use k8s_openapi::api::batch::v1::Job;

use crate::{
    CLIENT_NAME, CONTROLLER_NAME, QUEUE_NAME, TtlAfterFinishedController, TtlAfterFinishedOptions,
    metrics::TtlAfterFinishedMetrics,
};

/// The TTL-after-finished controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CLIENT_NAME,
    aliases: &["ttl-after-finished"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-ttl-after-finished-syncs",
        default: 5,
        help: "The number of ttl-after-finished-controller workers that are allowed to sync \
               concurrently.",
        config_section: "TTLAfterFinishedController",
        config_field: "ConcurrentTTLSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: crate::metrics::SUBSYSTEM,
    settings: &[],
    feature_gates: &[],
    // Its only write is a Job's deletion, judged by the Job being gone.
    compared_kinds: &[ComparedKind {
        resource: "jobs",
        kind: "Job",
        status_fields: &[],
        object_fields: &[],
        annotation_prefixes: &[],
        annotations_on_status: false,
        dependents: &[],
        decided_from_nodes: false,
        cache: job_cache,
    }],
    rbac: &[
        PolicyRule::batch(&["jobs"], &["get", "list", "watch", "delete"]),
        EVENTS_RULE,
    ],
    init,
};

fn job_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<Job>(factory, whole)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let metrics = TtlAfterFinishedMetrics::register(context.metrics).map_err(InitError::from)?;
    let options = TtlAfterFinishedOptions {
        runtime: context.runtime,
        metrics: Some(metrics),
    };
    let controller = TtlAfterFinishedController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
