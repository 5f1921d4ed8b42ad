//! What the manager knows of the StatefulSet controller: its [`DESCRIPTOR`] (names, flags,
//! gates, what shadow mode compares, RBAC) and how it is built from the manager's context.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{
        CONTROLLER_REVISIONS_RULE, ControllerDescriptor, EVENTS_RULE, FeatureGate, InitContext,
        InitError, PolicyRule, Runnable, Setting, SettingKind, WorkersFlag,
    },
    shadow_view::{
        CONTROLLER_REVISIONS, ComparedKind, Dependents, DependentsMatch, KindCache, PODS, cache_of,
        metadata_only,
    },
};
use informer::SharedInformerFactory;
use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::{
    BrokenRolloutRecovery, CONTROLLER_NAME, FeatureGates, QUEUE_NAME, StatefulSetController,
    StatefulSetMetrics, StatefulSetOptions, controller::RawStatefulSet,
};

/// `--statefulset-recover-broken-rollout` (kcm-rs only).
pub const RECOVER_FLAG: &str = "statefulset-recover-broken-rollout";
/// `--statefulset-recover-grace` (kcm-rs only).
pub const RECOVER_GRACE_FLAG: &str = "statefulset-recover-grace";
/// `MaxUnavailableStatefulSet`: beta, off by default in v1.36 (kubernetes#137904).
pub const MAX_UNAVAILABLE_GATE: &str = "MaxUnavailableStatefulSet";

/// The StatefulSet controller as the manager registers it.
pub const DESCRIPTOR: ControllerDescriptor = ControllerDescriptor {
    name: CONTROLLER_NAME,
    client_name: CONTROLLER_NAME,
    aliases: &["statefulset"],
    disabled_by_default: false,
    workers: WorkersFlag {
        flag: "concurrent-statefulset-syncs",
        default: 5,
        help: "Number of StatefulSets synced concurrently.",
        config_section: "StatefulSetController",
        config_field: "ConcurrentStatefulSetSyncs",
    },
    queue: QUEUE_NAME,
    metrics_subsystem: "statefulset_controller",
    settings: &[
        Setting {
            flag: RECOVER_FLAG,
            kind: SettingKind::Bool,
            default: "false",
            help: "kcm-rs only: recover every OrderedReady StatefulSet from a broken rolling \
                   update (kubernetes#67250) by deleting a pod stuck not Ready at an outdated \
                   revision, without a manual `kubectl delete pod`. Off by default (upstream \
                   waits); a set's `kcm-rs.io/recover-broken-rollout` annotation \
                   (`\"true\"`/`\"false\"`) overrides it.",
        },
        Setting {
            flag: RECOVER_GRACE_FLAG,
            kind: SettingKind::Duration,
            default: "30s",
            help: "kcm-rs only: how long past `minReadySeconds` a pod must have been not Ready \
                   before the broken-rollout recovery deletes it, so that a slow start is not \
                   taken for a broken one.",
        },
    ],
    feature_gates: &[
        FeatureGate {
            name: MAX_UNAVAILABLE_GATE,
            default: false,
            fixed: false,
        },
        FeatureGate {
            name: "StaleControllerConsistencyStatefulSet",
            default: true,
            fixed: true,
        },
        FeatureGate {
            name: "StatefulSetSemanticRevisionComparison",
            default: true,
            fixed: true,
        },
    ],
    compared_kinds: &[
        ComparedKind {
            resource: "statefulsets",
            kind: "StatefulSet",
            status_fields: &[
                "status.replicas",
                "status.readyReplicas",
                "status.currentReplicas",
                "status.updatedReplicas",
                "status.availableReplicas",
                "status.currentRevision",
                "status.updateRevision",
                "status.observedGeneration",
                "status.collisionCount",
            ],
            object_fields: &[],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[
                Dependents {
                    resource: "pods",
                    matched: DependentsMatch::Name,
                },
                Dependents {
                    resource: "persistentvolumeclaims",
                    matched: DependentsMatch::Name,
                },
                Dependents {
                    resource: "controllerrevisions",
                    matched: DependentsMatch::Name,
                },
            ],
            decided_from_nodes: false,
            cache: set_cache,
        },
        PODS,
        CONTROLLER_REVISIONS,
        ComparedKind {
            resource: "persistentvolumeclaims",
            kind: "PersistentVolumeClaim",
            status_fields: &[],
            object_fields: &["metadata.ownerReferences"],
            annotation_prefixes: &[],
            annotations_on_status: false,
            dependents: &[],
            decided_from_nodes: false,
            cache: claim_cache,
        },
    ],
    rbac: &[
        PolicyRule::apps(
            &["statefulsets"],
            &["get", "list", "watch", "update", "patch"],
        ),
        PolicyRule::apps(
            &["statefulsets/status", "statefulsets/finalizers"],
            &["update"],
        ),
        PolicyRule::core(
            &["pods"],
            &["get", "list", "watch", "create", "delete", "patch"],
        ),
        PolicyRule::core(
            &["persistentvolumeclaims"],
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ),
        CONTROLLER_REVISIONS_RULE,
        EVENTS_RULE,
    ],
    init,
};

/// The StatefulSet's JSON is the object as the server sent it.
fn set_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<RawStatefulSet>(factory, |set| set.raw.clone())
}

fn claim_cache(factory: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
    cache_of::<PersistentVolumeClaim>(factory, metadata_only)
}

fn init(context: InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError> {
    let settings = context.settings;
    let options = StatefulSetOptions {
        runtime: context.runtime,
        gauges: Some(StatefulSetMetrics::register(context.metrics)?),
        gates: FeatureGates {
            max_unavailable_statefulset: settings.gate(MAX_UNAVAILABLE_GATE)?,
        },
        recovery: BrokenRolloutRecovery {
            all_sets: settings.bool(RECOVER_FLAG)?,
            grace: settings.duration(RECOVER_GRACE_FLAG)?,
        },
    };
    let controller = StatefulSetController::new(context.client, context.informers, options)?;
    Ok(Some(Box::new(controller)))
}
