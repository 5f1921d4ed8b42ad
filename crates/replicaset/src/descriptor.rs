//! What the manager knows of the ReplicaSet controller: its [`DESCRIPTOR`] (names, flags,
//! gates, what shadow mode compares, RBAC) and how it is built from the manager's context.

use controller_toolkit::{
    descriptor::{
        ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext, InitError, PolicyRule,
        Runnable, Setting, SettingKind, WorkersFlag,
    },
    shadow_view::{ComparedKind, Dependents, DependentsMatch, KindCache, PODS, cache_of, whole},
};
use informer::{CachedReplicaSet, SharedInformerFactory};
use std::sync::Arc;

use crate::{
    CONTROLLER_NAME, QUEUE_NAME, ReplicaSetController, ReplicaSetOptions, StatusWritesHeld,
};

/// `--replicaset-status-hold` (kcm-rs only).
pub const STATUS_HOLD_FLAG: &str = "replicaset-status-hold";

/// The ReplicaSet controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CONTROLLER_NAME,
    aliases: &["replicaset"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-replicaset-syncs",
        default: 5,
        help: "Number of ReplicaSets synced concurrently.",
        config_section: "ReplicaSetController",
        config_field: "ConcurrentRSSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: "replicaset_controller",
    settings: &[Setting {
        flag: STATUS_HOLD_FLAG,
        kind: SettingKind::Duration,
        default: "1s",
        help: "kcm-rs only: how long at most a ReplicaSet's status write waits for the pods its \
               sync created or deleted to be observed, so one write carries the new \
               observedGeneration and the counts after them; `0s` writes on every sync, as \
               upstream.",
    }],
    feature_gates: &[FeatureGate {
        name: "StaleControllerConsistencyReplicaSet",
        default: true,
        fixed: true,
    }],
    compared_kinds: &[
        ComparedKind {
            resource: "replicasets",
            kind: "ReplicaSet",
            status_fields: &[
                "status.replicas",
                "status.fullyLabeledReplicas",
                "status.readyReplicas",
                "status.availableReplicas",
                "status.terminatingReplicas",
                "status.observedGeneration",
            ],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[Dependents {
                resource: "pods",
                matched: DependentsMatch::Count,
            }],
            decided_from_nodes: false,
            cache: replica_set_cache,
        },
        PODS,
    ],
    rbac: &[
        PolicyRule::apps(&["replicasets"], &["get", "list", "watch"]),
        PolicyRule::apps(
            &["replicasets/status", "replicasets/finalizers"],
            &["update"],
        ),
        PolicyRule::core(
            &["pods"],
            &["get", "list", "watch", "create", "delete", "patch"],
        ),
        EVENTS_RULE,
    ],
    init,
};

fn replica_set_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<CachedReplicaSet>(factory, whole)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let options = ReplicaSetOptions {
        runtime: context.runtime,
        status_hold: context.settings.duration(STATUS_HOLD_FLAG)?,
        held_writes: Some(StatusWritesHeld::register(context.metrics)?),
    };
    let controller = ReplicaSetController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
