//! `--feature-gates`: upstream's `Name=bool,Name=bool` list.
//!
//! An upstream manifest carries gates for every controller of kube-controller-manager, so the
//! list is parsed the way upstream parses it (a malformed entry or a non-boolean value is an
//! error at start-up), and of the names only those a registered controller's descriptor lists
//! are acted on. Every other name is accepted with one warning, so the manifest
//! runs unchanged. Gates kcm-rs follows but does not let a user turn off are reported as such:
//! running with one of them off would not be upstream's behavior at any version kcm-rs follows.

use std::collections::BTreeMap;

use controller_toolkit::descriptor::FeatureGate;

/// The gates set on the command line that a registered controller follows, by name; a gate
/// not in the map is at its default.
pub type EnabledGates = BTreeMap<&'static str, bool>;

/// A `--feature-gates` value upstream would reject too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An entry without `=`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value that is not a Go `ParseBool` boolean.
    #[error("invalid value of {name}={value}, err: invalid syntax")]
    InvalidValue {
        /// The gate.
        name: String,
        /// What was given.
        value: String,
    },
    /// A gate kcm-rs implements only at its default, set to the other value.
    #[error("cannot set feature gate {name} to {value}: kcm-rs implements it only as {default}")]
    Fixed {
        /// The gate.
        name: String,
        /// What was asked for.
        value: bool,
        /// What kcm-rs does.
        default: bool,
    },
}

/// Go's `strconv.ParseBool`, which upstream's gate parser uses.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Parses `--feature-gates` (comma-separated `Name=bool`, blanks around entries ignored)
/// against the gates the registered controllers follow (`known`). Returns the known gates set,
/// and the other names, for one warning each.
pub fn parse_feature_gates(
    flag: &str,
    known: &[FeatureGate],
) -> Result<(EnabledGates, Vec<String>), FeatureGateError> {
    let mut given = BTreeMap::new();
    for entry in flag.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, value) = entry
            .split_once('=')
            .ok_or_else(|| FeatureGateError::MissingValue(entry.to_owned()))?;
        let (name, value) = (name.trim(), value.trim());
        let enabled = parse_go_bool(value).ok_or_else(|| FeatureGateError::InvalidValue {
            name: name.to_owned(),
            value: value.to_owned(),
        })?;
        given.insert(name.to_owned(), enabled);
    }
    let mut gates = EnabledGates::new();
    let mut ignored = Vec::new();
    for (name, enabled) in given {
        match known.iter().find(|gate| gate.name == name) {
            Some(gate) if gate.fixed && enabled != gate.default => {
                return Err(FeatureGateError::Fixed {
                    name,
                    value: enabled,
                    default: gate.default,
                });
            }
            Some(gate) => {
                gates.insert(gate.name, enabled);
            }
            None => ignored.push(name),
        }
    }
    Ok((gates, ignored))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[FeatureGate] = &[
        FeatureGate {
            name: "MaxUnavailableStatefulSet",
            default: false,
            fixed: false,
        },
        FeatureGate {
            name: "DeploymentReplicaSetTerminatingReplicas",
            default: true,
            fixed: true,
        },
    ];

    #[test]
    fn parses_upstream_syntax() {
        let on = EnabledGates::from([("MaxUnavailableStatefulSet", true)]);
        let off = EnabledGates::from([("MaxUnavailableStatefulSet", false)]);
        let fixed = EnabledGates::from([("DeploymentReplicaSetTerminatingReplicas", true)]);
        type Parsed = Result<(EnabledGates, Vec<&'static str>), FeatureGateError>;
        let cases: Vec<(&str, Parsed)> = vec![
            ("", Ok((EnabledGates::new(), vec![]))),
            ("MaxUnavailableStatefulSet=true", Ok((on.clone(), vec![]))),
            (" MaxUnavailableStatefulSet = T ,", Ok((on.clone(), vec![]))),
            (
                "MaxUnavailableStatefulSet=1,MaxUnavailableStatefulSet=false",
                Ok((off, vec![])),
            ),
            (
                "JobPodReplacementPolicy=true,MaxUnavailableStatefulSet=true",
                Ok((on, vec!["JobPodReplacementPolicy"])),
            ),
            (
                "DeploymentReplicaSetTerminatingReplicas=true",
                Ok((fixed, vec![])),
            ),
            (
                "DeploymentReplicaSetTerminatingReplicas=false",
                Err(FeatureGateError::Fixed {
                    name: "DeploymentReplicaSetTerminatingReplicas".into(),
                    value: false,
                    default: true,
                }),
            ),
            (
                "MaxUnavailableStatefulSet",
                Err(FeatureGateError::MissingValue(
                    "MaxUnavailableStatefulSet".into(),
                )),
            ),
            (
                "MaxUnavailableStatefulSet=yes",
                Err(FeatureGateError::InvalidValue {
                    name: "MaxUnavailableStatefulSet".into(),
                    value: "yes".into(),
                }),
            ),
        ];
        for (flag, want) in cases {
            let want = want.map(|(gates, ignored)| {
                (
                    gates,
                    ignored.into_iter().map(str::to_owned).collect::<Vec<_>>(),
                )
            });
            assert_eq!(parse_feature_gates(flag, KNOWN), want, "{flag:?}");
        }
    }
}
