//! How far a rolling update may go (upstream `util.SurgeCount`, `util.UnavailableCount`,
//! `util.AllowsSurge`): `maxSurge` and `maxUnavailable` resolved against a number of nodes.
//!
//! Both round percentages **up** (`GetScaledValueFromIntOrPercent(..., true)`), unlike the
//! Deployment controller's `maxUnavailable`: 10% of 7 nodes is 1, 25% of 10 is 3.

use k8s_openapi::api::apps::v1::{DaemonSet, RollingUpdateDaemonSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::spec::{is_rolling_update, rolling_update_params};

/// Why `maxSurge` or `maxUnavailable` could not be resolved; the messages are apimachinery's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntOrPercentError {
    /// The value is not set (upstream passes a nil pointer).
    #[error("nil value for IntOrString")]
    Nil,
    /// A string without a trailing `%`.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    /// A percentage whose number does not parse (`strconv.Atoi`).
    #[error(
        "invalid value for IntOrString: invalid value {value:?}: strconv.Atoi: parsing {digits:?}: {reason}"
    )]
    InvalidPercentage {
        /// The whole value, `%` included.
        value: String,
        /// The text before the `%`.
        digits: String,
        /// `invalid syntax` or `value out of range`, as Go's `strconv` says.
        reason: &'static str,
    },
}

/// `intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)`: an integer as is; a
/// percentage `p%` as `ceil(p * total / 100)` in float64 arithmetic (saturating where Go's
/// conversion would overflow).
pub fn scaled_value_rounded_up(
    value: Option<&IntOrString>,
    total: i64,
) -> Result<i64, IntOrPercentError> {
    match value.ok_or(IntOrPercentError::Nil)? {
        IntOrString::Int(value) => Ok(i64::from(*value)),
        IntOrString::String(text) => {
            let digits = text
                .strip_suffix('%')
                .ok_or(IntOrPercentError::NotAPercentage)?;
            let percent: i64 = digits.parse().map_err(|error: std::num::ParseIntError| {
                let reason = match error.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                        "value out of range"
                    }
                    _ => "invalid syntax",
                };
                IntOrPercentError::InvalidPercentage {
                    value: text.clone(),
                    digits: digits.to_owned(),
                    reason,
                }
            })?;
            // Float arithmetic as upstream's: the rounding of huge values must agree.
            let scaled = (percent as f64 * total as f64 / 100.0).ceil();
            Ok(scaled as i64)
        }
    }
}

/// `util.SurgeCount`: 0 unless the strategy is `RollingUpdate` with `rollingUpdate.maxSurge`
/// set; otherwise `maxSurge` scaled against `number_to_schedule`.
pub fn surge_count(
    daemon_set: &DaemonSet,
    number_to_schedule: i64,
) -> Result<i64, IntOrPercentError> {
    match rolling_params(daemon_set).and_then(|params| params.max_surge.as_ref()) {
        None => Ok(0),
        surge => scaled_value_rounded_up(surge, number_to_schedule),
    }
}

/// `util.UnavailableCount`: 0 unless the strategy is `RollingUpdate` with `rollingUpdate`
/// set; otherwise `maxUnavailable` scaled against `number_to_schedule` (an unset
/// `maxUnavailable` there is an error, as upstream's nil pointer is; the API defaults it to 1).
pub fn unavailable_count(
    daemon_set: &DaemonSet,
    number_to_schedule: i64,
) -> Result<i64, IntOrPercentError> {
    rolling_params(daemon_set).map_or(Ok(0), |params| {
        scaled_value_rounded_up(params.max_unavailable.as_ref(), number_to_schedule)
    })
}

/// `spec.updateStrategy.rollingUpdate` of a `RollingUpdate` DaemonSet: none for `OnDelete`
/// or an unset block, where upstream counts 0 for both.
fn rolling_params(daemon_set: &DaemonSet) -> Option<&RollingUpdateDaemonSet> {
    is_rolling_update(daemon_set)
        .then(|| rolling_update_params(daemon_set))
        .flatten()
}

/// `util.AllowsSurge`: whether the DaemonSet may run two pods on a node during an update
/// (`maxSurge` resolves above 0 against one node; an invalid value allows no surge).
pub fn allows_surge(daemon_set: &DaemonSet) -> bool {
    surge_count(daemon_set, 1).is_ok_and(|surge| surge > 0)
}
