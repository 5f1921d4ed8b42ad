//! The `workqueue_*` metrics read back from the registry (spec workqueue.md §6): names, types,
//! help texts, buckets, the `name` label and the exact update rules. Paused Tokio time makes
//! every observed duration exact.

use std::time::Duration;

use prometheus::Registry;
use prometheus::proto::{Metric, MetricFamily, MetricType};
use workqueue::{QueueConfig, RateLimitingQueue, WorkqueueMetrics};

const MS: Duration = Duration::from_millis(1);

fn named_queue(name: &str, metrics: &WorkqueueMetrics) -> RateLimitingQueue<String> {
    RateLimitingQueue::new(QueueConfig::new(name).with_metrics(metrics.clone())).expect("runtime")
}

/// A fresh registry with the workqueue metrics, and queue `name` reporting to it.
fn registered_queue(name: &str) -> (Registry, RateLimitingQueue<String>) {
    let registry = Registry::new();
    let metrics = WorkqueueMetrics::register(&registry).expect("register");
    (registry, named_queue(name, &metrics))
}

fn family(registry: &Registry, name: &str) -> Option<MetricFamily> {
    registry
        .gather()
        .into_iter()
        .find(|family| family.name() == name)
}

/// The (name, value) pairs of `metric`'s labels.
fn labels(metric: &Metric) -> Vec<(&str, &str)> {
    metric
        .get_label()
        .iter()
        .map(|label| (label.name(), label.value()))
        .collect()
}

/// The series of `metric` for queue `queue`, if any.
fn series(registry: &Registry, metric: &str, queue: &str) -> Option<Metric> {
    family(registry, metric)?
        .get_metric()
        .iter()
        .find(|m| labels(m).contains(&("name", queue)))
        .cloned()
}

fn gauge(registry: &Registry, metric: &str, queue: &str) -> f64 {
    series(registry, metric, queue).map_or(f64::NAN, |m| m.get_gauge().value())
}

fn counter(registry: &Registry, metric: &str, queue: &str) -> f64 {
    series(registry, metric, queue).map_or(f64::NAN, |m| m.get_counter().value())
}

/// (sample count, sample sum) of a histogram series.
fn histogram(registry: &Registry, metric: &str, queue: &str) -> (u64, f64) {
    series(registry, metric, queue).map_or((0, f64::NAN), |m| {
        let h = m.get_histogram();
        (h.get_sample_count(), h.get_sample_sum())
    })
}

/// Asserts the (sample count, sample sum) of histogram `metric` of queue "q".
fn assert_histogram(registry: &Registry, metric: &str, (count, sum): (u64, f64), what: &str) {
    let (actual_count, actual_sum) = histogram(registry, metric, "q");
    assert_eq!(actual_count, count, "{what} count");
    assert_close(actual_sum, sum, what);
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "{what}: got {actual}, want {expected}"
    );
}

#[tokio::test]
async fn families_have_upstream_names_types_help_and_buckets() {
    let (registry, queue) = registered_queue("deployment");
    queue.add("a".to_owned());
    queue.add_after("b".to_owned(), Duration::ZERO);
    let item = queue.get().await.expect("a");
    queue.done(&item);

    let expected = [
        (
            "workqueue_depth",
            MetricType::GAUGE,
            "Current depth of workqueue",
        ),
        (
            "workqueue_adds_total",
            MetricType::COUNTER,
            "Total number of adds handled by workqueue",
        ),
        (
            "workqueue_queue_duration_seconds",
            MetricType::HISTOGRAM,
            "How long in seconds an item stays in workqueue before being requested.",
        ),
        (
            "workqueue_work_duration_seconds",
            MetricType::HISTOGRAM,
            "How long in seconds processing an item from workqueue takes.",
        ),
        (
            "workqueue_unfinished_work_seconds",
            MetricType::GAUGE,
            "How many seconds of work has done that is in progress and hasn't been observed by \
             work_duration. Large values indicate stuck threads. One can deduce the number of \
             stuck threads by observing the rate at which this increases.",
        ),
        (
            "workqueue_longest_running_processor_seconds",
            MetricType::GAUGE,
            "How many seconds has the longest running processor for workqueue been running.",
        ),
        (
            "workqueue_retries_total",
            MetricType::COUNTER,
            "Total number of retries handled by workqueue",
        ),
    ];
    for (name, kind, help) in expected {
        let family = family(&registry, name).unwrap_or_else(|| panic!("{name} not registered"));
        assert_eq!(family.get_field_type(), kind, "{name}");
        assert_eq!(family.help(), format!("[BETA] {help}"), "{name}");
        let metric = &family.get_metric()[0];
        assert_eq!(labels(metric), [("name", "deployment")], "{name}");
        if kind == MetricType::HISTOGRAM {
            let bounds: Vec<f64> = metric
                .get_histogram()
                .get_bucket()
                .iter()
                .map(|b| b.upper_bound())
                .collect();
            assert_eq!(
                bounds,
                [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0],
                "{name}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn depth_and_adds_follow_effective_adds() {
    let (registry, queue) = registered_queue("q");
    let depth = || gauge(&registry, "workqueue_depth", "q");
    let adds = || counter(&registry, "workqueue_adds_total", "q");

    queue.add("a".to_owned());
    queue.add("a".to_owned()); // dedup'd: not counted
    queue.add("b".to_owned());
    assert_eq!((depth(), adds()), (2.0, 2.0));

    let a = queue.get().await.expect("a");
    assert_eq!((depth(), adds()), (1.0, 2.0));

    // Re-added while processing: counted and +1 depth although not pushed to the FIFO.
    queue.add("a".to_owned());
    assert_eq!(queue.len(), 1);
    assert_eq!((depth(), adds()), (2.0, 3.0));

    // Done re-queues it without touching the metrics; the next get takes depth down.
    queue.done(&a);
    assert_eq!((depth(), adds()), (2.0, 3.0));
    queue.get().await.expect("b");
    queue.get().await.expect("a again");
    assert_eq!((depth(), adds()), (0.0, 3.0));

    // Adds after shutdown are dropped before being counted.
    queue.shut_down();
    queue.add("c".to_owned());
    assert_eq!((depth(), adds()), (0.0, 3.0));
}

#[tokio::test(start_paused = true)]
async fn queue_duration_measures_from_the_first_add_and_work_duration_from_get() {
    let (registry, queue) = registered_queue("q");

    queue.add("a".to_owned());
    tokio::time::sleep(300 * MS).await;
    queue.add("a".to_owned()); // re-add while waiting does not reset the latency clock
    tokio::time::sleep(200 * MS).await;
    let a = queue.get().await.expect("a");
    assert_histogram(
        &registry,
        "workqueue_queue_duration_seconds",
        (1, 0.5),
        "queue duration",
    );

    tokio::time::sleep(Duration::from_secs(2)).await;
    queue.done(&a);
    assert_histogram(
        &registry,
        "workqueue_work_duration_seconds",
        (1, 2.0),
        "work duration",
    );

    // A second cycle adds to both histograms.
    queue.add("a".to_owned());
    tokio::time::sleep(100 * MS).await;
    let a = queue.get().await.expect("a");
    tokio::time::sleep(50 * MS).await;
    queue.done(&a);
    assert_histogram(
        &registry,
        "workqueue_queue_duration_seconds",
        (2, 0.6),
        "queue duration",
    );
    assert_histogram(
        &registry,
        "workqueue_work_duration_seconds",
        (2, 2.05),
        "work duration",
    );
}

#[tokio::test(start_paused = true)]
async fn queue_duration_of_an_item_readded_during_processing_starts_at_that_add() {
    let (registry, queue) = registered_queue("q");
    queue.add("a".to_owned());
    let a = queue.get().await.expect("a");
    tokio::time::sleep(100 * MS).await;
    queue.add("a".to_owned());
    tokio::time::sleep(400 * MS).await;
    queue.done(&a);
    queue.get().await.expect("a again");
    assert_histogram(
        &registry,
        "workqueue_queue_duration_seconds",
        (2, 0.4),
        "queue duration",
    );
}

#[tokio::test(start_paused = true)]
async fn retries_count_every_add_after_call() {
    let (registry, queue) = registered_queue("q");
    let retries = || counter(&registry, "workqueue_retries_total", "q");

    queue.add("plain".to_owned());
    assert_eq!(
        series(&registry, "workqueue_retries_total", "q").map(|m| m.get_counter().value()),
        Some(0.0)
    );
    queue.add_after("a".to_owned(), Duration::ZERO);
    queue.add_after("a".to_owned(), 10 * MS);
    queue.add_after("a".to_owned(), 20 * MS); // deduplicated in the waiting list, still counted
    queue.add_rate_limited("b".to_owned());
    assert_eq!(retries(), 4.0);
    queue.shut_down();
    queue.add_after("c".to_owned(), Duration::ZERO);
    queue.add_rate_limited("c".to_owned());
    assert_eq!(retries(), 4.0);
}

#[tokio::test(start_paused = true)]
async fn ticker_updates_unfinished_work_every_500ms_and_stops_on_shutdown() {
    let (registry, queue) = registered_queue("q");
    let unfinished = || gauge(&registry, "workqueue_unfinished_work_seconds", "q");
    let longest = || {
        gauge(
            &registry,
            "workqueue_longest_running_processor_seconds",
            "q",
        )
    };

    queue.add("a".to_owned());
    queue.add("b".to_owned());
    tokio::time::sleep(200 * MS).await;
    let a = queue.get().await.expect("a"); // started at 0.2 s
    tokio::time::sleep(100 * MS).await;
    let b = queue.get().await.expect("b"); // started at 0.3 s
    assert_eq!((unfinished(), longest()), (0.0, 0.0), "no tick yet");

    tokio::time::sleep(300 * MS).await; // t = 0.6 s: the 0.5 s tick has run
    assert_close(unfinished(), 0.3 + 0.2, "unfinished at 0.5 s");
    assert_close(longest(), 0.3, "longest at 0.5 s");

    tokio::time::sleep(500 * MS).await; // t = 1.1 s: the 1.0 s tick
    assert_close(unfinished(), 0.8 + 0.7, "unfinished at 1.0 s");
    assert_close(longest(), 0.8, "longest at 1.0 s");

    queue.done(&a);
    tokio::time::sleep(500 * MS).await; // t = 1.6 s: the 1.5 s tick, only b in flight
    assert_close(unfinished(), 1.2, "unfinished at 1.5 s");
    assert_close(longest(), 1.2, "longest at 1.5 s");

    queue.done(&b);
    tokio::time::sleep(500 * MS).await; // t = 2.1 s: nothing in flight
    assert_eq!((unfinished(), longest()), (0.0, 0.0));

    queue.add("c".to_owned());
    queue.get().await.expect("c"); // in flight from 2.1 s
    queue.shut_down();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!((unfinished(), longest()), (0.0, 0.0), "ticker stopped");
}

#[tokio::test(start_paused = true)]
async fn queues_sharing_a_registry_have_their_own_series() {
    let registry = Registry::new();
    let metrics = WorkqueueMetrics::register(&registry).expect("register");
    assert!(
        WorkqueueMetrics::register(&registry).is_err(),
        "families are registered once per registry"
    );
    let deployment = named_queue("deployment", &metrics);
    let replicaset = named_queue("replicaset", &metrics);
    deployment.add("a".to_owned());
    replicaset.add("a".to_owned());
    replicaset.add("b".to_owned());
    assert_eq!(
        counter(&registry, "workqueue_adds_total", "deployment"),
        1.0
    );
    assert_eq!(
        counter(&registry, "workqueue_adds_total", "replicaset"),
        2.0
    );
    assert_eq!(gauge(&registry, "workqueue_depth", "replicaset"), 2.0);
}

#[tokio::test(start_paused = true)]
async fn unnamed_queue_reports_nothing() {
    let (registry, queue) = registered_queue("");
    queue.add("a".to_owned());
    queue.add_after("b".to_owned(), MS);
    let a = queue.get().await.expect("a");
    tokio::time::sleep(Duration::from_secs(1)).await;
    queue.done(&a);
    let series: usize = registry
        .gather()
        .iter()
        .map(|family| family.get_metric().len())
        .sum();
    assert_eq!(series, 0);
}
