//! Randomized concurrency test with fixed seeds: many workers and producers hammer one queue
//! with overlapping keys. Checks the workqueue guarantees under real thread interleavings:
//! no key is processed by two workers at once, no add is lost (each add is followed by a
//! processing that starts after it), and `shut_down_with_drain` waits for in-flight items.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use workqueue::{QueueConfig, RateLimitingQueue};

const KEYS: usize = 24;
const WORKERS: usize = 8;
const PRODUCERS: usize = 4;
const ADDS_PER_PRODUCER: usize = 1500;

/// Shared observations, ordered by one logical clock.
struct Observations {
    clock: AtomicU64,
    /// Per key: logical time taken just before the latest `add` call.
    last_add: Vec<AtomicU64>,
    /// Per key: logical time taken just after the latest `get` returned it.
    last_start: Vec<AtomicU64>,
    in_flight: Vec<AtomicBool>,
    started: AtomicU64,
    completed: AtomicU64,
}

impl Observations {
    fn new() -> Self {
        let zeroes = || (0..KEYS).map(|_| AtomicU64::new(0)).collect();
        Self {
            clock: AtomicU64::new(1),
            last_add: zeroes(),
            last_start: zeroes(),
            in_flight: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
            started: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
}

/// Short random work: mostly a few yields, sometimes a real 1 ms sleep.
async fn random_work(rng: &mut ChaCha8Rng) {
    if rng.random_ratio(1, 10) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for _ in 0..rng.random_range(0..4) {
        tokio::task::yield_now().await;
    }
}

async fn worker(queue: RateLimitingQueue<usize>, seen: Arc<Observations>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    while let Some(key) = queue.get().await {
        let start = seen.tick();
        seen.last_start[key].fetch_max(start, Ordering::SeqCst);
        seen.started.fetch_add(1, Ordering::SeqCst);
        let was_in_flight = seen.in_flight[key].swap(true, Ordering::SeqCst);
        assert!(!was_in_flight, "key {key} handed to two workers at once");
        random_work(&mut rng).await;
        seen.in_flight[key].store(false, Ordering::SeqCst);
        seen.completed.fetch_add(1, Ordering::SeqCst);
        queue.done(&key);
    }
}

async fn producer(queue: RateLimitingQueue<usize>, seen: Arc<Observations>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..ADDS_PER_PRODUCER {
        let key = rng.random_range(0..KEYS);
        let at = seen.tick();
        seen.last_add[key].fetch_max(at, Ordering::SeqCst);
        queue.add(key);
        if rng.random_ratio(1, 8) {
            random_work(&mut rng).await;
        }
    }
}

async fn run_round(seed: u64) {
    let queue = RateLimitingQueue::new(QueueConfig::new("")).expect("runtime");
    let seen = Arc::new(Observations::new());
    let workers: Vec<_> = (0..WORKERS as u64)
        .map(|index| tokio::spawn(worker(queue.clone(), seen.clone(), seed * 100 + index)))
        .collect();
    let producers: Vec<_> = (0..PRODUCERS as u64)
        .map(|index| {
            tokio::spawn(producer(
                queue.clone(),
                seen.clone(),
                seed * 100 + 50 + index,
            ))
        })
        .collect();
    for producer in producers {
        producer.await.expect("producer");
    }

    let started_before_drain = seen.started.load(Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(10), queue.shut_down_with_drain())
        .await
        .expect("drain finishes");
    assert!(
        seen.completed.load(Ordering::SeqCst) >= started_before_drain,
        "drain returned while items handed out before it were still in flight"
    );
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(10), worker)
            .await
            .expect("worker exits after shutdown")
            .expect("worker did not panic");
    }

    for key in 0..KEYS {
        let added = seen.last_add[key].load(Ordering::SeqCst);
        let started = seen.last_start[key].load(Ordering::SeqCst);
        assert!(
            added == 0 || started > added,
            "seed {seed}: key {key} added at {added} but last processing started at {started}"
        );
    }
    let processings = seen.completed.load(Ordering::SeqCst);
    assert!(processings > 0 && processings <= (PRODUCERS * ADDS_PER_PRODUCER) as u64);
    assert!(queue.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_overlapping_adds_keep_the_queue_guarantees() {
    for seed in [0x5eed, 7, 42] {
        run_round(seed).await;
    }
}
