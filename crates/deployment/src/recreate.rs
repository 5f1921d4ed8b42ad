//! Recreate planning: every old pod is gone before the new ReplicaSet is scaled up.

use informer::{CachedDeployment, CachedPod, CachedReplicaSet};

use crate::progress::deployment_complete_per_stored_status;
use crate::replica_set::{active, deployment_replicas, sum_status_replicas};
use crate::scaling::{ScaleAction, scale_and_record};

/// One Recreate sync, after getAllReplicaSetsAndSyncRevision *without* create.
///
/// Contract for the caller: apply actions in order; an API error is the sync's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecreatePlan {
    /// Scale these active old ReplicaSets to 0, then syncRolloutStatus and stop.
    ScaleDownOld(Vec<ScaleAction>),
    /// Old pods are still running: syncRolloutStatus and stop.
    WaitForOldPods,
    /// No new ReplicaSet yet: run getAllReplicaSetsAndSyncRevision *with* create (the ReplicaSet is created at
    /// `spec.replicas`), then continue with [`plan_recreate_scale_up`] on it.
    CreateNewReplicaSet,
    /// Old pods are gone and the new ReplicaSet exists: see [`RecreateScaleUp`].
    ScaleUp(RecreateScaleUp),
}

/// The final part of a Recreate sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecreateScaleUp {
    /// Resize of the new ReplicaSet to `spec.replicas`, if it is not there.
    pub scale: Option<ScaleAction>,
    /// Whether cleanupDeployment runs afterwards (complete per stored status); then
    /// syncRolloutStatus.
    pub cleanup: bool,
}

/// The UID of the pod's controller owner, if any.
fn controller_uid(pod: &CachedPod) -> Option<&str> {
    pod.metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|reference| reference.controller == Some(true))
        .map(|reference| reference.uid.as_str())
}

/// oldPodsRunning: old ReplicaSets still report pods, or a pod of the pod map
/// not controlled by the new ReplicaSet is in a phase other than Failed/Succeeded.
/// `pods` is the pod map: pods controlled by the Deployment's claimed ReplicaSets.
pub fn old_pods_running(
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
    pods: &[&CachedPod],
) -> bool {
    if sum_status_replicas(old.iter().copied()) > 0 {
        return true;
    }
    let new_uid = new_rs.and_then(|rs| rs.metadata.uid.as_deref());
    pods.iter()
        .filter(|pod| new_uid.is_none() || controller_uid(pod) != new_uid)
        .any(|pod| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            !matches!(phase, Some("Failed") | Some("Succeeded"))
        })
}

/// rolloutRecreate up to the point where the new ReplicaSet is needed.
pub fn plan_recreate(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
    pods: &[&CachedPod],
) -> RecreatePlan {
    let scale_down: Vec<ScaleAction> = active(old.iter().copied())
        .into_iter()
        .filter_map(|rs| scale_and_record(rs, 0))
        .collect();
    if !scale_down.is_empty() {
        return RecreatePlan::ScaleDownOld(scale_down);
    }
    if old_pods_running(new_rs, old, pods) {
        return RecreatePlan::WaitForOldPods;
    }
    match new_rs {
        None => RecreatePlan::CreateNewReplicaSet,
        Some(new_rs) => RecreatePlan::ScaleUp(plan_recreate_scale_up(d, new_rs)),
    }
}

/// The end of rolloutRecreate (scaleUpNewReplicaSetForRecreate, then cleanupDeployment): scale
/// the new ReplicaSet to `spec.replicas`; cleanup if complete per the stored status.
pub fn plan_recreate_scale_up(d: &CachedDeployment, new_rs: &CachedReplicaSet) -> RecreateScaleUp {
    RecreateScaleUp {
        scale: scale_and_record(new_rs, deployment_replicas(d)),
        cleanup: deployment_complete_per_stored_status(d),
    }
}

#[cfg(test)]
mod tests {
    use informer::CachedPodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;
    use crate::replica_set::test_support::{recreate, rs};

    fn pod(owner_uid: &str, phase: &str) -> CachedPod {
        let mut p = CachedPod::default();
        p.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".to_owned(),
            kind: "ReplicaSet".to_owned(),
            name: "x".to_owned(),
            uid: owner_uid.to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        let mut status = CachedPodStatus::default();
        status.phase = Some(phase.into());
        p.status = Some(status);
        p
    }

    #[test]
    fn recreate_steps_table() {
        let d = recreate(3);
        let running_old = rs("old", 0, 2, 2);
        let drained_old = rs("old", 0, 0, 0);
        let new_rs = rs("new", 10, 0, 0);
        let full_new = rs("new", 10, 3, 3);
        let old_pod_running = pod("old-uid", "Running");
        let old_pod_done = pod("old-uid", "Succeeded");
        let new_pod = pod("new-uid", "Pending");

        match plan_recreate(&d, Some(&new_rs), &[&running_old], &[]) {
            RecreatePlan::ScaleDownOld(actions) => {
                assert_eq!(
                    actions
                        .iter()
                        .map(|a| (a.replica_set.as_str(), a.to))
                        .collect::<Vec<_>>(),
                    [("old", 0)]
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            plan_recreate(&d, Some(&new_rs), &[&drained_old], &[&old_pod_running]),
            RecreatePlan::WaitForOldPods
        );
        // A pod of the new RS does not block; finished old pods do not either.
        let plan = plan_recreate(
            &d,
            Some(&new_rs),
            &[&drained_old],
            &[&old_pod_done, &new_pod],
        );
        match plan {
            RecreatePlan::ScaleUp(up) => {
                assert_eq!(up.scale.map(|a| a.to), Some(3));
                assert!(!up.cleanup);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            plan_recreate(&d, None, &[&drained_old], &[&old_pod_done]),
            RecreatePlan::CreateNewReplicaSet
        );
        // Without a new RS every pod of the map counts as old.
        assert_eq!(
            plan_recreate(&d, None, &[&drained_old], &[&new_pod]),
            RecreatePlan::WaitForOldPods
        );
        assert_eq!(
            plan_recreate(&d, Some(&full_new), &[&drained_old], &[]),
            RecreatePlan::ScaleUp(RecreateScaleUp {
                scale: None,
                cleanup: false
            })
        );
    }

    #[test]
    fn status_replicas_of_old_block_scale_up() {
        let d = recreate(3);
        let mut terminating = rs("old", 0, 0, 0);
        if let Some(s) = terminating.status.as_mut() {
            s.replicas = 1;
        }
        assert_eq!(
            plan_recreate(&d, None, &[&terminating], &[]),
            RecreatePlan::WaitForOldPods
        );
    }
}
