//! Indexed Jobs (upstream `indexed_job_utils.go`): completion indexes, the compressed interval
//! strings of `status.completedIndexes` and `status.failedIndexes`, and the index rules of pod
//! creation and deletion.
//!
//! An Indexed Job runs one pod per index `0..completions`, each pod carrying its index in the
//! `batch.kubernetes.io/job-completion-index` annotation. The status records which indexes
//! succeeded (and, with `backoffLimitPerIndex`, which failed) as sorted intervals written
//! `"1,3-5,7"`; those strings are the only memory of indexes whose pods are gone, so their
//! parsing (lenient, clipped to `completions` so an elastic Job can shrink) and formatting must
//! match upstream's byte for byte. Numbers are `i64` (Go's `int`), so no annotation or status
//! value, however large, overflows.

use std::collections::BTreeSet;
use std::fmt;

use controller_toolkit::ranking::{sort_active_pods, stable_sort_by_less};
use informer::CachedPod;
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, ObjectFieldSelector, PodTemplateSpec,
};

use super::failure_policy::match_pod_failure_policy;
use super::pods::{
    POD_SUCCEEDED, annotation, has_tracking_finalizer, is_pod_failed, is_pod_terminating, phase,
    uid,
};
use super::spec::{
    COMPLETION_INDEX_ENV_NAME, JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, JobView,
};
use super::types::{PolicyAction, UidSet};

/// The longest `generateName` prefix the API server keeps whole
/// (`names.MaxGeneratedNameLength`: 63 minus the 5 random characters).
pub const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// Upstream's `unknownCompletionIndex`, used inside this module where upstream compares it.
const UNKNOWN: i64 = -1;

/// A closed interval of indexes, `first..=last` (upstream `interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// The first index.
    pub first: i64,
    /// The last index (inclusive).
    pub last: i64,
}

impl Interval {
    /// `first..=last`.
    pub fn new(first: i64, last: i64) -> Self {
        Self { first, last }
    }
}

/// A list of intervals in increasing order (upstream `orderedIntervals`). Lists built by this
/// module are sorted and non-adjacent; [`OrderedIntervals::new`] takes any list as given, as
/// upstream's plain slice does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OrderedIntervals(Vec<Interval>);

impl OrderedIntervals {
    /// The intervals as given.
    pub fn new(intervals: Vec<Interval>) -> Self {
        Self(intervals)
    }

    /// The intervals.
    pub fn intervals(&self) -> &[Interval] {
        &self.0
    }

    /// Whether there is no interval (`len(oi) == 0`).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of intervals.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `parseIndexesFromString`: parses `"1,3-5,7"`. Each comma-separated part is `a` or
    /// `a-b` (Go's `strconv.Atoi` on each side; a third `-` part is ignored); an unparsable
    /// part is skipped (upstream logs `Corrupted indexes interval, ignoring`). Parsing stops at
    /// the first part starting at or after `completions`, an end at or after `completions` is
    /// clipped to `completions - 1`, and a part starting right after the previous one's end is
    /// merged into it.
    pub fn parse(indexes: &str, completions: i32) -> Self {
        let completions = i64::from(completions);
        let mut result: Vec<Interval> = Vec::new();
        if indexes.is_empty() {
            return Self(result);
        }
        for part in indexes.split(',') {
            let mut limits = part.split('-');
            let Some(first) = limits.next().and_then(atoi) else {
                continue;
            };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                Some(last) => match atoi(last) {
                    Some(last) if last >= completions => completions - 1,
                    Some(last) => last,
                    None => continue,
                },
                None => first,
            };
            match result.last_mut() {
                Some(previous) if previous.last.checked_add(1) == Some(first) => {
                    previous.last = last;
                }
                _ => result.push(Interval::new(first, last)),
            }
        }
        Self(result)
    }

    /// `withOrderedIndexes`: these intervals with `new_indexes` (in increasing order) added.
    pub fn with_ordered_indexes(&self, new_indexes: &[i64]) -> Self {
        let new = new_indexes
            .iter()
            .map(|&ix| Interval::new(ix, ix))
            .collect();
        self.merge(&Self(new))
    }

    /// `merge`: the union of two ordered lists, adjacent and overlapping intervals joined.
    pub fn merge(&self, other: &Self) -> Self {
        let mut result: Vec<Interval> = Vec::with_capacity(self.0.len() + other.0.len());
        let mut append_or_merge = |this: Interval| match result.last_mut() {
            Some(last) if this.first <= last.last.saturating_add(1) => {
                if last.last < this.last {
                    last.last = this.last;
                }
            }
            _ => result.push(this),
        };
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            if self.0[i].first < other.0[j].first {
                append_or_merge(self.0[i]);
                i += 1;
            } else {
                append_or_merge(other.0[j]);
                j += 1;
            }
        }
        for &interval in &self.0[i..] {
            append_or_merge(interval);
        }
        for &interval in &other.0[j..] {
            append_or_merge(interval);
        }
        Self(result)
    }

    /// `total`: how many indexes the intervals hold (`last - first + 1` summed; an interval
    /// written backwards, `"5-3"`, counts negatively as upstream's does).
    pub fn total(&self) -> i64 {
        self.0
            .iter()
            .map(|iv| iv.last.saturating_sub(iv.first).saturating_add(1))
            .fold(0, i64::saturating_add)
    }

    /// `has`: whether `index` is in one of the intervals (a binary search, so it assumes the
    /// list is ordered, as upstream's does).
    pub fn has(&self, index: i64) -> bool {
        let (mut lo, mut hi) = (0, self.0.len());
        while hi > lo {
            let mid = lo + (hi - lo) / 2;
            if self.0[mid].last >= index {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.0.get(hi).is_some_and(|iv| iv.first <= index)
    }
}

impl fmt::Display for OrderedIntervals {
    /// `orderedIntervals.String`: `a` for one index, `a,b` for two, `a-b` for more.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, iv) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}", iv.first)?;
            if iv.last > iv.first {
                let separator = if iv.last == iv.first + 1 { "," } else { "-" };
                write!(f, "{separator}{}", iv.last)?;
            }
        }
        Ok(())
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform: an optional sign and decimal digits fitting in
/// an `int64`.
fn atoi(value: &str) -> Option<i64> {
    value.parse().ok()
}

/// `indexesCount`: the number of indexes in an optional interval string.
pub fn indexes_count(indexes: Option<&str>, completions: i32) -> i64 {
    indexes.map_or(0, |s| OrderedIntervals::parse(s, completions).total())
}

/// `getCompletionIndex`: the pod's completion index annotation as a decimal integer; `None`
/// when missing, unparsable or negative (upstream's `unknownCompletionIndex`).
pub fn completion_index(pod: &CachedPod) -> Option<i64> {
    annotation(pod, JOB_COMPLETION_INDEX_ANNOTATION)
        .and_then(atoi)
        .filter(|ix| *ix >= 0)
}

/// The pod's completion index if it is valid for `completions` (known and below it).
pub fn valid_completion_index(pod: &CachedPod, completions: i32) -> Option<i64> {
    completion_index(pod).filter(|ix| *ix < i64::from(completions))
}

fn index_or_unknown(pod: &CachedPod) -> i64 {
    completion_index(pod).unwrap_or(UNKNOWN)
}

/// Sorts pods by completion index, unknown first (`sort.Sort(byCompletionIndex(pods))`),
/// stably (upstream's sort is not stable; pods with equal indexes may come out in another
/// order there).
pub fn sort_by_completion_index(pods: &mut [&CachedPod]) {
    stable_sort_by_less(pods, |a, b| index_or_unknown(a) < index_or_unknown(b));
}

/// `calculateSucceededIndexes`: the succeeded indexes recorded in `status.completedIndexes`
/// (parsed against `completions`), and those plus the indexes of `Succeeded` pods that still
/// carry the tracking finalizer (not counted yet) with a valid index.
pub fn calculate_succeeded_indexes(
    job: &JobView<'_>,
    pods: &[&CachedPod],
) -> (OrderedIntervals, OrderedIntervals) {
    let completions = job.indexed_completions();
    let previous = OrderedIntervals::parse(job.completed_indexes(), completions);
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| phase(p) == POD_SUCCEEDED && has_tracking_finalizer(p))
        .filter_map(|p| valid_completion_index(p, completions))
        .collect();
    let result = previous.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>());
    (previous, result)
}

/// `calculateFailedIndexes` (with `backoffLimitPerIndex`): the indexes recorded in
/// `status.failedIndexes` plus those of pods with the tracking finalizer and a valid index
/// that [`is_index_failed`].
pub fn calculate_failed_indexes(job: &JobView<'_>, pods: &[&CachedPod]) -> OrderedIntervals {
    let completions = job.indexed_completions();
    let previous = job
        .failed_indexes()
        .map(|s| OrderedIntervals::parse(s, completions))
        .unwrap_or_default();
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| has_tracking_finalizer(p))
        .filter_map(|p| valid_completion_index(p, completions).filter(|_| is_index_failed(job, p)))
        .collect();
    previous.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>())
}

/// `isIndexFailed`: the pod is failed and either matched a `FailIndex` rule, or its failure
/// counts (no policy, or the policy says so) and its index had already failed
/// `backoffLimitPerIndex` times before it (its failure-count annotation). So an index gets
/// `backoffLimitPerIndex + 1` counted attempts. `false` without `backoffLimitPerIndex`.
pub fn is_index_failed(job: &JobView<'_>, pod: &CachedPod) -> bool {
    let Some(limit) = job.backoff_limit_per_index() else {
        return false;
    };
    if !is_pod_failed(pod, job) {
        return false;
    }
    let counted = match job.pod_failure_policy() {
        Some(policy) => {
            let matched = match_pod_failure_policy(Some(policy), pod);
            if matched.action == Some(PolicyAction::FailIndex) {
                return true;
            }
            matched.count_failed
        }
        None => true,
    };
    counted && index_failure_count(pod) >= limit
}

/// `getIndexes`: the known completion indexes of `pods`.
pub fn indexes_of(pods: &[&CachedPod]) -> BTreeSet<i64> {
    pods.iter().filter_map(|p| completion_index(p)).collect()
}

/// What [`first_pending_indexes`] reads of the sync.
#[derive(Debug, Clone, Copy)]
pub struct PendingIndexesInput<'a, 'p> {
    /// The Job.
    pub job: JobView<'a>,
    /// Its active pods (their indexes are taken).
    pub active_pods: &'a [&'p CachedPod],
    /// All its pods (with `onlyReplaceFailedPods`, the indexes of terminating ones are taken).
    pub pods: &'a [&'p CachedPod],
    /// The succeeded indexes.
    pub succeeded_indexes: &'a OrderedIntervals,
    /// The failed indexes, with `backoffLimitPerIndex`.
    pub failed_indexes: Option<&'a OrderedIntervals>,
}

/// `firstPendingIndexes`: the lowest `count` indexes below `completions` that are neither
/// succeeded, nor held by an active pod, nor (when the Job only replaces failed pods) held by
/// a terminating pod, nor failed.
pub fn first_pending_indexes(
    input: &PendingIndexesInput<'_, '_>,
    count: usize,
    completions: i32,
) -> Vec<i64> {
    if count == 0 {
        return Vec::new();
    }
    let completions = i64::from(completions);
    let active: Vec<i64> = indexes_of(input.active_pods).into_iter().collect();
    let mut non_pending = input.succeeded_indexes.with_ordered_indexes(&active);
    if input.job.only_replace_failed_pods() {
        let terminating: Vec<&CachedPod> = input
            .pods
            .iter()
            .copied()
            .filter(|p| is_pod_terminating(p))
            .collect();
        let terminating: Vec<i64> = indexes_of(&terminating).into_iter().collect();
        non_pending = non_pending.with_ordered_indexes(&terminating);
    }
    if let Some(failed) = input.failed_indexes {
        non_pending = non_pending.merge(failed);
    }
    let mut result = Vec::with_capacity(count.min(completions.max(0) as usize));
    let mut candidate: i64 = 0;
    for interval in non_pending.intervals() {
        while candidate < completions && result.len() < count && candidate < interval.first {
            result.push(candidate);
            candidate += 1;
        }
        if candidate < interval.last.saturating_add(1) {
            candidate = interval.last.saturating_add(1);
        }
    }
    while candidate < completions && result.len() < count {
        result.push(candidate);
        candidate += 1;
    }
    result
}

/// `appendDuplicatedIndexPodsForRemoval`: splits active pods into those to remove and those
/// to keep. Pods without a valid index and pods whose index is at or above `completions` are
/// removed; of several pods with the same index, the one sorting last in upstream's
/// `ActivePods` order (the most valuable) is kept and the others removed. Returns
/// `(remove, keep)`, both in completion-index order.
pub fn duplicated_index_pods_for_removal<'a>(
    pods: &[&'a CachedPod],
    completions: i32,
) -> (Vec<&'a CachedPod>, Vec<&'a CachedPod>) {
    let completions = i64::from(completions);
    let mut pods = pods.to_vec();
    sort_by_completion_index(&mut pods);
    let (mut rm, mut left) = (Vec::new(), Vec::new());
    let mut last_index = UNKNOWN;
    let mut first_repeat = 0;
    let mut looped = 0;
    for (i, pod) in pods.iter().enumerate() {
        let ix = index_or_unknown(pod);
        if ix >= completions {
            rm.extend_from_slice(&pods[i..]);
            break;
        }
        if ix != last_index {
            split_same_index(&mut rm, &mut left, &pods[first_repeat..i], last_index);
            first_repeat = i;
            last_index = ix;
        }
        looped += 1;
    }
    split_same_index(&mut rm, &mut left, &pods[first_repeat..looped], last_index);
    (rm, left)
}

/// `appendPodsWithSameIndexForRemovalAndRemaining`.
fn split_same_index<'a>(
    rm: &mut Vec<&'a CachedPod>,
    left: &mut Vec<&'a CachedPod>,
    pods: &[&'a CachedPod],
    ix: i64,
) {
    if ix == UNKNOWN {
        rm.extend_from_slice(pods);
        return;
    }
    let mut pods = pods.to_vec();
    sort_active_pods(&mut pods);
    if let Some((keep, remove)) = pods.split_last() {
        rm.extend_from_slice(remove);
        left.push(keep);
    }
}

/// `getValidPodsWithFilter`: the pods that still carry the tracking finalizer, are neither in
/// `uncounted` nor expected to lose their finalizer, have (for an Indexed Job) a valid index,
/// and pass `filter`. These are the finished pods not accounted for yet.
pub fn valid_pods_with_filter<'a>(
    job: &JobView<'_>,
    pods: &[&'a CachedPod],
    uncounted: Option<&UidSet>,
    expected_rm_finalizers: &UidSet,
    filter: impl Fn(&CachedPod) -> bool,
) -> Vec<&'a CachedPod> {
    let completions = job.indexed_completions();
    pods.iter()
        .copied()
        .filter(|p| {
            has_tracking_finalizer(p)
                && !uncounted.is_some_and(|u| u.contains(uid(p)))
                && !expected_rm_finalizers.contains(uid(p))
        })
        .filter(|p| !job.is_indexed() || valid_completion_index(p, completions).is_some())
        .filter(|p| filter(p))
        .collect()
}

/// `parseInt32`: a non-negative decimal `int32`; anything else (unparsable, negative, above
/// `i32::MAX`, e.g. set by a malicious user) reads as 0.
pub fn parse_int32(value: &str) -> i32 {
    atoi(value)
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

/// `getIndexFailureCount`: the pod's `job-index-failure-count` annotation, 0 when missing or
/// invalid.
pub fn index_failure_count(pod: &CachedPod) -> i32 {
    annotation(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION).map_or(0, parse_int32)
}

/// The pod's `job-index-ignored-failure-count` annotation, 0 when missing or invalid
/// (`parseIndexFailureIgnoreCountAnnotation`).
pub fn index_ignored_failure_count(pod: &CachedPod) -> i32 {
    annotation(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION).map_or(0, parse_int32)
}

/// `getIndexAbsoluteFailureCount`: counted plus ignored failures of the index before this pod
/// (an `int32` sum, wrapping as Go's does).
pub fn index_absolute_failure_count(pod: &CachedPod) -> i32 {
    index_failure_count(pod).wrapping_add(index_ignored_failure_count(pod))
}

/// `podGenerateNameWithIndex`: `<job>-<index>-`; when longer than
/// [`MAX_GENERATED_NAME_LENGTH`], the Job name is cut so that `-<index>-` stays whole.
pub fn pod_generate_name_with_index(job_name: &str, index: i64) -> String {
    let suffix = format!("-{index}-");
    if job_name.len() + suffix.len() <= MAX_GENERATED_NAME_LENGTH {
        return format!("{job_name}{suffix}");
    }
    let mut keep = MAX_GENERATED_NAME_LENGTH.saturating_sub(suffix.len());
    // Upstream cuts bytes; a Job name is ASCII, but a cut never splits a character here.
    while !job_name.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{suffix}", &job_name[..keep])
}

/// The hostname of an Indexed Job pod: `<job>-<index>` (it overrides the template's; the
/// template's `subdomain` is left as the user set it).
pub fn pod_hostname(job_name: &str, index: i64) -> String {
    format!("{job_name}-{index}")
}

/// The `JOB_COMPLETION_INDEX` environment variable, read from the pod's completion index label
/// (`PodIndexLabel` is on in v1.36).
pub fn completion_index_env_var() -> EnvVar {
    EnvVar {
        name: COMPLETION_INDEX_ENV_NAME.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.labels['{JOB_COMPLETION_INDEX_ANNOTATION}']"),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// `addCompletionIndexEnvVariables`: adds [`completion_index_env_var`] to every init and app
/// container of the template that has no variable of that name.
pub fn add_completion_index_env_variables(template: &mut PodTemplateSpec) {
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    for container in spec.init_containers.iter_mut().flatten() {
        add_completion_index_env_variable(container);
    }
    for container in &mut spec.containers {
        add_completion_index_env_variable(container);
    }
}

fn add_completion_index_env_variable(container: &mut Container) {
    let env = container.env.get_or_insert_with(Vec::new);
    if env.iter().any(|v| v.name == COMPLETION_INDEX_ENV_NAME) {
        return;
    }
    env.push(completion_index_env_var());
}

/// `addCompletionIndexAnnotation` and `addCompletionIndexLabel`: the pod's completion index
/// as annotation and label.
pub fn add_completion_index(template: &mut PodTemplateSpec, index: i64) {
    let metadata = template.metadata.get_or_insert_with(Default::default);
    metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(
            JOB_COMPLETION_INDEX_ANNOTATION.to_owned(),
            index.to_string(),
        );
    metadata.labels.get_or_insert_with(Default::default).insert(
        JOB_COMPLETION_INDEX_ANNOTATION.to_owned(),
        index.to_string(),
    );
}
