//! The read barrier: wait until every started informer's cache holds everything written to
//! its resource before a given moment.
//!
//! Why: a warm standby (the manager's `--leader-elect-warm-standby`) keeps its caches synced
//! while it campaigns, but a watch delivers writes some time after they happen. When it wins
//! the Lease, the old leader's last writes (pods it created, a scale, a ReplicaSet) may still
//! be on their way; a sync that ran now would create them again or act on the state before
//! them. So the new leader first reads each cached resource's current resourceVersion with a
//! consistent read (a list of at most one object without a resourceVersion) and starts its
//! workers only once each informer has seen that version or a newer one: the list it applied,
//! a watch event or a bookmark ([`crate::Store::last_sync_resource_version`]). A watch
//! delivers its resource in resourceVersion order and a bookmark vouches for every change up
//! to its version, so everything written before the read is then in the cache. An informer
//! that has not caught up within a bound (a watch that lags, or a resource nobody writes on an
//! API server that sends bookmarks once a minute) re-lists, with a consistent list, whose
//! version is past the read by construction. A small cache (ControllerRevisions,
//! StatefulSets, DaemonSets: rarely written, so often behind only for want of a bookmark)
//! re-lists after a short grace instead: one list of a few objects costs less than the wait.
//!
//! A leader that gives its Lease up (SIGTERM) can say more precisely what the successor must
//! have seen: per resource, the version its own last write returned or its last decision read,
//! whichever is higher (the manager's handover versions, [`HandedOver`]). Every write it made
//! and every change it acted on is at or below that version, so that version is the
//! resource's target and no consistent read is made for it. It is usually a change the
//! successor's watch has already delivered, while a consistent read returns the collection's
//! latest version, which a resource nobody wrote lately reaches only with its next bookmark.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use kube::Client;
use tokio_util::sync::CancellationToken;

use crate::SharedInformerFactory;

/// Per resource (`pods`), the version a leader that gave its Lease up vouches covers every
/// write it made and every change it decided from (see the module documentation).
pub type HandedOver = BTreeMap<String, u64>;

/// How often the barrier looks at the informers' versions (atomic loads).
const POLL_PERIOD: Duration = Duration::from_millis(5);

/// How long a failed consistent read waits before it is tried again.
const READ_RETRY: Duration = Duration::from_millis(200);

/// Reads a resource's current resourceVersion (the erased
/// [`crate::SharedInformer::current_resource_version`]).
pub(crate) type VersionReader =
    fn(Client) -> BoxFuture<'static, Result<Option<String>, kube::Error>>;

/// Whether one informer has reached its barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BarrierProgress {
    /// Its cache holds every write up to the barrier's version.
    Reached,
    /// Not yet: events before the barrier may still be on their way, or the first list (or a
    /// relist) is not applied yet.
    Behind,
}

/// Where an informer stands against `target`, the version the consistent read returned:
/// reached once the cache is known to reflect that version or a newer one (`seen`, its last
/// synced version). A `target` that is not an integer (the API allows opaque versions) cannot
/// be compared; then the informer counts as there once it has synced, as on a cold start.
pub fn barrier_progress(target: Option<u64>, synced: bool, seen: Option<u64>) -> BarrierProgress {
    let reached = match target {
        Some(target) => seen.is_some_and(|seen| seen >= target),
        None => synced,
    };
    if reached {
        BarrierProgress::Reached
    } else {
        BarrierProgress::Behind
    }
}

/// How long the barrier lets a behind informer's watch catch up before it re-lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    /// Any informer still behind after this re-lists.
    pub bound: Duration,
    /// An informer whose cache holds at most `small_cache_objects` re-lists after this
    /// instead: a resource nobody wrote lately hears of the new version only from a bookmark,
    /// which kube-apiserver sends a watch about once a minute, and one list of a few objects
    /// costs less than that wait.
    pub small_cache_grace: Duration,
    /// The size up to which a cache counts as small.
    pub small_cache_objects: usize,
}

impl CatchUp {
    /// What a manager uses: 5 s, or 100 ms for a cache of at most 1,000 objects.
    pub const DEFAULT: Self = Self {
        bound: Duration::from_secs(5),
        small_cache_grace: Duration::from_millis(100),
        small_cache_objects: 1_000,
    };

    /// Every informer, whatever its size, waits `bound` for its watch.
    pub fn after(bound: Duration) -> Self {
        Self {
            bound,
            small_cache_grace: bound,
            small_cache_objects: 0,
        }
    }

    /// Whether an informer still behind its barrier after `elapsed`, with `cached_objects` in
    /// its cache, re-lists now rather than wait for its watch.
    pub fn relist_now(&self, elapsed: Duration, cached_objects: usize) -> bool {
        elapsed >= self.bound
            || (elapsed >= self.small_cache_grace && cached_objects <= self.small_cache_objects)
    }
}

/// One informer's part of a passed barrier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BarrierResource {
    /// The resource (`pods`).
    pub resource: String,
    /// The version the consistent read returned (`None`: not an integer).
    pub target: Option<u64>,
    /// Whether the target came from the previous leader ([`HandedOver`]) instead of a
    /// consistent read.
    pub handed_over: bool,
    /// Whether it had to re-list to get there.
    pub relisted: bool,
}

/// What a passed barrier took.
#[derive(Debug, Clone, PartialEq)]
pub struct BarrierReport {
    /// Every started informer, by resource.
    pub resources: Vec<BarrierResource>,
    /// From the start of the reads until the last informer reached its version.
    pub waited: Duration,
}

impl SharedInformerFactory {
    /// Waits until every started informer has reached its target: the version `handed_over`
    /// names for its resource, else the resourceVersion a consistent read of its resource
    /// returns now (see the module documentation); informers still behind longer than
    /// `catch_up` allows re-list. A failed read is retried until it succeeds. `None` when
    /// `shutdown` fires first.
    pub async fn read_barrier(
        &self,
        catch_up: CatchUp,
        handed_over: &HandedOver,
        shutdown: &CancellationToken,
    ) -> Option<BarrierReport> {
        let started = Instant::now();
        let mut readers: Vec<(String, VersionReader)> = Vec::new();
        self.for_each_started(|informer| {
            readers.push((informer.resource(), informer.version_reader()));
        });
        let client = self.client();
        let reads = readers.into_iter().map(|(resource, read)| {
            let vouched = handed_over.get(&resource).copied();
            let client = client.clone();
            async move {
                match vouched {
                    Some(target) => Some(BarrierResource {
                        resource,
                        target: Some(target),
                        handed_over: true,
                        relisted: false,
                    }),
                    None => read_until_answered(resource, read, client, shutdown).await,
                }
            }
        });
        let mut resources: Vec<BarrierResource> = futures::future::join_all(reads)
            .await
            .into_iter()
            .collect::<Option<Vec<_>>>()?;
        loop {
            let mut behind = Vec::new();
            self.for_each_started(|informer| {
                let resource = informer.resource();
                let target = resources
                    .iter()
                    .find(|part| part.resource == resource)
                    .and_then(|part| part.target);
                let progress = barrier_progress(
                    target,
                    informer.has_synced(),
                    informer.last_sync_resource_version(),
                );
                if progress == BarrierProgress::Behind {
                    behind.push((resource, informer.cached_objects()));
                }
            });
            if behind.is_empty() {
                return Some(BarrierReport {
                    resources,
                    waited: started.elapsed(),
                });
            }
            let elapsed = started.elapsed();
            let due: Vec<String> = behind
                .into_iter()
                .filter(|(_, cached)| catch_up.relist_now(elapsed, *cached))
                .map(|(resource, _)| resource)
                .collect();
            if !due.is_empty() {
                self.relist_once(&mut resources, &due);
            }
            tokio::select! {
                () = shutdown.cancelled() => return None,
                () = tokio::time::sleep(POLL_PERIOD) => {}
            }
        }
    }

    /// Makes the informers of `behind` re-list, each once per barrier.
    fn relist_once(&self, resources: &mut [BarrierResource], behind: &[String]) {
        for part in resources
            .iter_mut()
            .filter(|part| !part.relisted && behind.contains(&part.resource))
        {
            part.relisted = true;
            let resource = part.resource.clone();
            self.for_each_started(|informer| {
                if informer.resource() == resource {
                    tracing::info!(
                        resource,
                        target = ?part.target,
                        seen = ?informer.last_sync_resource_version(),
                        "read barrier: the watch has not caught up; relisting"
                    );
                    informer.relist();
                }
            });
        }
    }
}

/// `resource`'s barrier version, read until the API server answers (`None` on shutdown).
async fn read_until_answered(
    resource: String,
    read: VersionReader,
    client: Client,
    shutdown: &CancellationToken,
) -> Option<BarrierResource> {
    loop {
        match read(client.clone()).await {
            Ok(version) => {
                let target = version.as_deref().and_then(|version| version.parse().ok());
                if target.is_none() {
                    tracing::warn!(
                        resource,
                        ?version,
                        "read barrier: the resourceVersion is not an integer; waiting for the first list only"
                    );
                }
                return Some(BarrierResource {
                    resource,
                    target,
                    handed_over: false,
                    relisted: false,
                });
            }
            Err(error) => {
                tracing::warn!(resource, %error, "read barrier: reading the current resourceVersion failed; retrying");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return None,
            () = tokio::time::sleep(READ_RETRY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_behind_informer_relists_past_the_bound_and_a_small_one_after_the_grace() {
        let ms = Duration::from_millis;
        // (catch-up, elapsed, cached objects, relist now)
        let cases = [
            (
                CatchUp::DEFAULT,
                ms(0),
                10,
                false,
                "small, before the grace",
            ),
            (
                CatchUp::DEFAULT,
                ms(99),
                10,
                false,
                "small, just before the grace",
            ),
            (CatchUp::DEFAULT, ms(100), 10, true, "small, at the grace"),
            (CatchUp::DEFAULT, ms(100), 1_000, true, "at the size limit"),
            (
                CatchUp::DEFAULT,
                ms(100),
                1_001,
                false,
                "large: waits for its watch",
            ),
            (
                CatchUp::DEFAULT,
                ms(4_999),
                50_000,
                false,
                "large, before the bound",
            ),
            (
                CatchUp::DEFAULT,
                ms(5_000),
                50_000,
                true,
                "large, at the bound",
            ),
            (
                CatchUp::after(ms(300)),
                ms(299),
                0,
                false,
                "no grace: even an empty cache waits",
            ),
            (
                CatchUp::after(ms(300)),
                ms(300),
                50_000,
                true,
                "no grace, at the bound",
            ),
        ];
        for (catch_up, elapsed, cached, want, case) in cases {
            assert_eq!(catch_up.relist_now(elapsed, cached), want, "{case}");
        }
    }

    #[test]
    fn an_informer_reaches_the_barrier_once_it_has_seen_its_version() {
        use BarrierProgress::{Behind, Reached};
        // (target, synced, seen, progress)
        let cases = [
            (
                Some(10),
                true,
                Some(10),
                Reached,
                "seen exactly the version read",
            ),
            (
                Some(10),
                true,
                Some(25),
                Reached,
                "a newer event or bookmark",
            ),
            (
                Some(10),
                true,
                Some(9),
                Behind,
                "events before the read still on their way",
            ),
            (Some(10), true, None, Behind, "a relist in progress"),
            (
                Some(10),
                false,
                None,
                Behind,
                "the first list not applied yet",
            ),
            (
                None,
                true,
                None,
                Reached,
                "an opaque version: synced is all one can tell",
            ),
            (
                None,
                false,
                None,
                Behind,
                "an opaque version before the first list",
            ),
            (
                None,
                true,
                Some(3),
                Reached,
                "an opaque target, whatever was seen",
            ),
        ];
        for (target, synced, seen, want, case) in cases {
            assert_eq!(barrier_progress(target, synced, seen), want, "{case}");
        }
    }
}
