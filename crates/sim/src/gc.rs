//! The delayed garbage collector: collects the dependents of a removed owner a moment after
//! the owner went, one level of ownership per delay.
//!
//! Why: upstream's garbage collector is a controller of its own that learns of a deleted owner
//! from its watch and only then deletes the dependents, so every other client sees a deleted
//! Deployment go before its ReplicaSets, and those before their pods. Collecting within the
//! owner's delete request instead lets a client's separate watches deliver a pod's deletion
//! before its ReplicaSet's, and a ReplicaSet controller then replaces pods no real cluster
//! would make it replace. With `SimConfig::gc_delay` zero, collection stays immediate.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;

use crate::server::{Shared, next_before_shutdown};

/// Runs the collector until the cluster shuts down: each removed owner's dependents are
/// collected `delay` after its removal.
pub(crate) async fn run(
    shared: Arc<Shared>,
    delay: Duration,
    mut removed_owners: UnboundedReceiver<Box<str>>,
) {
    let mut stop = shared.shutdown.subscribe();
    loop {
        let Some(owner_uid) = next_before_shutdown(&mut removed_owners, &mut stop).await else {
            return;
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            shared.state.write().collect_dependents(&owner_uid);
        });
    }
}
