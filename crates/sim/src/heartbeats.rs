//! The rotation the kubelet renews node heartbeats (Leases and status) from: one ticking
//! task spreads every node's renewal evenly over the heartbeat period, so 5,000 nodes never
//! write in one burst.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// The heartbeat rotation: nodes queue up, and each tick renews as many from the front as
/// keeps every node on its period (`nodes × elapsed / period`, carrying the fraction), so
/// the writes are spread evenly over the period however many nodes there are.
#[derive(Debug)]
pub(crate) struct Heartbeats {
    period: Duration,
    queue: VecDeque<String>,
    /// Every node registered (whether or not heartbeats are on).
    known: HashSet<String>,
    credit: f64,
    last: Instant,
}

impl Heartbeats {
    /// An empty rotation renewing each node every `period` (never when zero).
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            queue: VecDeque::new(),
            known: HashSet::new(),
            credit: 0.0,
            last: Instant::now(),
        }
    }

    /// How often the rotation is looked at: a tenth of the period, between 1 ms and 100 ms
    /// (an hour when heartbeats are off).
    pub fn tick(&self) -> Duration {
        if self.period.is_zero() {
            return Duration::from_secs(3600);
        }
        (self.period / 10).clamp(Duration::from_millis(1), Duration::from_millis(100))
    }

    /// Whether heartbeats are on (the period is not zero).
    pub fn enabled(&self) -> bool {
        !self.period.is_zero()
    }

    /// Registers node `name`; false when it was known already.
    pub fn add(&mut self, name: &str) -> bool {
        if !self.known.insert(name.to_string()) {
            return false;
        }
        if !self.period.is_zero() {
            self.queue.push_back(name.to_string());
        }
        true
    }

    /// Forgets a node that is gone.
    pub fn forget(&mut self, name: &str) {
        if self.known.remove(name) {
            self.queue.retain(|n| n != name);
        }
    }

    /// The nodes whose heartbeat is due at `now`, taken off the queue.
    pub fn due(&mut self, now: Instant) -> Vec<String> {
        let elapsed = now.saturating_duration_since(self.last);
        self.last = now;
        if self.period.is_zero() || self.queue.is_empty() {
            self.credit = 0.0;
            return Vec::new();
        }
        let queued = self.queue.len() as f64;
        self.credit =
            (self.credit + queued * elapsed.as_secs_f64() / self.period.as_secs_f64()).min(queued);
        let count = self.credit.floor();
        self.credit -= count;
        (0..count as usize)
            .filter_map(|_| self.queue.pop_front())
            .collect()
    }

    /// Puts a node that was renewed back at the end of the queue.
    pub fn requeue(&mut self, name: String) {
        self.queue.push_back(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_spread_over_the_period() {
        let mut beats = Heartbeats::new(Duration::from_secs(10));
        assert_eq!(beats.tick(), Duration::from_millis(100));
        let t0 = beats.last;
        for i in 0..1000 {
            assert!(beats.add(&format!("n{i}")));
        }
        assert!(!beats.add("n0"));
        let mut per_tick = Vec::new();
        let mut first = None;
        for k in 1..=100u64 {
            let due = beats.due(t0 + Duration::from_millis(100 * k));
            per_tick.push(due.len());
            first = first.or(due.first().cloned());
            for name in due {
                beats.requeue(name);
            }
        }
        assert_eq!(first.as_deref(), Some("n0"));
        assert!(
            per_tick.iter().all(|n| (9..=11).contains(n)),
            "{per_tick:?}"
        );
        let total: usize = per_tick.iter().sum();
        assert!(
            (999..=1001).contains(&total),
            "{total} renewals in one period"
        );
        beats.forget("n5");
        assert_eq!(beats.queue.len(), 999);
        assert!(beats.add("n5"), "a recreated node is new again");

        let mut single = Heartbeats::new(Duration::from_millis(200));
        assert_eq!(single.tick(), Duration::from_millis(20));
        let t0 = single.last;
        single.add("only");
        assert!(single.due(t0 + Duration::from_millis(100)).is_empty());
        assert_eq!(single.due(t0 + Duration::from_millis(200)), vec!["only"]);

        let mut off = Heartbeats::new(Duration::ZERO);
        assert!(off.add("n"));
        assert!(off.due(Instant::now() + Duration::from_secs(60)).is_empty());
        assert_eq!(off.tick(), Duration::from_secs(3600));
    }
}
