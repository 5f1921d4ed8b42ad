//! What the manager knows of the Job controller: its [`DESCRIPTOR`] (names, flags, gates, what
//! shadow mode compares, RBAC) and how it is built from the manager's context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext, InitError, PolicyRule,
        Runnable, WorkersFlag,
    },
    shadow_view::{ComparedKind, Dependents, DependentsMatch, KindCache, PODS, cache_of, whole},
};
use informer::SharedInformerFactory;
use k8s_openapi::api::batch::v1::Job;

use crate::{
    CLIENT_NAME, CONTROLLER_NAME, JobController, JobOptions, QUEUE_NAME, metrics::JobMetrics,
};

/// The Job controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CLIENT_NAME,
    aliases: &["job"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-job-syncs",
        default: 5,
        help: "The number of job objects that are allowed to sync concurrently. Larger number = \
               more responsive jobs, but more CPU (and network) load. The orphan-pod queue gets \
               as many workers.",
        config_section: "JobController",
        config_field: "ConcurrentJobSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: crate::metrics::SUBSYSTEM,
    settings: &[],
    feature_gates: &[
        FeatureGate {
            name: "StaleControllerConsistencyJob",
            default: true,
            fixed: true,
        },
        FeatureGate {
            name: "MutableSchedulingDirectivesForSuspendedJobs",
            default: true,
            fixed: true,
        },
    ],
    compared_kinds: &[
        ComparedKind {
            resource: "jobs",
            kind: "Job",
            status_fields: &[
                "status.active",
                "status.ready",
                "status.terminating",
                "status.succeeded",
                "status.failed",
                "status.completedIndexes",
                "status.failedIndexes",
            ],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[Dependents {
                resource: "pods",
                matched: DependentsMatch::Count,
            }],
            decided_from_nodes: false,
            cache: job_cache,
        },
        PODS,
    ],
    rbac: &[
        PolicyRule::batch(&["jobs"], &["get", "list", "watch", "update", "patch"]),
        PolicyRule::batch(&["jobs/status", "jobs/finalizers"], &["update"]),
        PolicyRule::core(&["pods"], &["list", "watch", "create", "delete", "patch"]),
        EVENTS_RULE,
    ],
    init,
};

fn job_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<Job>(factory, whole)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let metrics = JobMetrics::register(context.metrics).map_err(InitError::from)?;
    let options = JobOptions {
        runtime: context.runtime,
        metrics: Some(metrics),
    };
    let controller = JobController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
