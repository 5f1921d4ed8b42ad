//! Errors reported by the informer API.

use thiserror::Error;

/// Why an informer refused a request.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum InformerError {
    /// The informer was shut down; as upstream, its indexes can no longer be changed.
    #[error("informer for {resource} has stopped; cannot add indexer {index}")]
    Stopped {
        /// The informer's resource (plural), for the log.
        resource: String,
        /// The index that was being added.
        index: String,
    },
}
