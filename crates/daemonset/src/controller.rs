//! The DaemonSet controller: construction, workers, and the sync (`Reconciler::sync`), which
//! follows upstream's `syncDaemonSet` step by step; `manage` and `syncNodes` are in
//! `sync_nodes.rs`, the ControllerRevisions in `revisions.rs`, the node events and the
//! node-update worker in `nodes.rs`. Every decision is the `decide` layer's; this file reads
//! the caches, carries the plans out and writes the status.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use controller_toolkit::{
    controller_ref::{ClaimErrors, ControllerRefManager, controller_of},
    events::EventRecorder,
    pod_control::{PodControl, PodControlError},
    pod_key,
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync,
        OwnerRouting, PrimaryHandler, Reconciler, RetryBackoff, RuntimeOptions,
    },
    stale_reads::{DependentWrites, PendingCreates, StaleRead, StaleSyncSkips, WrittenVersions},
    writes::{RetryOn, StatusRetry, Writer},
};
use expectations::UidTrackingExpectations;
use informer::{CachedNode, CachedPod, LabelMatcher, Lister, RawObject, SharedInformerFactory};
use k8s_openapi::{
    api::apps::v1::{ControllerRevision, DaemonSet},
    apimachinery::pkg::apis::meta::v1::LabelSelector,
    jiff::Timestamp,
};
use kube::Client;
use parking_lot::Mutex;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    FeatureGates,
    decide::{
        NodesToPods, SyncInput,
        backoff::{BACKOFF_GC_INTERVAL, FailedPodBackoff},
        events::selecting_all,
        node_fit::{NodeFit, node_fits},
        nodes_to_pods::nodes_to_daemon_pods,
        spec::is_rolling_update,
        status::{apply_counts, availability_requeue, count_status, status_needs_write},
    },
    nodes::{DAEMON_POD_NODE_INDEX, NodeEvents, daemon_pod_node_index},
    revisions::{History, RevisionError},
};

/// Canonical controller name: event source, health check, `--controllers`.
pub const CONTROLLER_NAME: &str = "daemonset-controller";
/// The name upstream builds the controller's API client under (`daemon-set-controller`, with
/// a hyphen the canonical name lacks): its user agent's last part.
pub const CLIENT_NAME: &str = "daemon-set-controller";
/// Work queue name of the DaemonSets (and `name` label of its workqueue metrics).
pub const QUEUE_NAME: &str = "daemonset";
/// Work queue name of the node updates (upstream v1.36's second queue, node names as keys).
pub const NODE_QUEUE_NAME: &str = "daemonset-node-updates";
/// No retry ceiling for DaemonSets, as upstream.
const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::ControllerDefault,
};
/// upstream `storeDaemonSetStatus`: `StatusUpdateRetries = 1`, so two PUTs at most, any
/// failure re-reading the DaemonSet.
const STATUS_RETRY: StatusRetry = StatusRetry {
    attempts: 2,
    on: RetryOn::AnyError,
};

/// A DaemonSet as cached: the typed object and the JSON the server sent, from which the
/// revision data is built byte for byte.
pub type RawDaemonSet = RawObject<DaemonSet>;

/// Construction failed (the queue or an informer index could not be set up).
pub type DaemonSetError = BuildError;

/// Why one sync failed; the key is retried with backoff. Messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The caches have not caught up with the controller's own writes (deferred, counted).
    #[error(transparent)]
    StaleRead(#[from] StaleRead),
    /// `constructHistory` failed.
    #[error("failed to construct revisions of DaemonSet: {0}")]
    ConstructHistory(#[source] RevisionError),
    /// Claiming the pods failed.
    #[error("couldn't get node to daemon pod mapping for daemon set {name:?}: {source}")]
    DaemonPods {
        /// The DaemonSet's name.
        name: String,
        /// The claim failures.
        source: ClaimErrors,
    },
    /// Creates or deletes failed (upstream's aggregate).
    #[error("{}", aggregate(.0))]
    SyncNodes(Vec<PodControlError>),
    /// The rolling update could not be planned.
    #[error(transparent)]
    RollingUpdate(#[from] crate::decide::rolling_update::RollingUpdateError),
    /// `cleanupHistory` failed.
    #[error("failed to clean up revisions of DaemonSet: {0}")]
    CleanupHistory(#[source] Box<SyncError>),
    /// An API request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// The status write failed.
    #[error("error storing status for daemon set {key}: {source}")]
    Status {
        /// The DaemonSet's key.
        key: String,
        /// The last failure.
        source: kube::Error,
    },
}

/// `utilerrors.NewAggregate`'s text: one message alone, several as `[a, b]`.
fn aggregate(errors: &[PodControlError]) -> String {
    match errors {
        [single] => single.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl SyncFailure for SyncError {
    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_))
    }
}

/// The DaemonSet controller: build it with `DaemonSetController::new` (client, informer
/// factory, options) before the informer factory starts, then `run(workers, shutdown)` it
/// (that many workers on the DaemonSet queue and as many on the node-update queue). It is the
/// toolkit's [`Controller`], whose construction and run loop every controller shares.
pub type DaemonSetController = Controller<DaemonSetSync>;

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone, Default)]
pub struct DaemonSetOptions {
    /// Metrics, stale-read counter and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// Feature gates; `Default` is upstream v1.36's.
    pub gates: FeatureGates,
}

/// The failed-pod backoff and when it was last garbage-collected (upstream runs its GC every
/// minute on a timer; here the sync that finds a minute passed runs it).
pub(crate) struct Backoff {
    pub(crate) backoff: FailedPodBackoff,
    last_gc: Instant,
}

/// The DaemonSet controller's sync (upstream `syncDaemonSet`) and node-update worker
/// (`syncNodeUpdate`), and what they read and write through, shared by the workers; built by
/// [`DaemonSetController::new`].
pub struct DaemonSetSync {
    pub(crate) writer: Writer,
    pub(crate) daemon_sets: Lister<RawDaemonSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) nodes: Lister<CachedNode>,
    pub(crate) revisions: Lister<ControllerRevision>,
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) expectations: Arc<UidTrackingExpectations>,
    pub(crate) pod_control: PodControl,
    pub(crate) recorder: EventRecorder,
    pub(crate) backoff: Mutex<Backoff>,
    /// Our status writes per DaemonSet: a sync waits until the cache holds them.
    pub(crate) written: WrittenVersions,
    /// Our pod creates per DaemonSet: a sync waits until the pod cache has applied them.
    pub(crate) pod_writes: DependentWrites,
    /// The revision we last created per DaemonSet: a sync waits until the cache holds it.
    pub(crate) revisions_created: PendingCreates,
    /// Counts the syncs deferred for pods and revisions (the DaemonSet's own check counts
    /// itself).
    pub(crate) dependent_skips: Option<StaleSyncSkips>,
    pub(crate) gates: FeatureGates,
}

impl ControllerSync for DaemonSetSync {
    type Options = DaemonSetOptions;

    /// Wires the DaemonSet, pod, node and ControllerRevision informers (with their indexes
    /// and handlers) and both queues. Must be called inside a tokio runtime; starts no
    /// informer.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: DaemonSetOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let daemon_set_informer = informers.informer::<RawDaemonSet>();
        let pod_informer = informers.informer::<CachedPod>();
        pod_informer.add_controller_indexer()?;
        pod_informer.add_indexer(DAEMON_POD_NODE_INDEX, daemon_pod_node_index)?;
        let node_informer = informers.informer::<CachedNode>();
        let revision_informer = informers.informer::<ControllerRevision>();
        revision_informer.add_controller_indexer()?;

        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        let node_queue = runtime.add_queue(NODE_QUEUE_NAME)?;
        // Deletions expected by pod, as the ReplicaSet's (upstream's DaemonSet controller counts
        // delete events, two for a graceful deletion: an intended difference, see the README).
        let expectations = Arc::new(UidTrackingExpectations::new());
        let forget = expectations.clone();
        runtime.watches(
            &daemon_set_informer,
            PrimaryHandler::new(runtime.queue())
                .on_gone(move |key| forget.delete_expectations(key)),
        );
        runtime.owns(
            &pod_informer,
            OwnerRouting::new(daemon_set_informer.lister(), runtime.queue())
                .with_events(expectations.clone())
                .graceful_delete_of_new_is_delete(),
        );
        runtime.owns(
            &revision_informer,
            OwnerRouting::new(daemon_set_informer.lister(), runtime.queue()).quiet_owned_adds(),
        );
        runtime.handles(
            &node_informer,
            NodeEvents {
                node_queue,
                queue: runtime.queue().clone(),
                daemon_sets: daemon_set_informer.lister(),
                pods: pod_informer.lister(),
            },
        );
        let writer = runtime.writer().clone();
        let sync = DaemonSetSync {
            daemon_sets: daemon_set_informer.lister(),
            pods: pod_informer.lister(),
            nodes: node_informer.lister(),
            revisions: revision_informer.lister(),
            queue: runtime.queue().clone(),
            expectations,
            pod_control: PodControl::new(writer.clone(), runtime.recorder().clone()),
            recorder: runtime.recorder().clone(),
            writer,
            backoff: Mutex::new(Backoff {
                backoff: FailedPodBackoff::default(),
                last_gc: Instant::now(),
            }),
            written: WrittenVersions::new("apps", "daemonsets")
                .counting(options.runtime.stale_sync_skips.clone()),
            pod_writes: DependentWrites::new("", "pods"),
            revisions_created: PendingCreates::new("apps", "controllerrevisions"),
            dependent_skips: options.runtime.stale_sync_skips,
            gates: options.gates,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for DaemonSetSync {
    type Error = SyncError;

    /// upstream `syncDaemonSet`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        // 1-2. Get the DaemonSet from the cache; gone means nothing is expected any more.
        let Some(ds) = self.daemon_sets.get_by_key(key) else {
            tracing::debug!(key, "DaemonSet has been deleted");
            self.expectations.delete_expectations(key);
            self.written.forget(key);
            self.pod_writes.forget(key);
            self.revisions_created.forget(key);
            return Ok(());
        };
        // Never compute from a copy older than our own last status write, nor from a pod
        // cache that has not applied our own pod creates (StaleControllerConsistencyDaemonSet).
        self.written.check(key, &ds.object.metadata)?;
        self.count_stale_skip(
            self.pod_writes
                .check(key, self.pods.last_sync_resource_version()),
        )?;

        // 3. Every node.
        let nodes = self.nodes.in_namespace("");

        // 4. An empty selector would select every pod: the user's to fix.
        let selector = ds
            .object
            .spec
            .as_ref()
            .map(|spec| spec.selector.clone())
            .unwrap_or_default();
        if selector == LabelSelector::default() {
            let event = selecting_all();
            self.recorder
                .record(&ds.object, event.type_, event.reason, event.message);
            return Ok(());
        }

        // 5. Being deleted: its pods and revisions may be going; no status either.
        if ds.object.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }

        // 6. The revisions: the current one's hash labels the pods to create. (A selector
        // that does not parse fails here, as upstream's `controlledHistories`.)
        let selector = LabelMatcher::try_from(selector).map_err(|error| {
            SyncError::ConstructHistory(RevisionError::Selector(error.to_string()))
        })?;
        let claims = Claims::new(self, &ds, selector);
        let history = self.construct_history(key, &ds, &claims).await?;
        let fits = node_fits(&ds.object, nodes.iter().map(AsRef::as_ref), self.gates);
        let context = SyncContext {
            key,
            ds: &ds,
            claims: &claims,
            fits: &fits,
            hash: &history.hash,
        };

        // 7. Earlier creates or deletes not observed yet: only the status, without raising
        // observedGeneration (this generation was not processed).
        if !self.expectations.satisfied_expectations(key) {
            return self.update_status(&context, false).await;
        }

        // 8. Pods: manage, then the rolling update, then the history cleanup.
        let updated = self.update_daemon_set(&context, &history).await;

        // 9. The status, whatever happened.
        let status = self.update_status(&context, true).await;
        match (updated, status) {
            (Err(error), Err(status_error)) => {
                tracing::warn!(key, error = %status_error, "failed to update status");
                Err(error)
            }
            (Err(error), Ok(())) | (Ok(()), Err(error)) => Err(error),
            (Ok(()), Ok(())) => Ok(()),
        }
    }

    /// upstream `syncNodeUpdate`, for a key of [`NODE_QUEUE_NAME`].
    async fn sync_other(&self, _queue: &'static str, key: &str) -> Result<(), SyncError> {
        self.sync_node_update(key);
        Ok(())
    }
}

/// How one sync claims the DaemonSet's pods and revisions: one claim manager (so the live
/// re-read of the DaemonSet before an adoption happens once per sync), and the pods adopted
/// so far in this sync.
///
/// Why remember adoptions: upstream claims the pods again at every step (`manage`, the
/// rolling update, the history cleanup, the status), each time from the cache, which has not
/// seen the adoption yet, and so patches the same orphan up to four times. Here a pod adopted
/// earlier in the sync counts as claimed without another patch.
pub(crate) struct Claims {
    pub(crate) selector: LabelMatcher,
    pub(crate) manager: ControllerRefManager,
    adopted: Mutex<HashSet<String>>,
}

impl Claims {
    fn new(sync: &DaemonSetSync, ds: &RawDaemonSet, selector: LabelMatcher) -> Self {
        Self {
            manager: ControllerRefManager::for_owner(
                sync.writer.clone(),
                &ds.object,
                selector.clone(),
            ),
            selector,
            adopted: Mutex::new(HashSet::new()),
        }
    }
}

/// What the steps after `constructHistory` share.
pub(crate) struct SyncContext<'a> {
    pub(crate) key: &'a str,
    pub(crate) ds: &'a RawDaemonSet,
    pub(crate) claims: &'a Claims,
    /// `NodeShouldRunDaemonPod` of every node, in the node list's order.
    pub(crate) fits: &'a [NodeFit],
    /// The current revision's hash.
    pub(crate) hash: &'a str,
}

impl SyncContext<'_> {
    /// The decisions' input over `nodes_to_pods`, judged now.
    pub(crate) fn input<'a>(&'a self, nodes_to_pods: &'a NodesToPods) -> SyncInput<'a> {
        SyncInput {
            daemon_set: &self.ds.object,
            fits: self.fits,
            nodes_to_pods,
            hash: self.hash,
            now: Timestamp::now(),
        }
    }
}

impl DaemonSetSync {
    /// A dependents' stale-read check, counted in
    /// `daemonset_controller_stale_sync_skips_total`.
    pub(crate) fn count_stale_skip(&self, checked: Result<(), StaleRead>) -> Result<(), SyncError> {
        checked.map_err(|stale| {
            if let Some(skips) = &self.dependent_skips {
                skips.observe(&stale);
            }
            stale.into()
        })
    }

    /// upstream `getDaemonPods`: the DaemonSet's pods and the namespace's orphans, claimed
    /// (matching orphans adopted, owned pods that stopped matching released); an orphan
    /// adopted earlier in this sync is not patched again.
    pub(crate) async fn daemon_pods(
        &self,
        ds: &RawDaemonSet,
        claims: &Claims,
    ) -> Result<Vec<Arc<CachedPod>>, ClaimErrors> {
        let is_orphan = |pod: &CachedPod| controller_of(&pod.metadata).is_none();
        let uid = |pod: &CachedPod| pod.metadata.uid.clone().unwrap_or_default();
        let (adopted, candidates): (Vec<_>, Vec<_>) = {
            let adopted = claims.adopted.lock();
            self.pods
                .controlled_by_or_orphaned(&ds.object)
                .into_iter()
                .partition(|pod| {
                    is_orphan(pod)
                        && adopted.contains(&uid(pod))
                        && claims.selector.selects(pod.as_ref())
                })
        };
        let mut claimed = claims.manager.claim(&candidates).await.into_result()?;
        claims.adopted.lock().extend(
            claimed
                .iter()
                .filter(|pod| is_orphan(pod))
                .map(|pod| uid(pod)),
        );
        claimed.extend(adopted);
        Ok(claimed)
    }

    /// upstream `getNodesToDaemonPods`: the claimed pods by the node each is for, deleted
    /// terminal pods only when `include_deleted_terminal`.
    pub(crate) async fn nodes_to_pods(
        &self,
        context: &SyncContext<'_>,
        include_deleted_terminal: bool,
    ) -> Result<NodesToPods, SyncError> {
        let pods = self
            .daemon_pods(context.ds, context.claims)
            .await
            .map_err(|source| SyncError::DaemonPods {
                name: crate::decide::spec::name(&context.ds.object).to_owned(),
                source,
            })?;
        Ok(nodes_to_daemon_pods(&pods, include_deleted_terminal))
    }

    /// The failed-pod backoff, garbage-collected first when a minute has passed since the
    /// last collection.
    pub(crate) fn with_backoff<T>(
        &self,
        now: Timestamp,
        use_it: impl FnOnce(&mut FailedPodBackoff) -> T,
    ) -> T {
        let mut backoff = self.backoff.lock();
        if backoff.last_gc.elapsed() >= BACKOFF_GC_INTERVAL {
            backoff.backoff.gc(now);
            backoff.last_gc = Instant::now();
        }
        use_it(&mut backoff.backoff)
    }

    /// upstream `updateDaemonSet`: `manage`; then, if nothing it did is still unobserved,
    /// the rolling update (`RollingUpdate` only; `OnDelete` leaves old pods); then
    /// `cleanupHistory`.
    async fn update_daemon_set(
        &self,
        context: &SyncContext<'_>,
        history: &History,
    ) -> Result<(), SyncError> {
        self.manage(context).await?;
        if self.expectations.satisfied_expectations(context.key)
            && is_rolling_update(&context.ds.object)
        {
            self.rolling_update(context).await?;
        }
        self.cleanup_history(context, &history.old)
            .await
            .map_err(|error| SyncError::CleanupHistory(Box::new(error)))
    }

    /// upstream `updateDaemonSetStatus` and `storeDaemonSetStatus`: the seven counters; a PUT
    /// of the status only when they (or `observedGeneration`) changed, retried once on a
    /// fresh read; then, while ready pods are not yet available, a look again after
    /// `minReadySeconds`.
    async fn update_status(
        &self,
        context: &SyncContext<'_>,
        update_observed_generation: bool,
    ) -> Result<(), SyncError> {
        let nodes_to_pods = self.nodes_to_pods(context, false).await?;
        let counts = count_status(&context.input(&nodes_to_pods));
        let ds = &context.ds.object;
        if status_needs_write(ds, &counts) {
            let written = self
                .writer
                .update_status_retrying(ds, STATUS_RETRY, |current| {
                    let status = current.status.get_or_insert_with(Default::default);
                    apply_counts(status, ds, &counts, update_observed_generation);
                })
                .await
                .map_err(|source| SyncError::Status {
                    key: context.key.to_owned(),
                    source,
                })?;
            self.written.record(context.key, &written.metadata);
        }
        if let Some(delay) = availability_requeue(ds, &counts) {
            self.queue.add_after(context.key.to_owned(), delay);
        }
        Ok(())
    }
}

/// The claimed pods of a node-to-pods map, by key, for the deletes of a plan.
pub(crate) fn pods_by_key(nodes_to_pods: &NodesToPods) -> HashMap<String, Arc<CachedPod>> {
    nodes_to_pods
        .values()
        .flatten()
        .map(|pod| (pod_key(pod), pod.clone()))
        .collect()
}
