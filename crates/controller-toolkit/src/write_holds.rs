//! kcm-rs only: per object key, since when a status write has been held back.
//!
//! Why: a status write that nothing waits for can be merged with the next one, and a
//! controller saves API writes by holding it briefly (issue 21 for Deployments' counts-only
//! changes, issue 28 for a ReplicaSet's status while its own creates and deletes are still
//! unobserved). What may be held is each controller's decision; how long a hold has run, and
//! that it never runs past its limit, is the same bookkeeping for all of them, kept here once.
//! The caller requeues the key for the time that is left, so a held write goes out by the
//! limit even when no event arrives.

use std::{collections::HashMap, time::Duration};

use parking_lot::Mutex;
use tokio::time::Instant;

/// When each key's held write was first held back; a key is absent while nothing is held.
#[derive(Debug, Default)]
pub struct WriteHolds {
    held_since: Mutex<HashMap<String, Instant>>,
}

impl WriteHolds {
    /// How long `key`'s write has been held at `now`, or `None` when nothing is held.
    pub fn held_for(&self, key: &str, now: Instant) -> Option<Duration> {
        self.held_since
            .lock()
            .get(key)
            .map(|since| now.saturating_duration_since(*since))
    }

    /// Holds `key`'s write from `now`, unless a hold already runs (which keeps its start, so
    /// a write is never held past its limit by holding it again).
    pub fn hold(&self, key: &str, now: Instant) {
        self.held_since.lock().entry(key.to_owned()).or_insert(now);
    }

    /// Holds `key`'s write for at most `limit` from its first hold: the time left, for which
    /// the caller requeues the key, or `None` when the limit is reached and the write goes out
    /// now (the hold is then over).
    pub fn hold_within(&self, key: &str, now: Instant, limit: Duration) -> Option<Duration> {
        let mut held = self.held_since.lock();
        let since = *held.entry(key.to_owned()).or_insert(now);
        let waited = now.saturating_duration_since(since);
        if waited < limit {
            return Some(limit - waited);
        }
        held.remove(key);
        None
    }

    /// The key's write went out (or its object is gone): nothing is held any more.
    pub fn release(&self, key: &str) {
        self.held_since.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_hold_never_runs_past_its_limit_from_its_first_start() {
        let holds = WriteHolds::default();
        let start = Instant::now();
        let limit = Duration::from_secs(1);
        assert_eq!(holds.hold_within("a", start, limit), Some(limit));
        assert_eq!(
            holds.hold_within("a", start + ms(300), limit),
            Some(ms(700)),
            "holding again keeps the first start"
        );
        assert_eq!(
            holds.hold_within("b", start + ms(300), limit),
            Some(limit),
            "keys are held independently"
        );
        assert_eq!(holds.hold_within("a", start + limit, limit), None);
        assert_eq!(
            holds.held_for("a", start + limit),
            None,
            "the limit ends the hold"
        );
        holds.release("b");
        assert_eq!(holds.hold_within("b", start + ms(1500), limit), Some(limit));
    }

    #[test]
    fn held_for_counts_from_the_first_hold_until_released() {
        let holds = WriteHolds::default();
        let start = Instant::now();
        assert_eq!(holds.held_for("a", start), None);
        holds.hold("a", start);
        holds.hold("a", start + ms(200));
        assert_eq!(holds.held_for("a", start + ms(500)), Some(ms(500)));
        holds.release("a");
        assert_eq!(holds.held_for("a", start + ms(600)), None);
    }
}
