//! The feature gates the DaemonSet controller's decisions follow, with upstream v1.36's
//! defaults, so a caller passes them explicitly and tests can flip them.

/// Feature gates read by the decisions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureGates {
    /// `TaintTolerationComparisonOperators` (alpha since v1.35, off by default): tolerations
    /// with the operators `Lt` and `Gt` compare the taint's value numerically; with the gate
    /// off they tolerate nothing.
    pub taint_toleration_comparison_operators: bool,
}
