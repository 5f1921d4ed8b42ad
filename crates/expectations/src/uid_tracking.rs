//! `UIDTrackingControllerExpectations`: deletion expectations that remember *which* pods.
//!
//! A graceful pod deletion is seen first as an update setting `deletionTimestamp` and later as
//! the real delete (or a tombstone after a relist). The ReplicaSet controller treats both as
//! "deletion observed"; remembering the expected pod keys makes each pod lower the deletion count
//! at most once. Everything else passes through to [`ControllerExpectations`].

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;

use crate::clock::{Clock, SystemClock, on_system_clock};
use crate::controller::{ControllerExpectations, Expectation};

/// [`ControllerExpectations`] plus, per controller key, the set of pod keys (`namespace/name`)
/// whose deletion is expected.
pub struct UidTrackingExpectations<C: Clock = SystemClock> {
    inner: ControllerExpectations<C>,
    // Guards the sets and serializes set changes with the matching count changes.
    expected_deletions: Mutex<HashMap<String, HashSet<String>>>,
}

on_system_clock!(
    UidTrackingExpectations,
    "UID-tracking expectations on the real monotonic clock."
);

impl<C: Clock> std::fmt::Debug for UidTrackingExpectations<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UidTrackingExpectations")
            .field("inner", &self.inner)
            .field("tracked_keys", &self.expected_deletions.lock().len())
            .finish()
    }
}

impl<C: Clock> UidTrackingExpectations<C> {
    /// UID-tracking expectations on an injected clock.
    pub fn with_clock(clock: C) -> Self {
        Self {
            inner: ControllerExpectations::with_clock(clock),
            expected_deletions: Mutex::new(HashMap::new()),
        }
    }

    /// Expects the deletion of exactly these pods: replaces the key's set (a non-empty previous
    /// set is clobbered, which upstream logs as an error) and sets the counts to
    /// `(0, number of distinct pod keys)`.
    pub fn expect_deletions<I, S>(&self, key: &str, pod_keys: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let set: HashSet<String> = pod_keys.into_iter().map(Into::into).collect();
        let count = i64::try_from(set.len()).unwrap_or(i64::MAX);
        let mut sets = self.expected_deletions.lock();
        if let Some(existing) = sets.get(key).filter(|existing| !existing.is_empty()) {
            tracing::error!(key, existing = ?existing, "clobbering existing delete keys");
        }
        sets.insert(key.to_owned(), set);
        self.inner.expect_deletions(key, count);
    }

    /// Records that `pod_key` is gone or going; lowers the deletion count only the first time an
    /// expected pod is seen, and ignores pods that were never expected.
    pub fn deletion_observed(&self, key: &str, pod_key: &str) {
        let mut sets = self.expected_deletions.lock();
        if let Some(set) = sets.get_mut(key)
            && set.remove(pod_key)
        {
            tracing::debug!(key, pod = pod_key, "observed expected deletion");
            self.inner.deletion_observed(key);
        }
    }

    /// Forgets both the counts and the pod set of `key`.
    pub fn delete_expectations(&self, key: &str) {
        let mut sets = self.expected_deletions.lock();
        self.inner.delete_expectations(key);
        sets.remove(key);
    }

    /// The pod keys whose deletion is still expected, if a set was ever stored for `key`.
    pub fn get_uids(&self, key: &str) -> Option<HashSet<String>> {
        self.expected_deletions.lock().get(key).cloned()
    }

    /// See [`ControllerExpectations::expect_creations`].
    pub fn expect_creations(&self, key: &str, adds: i64) {
        self.inner.expect_creations(key, adds);
    }

    /// See [`ControllerExpectations::begin_read`].
    pub fn begin_read(&self, key: &str) {
        self.inner.begin_read(key);
    }

    /// See [`ControllerExpectations::expect_creations_after_read`].
    pub fn expect_creations_after_read(&self, key: &str, adds: i64) {
        self.inner.expect_creations_after_read(key, adds);
    }

    /// See [`ControllerExpectations::creation_observed`].
    pub fn creation_observed(&self, key: &str) {
        self.inner.creation_observed(key);
    }

    /// See [`ControllerExpectations::set_expectations`].
    pub fn set_expectations(&self, key: &str, add: i64, del: i64) {
        self.inner.set_expectations(key, add, del);
    }

    /// See [`ControllerExpectations::raise_expectations`].
    pub fn raise_expectations(&self, key: &str, add: i64, del: i64) {
        self.inner.raise_expectations(key, add, del);
    }

    /// See [`ControllerExpectations::lower_expectations`].
    pub fn lower_expectations(&self, key: &str, add: i64, del: i64) {
        self.inner.lower_expectations(key, add, del);
    }

    /// See [`ControllerExpectations::get_expectations`].
    pub fn get_expectations(&self, key: &str) -> Option<Expectation> {
        self.inner.get_expectations(key)
    }

    /// See [`ControllerExpectations::satisfied_expectations`].
    pub fn satisfied_expectations(&self, key: &str) -> bool {
        self.inner.satisfied_expectations(key)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

    const KEY: &str = "ns/rs";

    #[derive(Debug, Clone)]
    enum Op {
        ExpectDeletions(Vec<&'static str>),
        DeletionObserved(&'static str),
        ExpectCreations(i64),
        CreationObserved,
        Delete,
        Advance(Duration),
    }

    /// (name, operations, expected (add, del), expected pod set, expected satisfied)
    type Case = (
        &'static str,
        Vec<Op>,
        Option<(i64, i64)>,
        Option<Vec<&'static str>>,
        bool,
    );

    fn sorted(set: Option<HashSet<String>>) -> Option<Vec<String>> {
        set.map(|set| {
            let mut keys: Vec<String> = set.into_iter().collect();
            keys.sort();
            keys
        })
    }

    #[test]
    fn transitions() {
        use Op::*;
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("nothing", vec![], None, None, true),
            ("expect two pods", vec![ExpectDeletions(vec!["ns/a", "ns/b"])], Some((0, 2)), Some(vec!["ns/a", "ns/b"]), false),
            ("duplicate pod keys count once", vec![ExpectDeletions(vec!["ns/a", "ns/a"])], Some((0, 1)), Some(vec!["ns/a"]), false),
            ("observe one", vec![ExpectDeletions(vec!["ns/a", "ns/b"]), DeletionObserved("ns/a")], Some((0, 1)), Some(vec!["ns/b"]), false),
            ("same pod observed twice lowers once", vec![ExpectDeletions(vec!["ns/a", "ns/b"]), DeletionObserved("ns/a"), DeletionObserved("ns/a")], Some((0, 1)), Some(vec!["ns/b"]), false),
            ("unexpected pod is ignored", vec![ExpectDeletions(vec!["ns/a"]), DeletionObserved("ns/z")], Some((0, 1)), Some(vec!["ns/a"]), false),
            ("all observed", vec![ExpectDeletions(vec!["ns/a", "ns/b"]), DeletionObserved("ns/b"), DeletionObserved("ns/a")], Some((0, 0)), Some(vec![]), true),
            ("observation without expectations", vec![DeletionObserved("ns/a")], None, None, true),
            ("clobber replaces the set and the counts", vec![ExpectDeletions(vec!["ns/a"]), ExpectDeletions(vec!["ns/b", "ns/c"]), DeletionObserved("ns/a")], Some((0, 2)), Some(vec!["ns/b", "ns/c"]), false),
            ("expect deletions resets creations", vec![ExpectCreations(3), ExpectDeletions(vec!["ns/a"])], Some((0, 1)), Some(vec!["ns/a"]), false),
            ("creations pass through", vec![ExpectCreations(2), CreationObserved], Some((1, 0)), None, false),
            ("delete drops counts and set", vec![ExpectDeletions(vec!["ns/a"]), Delete], None, None, true),
            ("after delete an old pod is ignored", vec![ExpectDeletions(vec!["ns/a"]), Delete, ExpectCreations(1), DeletionObserved("ns/a")], Some((1, 0)), None, false),
            ("expired deletions are satisfied", vec![ExpectDeletions(vec!["ns/a"]), Advance(Duration::from_secs(301))], Some((0, 1)), Some(vec!["ns/a"]), true),
            ("empty expectation is fulfilled", vec![ExpectDeletions(vec![])], Some((0, 0)), Some(vec![]), true),
        ];
        for (name, ops, want_counts, want_set, want_satisfied) in cases {
            let clock = ManualClock::new();
            let expectations = UidTrackingExpectations::with_clock(clock.clone());
            for op in ops {
                match op {
                    ExpectDeletions(pods) => expectations.expect_deletions(KEY, pods),
                    DeletionObserved(pod) => expectations.deletion_observed(KEY, pod),
                    ExpectCreations(n) => expectations.expect_creations(KEY, n),
                    CreationObserved => expectations.creation_observed(KEY),
                    Delete => expectations.delete_expectations(KEY),
                    Advance(by) => clock.advance(by),
                }
            }
            let counts = expectations.get_expectations(KEY).map(|e| (e.add, e.del));
            assert_eq!(counts, want_counts, "{name}: counts");
            let want_set =
                want_set.map(|keys| keys.into_iter().map(String::from).collect::<Vec<_>>());
            assert_eq!(
                sorted(expectations.get_uids(KEY)),
                want_set,
                "{name}: pod set"
            );
            assert_eq!(
                expectations.satisfied_expectations(KEY),
                want_satisfied,
                "{name}: satisfied"
            );
        }
    }

    #[test]
    fn pass_through_adjustments() {
        let expectations = UidTrackingExpectations::new();
        expectations.set_expectations(KEY, 1, 1);
        expectations.raise_expectations(KEY, 2, 0);
        expectations.lower_expectations(KEY, 0, 1);
        assert_eq!(
            expectations.get_expectations(KEY).map(|e| (e.add, e.del)),
            Some((3, 0))
        );
        assert!(!expectations.satisfied_expectations(KEY));
    }
}
