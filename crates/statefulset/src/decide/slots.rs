//! Step 3 of the plan: the wanted slots of a set and the pods that fill them, held sparsely
//! so that a hostile `spec.replicas` (up to `i32::MAX`) costs what a small one does, and the
//! cap on creations per sync; every later phase walks these slots.

use std::{collections::BTreeMap, ops::Range, sync::Arc};

use informer::CachedPod;
use k8s_openapi::jiff::Timestamp;

use super::pod_state::is_unavailable;

use crate::identity::{OrdinalRange, pod_ordinal};

/// kcm-rs only: the most pods one sync creates. A `Parallel` set's empty slots past it are
/// filled by the next syncs, which the new pods' events trigger. Upstream has no cap and first
/// builds an in-memory pod for every empty slot, so a set with `replicas: 2147483647` (which
/// the API server accepts) would exhaust the manager's memory and take every controller down
/// with it. Creations go through the client's rate limit (`--kube-api-qps`) anyway, so a set
/// this large gains nothing from one sync making them all; a set with no more empty slots than
/// this plans as upstream's does.
pub const MAX_CREATES_PER_SYNC: usize = 10_000;

/// The wanted slots `[start, start + replicas)` of a set and the pods that fill them
/// (upstream's `replicas` slice), held sparsely: only filled slots take memory and an empty
/// slot's pod is built only when it is created, so a hostile `spec.replicas` (up to
/// `i32::MAX`) costs what a small one does.
#[derive(Debug, Clone)]
pub struct ReplicaSlots<'a> {
    /// The number of slots (`spec.replicas`).
    len: usize,
    /// The ordinal of slot 0 (`spec.ordinals.start`).
    start: i32,
    /// The pods of the filled slots, by index (ordinal - start).
    filled: BTreeMap<usize, &'a Arc<CachedPod>>,
}

/// A stretch of [`ReplicaSlots`] in index order.
#[derive(Debug, Clone)]
pub(super) enum Run<'a> {
    /// Consecutive empty slots (upstream fills each with an in-memory pod, never created yet).
    Empty(Range<usize>),
    /// The slot of this index and its pod.
    Filled(usize, &'a Arc<CachedPod>),
}

impl<'a> ReplicaSlots<'a> {
    /// Step 3: the slots of `range` filled with the pods whose ordinal is in it (a later pod of
    /// an ordinal replaces an earlier one, as upstream's slice assignment does), and the
    /// condemned pods, whose ordinal is valid but out of range. Pods without an ordinal are
    /// ignored, even when a negative `spec.ordinals.start` puts -1 in range.
    pub(super) fn partition(
        range: OrdinalRange,
        pods: &'a [Arc<CachedPod>],
    ) -> (Self, Vec<Arc<CachedPod>>) {
        let mut slots = Self {
            len: usize::try_from(range.replicas).unwrap_or(0),
            start: range.start,
            filled: BTreeMap::new(),
        };
        let mut condemned = Vec::new();
        for pod in pods {
            let ordinal = pod_ordinal(pod);
            if ordinal < 0 {
                continue;
            }
            if !range.contains(ordinal) {
                condemned.push(pod.clone());
            } else if let Ok(index) = usize::try_from(i64::from(ordinal) - i64::from(range.start)) {
                slots.filled.insert(index, pod);
            }
        }
        (slots, condemned)
    }

    /// The ordinal of slot `index` when a pod can carry it: `None` past `i32::MAX` (`start +
    /// replicas` may pass it) or below 0 (a negative `start`), where upstream's Go int
    /// arithmetic names a pod (`web-2147483648`, `web--1`) that no sync parses back to its slot,
    /// so it would be created again every sync.
    pub(super) fn ordinal(&self, index: usize) -> Option<i32> {
        let ordinal = i64::from(self.start).checked_add(i64::try_from(index).ok()?)?;
        i32::try_from(ordinal).ok().filter(|ordinal| *ordinal >= 0)
    }

    /// The indices whose ordinal a pod can carry ([`OrdinalRange::nameable`]).
    pub(super) fn creatable(&self) -> Range<usize> {
        OrdinalRange {
            start: self.start,
            replicas: i32::try_from(self.len).unwrap_or(i32::MAX),
        }
        .nameable()
    }

    /// The number of empty slots.
    fn empty(&self) -> usize {
        self.len.saturating_sub(self.filled.len())
    }

    /// The number of empty slots among the first `count`.
    pub(super) fn empty_below(&self, count: usize) -> usize {
        let count = count.min(self.len);
        count.saturating_sub(self.filled.range(..count).count())
    }

    /// The pods of the filled slots, in index order.
    pub(super) fn pods(&self) -> impl Iterator<Item = &'a CachedPod> + '_ {
        self.filled.values().map(|pod| -> &'a CachedPod { pod })
    }

    /// The filled slots from index `from` up, in index order.
    pub(super) fn filled_from(
        &self,
        from: usize,
    ) -> impl DoubleEndedIterator<Item = &'a Arc<CachedPod>> + '_ {
        self.filled.range(from..).map(|(_, pod)| *pod)
    }

    /// Unavailable slots: the empty ones and those whose pod is unavailable.
    pub(super) fn unavailable(&self, min_ready: i32, now: Timestamp) -> usize {
        self.empty()
            + self
                .pods()
                .filter(|pod| is_unavailable(pod, min_ready, now))
                .count()
    }

    /// The slots in index order, consecutive empty ones as one run.
    pub(super) fn runs(&self) -> Vec<Run<'a>> {
        let mut runs = Vec::with_capacity(2 * self.filled.len() + 1);
        let mut next = 0;
        for (&index, &pod) in &self.filled {
            if next < index {
                runs.push(Run::Empty(next..index));
            }
            runs.push(Run::Filled(index, pod));
            next = index + 1;
        }
        if next < self.len {
            runs.push(Run::Empty(next..self.len));
        }
        runs
    }
}

impl<'a> From<&[Option<&'a Arc<CachedPod>>]> for ReplicaSlots<'a> {
    /// Slots from ordinal 0, one per entry, `None` for an empty one.
    fn from(slots: &[Option<&'a Arc<CachedPod>>]) -> Self {
        Self {
            len: slots.len(),
            start: 0,
            filled: slots
                .iter()
                .enumerate()
                .filter_map(|(index, slot)| slot.map(|pod| (index, pod)))
                .collect(),
        }
    }
}
