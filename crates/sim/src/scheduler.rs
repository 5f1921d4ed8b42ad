//! The scheduler's view of the nodes, kept by the store as Node and Pod objects are written:
//! each node's scheduling fields, how many pods are bound to it, the nodes ordered by that
//! count, and the pods whose Ready transition waits for their node to be Ready again.
//!
//! Why in the store: the index changes within the write that changes a node or binds a pod,
//! under the same lock, so the kubelet never places a pod from a stale picture, and picking a
//! node for an ordinary pod costs a walk from the least loaded node rather than a look at
//! every node (5,000 of them in the DaemonSet benchmark).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::fit::{Misfit, NodeView, PodNeeds, fit, unschedulable_message};
use crate::store::ObjectKey;

/// One node as the scheduler sees it.
#[derive(Debug)]
struct NodeEntry {
    view: NodeView,
    /// Pods (key, uid) due to become Ready while the node was NotReady.
    held: Vec<(ObjectKey, Box<str>)>,
}

/// The nodes, their load, and the pods waiting for their node's readiness.
#[derive(Debug, Default)]
pub(crate) struct NodeIndex {
    nodes: BTreeMap<String, NodeEntry>,
    /// Pods bound per node name (also for names no node has, e.g. a deleted node's).
    pods: HashMap<String, usize>,
    /// Existing nodes by (bound pods, name): the spread order.
    by_load: BTreeSet<(usize, String)>,
}

impl NodeIndex {
    /// Records node `name` as written; true when it is new or its scheduling view changed.
    pub fn observe(&mut self, name: &str, view: NodeView) -> bool {
        match self.nodes.get_mut(name) {
            Some(entry) if entry.view == view => false,
            Some(entry) => {
                entry.view = view;
                true
            }
            None => {
                let load = self.load(name);
                self.by_load.insert((load, name.to_string()));
                self.nodes.insert(
                    name.to_string(),
                    NodeEntry {
                        view,
                        held: Vec::new(),
                    },
                );
                true
            }
        }
    }

    /// Forgets a removed node (its pods stay counted under its name).
    pub fn forget(&mut self, name: &str) {
        if self.nodes.remove(name).is_some() {
            let load = self.load(name);
            self.by_load.remove(&(load, name.to_string()));
        }
    }

    fn load(&self, name: &str) -> usize {
        self.pods.get(name).copied().unwrap_or(0)
    }

    /// Moves node `name` in the spread order from `old` to `new` bound pods.
    fn reorder(&mut self, name: &str, old: usize, new: usize) {
        if self.nodes.contains_key(name) {
            self.by_load.remove(&(old, name.to_string()));
            self.by_load.insert((new, name.to_string()));
        }
    }

    /// A pod bound to `name` was stored.
    pub fn pod_bound(&mut self, name: &str) {
        let old = self.load(name);
        self.pods.insert(name.to_string(), old + 1);
        self.reorder(name, old, old + 1);
    }

    /// A pod bound to `name` was replaced or removed.
    pub fn pod_unbound(&mut self, name: &str) {
        let old = self.load(name);
        if old <= 1 {
            self.pods.remove(name);
        } else {
            self.pods.insert(name.to_string(), old - 1);
        }
        self.reorder(name, old, old.saturating_sub(1));
    }

    /// The scheduling view of node `name`, if it exists.
    pub fn view(&self, name: &str) -> Option<&NodeView> {
        self.nodes.get(name).map(|e| &e.view)
    }

    /// Whether node `name` exists and is Ready.
    pub fn is_ready(&self, name: &str) -> bool {
        self.view(name).is_some_and(|v| v.ready)
    }

    /// How many pods are bound to `name`.
    #[cfg(test)]
    pub fn bound(&self, name: &str) -> usize {
        self.load(name)
    }

    /// Keeps a pod that is due to be Ready until node `name` is Ready.
    pub fn hold(&mut self, name: &str, key: &ObjectKey, uid: &str) {
        if let Some(entry) = self.nodes.get_mut(name) {
            entry.held.push((key.clone(), uid.into()));
        }
    }

    /// The pods held for node `name`, released.
    pub fn release(&mut self, name: &str) -> Vec<(ObjectKey, Box<str>)> {
        self.nodes
            .get_mut(name)
            .map(|e| std::mem::take(&mut e.held))
            .unwrap_or_default()
    }

    /// The node a pod goes to: among the nodes it fits, the one with the fewest bound pods
    /// (ties to the first name). Otherwise the `PodScheduled=False` message saying why no node
    /// fits.
    pub fn pick(&self, pod: &PodNeeds) -> Result<String, String> {
        if let Some(names) = pod.pinned_names() {
            let best = names
                .into_iter()
                .filter_map(|name| self.nodes.get_key_value(name))
                .filter(|(name, entry)| fit(pod, name, &entry.view).is_ok())
                .min_by_key(|(name, _)| (self.load(name), name.as_str()));
            if let Some((name, _)) = best {
                return Ok(name.clone());
            }
        } else {
            let best = self.by_load.iter().find(|(_, name)| {
                self.nodes
                    .get(name)
                    .is_some_and(|e| fit(pod, name, &e.view).is_ok())
            });
            if let Some((_, name)) = best {
                return Ok(name.clone());
            }
        }
        let misfits: Vec<Misfit> = self
            .nodes
            .iter()
            .filter_map(|(name, e)| fit(pod, name, &e.view).err())
            .collect();
        Err(unschedulable_message(self.nodes.len(), &misfits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::NodeTaint;
    use serde_json::json;

    fn ready_node(zone: &str) -> NodeView {
        NodeView {
            labels: [("zone".to_string(), zone.to_string())].into(),
            ready: true,
            ..NodeView::default()
        }
    }

    fn pod(spec: serde_json::Value) -> PodNeeds {
        PodNeeds::of(&json!({ "spec": spec }))
    }

    #[test]
    fn picks_the_least_loaded_fitting_node() {
        let mut index = NodeIndex::default();
        assert_eq!(
            index.pick(&pod(json!({}))),
            Err("no nodes available to schedule pods".to_string())
        );
        for (name, zone) in [("n1", "a"), ("n2", "a"), ("n3", "b")] {
            assert!(index.observe(name, ready_node(zone)));
        }
        assert!(!index.observe("n1", ready_node("a")), "unchanged view");
        let any = pod(json!({}));
        let mut picked = Vec::new();
        for _ in 0..4 {
            let name = index.pick(&any).unwrap();
            index.pod_bound(&name);
            picked.push(name);
        }
        assert_eq!(picked, vec!["n1", "n2", "n3", "n1"]);
        let zone_b = pod(json!({"nodeSelector": {"zone": "b"}}));
        assert_eq!(index.pick(&zone_b).unwrap(), "n3");
        index.pod_unbound("n2");
        assert_eq!(index.bound("n2"), 0);
        assert_eq!(index.pick(&any).unwrap(), "n2");
        let pinned = pod(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gone"]}]}
            ]}}}}),
        );
        assert_eq!(index.pick(&pinned).unwrap(), "n1");
        let zone_c = pod(json!({"nodeSelector": {"zone": "c"}}));
        assert_eq!(
            index.pick(&zone_c),
            Err(
                "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
                    .to_string()
            )
        );
    }

    #[test]
    fn counts_survive_node_changes() {
        let mut index = NodeIndex::default();
        index.pod_bound("later");
        index.pod_bound("later");
        index.observe("other", ready_node("a"));
        index.observe("later", ready_node("a"));
        assert_eq!(index.pick(&pod(json!({}))).unwrap(), "other");
        let tainted = NodeView {
            taints: vec![NodeTaint::new("k", "v", "NoExecute")],
            ..ready_node("a")
        };
        assert!(index.observe("other", tainted));
        assert_eq!(index.pick(&pod(json!({}))).unwrap(), "later");
        index.forget("later");
        assert_eq!(
            index.pick(&pod(json!({}))),
            Err("0/1 nodes are available: 1 node(s) had untolerated taint {k: v}.".to_string())
        );
        let key = ("default".to_string(), "p".to_string());
        index.hold("other", &key, "u");
        index.hold("later", &key, "u");
        assert_eq!(index.release("other").len(), 1);
        assert!(index.release("other").is_empty());
        assert!(index.release("later").is_empty());
    }
}
