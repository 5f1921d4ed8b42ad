//! Waiting for caches to fill before controllers start working (client-go's `HasSynced` and
//! `WaitForCacheSync`): a controller that ran on a half-filled cache would, for example,
//! create pods that already exist.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How often [`wait_for_cache_sync`] re-checks, as upstream.
pub const CACHE_SYNC_POLL_PERIOD: Duration = Duration::from_millis(100);

/// Something that becomes ready once an informer's first list has been processed.
pub trait HasSynced: Send + Sync {
    /// Whether the initial list has been processed (and, for a handler registration,
    /// delivered to the handler).
    fn has_synced(&self) -> bool;
}

/// Polls every 100 ms until all `checks` have synced (true) or `shutdown` fires (false).
pub async fn wait_for_cache_sync(shutdown: &CancellationToken, checks: &[&dyn HasSynced]) -> bool {
    loop {
        if checks.iter().all(|check| check.has_synced()) {
            return true;
        }
        tokio::select! {
            () = shutdown.cancelled() => return false,
            () = tokio::time::sleep(CACHE_SYNC_POLL_PERIOD) => {}
        }
    }
}

/// [`wait_for_cache_sync`] with upstream's log lines naming the controller that waits.
pub async fn wait_for_named_cache_sync(
    controller: &str,
    shutdown: &CancellationToken,
    checks: &[&dyn HasSynced],
) -> bool {
    tracing::info!(controller, "Waiting for caches to sync");
    let synced = wait_for_cache_sync(shutdown, checks).await;
    if synced {
        tracing::info!(controller, "Caches are synced");
    } else {
        tracing::error!(controller, "unable to sync caches");
    }
    synced
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    };

    struct Flag(Arc<AtomicBool>);

    impl HasSynced for Flag {
        fn has_synced(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[tokio::test]
    async fn returns_true_once_every_check_is_synced() {
        let first = Arc::new(AtomicBool::new(true));
        let second = Arc::new(AtomicBool::new(false));
        let setter = second.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            setter.store(true, Ordering::SeqCst);
        });
        let shutdown = CancellationToken::new();
        let (a, b) = (Flag(first), Flag(second.clone()));
        assert!(wait_for_cache_sync(&shutdown, &[&a, &b]).await);
        assert!(second.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn returns_false_on_shutdown() {
        let never = Flag(Arc::new(AtomicBool::new(false)));
        let shutdown = CancellationToken::new();
        let canceller = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            canceller.cancel();
        });
        assert!(!wait_for_cache_sync(&shutdown, &[&never]).await);
    }

    #[tokio::test]
    async fn no_checks_means_synced() {
        assert!(wait_for_cache_sync(&CancellationToken::new(), &[]).await);
    }

    #[tokio::test]
    async fn named_wait_reports_the_same_outcome() {
        let synced = Flag(Arc::new(AtomicBool::new(true)));
        let never = Flag(Arc::new(AtomicBool::new(false)));
        let shutdown = CancellationToken::new();
        assert!(wait_for_named_cache_sync("replicaset", &shutdown, &[&synced]).await);
        shutdown.cancel();
        assert!(!wait_for_named_cache_sync("replicaset", &shutdown, &[&never]).await);
    }
}
