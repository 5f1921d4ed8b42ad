//! The Deployment controller: construction, workers, and `sync_deployment`, which follows
//! upstream's `syncDeployment` step by step (spec §3) and applies the plans of the pure
//! modules: every decision is made there, this file only reads the caches, writes through the
//! API in the order each plan's contract prescribes, records events and requeues.

use std::{collections::HashMap, sync::Arc};

use controller_toolkit::{
    api_errors::{NAMESPACE_TERMINATING_CAUSE, error_message, has_status_cause, is_already_exists},
    controller_ref::{ClaimErrors, ControllerRefManager, recheck_deletion},
    events::{EventRecorder, EventType, RecorderConfig},
};
use informer::{
    CONTROLLER_UID_INDEX, CachedDeployment, CachedPod, CachedReplicaSet, HandlerRegistration,
    Lister, POD_CONTROLLER_UID_INDEX, SharedInformerFactory, controller_index, orphan_index_key,
    owner_index_key, pod_controller_index, split_key, wait_for_named_cache_sync,
};
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Client, Resource, ResourceExt, api::GroupVersionKind, core::Selector};
use tokio_util::sync::CancellationToken;
use workqueue::{
    ControllerMetrics, QueueConfig, RateLimitingQueue, SyncFailure, SyncMetrics, WorkerPool,
};

use crate::{
    cleanup::cleanup_victims,
    constants::{MAX_RETRIES, QUEUE_NAME},
    events::{self, Event},
    handlers::{DeploymentHandler, HandlerContext, PodHandler, ReplicaSetHandler},
    new_replica_set::{
        CreateConflict, ExistingNewReplicaSet, after_create, build_new_replica_set, create_failed,
        resolve_create_conflict, sync_existing_new_replica_set,
    },
    progress::{Requeue, check_paused_conditions},
    proportional::plan_sync,
    recreate::{RecreatePlan, plan_recreate, plan_recreate_scale_up},
    replica_set::rs_name,
    rollback::plan_rollback,
    rolling::{RollingStep, plan_rolling_update},
    scaling::{ScaleAction, scaled_replica_set},
    status::FeatureGates,
    sync_path::{RolloutPath, choose_rollout_path, is_being_deleted, selecting_all},
    template::split_replica_sets,
    writes::Writes,
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "deployment-controller";

/// Construction failed.
#[derive(Debug, thiserror::Error)]
pub enum DeploymentError {
    /// The work queue could not be created (no tokio runtime) or registered.
    #[error("creating the work queue: {0}")]
    Queue(#[from] workqueue::QueueError),
    /// An index could not be added to a shared informer.
    #[error("adding an informer index: {0}")]
    Index(#[from] informer::InformerError),
}

/// Why one sync failed; the key is retried with backoff up to [`MAX_RETRIES`] times.
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("deployment {key} has invalid label selector: {reason}")]
    InvalidSelector { key: String, reason: String },
    #[error("{0}")]
    Claim(#[from] ClaimErrors),
    #[error(transparent)]
    Decision(#[from] crate::Error),
    #[error("{}", error_message(.0))]
    Api(#[from] kube::Error),
    #[error(transparent)]
    StaleRead(#[from] controller_toolkit::stale_reads::StaleRead),
}

impl SyncError {
    /// Upstream forgets keys whose sync failed because the namespace is being deleted.
    fn is_namespace_terminating(&self) -> bool {
        matches!(self, SyncError::Api(error) if has_status_cause(error, NAMESPACE_TERMINATING_CAUSE))
    }
}

impl SyncFailure for SyncError {
    /// Retries (up to [`MAX_RETRIES`]) unless the namespace is being deleted (`handleErr`).
    fn retryable(&self) -> bool {
        !self.is_namespace_terminating()
    }
}

/// The Deployment controller. Build it with [`DeploymentController::new`] before the informer
/// factory starts, then [`run`](DeploymentController::run) it.
pub struct DeploymentController {
    sync: Arc<Syncer>,
    queue: RateLimitingQueue<String>,
    registrations: [HandlerRegistration; 3],
    metrics: Option<SyncMetrics>,
}

/// Everything one sync needs; shared by the workers.
struct Syncer {
    client: Client,
    deployments: Lister<CachedDeployment>,
    replica_sets: Lister<CachedReplicaSet>,
    pods: Lister<CachedPod>,
    queue: RateLimitingQueue<String>,
    writes: Writes,
    recorder: EventRecorder,
    gates: FeatureGates,
}

impl DeploymentController {
    /// Wires the Deployment, ReplicaSet and pod informers (pod index and handlers) and the
    /// queue. Must be called inside a tokio runtime; starts no informer.
    pub fn new(
        client: Client,
        informers: &SharedInformerFactory,
        metrics: ControllerMetrics,
    ) -> Result<Self, DeploymentError> {
        let deployment_informer = informers.informer::<CachedDeployment>();
        let replica_set_informer = informers.informer::<CachedReplicaSet>();
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_indexer(POD_CONTROLLER_UID_INDEX, pod_controller_index)?;
        replica_set_informer
            .add_indexer(CONTROLLER_UID_INDEX, controller_index::<CachedReplicaSet>)?;

        let mut queue_config = QueueConfig::new(QUEUE_NAME);
        if let Some(workqueue_metrics) = metrics.workqueue {
            queue_config = queue_config.with_metrics(workqueue_metrics);
        }
        let queue = RateLimitingQueue::new(queue_config)?;
        let recorder = EventRecorder::start(client.clone(), RecorderConfig::new(CONTROLLER_NAME));
        let context = HandlerContext {
            client: client.clone(),
            deployments: deployment_informer.lister(),
            replica_sets: replica_set_informer.lister(),
            pods: pod_informer.lister(),
            queue: queue.clone(),
        };
        let registrations = [
            deployment_informer.add_event_handler(DeploymentHandler(context.clone())),
            replica_set_informer.add_event_handler(ReplicaSetHandler(context.clone())),
            pod_informer.add_event_handler(PodHandler(context)),
        ];
        let sync = Arc::new(Syncer {
            client: client.clone(),
            deployments: deployment_informer.lister(),
            replica_sets: replica_set_informer.lister(),
            pods: pod_informer.lister(),
            queue: queue.clone(),
            writes: Writes::new(client),
            recorder,
            gates: FeatureGates::default(),
        });
        Ok(Self {
            sync,
            queue,
            registrations,
            metrics: metrics.sync,
        })
    }

    /// Waits for the caches, then runs `workers` workers until `shutdown`; returns when every
    /// in-flight sync has finished.
    pub async fn run(self, workers: usize, shutdown: CancellationToken) {
        let [deployments, replica_sets, pods] = &self.registrations;
        if !wait_for_named_cache_sync(
            CONTROLLER_NAME,
            &shutdown,
            &[deployments, replica_sets, pods],
        )
        .await
        {
            self.queue.shut_down();
            return;
        }
        let pool = WorkerPool {
            queue: self.queue.clone(),
            workers,
            controller: CONTROLLER_NAME,
            metrics: self.metrics,
            max_retries: Some(MAX_RETRIES as usize),
        };
        let sync = self.sync.clone();
        pool.run_syncs(shutdown, move |key: String| {
            let sync = sync.clone();
            async move { sync.sync_deployment(&key).await }
        })
        .await;
        self.sync.recorder.flush().await;
    }
}

/// A Deployment's claimed ReplicaSets resolved into the new one and the old ones.
struct Resolved {
    new: Option<Arc<CachedReplicaSet>>,
    old: Vec<Arc<CachedReplicaSet>>,
}

fn refs(rss: &[Arc<CachedReplicaSet>]) -> Vec<&CachedReplicaSet> {
    rss.iter().map(AsRef::as_ref).collect()
}

/// old + new, the order upstream's `allRSs` has.
fn all_of<'a>(
    old: &[&'a CachedReplicaSet],
    new: Option<&'a CachedReplicaSet>,
) -> Vec<&'a CachedReplicaSet> {
    old.iter().copied().chain(new).collect()
}

impl Syncer {
    /// upstream `syncDeployment`, spec §3.
    async fn sync_deployment(&self, key: &str) -> Result<(), SyncError> {
        // 1. Get the Deployment from the cache and work on a copy.
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        let Some(cached) = self.deployments.get(namespace, name) else {
            tracing::debug!(key, "deployment has been deleted");
            self.writes.forget_deployment(key);
            return Ok(());
        };
        let mut d = cached.as_ref().clone();

        // 2. An empty selector would select every pod: warn and only record the generation.
        if let Some(selecting) = selecting_all(&d) {
            self.record(&d, selecting.event);
            if let Some(status) = selecting.status {
                d.status = Some(status);
                if let Err(error) = self.writes.update_status(&d).await {
                    tracing::debug!(key, %error, "updating observedGeneration");
                }
            }
            return Ok(());
        }

        // 3. Claim the namespace's ReplicaSets (adopt matching orphans, release the rest).
        let rs_list = self.claim_replica_sets(&d, key).await?;
        // Copies older than our own last writes would only produce 409s; the watch events of
        // those writes enqueue the key again (upstream's v1.36 stale-read protection).
        self.writes.check_fresh(key, &cached, &rs_list)?;

        // 4. The pod map is read only by Recreate, which builds it (`pod_map`).

        // 5. A Deployment being deleted only gets its status synced.
        if is_being_deleted(&d) {
            return self.sync_status_only(&mut d, &rs_list).await;
        }

        // 6. Paused/resumed Progressing condition.
        if let Some(status) = check_paused_conditions(&d, Timestamp::now()) {
            d.status = Some(status);
            d = self.writes.update_status(&d).await?;
        }

        // 7-10. Paused, rollback, scaling event, or a rollout by strategy.
        let path = {
            let list = refs(&rs_list);
            let split = split_replica_sets(&d, &list);
            choose_rollout_path(&d, split.new, &split.old)?
        };
        match path {
            RolloutPath::Sync => self.sync(&mut d, &rs_list).await,
            RolloutPath::Rollback => self.rollback(&mut d, &rs_list).await,
            RolloutPath::Recreate => self.rollout_recreate(&mut d, &rs_list, key).await,
            RolloutPath::RollingUpdate => self.rollout_rolling(&mut d, &rs_list, key).await,
        }
    }

    /// §3 step 3: the ReplicaSets of the namespace, claimed with the Deployment's selector.
    /// Upstream lists the whole namespace; only the ReplicaSets this Deployment controls and
    /// the orphans can be claimed or released, so those come from the controller-UID index.
    async fn claim_replica_sets(
        &self,
        d: &CachedDeployment,
        key: &str,
    ) -> Result<Vec<Arc<CachedReplicaSet>>, SyncError> {
        let label_selector = d
            .spec
            .as_ref()
            .map(|spec| spec.selector.clone())
            .unwrap_or_default();
        let selector =
            Selector::try_from(label_selector).map_err(|error| SyncError::InvalidSelector {
                key: key.to_owned(),
                reason: error.to_string(),
            })?;
        let namespace = d.namespace().unwrap_or_default();
        let mut candidates = self
            .replica_sets
            .by_index(CONTROLLER_UID_INDEX, &owner_index_key(d));
        candidates.extend(
            self.replica_sets
                .by_index(CONTROLLER_UID_INDEX, &orphan_index_key(&namespace)),
        );
        let manager = ControllerRefManager::new(
            self.client.clone(),
            d,
            &deployment_gvk(),
            selector,
            recheck_deletion(
                Api::<CachedDeployment>::namespaced(self.client.clone(), &namespace),
                d,
            ),
        );
        Ok(manager
            .claim_replica_sets(&candidates)
            .await
            .into_result()?)
    }

    /// §3 step 4: pods controlled by one of the claimed ReplicaSets (found through the pod
    /// controller-UID index, no selector check, as upstream v1.3x).
    fn pod_map(&self, rs_list: &[Arc<CachedReplicaSet>]) -> Vec<Arc<CachedPod>> {
        rs_list
            .iter()
            .flat_map(|rs| {
                self.pods
                    .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(rs.as_ref()))
            })
            .collect()
    }

    /// getAllReplicaSetsAndSyncRevision without create (§5 steps 1-3, 5): the new ReplicaSet
    /// (with its annotations brought up to date) if one exists, and all old ones.
    async fn resolve_existing(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<Resolved, SyncError> {
        let list = refs(rs_list);
        let split = split_replica_sets(d, &list);
        let is_new = |rs: &Arc<CachedReplicaSet>| {
            split.new.is_some_and(|new| std::ptr::eq(new, rs.as_ref()))
        };
        let old: Vec<Arc<CachedReplicaSet>> =
            rs_list.iter().filter(|rs| !is_new(rs)).cloned().collect();
        let Some(new) = rs_list.iter().find(|rs| is_new(rs)).cloned() else {
            return Ok(Resolved { new: None, old });
        };
        match sync_existing_new_replica_set(d, &new, &split.old, Timestamp::now()) {
            ExistingNewReplicaSet::UpdateReplicaSet(body) => {
                let written = self.writes.update_replica_set(&body).await?;
                return Ok(Resolved {
                    new: Some(Arc::new(written)),
                    old,
                });
            }
            ExistingNewReplicaSet::UpdateDeploymentStatus(updated) => {
                *d = self.writes.update_status(&updated).await?;
            }
            ExistingNewReplicaSet::Unchanged => {}
        }
        Ok(Resolved {
            new: Some(new),
            old,
        })
    }

    /// getAllReplicaSetsAndSyncRevision with create (§5): the new ReplicaSet always exists
    /// afterwards.
    async fn resolve_or_create(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<(Arc<CachedReplicaSet>, Vec<Arc<CachedReplicaSet>>), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let new = match resolved.new {
            Some(new) => new,
            None => self.create_new_replica_set(d, &refs(&resolved.old)).await?,
        };
        Ok((new, resolved.old))
    }

    /// §5 step 4: POST the new ReplicaSet; on AlreadyExists reuse ours or count a hash
    /// collision; on other failures set the ReplicaSetCreateError condition and event.
    async fn create_new_replica_set(
        &self,
        d: &mut CachedDeployment,
        old: &[&CachedReplicaSet],
    ) -> Result<Arc<CachedReplicaSet>, SyncError> {
        let now = Timestamp::now();
        let planned = build_new_replica_set(d, old)?;
        let name = rs_name(&planned).to_owned();
        let (new, created) = match self
            .writes
            .create_replica_set(&informer::object_key(d), &planned)
            .await
        {
            Ok(created) => (Arc::new(created), true),
            Err(error) if is_already_exists(&error) => {
                let Some(existing) = self
                    .replica_sets
                    .get(&d.namespace().unwrap_or_default(), &name)
                else {
                    return Err(error.into());
                };
                match resolve_create_conflict(d, &existing) {
                    CreateConflict::UseExisting => (existing, false),
                    CreateConflict::Collision(status) => {
                        let mut updated = d.clone();
                        updated.status = Some(status);
                        match self.writes.update_status(&updated).await {
                            Ok(written) => *d = written,
                            Err(update_error) => {
                                tracing::debug!(replica_set = %name, error = %update_error, "recording collisionCount");
                            }
                        }
                        return Err(error.into());
                    }
                }
            }
            Err(error) if has_status_cause(&error, NAMESPACE_TERMINATING_CAUSE) => {
                return Err(error.into());
            }
            Err(error) => {
                let failure = create_failed(d, &name, &error_message(&error), now);
                if let Some(status) = failure.status {
                    let mut updated = d.clone();
                    updated.status = Some(status);
                    if let Err(update_error) = self.writes.update_status(&updated).await {
                        tracing::debug!(replica_set = %name, error = %update_error, "recording ReplicaSetCreateError");
                    }
                }
                self.record(d, failure.event);
                return Err(error.into());
            }
        };
        let after = after_create(d, &planned, old, created, now);
        if let Some(event) = after.event {
            self.record(d, event);
        }
        if let Some(update) = after.update {
            *d = self.writes.update_status(&update).await?;
        }
        Ok(new)
    }

    /// rolloutRolling (§6.2), applying [`plan_rolling_update`] as its contract says.
    async fn rollout_rolling(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
        key: &str,
    ) -> Result<(), SyncError> {
        let (new, old) = self.resolve_or_create(d, rs_list).await?;
        let old = refs(&old);
        let all = all_of(&old, Some(&new));
        let plan = plan_rolling_update(d, &new, &old)?;
        match plan.step {
            RollingStep::ScaleNew(action) => {
                self.apply_scales(d, &all, &[action]).await?;
                return self.sync_rollout_status(d, &all, Some(&new), key).await;
            }
            RollingStep::ScaleOld { actions, scaled } => {
                match self.apply_scales(d, &all, &actions).await {
                    Ok(()) if scaled => {
                        return self.sync_rollout_status(d, &all, Some(&new), key).await;
                    }
                    Ok(()) => {}
                    // Upstream swallows errors while scaling old ReplicaSets down.
                    Err(error) => {
                        tracing::debug!(key, %error, "scaling old replica sets down");
                    }
                }
            }
            RollingStep::Settled => {}
        }
        if plan.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new), key).await
    }

    /// rolloutRecreate (§7), applying [`plan_recreate`] as its contract says.
    async fn rollout_recreate(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
        key: &str,
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let old = refs(&resolved.old);
        let pods = self.pod_map(rs_list);
        let pods: Vec<&CachedPod> = pods.iter().map(AsRef::as_ref).collect();
        let all = all_of(&old, resolved.new.as_deref());
        let (new, scale_up) = match plan_recreate(d, resolved.new.as_deref(), &old, &pods) {
            RecreatePlan::ScaleDownOld(actions) => {
                self.apply_scales(d, &all, &actions).await?;
                return self
                    .sync_rollout_status(d, &all, resolved.new.as_deref(), key)
                    .await;
            }
            RecreatePlan::WaitForOldPods => {
                return self
                    .sync_rollout_status(d, &all, resolved.new.as_deref(), key)
                    .await;
            }
            RecreatePlan::CreateNewReplicaSet => {
                let new = self.create_new_replica_set(d, &old).await?;
                let scale_up = plan_recreate_scale_up(d, &new);
                (new, scale_up)
            }
            RecreatePlan::ScaleUp(scale_up) => match resolved.new.clone() {
                Some(new) => (new, scale_up),
                None => return Ok(()),
            },
        };
        let all = all_of(&old, Some(&new));
        if let Some(action) = scale_up.scale {
            self.apply_scales(d, &all, &[action]).await?;
        }
        if scale_up.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new), key).await
    }

    /// sync (§8): proportional scaling for paused Deployments and scaling events, history
    /// cleanup when paused, then the status.
    async fn sync(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let old = refs(&resolved.old);
        let all = all_of(&old, resolved.new.as_deref());
        let plan = plan_sync(d, resolved.new.as_deref(), &old);
        self.apply_scales(d, &all, &plan.actions).await?;
        if plan.cleanup {
            self.cleanup_deployment(d, &old).await?;
        }
        self.sync_deployment_status(d, &all, resolved.new.as_deref())
            .await
    }

    /// Legacy rollback (§11): PUT the Deployment with the target template (or just without the
    /// request), recording the events [`plan_rollback`] gives.
    async fn rollback(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<(), SyncError> {
        let (new, old) = self.resolve_or_create(d, rs_list).await?;
        let Some(plan) = plan_rollback(d, Some(&new), &refs(&old))? else {
            return Ok(());
        };
        if let Some(warning) = plan.warning {
            self.record(d, warning);
        }
        *d = self.writes.update_deployment(&plan.deployment).await?;
        if let Some(done) = plan.on_success {
            self.record(d, done);
        }
        Ok(())
    }

    /// syncStatusOnly (§9) for a Deployment being deleted.
    async fn sync_status_only(
        &self,
        d: &mut CachedDeployment,
        rs_list: &[Arc<CachedReplicaSet>],
    ) -> Result<(), SyncError> {
        let resolved = self.resolve_existing(d, rs_list).await?;
        let old = refs(&resolved.old);
        let all = all_of(&old, resolved.new.as_deref());
        self.sync_deployment_status(d, &all, resolved.new.as_deref())
            .await
    }

    /// Applies scale actions in order (§6.3 scaleReplicaSet): each PUT is based on the latest
    /// copy of its ReplicaSet (a ReplicaSet may be resized twice in one plan) and followed by
    /// its ScalingReplicaSet event. The first API error stops the sequence.
    async fn apply_scales(
        &self,
        d: &CachedDeployment,
        all: &[&CachedReplicaSet],
        actions: &[ScaleAction],
    ) -> Result<(), kube::Error> {
        let mut latest: HashMap<&str, CachedReplicaSet> = HashMap::new();
        for action in actions {
            let current = match latest.remove(action.replica_set.as_str()) {
                Some(current) => current,
                None => match all.iter().find(|rs| rs_name(rs) == action.replica_set) {
                    Some(rs) => (*rs).clone(),
                    None => continue,
                },
            };
            let written = self
                .writes
                .update_replica_set(&scaled_replica_set(&current, action.to, d))
                .await?;
            if let Some(event) = action.event() {
                self.record(d, event);
            }
            latest.insert(action.replica_set.as_str(), written);
        }
        Ok(())
    }

    /// cleanupDeployment (§13): DELETE the history beyond revisionHistoryLimit.
    async fn cleanup_deployment(
        &self,
        d: &CachedDeployment,
        old: &[&CachedReplicaSet],
    ) -> Result<(), SyncError> {
        for victim in cleanup_victims(d, old) {
            tracing::debug!(deployment = %informer::object_key(d), replica_set = rs_name(victim), "trying to cleanup replica set");
            self.writes.delete_replica_set(victim).await?;
        }
        Ok(())
    }

    /// syncRolloutStatus (§10.3): PUT the new status, or requeue a stuck rollout to notice the
    /// progress deadline.
    async fn sync_rollout_status(
        &self,
        d: &mut CachedDeployment,
        all: &[&CachedReplicaSet],
        new: Option<&CachedReplicaSet>,
        key: &str,
    ) -> Result<(), SyncError> {
        let decision =
            crate::progress::sync_rollout_status(all, new, d, self.gates, Timestamp::now());
        match decision.update {
            Some(status) => {
                let mut updated = d.clone();
                updated.status = Some(status);
                *d = self.writes.update_status(&updated).await?;
            }
            None => match decision.requeue {
                Requeue::Never => {}
                Requeue::RateLimited => self.queue.add_rate_limited(key.to_owned()),
                Requeue::After(delay) => self.queue.add_after(key.to_owned(), delay),
            },
        }
        Ok(())
    }

    /// syncDeploymentStatus (§9): PUT the status when it changed.
    async fn sync_deployment_status(
        &self,
        d: &mut CachedDeployment,
        all: &[&CachedReplicaSet],
        new: Option<&CachedReplicaSet>,
    ) -> Result<(), SyncError> {
        if let Some(status) =
            crate::status::sync_deployment_status(all, new, d, self.gates, Timestamp::now())
        {
            let mut updated = d.clone();
            updated.status = Some(status);
            *d = self.writes.update_status(&updated).await?;
        }
        Ok(())
    }

    /// Records one of upstream's events on the Deployment.
    fn record(&self, d: &CachedDeployment, event: Event) {
        let event_type = match event.type_ {
            events::EventType::Normal => EventType::Normal,
            events::EventType::Warning => EventType::Warning,
        };
        self.recorder
            .record(d, event_type, event.reason, event.message);
    }
}

/// apps/v1 Deployment, for controller refs.
fn deployment_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk(
        &CachedDeployment::group(&()),
        &CachedDeployment::version(&()),
        &CachedDeployment::kind(&()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_terminating_is_read_from_the_status_cause() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "replicasets.apps \"web-1\" is forbidden: unable to create new content in namespace gone because it is being terminated",
            "details": {"causes": [{"reason": "NamespaceTerminating", "message": "namespace gone is being terminated", "field": "metadata.namespace"}]}
        }))
        .expect("status");
        let terminating = SyncError::Api(kube::Error::Api(Box::new(status)));
        assert!(terminating.is_namespace_terminating());
        assert!(!terminating.retryable(), "handleErr forgets such keys");
        let other = SyncError::Decision(crate::Error::UnexpectedStrategy("Canary".to_owned()));
        assert!(!other.is_namespace_terminating());
        assert!(other.retryable());
        assert_eq!(
            other.to_string(),
            "unexpected deployment strategy type: Canary"
        );
    }
}
