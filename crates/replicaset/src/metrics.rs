//! The ReplicaSet controller's own metric (kcm-rs only): status writes held back by
//! `--replicaset-status-hold`, so an operator sees how often the hold saves a write.

use prometheus::{IntCounter, Opts, Registry};

/// `replicaset_controller_status_writes_held_total`.
#[derive(Clone, Debug)]
pub struct StatusWritesHeld(IntCounter);

impl StatusWritesHeld {
    /// Creates the counter and registers it in `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let counter = IntCounter::with_opts(
            Opts::new(
                "status_writes_held_total",
                "kcm-rs only: ReplicaSet status writes held back while the sync's own pod creates and deletes were unobserved (--replicaset-status-hold)",
            )
            .subsystem("replicaset_controller"),
        )?;
        registry.register(Box::new(counter.clone()))?;
        Ok(Self(counter))
    }

    /// One status write was held back.
    pub(crate) fn inc(&self) {
        self.0.inc();
    }
}
