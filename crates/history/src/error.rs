//! Errors of the history crate: malformed input JSON, never I/O (the crate does no I/O).

/// Why revision data or a revision could not be built or applied.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field that must be a JSON object is something else (or missing).
    #[error("{path} must be a JSON object")]
    NotAnObject {
        /// Dotted path of the offending field.
        path: String,
    },
    /// A field that must be a string is something else (or missing).
    #[error("{path} must be a string")]
    NotAString {
        /// Dotted path of the offending field.
        path: String,
    },
    /// A number Go's encoder cannot represent (only possible with serde_json's
    /// `arbitrary_precision`).
    #[error("number {0} is not a finite float64")]
    UnrepresentableNumber(String),
    /// A revision carries no data to apply or compare.
    #[error("ControllerRevision {0} has no data")]
    MissingData(String),
    /// Converting between typed objects and JSON failed.
    #[error("JSON conversion: {0}")]
    Json(#[from] serde_json::Error),
}
