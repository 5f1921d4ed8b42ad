//! The failed-pod backoff (client-go `flowcontrol.Backoff`, as the DaemonSet controller builds
//! it: `NewBackOff(1s, 15min)`, no jitter), with the clock made explicit.
//!
//! A daemon pod the kubelet rejects fails at once; deleting and recreating it in a hot loop
//! would fight the kubelet. So the controller deletes a failed pod on a node at most once per
//! backoff window, per DaemonSet generation and node, doubling the window each time up to
//! 15 minutes; an entry untouched for twice that long starts over.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::jiff::Timestamp;

use super::spec::{observed_generation, uid};

/// The first backoff window (`failedPodsBackoff` initial duration).
pub const DEFAULT_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// The largest backoff window (`failedPodsBackoff` max duration).
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);
/// How often upstream garbage-collects expired entries (`BackoffGCInterval`).
pub const BACKOFF_GC_INTERVAL: Duration = Duration::from_secs(60);

/// `failedPodsBackoffKey`: `<DaemonSet UID>/<status.observedGeneration>/<node>`, so a new
/// generation of the DaemonSet starts without backoff.
pub fn failed_pods_backoff_key(daemon_set: &DaemonSet, node: &str) -> String {
    format!(
        "{}/{}/{node}",
        uid(daemon_set),
        observed_generation(daemon_set)
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Per-key exponential backoff with an explicit clock (client-go `flowcontrol.Backoff`
/// without jitter).
#[derive(Debug, Clone)]
pub struct FailedPodBackoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
}

impl Default for FailedPodBackoff {
    /// Upstream's failed-pod backoff: 1 s doubling to 15 min.
    fn default() -> Self {
        Self::new(DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF)
    }
}

impl FailedPodBackoff {
    /// A backoff starting at `initial` and doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    /// `hasExpired`: an entry last updated more than `2 * max` before `now` starts over.
    fn has_expired(&self, now: Timestamp, last_update: Timestamp) -> bool {
        elapsed(last_update, now) > self.max.saturating_mul(2)
    }

    /// `Get`: the current window of `key`, zero without an entry.
    pub fn get(&self, key: &str) -> Duration {
        self.entries
            .get(key)
            .map_or(Duration::ZERO, |entry| entry.backoff)
    }

    /// `Next`: a new or expired entry gets the initial window, an existing one twice its
    /// window (at most `max`); either way it is updated at `now`.
    pub fn next(&mut self, key: &str, now: Timestamp) {
        let backoff = match self.entries.get(key) {
            Some(entry) if !self.has_expired(now, entry.last_update) => {
                entry.backoff.saturating_mul(2).min(self.max)
            }
            _ => self.initial,
        };
        self.entries.insert(
            key.to_owned(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// `IsInBackOffSinceUpdate`: whether `now` falls within the window that started at the
    /// entry's last update (never for a missing or expired entry).
    pub fn is_in_backoff_since_update(&self, key: &str, now: Timestamp) -> bool {
        self.entries.get(key).is_some_and(|entry| {
            !self.has_expired(now, entry.last_update)
                && elapsed(entry.last_update, now) < entry.backoff
        })
    }

    /// `GC`: drops the entries expired at `now` (upstream runs it every
    /// [`BACKOFF_GC_INTERVAL`]).
    pub fn gc(&mut self, now: Timestamp) {
        let max = self.max.saturating_mul(2);
        self.entries
            .retain(|_, entry| elapsed(entry.last_update, now) <= max);
    }

    /// How many keys have an entry.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key has an entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `now - since` as Go's `time.Sub`; a negative span (a clock going back) reads as zero,
/// which compares the same way against the non-negative windows.
fn elapsed(since: Timestamp, now: Timestamp) -> Duration {
    Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO)
}
