//! What the manager knows of the Deployment controller: its [`DESCRIPTOR`] (names, flags,
//! gates, what shadow mode compares, RBAC) and how it is built from the manager's context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext, InitError, PolicyRule,
        Runnable, WorkersFlag,
    },
    shadow_view::{ComparedKind, Dependents, DependentsMatch, KindCache, PODS, cache_of, whole},
};
use informer::{CachedDeployment, CachedReplicaSet, SharedInformerFactory};

use crate::{
    CONTROLLER_NAME, DeploymentController, DeploymentOptions, constants::QUEUE_NAME,
    status::FeatureGates, template::equal_ignore_hash,
};

/// The annotations the Deployment controller writes (`deployment.kubernetes.io/revision`,
/// desired and max replicas), compared by shadow mode.
const ANNOTATIONS: &[&str] = &["deployment.kubernetes.io/"];

/// `DeploymentReplicaSetTerminatingReplicas`: on since v1.35, implemented only on.
const TERMINATING_GATE: &str = "DeploymentReplicaSetTerminatingReplicas";

/// The Deployment controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CONTROLLER_NAME,
    aliases: &["deployment"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-deployment-syncs",
        default: 5,
        help: "Number of Deployments synced concurrently.",
        config_section: "DeploymentController",
        config_field: "ConcurrentDeploymentSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: "deployment_controller",
    settings: &[],
    feature_gates: &[FeatureGate {
        name: TERMINATING_GATE,
        default: true,
        fixed: true,
    }],
    compared_kinds: &[
        ComparedKind {
            resource: "deployments",
            kind: "Deployment",
            status_fields: &[
                "status.replicas",
                "status.updatedReplicas",
                "status.readyReplicas",
                "status.availableReplicas",
                "status.unavailableReplicas",
                "status.terminatingReplicas",
                "status.observedGeneration",
                "status.collisionCount",
            ],
            object_fields: &["spec.template"],
            annotation_prefixes: ANNOTATIONS,
            // The revision annotation is persisted through /status too.
            annotations_on_status: true,
            dependents: &[Dependents {
                resource: "replicasets",
                matched: DependentsMatch::Template {
                    equal: equal_ignore_hash,
                },
            }],
            decided_from_nodes: false,
            cache: deployment_cache,
        },
        ComparedKind {
            resource: "replicasets",
            kind: "ReplicaSet",
            status_fields: &[],
            object_fields: &["spec.replicas"],
            annotation_prefixes: ANNOTATIONS,
            annotations_on_status: false,
            dependents: &[],
            decided_from_nodes: false,
            cache: replica_set_cache,
        },
        // Read for the Recreate strategy and the available counts.
        PODS,
    ],
    rbac: &[
        PolicyRule::apps(
            &["deployments"],
            &["get", "list", "watch", "update", "patch"],
        ),
        PolicyRule::apps(
            &["deployments/status", "deployments/finalizers"],
            &["update"],
        ),
        PolicyRule::apps(
            &["replicasets"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        PolicyRule::core(&["pods"], &["get", "list", "watch"]),
        EVENTS_RULE,
    ],
    init,
};

fn deployment_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<CachedDeployment>(factory, whole)
}

fn replica_set_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<CachedReplicaSet>(factory, whole)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let options = DeploymentOptions {
        runtime: context.runtime,
        gates: FeatureGates {
            deployment_replica_set_terminating_replicas: context.settings.gate(TERMINATING_GATE)?,
        },
    };
    let controller = DeploymentController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
