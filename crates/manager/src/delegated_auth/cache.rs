//! A TTL cache of review answers with single-flight: while a review for a key is under way,
//! every other caller with the same key waits for its answer instead of sending its own, so a
//! burst of identical scrapes costs the API server one TokenReview and one SubjectAccessReview.
//!
//! Time is tokio's clock, so tests can pause and advance it.

use std::{collections::HashMap, hash::Hash, sync::Arc, time::Duration};

use futures::{
    FutureExt,
    future::{BoxFuture, Shared},
};
use parking_lot::Mutex;
use tokio::time::Instant;

/// At most this many answers are kept; when full, expired ones are dropped first, then all.
const MAX_ENTRIES: usize = 4096;

type Flight<V, E> = Shared<BoxFuture<'static, Result<V, E>>>;

struct Inner<K, V, E> {
    entries: HashMap<K, (V, Instant)>,
    flights: HashMap<K, Flight<V, E>>,
}

/// Answers by key, each kept for the TTL its review chose.
pub(crate) struct ReviewCache<K, V, E> {
    inner: Arc<Mutex<Inner<K, V, E>>>,
}

impl<K, V, E> Default for ReviewCache<K, V, E> {
    fn default() -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                entries: HashMap::new(),
                flights: HashMap::new(),
            })),
        }
    }
}

impl<K, V, E> ReviewCache<K, V, E>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
    E: Clone + Send + Sync + 'static,
{
    /// The cached answer for `key` if still fresh; otherwise the answer of the review under
    /// way for `key`, or of a new one made by `review`. A review yields its answer and how
    /// long to keep it (zero: not cached); errors are shared with the waiters, not cached.
    pub async fn get_or_review<F, Fut>(&self, key: K, review: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(V, Duration), E>> + Send + 'static,
    {
        let flight = {
            let mut inner = self.inner.lock();
            match inner.entries.get(&key) {
                Some((value, expires)) if *expires > Instant::now() => return Ok(value.clone()),
                Some(_) => {
                    inner.entries.remove(&key);
                }
                None => {}
            }
            match inner.flights.get(&key) {
                Some(flight) => flight.clone(),
                None => {
                    let shared = self.inner.clone();
                    let flight_key = key.clone();
                    let pending = review();
                    let flight = async move {
                        let result = pending.await;
                        let mut inner = shared.lock();
                        inner.flights.remove(&flight_key);
                        let (value, ttl) = result?;
                        if !ttl.is_zero() {
                            inner.insert(flight_key, value.clone(), Instant::now() + ttl);
                        }
                        Ok(value)
                    }
                    .boxed()
                    .shared();
                    inner.flights.insert(key, flight.clone());
                    flight
                }
            }
        };
        flight.await
    }
}

impl<K: Hash + Eq, V, E> Inner<K, V, E> {
    fn insert(&mut self, key: K, value: V, expires: Instant) {
        if self.entries.len() >= MAX_ENTRIES {
            let now = Instant::now();
            self.entries.retain(|_, (_, expires)| *expires > now);
            if self.entries.len() >= MAX_ENTRIES {
                self.entries.clear();
            }
        }
        self.entries.insert(key, (value, expires));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    type Cache = ReviewCache<&'static str, u32, String>;

    async fn review(
        cache: &Cache,
        calls: &Arc<AtomicUsize>,
        key: &'static str,
        answer: Result<(u32, Duration), String>,
    ) -> Result<u32, String> {
        let calls = calls.clone();
        cache
            .get_or_review(key, move || async move {
                calls.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                answer
            })
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_kept_for_their_ttl() {
        let cache = Cache::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let ttl = Duration::from_secs(10);
        assert_eq!(review(&cache, &calls, "a", Ok((1, ttl))).await, Ok(1));
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(review(&cache, &calls, "a", Ok((2, ttl))).await, Ok(1));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(review(&cache, &calls, "b", Ok((3, ttl))).await, Ok(3));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(review(&cache, &calls, "a", Ok((4, ttl))).await, Ok(4));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn errors_and_zero_ttls_are_not_cached() {
        let cache = Cache::default();
        let calls = Arc::new(AtomicUsize::new(0));
        assert_eq!(
            review(&cache, &calls, "a", Err("unreachable".to_string())).await,
            Err("unreachable".to_string())
        );
        assert_eq!(
            review(&cache, &calls, "a", Ok((1, Duration::ZERO))).await,
            Ok(1)
        );
        assert_eq!(
            review(&cache, &calls, "a", Ok((2, Duration::ZERO))).await,
            Ok(2)
        );
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_callers_share_one_review() {
        let cache = Cache::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let ttl = Duration::from_secs(10);
        let answers = futures::future::join_all(
            (0..50u32).map(|i| review(&cache, &calls, "a", Ok((i, ttl)))),
        )
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(answers.iter().all(|answer| *answer == Ok(0)), "{answers:?}");
        let failing = futures::future::join_all(
            (0..10).map(|_| review(&cache, &calls, "b", Err("down".to_string()))),
        )
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert!(failing.iter().all(Result::is_err));
    }
}
