//! Pod-failure backoff (upstream `backoff_utils.go`, with the per-index parts of
//! `indexed_job_utils.go` and `manageJob`): how long to wait before creating pods again after
//! failures.
//!
//! Recreating failed pods at once would turn a crash into a hot loop, so the controller keeps,
//! per Job, the number of failures since the last success and when the last one happened
//! ([`BackoffRecord`]), and waits `10 s × 2^(n−1)` (at most 10 min) after it. With
//! `backoffLimitPerIndex` each index backs off on its own: the last failed pod of an index keeps
//! its finalizer until a replacement exists ([`pods_with_delayed_deletion_per_index`]), and its
//! failure-count annotations give both the delay and the replacement's annotations. Every
//! time is read from the pods ([`finished_time`]) and the clock is the explicit `now`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use controller_toolkit::ranking::stable_sort_by_less;
use informer::{CachedContainerStatus, CachedPod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::failure_policy::match_pod_failure_policy;
use super::indexes::{
    OrderedIntervals, index_absolute_failure_count, index_failure_count,
    index_ignored_failure_count, indexes_of, valid_completion_index, valid_pods_with_filter,
};
use super::pods::{
    POD_READY, container_statuses, creation_time, init_container_statuses, is_pod_failed,
    is_zero_time, len_i32, sidecar_names,
};
use super::spec::{
    CONDITION_FALSE, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, JobView,
};
use super::types::UidSet;

/// The first pod-failure backoff (`DefaultJobPodFailureBackOff`).
pub const DEFAULT_JOB_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest pod-failure backoff (`MaxJobPodFailureBackOff`).
pub const MAX_JOB_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10 * 60);

/// The failures of a Job since its last success (upstream `backoffRecord`, without the key the
/// store files it under).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// `failuresAfterLastSuccess`.
    pub failures_after_last_success: i32,
    /// `lastFailureTime`: when the latest of those failures happened.
    pub last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// `newBackoffRecord`: this (stored) record updated with the pods that finished since the
    /// last sync. No new pod: unchanged. Only failures: they are added and the latest one's
    /// finish time is the last failure. Any success: the count restarts from the failures that
    /// finished strictly after the latest success.
    pub fn next(&self, new_succeeded: &[&CachedPod], new_failed: &[&CachedPod]) -> Self {
        let new_succeeded = sorted_by_finished_time(new_succeeded);
        let new_failed = sorted_by_finished_time(new_failed);
        let Some(last_success) = new_succeeded.last() else {
            let Some(last_failure) = new_failed.last() else {
                return *self;
            };
            return Self {
                failures_after_last_success: self
                    .failures_after_last_success
                    .wrapping_add(len_i32(new_failed.len())),
                last_failure_time: Some(*last_failure),
            };
        };
        let mut record = Self::default();
        for failed_at in new_failed.iter().rev() {
            if *failed_at <= *last_success {
                break;
            }
            record.last_failure_time.get_or_insert(*failed_at);
            record.failures_after_last_success = record.failures_after_last_success.wrapping_add(1);
        }
        record
    }

    /// `getRemainingTime`: how long to wait at `now` before creating pods again.
    pub fn remaining_time(&self, now: Timestamp, default: Duration, max: Duration) -> Duration {
        remaining_time_for_failures_count(
            now,
            default,
            max,
            self.failures_after_last_success,
            self.last_failure_time,
        )
    }
}

/// The finish times of `pods`, in increasing order (`sortByFinishedTime`).
fn sorted_by_finished_time(pods: &[&CachedPod]) -> Vec<Timestamp> {
    let mut times: Vec<Timestamp> = pods.iter().map(|p| finished_time(p)).collect();
    stable_sort_by_less(&mut times, |a, b| a < b);
    times
}

/// The backoff records of all Jobs, keyed by Job key (`ns/name`) (upstream `backoffStore`).
/// A record is stored only after the status write that counted its pods succeeded.
#[derive(Debug, Clone, Default)]
pub struct BackoffStore {
    records: HashMap<String, BackoffRecord>,
}

impl BackoffStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stored record of `key`, if any.
    pub fn get(&self, key: &str) -> Option<&BackoffRecord> {
        self.records.get(key)
    }

    /// `newBackoffRecord`: the stored record of `key` (or an empty one) updated with the newly
    /// finished pods; the store is not changed.
    pub fn new_backoff_record(
        &self,
        key: &str,
        new_succeeded: &[&CachedPod],
        new_failed: &[&CachedPod],
    ) -> BackoffRecord {
        self.get(key)
            .copied()
            .unwrap_or_default()
            .next(new_succeeded, new_failed)
    }

    /// `updateBackoffRecord`: stores `record` for `key`.
    pub fn update_backoff_record(&mut self, key: &str, record: BackoffRecord) {
        self.records.insert(key.to_owned(), record);
    }

    /// `removeBackoffRecord`: forgets `key` (Job deleted or finished).
    pub fn remove_backoff_record(&mut self, key: &str) {
        self.records.remove(key);
    }

    /// How many Jobs have a record.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no Job has a record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// `getFinishedTime`: when the pod finished, from the first source that has it:
/// 1. the latest `finishedAt` of its containers, if every app container status (and every
///    restartable init container's, a sidecar finishing after the app containers) is
///    terminated with a time;
/// 2. the `lastTransitionTime` of a `Ready=False` condition (the kubelet sets it on the way to
///    a terminal phase);
/// 3. `deletionTimestamp − deletionGracePeriodSeconds` (pods deleted by the pod GC);
/// 4. the creation time (Go's zero time when unset).
pub fn finished_time(pod: &CachedPod) -> Timestamp {
    if let Some(time) = finish_time_from_containers(pod) {
        return time;
    }
    if let Some(time) = finish_time_from_ready_false(pod) {
        return time;
    }
    if let Some(time) = finish_time_from_deletion(pod) {
        return time;
    }
    creation_time(pod)
}

/// `getFinishTimeFromContainers` (v1.31+, with sidecars): the latest `finishedAt` over the app
/// containers and then the restartable init containers; `None` as soon as one of them is not
/// terminated or has no time, and when there is no status at all.
fn finish_time_from_containers(pod: &CachedPod) -> Option<Timestamp> {
    let finish = latest_finish_time(None, container_statuses(pod).iter());
    let sidecars = sidecar_names(pod);
    latest_finish_time(
        finish,
        init_container_statuses(pod)
            .iter()
            .filter(|status| sidecars.contains(status.name.as_str())),
    )
}

/// `latestFinishTimeFromContainers`.
fn latest_finish_time<'p>(
    previous: Option<Timestamp>,
    statuses: impl Iterator<Item = &'p CachedContainerStatus>,
) -> Option<Timestamp> {
    let mut finish = previous;
    for status in statuses {
        let finished_at = status
            .terminated
            .as_ref()
            .and_then(|t| t.finished_at.as_ref())
            .map(|t| t.0)
            .filter(|t| !is_zero_time(*t))?;
        if finish.is_none_or(|f| f < finished_at) {
            finish = Some(finished_at);
        }
    }
    finish
}

/// `getFinishTimeFromPodReadyFalseCondition`: the first `Ready` condition, if `False` with a
/// time. A cached pod that has not finished keeps no `True` kubelet condition: its ready slot
/// says whether the first `Ready` condition is `True`; if not, that one is the first kept.
fn finish_time_from_ready_false(pod: &CachedPod) -> Option<Timestamp> {
    let status = pod.status.as_ref()?;
    if status.ready()?.is_true {
        return None;
    }
    let condition = status.conditions.iter().find(|c| &*c.type_ == POD_READY)?;
    if &*condition.status != CONDITION_FALSE {
        return None;
    }
    condition
        .last_transition_time
        .as_ref()
        .map(|t| t.0)
        .filter(|t| !is_zero_time(*t))
}

/// `getFinishTimeFromDeletionTimestamp`: the deletion time minus the grace period.
fn finish_time_from_deletion(pod: &CachedPod) -> Option<Timestamp> {
    let deleted = pod.metadata.deletion_timestamp.as_ref()?.0;
    let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    Some(
        deleted
            .saturating_sub(SignedDuration::from_secs(grace))
            .unwrap_or(deleted),
    )
}

/// `getRemainingTimeForFailuresCount`: with `failures` failures, the last at `last_failure`,
/// the backoff is `default × 2^(failures−1)` (the doubling stops at `max`) and what remains of
/// it at `now` is returned (zero once it passed). No failure: zero. A last failure in the
/// future (a clock gone back) leaves more than the backoff, as upstream's subtraction does; a
/// negative count (a wrapped annotation) waits `default`; a count without a time waits nothing.
pub fn remaining_time_for_failures_count(
    now: Timestamp,
    default: Duration,
    max: Duration,
    failures: i32,
    last_failure: Option<Timestamp>,
) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let Some(last_failure) = last_failure else {
        return Duration::ZERO;
    };
    let mut backoff = default;
    for _ in 1..failures {
        if backoff.is_zero() {
            // Doubling zero stays zero: stop early (upstream would loop on to `failures`).
            break;
        }
        backoff = backoff.saturating_mul(2);
        if backoff >= max {
            backoff = max;
            break;
        }
    }
    let backoff = SignedDuration::try_from(backoff).unwrap_or(SignedDuration::MAX);
    let elapsed = now.duration_since(last_failure);
    if backoff < elapsed {
        return Duration::ZERO;
    }
    Duration::try_from(backoff.saturating_sub(elapsed)).unwrap_or(Duration::MAX)
}

/// `getRemainingTimePerIndex`: the backoff of an index whose last failed pod is
/// `last_failed_pod`: its absolute failure count (counted + ignored) plus one failures, the
/// last at its finish time. No failed pod: zero.
pub fn remaining_time_per_index(
    now: Timestamp,
    default: Duration,
    max: Duration,
    last_failed_pod: Option<&CachedPod>,
) -> Duration {
    let Some(pod) = last_failed_pod else {
        return Duration::ZERO;
    };
    let failures = index_absolute_failure_count(pod).wrapping_add(1);
    remaining_time_for_failures_count(now, default, max, failures, Some(finished_time(pod)))
}

/// `getNewIndexFailureCounts`: the `(failure-count, ignored-failure-count)` annotations of the
/// pod replacing `pod_being_replaced` in its index: the replaced pod's counts plus one, in the
/// ignored count if its failure matched an `Ignore` rule, else in the failure count. A first
/// pod of an index gets `(0, 0)`. Sums wrap as Go's `int32` does.
pub fn new_index_failure_counts(
    job: &JobView<'_>,
    pod_being_replaced: Option<&CachedPod>,
) -> (i32, i32) {
    let Some(pod) = pod_being_replaced else {
        return (0, 0);
    };
    let (failures, ignored) = (index_failure_count(pod), index_ignored_failure_count(pod));
    let counts = job
        .pod_failure_policy()
        .is_none_or(|policy| match_pod_failure_policy(Some(policy), pod).count_failed);
    if counts {
        (failures.wrapping_add(1), ignored)
    } else {
        (failures, ignored.wrapping_add(1))
    }
}

/// `addIndexFailureCountAnnotation`: the annotations of a new pod of an index with
/// `backoffLimitPerIndex`: the failure count always (`"0"` for a first pod), the ignored
/// failure count only when positive.
pub fn index_failure_count_annotations(
    job: &JobView<'_>,
    pod_being_replaced: Option<&CachedPod>,
) -> Vec<(&'static str, String)> {
    let (failures, ignored) = new_index_failure_counts(job, pod_being_replaced);
    let mut annotations = vec![(JOB_INDEX_FAILURE_COUNT_ANNOTATION, failures.to_string())];
    if ignored > 0 {
        annotations.push((
            JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
            ignored.to_string(),
        ));
    }
    annotations
}

/// What [`pods_with_delayed_deletion_per_index`] reads of the sync.
#[derive(Debug, Clone, Copy)]
pub struct DelayedDeletionInput<'a, 'p> {
    /// The Job.
    pub job: JobView<'a>,
    /// All its pods.
    pub pods: &'a [&'p CachedPod],
    /// Its active pods.
    pub active_pods: &'a [&'p CachedPod],
    /// The pods whose finalizer removal is already expected.
    pub expected_rm_finalizers: &'a UidSet,
    /// The succeeded indexes.
    pub succeeded_indexes: &'a OrderedIntervals,
    /// The failed indexes.
    pub failed_indexes: &'a OrderedIntervals,
}

/// `getPodsWithDelayedDeletionPerIndex`: for each valid index that is neither succeeded, nor
/// failed, nor held by an active pod, the failed pod whose finalizer removal (and so deletion)
/// waits until a replacement is created, so the replacement can inherit its failure counts.
/// Only pods still carrying the finalizer and not expected to lose it are candidates; scanning
/// them in order, a candidate replaces the current choice when its absolute failure count is at
/// least the current one's and it did not finish earlier.
pub fn pods_with_delayed_deletion_per_index<'p>(
    input: &DelayedDeletionInput<'_, 'p>,
) -> BTreeMap<i64, &'p CachedPod> {
    let job = &input.job;
    let completions = job.indexed_completions();
    let active = indexes_of(input.active_pods);
    let candidates =
        valid_pods_with_filter(job, input.pods, None, input.expected_rm_finalizers, |p| {
            is_pod_failed(p, job)
        });
    let mut delayed: BTreeMap<i64, &'p CachedPod> = BTreeMap::new();
    for pod in candidates {
        let Some(ix) = valid_completion_index(pod, completions) else {
            continue;
        };
        if input.succeeded_indexes.has(ix) || input.failed_indexes.has(ix) || active.contains(&ix) {
            continue;
        }
        match delayed.get(&ix) {
            Some(current)
                if !(index_absolute_failure_count(current)
                    <= index_absolute_failure_count(pod)
                    && finished_time(pod) >= finished_time(current)) => {}
            _ => {
                delayed.insert(ix, pod);
            }
        }
    }
    delayed
}

/// `getPodCreationInfoForIndependentIndexes`: of the indexes to create, those whose per-index
/// backoff is over at `now`, with a zero delay; when none is, no index and the shortest
/// remaining backoff (to requeue after).
pub fn pod_creation_info_for_independent_indexes(
    indexes_to_add: &[i64],
    pods_with_delayed_deletion_per_index: &BTreeMap<i64, &CachedPod>,
    now: Timestamp,
) -> (Vec<i64>, Duration) {
    let mut ready = Vec::new();
    let mut min_remaining: Option<Duration> = None;
    for &ix in indexes_to_add {
        let remaining = remaining_time_per_index(
            now,
            DEFAULT_JOB_POD_FAILURE_BACKOFF,
            MAX_JOB_POD_FAILURE_BACKOFF,
            pods_with_delayed_deletion_per_index.get(&ix).copied(),
        );
        if remaining.is_zero() {
            ready.push(ix);
        } else if min_remaining.is_none_or(|m| remaining < m) {
            min_remaining = Some(remaining);
        }
    }
    if !ready.is_empty() {
        return (ready, Duration::ZERO);
    }
    (ready, min_remaining.unwrap_or_default())
}
