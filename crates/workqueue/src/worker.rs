//! The standard controller worker loop: N workers take keys from the queue, process each one
//! and mark it done, until shutdown.
//!
//! Processing decides what happens to a key (`forget` on success, `add_rate_limited` on error,
//! a retry ceiling for Deployments), so the loop only guarantees the invariants: a key is
//! handed to one worker at a time (the queue's processing set), every key taken is `done`
//! after processing, and on shutdown workers stop taking new keys while in-flight ones finish.

use std::{future::Future, sync::Arc, time::Instant};

use prometheus::{HistogramOpts, HistogramVec, Registry};
use tokio_util::sync::CancellationToken;

use crate::{RateLimitingQueue, WorkItem, WorkqueueMetrics};

/// Buckets of the sync duration histogram: 1 ms to about 1 minute.
const SYNC_DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// kcm-rs's per-controller sync duration histogram (`controller_sync_duration_seconds`,
/// label `controller`). Upstream has none; `workqueue_work_duration_seconds` is the closest.
#[derive(Clone)]
pub struct SyncMetrics {
    duration: HistogramVec,
}

impl SyncMetrics {
    /// Registers the family once per registry; clone the handle for each controller.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "controller_sync_duration_seconds",
                "Time one sync of one object took, by controller (kcm-rs).",
            )
            .buckets(SYNC_DURATION_BUCKETS.to_vec()),
            &["controller"],
        )?;
        registry.register(Box::new(duration.clone()))?;
        Ok(Self { duration })
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
}

impl<T: WorkItem> WorkerPool<T> {
    /// Runs the workers until `shutdown`; returns once every worker has finished its current
    /// key. The queue is shut down on return, so later adds are dropped.
    pub async fn run<F, Fut>(self, shutdown: CancellationToken, process: F)
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let process = Arc::new(process);
        let histogram = self
            .metrics
            .map(|metrics| metrics.duration.with_label_values(&[self.controller]));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.workers.max(1) {
            let queue = self.queue.clone();
            let shutdown = shutdown.clone();
            let process = process.clone();
            let histogram = histogram.clone();
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
                    let started = Instant::now();
                    process(item.clone()).await;
                    if let Some(histogram) = &histogram {
                        histogram.observe(started.elapsed().as_secs_f64());
                    }
                    queue.done(&item);
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
            queue: queue.clone(),
            workers: 3,
            controller: "test",
            metrics: Some(metrics),
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
        let pool = WorkerPool {
            queue: queue.clone(),
            workers: 4,
            controller: "test",
            metrics: None,
        };
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
}
