//! The failed-pod backoff: client-go `flowcontrol.Backoff` (`TestSlowBackoff`,
//! `TestBackoffGC`, `TestIsInBackOffSinceUpdate` style) with the DaemonSet's 1 s / 15 min.

use std::time::Duration;

use serde_json::json;

use super::{at, daemon_set};
use crate::decide::backoff::{FailedPodBackoff, failed_pods_backoff_key};

#[test]
fn the_key_is_uid_observed_generation_and_node() {
    let ds = daemon_set(json!({"status": {"observedGeneration": 4,
        "currentNumberScheduled": 0, "desiredNumberScheduled": 0,
        "numberMisscheduled": 0, "numberReady": 0}}));
    assert_eq!(failed_pods_backoff_key(&ds, "node-1"), "ds-uid/4/node-1");
    assert_eq!(
        failed_pods_backoff_key(&daemon_set(json!({})), "n"),
        "ds-uid/0/n"
    );
}

#[test]
fn next_doubles_up_to_the_maximum() {
    let mut backoff = FailedPodBackoff::default();
    let mut windows = Vec::new();
    for step in 0..13 {
        backoff.next("key", at(step));
        windows.push(backoff.get("key").as_secs());
    }
    assert_eq!(
        windows,
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900]
    );
    assert_eq!(backoff.get("other"), Duration::ZERO, "no entry, no window");
}

#[test]
fn an_entry_untouched_for_twice_the_maximum_starts_over() {
    let mut backoff = FailedPodBackoff::default();
    backoff.next("key", at(0));
    backoff.next("key", at(1));
    assert_eq!(backoff.get("key"), Duration::from_secs(2));
    // Exactly 30 minutes later it has not expired yet: doubled.
    backoff.next("key", at(1 + 1800));
    assert_eq!(backoff.get("key"), Duration::from_secs(4));
    // More than 30 minutes later: back to the first window.
    backoff.next("key", at(1 + 1800 + 1801));
    assert_eq!(backoff.get("key"), Duration::from_secs(1));
}

#[test]
fn in_backoff_since_update_cases() {
    let mut backoff = FailedPodBackoff::default();
    backoff.next("key", at(100));
    backoff.next("key", at(100));
    // The window is 2 s from the update at 100 s.
    let cases = [
        ("at the update", at(100), true),
        ("inside the window", at(101), true),
        ("the window's end is outside", at(102), false),
        ("after the window", at(150), false),
        (
            "expired entries are never in backoff",
            at(100 + 1801),
            false,
        ),
    ];
    for (rule, now, want) in cases {
        assert_eq!(
            backoff.is_in_backoff_since_update("key", now),
            want,
            "{rule}"
        );
    }
    assert!(!backoff.is_in_backoff_since_update("unknown", at(100)));
}

#[test]
fn gc_drops_only_expired_entries() {
    let mut backoff = FailedPodBackoff::new(Duration::from_secs(1), Duration::from_secs(60));
    backoff.next("old", at(0));
    backoff.next("recent", at(100));
    backoff.gc(at(120));
    assert_eq!(backoff.len(), 2, "nothing older than 2 x 60 s");
    backoff.gc(at(121));
    assert_eq!(backoff.len(), 1);
    assert_eq!(backoff.get("old"), Duration::ZERO);
    backoff.gc(at(10_000));
    assert!(backoff.is_empty());
}
