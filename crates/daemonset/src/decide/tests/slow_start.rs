//! `syncNodes`: the burst cap, the expectations and the slow-start create batches.

use std::ops::Range;

use crate::decide::slow_start::{BURST_REPLICAS, SyncNodesPlan};

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count)
        .map(|index| format!("{prefix}-{index}"))
        .collect()
}

/// upstream's own loop: `batchSize = min(createDiff, 1)`, then
/// `batchSize = min(2*batchSize, createDiff-(pos+batchSize))`.
fn upstream_batches(create_diff: usize) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let (mut pos, mut batch_size) = (0, create_diff.min(1));
    while create_diff > pos {
        batches.push(pos..pos + batch_size);
        let next = (2 * batch_size).min(create_diff - (pos + batch_size));
        pos += batch_size;
        batch_size = next;
    }
    batches
}

#[test]
fn creates_and_deletes_are_capped_at_the_burst() {
    // (rule, nodes needing pods, pods to delete, expectations)
    let cases = [
        ("nothing to do still sets expectations 0/0", 0, 0, (0, 0)),
        ("under the burst", 5, 3, (5, 3)),
        ("exactly the burst", 250, 250, (250, 250)),
        (
            "TestSimpleDaemonSetLaunchesPods over the burst: 250 per sync",
            300,
            1000,
            (250, 250),
        ),
    ];
    for (rule, creates, deletes, expectations) in cases {
        let plan = SyncNodesPlan::new(names("node", creates), names("pod", deletes));
        assert_eq!(plan.expectations(), expectations, "{rule}");
        assert_eq!(
            plan.create_on_nodes,
            names("node", creates.min(BURST_REPLICAS)),
            "{rule}"
        );
        assert_eq!(
            plan.delete_pods,
            names("pod", deletes.min(BURST_REPLICAS)),
            "{rule}"
        );
    }
}

#[test]
fn batches_are_upstreams_slow_start_for_every_create_count() {
    for count in 0..=BURST_REPLICAS {
        let plan = SyncNodesPlan::new(names("node", count), Vec::new());
        assert_eq!(
            plan.create_batches(),
            upstream_batches(count),
            "{count} creates"
        );
    }
    let plan = SyncNodesPlan::new(names("node", 10), Vec::new());
    assert_eq!(plan.create_batches(), vec![0..1, 1..3, 3..7, 7..10]);
}

#[test]
fn a_failed_batch_skips_the_creates_after_it() {
    let plan = SyncNodesPlan::new(names("node", 10), Vec::new());
    let batches = plan.create_batches();
    // (failing batch, creates never attempted: LowerExpectations(skipped, 0))
    let cases = [(0, 9), (1, 7), (2, 3), (3, 0)];
    for (failing, skipped) in cases {
        assert_eq!(
            plan.creates_skipped_after(&batches[failing]),
            skipped,
            "batch {failing}"
        );
    }
}
