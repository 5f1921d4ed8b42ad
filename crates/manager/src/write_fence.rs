//! The leader's write fence (kcm-rs only, on whenever leader election is): the controllers'
//! writes are sent only while this process's lease is valid by its own clock.
//!
//! Why: a leader that stalls past its lease (SIGSTOP, a frozen VM, a long pause) resumes with
//! workers that still hold keys. Until its renew loop notices the loss and the process exits,
//! those workers would write beside its successor: two controllers acting on the same objects.
//! Upstream lets that happen; here every write of the controllers' clients checks, after the
//! client-side rate limiter and just before it is sent (`rest_client`), the deadline the last
//! successful acquire or renew set (the time that attempt started plus the renew deadline,
//! which is shorter than the lease duration a successor waits), so a deposed leader's writes
//! are refused locally, before they reach the API server. A request that was already in the
//! HTTP stack when the process stalled is stopped one level down: the controllers'
//! connections check the same deadline before each write to the socket
//! (`fenced_connection`), so once it has passed they send nothing at all, reads included;
//! the process exits on the lost lease moments later anyway. The elector's own client is not
//! fenced: it must renew the lease the fence follows.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use parking_lot::Mutex;

/// Until when this process may write as the leader; shared by the elector, which extends it,
/// and every controller's client, which checks it before each write.
#[derive(Debug, Clone, Default)]
pub struct LeaseFence {
    valid_until: Arc<Mutex<Option<Instant>>>,
}

impl LeaseFence {
    /// A closed fence: nothing is written until the lease is acquired.
    pub fn new() -> Self {
        Self::default()
    }

    /// A successful acquire or renew that started at `attempt_started` keeps the lease ours
    /// for `renew_deadline` from then.
    pub fn extend(&self, attempt_started: Instant, renew_deadline: Duration) {
        let until = attempt_started + renew_deadline;
        let mut valid_until = self.valid_until.lock();
        *valid_until = Some(valid_until.map_or(until, |current| current.max(until)));
    }

    /// Leadership is lost or given up: no more writes.
    pub fn close(&self) {
        *self.valid_until.lock() = None;
    }

    /// Whether a write may be sent now.
    pub fn is_open(&self) -> bool {
        self.valid_until
            .lock()
            .is_some_and(|until| Instant::now() < until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_only_within_the_renew_deadline_of_the_last_success() {
        let fence = LeaseFence::new();
        assert!(!fence.is_open(), "closed until the lease is acquired");
        fence.extend(Instant::now(), Duration::from_secs(10));
        assert!(fence.is_open());
        // A stalled process's last success is long past its deadline.
        let stalled = LeaseFence::new();
        stalled.extend(
            Instant::now() - Duration::from_secs(30),
            Duration::from_secs(10),
        );
        assert!(!stalled.is_open());
        // An older success never shortens a later one.
        fence.extend(
            Instant::now() - Duration::from_secs(30),
            Duration::from_secs(10),
        );
        assert!(fence.is_open());
        fence.close();
        assert!(!fence.is_open());
    }
}
