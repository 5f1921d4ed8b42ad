//! Which nodes run a daemon pod (upstream `NodeShouldRunDaemonPod`): `(shouldRun,
//! shouldContinueRunning)` for each node, judged on the pod the controller would create there
//! (`NewPod`: the template with the default tolerations).
//!
//! The node must only be *eligible*: conditions, `spec.unschedulable` and resources are left
//! to the scheduler. The two answers differ for taints: a node that gains a `NoSchedule` taint
//! gets no new pod but keeps its running one; only an untolerated `NoExecute` taint removes it.
//!
//! Upstream builds the probe pod for every node and every caller (manage, rolling update,
//! status); it depends only on the DaemonSet, so [`DaemonPodProbe`] builds it once and
//! [`node_fits`] evaluates the whole node list once per sync.

use informer::CachedNode;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{PodSpec, Taint};

use super::node_affinity::matches_required_node_affinity;
use super::spec::pod_template;
use super::template::add_or_update_daemon_pod_tolerations;
use super::tolerations::{NO_EXECUTE, NO_SCHEDULE, find_untolerated_taint};
use crate::FeatureGates;

/// Whether one node should run a daemon pod (`shouldRun`) and whether a daemon pod already on
/// it may stay (`shouldContinueRunning`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFit {
    /// The node's name.
    pub node: String,
    /// A daemon pod should run here: create one if there is none.
    pub should_run: bool,
    /// A daemon pod already here may keep running.
    pub should_continue_running: bool,
}

/// The pod upstream's `NewPod` builds to judge nodes with: the DaemonSet's pod spec with the
/// default daemon tolerations (its node name, set to each node in turn upstream, always
/// fits and is left out).
#[derive(Debug, Clone)]
pub struct DaemonPodProbe {
    /// `spec.template.spec.nodeName` of the DaemonSet: a pinned template fits one node only.
    template_node_name: String,
    /// The probe pod's spec.
    spec: PodSpec,
}

impl DaemonPodProbe {
    /// The probe pod of `daemon_set`.
    pub fn new(daemon_set: &DaemonSet) -> Self {
        let mut spec = pod_template(daemon_set)
            .and_then(|template| template.spec.clone())
            .unwrap_or_default();
        let template_node_name = spec.node_name.take().unwrap_or_default();
        add_or_update_daemon_pod_tolerations(&mut spec);
        Self {
            template_node_name,
            spec,
        }
    }

    /// `NodeShouldRunDaemonPod` for `node`.
    pub fn evaluate(&self, node: &CachedNode, gates: FeatureGates) -> NodeFit {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let (should_run, should_continue_running) = self.should_run(node, name, gates);
        NodeFit {
            node: name.to_owned(),
            should_run,
            should_continue_running,
        }
    }

    fn should_run(&self, node: &CachedNode, name: &str, gates: FeatureGates) -> (bool, bool) {
        // A template pinned to another node fits nowhere else.
        if !self.template_node_name.is_empty() && self.template_node_name != name {
            return (false, false);
        }
        if !matches_required_node_affinity(&self.spec, node) {
            return (false, false);
        }
        let taints = node.taints();
        let tolerations = self.spec.tolerations.as_deref().unwrap_or_default();
        let comparison = gates.taint_toleration_comparison_operators;
        let blocks_scheduling =
            |taint: &Taint| taint.effect == NO_SCHEDULE || taint.effect == NO_EXECUTE;
        if find_untolerated_taint(taints, tolerations, blocks_scheduling, comparison).is_none() {
            return (true, true);
        }
        // Scheduled daemon pods keep running unless a NoExecute taint is not tolerated.
        let evicts = |taint: &Taint| taint.effect == NO_EXECUTE;
        let untolerated_no_execute =
            find_untolerated_taint(taints, tolerations, evicts, comparison).is_some();
        (false, !untolerated_no_execute)
    }
}

/// `NodeShouldRunDaemonPod(node, ds)` for one node.
pub fn node_should_run_daemon_pod(
    node: &CachedNode,
    daemon_set: &DaemonSet,
    gates: FeatureGates,
) -> NodeFit {
    DaemonPodProbe::new(daemon_set).evaluate(node, gates)
}

/// `NodeShouldRunDaemonPod` for every node, in the order given (one probe pod for all).
pub fn node_fits<'a>(
    daemon_set: &DaemonSet,
    nodes: impl IntoIterator<Item = &'a CachedNode>,
    gates: FeatureGates,
) -> Vec<NodeFit> {
    let probe = DaemonPodProbe::new(daemon_set);
    nodes
        .into_iter()
        .map(|node| probe.evaluate(node, gates))
        .collect()
}

/// The node-update worker's test (upstream `syncNodeUpdate`, PR #132477): whether a node's
/// new labels or taints concern a DaemonSet, given the node's fit for it, whether the node
/// holds any of its pods (`scheduled`), and its `status.numberMisscheduled`. A pod is
/// needed, a pod must go, or the misscheduled count may have changed.
pub fn node_update_concerns(fit: &NodeFit, scheduled: bool, number_misscheduled: i32) -> bool {
    if scheduled {
        !fit.should_continue_running || number_misscheduled > 0
    } else {
        fit.should_run
    }
}

/// `shouldIgnoreNodeUpdate`: a node update matters only if its labels or taints changed
/// (absent and empty are the same, as Go's semantic equality has it).
pub fn node_update_is_ignored(old: &CachedNode, new: &CachedNode) -> bool {
    old.same_labels_and_taints(new)
}
