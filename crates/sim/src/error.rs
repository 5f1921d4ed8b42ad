//! Errors of the sim's own API (starting, writing kubeconfigs), not of the simulated API server.

/// Why starting or using a [`crate::SimCluster`] failed.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The listening socket could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bound address could not be read back.
    #[error("reading the bound address: {0}")]
    LocalAddr(std::io::Error),
    /// A node could not be created or found (a bad name in `NodesConfig`, or an unknown
    /// node in [`crate::SimCluster::set_node_ready`]).
    #[error("node: {0}")]
    Node(String),
    /// Writing a file (the kubeconfig) failed.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
