//! What the manager knows of the CronJob controller: its [`DESCRIPTOR`] (names, the workers
//! flag, gates, what shadow mode compares, RBAC) and how it is built from the manager's
//! context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext, InitError, PolicyRule,
        Runnable, WorkersFlag,
    },
    shadow_view::{ComparedKind, Dependents, DependentsMatch, KindCache, cache_of, whole},
};
use informer::SharedInformerFactory;
use k8s_openapi::api::batch::v1::{CronJob, Job};

use crate::{
    CLIENT_NAME, CONTROLLER_NAME, CronJobController, CronJobOptions, QUEUE_NAME,
    metrics::CronJobMetrics,
};

/// The CronJob controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CLIENT_NAME,
    aliases: &["cronjob"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-cron-job-syncs",
        default: 5,
        help: "The number of cron job objects that are allowed to sync concurrently. Larger \
               number = more responsive jobs, but more CPU (and network) load",
        config_section: "CronJobController",
        config_field: "ConcurrentCronJobSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: crate::metrics::SUBSYSTEM,
    settings: &[],
    feature_gates: &[FeatureGate {
        name: "CronJobsScheduledAnnotation",
        default: true,
        fixed: true,
    }],
    compared_kinds: &[
        ComparedKind {
            resource: "cronjobs",
            kind: "CronJob",
            status_fields: &[
                "status.active",
                "status.lastScheduleTime",
                "status.lastSuccessfulTime",
            ],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            // A run's Job is named after its scheduled time.
            dependents: &[Dependents {
                resource: "jobs",
                matched: DependentsMatch::Name,
            }],
            decided_from_nodes: false,
            cache: cronjob_cache,
        },
        ComparedKind {
            resource: "jobs",
            kind: "Job",
            status_fields: &[],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[],
            decided_from_nodes: false,
            cache: job_cache,
        },
    ],
    rbac: &[
        PolicyRule::batch(&["cronjobs"], &["get", "list", "watch", "update"]),
        PolicyRule::batch(
            &["jobs"],
            &[
                "get", "list", "watch", "create", "update", "delete", "patch",
            ],
        ),
        PolicyRule::batch(&["cronjobs/status", "cronjobs/finalizers"], &["update"]),
        PolicyRule::core(&["pods"], &["list", "delete"]),
        EVENTS_RULE,
    ],
    init,
};

fn cronjob_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<CronJob>(factory, whole)
}

fn job_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<Job>(factory, whole)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let metrics = CronJobMetrics::register(context.metrics).map_err(InitError::from)?;
    let options = CronJobOptions {
        runtime: context.runtime,
        metrics: Some(metrics),
        ..CronJobOptions::default()
    };
    let controller = CronJobController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
