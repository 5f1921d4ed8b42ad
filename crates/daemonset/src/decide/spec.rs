//! The DaemonSet's fields as upstream reads them: Go's zero values for what k8s-openapi leaves
//! `None`, and the API defaults upstream relies on, in one place so every decision reads them
//! alike.

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetSpec, RollingUpdateDaemonSet};
use k8s_openapi::api::core::v1::PodTemplateSpec;

/// `updateStrategy.type` of a rolling update (`RollingUpdateDaemonSetStrategyType`).
pub const ROLLING_UPDATE_STRATEGY: &str = "RollingUpdate";
/// The DaemonSet annotation holding the legacy template generation
/// (`apps.DeprecatedTemplateGeneration`); the API server bumps it on every template change.
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";
/// `spec.revisionHistoryLimit` when unset (the API default).
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;

/// The DaemonSet's spec, if it has one.
pub fn daemon_set_spec(daemon_set: &DaemonSet) -> Option<&DaemonSetSpec> {
    daemon_set.spec.as_ref()
}

/// `spec.template`, if the DaemonSet has a spec.
pub fn pod_template(daemon_set: &DaemonSet) -> Option<&PodTemplateSpec> {
    daemon_set_spec(daemon_set).map(|spec| &spec.template)
}

/// `spec.minReadySeconds`, 0 when unset.
pub fn min_ready_seconds(daemon_set: &DaemonSet) -> i32 {
    daemon_set_spec(daemon_set)
        .and_then(|spec| spec.min_ready_seconds)
        .unwrap_or(0)
}

/// `spec.updateStrategy.type`, `""` when unset (Go's zero value; the API defaults it to
/// `RollingUpdate`).
pub fn update_strategy_type(daemon_set: &DaemonSet) -> &str {
    daemon_set_spec(daemon_set)
        .and_then(|spec| spec.update_strategy.as_ref())
        .and_then(|strategy| strategy.type_.as_deref())
        .unwrap_or_default()
}

/// Whether the update strategy is `RollingUpdate` (anything else, `OnDelete` included, leaves
/// old pods alone).
pub fn is_rolling_update(daemon_set: &DaemonSet) -> bool {
    update_strategy_type(daemon_set) == ROLLING_UPDATE_STRATEGY
}

/// `spec.updateStrategy.rollingUpdate`, if set.
pub fn rolling_update_params(daemon_set: &DaemonSet) -> Option<&RollingUpdateDaemonSet> {
    daemon_set_spec(daemon_set)
        .and_then(|spec| spec.update_strategy.as_ref())
        .and_then(|strategy| strategy.rolling_update.as_ref())
}

/// `spec.revisionHistoryLimit`, [`DEFAULT_REVISION_HISTORY_LIMIT`] when unset (upstream
/// dereferences the API-defaulted pointer).
pub fn revision_history_limit(daemon_set: &DaemonSet) -> i32 {
    daemon_set_spec(daemon_set)
        .and_then(|spec| spec.revision_history_limit)
        .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT)
}

/// `util.GetTemplateGeneration`: the [`TEMPLATE_GENERATION_ANNOTATION`] parsed as a decimal
/// int64; `None` when missing or unparsable (every caller upstream treats a parse error as no
/// generation).
pub fn template_generation(daemon_set: &DaemonSet) -> Option<i64> {
    daemon_set
        .metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_GENERATION_ANNOTATION)?
        .parse()
        .ok()
}

/// `status.observedGeneration`, 0 when unset.
pub fn observed_generation(daemon_set: &DaemonSet) -> i64 {
    daemon_set
        .status
        .as_ref()
        .and_then(|status| status.observed_generation)
        .unwrap_or(0)
}

/// `status.collisionCount` (`None` and `Some(0)` hash differently, as upstream's nil pointer
/// and 0 do).
pub fn collision_count(daemon_set: &DaemonSet) -> Option<i32> {
    daemon_set
        .status
        .as_ref()
        .and_then(|status| status.collision_count)
}

/// `metadata.name`, `""` when unset.
pub fn name(daemon_set: &DaemonSet) -> &str {
    daemon_set.metadata.name.as_deref().unwrap_or_default()
}

/// `metadata.namespace`, `""` when unset.
pub fn namespace(daemon_set: &DaemonSet) -> &str {
    daemon_set.metadata.namespace.as_deref().unwrap_or_default()
}

/// `metadata.uid`, `""` when unset.
pub fn uid(daemon_set: &DaemonSet) -> &str {
    daemon_set.metadata.uid.as_deref().unwrap_or_default()
}
