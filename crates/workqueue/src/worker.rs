//! The standard controller worker loop: N workers take keys from the queue, process each one
//! and mark it done, until shutdown.
//!
//! Processing decides what happens to a key (`forget` on success, `add_rate_limited` on error,
//! a retry ceiling for Deployments), so the loop only guarantees the invariants: a key is
//! handed to one worker at a time (the queue's processing set), every key taken is `done`
//! after processing, and on shutdown workers stop taking new keys while in-flight ones finish.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Instant,
};

use prometheus::{HistogramVec, Registry};
use tokio_util::sync::CancellationToken;

use crate::{RateLimitingQueue, WorkItem, WorkqueueMetrics, histogram_vec, registered};

/// Buckets of the sync duration histogram: 1 ms to about 1 minute.
const SYNC_DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// kcm-rs's per-controller sync duration histogram (`controller_sync_duration_seconds`,
/// label `controller`). Upstream has none; `workqueue_work_duration_seconds` is the closest.
/// It also tells when the first sync of any controller sharing it started
/// ([`SyncMetrics::first_sync_started`]): the manager's time from winning the Lease to work.
#[derive(Clone)]
pub struct SyncMetrics {
    duration: HistogramVec,
    first_sync: Arc<FirstSync>,
}

/// When the first sync started, and a way to wait for it.
struct FirstSync {
    started: AtomicBool,
    signal: tokio::sync::watch::Sender<Option<Instant>>,
}

impl FirstSync {
    fn mark(&self) {
        if !self.started.swap(true, Ordering::AcqRel) {
            self.signal.send_replace(Some(Instant::now()));
        }
    }
}

impl SyncMetrics {
    /// Registers the family once per registry; clone the handle for each controller.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let duration = registered(
            registry,
            histogram_vec(
                "controller_sync_duration_seconds",
                "Time one sync of one object took, by controller (kcm-rs).",
                SYNC_DURATION_BUCKETS,
                &["controller"],
            )?,
        )?;
        Ok(Self {
            duration,
            first_sync: Arc::new(FirstSync {
                started: AtomicBool::new(false),
                signal: tokio::sync::watch::Sender::new(None),
            }),
        })
    }

    /// When a worker of a controller using these metrics took its first key: waits for it,
    /// and answers at once if that happened already.
    pub async fn first_sync_started(&self) -> Instant {
        let mut started = self.first_sync.signal.subscribe();
        loop {
            if let Some(at) = *started.borrow_and_update() {
                return at;
            }
            // The sender lives as long as `self`, so `changed` cannot fail while we wait.
            if started.changed().await.is_err() {
                return Instant::now();
            }
        }
    }
}

/// A failed sync, as the worker loop sees it.
pub trait SyncFailure: std::fmt::Display {
    /// Whether retrying can help. Upstream's Deployment controller, for one, forgets a key
    /// whose failure comes from its namespace being deleted.
    fn retryable(&self) -> bool {
        true
    }

    /// Whether the sync was put off on purpose (its caches have not caught up with the
    /// controller's own writes yet): retried like a failure, but logged at debug, since it is
    /// routine and says nothing is wrong.
    fn deferred(&self) -> bool {
        false
    }
}

/// What happens to a key after its sync (upstream's `handleErr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterSync {
    /// Done (success, or a failure retrying cannot fix): forget its failure history.
    Forget,
    /// Failed: retry with the queue's backoff.
    Retry,
    /// Failed after the retry ceiling: give up on it until its next event.
    Drop,
}

/// The decision for one finished sync: `failure` is `None` on success, else whether the failure
/// is retryable; `requeues` is the key's failure count so far; `max_retries` the ceiling, if any.
pub fn after_sync(failure: Option<bool>, requeues: usize, max_retries: Option<usize>) -> AfterSync {
    match failure {
        None | Some(false) => AfterSync::Forget,
        Some(true) if max_retries.is_some_and(|max| requeues >= max) => AfterSync::Drop,
        Some(true) => AfterSync::Retry,
    }
}

/// The metric handles a controller needs, registered once per process registry and cloned into
/// every controller (a registry accepts each family only once).
#[derive(Clone, Default)]
pub struct ControllerMetrics {
    /// Workqueue families (`workqueue_*`).
    pub workqueue: Option<WorkqueueMetrics>,
    /// Sync duration histogram.
    pub sync: Option<SyncMetrics>,
}

impl ControllerMetrics {
    /// Registers both into `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        Ok(Self {
            workqueue: Some(WorkqueueMetrics::register(registry)?),
            sync: Some(SyncMetrics::register(registry)?),
        })
    }
}

/// How the workers of one controller run.
pub struct WorkerPool<T: WorkItem> {
    /// The controller's queue.
    pub queue: RateLimitingQueue<T>,
    /// Number of concurrent workers (at least one runs).
    pub workers: usize,
    /// Controller name for the sync-duration label.
    pub controller: &'static str,
    /// Sync duration histogram, if metrics are wanted.
    pub metrics: Option<SyncMetrics>,
    /// Requeues after which a failing key is dropped (upstream: 15 for Deployments, none for
    /// ReplicaSets and StatefulSets).
    pub max_retries: Option<usize>,
}

impl<T: WorkItem> WorkerPool<T> {
    /// Runs `sync` for every key until `shutdown`, applying [`after_sync`]: success forgets the
    /// key, a retryable failure requeues it with backoff until `max_retries`, anything else
    /// forgets it. Failures are logged with the key.
    pub async fn run_syncs<F, Fut, E>(self, shutdown: CancellationToken, sync: F)
    where
        T: std::fmt::Display,
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: SyncFailure + Send + 'static,
    {
        let queue = self.queue.clone();
        let (controller, max_retries) = (self.controller, self.max_retries);
        self.run(shutdown, move |key: T| {
            let outcome = sync(key.clone());
            let queue = queue.clone();
            async move {
                let result = outcome.await;
                let failure = result.as_ref().err().map(SyncFailure::retryable);
                match after_sync(failure, queue.num_requeues(&key), max_retries) {
                    AfterSync::Forget => queue.forget(&key),
                    AfterSync::Retry => {
                        match &result {
                            Err(error) if error.deferred() => {
                                tracing::debug!(controller, key = %key, %error, "sync deferred; retrying");
                            }
                            Err(error) => {
                                tracing::warn!(controller, key = %key, %error, "sync failed; retrying");
                            }
                            Ok(()) => {}
                        }
                        queue.add_rate_limited(key);
                    }
                    AfterSync::Drop => {
                        if let Err(error) = &result {
                            tracing::warn!(controller, key = %key, %error, "dropping key after the retry ceiling");
                        }
                        queue.forget(&key);
                    }
                }
            }
        })
        .await;
    }

    /// Runs the workers until `shutdown`; returns once every worker has finished its current
    /// key. The queue is shut down on return, so later adds are dropped.
    pub async fn run<F, Fut>(self, shutdown: CancellationToken, process: F)
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let process = Arc::new(process);
        let first_sync = self
            .metrics
            .as_ref()
            .map(|metrics| metrics.first_sync.clone());
        let histogram = self
            .metrics
            .map(|metrics| metrics.duration.with_label_values(&[self.controller]));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.workers.max(1) {
            let queue = self.queue.clone();
            let shutdown = shutdown.clone();
            let process = process.clone();
            let histogram = histogram.clone();
            let first_sync = first_sync.clone();
            workers.spawn(async move {
                loop {
                    // Biased: once shutdown is requested no new key is taken. The queue's `get`
                    // hands a key over within the poll that completes it, so none is lost here.
                    let item = tokio::select! {
                        biased;
                        _ = shutdown.cancelled() => break,
                        item = queue.get() => item,
                    };
                    let Some(item) = item else { break };
                    if let Some(first_sync) = &first_sync {
                        first_sync.mark();
                    }
                    let started = Instant::now();
                    process(item.clone()).await;
                    if let Some(histogram) = &histogram {
                        histogram.observe(started.elapsed().as_secs_f64());
                    }
                    queue.done(&item);
                    // A full queue hands keys over without waiting, and a sync that changes
                    // nothing writes nothing: without this a worker could keep its thread for
                    // thousands of syncs (20,000 ReplicaSets after a takeover) while another
                    // controller's start, or the lease renewal, waits to be polled.
                    tokio::task::consume_budget().await;
                }
            });
        }
        shutdown.cancelled().await;
        self.queue.shut_down();
        while workers.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::HashSet,
        sync::atomic::{AtomicUsize, Ordering},
        time::Duration,
    };

    use parking_lot::Mutex;

    use super::*;
    use crate::QueueConfig;

    #[test]
    fn after_sync_follows_handle_err() {
        // (failure: None = success / Some(retryable), requeues, ceiling, expected)
        let cases = [
            (None, 0, None, AfterSync::Forget),
            (None, 20, Some(15), AfterSync::Forget),
            (Some(true), 0, None, AfterSync::Retry),
            (Some(true), 1000, None, AfterSync::Retry),
            (Some(true), 14, Some(15), AfterSync::Retry),
            (Some(true), 15, Some(15), AfterSync::Drop),
            (Some(false), 0, Some(15), AfterSync::Forget),
            (Some(false), 15, None, AfterSync::Forget),
        ];
        for (failure, requeues, ceiling, expected) in cases {
            assert_eq!(
                after_sync(failure, requeues, ceiling),
                expected,
                "{failure:?} {requeues} {ceiling:?}"
            );
        }
    }

    /// A pool of `workers` on `queue` for controller "test", without metrics or a retry
    /// ceiling.
    fn test_pool(queue: &RateLimitingQueue<String>, workers: usize) -> WorkerPool<String> {
        WorkerPool {
            queue: queue.clone(),
            workers,
            controller: "test",
            metrics: None,
            max_retries: None,
        }
    }

    struct Failed(bool);

    impl std::fmt::Display for Failed {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "failed")
        }
    }

    impl SyncFailure for Failed {
        fn retryable(&self) -> bool {
            self.0
        }
    }

    #[tokio::test(start_paused = true)]
    async fn failing_keys_are_retried_up_to_the_ceiling() {
        let queue = RateLimitingQueue::new(QueueConfig::new("")).unwrap();
        let attempts = Arc::new(Mutex::new(std::collections::HashMap::<String, usize>::new()));
        let shutdown = CancellationToken::new();
        queue.add("ns/flaky".to_string());
        queue.add("ns/hopeless".to_string());
        let pool = WorkerPool {
            max_retries: Some(3),
            ..test_pool(&queue, 1)
        };
        let counts = attempts.clone();
        let run = tokio::spawn(pool.run_syncs(shutdown.clone(), move |key: String| {
            let counts = counts.clone();
            async move {
                *counts.lock().entry(key.clone()).or_default() += 1;
                // "flaky" fails retryably forever, "hopeless" fails in a way retries cannot fix.
                Err::<(), _>(Failed(key.ends_with("flaky")))
            }
        }));
        tokio::time::sleep(Duration::from_secs(10)).await;
        shutdown.cancel();
        run.await.unwrap();
        let attempts = attempts.lock().clone();
        // One first attempt plus three retries, then dropped; the other is tried once.
        assert_eq!(attempts["ns/flaky"], 4);
        assert_eq!(attempts["ns/hopeless"], 1);
        assert_eq!(
            queue.num_requeues(&"ns/flaky".to_string()),
            0,
            "forgotten when dropped"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn processes_every_key_and_finishes_in_flight_work_on_shutdown() {
        let queue = RateLimitingQueue::new(QueueConfig::new("")).unwrap();
        let registry = Registry::new();
        let metrics = SyncMetrics::register(&registry).unwrap();
        let processed = Arc::new(Mutex::new(HashSet::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        for key in 0..20 {
            queue.add(format!("ns/{key}"));
        }
        let pool = WorkerPool {
            metrics: Some(metrics),
            ..test_pool(&queue, 3)
        };
        let (seen, busy) = (processed.clone(), in_flight.clone());
        let run = tokio::spawn(pool.run(shutdown.clone(), move |key: String| {
            let (seen, busy) = (seen.clone(), busy.clone());
            async move {
                busy.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                seen.lock().insert(key);
                busy.fetch_sub(1, Ordering::SeqCst);
            }
        }));
        while processed.lock().len() < 20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        queue.add("ns/slow".to_string());
        tokio::time::sleep(Duration::from_millis(1)).await;
        shutdown.cancel();
        run.await.unwrap();
        assert_eq!(in_flight.load(Ordering::SeqCst), 0, "run returned mid-sync");
        assert!(processed.lock().len() >= 20);
        assert!(queue.shutting_down());
        let families = registry.gather();
        let histogram = families
            .iter()
            .find(|family| family.name() == "controller_sync_duration_seconds")
            .expect("histogram registered");
        let count = histogram.get_metric()[0].get_histogram().get_sample_count();
        assert_eq!(count as usize, processed.lock().len());
    }

    #[tokio::test]
    async fn a_key_added_during_processing_is_processed_again_not_concurrently() {
        let queue = RateLimitingQueue::new(QueueConfig::new("")).unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let concurrent = Arc::new(AtomicUsize::new(0));
        let max_concurrent = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        queue.add("ns/a".to_string());
        let pool = test_pool(&queue, 4);
        let (r, c, m, q) = (
            runs.clone(),
            concurrent.clone(),
            max_concurrent.clone(),
            queue.clone(),
        );
        let run = tokio::spawn(pool.run(shutdown.clone(), move |key: String| {
            let (r, c, m, q) = (r.clone(), c.clone(), m.clone(), q.clone());
            async move {
                let now = c.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                if r.fetch_add(1, Ordering::SeqCst) == 0 {
                    q.add(key);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                c.fetch_sub(1, Ordering::SeqCst);
            }
        }));
        while runs.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        shutdown.cancel();
        run.await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        assert_eq!(max_concurrent.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_first_sync_is_signalled_when_a_worker_takes_its_first_key() {
        let queue = RateLimitingQueue::new(QueueConfig::new("")).unwrap();
        let metrics = SyncMetrics::register(&Registry::new()).unwrap();
        let shutdown = CancellationToken::new();
        let pool = WorkerPool {
            metrics: Some(metrics.clone()),
            ..test_pool(&queue, 2)
        };
        let run = tokio::spawn(pool.run(shutdown.clone(), |_key: String| async {}));
        let waiting = metrics.clone();
        let first = tokio::spawn(async move { waiting.first_sync_started().await });
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!first.is_finished(), "no key, no sync");
        let added = Instant::now();
        queue.add("ns/a".to_string());
        let started = tokio::time::timeout(Duration::from_secs(1), first)
            .await
            .expect("signalled")
            .unwrap();
        assert!(started >= added);
        tokio::time::sleep(Duration::from_secs(5)).await;
        // A late waiter learns at once, and when it was.
        let late = tokio::time::timeout(Duration::from_millis(1), metrics.first_sync_started())
            .await
            .expect("already signalled");
        assert_eq!(late, started);
        shutdown.cancel();
        run.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_worker_whose_syncs_never_wait_lets_other_tasks_run() {
        let queue = RateLimitingQueue::new(QueueConfig::new("")).unwrap();
        let keys = 10_000;
        for key in 0..keys {
            queue.add(format!("ns/{key}"));
        }
        let processed = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let (counted, other) = (processed.clone(), Arc::new(Mutex::new(None)));
        let spawned = other.clone();
        let run = tokio::spawn(
            test_pool(&queue, 1).run(shutdown.clone(), move |_key: String| {
                // From the first sync on, another task waits for the thread (there is one).
                let seen = counted.clone();
                spawned.lock().get_or_insert_with(|| {
                    tokio::spawn(async move { seen.load(Ordering::SeqCst) })
                });
                counted.fetch_add(1, Ordering::SeqCst);
                std::future::ready(())
            }),
        );
        let other = loop {
            if let Some(other) = other.lock().take() {
                break other;
            }
            tokio::task::yield_now().await;
        };
        let when_the_other_ran = other.await.unwrap();
        assert!(
            when_the_other_ran < keys,
            "the worker kept the thread for all {keys} syncs"
        );
        shutdown.cancel();
        run.await.unwrap();
    }
}
