//! The rolling update (upstream update.go `rollingUpdate`, `updatedDesiredNodeCounts`,
//! `findUpdatedPodsOnNode`, and `util.IsPodUpdated`): which old pods to delete and which
//! nodes to surge a new pod onto, within `maxUnavailable` or `maxSurge`.
//!
//! Without surge, old pods are only deleted; `manage` creates their replacements on a later
//! sync. With surge, a new pod starts beside the old one, which `manage` deletes once the new
//! one is available. `OnDelete` (or any strategy but `RollingUpdate`) updates nothing: old
//! pods stay until someone else deletes them.

use std::sync::Arc;

use controller_toolkit::{pod_key, pod_predicates::is_pod_available};
use informer::CachedPod;

use super::budget::{IntOrPercentError, surge_count, unavailable_count};
use super::node_fit::NodeFit;
use super::spec::{is_rolling_update, min_ready_seconds, template_generation};
use super::template::{DAEMONSET_REVISION_HASH_LABEL, POD_TEMPLATE_GENERATION_LABEL};
use super::{NodesToPods, SyncInput};

/// Why the rolling update could not be planned; the messages are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RollingUpdateError {
    /// `maxUnavailable` does not resolve.
    #[error("couldn't get unavailable numbers: invalid value for MaxUnavailable: {0}")]
    InvalidMaxUnavailable(IntOrPercentError),
    /// `maxSurge` does not resolve.
    #[error("couldn't get unavailable numbers: invalid value for MaxSurge: {0}")]
    InvalidMaxSurge(IntOrPercentError),
    /// A node holding pods of the DaemonSet is not in the node list.
    #[error("couldn't get node for nodeName {0:?}: node {0:?} not found")]
    NodeNotFound(String),
}

/// What the rolling update hands to `syncNodes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollingUpdatePlan {
    /// Nodes to create a new pod on beside the old one (surge only).
    pub create_on_nodes: Vec<String>,
    /// Keys (`namespace/name`) of the old pods to delete.
    pub delete_pods: Vec<String>,
}

/// `util.IsPodUpdated`: the pod carries the current hash (when there is one) or the
/// DaemonSet's template generation (when it has one). The generation keeps pods current across
/// a hash change that is not a template change.
pub fn is_pod_updated(pod: &CachedPod, hash: &str, generation: Option<i64>) -> bool {
    let labels = &pod.metadata.labels;
    let hash_matches = !hash.is_empty() && labels.get(DAEMONSET_REVISION_HASH_LABEL) == Some(hash);
    let generation_matches = generation.is_some_and(|generation| {
        labels.get(POD_TEMPLATE_GENERATION_LABEL) == Some(generation.to_string().as_str())
    });
    hash_matches || generation_matches
}

/// The budget of one rolling update (`updatedDesiredNodeCounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DesiredNodeCounts {
    /// New pods that may run beside old ones.
    pub max_surge: i64,
    /// Nodes that may be without an available pod.
    pub max_unavailable: i64,
    /// Nodes that should run a pod.
    pub desired_number_scheduled: i64,
}

/// `updatedDesiredNodeCounts`: counts the nodes that should run a pod, adds an empty entry to
/// `nodes_to_pods` for those without one, and resolves `maxSurge` and `maxUnavailable`
/// against that count (both rounded up). Both 0 with nodes to run on becomes one unavailable,
/// so the update can move.
pub fn updated_desired_node_counts(
    input: &SyncInput<'_>,
    nodes_to_pods: &mut NodesToPods,
) -> Result<DesiredNodeCounts, RollingUpdateError> {
    let mut desired: i64 = 0;
    for fit in input.fits.iter().filter(|fit| fit.should_run) {
        desired += 1;
        nodes_to_pods.entry(fit.node.clone()).or_default();
    }
    let mut max_unavailable = unavailable_count(input.daemon_set, desired)
        .map_err(RollingUpdateError::InvalidMaxUnavailable)?;
    let max_surge =
        surge_count(input.daemon_set, desired).map_err(RollingUpdateError::InvalidMaxSurge)?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    Ok(DesiredNodeCounts {
        max_surge,
        max_unavailable,
        desired_number_scheduled: desired,
    })
}

/// The up-to-date and the old pod of a node.
type UpdatedAndOld<'a> = (Option<&'a Arc<CachedPod>>, Option<&'a Arc<CachedPod>>);

/// `findUpdatedPodsOnNode`: among the pods not being deleted, the one up to date and the one
/// not; `None` when there are two of either kind (`manage` prunes the node first).
pub fn find_updated_pods_on_node<'a>(
    pods: &'a [Arc<CachedPod>],
    hash: &str,
    generation: Option<i64>,
) -> Option<UpdatedAndOld<'a>> {
    let (mut updated, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_pod_updated(pod, hash, generation) {
            &mut updated
        } else {
            &mut old
        };
        if slot.replace(pod).is_some() {
            return None;
        }
    }
    Some((updated, old))
}

/// `rollingUpdate` for a `RollingUpdate` DaemonSet; nothing for any other strategy. The
/// result goes to [`super::slow_start::SyncNodesPlan::new`].
pub fn rolling_update(input: &SyncInput<'_>) -> Result<RollingUpdatePlan, RollingUpdateError> {
    if !is_rolling_update(input.daemon_set) {
        return Ok(RollingUpdatePlan::default());
    }
    let mut nodes_to_pods = input.nodes_to_pods.clone();
    let counts = updated_desired_node_counts(input, &mut nodes_to_pods)?;
    let walk = Walk {
        input,
        nodes_to_pods: &nodes_to_pods,
        generation: template_generation(input.daemon_set),
        min_ready_seconds: min_ready_seconds(input.daemon_set),
    };
    if counts.max_surge == 0 {
        Ok(walk.without_surge(counts.max_unavailable))
    } else {
        walk.with_surge(counts)
    }
}

/// One pass over the nodes and their pods (empty entries included).
struct Walk<'a> {
    input: &'a SyncInput<'a>,
    nodes_to_pods: &'a NodesToPods,
    generation: Option<i64>,
    min_ready_seconds: i32,
}

fn budget_left(limit: i64, used: i64, candidates: usize) -> usize {
    usize::try_from(limit.saturating_sub(used).max(0))
        .unwrap_or(usize::MAX)
        .min(candidates)
}

impl Walk<'_> {
    fn available(&self, pod: &CachedPod) -> bool {
        is_pod_available(pod, self.min_ready_seconds, self.input.now)
    }

    fn pods_by_node(&self) -> impl Iterator<Item = (&String, Option<UpdatedAndOld<'_>>)> {
        self.nodes_to_pods.iter().map(|(node, pods)| {
            let found = find_updated_pods_on_node(pods, self.input.hash, self.generation);
            (node, found)
        })
    }

    fn fit(&self, node: &str) -> Result<&NodeFit, RollingUpdateError> {
        self.input
            .fits
            .iter()
            .find(|fit| fit.node == node)
            .ok_or_else(|| RollingUpdateError::NodeNotFound(node.to_owned()))
    }

    /// `maxSurge == 0`: delete old pods while at most `maxUnavailable` nodes are without an
    /// available pod; unavailable old pods are replaced regardless. A node with surplus pods,
    /// with no pod, or with both an old and a new one counts as unavailable.
    fn without_surge(&self, max_unavailable: i64) -> RollingUpdatePlan {
        let mut num_unavailable: i64 = 0;
        let mut allowed_replacements = Vec::new();
        let mut candidates = Vec::new();
        for (_, found) in self.pods_by_node() {
            match found {
                None | Some((None, None) | (Some(_), Some(_))) => num_unavailable += 1,
                Some((Some(updated), None)) => {
                    if !self.available(updated) {
                        num_unavailable += 1;
                    }
                }
                Some((None, Some(old))) => {
                    if !self.available(old) {
                        allowed_replacements.push(pod_key(old));
                        num_unavailable += 1;
                    } else if num_unavailable < max_unavailable {
                        candidates.push(pod_key(old));
                    }
                }
            }
        }
        let take = budget_left(max_unavailable, num_unavailable, candidates.len());
        allowed_replacements.extend(candidates.into_iter().take(take));
        RollingUpdatePlan {
            create_on_nodes: Vec::new(),
            delete_pods: allowed_replacements,
        }
    }

    /// `maxSurge > 0`: create a new pod beside each unavailable old one, and beside up to
    /// `maxSurge` (minus the new pods not yet available) available ones; delete an old pod
    /// once its new one is available. Old pods on nodes that should no longer run one are
    /// deleted at once when unavailable, and only while more pods are available than nodes
    /// want when available (availability is kept when the placement moves).
    fn with_surge(
        &self,
        counts: DesiredNodeCounts,
    ) -> Result<RollingUpdatePlan, RollingUpdateError> {
        let mut delete_pods = Vec::new();
        let mut should_not_run = Vec::new();
        let mut candidate_nodes = Vec::new();
        let mut allowed_nodes = Vec::new();
        let (mut num_surge, mut num_available): (i64, i64) = (0, 0);
        for (node, found) in self.pods_by_node() {
            let Some((updated, old)) = found else {
                num_surge += 1;
                continue;
            };
            // Availability counts every node, those being left included.
            if old.or(updated).is_some_and(|pod| self.available(pod)) {
                num_available += 1;
            }
            match (updated, old) {
                (_, None) => {}
                (None, Some(old)) => {
                    let should_run = self.fit(node)?.should_run;
                    if !self.available(old) {
                        if should_run {
                            allowed_nodes.push(node.clone());
                        } else {
                            delete_pods.push(pod_key(old));
                        }
                    } else if !should_run {
                        should_not_run.push(pod_key(old));
                    } else if num_surge < counts.max_surge {
                        candidate_nodes.push(node.clone());
                    }
                }
                (Some(updated), Some(old)) => {
                    if self.available(updated) {
                        delete_pods.push(pod_key(old));
                    } else {
                        num_surge += 1;
                    }
                }
            }
        }
        let deletable = budget_left(
            num_available,
            counts.desired_number_scheduled,
            should_not_run.len(),
        );
        delete_pods.extend(should_not_run.into_iter().take(deletable));
        let take = budget_left(counts.max_surge, num_surge, candidate_nodes.len());
        allowed_nodes.extend(candidate_nodes.into_iter().take(take));
        Ok(RollingUpdatePlan {
            create_on_nodes: allowed_nodes,
            delete_pods,
        })
    }
}
