//! What the manager knows of the DaemonSet controller: its [`DESCRIPTOR`] (names, flags,
//! gates, what shadow mode compares, RBAC) and how it is built from the manager's context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        CONTROLLER_REVISIONS_RULE, ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext,
        InitError, PolicyRule, Runnable, WorkersFlag,
    },
    shadow_view::{
        CONTROLLER_REVISIONS, ComparedKind, Dependents, DependentsMatch, KindCache, PODS, cache_of,
    },
};
use informer::SharedInformerFactory;

use crate::{
    CLIENT_NAME, CONTROLLER_NAME, DaemonSetController, DaemonSetOptions, FeatureGates, QUEUE_NAME,
    controller::RawDaemonSet,
};

/// `TaintTolerationComparisonOperators`: alpha, off by default (since v1.35).
pub const TAINT_COMPARISON_GATE: &str = "TaintTolerationComparisonOperators";

/// The DaemonSet controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CLIENT_NAME,
    aliases: &["daemonset"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-daemonset-syncs",
        default: 2,
        help: "The number of daemonset objects that are allowed to sync concurrently. Larger \
               number = more responsive daemonsets, but more CPU (and network) load. The \
               node-update queue gets as many workers.",
        config_section: "DaemonSetController",
        config_field: "ConcurrentDaemonSetSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: "daemonset_controller",
    settings: &[],
    feature_gates: &[
        FeatureGate {
            name: "StaleControllerConsistencyDaemonSet",
            default: true,
            fixed: true,
        },
        FeatureGate {
            name: TAINT_COMPARISON_GATE,
            default: false,
            fixed: false,
        },
    ],
    compared_kinds: &[
        ComparedKind {
            resource: "daemonsets",
            kind: "DaemonSet",
            status_fields: &[
                "status.currentNumberScheduled",
                "status.numberMisscheduled",
                "status.desiredNumberScheduled",
                "status.numberReady",
                "status.updatedNumberScheduled",
                "status.numberAvailable",
                "status.numberUnavailable",
                "status.observedGeneration",
                "status.collisionCount",
            ],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[
                Dependents {
                    resource: "pods",
                    matched: DependentsMatch::Count,
                },
                Dependents {
                    resource: "controllerrevisions",
                    matched: DependentsMatch::Data,
                },
            ],
            decided_from_nodes: true,
            cache: daemon_set_cache,
        },
        PODS,
        CONTROLLER_REVISIONS,
    ],
    rbac: &[
        PolicyRule::apps(&["daemonsets"], &["get", "list", "watch"]),
        PolicyRule::apps(&["daemonsets/status", "daemonsets/finalizers"], &["update"]),
        PolicyRule::core(&["nodes"], &["list", "watch"]),
        PolicyRule::core(&["pods"], &["list", "watch", "create", "delete", "patch"]),
        CONTROLLER_REVISIONS_RULE,
        EVENTS_RULE,
    ],
    init,
};

/// The DaemonSet's JSON is the object as the server sent it.
fn daemon_set_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<RawDaemonSet>(factory, |ds| ds.raw.clone())
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let options = DaemonSetOptions {
        runtime: context.runtime,
        gates: FeatureGates {
            taint_toleration_comparison_operators: context.settings.gate(TAINT_COMPARISON_GATE)?,
        },
    };
    let controller = DaemonSetController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
