//! The controller runtime: everything a kcm-rs controller is made of besides its sync.
//!
//! Upstream's controllers each wire the same machinery by hand (a rate-limited queue, an event
//! recorder, informer handlers that turn events into keys, a cache-sync wait, N workers, a
//! shutdown that lets in-flight syncs finish). Here it is written once, in the shape of
//! kube-rs's `Controller::new(..).owns(..).run(..)`: a controller builds a
//! [`ControllerRuntime`], declares what it watches ([`ControllerRuntime::watches`] for its own
//! kind, [`ControllerRuntime::owns`] for dependents routed to their owner,
//! [`ControllerRuntime::reads`] for caches it only reads), and hands its sync to
//! [`ControllerRuntime::run`]. Its `controller.rs` keeps only the sync and its hooks.
//!
//! A controller may have more queues than its own ([`ControllerRuntime::add_queue`]), each
//! with as many workers and the same retry rule: upstream's DaemonSet controller puts node
//! names on a second queue, `daemonset-node-updates`, whose workers decide which DaemonSets a
//! node change concerns ([`Reconciler::sync_other`]).

mod routing;

use std::{future::Future, sync::Arc, time::Duration};

use informer::{
    EventHandler, FactoryConfig, HasSynced, SharedInformer, SharedInformerFactory,
    wait_for_named_cache_sync,
};
use kube::Client;
use tokio_util::sync::CancellationToken;
use workqueue::{
    ControllerMetrics, ItemExponentialFailureRateLimiter, QueueConfig, QueueError,
    RateLimitingQueue, SyncFailure, SyncMetrics, WorkerPool, WorkqueueMetrics,
};

use crate::{
    events::{EventRecorder, RecorderConfig},
    stale_reads::StaleSyncSkips,
    writes::{WriteExecutor, Writer, within_sync},
};

pub use routing::{
    Dependent, DependentEvents, DependentObserver, Owner, OwnerRouting, PrimaryHandler,
    owner_selector,
};

/// A controller's sync: what the workers call for each key of the queue.
pub trait Reconciler: Send + Sync + 'static {
    /// Why a sync failed (decides whether the key is retried).
    type Error: SyncFailure + Send + 'static;

    /// Brings the object with `key` (`namespace/name`) where its spec says.
    fn sync(&self, key: &str) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Processes `key` of the controller's other queue named `queue` (one added with
    /// [`ControllerRuntime::add_queue`]); a failure requeues it with backoff, as on the main
    /// queue. Controllers with one queue keep this default, which does nothing.
    fn sync_other(
        &self,
        _queue: &'static str,
        _key: &str,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

/// A controller's sync together with how it is built: what a controller crate implements so
/// that [`Controller`] can construct and run it. Its `build` wires the informers, indexes and
/// handlers on a fresh [`ControllerRuntime`] and returns the sync its workers will call.
pub trait ControllerSync: Reconciler + Sized {
    /// What the manager chooses for the controller besides its client and caches.
    type Options;

    /// Wires the controller on `informers` with its own `client` (inside a tokio runtime;
    /// starts no informer).
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: Self::Options,
    ) -> Result<(ControllerRuntime, Self), BuildError>;
}

/// A built controller: its runtime and the sync its workers call. Each controller crate names
/// it for its sync (`pub type ReplicaSetController = Controller<ReplicaSetSync>`), so the
/// construction and the run loop exist once.
pub struct Controller<S> {
    runtime: ControllerRuntime,
    sync: Arc<S>,
}

impl<S: ControllerSync> Controller<S> {
    /// Builds the controller ([`ControllerSync::build`]) before the informer factory starts.
    pub fn new(
        client: Client,
        informers: &SharedInformerFactory,
        options: S::Options,
    ) -> Result<Self, BuildError> {
        let (runtime, sync) = S::build(client, informers, options)?;
        Ok(Self {
            runtime,
            sync: Arc::new(sync),
        })
    }

    /// Waits for the caches, then runs `workers` workers until `shutdown`; returns when every
    /// in-flight sync has finished.
    pub async fn run(self, workers: usize, shutdown: CancellationToken) {
        self.runtime.run(workers, shutdown, self.sync).await;
    }

    /// Builds the controller on an informer factory of its own and starts the factory; the
    /// returned future runs `workers` workers until `shutdown`. How a controller runs outside
    /// the manager, which shares one factory among its controllers (each crate's tests).
    pub fn standalone(
        client: Client,
        options: S::Options,
        workers: usize,
        shutdown: CancellationToken,
    ) -> Result<impl Future<Output = ()> + Send + 'static, BuildError> {
        let informers = SharedInformerFactory::new(client.clone(), FactoryConfig::default());
        let controller = Self::new(client, &informers, options)?;
        informers.start(shutdown.clone());
        Ok(controller.run(workers, shutdown))
    }
}

#[cfg(feature = "testing")]
impl<S: ControllerSync> Controller<S> {
    /// Runs the controller [`standalone`](Self::standalone) with two workers in the test
    /// `cluster`, its requests carrying the user agent `agent` (each crate's test harness).
    pub fn spawn_in(cluster: &mut sim::testing::TestCluster, agent: &str, options: S::Options) {
        cluster.spawn_controller(agent, |client, shutdown| {
            Self::standalone(client, options, 2, shutdown).expect("the controller builds")
        });
    }
}

/// A controller could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The work queue could not be created (no tokio runtime) or registered.
    #[error("creating the work queue: {0}")]
    Queue(#[from] workqueue::QueueError),
    /// An index could not be added to a shared informer.
    #[error("adding an informer index: {0}")]
    Index(#[from] informer::InformerError),
}

/// Who a controller is: the names upstream uses for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerIdentity {
    /// Canonical controller name: event source, client name, health check, log field.
    pub name: &'static str,
    /// Work queue name (the `name` label of the workqueue metrics).
    pub queue: &'static str,
    /// Requeues after which a failing key is dropped until its next event (upstream: 15 for
    /// Deployments, none for ReplicaSets and StatefulSets).
    pub max_retries: Option<usize>,
    /// How long a failing key waits before its retry, on every queue of the controller.
    pub retry_backoff: RetryBackoff,
}

/// How a controller's queues space the retries of a failing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryBackoff {
    /// client-go's `DefaultTypedControllerRateLimiter`: per key 5 ms doubling to 1,000 s, and
    /// 10 retries a second with a burst of 100 over all keys (the apps/v1 controllers).
    ControllerDefault,
    /// Per key only, `base` doubling up to `max`, with no overall bucket (upstream's Job
    /// controller: 1 s to 1 min, `NewTypedItemExponentialFailureRateLimiter`).
    PerKey {
        /// The first retry's delay.
        base: Duration,
        /// The longest delay.
        max: Duration,
    },
}

/// What the manager chooses for every controller alike, besides its client and caches.
#[derive(Clone, Default)]
pub struct RuntimeOptions {
    /// Workqueue and sync-duration metrics.
    pub metrics: ControllerMetrics,
    /// Counts syncs deferred by the stale-read checks
    /// (`<controller>_stale_sync_skips_total`).
    pub stale_sync_skips: Option<StaleSyncSkips>,
    /// Where the controller's writes (events included) go. `None` sends them to the API server
    /// through the controller's client; shadow mode passes an executor that records them and
    /// sends nothing.
    pub writes: Option<Arc<dyn WriteExecutor>>,
}

impl RuntimeOptions {
    /// Options of a controller run on its own: its workqueue and sync metrics and its
    /// `<metrics_subsystem>_stale_sync_skips_total` registered into `registry`, writes sent to
    /// the API server.
    pub fn registered(
        registry: &prometheus::Registry,
        metrics_subsystem: &str,
    ) -> Result<Self, prometheus::Error> {
        Ok(Self {
            metrics: ControllerMetrics::register(registry)?,
            stale_sync_skips: Some(StaleSyncSkips::register(registry, metrics_subsystem)?),
            writes: None,
        })
    }
}

/// The queue, write layer, recorder, handlers and worker pool of one controller.
pub struct ControllerRuntime {
    identity: ControllerIdentity,
    queue: RateLimitingQueue<String>,
    /// The controller's other queues, by name ([`ControllerRuntime::add_queue`]).
    other_queues: Vec<(&'static str, RateLimitingQueue<String>)>,
    workqueue_metrics: Option<WorkqueueMetrics>,
    writer: Writer,
    recorder: EventRecorder,
    caches: Vec<Box<dyn HasSynced>>,
    sync_metrics: Option<SyncMetrics>,
}

/// A rate-limited queue named `name`, retrying by `backoff`, with the workqueue metrics if
/// given.
fn new_queue(
    name: &'static str,
    backoff: RetryBackoff,
    metrics: Option<&WorkqueueMetrics>,
) -> Result<RateLimitingQueue<String>, QueueError> {
    let mut config = QueueConfig::new(name);
    if let RetryBackoff::PerKey { base, max } = backoff {
        config = config.with_rate_limiter(ItemExponentialFailureRateLimiter::new(base, max));
    }
    if let Some(metrics) = metrics {
        config = config.with_metrics(metrics.clone());
    }
    RateLimitingQueue::new(config)
}

impl ControllerRuntime {
    /// Creates the queue (with the workqueue metrics, if given), the write layer (sending to
    /// the API server through `client` unless `options` names another executor) and starts
    /// the event recorder on it. Must be called inside a tokio runtime.
    pub fn new(
        client: &Client,
        identity: ControllerIdentity,
        options: &RuntimeOptions,
    ) -> Result<Self, QueueError> {
        let workqueue_metrics = options.metrics.workqueue.clone();
        let writer = match &options.writes {
            Some(executor) => Writer::with_executor(client.clone(), executor.clone()),
            None => Writer::new(client.clone()),
        };
        Ok(Self {
            identity,
            queue: new_queue(
                identity.queue,
                identity.retry_backoff,
                workqueue_metrics.as_ref(),
            )?,
            other_queues: Vec::new(),
            workqueue_metrics,
            recorder: EventRecorder::start_with_writer(
                writer.clone(),
                RecorderConfig::new(identity.name),
            ),
            writer,
            caches: Vec::new(),
            sync_metrics: options.metrics.sync.clone(),
        })
    }

    /// The controller's queue of `namespace/name` keys.
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.queue
    }

    /// Adds a queue named `name` (the `name` label of its workqueue metrics) beside the
    /// controller's own: [`ControllerRuntime::run`] gives it as many workers, which call
    /// [`Reconciler::sync_other`] with `name` for each key, with the same retry rule.
    pub fn add_queue(
        &mut self,
        name: &'static str,
    ) -> Result<RateLimitingQueue<String>, QueueError> {
        let queue = new_queue(
            name,
            self.identity.retry_backoff,
            self.workqueue_metrics.as_ref(),
        )?;
        self.other_queues.push((name, queue.clone()));
        Ok(queue)
    }

    /// The controller's write layer: every API write of the controller goes through it.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// The controller's event recorder.
    pub fn recorder(&self) -> &EventRecorder {
        &self.recorder
    }

    /// The controller's own kind: every add, update and delete enqueues the object's key.
    pub fn watches<K>(&mut self, informer: &SharedInformer<K>, handler: PrimaryHandler)
    where
        K: informer::InformerResource,
    {
        self.handles(informer, handler);
    }

    /// A dependent kind: each event enqueues the owner it names, or the owners that may adopt
    /// it; the creations and deletions its events record (the expectations) are observed inline
    /// with the cache ([`OwnerRouting::split`]).
    pub fn owns<D, O, E>(&mut self, informer: &SharedInformer<D>, routing: OwnerRouting<O, E>)
    where
        D: informer::InformerResource + Dependent,
        O: Owner,
        E: DependentEvents<D>,
    {
        let (routing, observer) = routing.split::<D>();
        if let Some(observer) = observer {
            informer.add_inline_handler(observer);
        }
        self.handles(informer, routing);
    }

    /// Any other handler on `informer`; its initial list is waited for like the others.
    pub fn handles<K, H>(&mut self, informer: &SharedInformer<K>, handler: H)
    where
        K: informer::InformerResource,
        H: EventHandler<K>,
    {
        self.caches
            .push(Box::new(informer.add_event_handler(handler)));
    }

    /// A cache the sync reads without reacting to its events; waited for before the workers
    /// start.
    pub fn reads<K>(&mut self, informer: &SharedInformer<K>)
    where
        K: informer::InformerResource,
    {
        self.caches.push(Box::new(informer.clone()));
    }

    /// Waits for every cache and handler, then runs `workers` workers calling
    /// [`Reconciler::sync`] for each key until `shutdown` (and as many on each other queue,
    /// calling [`Reconciler::sync_other`]): success forgets the key, a retryable failure
    /// requeues it with backoff (up to the retry ceiling), as upstream's `handleErr`. Returns
    /// when every in-flight sync has finished and the recorder has sent its events. Only the
    /// main queue's syncs are timed in `controller_sync_duration_seconds`.
    pub async fn run<R: Reconciler>(
        self,
        workers: usize,
        shutdown: CancellationToken,
        reconciler: Arc<R>,
    ) {
        let caches: Vec<&dyn HasSynced> = self.caches.iter().map(AsRef::as_ref).collect();
        if !wait_for_named_cache_sync(self.identity.name, &shutdown, &caches).await {
            self.queue.shut_down();
            for (_, queue) in &self.other_queues {
                queue.shut_down();
            }
            return;
        }
        let pool = |queue: &RateLimitingQueue<String>, metrics| WorkerPool {
            queue: queue.clone(),
            workers,
            controller: self.identity.name,
            metrics,
            max_retries: self.identity.max_retries,
        };
        let main = {
            let reconciler = reconciler.clone();
            pool(&self.queue, self.sync_metrics.clone()).run_syncs(
                shutdown.clone(),
                move |key: String| {
                    let reconciler = reconciler.clone();
                    async move { within_sync(reconciler.sync(&key)).await }
                },
            )
        };
        let others = self.other_queues.iter().map(|(name, queue)| {
            let (name, reconciler) = (*name, reconciler.clone());
            pool(queue, None).run_syncs(shutdown.clone(), move |key: String| {
                let reconciler = reconciler.clone();
                async move { within_sync(reconciler.sync_other(name, &key)).await }
            })
        });
        futures::future::join(main, futures::future::join_all(others)).await;
        self.recorder.flush().await;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::*;

    /// Records which queue each key came from.
    #[derive(Default)]
    struct Recorded(Mutex<Vec<(&'static str, String)>>);

    /// A sync that never fails.
    #[derive(Debug)]
    enum Never {}

    impl std::fmt::Display for Never {
        fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match *self {}
        }
    }

    impl SyncFailure for Never {}

    impl Reconciler for Recorded {
        type Error = Never;

        async fn sync(&self, key: &str) -> Result<(), Self::Error> {
            self.0.lock().push(("main", key.to_owned()));
            Ok(())
        }

        async fn sync_other(&self, queue: &'static str, key: &str) -> Result<(), Self::Error> {
            self.0.lock().push((queue, key.to_owned()));
            Ok(())
        }
    }

    /// A client that is never called: the runtime under test has no cache and writes nothing.
    fn offline_client() -> Client {
        let uri: http::Uri = "http://127.0.0.1:9".parse().expect("valid uri");
        Client::try_from(kube::Config::new(uri)).expect("client")
    }

    /// A second queue gets its own workers, which call `sync_other` with its name, and its own
    /// workqueue metrics under that name.
    #[tokio::test]
    async fn each_queue_is_worked_and_named() {
        let registry = prometheus::Registry::new();
        let options = RuntimeOptions {
            metrics: ControllerMetrics::register(&registry).expect("registers"),
            ..RuntimeOptions::default()
        };
        let identity = ControllerIdentity {
            name: "test-controller",
            queue: "test",
            max_retries: None,
            retry_backoff: RetryBackoff::ControllerDefault,
        };
        let mut runtime =
            ControllerRuntime::new(&offline_client(), identity, &options).expect("runtime");
        let nodes = runtime.add_queue("test-node-updates").expect("queue");
        runtime.queue().add("ns/a".to_owned());
        nodes.add("node-1".to_owned());
        let recorded = Arc::new(Recorded::default());
        let shutdown = CancellationToken::new();
        let run = tokio::spawn(runtime.run(1, shutdown.clone(), recorded.clone()));
        for _ in 0..200 {
            if recorded.0.lock().len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        shutdown.cancel();
        run.await.expect("runs");
        let mut seen = recorded.0.lock().clone();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("main", "ns/a".to_owned()),
                ("test-node-updates", "node-1".to_owned())
            ]
        );
        let adds: Vec<String> = registry
            .gather()
            .into_iter()
            .filter(|family| family.name() == "workqueue_adds_total")
            .flat_map(|family| family.get_metric().to_vec())
            .map(|metric| metric.get_label()[0].value().to_owned())
            .collect();
        assert_eq!(adds, ["test", "test-node-updates"]);
    }
}
