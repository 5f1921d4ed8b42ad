//! `ControllerExpectations`: per-controller counts of creates and deletes still to be observed.
//!
//! After a controller issues N creates or deletes, its informer cache lags behind the API server.
//! The controller records what it expects to see and skips the create/delete part of its sync
//! until every event was observed or the record is older than [`EXPECTATIONS_TIMEOUT`]. This
//! prevents duplicate creates and deletes from a stale cache (client-go's
//! `pkg/controller/controller_utils.go`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;

use crate::clock::{Clock, SystemClock, on_system_clock};

/// How long a record may stay unfulfilled before it no longer blocks syncs (upstream's
/// `ExpectationsTimeout`, 5 minutes). It bounds the damage of a missed watch event.
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// One controller's pending counts. Counts are atomics so observations (from event handlers)
/// never take the map's write lock.
#[derive(Debug)]
struct Record {
    add: AtomicI64,
    del: AtomicI64,
    timestamp: Instant,
}

impl Record {
    fn snapshot(&self) -> Expectation {
        Expectation {
            add: self.add.load(Ordering::SeqCst),
            del: self.del.load(Ordering::SeqCst),
            timestamp: self.timestamp,
        }
    }
}

/// A point-in-time copy of one controller's record, as returned by
/// [`ControllerExpectations::get_expectations`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expectation {
    /// Creations still expected; may be negative (extra observations are harmless).
    pub add: i64,
    /// Deletions still expected; may be negative.
    pub del: i64,
    /// When the record was set; lowering or raising does not refresh it.
    pub timestamp: Instant,
}

impl Expectation {
    /// True when nothing more is expected: `add <= 0 && del <= 0`.
    pub fn fulfilled(&self) -> bool {
        self.add <= 0 && self.del <= 0
    }
}

/// A thread-safe map from controller key (`namespace/name`) to expected creates and deletes.
///
/// Records are never expired in the background: age is only checked by
/// [`satisfied_expectations`](Self::satisfied_expectations), and an expired record stays until it
/// is set again or deleted, exactly as upstream.
pub struct ControllerExpectations<C: Clock = SystemClock> {
    records: RwLock<HashMap<String, Arc<Record>>>,
    clock: C,
}

on_system_clock!(
    ControllerExpectations,
    "Expectations on the real monotonic clock."
);

impl<C: Clock> std::fmt::Debug for ControllerExpectations<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerExpectations")
            .field("records", &self.records.read().len())
            .finish()
    }
}

impl<C: Clock> ControllerExpectations<C> {
    /// Expectations on an injected clock (tests use [`ManualClock`](crate::ManualClock)).
    pub fn with_clock(clock: C) -> Self {
        Self {
            records: RwLock::new(HashMap::new()),
            clock,
        }
    }

    /// Replaces any record for `key` with fresh counts stamped now.
    pub fn set_expectations(&self, key: &str, add: i64, del: i64) {
        let record = Arc::new(Record {
            add: AtomicI64::new(add),
            del: AtomicI64::new(del),
            timestamp: self.clock.now(),
        });
        tracing::debug!(key, add, del, "setting expectations");
        self.records.write().insert(key.to_owned(), record);
    }

    /// Expects `adds` creations; clobbers existing counts (deletions reset to 0).
    pub fn expect_creations(&self, key: &str, adds: i64) {
        self.set_expectations(key, adds, 0);
    }

    /// Starts a sync's count of creations, right before it reads the cache it decides from:
    /// replaces any record for `key` with zero counts stamped now. A creation observed from
    /// then on takes the record below zero, and [`Self::expect_creations_after_read`] puts the
    /// creates the sync decides on top, so a pod the sync did not see in its read (it appeared
    /// while the sync claimed pods or computed) still counts against them.
    ///
    /// kcm-rs: upstream sets the record only when it creates, so such a pod, which another
    /// writer made (a previous leader just before a handover), is never counted and the owner
    /// waits for the record to expire (5 minutes) before it scales again.
    ///
    /// Runs at every such sync, so an existing record is zeroed in place (its stamp is renewed
    /// by the creates, if any); only a key's first sync allocates one.
    pub fn begin_read(&self, key: &str) {
        if let Some(record) = self.records.read().get(key) {
            record.add.store(0, Ordering::SeqCst);
            record.del.store(0, Ordering::SeqCst);
            return;
        }
        self.set_expectations(key, 0, 0);
    }

    /// Expects `adds` more creations on top of the record [`Self::begin_read`] started,
    /// stamped now (a fresh record if there is none).
    pub fn expect_creations_after_read(&self, key: &str, adds: i64) {
        let mut records = self.records.write();
        let (add, del) = records.get(key).map_or((0, 0), |record| {
            (
                record.add.load(Ordering::SeqCst),
                record.del.load(Ordering::SeqCst),
            )
        });
        let add = add.saturating_add(adds);
        tracing::debug!(key, add, del, "expecting creations after the read");
        records.insert(
            key.to_owned(),
            Arc::new(Record {
                add: AtomicI64::new(add),
                del: AtomicI64::new(del),
                timestamp: self.clock.now(),
            }),
        );
    }

    /// Expects `dels` deletions; clobbers existing counts (creations reset to 0).
    pub fn expect_deletions(&self, key: &str, dels: i64) {
        self.set_expectations(key, 0, dels);
    }

    /// Subtracts from the counts of an existing record; a missing record is left missing,
    /// because an observation for a controller that expects nothing means nothing.
    pub fn lower_expectations(&self, key: &str, add: i64, del: i64) {
        self.adjust(key, -add, -del);
    }

    /// Adds to the counts of an existing record; no-op without a record.
    pub fn raise_expectations(&self, key: &str, add: i64, del: i64) {
        self.adjust(key, add, del);
    }

    /// One creation was observed (`lower(key, 1, 0)`).
    pub fn creation_observed(&self, key: &str) {
        self.lower_expectations(key, 1, 0);
    }

    /// One deletion was observed (`lower(key, 0, 1)`).
    pub fn deletion_observed(&self, key: &str) {
        self.lower_expectations(key, 0, 1);
    }

    /// A copy of the record for `key`, if any.
    pub fn get_expectations(&self, key: &str) -> Option<Expectation> {
        self.records.read().get(key).map(|record| record.snapshot())
    }

    /// Forgets the record for `key` (the controller object was deleted).
    pub fn delete_expectations(&self, key: &str) {
        self.records.write().remove(key);
    }

    /// Whether the controller may create/delete now: true when there is no record, the record
    /// is fulfilled, or it is older than [`EXPECTATIONS_TIMEOUT`]. Expiry keeps the record.
    pub fn satisfied_expectations(&self, key: &str) -> bool {
        let Some(expectation) = self.get_expectations(key) else {
            tracing::trace!(key, "no expectations recorded; controller may sync");
            return true;
        };
        if expectation.fulfilled() {
            tracing::debug!(
                key,
                add = expectation.add,
                del = expectation.del,
                "expectations fulfilled"
            );
            return true;
        }
        let age = self
            .clock
            .now()
            .saturating_duration_since(expectation.timestamp);
        if age > EXPECTATIONS_TIMEOUT {
            tracing::debug!(key, ?age, "expectations expired");
            return true;
        }
        tracing::debug!(
            key,
            add = expectation.add,
            del = expectation.del,
            "controller still waiting on expectations"
        );
        false
    }

    fn adjust(&self, key: &str, add: i64, del: i64) {
        let records = self.records.read();
        if let Some(record) = records.get(key) {
            record.add.fetch_add(add, Ordering::SeqCst);
            record.del.fetch_add(del, Ordering::SeqCst);
            tracing::trace!(key, add, del, "adjusted expectations");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const KEY: &str = "ns/rs";

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Set(i64, i64),
        ExpectCreations(i64),
        ExpectDeletions(i64),
        Lower(i64, i64),
        Raise(i64, i64),
        CreationObserved,
        DeletionObserved,
        Delete,
        Advance(Duration),
    }

    fn apply(expectations: &ControllerExpectations<ManualClock>, clock: &ManualClock, op: Op) {
        match op {
            Op::Set(a, d) => expectations.set_expectations(KEY, a, d),
            Op::ExpectCreations(n) => expectations.expect_creations(KEY, n),
            Op::ExpectDeletions(n) => expectations.expect_deletions(KEY, n),
            Op::Lower(a, d) => expectations.lower_expectations(KEY, a, d),
            Op::Raise(a, d) => expectations.raise_expectations(KEY, a, d),
            Op::CreationObserved => expectations.creation_observed(KEY),
            Op::DeletionObserved => expectations.deletion_observed(KEY),
            Op::Delete => expectations.delete_expectations(KEY),
            Op::Advance(by) => clock.advance(by),
        }
    }

    /// (name, operations, expected (add, del) or None without a record, expected satisfied)
    type Case = (&'static str, Vec<Op>, Option<(i64, i64)>, bool);

    const JUST_UNDER: Duration = EXPECTATIONS_TIMEOUT;
    const JUST_OVER: Duration = Duration::from_millis(5 * 60 * 1000 + 1);

    #[test]
    fn transitions() {
        use Op::*;
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("never set", vec![], None, true),
            ("set pending", vec![Set(2, 1)], Some((2, 1)), false),
            ("set zero is fulfilled", vec![Set(0, 0)], Some((0, 0)), true),
            ("expect creations", vec![ExpectCreations(3)], Some((3, 0)), false),
            ("expect deletions", vec![ExpectDeletions(2)], Some((0, 2)), false),
            ("creations clobber deletions", vec![ExpectDeletions(2), ExpectCreations(1)], Some((1, 0)), false),
            ("deletions clobber creations", vec![ExpectCreations(4), ExpectDeletions(1)], Some((0, 1)), false),
            ("one creation observed of two", vec![ExpectCreations(2), CreationObserved], Some((1, 0)), false),
            ("all creations observed", vec![ExpectCreations(2), CreationObserved, CreationObserved], Some((0, 0)), true),
            ("extra creation goes negative and stays satisfied", vec![ExpectCreations(1), CreationObserved, CreationObserved], Some((-1, 0)), true),
            ("deletion observed", vec![ExpectDeletions(1), DeletionObserved], Some((0, 0)), true),
            ("adds done but deletes pending", vec![Set(1, 1), CreationObserved], Some((0, 1)), false),
            ("lower both", vec![Set(3, 3), Lower(2, 3)], Some((1, 0)), false),
            ("raise both", vec![Set(0, 0), Raise(1, 2)], Some((1, 2)), false),
            ("raise then lower back", vec![Set(1, 0), Raise(2, 0), Lower(3, 0)], Some((0, 0)), true),
            ("lower without record is a no-op", vec![Lower(1, 1)], None, true),
            ("raise without record is a no-op", vec![Raise(1, 1)], None, true),
            ("observation without record is a no-op", vec![CreationObserved, DeletionObserved], None, true),
            ("delete removes the record", vec![ExpectCreations(2), Delete], None, true),
            ("delete of missing record", vec![Delete], None, true),
            ("exactly at the timeout still waits", vec![ExpectCreations(1), Advance(JUST_UNDER)], Some((1, 0)), false),
            ("expired is satisfied and the record stays", vec![ExpectCreations(1), Advance(JUST_OVER)], Some((1, 0)), true),
            ("raise does not refresh the timestamp", vec![ExpectCreations(1), Advance(JUST_UNDER), Raise(1, 0), Advance(Duration::from_millis(1))], Some((2, 0)), true),
            ("set after expiry restarts the clock", vec![ExpectCreations(1), Advance(JUST_OVER), ExpectCreations(1)], Some((1, 0)), false),
            ("lower after expiry keeps it expired", vec![ExpectCreations(3), Advance(JUST_OVER), CreationObserved], Some((2, 0)), true),
            ("set after delete", vec![ExpectCreations(1), Delete, ExpectDeletions(2)], Some((0, 2)), false),
        ];
        for (name, ops, want_counts, want_satisfied) in cases {
            let clock = ManualClock::new();
            let expectations = ControllerExpectations::with_clock(clock.clone());
            for op in &ops {
                apply(&expectations, &clock, *op);
            }
            let got = expectations.get_expectations(KEY).map(|e| (e.add, e.del));
            assert_eq!(got, want_counts, "{name}: counts");
            assert_eq!(
                expectations.satisfied_expectations(KEY),
                want_satisfied,
                "{name}: satisfied"
            );
        }
    }

    #[test]
    fn timestamp_is_set_time_and_survives_lowering() {
        let clock = ManualClock::new();
        let expectations = ControllerExpectations::with_clock(clock.clone());
        let set_at = clock.now();
        expectations.expect_creations(KEY, 2);
        clock.advance(Duration::from_secs(10));
        expectations.creation_observed(KEY);
        let record = expectations.get_expectations(KEY).expect("record was set");
        assert_eq!(record.timestamp, set_at);
    }

    #[test]
    fn keys_are_independent() {
        let expectations = ControllerExpectations::new();
        expectations.expect_creations("ns/a", 1);
        expectations.expect_deletions("ns/b", 1);
        expectations.creation_observed("ns/b");
        assert!(!expectations.satisfied_expectations("ns/a"));
        assert_eq!(
            expectations
                .get_expectations("ns/b")
                .map(|e| (e.add, e.del)),
            Some((-1, 1))
        );
        expectations.delete_expectations("ns/a");
        assert!(expectations.satisfied_expectations("ns/a"));
        assert!(!expectations.satisfied_expectations("ns/b"));
    }

    #[test]
    fn concurrent_observations_are_all_counted() {
        let expectations = Arc::new(ControllerExpectations::new());
        expectations.expect_creations(KEY, 400);
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let expectations = Arc::clone(&expectations);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        expectations.creation_observed(KEY);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("observer thread panicked");
        }
        assert_eq!(expectations.get_expectations(KEY).map(|e| e.add), Some(0));
        assert!(expectations.satisfied_expectations(KEY));
    }

    /// A creation observed after the sync's read began counts against the creates it then
    /// decides; one observed before (in the read) does not; a sync that decides nothing leaves a
    /// fulfilled record.
    #[test]
    fn creations_observed_after_the_read_count_against_the_creates_decided() {
        let cases: [(&str, i64, i64, i64, bool); 4] = [
            ("nothing arrived: all three awaited", 0, 3, 3, false),
            ("one arrived after the read: two awaited", 1, 3, 2, false),
            ("three arrived after the read: none awaited", 3, 3, 0, true),
            ("no create decided", 1, 0, -1, true),
        ];
        // Each case without a record before the read, and with a stale one (zeroed in place).
        for ((name, arrived, decided, awaited, satisfied), stale) in cases
            .into_iter()
            .flat_map(|case| [(case, false), (case, true)])
        {
            let expectations = ControllerExpectations::with_clock(ManualClock::new());
            if stale {
                expectations.set_expectations(KEY, 2, 1);
            }
            expectations.creation_observed(KEY);
            expectations.begin_read(KEY);
            for _ in 0..arrived {
                expectations.creation_observed(KEY);
            }
            if decided > 0 {
                expectations.expect_creations_after_read(KEY, decided);
            }
            assert_eq!(
                expectations.get_expectations(KEY).map(|e| e.add),
                Some(awaited),
                "{name}, stale record {stale}"
            );
            assert_eq!(
                expectations.satisfied_expectations(KEY),
                satisfied,
                "{name}, stale record {stale}"
            );
        }
    }
}
