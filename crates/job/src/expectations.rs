//! What the Job controller expects its caches to show, beyond the pod creations and deletions
//! the shared expectations count:
//! * [`FinalizerExpectations`] (upstream `uidTrackingExpectations`): the pods whose tracking
//!   finalizer a sync removed, until the pod informer shows each without it. Until then a
//!   finished pod the cache still shows with its finalizer is not counted again.
//! * [`FinishedJobs`] (upstream `finishedJobExpectations`): the Jobs a sync finished, until the
//!   Job informer shows the terminal condition, so a sync on the stale copy does not recreate
//!   pods for a Job that is over.

use std::collections::{HashMap, HashSet};

use parking_lot::Mutex;

use crate::decide::types::UidSet;

/// Per Job key, the UIDs of the pods whose finalizer removal was sent and not yet observed.
/// No expiry, as upstream: an entry goes when the pod is seen without the finalizer or gone,
/// or with the Job.
#[derive(Debug, Default)]
pub struct FinalizerExpectations {
    expected: Mutex<HashMap<String, UidSet>>,
}

impl FinalizerExpectations {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// `expectFinalizersRemoved`: adds `uids` to the Job's set.
    pub fn expect_finalizers_removed<'u>(
        &self,
        key: &str,
        uids: impl IntoIterator<Item = &'u str>,
    ) {
        let mut expected = self.expected.lock();
        let set = expected.entry(key.to_owned()).or_default();
        set.extend(uids.into_iter().map(str::to_owned));
    }

    /// `finalizerRemovalObserved`: the pod `uid` of Job `key` no longer has the finalizer (or
    /// its removal failed). An emptied set is dropped.
    pub fn finalizer_removal_observed(&self, key: &str, uid: &str) {
        let mut expected = self.expected.lock();
        if let Some(set) = expected.get_mut(key) {
            set.remove(uid);
            if set.is_empty() {
                expected.remove(key);
            }
        }
    }

    /// `getExpectedUIDs`: a copy of the Job's set.
    pub fn expected_uids(&self, key: &str) -> UidSet {
        self.expected.lock().get(key).cloned().unwrap_or_default()
    }

    /// Whether the removal of the pod `uid`'s finalizer was sent for the Job `key` and not
    /// observed yet.
    pub fn is_expected(&self, key: &str, uid: &str) -> bool {
        self.expected
            .lock()
            .get(key)
            .is_some_and(|set| set.contains(uid))
    }

    /// `deleteExpectations`: forgets the Job.
    pub fn delete_expectations(&self, key: &str) {
        self.expected.lock().remove(key);
    }
}

/// The UIDs of the Jobs this controller finished whose terminal condition the Job informer has
/// not delivered yet.
#[derive(Debug, Default)]
pub struct FinishedJobs {
    uids: Mutex<HashSet<String>>,
}

impl FinishedJobs {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that the Job `uid` was written finished.
    pub fn store(&self, uid: &str) {
        self.uids.lock().insert(uid.to_owned());
    }

    /// Whether the Job `uid` was written finished.
    pub fn contains(&self, uid: &str) -> bool {
        self.uids.lock().contains(uid)
    }

    /// Forgets the Job `uid` (its finished copy arrived, or it was deleted).
    pub fn delete(&self, uid: &str) {
        self.uids.lock().remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_accumulate_and_are_observed_one_by_one() {
        let expectations = FinalizerExpectations::new();
        expectations.expect_finalizers_removed("ns/job", ["a", "b"]);
        expectations.expect_finalizers_removed("ns/job", ["c"]);
        expectations.finalizer_removal_observed("ns/job", "b");
        expectations.finalizer_removal_observed("ns/other", "a");
        assert!(expectations.is_expected("ns/job", "a"));
        assert!(!expectations.is_expected("ns/job", "b"));
        assert!(!expectations.is_expected("ns/other", "a"));
        let expected: Vec<String> = expectations.expected_uids("ns/job").into_iter().collect();
        assert_eq!(expected, ["a", "c"]);
        expectations.finalizer_removal_observed("ns/job", "a");
        expectations.finalizer_removal_observed("ns/job", "c");
        assert!(expectations.expected_uids("ns/job").is_empty());
        assert!(
            expectations.expected.lock().is_empty(),
            "an emptied set is dropped"
        );
    }

    #[test]
    fn a_finished_job_is_remembered_until_deleted() {
        let finished = FinishedJobs::new();
        finished.store("uid-1");
        assert!(finished.contains("uid-1"));
        assert!(!finished.contains("uid-2"));
        finished.delete("uid-1");
        assert!(!finished.contains("uid-1"));
    }
}
