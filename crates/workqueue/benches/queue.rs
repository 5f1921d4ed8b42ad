//! Throughput of the add -> get -> done cycle with 1, 2 and 8 workers sharing one queue.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use workqueue::{QueueConfig, RateLimitingQueue};

const ITEMS: usize = 10_000;

/// Adds `ITEMS` distinct items (so each add is one processing) while `workers` tasks get and
/// finish them, then drains the queue.
async fn add_get_done(workers: usize) {
    let queue: RateLimitingQueue<usize> =
        RateLimitingQueue::new(QueueConfig::new("")).expect("bench runs inside a runtime");
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    queue.done(&item);
                }
            })
        })
        .collect();
    for item in 0..ITEMS {
        queue.add(item);
        if item % 64 == 0 {
            tokio::task::yield_now().await;
        }
    }
    queue.shut_down_with_drain().await;
    for handle in handles {
        handle.await.expect("worker");
    }
}

fn bench_queue(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut group = c.benchmark_group("add_get_done");
    group.throughput(Throughput::Elements(ITEMS as u64));
    group.measurement_time(Duration::from_secs(3));
    for workers in [1, 2, 8] {
        group.bench_with_input(
            BenchmarkId::from_parameter(workers),
            &workers,
            |b, &workers| {
                b.to_async(&runtime).iter(|| add_get_done(workers));
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_queue);
criterion_main!(benches);
