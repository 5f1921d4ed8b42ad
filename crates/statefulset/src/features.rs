//! The feature gates the StatefulSet controller consults, with upstream v1.36's defaults.
//!
//! kube-controller-manager reads them from `--feature-gates`; here they are a plain value
//! given to the controller at construction and carried into the pure plan
//! ([`crate::decide::PlanInput::gates`]), so a test can run either side of a gate.

/// Feature gates of the StatefulSet controller. `Default` gives upstream v1.36's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// `MaxUnavailableStatefulSet` (beta): rolling updates honour
    /// `rollingUpdate.maxUnavailable` (upstream `updateStatefulSetAfterInvariantEstablished`)
    /// and report the `statefulset_unavailable_replicas` / `statefulset_max_unavailable`
    /// gauges. Off by default since v1.36 (and v1.35.4), kubernetes#137904, because the
    /// gate-on path broke Parallel rollouts (kubernetes#137409); off, a rolling update
    /// replaces one pod per sync and waits for every unavailable pod above it.
    pub max_unavailable_statefulset: bool,
}
