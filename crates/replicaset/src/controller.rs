//! The ReplicaSet controller: construction, workers, and `sync_replica_set`, which follows
//! upstream's `syncReplicaSet` step by step (replicaset.md §3), with `manage_replicas` (§4) and
//! the conflict-safe status write (§7).

use std::sync::Arc;

use controller_toolkit::{
    availability::availability_requeue,
    controller_ref::{ControllerRefManager, new_controller_ref, recheck_deletion},
    events::{EventRecorder, EventType, RecorderConfig},
    keys::pod_key,
    pod_control::{PodControl, PodControlError},
    pod_predicates::{filter_active_pods, is_pod_terminating},
    ranking::{rank_by_related_pods_on_same_node, sort_for_deletion},
    stale_reads::{StaleRead, StaleSyncSkips, WrittenVersions},
};
use expectations::UidTrackingExpectations;
use futures::future::join_all;
use informer::{
    CONTROLLER_UID_INDEX, CachedPod, CachedReplicaSet, CompactPodTemplate, HandlerRegistration,
    Lister, POD_CONTROLLER_UID_INDEX, SharedInformerFactory, controller_index,
    controller_index_key, orphan_pod_index_key, owner_index_key, pod_controller_index, split_key,
    wait_for_named_cache_sync,
};
use k8s_openapi::{api::apps::v1::ReplicaSetStatus, jiff::Timestamp};
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
        ReplicaPlan, StatusInputs, calculate_status, parse_selector, plan_replicas,
        slow_start_batches, status_unchanged,
    },
    handlers::{HandlerContext, PodHandler, ReplicaSetHandler},
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "replicaset-controller";
/// Work queue name (and `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "replicaset";
/// Warning event for a ReplicaSet whose selector cannot be parsed.
pub const INVALID_SELECTOR_REASON: &str = "InvalidSelector";

/// Construction failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaSetError {
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
    #[error("claiming pods: {0}")]
    Claim(#[from] controller_toolkit::controller_ref::ClaimErrors),
    #[error(transparent)]
    PodControl(#[from] PodControlError),
    #[error("updating status: {0}")]
    Status(#[source] kube::Error),
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
}

impl SyncFailure for SyncError {}

/// The ReplicaSet controller. Build it with [`ReplicaSetController::new`] before the informer
/// factory starts, then [`run`](ReplicaSetController::run) it.
pub struct ReplicaSetController {
    sync: Arc<Syncer>,
    queue: RateLimitingQueue<String>,
    registrations: [HandlerRegistration; 2],
    metrics: Option<SyncMetrics>,
}

/// Everything one sync needs; shared by the workers.
struct Syncer {
    client: Client,
    replica_sets: Lister<CachedReplicaSet>,
    pods: Lister<CachedPod>,
    queue: RateLimitingQueue<String>,
    expectations: Arc<UidTrackingExpectations>,
    pod_control: PodControl,
    recorder: EventRecorder,
    /// Our own status writes, so a sync never starts from an older cached copy.
    written: WrittenVersions,
}

impl ReplicaSetController {
    /// Wires the ReplicaSet and pod informers (with their indexes and handlers) and the queue.
    /// Must be called inside a tokio runtime; starts no informer.
    pub fn new(
        client: Client,
        informers: &SharedInformerFactory,
        metrics: ControllerMetrics,
    ) -> Result<Self, ReplicaSetError> {
        let replica_set_informer = informers.informer::<CachedReplicaSet>();
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_indexer(POD_CONTROLLER_UID_INDEX, pod_controller_index)?;
        // Sibling ReplicaSets (same controller) for ranking.
        replica_set_informer
            .add_indexer(CONTROLLER_UID_INDEX, controller_index::<CachedReplicaSet>)?;

        let mut queue_config = QueueConfig::new(QUEUE_NAME);
        if let Some(workqueue_metrics) = metrics.workqueue {
            queue_config = queue_config.with_metrics(workqueue_metrics);
        }
        let queue = RateLimitingQueue::new(queue_config)?;
        let expectations = Arc::new(UidTrackingExpectations::new());
        let recorder = EventRecorder::start(client.clone(), RecorderConfig::new(CONTROLLER_NAME));
        let context = HandlerContext {
            replica_sets: replica_set_informer.lister(),
            queue: queue.clone(),
            expectations: expectations.clone(),
        };
        let registrations = [
            replica_set_informer.add_event_handler(ReplicaSetHandler(context.clone())),
            pod_informer.add_event_handler(PodHandler(context)),
        ];
        let sync = Arc::new(Syncer {
            client: client.clone(),
            replica_sets: replica_set_informer.lister(),
            pods: pod_informer.lister(),
            queue: queue.clone(),
            expectations,
            pod_control: PodControl::new(client, recorder.clone()),
            recorder,
            written: WrittenVersions::new("apps", "replicasets"),
        });
        Ok(Self {
            sync,
            queue,
            registrations,
            metrics: metrics.sync,
        })
    }

    /// Counts syncs deferred by the stale-read check in `skips`
    /// (`replicaset_controller_stale_sync_skips_total`); call before [`run`](Self::run).
    pub fn with_stale_sync_skips(mut self, skips: StaleSyncSkips) -> Self {
        if let Some(sync) = Arc::get_mut(&mut self.sync) {
            sync.written = WrittenVersions::new("apps", "replicasets").counting(skips);
        }
        self
    }

    /// Waits for the caches, then runs `workers` workers until `shutdown`; returns when every
    /// in-flight sync has finished.
    pub async fn run(self, workers: usize, shutdown: CancellationToken) {
        let [replica_sets, pods] = &self.registrations;
        if !wait_for_named_cache_sync(CONTROLLER_NAME, &shutdown, &[replica_sets, pods]).await {
            self.queue.shut_down();
            return;
        }
        let pool = WorkerPool {
            queue: self.queue.clone(),
            workers,
            controller: CONTROLLER_NAME,
            metrics: self.metrics,
            // No retry ceiling for ReplicaSets, as upstream.
            max_retries: None,
        };
        let sync = self.sync.clone();
        pool.run_syncs(shutdown, move |key: String| {
            let sync = sync.clone();
            async move { sync.sync_replica_set(&key).await }
        })
        .await;
        self.sync.recorder.flush().await;
    }
}

impl Syncer {
    /// upstream `syncReplicaSet`, replicaset.md §3.
    async fn sync_replica_set(&self, key: &str) -> Result<(), SyncError> {
        // 1-2. Get the ReplicaSet from the cache; gone means nothing is expected any more.
        let (namespace, name) = split_key(key);
        let namespace = namespace.unwrap_or_default();
        let Some(replica_set) = self.replica_sets.get(namespace, name) else {
            tracing::debug!(key, "ReplicaSet has been deleted");
            self.written.forget(key);
            self.expectations.delete_expectations(key);
            return Ok(());
        };
        // A copy older than our own last status write would only produce a 409; the watch
        // event of that write enqueues the key again (§8).
        self.written.check(key, &replica_set.metadata)?;

        // 3. Decide whether creates/deletes may happen before looking at pods.
        let needs_sync = self.expectations.satisfied_expectations(key);

        // 4. An unusable selector is the user's to fix: warn, and do not retry hot.
        let selector = match parse_selector(&replica_set) {
            Ok(selector) => selector,
            Err(error) => {
                tracing::warn!(key, %error, "invalid selector");
                self.recorder.record(
                    replica_set.as_ref(),
                    EventType::Warning,
                    INVALID_SELECTOR_REASON,
                    format!("Invalid selector: {error}"),
                );
                return Ok(());
            }
        };

        // 5. Candidates: pods controlled by this ReplicaSet plus the namespace's orphans.
        let uid = replica_set.uid().unwrap_or_default();
        let mut candidates = self.pods.by_index(
            POD_CONTROLLER_UID_INDEX,
            &owner_index_key(replica_set.as_ref()),
        );
        candidates.extend(
            self.pods
                .by_index(POD_CONTROLLER_UID_INDEX, &orphan_pod_index_key(namespace)),
        );

        // 6. Claim the active candidates: adopt matching orphans, release non-matching pods.
        let active = filter_active_pods(&candidates);
        let manager = ControllerRefManager::new(
            self.client.clone(),
            replica_set.as_ref(),
            &replica_set_gvk(),
            selector.clone(),
            recheck_deletion(
                Api::<CachedReplicaSet>::namespaced(self.client.clone(), namespace),
                replica_set.as_ref(),
            ),
        );
        let active_pods = manager.claim_pods(&active).await.into_result()?;

        // 7. Terminating pods that are already ours (no adoption for them).
        let terminating = candidates
            .iter()
            .filter(|pod| is_pod_terminating(pod))
            .filter(|pod| {
                controller_toolkit::controller_ref::controller_of(&pod.metadata)
                    .is_some_and(|owner| owner.uid == uid)
                    && selector.matches(pod.metadata.labels.as_ref().unwrap_or(&Default::default()))
            })
            .count();

        // 8. Create or delete pods, unless earlier creates/deletes are still unobserved.
        let manage_result = if needs_sync && replica_set.metadata.deletion_timestamp.is_none() {
            self.manage_replicas(&active_pods, &replica_set, key).await
        } else {
            Ok(())
        };

        // 9-10. Compute and write the status, even if managing failed.
        let now = Timestamp::now();
        let new_status = calculate_status(&StatusInputs {
            replica_set: &replica_set,
            active_pods: &active_pods,
            terminating,
            manage_error: manage_result.as_ref().err().map(ToString::to_string),
            now,
        });
        let written = self
            .update_status(&replica_set, new_status)
            .await
            .map_err(SyncError::Status)?;
        // 11. Remember the version we wrote.
        if let Some(written) = &written {
            self.written.record(key, &written.metadata);
        }

        // 12. A failed manage step is retried with backoff.
        manage_result?;

        // 13. Look again when a ready pod should have turned available.
        let min_ready_seconds = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.min_ready_seconds)
            .unwrap_or(0);
        if let Some(status) = written.as_ref().unwrap_or(&replica_set).status.as_ref()
            && let Some(delay) = availability_requeue(
                min_ready_seconds,
                status.ready_replicas.unwrap_or(0),
                status.available_replicas.unwrap_or(0),
                &active_pods,
                now,
                Timestamp::now(),
            )
        {
            self.queue.add_after(key.to_string(), delay);
        }
        Ok(())
    }

    /// upstream `manageReplicas`, replicaset.md §4.
    async fn manage_replicas(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
    ) -> Result<(), SyncError> {
        let desired = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.replicas)
            .unwrap_or(1);
        match plan_replicas(active_pods.len(), desired) {
            ReplicaPlan::Nothing => Ok(()),
            ReplicaPlan::Create(count) => self.create_pods(replica_set, key, count).await,
            ReplicaPlan::Delete(count) => {
                self.delete_pods(active_pods, replica_set, key, count).await
            }
        }
    }

    /// Creates `count` pods in slow-start batches; stops after the first batch with a failure
    /// and lowers the expectations for every create that will never be observed.
    async fn create_pods(
        &self,
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
        count: usize,
    ) -> Result<(), SyncError> {
        let namespace = replica_set.namespace().unwrap_or_default();
        let template = replica_set
            .spec
            .as_ref()
            .and_then(|spec| spec.template.as_ref())
            .map(CompactPodTemplate::decode)
            .unwrap_or_default();
        let controller_ref = new_controller_ref(replica_set.as_ref(), &replica_set_gvk());
        self.expectations
            .expect_creations(key, i64::try_from(count).unwrap_or(i64::MAX));
        let mut successes = 0;
        let mut first_error = None;
        for batch in slow_start_batches(count) {
            let results = join_all((0..batch).map(|_| {
                self.pod_control.create_pods(
                    &namespace,
                    &template,
                    replica_set.as_ref(),
                    &controller_ref,
                )
            }))
            .await;
            for result in results {
                match result {
                    Ok(_) => successes += 1,
                    // No pod will appear, but the namespace is going away: nothing to retry.
                    Err(error) if error.is_namespace_terminating() => successes += 1,
                    Err(error) => {
                        first_error.get_or_insert(error);
                    }
                }
            }
            if first_error.is_some() {
                break;
            }
        }
        for _ in successes..count {
            self.expectations.creation_observed(key);
        }
        match first_error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// Deletes the `count` lowest-ranked pods, all at once.
    async fn delete_pods(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &Arc<CachedReplicaSet>,
        key: &str,
        count: usize,
    ) -> Result<(), SyncError> {
        let victims = self.choose_victims(active_pods, replica_set, count);
        self.expectations
            .expect_deletions(key, victims.iter().map(|pod| pod_key(pod)));
        let results = join_all(
            victims
                .iter()
                .map(|pod| self.pod_control.delete_pod(pod, replica_set.as_ref())),
        )
        .await;
        let mut first_error = None;
        for (pod, result) in victims.iter().zip(results) {
            if let Err(error) = result {
                // No delete event will come for this pod: stop waiting for it.
                self.expectations.deletion_observed(key, &pod_key(pod));
                if !error.is_not_found() {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    /// replicaset.md §5: all pods if deleting at least as many as exist, otherwise the first
    /// `count` by upstream's ranking, with ranks counted over pods of sibling ReplicaSets.
    fn choose_victims(
        &self,
        active_pods: &[Arc<CachedPod>],
        replica_set: &CachedReplicaSet,
        count: usize,
    ) -> Vec<Arc<CachedPod>> {
        if count >= active_pods.len() {
            return active_pods.to_vec();
        }
        let related = self.related_pods(replica_set);
        let ranked = rank_by_related_pods_on_same_node(active_pods, &related);
        sort_for_deletion(ranked, Timestamp::now())
            .into_iter()
            .take(count)
            .map(|ranked| ranked.pod)
            .collect()
    }

    /// Pods of every ReplicaSet with the same controller as this one (its siblings and itself).
    fn related_pods(&self, replica_set: &CachedReplicaSet) -> Vec<Arc<CachedPod>> {
        let Some(owner) = controller_toolkit::controller_ref::controller_of(&replica_set.metadata)
        else {
            return Vec::new();
        };
        let namespace = replica_set.namespace().unwrap_or_default();
        let orphans = self
            .pods
            .by_index(POD_CONTROLLER_UID_INDEX, &orphan_pod_index_key(&namespace));
        let mut seen = std::collections::HashSet::new();
        let mut related = Vec::new();
        let siblings = controller_index_key(&namespace, &owner.kind, &owner.name, &owner.uid);
        for sibling in self.replica_sets.by_index(CONTROLLER_UID_INDEX, &siblings) {
            let Some(selector) = sibling
                .spec
                .as_ref()
                .and_then(|spec| Selector::try_from(spec.selector.clone()).ok())
            else {
                continue;
            };
            // Upstream lists the namespace's pods matching the sibling's selector; the pods a
            // sibling owns plus the orphans are those, bar pods owned by an unrelated
            // controller, and need no namespace scan.
            let owned = self
                .pods
                .by_index(POD_CONTROLLER_UID_INDEX, &owner_index_key(sibling.as_ref()));
            for pod in owned.iter().chain(&orphans) {
                if selector.matches(pod.metadata.labels.as_ref().unwrap_or(&Default::default()))
                    && seen.insert(pod.uid().unwrap_or_default())
                {
                    related.push(pod.clone());
                }
            }
        }
        related
    }

    /// replicaset.md §7: skip when unchanged (`None`); otherwise PUT status with the object's
    /// resourceVersion, and on failure re-read the ReplicaSet once and try again. Returns the
    /// written ReplicaSet.
    async fn update_status(
        &self,
        replica_set: &Arc<CachedReplicaSet>,
        mut new_status: ReplicaSetStatus,
    ) -> Result<Option<CachedReplicaSet>, kube::Error> {
        if status_unchanged(replica_set, &new_status) {
            return Ok(None);
        }
        new_status.observed_generation = replica_set.metadata.generation;
        let api = Api::<CachedReplicaSet>::namespaced(
            self.client.clone(),
            &replica_set.namespace().unwrap_or_default(),
        );
        let name = replica_set.name_any();
        let mut current = replica_set.as_ref().clone();
        let mut attempts_left = 2;
        loop {
            current.status = Some(new_status.clone());
            match api
                .replace_status(&name, &PostParams::default(), &current)
                .await
            {
                Ok(written) => return Ok(Some(written)),
                Err(error) => {
                    attempts_left -= 1;
                    if attempts_left == 0 {
                        return Err(error);
                    }
                    tracing::debug!(key = %format!("{}/{name}", replica_set.namespace().unwrap_or_default()), %error, "status update failed; re-reading");
                    current = api.get(&name).await?;
                }
            }
        }
    }
}

/// apps/v1 ReplicaSet, for controller refs.
fn replica_set_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk(
        &CachedReplicaSet::group(&()),
        &CachedReplicaSet::version(&()),
        &CachedReplicaSet::kind(&()),
    )
}
