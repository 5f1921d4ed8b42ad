//! Nodes and the DaemonSets they concern (upstream v1.36's `addNode`, `updateNode` and the
//! `daemonset-node-updates` worker `syncNodeUpdate`).
//!
//! Why a queue of node names: a node change concerns only the DaemonSets whose answer for that
//! node changes, and finding them means judging the node against every DaemonSet. Upstream
//! moved that work off the informer's handler onto a second queue with its own workers; a
//! node's heartbeats (status-only updates, every 10 s per node) never reach it, since only a
//! change of labels or taints can change an answer.
//!
//! kcm-rs adds a delete handler (upstream has none): a deleted node enqueues the DaemonSets
//! with pods there, so the pods pinned to it but never bound (which the pod garbage collector
//! leaves alone) are deleted and the status counts it no more, without waiting for another
//! event.

use std::{collections::HashSet, sync::Arc};

use controller_toolkit::controller_ref::controller_of;
use informer::{CachedNode, CachedPod, DeletedObject, EventHandler, Lister, object_key};
use workqueue::RateLimitingQueue;

use crate::{
    controller::{DaemonSetSync, RawDaemonSet},
    decide::node_fit::{node_should_run_daemon_pod, node_update_concerns, node_update_is_ignored},
};

/// The pod index by the node a DaemonSet's pod is for: upstream indexes pods by
/// `spec.nodeName`; this one holds only pods a DaemonSet controls, bound or still pinned.
pub(crate) const DAEMON_POD_NODE_INDEX: &str = "daemonPodNode";

/// The kind of the owners whose pods [`DAEMON_POD_NODE_INDEX`] holds.
const DAEMON_SET_KIND: &str = "DaemonSet";

/// Index function of [`DAEMON_POD_NODE_INDEX`]: the node a pod controlled by a DaemonSet is
/// for (`CachedPod::target_node_name`); nothing for other pods.
pub(crate) fn daemon_pod_node_index(pod: &CachedPod) -> Vec<String> {
    let controlled_by_a_daemon_set =
        controller_of(&pod.metadata).is_some_and(|owner| owner.kind == DAEMON_SET_KIND);
    match pod.target_node_name() {
        Some(node) if controlled_by_a_daemon_set => vec![node.to_owned()],
        _ => Vec::new(),
    }
}

/// The node informer's handler.
pub(crate) struct NodeEvents {
    /// The `daemonset-node-updates` queue.
    pub(crate) node_queue: RateLimitingQueue<String>,
    /// The DaemonSet queue (for deleted nodes).
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) daemon_sets: Lister<RawDaemonSet>,
    pub(crate) pods: Lister<CachedPod>,
}

impl EventHandler<CachedNode> for NodeEvents {
    /// `addNode`: the node's name goes on the node-update queue.
    fn on_add(&self, node: &Arc<CachedNode>, _is_in_initial_list: bool) {
        self.node_queue.add(object_key(node.as_ref()));
    }

    /// `updateNode`: only a change of labels or taints goes on the node-update queue.
    fn on_update(&self, old: &Arc<CachedNode>, new: &Arc<CachedNode>) {
        if !node_update_is_ignored(old, new) {
            self.node_queue.add(object_key(new.as_ref()));
        }
    }

    /// kcm-rs only: the DaemonSets with pods on a deleted node.
    fn on_delete(&self, node: &DeletedObject<CachedNode>) {
        let mut enqueued = HashSet::new();
        for pod in self.pods.by_index(DAEMON_POD_NODE_INDEX, &node.key()) {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            let owner = controller_of(&pod.metadata)
                .and_then(|owner| self.daemon_sets.resolve_controller_ref(namespace, owner));
            if let Some(owner) = owner {
                let key = object_key(owner.as_ref());
                if enqueued.insert(key.clone()) {
                    self.queue.add(key);
                }
            }
        }
    }
}

impl DaemonSetSync {
    /// upstream `syncNodeUpdate`: for every DaemonSet, whether the node as it is now concerns
    /// it ([`node_update_concerns`]: it should run a pod and has none there, its pod there must
    /// go, or it counts misscheduled pods); those are enqueued. A node no longer cached is
    /// done with. The DaemonSets with a pod there are read from the pod index, by the owner's
    /// namespace and name (no UID check, any phase), as upstream groups them.
    pub(crate) fn sync_node_update(&self, node_name: &str) {
        let Some(node) = self.nodes.get("", node_name) else {
            return;
        };
        let scheduled: HashSet<String> = self
            .pods
            .by_index(DAEMON_POD_NODE_INDEX, node_name)
            .iter()
            .filter_map(|pod| {
                let owner = controller_of(&pod.metadata)?;
                let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
                Some(format!("{namespace}/{}", owner.name))
            })
            .collect();
        for ds in self.daemon_sets.in_namespace("") {
            let key = object_key(ds.as_ref());
            let fit = node_should_run_daemon_pod(&node, &ds.object, self.gates);
            let misscheduled = ds
                .object
                .status
                .as_ref()
                .map_or(0, |status| status.number_misscheduled);
            if node_update_concerns(&fit, scheduled.contains(&key), misscheduled) {
                self.queue.add(key);
            }
        }
    }
}
