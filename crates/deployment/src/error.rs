//! Errors of the pure decision functions. They carry upstream's messages because the
//! controller surfaces them as sync errors (logged and requeued), like upstream.

/// Why a decision could not be made from the given data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A maxSurge/maxUnavailable value is missing where upstream requires one.
    #[error("nil value for IntOrString")]
    MissingIntOrString,
    /// A string IntOrString that is not a percentage.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotAPercentage,
    /// A percentage whose number does not parse.
    #[error("invalid value for IntOrString: invalid value {value:?}: {reason}")]
    InvalidPercentage {
        /// The offending string.
        value: String,
        /// Parser message.
        reason: String,
    },
    /// Strategy type neither RollingUpdate nor Recreate.
    #[error("deployment type {0} isn't supported")]
    UnsupportedStrategy(String),
    /// syncDeployment met a strategy type it cannot roll out.
    #[error("unexpected deployment strategy type: {0}")]
    UnexpectedStrategy(String),
    /// A revision annotation that is not a decimal int64.
    #[error("invalid revision {value:?} on {object}: {reason}")]
    InvalidRevision {
        /// Object name.
        object: String,
        /// Annotation value.
        value: String,
        /// Parser message.
        reason: String,
    },
    /// The Deployment has no name or UID, so no ReplicaSet can be owned by it.
    #[error("deployment has no {0}")]
    MissingDeploymentField(&'static str),
    /// A pod template that cannot be kept as JSON (`informer::CompactPodTemplate::encode`:
    /// only a timestamp outside the years k8s-openapi prints).
    #[error("pod template cannot be encoded: {0}")]
    TemplateEncoding(String),
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::TemplateEncoding(error.to_string())
    }
}
