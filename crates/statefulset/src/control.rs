//! upstream `UpdateStatefulSet` (stateful_set_control.go): resolve the
//! revisions, plan the pod actions with [`crate::decide::plan`], run its phases (in order, or in
//! slow-start batches for Parallel sets) and write the status, then truncate the history.
//!
//! kcm-rs only: when broken-rollout recovery is on for the set, the revisions equal in content
//! to the update revision are found here (where the revisions are listed) for the plan, and a
//! recovery deletion is counted in `statefulset_controller_broken_rollout_recoveries_total`.

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicI32, Ordering},
    },
    time::Duration,
};

use controller_toolkit::{
    controller_ref::{gvk_of, new_controller_ref},
    writes::{RetryOn, StatusRetry, slow_start},
};
use history::{apply_revision_to_statefulset, equal_revision, sort_controller_revisions};
use informer::{CachedPod, LabelMatcher};
use k8s_openapi::{
    api::{
        apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus},
        core::v1::PersistentVolumeClaim,
    },
    jiff::Timestamp,
};
use kube::ResourceExt;

use crate::{
    controller::{RawStatefulSet, StatefulSetSync, SyncError},
    decide::{
        PlanInput, PodAction, Revisions, complete_rolling_update, max_unavailable, plan,
        status_needs_write,
    },
    identity::claim_templates,
    pod_control::Outcome,
    revisions::{self, RevisionError, SetRevisions},
};

/// Default `revisionHistoryLimit` (the server defaults it; this covers objects without it).
const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
/// upstream `updateStatefulSetStatus`: retry-on-conflict, 5 attempts, each on a fresh read.
const STATUS_RETRY: StatusRetry = StatusRetry {
    attempts: 5,
    on: RetryOn::Conflict,
};

/// What `UpdateStatefulSet` hands back to the sync.
pub(crate) struct Updated {
    /// The status written (or that needed no write).
    pub(crate) status: StatefulSetStatus,
    /// kcm-rs only: when a stuck pod's recovery grace period ends.
    pub(crate) recovery_recheck: Option<Duration>,
}

/// Names of the revisions other than `update` whose data equals it: pods at them already run
/// the update template, so the broken-rollout recovery must not take them for stuck ones.
fn update_equivalents(
    sorted: &[Arc<ControllerRevision>],
    update: &ControllerRevision,
) -> Vec<String> {
    sorted
        .iter()
        .filter(|revision| revision.metadata.name != update.metadata.name)
        .filter(|revision| equal_revision(revision, update))
        .filter_map(|revision| revision.metadata.name.clone())
        .collect()
}

impl StatefulSetSync {
    /// upstream `UpdateStatefulSet`: revisions, pods, status, then history truncation
    /// whatever happened.
    pub(crate) async fn update_stateful_set(
        &self,
        set: &RawStatefulSet,
        selector: &LabelMatcher,
        pods: &[Arc<CachedPod>],
        now: Timestamp,
    ) -> Result<Updated, SyncError> {
        let key = informer::object_key(&set.object);
        let mut sorted = self.list_revisions(&set.object, selector);
        // A revision we created and the cache lacks would be created again (AlreadyExists).
        self.count_stale_skip(
            self.revisions_created
                .check(&key, sorted.iter().map(|revision| &revision.metadata)),
        )?;
        sort_controller_revisions(&mut sorted);
        let set_revisions = revisions::resolve(&self.writer, &self.semantic, set, &sorted).await?;
        let update_uid = set_revisions.update.metadata.uid.as_deref();
        if !sorted
            .iter()
            .any(|revision| revision.metadata.uid.as_deref() == update_uid)
        {
            self.revisions_created
                .record(&key, &set_revisions.update.metadata);
        }
        let recovery = self.recovery.grace_for(&set.object);
        let equivalents = if recovery.is_some() {
            update_equivalents(&sorted, &set_revisions.update)
        } else {
            Vec::new()
        };
        let result = self
            .perform_update(set, &set_revisions, pods, now, (recovery, &equivalents))
            .await;
        let history_limit = set
            .object
            .spec
            .as_ref()
            .and_then(|spec| spec.revision_history_limit)
            .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
        let truncated =
            revisions::truncate(&self.writer, &sorted, &set_revisions, pods, history_limit)
                .await
                .map_err(SyncError::Truncate);
        let status = result?;
        truncated?;
        Ok(status)
    }

    /// Step 3: pods per the plan, then the status (written even when a pod write failed).
    /// `recovery` is the set's broken-rollout grace (if on) and the update revision's
    /// equivalents.
    async fn perform_update(
        &self,
        set: &RawStatefulSet,
        set_revisions: &SetRevisions,
        pods: &[Arc<CachedPod>],
        now: Timestamp,
        recovery: (Option<Duration>, &[String]),
    ) -> Result<Updated, SyncError> {
        let current_set = apply_revision_to_statefulset(&set.object, &set_revisions.current)
            .map_err(RevisionError::from)?;
        let update_set = apply_revision_to_statefulset(&set.object, &set_revisions.update)
            .map_err(RevisionError::from)?;
        let namespace = set.object.metadata.namespace.as_deref().unwrap_or_default();
        // Claims matter only to sets with claim templates.
        let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> =
            if claim_templates(&set.object).is_empty() {
                BTreeMap::new()
            } else {
                self.claims
                    .in_namespace(namespace)
                    .into_iter()
                    .map(|claim| (claim.name_any(), claim))
                    .collect()
            };
        let controller_ref = new_controller_ref(&set.object, &gvk_of::<StatefulSet>());
        let plan = plan(&PlanInput {
            set: &set.object,
            revisions: Revisions {
                current: set_revisions
                    .current
                    .metadata
                    .name
                    .as_deref()
                    .unwrap_or_default(),
                update: set_revisions
                    .update
                    .metadata
                    .name
                    .as_deref()
                    .unwrap_or_default(),
                current_set: &current_set,
                update_set: &update_set,
            },
            collision_count: set_revisions.collision_count,
            pods,
            claims: &claims,
            controller_ref: &controller_ref,
            now,
            gates: self.gates,
            recovery: recovery.0,
            update_equivalents: recovery.1,
        });

        // Upstream reports both gauges only with MaxUnavailableStatefulSet on.
        if let (Some(metrics), Some(unavailable)) = (&self.metrics, plan.unavailable) {
            let policy = if plan.parallel {
                "Parallel"
            } else {
                "OrderedReady"
            };
            metrics.observe(
                namespace,
                set.object.metadata.name.as_deref().unwrap_or_default(),
                policy,
                i64::try_from(unavailable).unwrap_or(i64::MAX),
                i64::from(max_unavailable(&set.object)),
            );
        }
        let mut status = plan.status.clone();
        let mut pod_result = Ok(());
        for phase in &plan.phases {
            let (deleted_for_update, result) =
                self.run_phase(&set.object, phase, plan.parallel).await;
            if let Some(current) = status.current_replicas.as_mut() {
                *current -= deleted_for_update;
            }
            if result.is_err() {
                pod_result = result;
                break;
            }
        }
        complete_rolling_update(&set.object, &mut status);
        let status_result = self.update_status(&set.object, &status).await;
        match (pod_result, status_result) {
            (Err(error), status_result) => {
                if let Err(status_error) = status_result {
                    tracing::warn!(key = %informer::object_key(&set.object), error = %status_error, "status update failed after a pod error");
                }
                Err(error)
            }
            (Ok(()), Err(error)) => Err(SyncError::Status(error)),
            (Ok(()), Ok(())) => Ok(Updated {
                status,
                recovery_recheck: plan.recovery_recheck,
            }),
        }
    }

    /// upstream `runForAll`: in order, stopping at the first error (OrderedReady), or in
    /// slow-start batches, stopping after the first batch with errors (Parallel). Returns the
    /// number of pods deleted for update and the outcome.
    async fn run_phase(
        &self,
        set: &StatefulSet,
        actions: &[PodAction],
        parallel: bool,
    ) -> (i32, Result<(), SyncError>) {
        let mut deleted_for_update = 0;
        if !parallel {
            for action in actions {
                match self.pod_control.execute(set, action).await {
                    Ok(outcome) => deleted_for_update += self.lowers_current(set, action, outcome),
                    Err(error) => return (deleted_for_update, Err(error.into())),
                }
            }
            return (deleted_for_update, Ok(()));
        }
        let deleted = AtomicI32::new(0);
        let outcome = slow_start(actions.len(), |index| {
            let deleted = &deleted;
            async move {
                let action = &actions[index];
                let outcome = self.pod_control.execute(set, action).await?;
                deleted.fetch_add(self.lowers_current(set, action, outcome), Ordering::Relaxed);
                Ok(())
            }
        })
        .await;
        let deleted_for_update = deleted.into_inner();
        let mut errors = outcome.errors;
        let result = match errors.len() {
            0 => Ok(()),
            1 => Err(SyncError::Pods(errors.remove(0))),
            _ => Err(SyncError::PodBatch(errors)),
        };
        (deleted_for_update, result)
    }

    /// By how much a successfully executed action lowers `currentReplicas`: upstream's
    /// deletions for update, and a recovery of a pod the status counted as current. A recovery
    /// is also logged and counted here, once its delete succeeded.
    fn lowers_current(&self, set: &StatefulSet, action: &PodAction, outcome: Outcome) -> i32 {
        let PodAction::Recover(stuck) = action else {
            return i32::from(outcome == Outcome::DeletedForUpdate);
        };
        tracing::info!(
            key = %informer::object_key(set),
            pod = stuck.pod.metadata.name.as_deref().unwrap_or_default(),
            not_ready_for = ?stuck.not_ready_for,
            update_revision = %stuck.update_revision,
            "deleted a pod stuck at an outdated revision of a broken rollout"
        );
        if let Some(metrics) = &self.metrics {
            metrics.observe_recovery();
        }
        i32::from(stuck.counted_current)
    }

    /// write the status when a watched field changed, retrying conflicts with a fresh
    /// read of the set.
    async fn update_status(
        &self,
        set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), kube::Error> {
        if !status_needs_write(set.status.as_ref(), status) {
            return Ok(());
        }
        let written = self
            .writer
            .update_status_retrying(set, STATUS_RETRY, |current| {
                current.status = Some(status.clone());
            })
            .await?;
        self.written
            .record(&informer::object_key(set), &written.metadata);
        Ok(())
    }
}
