//! The `workqueue_*` Prometheus metrics of client-go / component-base (spec: workqueue.md §6,
//! metrics.md §1): metric families registered once per registry, per-queue children labelled
//! `name`, the add/processing time bookkeeping behind the latency histograms, and the 500 ms
//! ticker that refreshes the two "unfinished work" gauges.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// Upstream's `ExponentialBuckets(10e-9, 10, 10)`: 1e-8 s up to 10 s in x10 steps.
const LATENCY_BUCKETS: [f64; 10] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0];

/// How often the ticker recomputes the unfinished-work gauges (upstream's
/// `unfinishedWorkUpdatePeriod`).
/// Registers `collector` into `registry` and hands it back: a family is created and
/// registered in one expression, so none is left out of the registry by mistake.
pub fn registered<C>(registry: &Registry, collector: C) -> Result<C, prometheus::Error>
where
    C: prometheus::core::Collector + Clone + 'static,
{
    registry.register(Box::new(collector.clone()))?;
    Ok(collector)
}

/// A histogram family `name` with `buckets`, labelled `labels`.
pub fn histogram_vec(
    name: &str,
    help: &str,
    buckets: &[f64],
    labels: &[&str],
) -> Result<HistogramVec, prometheus::Error> {
    HistogramVec::new(
        HistogramOpts::new(name, help).buckets(buckets.to_vec()),
        labels,
    )
}

pub(crate) const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// The label carrying the queue name on every workqueue metric.
const NAME_LABEL: &str = "name";

/// Handles to the seven `workqueue_*` metric families, registered in one `prometheus::Registry`.
///
/// Register once per registry and hand clones to every queue: a family can be registered only
/// once, and each queue then takes its own children labelled with its `name`, exactly as
/// component-base shares one family between all queues of kube-controller-manager.
#[derive(Clone, Debug)]
pub struct WorkqueueMetrics {
    depth: IntGaugeVec,
    adds: IntCounterVec,
    queue_duration: HistogramVec,
    work_duration: HistogramVec,
    unfinished_work: GaugeVec,
    longest_running_processor: GaugeVec,
    retries: IntCounterVec,
}

impl WorkqueueMetrics {
    /// Creates the families with upstream's names, help texts (prefixed `[BETA] `) and buckets
    /// and registers them in `registry`.
    ///
    /// Fails if the registry already holds workqueue metrics (register once, then clone).
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let metrics = Self {
            depth: IntGaugeVec::new(
                opts("workqueue_depth", "Current depth of workqueue"),
                &[NAME_LABEL],
            )?,
            adds: IntCounterVec::new(
                opts(
                    "workqueue_adds_total",
                    "Total number of adds handled by workqueue",
                ),
                &[NAME_LABEL],
            )?,
            queue_duration: HistogramVec::new(
                histogram_opts(
                    "workqueue_queue_duration_seconds",
                    "How long in seconds an item stays in workqueue before being requested.",
                ),
                &[NAME_LABEL],
            )?,
            work_duration: HistogramVec::new(
                histogram_opts(
                    "workqueue_work_duration_seconds",
                    "How long in seconds processing an item from workqueue takes.",
                ),
                &[NAME_LABEL],
            )?,
            unfinished_work: GaugeVec::new(
                opts(
                    "workqueue_unfinished_work_seconds",
                    "How many seconds of work has done that is in progress and hasn't been \
                     observed by work_duration. Large values indicate stuck threads. One can \
                     deduce the number of stuck threads by observing the rate at which this \
                     increases.",
                ),
                &[NAME_LABEL],
            )?,
            longest_running_processor: GaugeVec::new(
                opts(
                    "workqueue_longest_running_processor_seconds",
                    "How many seconds has the longest running processor for workqueue been \
                     running.",
                ),
                &[NAME_LABEL],
            )?,
            retries: IntCounterVec::new(
                opts(
                    "workqueue_retries_total",
                    "Total number of retries handled by workqueue",
                ),
                &[NAME_LABEL],
            )?,
        };
        registry.register(Box::new(metrics.depth.clone()))?;
        registry.register(Box::new(metrics.adds.clone()))?;
        registry.register(Box::new(metrics.queue_duration.clone()))?;
        registry.register(Box::new(metrics.work_duration.clone()))?;
        registry.register(Box::new(metrics.unfinished_work.clone()))?;
        registry.register(Box::new(metrics.longest_running_processor.clone()))?;
        registry.register(Box::new(metrics.retries.clone()))?;
        Ok(metrics)
    }

    /// The children labelled `name = queue_name`, plus fresh time bookkeeping for that queue.
    pub(crate) fn for_queue<T: crate::WorkItem>(&self, queue_name: &str) -> QueueMetrics<T> {
        let labels = [queue_name];
        QueueMetrics {
            depth: self.depth.with_label_values(&labels),
            adds: self.adds.with_label_values(&labels),
            queue_duration: self.queue_duration.with_label_values(&labels),
            work_duration: self.work_duration.with_label_values(&labels),
            unfinished_work: self.unfinished_work.with_label_values(&labels),
            longest_running_processor: self.longest_running_processor.with_label_values(&labels),
            retries: self.retries.with_label_values(&labels),
            times: Mutex::new(ItemTimes {
                first_added: HashMap::new(),
                processing_started: HashMap::new(),
            }),
        }
    }
}

/// Component-base prefixes every help text with the metric's stability level.
fn opts(name: &str, help: &str) -> Opts {
    Opts::new(name, format!("[BETA] {help}"))
}

fn histogram_opts(name: &str, help: &str) -> HistogramOpts {
    HistogramOpts::from(opts(name, help)).buckets(LATENCY_BUCKETS.to_vec())
}

/// One named queue's metric children and the per-item timestamps the histograms and the
/// unfinished-work gauges are computed from (upstream's `defaultQueueMetrics`).
pub(crate) struct QueueMetrics<T> {
    depth: IntGauge,
    adds: IntCounter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished_work: Gauge,
    longest_running_processor: Gauge,
    retries: IntCounter,
    times: Mutex<ItemTimes<T>>,
}

/// When each waiting item was first added and when each in-flight item was handed out.
struct ItemTimes<T> {
    first_added: HashMap<T, Instant>,
    processing_started: HashMap<T, Instant>,
}

impl<T: crate::WorkItem> QueueMetrics<T> {
    /// An effective add: counted, depth +1, and the first add time kept so that re-adds while
    /// waiting do not reset the queue latency.
    pub(crate) fn add(&self, item: &T) {
        self.adds.inc();
        self.depth.inc();
        self.times
            .lock()
            .first_added
            .entry(item.clone())
            .or_insert_with(Instant::now);
    }

    /// An item handed to a worker: depth -1, queue latency observed, processing clock started.
    pub(crate) fn get(&self, item: &T) {
        self.depth.dec();
        let now = Instant::now();
        let mut times = self.times.lock();
        times.processing_started.insert(item.clone(), now);
        if let Some(added) = times.first_added.remove(item) {
            self.queue_duration
                .observe(now.duration_since(added).as_secs_f64());
        }
    }

    /// A worker finished an item: work duration observed.
    pub(crate) fn done(&self, item: &T) {
        if let Some(started) = self.times.lock().processing_started.remove(item) {
            self.work_duration.observe(started.elapsed().as_secs_f64());
        }
    }

    /// One `add_after` call (retries are counted by the delaying layer).
    pub(crate) fn retry(&self) {
        self.retries.inc();
    }

    /// Recomputes the sum and the maximum age of the in-flight items.
    pub(crate) fn update_unfinished_work(&self) {
        let now = Instant::now();
        let times = self.times.lock();
        let (total, oldest) = times
            .processing_started
            .values()
            .map(|started| now.duration_since(*started).as_secs_f64())
            .fold((0.0, 0.0), |(total, oldest): (f64, f64), age| {
                (total + age, oldest.max(age))
            });
        self.unfinished_work.set(total);
        self.longest_running_processor.set(oldest);
    }
}

/// Starts the ticker that refreshes the unfinished-work gauges every 500 ms until `stop` fires
/// (queue shutdown or the last handle dropped). The first refresh comes one period after start,
/// like a Go ticker.
pub(crate) fn spawn_unfinished_work_ticker<T: crate::WorkItem>(
    runtime: &tokio::runtime::Handle,
    metrics: Arc<QueueMetrics<T>>,
    stop: CancellationToken,
) {
    runtime.spawn(async move {
        let mut ticker = tokio::time::interval_at(
            Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD,
            UNFINISHED_WORK_UPDATE_PERIOD,
        );
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                _ = ticker.tick() => metrics.update_unfinished_work(),
            }
        }
    });
}
