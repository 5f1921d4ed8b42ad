//! The queue rules of client-go's workqueue (spec workqueue.md §2-4), checked through the public
//! `RateLimitingQueue`. Time-dependent tests run on Tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::{Instant, timeout};
use workqueue::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, QueueConfig, RateLimiter,
    RateLimitingQueue, WorkqueueMetrics,
};

const MS: Duration = Duration::from_millis(1);

fn queue() -> RateLimitingQueue<String> {
    RateLimitingQueue::new(QueueConfig::new("")).expect("inside a runtime")
}

fn key(name: &str) -> String {
    name.to_owned()
}

/// Everything `get` hands out without waiting, in order.
async fn drain_ready(queue: &RateLimitingQueue<String>) -> Vec<String> {
    let mut items = Vec::new();
    while !queue.is_empty() {
        items.push(queue.get().await.expect("queued item"));
    }
    items
}

/// Whether `get` would block (nothing is handed out within a short window).
async fn get_blocks(queue: &RateLimitingQueue<String>) -> bool {
    timeout(10 * MS, queue.get()).await.is_err()
}

/// Asserts nothing is queued and `get` would block.
async fn assert_idle(queue: &RateLimitingQueue<String>) {
    assert!(queue.is_empty());
    assert!(get_blocks(queue).await);
}

#[tokio::test]
async fn hands_out_items_in_fifo_order() {
    let queue = queue();
    for name in ["c", "a", "b"] {
        queue.add(key(name));
    }
    assert_eq!(queue.len(), 3);
    assert_eq!(drain_ready(&queue).await, ["c", "a", "b"]);
}

#[tokio::test]
async fn adds_of_a_waiting_item_collapse() {
    let queue = queue();
    queue.add(key("a"));
    queue.add(key("b"));
    queue.add(key("a"));
    assert_eq!(queue.len(), 2);
    assert_eq!(drain_ready(&queue).await, ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn item_added_while_processing_is_requeued_once_after_done() {
    let queue = queue();
    queue.add(key("a"));
    let item = queue.get().await.expect("item");
    // Re-added (twice) while processing: not handed to a second worker, not counted in len.
    queue.add(key("a"));
    queue.add(key("a"));
    assert_eq!(queue.len(), 0);
    assert!(get_blocks(&queue).await);
    queue.done(&item);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await.as_deref(), Some("a"));
    queue.done(&key("a"));
    assert_idle(&queue).await;
}

#[tokio::test(start_paused = true)]
async fn done_without_readd_does_not_requeue() {
    let queue = queue();
    queue.add(key("a"));
    let item = queue.get().await.expect("item");
    queue.done(&item);
    assert_idle(&queue).await;
}

#[tokio::test(start_paused = true)]
async fn done_of_an_item_not_being_processed_changes_nothing() {
    let queue = queue();
    queue.add(key("a"));
    queue.done(&key("a"));
    queue.done(&key("b"));
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await.as_deref(), Some("a"));
    assert!(get_blocks(&queue).await);
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let queue = queue();
    let worker = tokio::spawn({
        let queue = queue.clone();
        async move { queue.get().await }
    });
    tokio::task::yield_now().await;
    queue.add(key("a"));
    assert_eq!(worker.await.expect("worker").as_deref(), Some("a"));
}

#[tokio::test]
async fn shut_down_hands_out_queued_items_then_none_and_drops_new_adds() {
    let queue = queue();
    queue.add(key("a"));
    queue.add(key("b"));
    queue.shut_down();
    assert!(queue.shutting_down());
    queue.add(key("c"));
    queue.add_after(key("d"), Duration::ZERO);
    queue.add_rate_limited(key("e"));
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.get().await.as_deref(), Some("a"));
    assert_eq!(queue.get().await.as_deref(), Some("b"));
    assert_eq!(queue.get().await, None);
    assert_eq!(queue.get().await, None);
}

#[tokio::test]
async fn shut_down_wakes_every_waiting_worker() {
    let queue = queue();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move { queue.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    assert!(!queue.shutting_down());
    queue.shut_down();
    for worker in workers {
        let got = timeout(Duration::from_secs(5), worker).await;
        assert_eq!(got.expect("woken").expect("worker"), None);
    }
}

#[tokio::test(start_paused = true)]
async fn readd_during_processing_after_shut_down_is_dropped() {
    let queue = queue();
    queue.add(key("a"));
    let item = queue.get().await.expect("item");
    queue.shut_down();
    queue.add(key("a"));
    queue.done(&item);
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_in_flight_items() {
    let queue = queue();
    queue.add(key("a"));
    queue.add(key("b"));
    let a = queue.get().await.expect("a");
    let b = queue.get().await.expect("b");
    let drained = Arc::new(AtomicBool::new(false));
    let drain = tokio::spawn({
        let queue = queue.clone();
        let drained = drained.clone();
        async move {
            queue.shut_down_with_drain().await;
            drained.store(true, Ordering::SeqCst);
        }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(queue.shutting_down());
    assert!(!drained.load(Ordering::SeqCst));
    queue.done(&a);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!drained.load(Ordering::SeqCst), "b is still in flight");
    queue.done(&b);
    drain.await.expect("drain task");
    assert!(drained.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_returns_at_once_when_idle() {
    let queue = queue();
    timeout(Duration::from_secs(1), queue.shut_down_with_drain())
        .await
        .expect("nothing in flight");
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn later_shut_down_cancels_the_drain_wait() {
    let queue = queue();
    queue.add(key("a"));
    let _in_flight = queue.get().await.expect("a");
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shut_down_with_drain().await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!drain.is_finished());
    queue.shut_down();
    timeout(Duration::from_secs(1), drain)
        .await
        .expect("drain released")
        .expect("drain task");
}

#[tokio::test(start_paused = true)]
async fn add_after_delays_the_item() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after(key("a"), 50 * MS);
    assert!(queue.is_empty());
    assert_eq!(queue.get().await.as_deref(), Some("a"));
    assert_eq!(start.elapsed(), 50 * MS);
}

#[tokio::test(start_paused = true)]
async fn add_after_zero_adds_immediately() {
    let queue = queue();
    queue.add_after(key("a"), Duration::ZERO);
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn delayed_items_come_out_in_ready_time_order() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after(key("late"), 30 * MS);
    queue.add_after(key("early"), 10 * MS);
    queue.add_after(key("middle"), 20 * MS);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let item = queue.get().await.expect("item");
        seen.push((item.clone(), start.elapsed()));
        queue.done(&item);
    }
    assert_eq!(
        seen,
        [
            (key("early"), 10 * MS),
            (key("middle"), 20 * MS),
            (key("late"), 30 * MS)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn duplicate_add_after_keeps_the_earlier_ready_time() {
    struct Case {
        first: Duration,
        second: Duration,
        ready_after: Duration,
    }
    let cases = [
        Case {
            first: 50 * MS,
            second: 20 * MS,
            ready_after: 20 * MS,
        },
        Case {
            first: 20 * MS,
            second: 50 * MS,
            ready_after: 20 * MS,
        },
    ];
    for case in cases {
        let queue = queue();
        let start = Instant::now();
        queue.add_after(key("a"), case.first);
        queue.add_after(key("a"), case.second);
        let item = queue.get().await.expect("item");
        assert_eq!(start.elapsed(), case.ready_after);
        queue.done(&item);
        // Only one entry was waiting: nothing else arrives later.
        tokio::time::sleep(100 * MS).await;
        assert!(queue.is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn item_can_wait_and_be_queued_at_the_same_time() {
    let queue = queue();
    queue.add_after(key("a"), 50 * MS);
    queue.add(key("a"));
    let item = queue.get().await.expect("queued now");
    queue.done(&item);
    let start = Instant::now();
    assert_eq!(queue.get().await.as_deref(), Some("a"));
    assert_eq!(start.elapsed(), 50 * MS);
}

#[tokio::test(start_paused = true)]
async fn new_earlier_entry_wakes_the_delay_loop() {
    let queue = queue();
    let start = Instant::now();
    queue.add_after(key("slow"), Duration::from_secs(30));
    tokio::time::sleep(MS).await;
    queue.add_after(key("fast"), 5 * MS);
    assert_eq!(queue.get().await.as_deref(), Some("fast"));
    assert_eq!(start.elapsed(), 6 * MS);
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_waiting_items() {
    let queue = queue();
    queue.add_after(key("a"), 10 * MS);
    queue.shut_down();
    tokio::time::sleep(100 * MS).await;
    assert!(queue.is_empty());
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_uses_the_limiters_delay() {
    let limiter = ItemExponentialFailureRateLimiter::new(10 * MS, Duration::from_secs(1));
    let queue =
        RateLimitingQueue::new(QueueConfig::new("").with_rate_limiter(limiter)).expect("runtime");
    for expected in [10 * MS, 20 * MS, 40 * MS] {
        let start = Instant::now();
        queue.add_rate_limited(key("a"));
        let item = queue.get().await.expect("item");
        assert_eq!(start.elapsed(), expected);
        queue.done(&item);
    }
    assert_eq!(queue.num_requeues(&key("a")), 3);
    assert_eq!(queue.num_requeues(&key("b")), 0);
    queue.forget(&key("a"));
    assert_eq!(queue.num_requeues(&key("a")), 0);
    let start = Instant::now();
    queue.add_rate_limited(key("a"));
    queue.get().await.expect("item");
    assert_eq!(start.elapsed(), 10 * MS);
}

#[tokio::test(start_paused = true)]
async fn forget_does_not_touch_the_queue() {
    let limiter: Box<dyn RateLimiter<String>> = Box::new(ItemFastSlowRateLimiter::new(
        Duration::ZERO,
        Duration::ZERO,
        1,
    ));
    let queue =
        RateLimitingQueue::new(QueueConfig::new("").with_rate_limiter(limiter)).expect("runtime");
    queue.add_rate_limited(key("a"));
    queue.forget(&key("a"));
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await.as_deref(), Some("a"));
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Lets spawned tasks run until they have reacted to a stop signal.
async fn settle() {
    tokio::time::sleep(MS).await;
}

#[tokio::test(start_paused = true)]
async fn background_tasks_stop_on_shut_down_and_on_drop() {
    let registry = prometheus::Registry::new();
    let metrics = WorkqueueMetrics::register(&registry).expect("register");
    let named = || {
        RateLimitingQueue::<String>::new(QueueConfig::new("q").with_metrics(metrics.clone()))
            .expect("runtime")
    };
    let before = alive_tasks();

    let queue = named();
    settle().await;
    assert_eq!(alive_tasks(), before + 2, "delay loop and metrics ticker");
    queue.shut_down();
    settle().await;
    assert_eq!(alive_tasks(), before);

    let queue = named();
    let handle = queue.clone();
    settle().await;
    assert_eq!(alive_tasks(), before + 2);
    drop(queue);
    settle().await;
    assert_eq!(alive_tasks(), before + 2, "a handle is still alive");
    drop(handle);
    settle().await;
    assert_eq!(alive_tasks(), before);

    let unnamed = RateLimitingQueue::<String>::new(QueueConfig::new("").with_metrics(metrics))
        .expect("runtime");
    settle().await;
    assert_eq!(
        alive_tasks(),
        before + 1,
        "no metrics ticker without a name"
    );
    drop(unnamed);
}

#[test]
fn building_outside_a_runtime_is_an_error() {
    let result = RateLimitingQueue::<String>::new(QueueConfig::new("x"));
    assert!(result.is_err());
}
