//! The StatefulSet controller: construction, workers, and the sync (`Reconciler::sync`),
//! which follows upstream's `sync` step by step; `UpdateStatefulSet` is in `control.rs`.

use std::sync::Arc;

use controller_toolkit::{
    controller_ref::{ControllerRefManager, controller_of},
    runtime::{
        BuildError, Controller, ControllerIdentity, ControllerRuntime, ControllerSync,
        OwnerRouting, PrimaryHandler, Reconciler, RetryBackoff, RuntimeOptions,
    },
    stale_reads::{DependentWrites, PendingCreates, StaleRead, StaleSyncSkips, WrittenVersions},
    writes::Writer,
};
use history::SemanticComparisonCache;
use informer::{CachedPod, LabelMatcher, Lister, RawObject, SharedInformerFactory, split_key};
use k8s_openapi::{
    api::{
        apps::v1::{ControllerRevision, StatefulSet},
        core::v1::PersistentVolumeClaim,
    },
    jiff::Timestamp,
};
use kube::Client;
use workqueue::{RateLimitingQueue, SyncFailure};

use crate::{
    decide::{BrokenRolloutRecovery, availability_recheck},
    features::FeatureGates,
    identity::{OrdinalRange, parent_and_ordinal},
    metrics::StatefulSetMetrics,
    pod_control::{PodControlError, StatefulPodControl},
    revisions::RevisionError,
};

/// Canonical controller name: event source, client name, health check.
pub const CONTROLLER_NAME: &str = "statefulset-controller";
/// Work queue name (and `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "statefulset";
/// No retry ceiling for StatefulSets, as upstream.
const IDENTITY: ControllerIdentity = ControllerIdentity {
    name: CONTROLLER_NAME,
    queue: QUEUE_NAME,
    max_retries: None,
    retry_backoff: RetryBackoff::ControllerDefault,
};

/// Construction failed (the queue or an informer index could not be set up).
pub type StatefulSetError = BuildError;

/// A StatefulSet as cached: the typed set and the JSON the server sent, from which revision
/// data is built byte for byte.
pub type RawStatefulSet = RawObject<StatefulSet>;

/// Why one sync failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
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

impl SyncFailure for SyncError {
    fn deferred(&self) -> bool {
        matches!(self, SyncError::StaleRead(_))
    }
}

/// The StatefulSet controller: build it with `StatefulSetController::new` (client, informer
/// factory, options) before the informer factory starts, then `run(workers, shutdown)` it. It
/// is the toolkit's [`Controller`], whose construction and run loop every controller shares.
pub type StatefulSetController = Controller<StatefulSetSync>;

/// What the manager chooses for the controller besides its client and caches.
#[derive(Clone, Default)]
pub struct StatefulSetOptions {
    /// Metrics, stale-read counter and write executor, as for every controller.
    pub runtime: RuntimeOptions,
    /// The controller's own gauges (unavailable replicas, maxUnavailable).
    pub gauges: Option<StatefulSetMetrics>,
    /// Feature gates; `Default` is upstream v1.36's.
    pub gates: FeatureGates,
    /// kcm-rs only: recovery from broken rollouts (`Default`: off unless a set's annotation
    /// opts in, 30s grace).
    pub recovery: BrokenRolloutRecovery,
}

/// The StatefulSet controller's sync (upstream `sync`) and what it reads and writes through,
/// shared by its workers; built by [`StatefulSetController::new`].
pub struct StatefulSetSync {
    pub(crate) writer: Writer,
    pub(crate) sets: Lister<RawStatefulSet>,
    pub(crate) pods: Lister<CachedPod>,
    pub(crate) revisions: Lister<ControllerRevision>,
    pub(crate) claims: Lister<PersistentVolumeClaim>,
    pub(crate) queue: RateLimitingQueue<String>,
    pub(crate) pod_control: StatefulPodControl,
    pub(crate) semantic: SemanticComparisonCache,
    pub(crate) written: WrittenVersions,
    /// Our pod writes per set: a sync waits until the pod cache has applied them.
    pub(crate) pod_writes: Arc<DependentWrites>,
    /// The revision we last created per set: a sync waits until the revision cache holds it.
    pub(crate) revisions_created: PendingCreates,
    /// Counts the syncs deferred for pods and revisions (the set's own check counts itself).
    pub(crate) dependent_skips: Option<StaleSyncSkips>,
    pub(crate) metrics: Option<StatefulSetMetrics>,
    pub(crate) gates: FeatureGates,
    pub(crate) recovery: BrokenRolloutRecovery,
}

impl ControllerSync for StatefulSetSync {
    type Options = StatefulSetOptions;

    /// Wires the StatefulSet, pod, ControllerRevision and claim informers and the queue.
    /// Must be called inside a tokio runtime; starts no informer.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: StatefulSetOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let set_informer = informers.informer::<RawStatefulSet>();
        let pod_informer = informers.informer::<CachedPod>();
        let revision_informer = informers.informer::<ControllerRevision>();
        revision_informer.add_controller_indexer()?;
        let claim_informer = informers.informer::<PersistentVolumeClaim>();
        pod_informer.add_controller_indexer()?;

        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        runtime.watches(&set_informer, PrimaryHandler::new(runtime.queue()));
        runtime.owns(
            &pod_informer,
            OwnerRouting::new(set_informer.lister(), runtime.queue()),
        );
        runtime.reads(&revision_informer);
        runtime.reads(&claim_informer);
        let pod_writes = Arc::new(DependentWrites::new("", "pods"));
        let writer = runtime.writer().clone();
        let sync = StatefulSetSync {
            writer: writer.clone(),
            sets: set_informer.lister(),
            pods: pod_informer.lister(),
            revisions: revision_informer.lister(),
            claims: claim_informer.lister(),
            queue: runtime.queue().clone(),
            pod_control: StatefulPodControl::new(
                writer,
                runtime.recorder().clone(),
                pod_writes.clone(),
            ),
            pod_writes,
            revisions_created: PendingCreates::new("apps", "controllerrevisions"),
            semantic: SemanticComparisonCache::default(),
            written: WrittenVersions::new("apps", "statefulsets")
                .counting(options.runtime.stale_sync_skips.clone()),
            dependent_skips: options.runtime.stale_sync_skips,
            metrics: options.gauges,
            gates: options.gates,
            recovery: options.recovery,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for StatefulSetSync {
    type Error = SyncError;

    /// upstream `sync`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
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
        // Step 1: never compute from a set older than our own last write of it.
        self.written.check(key, &set.object.metadata)?;
        self.count_stale_skip(
            self.pod_writes
                .check(key, self.pods.last_sync_resource_version()),
        )?;
        let selector = match set
            .object
            .spec
            .as_ref()
            .map(|spec| LabelMatcher::try_from(spec.selector.clone()))
        {
            Some(Ok(selector)) => selector,
            Some(Err(error)) => {
                tracing::warn!(key, %error, "error converting StatefulSet selector");
                return Ok(());
            }
            None => return Ok(()),
        };
        self.pod_control
            .warn_unnameable_ordinals(&set.object, OrdinalRange::of(&set.object));
        let manager =
            ControllerRefManager::for_owner(self.writer.clone(), &set.object, selector.clone());

        // Step 4: adopt orphan revisions.
        for orphan in self
            .list_revisions(&set.object, &selector)
            .iter()
            .filter(|revision| controller_of(&revision.metadata).is_none())
        {
            manager
                .adopt(orphan.as_ref())
                .await
                .map_err(SyncError::AdoptRevisions)?;
        }

        // Step 5: claim pods whose name says they belong to this set.
        let candidates = self.pods.controlled_by_or_orphaned(&set.object);
        let pods = manager
            .claim_with_filter(&candidates, |pod| {
                parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).0 == name
            })
            .await
            .into_result()?;

        // Step 6.
        let now = Timestamp::now();
        let updated = self
            .update_stateful_set(&set, &selector, &pods, now)
            .await?;

        // Step 7: look again when a ready pod should have turned available, at the earliest
        // such moment measured after the status write (kubernetes#135428), or (kcm-rs only)
        // when a stuck pod's recovery grace period ends, whichever comes first.
        let available =
            availability_recheck(&set.object, &updated.status, &pods, now, Timestamp::now());
        if let Some(delay) = available.into_iter().chain(updated.recovery_recheck).min() {
            if updated.recovery_recheck == Some(delay) {
                tracing::debug!(key, ?delay, "a pod will count as stuck; syncing again then");
            }
            self.queue.add_after(key.to_owned(), delay);
        }
        Ok(())
    }
}

impl StatefulSetSync {
    /// A dependents' stale-read check, counted in `statefulset_controller_stale_sync_skips_total`.
    pub(crate) fn count_stale_skip(&self, checked: Result<(), StaleRead>) -> Result<(), SyncError> {
        checked.map_err(|stale| {
            if let Some(skips) = &self.dependent_skips {
                skips.observe(&stale);
            }
            stale.into()
        })
    }

    /// Revisions of the set: matching the selector, owned by it or orphaned.
    pub(crate) fn list_revisions(
        &self,
        set: &StatefulSet,
        selector: &LabelMatcher,
    ) -> Vec<Arc<ControllerRevision>> {
        // Owned and orphaned revisions come from the controller index (upstream v1.36's
        // owner index) instead of a scan of the namespace.
        let mut revisions = self.revisions.controlled_by_or_orphaned(set);
        revisions.retain(|revision| selector.selects(revision.as_ref()));
        revisions
    }
}
