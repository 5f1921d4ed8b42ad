//! A client's token bucket that hands its tokens out in arrival order, each waiter woken once.
//!
//! governor's `until_ready` sleeps every waiter until the next token would be free; they all
//! wake at that instant, one takes the token and the rest sleep again. With the hundreds of
//! writes a big Job or rollout queues behind a client at `--kube-api-qps`, that is hundreds of
//! wake-ups per token (200 waiters: 20,100 polls, against at most 800 here). client-go's
//! `rate.Limiter.Wait` instead reserves each caller its own future token and sleeps it once.
//! Here the waiters queue on a fair (FIFO) lock and only the one holding it waits on the
//! bucket, so each is woken once for its token and they are served in the order they came.
//! The one waiting sleeps on tokio's timer (governor's own wait sleeps on `futures-timer`'s
//! thread, a second thread woken for every token).

use governor::{
    DefaultDirectRateLimiter, Quota, RateLimiter,
    clock::{Clock, DefaultClock},
};

/// The token bucket of one API client (`--kube-api-qps`, `--kube-api-burst`).
pub(crate) struct ClientThrottle {
    bucket: DefaultDirectRateLimiter,
    /// The bucket's clock, to tell how long until its next token.
    clock: DefaultClock,
    /// Held by the one waiter allowed to wait on `bucket`; tokio's lock is fair, so the
    /// others are woken in turn, once each.
    turn: tokio::sync::Mutex<()>,
}

impl ClientThrottle {
    /// A bucket of `quota`, full.
    pub(crate) fn new(quota: Quota) -> Self {
        let clock = DefaultClock::default();
        Self {
            bucket: RateLimiter::direct_with_clock(quota, clock.clone()),
            clock,
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Waits for a token: at once while the burst lasts, then in arrival order.
    pub(crate) async fn acquire(&self) {
        let _turn = self.turn.lock().await;
        // tokio's timer rounds a sleep up to the millisecond; the tokens that accrue meanwhile
        // go to the next waiters without a sleep, so the rate holds above 1,000 a second.
        while let Err(not_until) = self.bucket.check() {
            tokio::time::sleep(not_until.wait_time_from(self.clock.now())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        future::Future,
        num::NonZeroU32,
        pin::Pin,
        sync::{
            Arc,
            atomic::{AtomicUsize, Ordering},
        },
        task::{Context, Poll},
        time::Duration,
    };

    use super::*;

    /// Counts how often the future inside is polled: each poll after the first is a wake-up.
    struct CountPolls<F> {
        inner: Pin<Box<F>>,
        polls: Arc<AtomicUsize>,
    }

    impl<F: Future> Future for CountPolls<F> {
        type Output = F::Output;

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
            self.polls.fetch_add(1, Ordering::Relaxed);
            self.inner.as_mut().poll(cx)
        }
    }

    /// 1,000 tokens a second, burst 1.
    fn fast_throttle() -> Arc<ClientThrottle> {
        let quota = Quota::with_period(Duration::from_millis(1))
            .unwrap()
            .allow_burst(NonZeroU32::new(1).unwrap());
        Arc::new(ClientThrottle::new(quota))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_waiters_are_each_woken_a_few_times_not_once_per_token_handed_out() {
        const WAITERS: usize = 200;
        let throttle = fast_throttle();
        let polls = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..WAITERS)
            .map(|_| {
                let throttle = throttle.clone();
                tokio::spawn(CountPolls {
                    inner: Box::pin(async move { throttle.acquire().await }),
                    polls: polls.clone(),
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // Woken once per token the bucket hands out, every waiter would be polled about
        // WAITERS / 2 times (20,000 polls in all); in turn, each is polled a few times.
        let polls = polls.load(Ordering::Relaxed);
        assert!(polls <= 4 * WAITERS, "{polls} polls for {WAITERS} waiters");
    }
}
