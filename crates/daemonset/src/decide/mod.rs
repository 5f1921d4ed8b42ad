//! The pure heart of the DaemonSet controller: given the DaemonSet, the nodes, the claimed
//! pods and the revisions, which pods to create (by node) and delete (by key), which events to
//! record, which revision writes to make, and the status that results. Nothing here does I/O;
//! every function takes plain data (k8s-openapi objects, the informer's [`CachedPod`]s and
//! `CachedNode`s, slices, an explicit `now`) and returns plain data, so one executor can carry the plans out
//! and every rule is table-tested without a server.
//!
//! The modules follow upstream's files and functions, one job each:
//! * [`node_fit`] (`NodeShouldRunDaemonPod`): which nodes should run a daemon pod, and on
//!   which an existing one may keep running; built on [`node_affinity`] (required node
//!   affinity) and [`tolerations`] (taints against tolerations).
//! * [`template`] (`util.CreatePodTemplate`, `AddOrUpdateDaemonPodTolerations`,
//!   `ReplaceDaemonSetPodNodeNameNodeAffinity`): the pod a node gets.
//! * [`nodes_to_pods`] (`getNodesToDaemonPods`, `podsShouldBeOnNode`, `manage`): the pods of
//!   each node and what to create and delete, with the failed-pod [`backoff`].
//! * [`slow_start`] (`syncNodes`): the burst cap, the expectations and the create batches.
//! * [`rolling_update`] (`rollingUpdate`, update.go) with [`budget`] (`SurgeCount`,
//!   `UnavailableCount`).
//! * [`status`] (`updateDaemonSetStatus`, `storeDaemonSetStatus`).
//! * [`revision`] (`constructHistory`, `snapshot`, `getPatch`, `dedupCurHistories`,
//!   `cleanupHistory`).
//! * [`spec`] reads the DaemonSet's fields as upstream defaults them; [`events`] holds the
//!   events with upstream's reasons and messages.
//!
//! Upstream iterates Go maps and lister results in no fixed order ("any order is
//! acceptable", spec section 7); here the nodes go in the order given and the node-to-pods map
//! is ordered by node name, so every plan is deterministic.

use std::{collections::BTreeMap, sync::Arc};

use informer::CachedPod;
use k8s_openapi::{api::apps::v1::DaemonSet, jiff::Timestamp};

pub mod backoff;
pub mod budget;
pub mod events;
pub mod node_affinity;
pub mod node_fit;
pub mod nodes_to_pods;
pub mod revision;
pub mod rolling_update;
pub mod slow_start;
pub mod spec;
pub mod status;
pub mod template;
pub mod tolerations;

/// The claimed pods of a DaemonSet grouped by the node each is for (upstream
/// `getNodesToDaemonPods`), ordered by node name. A node with an entry but no pods is one
/// the rolling update added as wanting a pod (`updatedDesiredNodeCounts`).
pub type NodesToPods = BTreeMap<String, Vec<Arc<CachedPod>>>;

/// What the decisions of one sync read (`manage`, `rollingUpdate`, the status), gathered once.
#[derive(Debug, Clone, Copy)]
pub struct SyncInput<'a> {
    /// The DaemonSet as cached.
    pub daemon_set: &'a DaemonSet,
    /// [`node_fit::node_fits`] of every node in the node list, in the list's order.
    pub fits: &'a [node_fit::NodeFit],
    /// [`nodes_to_pods::nodes_to_daemon_pods`] without the deleted terminal pods.
    pub nodes_to_pods: &'a NodesToPods,
    /// The current revision's hash (pods labelled with it are up to date).
    pub hash: &'a str,
    /// The backoff clock: failed-pod backoff and pod availability are judged at it.
    pub now: Timestamp,
}

#[cfg(test)]
mod tests;
