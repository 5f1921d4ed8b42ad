//! The StatefulSet controller: construction, workers, and `sync_stateful_set`, which follows
//! upstream's `sync` and `UpdateStatefulSet` step by step (statefulset.md §3, §4), executing the
//! plan of [`crate::decide`] and writing the status (§10).

use std::{collections::BTreeMap, sync::Arc};

use controller_toolkit::{
    controller_ref::{ControllerRefManager, controller_of, new_controller_ref, recheck_deletion},
    events::{EventRecorder, RecorderConfig},
    stale_reads::{DependentWrites, PendingCreates, StaleRead, StaleSyncSkips, WrittenVersions},
};
use futures::future::join_all;
use history::{SemanticComparisonCache, apply_revision_to_statefulset, sort_controller_revisions};
use informer::{
    CONTROLLER_UID_INDEX, CachedPod, HandlerRegistration, HasSynced, Lister,
    POD_CONTROLLER_UID_INDEX, SharedInformer, SharedInformerFactory, controller_index,
    orphan_index_key, orphan_pod_index_key, owner_index_key, pod_controller_index, split_key,
    wait_for_named_cache_sync,
};
use k8s_openapi::{
    api::{
        apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus},
        core::v1::PersistentVolumeClaim,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{GroupVersionKind, PostParams},
    core::{Selector, SelectorExt},
};
use tokio_util::sync::CancellationToken;
use workqueue::{
    ControllerMetrics, QueueConfig, RateLimitingQueue, SyncFailure, SyncMetrics, WorkerPool,
};

use crate::{
    decide::{
        PlanInput, Revisions, availability_recheck, complete_rolling_update, max_unavailable, plan,
        slow_start_batches, status_needs_write,
    },
    features::FeatureGates,
    handlers::{HandlerContext, PodHandler, SetHandler},
    identity::{claim_templates, parent_and_ordinal},
    metrics::StatefulSetMetrics,
    pod_control::{Outcome, PodControlError, StatefulPodControl},
    raw::RawStatefulSet,
    revisions::{self, RevisionError, SetRevisions, is_conflict},
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "statefulset-controller";
/// Work queue name (and `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "statefulset";
/// Default `revisionHistoryLimit` (the server defaults it; this covers objects without it).
const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
/// Status writes tried before giving up (upstream's retry-on-conflict: 5 attempts).
const STATUS_WRITE_ATTEMPTS: usize = 5;

/// Construction failed.
#[derive(Debug, thiserror::Error)]
pub enum StatefulSetError {
    /// The work queue could not be created (no tokio runtime) or registered.
    #[error("creating the work queue: {0}")]
    Queue(#[from] workqueue::QueueError),
    /// An index could not be added to a shared informer.
    #[error("adding an informer index: {0}")]
    Index(#[from] informer::InformerError),
}

/// Why one sync failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("can't adopt ControllerRevisions: {0}")]
    AdoptRevisions(#[source] controller_toolkit::controller_ref::ControllerRefError),
    #[error("claiming pods: {0}")]
    ClaimPods(#[from] controller_toolkit::controller_ref::ClaimErrors),
    #[error(transparent)]
    Revisions(#[from] RevisionError),
    #[error(transparent)]
    Pods(#[from] PodControlError),
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    PodBatch(Vec<PodControlError>),
    #[error("updating status: {0}")]
    Status(#[source] kube::Error),
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
    #[error("truncating history: {0}")]
    Truncate(#[source] kube::Error),
}

impl SyncFailure for SyncError {}

/// The StatefulSet controller. Build it with [`StatefulSetController::new`] before the
/// informer factory starts, then [`run`](StatefulSetController::run) it.
pub struct StatefulSetController {
    sync: Arc<Syncer>,
    queue: RateLimitingQueue<String>,
    registrations: [HandlerRegistration; 2],
    revision_informer: SharedInformer<ControllerRevision>,
    claim_informer: SharedInformer<PersistentVolumeClaim>,
    metrics: Option<SyncMetrics>,
}

/// Everything one sync needs; shared by the workers.
struct Syncer {
    client: Client,
    sets: Lister<RawStatefulSet>,
    pods: Lister<CachedPod>,
    revisions: Lister<ControllerRevision>,
    claims: Lister<PersistentVolumeClaim>,
    queue: RateLimitingQueue<String>,
    pod_control: StatefulPodControl,
    recorder: EventRecorder,
    semantic: SemanticComparisonCache,
    written: WrittenVersions,
    /// Our pod writes per set: a sync waits until the pod cache has applied them.
    pod_writes: Arc<DependentWrites>,
    /// The revision we last created per set: a sync waits until the revision cache holds it.
    revisions_created: PendingCreates,
    /// Counts the syncs deferred for pods and revisions (the set's own check counts itself).
    dependent_skips: Option<StaleSyncSkips>,
    metrics: Option<StatefulSetMetrics>,
    gates: FeatureGates,
}

impl StatefulSetController {
    /// Wires the StatefulSet, pod, ControllerRevision and claim informers and the queue.
    /// Must be called inside a tokio runtime; starts no informer. Follows upstream v1.36's
    /// default feature gates unless [`with_feature_gates`](Self::with_feature_gates) says
    /// otherwise.
    pub fn new(
        client: Client,
        informers: &SharedInformerFactory,
        metrics: ControllerMetrics,
    ) -> Result<Self, StatefulSetError> {
        let set_informer = informers.informer::<RawStatefulSet>();
        let pod_informer = informers.informer::<CachedPod>();
        let revision_informer = informers.informer::<ControllerRevision>();
        revision_informer
            .add_indexer(CONTROLLER_UID_INDEX, controller_index::<ControllerRevision>)?;
        let claim_informer = informers.informer::<PersistentVolumeClaim>();
        pod_informer.add_indexer(POD_CONTROLLER_UID_INDEX, pod_controller_index)?;

        let mut queue_config = QueueConfig::new(QUEUE_NAME);
        if let Some(workqueue_metrics) = metrics.workqueue {
            queue_config = queue_config.with_metrics(workqueue_metrics);
        }
        let queue = RateLimitingQueue::new(queue_config)?;
        let recorder = EventRecorder::start(client.clone(), RecorderConfig::new(CONTROLLER_NAME));
        let context = HandlerContext {
            sets: set_informer.lister(),
            queue: queue.clone(),
        };
        let registrations = [
            set_informer.add_event_handler(SetHandler(context.clone())),
            pod_informer.add_event_handler(PodHandler(context)),
        ];
        let pod_writes = Arc::new(DependentWrites::new("", "pods"));
        let sync = Arc::new(Syncer {
            client: client.clone(),
            sets: set_informer.lister(),
            pods: pod_informer.lister(),
            revisions: revision_informer.lister(),
            claims: claim_informer.lister(),
            queue: queue.clone(),
            pod_control: StatefulPodControl::new(client, recorder.clone(), pod_writes.clone()),
            pod_writes,
            revisions_created: PendingCreates::new("apps", "controllerrevisions"),
            dependent_skips: None,
            recorder,
            semantic: SemanticComparisonCache::default(),
            written: WrittenVersions::new("apps", "statefulsets"),
            metrics: None,
            gates: FeatureGates::default(),
        });
        Ok(Self {
            sync,
            queue,
            registrations,
            revision_informer,
            claim_informer,
            metrics: metrics.sync,
        })
    }

    /// Reports the controller's own gauges (unavailable replicas, maxUnavailable) into
    /// `metrics`; call before [`run`](Self::run).
    pub fn with_statefulset_metrics(mut self, metrics: StatefulSetMetrics) -> Self {
        if let Some(sync) = Arc::get_mut(&mut self.sync) {
            sync.metrics = Some(metrics);
        }
        self
    }

    /// Follows `gates` instead of upstream v1.36's defaults (the manager's `--feature-gates`);
    /// call before [`run`](Self::run).
    pub fn with_feature_gates(mut self, gates: FeatureGates) -> Self {
        if let Some(sync) = Arc::get_mut(&mut self.sync) {
            sync.gates = gates;
        }
        self
    }

    /// Counts syncs deferred by the stale-read check in `skips`
    /// (`statefulset_controller_stale_sync_skips_total`); call before [`run`](Self::run).
    pub fn with_stale_sync_skips(mut self, skips: StaleSyncSkips) -> Self {
        if let Some(sync) = Arc::get_mut(&mut self.sync) {
            sync.written = WrittenVersions::new("apps", "statefulsets").counting(skips.clone());
            sync.dependent_skips = Some(skips);
        }
        self
    }

    /// Waits for the four caches, then runs `workers` workers until `shutdown`; returns when
    /// every in-flight sync has finished.
    pub async fn run(self, workers: usize, shutdown: CancellationToken) {
        let [sets, pods] = &self.registrations;
        let caches: [&dyn HasSynced; 4] =
            [sets, pods, &self.revision_informer, &self.claim_informer];
        if !wait_for_named_cache_sync(CONTROLLER_NAME, &shutdown, &caches).await {
            self.queue.shut_down();
            return;
        }
        let pool = WorkerPool {
            queue: self.queue.clone(),
            workers,
            controller: CONTROLLER_NAME,
            metrics: self.metrics,
            // No retry ceiling for StatefulSets, as upstream.
            max_retries: None,
        };
        let sync = self.sync.clone();
        pool.run_syncs(shutdown, move |key: String| {
            let sync = sync.clone();
            async move { sync.sync_stateful_set(&key).await }
        })
        .await;
        self.sync.recorder.flush().await;
    }
}

impl Syncer {
    /// upstream `sync`, statefulset.md §3.
    async fn sync_stateful_set(&self, key: &str) -> Result<(), SyncError> {
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        let Some(set) = self.sets.get(namespace, name) else {
            tracing::debug!(key, "StatefulSet has been deleted");
            self.written.forget(key);
            self.pod_writes.forget(key);
            self.revisions_created.forget(key);
            if let Some(metrics) = &self.metrics {
                metrics.forget(namespace, name);
            }
            return Ok(());
        };
        // §3 step 1: never compute from a set older than our own last write of it.
        self.written.check(key, &set.set.metadata)?;
        self.counted(
            self.pod_writes
                .check(key, self.pods.last_sync_resource_version()),
        )?;
        let selector = match set
            .set
            .spec
            .as_ref()
            .map(|spec| Selector::try_from(spec.selector.clone()))
        {
            Some(Ok(selector)) => selector,
            Some(Err(error)) => {
                tracing::warn!(key, %error, "error converting StatefulSet selector");
                return Ok(());
            }
            None => return Ok(()),
        };
        let manager = ControllerRefManager::new(
            self.client.clone(),
            &set.set,
            &statefulset_gvk(),
            selector.clone(),
            recheck_deletion(
                Api::<StatefulSet>::namespaced(self.client.clone(), namespace),
                &set.set,
            ),
        );

        // §3 step 4: adopt orphan revisions.
        for orphan in self
            .list_revisions(&set.set, &selector)
            .iter()
            .filter(|revision| controller_of(&revision.metadata).is_none())
        {
            manager
                .adopt(orphan.as_ref())
                .await
                .map_err(SyncError::AdoptRevisions)?;
        }

        // Step 5: claim pods whose name says they belong to this set.
        let mut candidates = self
            .pods
            .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(&set.set));
        candidates.extend(
            self.pods
                .by_index(POD_CONTROLLER_UID_INDEX, &orphan_pod_index_key(namespace)),
        );
        let pods = manager
            .claim_pods_with_filter(&candidates, |pod| {
                parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).0 == name
            })
            .await
            .into_result()?;

        // Step 6.
        let now = Timestamp::now();
        let status = self
            .update_stateful_set(&set, &selector, &pods, now)
            .await?;

        // Step 7: look again when a ready pod should have turned available, at the earliest
        // such moment measured after the status write (kubernetes#135428).
        if let Some(delay) = availability_recheck(&set.set, &status, &pods, now, Timestamp::now()) {
            self.queue.add_after(key.to_owned(), delay);
        }
        Ok(())
    }

    /// A dependents' stale-read check, counted in `statefulset_controller_stale_sync_skips_total`.
    fn counted(&self, checked: Result<(), StaleRead>) -> Result<(), SyncError> {
        checked.map_err(|stale| {
            if let Some(skips) = &self.dependent_skips {
                skips.observe(&stale);
            }
            stale.into()
        })
    }

    /// Revisions of the set: matching the selector, owned by it or orphaned (history.md §5.1).
    fn list_revisions(
        &self,
        set: &StatefulSet,
        selector: &Selector,
    ) -> Vec<Arc<ControllerRevision>> {
        // Owned and orphaned revisions come from the controller index (upstream v1.36's
        // owner index) instead of a scan of the namespace.
        let namespace = set.metadata.namespace.as_deref().unwrap_or_default();
        let mut revisions = self
            .revisions
            .by_index(CONTROLLER_UID_INDEX, &owner_index_key(set));
        revisions.extend(
            self.revisions
                .by_index(CONTROLLER_UID_INDEX, &orphan_index_key(namespace)),
        );
        revisions.retain(|revision| {
            selector.matches(
                revision
                    .metadata
                    .labels
                    .as_ref()
                    .unwrap_or(&Default::default()),
            )
        });
        revisions
    }

    /// upstream `UpdateStatefulSet` (§4): revisions, pods, status, then history truncation
    /// whatever happened.
    async fn update_stateful_set(
        &self,
        set: &RawStatefulSet,
        selector: &Selector,
        pods: &[Arc<CachedPod>],
        now: Timestamp,
    ) -> Result<StatefulSetStatus, SyncError> {
        let key = informer::object_key(&set.set);
        let mut sorted = self.list_revisions(&set.set, selector);
        // A revision we created and the cache lacks would be created again (AlreadyExists).
        self.counted(
            self.revisions_created
                .check(&key, sorted.iter().map(|revision| &revision.metadata)),
        )?;
        sort_controller_revisions(&mut sorted);
        let set_revisions = revisions::resolve(&self.client, &self.semantic, set, &sorted).await?;
        let update_uid = set_revisions.update.metadata.uid.as_deref();
        if !sorted
            .iter()
            .any(|revision| revision.metadata.uid.as_deref() == update_uid)
        {
            self.revisions_created
                .record(&key, &set_revisions.update.metadata);
        }
        let result = self.perform_update(set, &set_revisions, pods, now).await;
        let history_limit = set
            .set
            .spec
            .as_ref()
            .and_then(|spec| spec.revision_history_limit)
            .unwrap_or(DEFAULT_REVISION_HISTORY_LIMIT);
        let truncated =
            revisions::truncate(&self.client, &sorted, &set_revisions, pods, history_limit)
                .await
                .map_err(SyncError::Truncate);
        let status = result?;
        truncated?;
        Ok(status)
    }

    /// §4 step 3: pods per the plan, then the status (written even when a pod write failed).
    async fn perform_update(
        &self,
        set: &RawStatefulSet,
        set_revisions: &SetRevisions,
        pods: &[Arc<CachedPod>],
        now: Timestamp,
    ) -> Result<StatefulSetStatus, SyncError> {
        let current_set = apply_revision_to_statefulset(&set.set, &set_revisions.current)
            .map_err(RevisionError::from)?;
        let update_set = apply_revision_to_statefulset(&set.set, &set_revisions.update)
            .map_err(RevisionError::from)?;
        let namespace = set.set.metadata.namespace.as_deref().unwrap_or_default();
        // Claims matter only to sets with claim templates.
        let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> =
            if claim_templates(&set.set).is_empty() {
                BTreeMap::new()
            } else {
                self.claims
                    .list_namespaced(namespace, &Selector::default())
                    .into_iter()
                    .map(|claim| (claim.name_any(), claim))
                    .collect()
            };
        let controller_ref = new_controller_ref(&set.set, &statefulset_gvk());
        let plan = plan(&PlanInput {
            set: &set.set,
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
                set.set.metadata.name.as_deref().unwrap_or_default(),
                policy,
                i64::try_from(unavailable).unwrap_or(i64::MAX),
                i64::from(max_unavailable(&set.set)),
            );
        }
        let mut status = plan.status.clone();
        let mut pod_result = Ok(());
        for phase in &plan.phases {
            let (deleted_for_update, result) = self.run_phase(&set.set, phase, plan.parallel).await;
            if let Some(current) = status.current_replicas.as_mut() {
                *current -= deleted_for_update;
            }
            if result.is_err() {
                pod_result = result;
                break;
            }
        }
        complete_rolling_update(&set.set, &mut status);
        let status_result = self.update_status(&set.set, &status).await;
        match (pod_result, status_result) {
            (Err(error), status_result) => {
                if let Err(status_error) = status_result {
                    tracing::warn!(key = %informer::object_key(&set.set), error = %status_error, "status update failed after a pod error");
                }
                Err(error)
            }
            (Ok(()), Err(error)) => Err(SyncError::Status(error)),
            (Ok(()), Ok(())) => Ok(status),
        }
    }

    /// upstream `runForAll`: in order, stopping at the first error (OrderedReady), or in
    /// slow-start batches, stopping after the first batch with errors (Parallel). Returns the
    /// number of pods deleted for update and the outcome.
    async fn run_phase(
        &self,
        set: &StatefulSet,
        actions: &[crate::decide::PodAction],
        parallel: bool,
    ) -> (i32, Result<(), SyncError>) {
        let mut deleted_for_update = 0;
        if !parallel {
            for action in actions {
                match self.pod_control.execute(set, action).await {
                    Ok(Outcome::DeletedForUpdate) => deleted_for_update += 1,
                    Ok(Outcome::Done) => {}
                    Err(error) => return (deleted_for_update, Err(error.into())),
                }
            }
            return (deleted_for_update, Ok(()));
        }
        let mut remaining = actions;
        for batch in slow_start_batches(actions.len()) {
            let (now, later) = remaining.split_at(batch.min(remaining.len()));
            remaining = later;
            let results = join_all(
                now.iter()
                    .map(|action| self.pod_control.execute(set, action)),
            )
            .await;
            let mut errors = Vec::new();
            for result in results {
                match result {
                    Ok(Outcome::DeletedForUpdate) => deleted_for_update += 1,
                    Ok(Outcome::Done) => {}
                    Err(error) => errors.push(error),
                }
            }
            if !errors.is_empty() {
                let error = if errors.len() == 1 {
                    SyncError::Pods(errors.remove(0))
                } else {
                    SyncError::PodBatch(errors)
                };
                return (deleted_for_update, Err(error));
            }
        }
        (deleted_for_update, Ok(()))
    }

    /// §10: write the status when a watched field changed, retrying conflicts with a fresh
    /// read of the set.
    async fn update_status(
        &self,
        set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), kube::Error> {
        if !status_needs_write(set.status.as_ref(), status) {
            return Ok(());
        }
        let api = Api::<StatefulSet>::namespaced(
            self.client.clone(),
            set.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = set.name_any();
        let mut current = set.clone();
        let mut attempt = 1;
        loop {
            current.status = Some(status.clone());
            match api
                .replace_status(&name, &PostParams::default(), &current)
                .await
            {
                Ok(written) => {
                    self.written
                        .record(&informer::object_key(set), &written.metadata);
                    return Ok(());
                }
                Err(error) if is_conflict(&error) && attempt < STATUS_WRITE_ATTEMPTS => {
                    attempt += 1;
                    tracing::debug!(key = %informer::object_key(set), %error, "status update conflict; re-reading");
                    current = api.get(&name).await?;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// apps/v1 StatefulSet, for controller refs.
fn statefulset_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk(
        &StatefulSet::group(&()),
        &StatefulSet::version(&()),
        &StatefulSet::kind(&()),
    )
}
