//! Upstream's orders of pods to delete first: the ReplicaSet's scale-down ranking
//! (`ActivePodsWithRanks`) and the plain `controller.ActivePods` order (the Job controller's).
//!
//! When a ReplicaSet has too many pods, the pods that sort first are deleted first. The order
//! prefers pods that cost least to lose: unscheduled, not running, not ready, cheap (by the
//! `controller.kubernetes.io/pod-deletion-cost` annotation), doubled up on a node, ready for the
//! shortest time, crash-looping, and youngest. `LogarithmicScaleDown` and `PodDeletionCost` are
//! on (their upstream defaults). The comparison is a pure function of the pods, their ranks and
//! `now`, so the scale-down choice is table-testable. [`active_pods_less`] is the older order
//! without cost, rank or age buckets; both read the node, phase, readiness, restart counts and
//! creation time alike (one helper each here).
//!
//! The comparisons are not strict total orders in corner cases (equal ready times fall through
//! to later rules while nearby times compare by UID; hostile timestamps), so the sorts are a
//! merge sort that never panics on such input, unlike `slice::sort_by`
//! ([`stable_sort_by_less`]).

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use informer::CachedPod;
use k8s_openapi::jiff::Timestamp;

use crate::pod_predicates::{is_pod_active, is_pod_ready, pod_ready_time};

/// Go's zero `time.Time` (0001-01-01T00:00:00Z): an unset `metav1.Time` reads as it, and
/// upstream's `IsZero` checks take a time set to it for an unset one.
const GO_ZERO_TIME: Timestamp = Timestamp::constant(-62_135_596_800, 0);

/// The annotation whose int32 value lowers (or raises) a pod's priority for deletion.
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// A deletion candidate with its rank: the number of related active pods on the same node.
/// A higher rank means the pod is more "doubled up" and is deleted earlier.
#[derive(Debug, Clone)]
pub struct RankedPod {
    /// The candidate.
    pub pod: Arc<CachedPod>,
    /// Related active pods on the candidate's node (including itself if it is related).
    pub rank: usize,
}

/// Ranks `pods_to_rank` by how many of `related_pods` are active on the same node, as the
/// ReplicaSet controller does before picking victims (`getPodsRankedByRelatedPodsOnSameNode`).
/// Unscheduled pods share the empty node name.
pub fn rank_by_related_pods_on_same_node(
    pods_to_rank: &[Arc<CachedPod>],
    related_pods: &[Arc<CachedPod>],
) -> Vec<RankedPod> {
    let mut pods_on_node: BTreeMap<&str, usize> = BTreeMap::new();
    for pod in related_pods.iter().filter(|p| is_pod_active(p)) {
        *pods_on_node.entry(node_name(pod)).or_default() += 1;
    }
    pods_to_rank
        .iter()
        .map(|pod| RankedPod {
            pod: Arc::clone(pod),
            rank: pods_on_node.get(node_name(pod)).copied().unwrap_or(0),
        })
        .collect()
}

/// Sorts candidates so that the pod to delete first comes first.
pub fn sort_for_deletion(pods: Vec<RankedPod>, now: Timestamp) -> Vec<RankedPod> {
    merge_sort(pods, &|a, b| deletes_before(a, b, now))
}

/// Whether `a` should be deleted before `b` (upstream `ActivePodsWithRanks.Less`): the first
/// rule that tells them apart decides.
pub fn deletes_before(a: &RankedPod, b: &RankedPod, now: Timestamp) -> bool {
    let (pa, pb) = (&*a.pod, &*b.pod);
    // 1-3. Unscheduled, then not running, then not ready first.
    if let Some(decision) = unscheduled_pending_unready_first(pa, pb) {
        return decision;
    }
    let (ready_a, ready_b) = (is_pod_ready(pa), is_pod_ready(pb));
    // 4. Lower deletion cost first.
    let (cost_a, cost_b) = (deletion_cost(pa), deletion_cost(pb));
    if cost_a != cost_b {
        return cost_a < cost_b;
    }
    // 5. More doubled up first.
    if a.rank != b.rank {
        return a.rank > b.rank;
    }
    // 6. Both ready: ready for less time first.
    if ready_a && ready_b {
        let (since_a, since_b) = (pod_ready_time(pa), pod_ready_time(pb));
        if since_a != since_b {
            return newer_first(since_a, since_b, pa, pb, now);
        }
    }
    // 7. Higher restart counts first.
    if let Some(decision) = restarts_first(pa, pb) {
        return decision;
    }
    // 8. Newer first.
    let (created_a, created_b) = (creation_time(pa), creation_time(pb));
    if created_a != created_b {
        return newer_first(created_a, created_b, pa, pb, now);
    }
    false
}

/// Upstream's `controller.ActivePods.Less`: whether `a` sorts before `b`, the pod sorting
/// first being the cheapest to lose (the Job controller deletes its active pods in this
/// order). The first rule that tells them apart decides:
/// 1. unscheduled before scheduled;
/// 2. `Pending` < `Unknown` < `Running`;
/// 3. not ready before ready;
/// 4. both ready: ready more recently first (no ready time first);
/// 5. more restarts first (regular containers, then sidecars: `compareMaxContainerRestarts`,
///    as in [`deletes_before`]);
/// 6. created more recently first (no creation time first).
///
/// A time set to Go's zero time counts as unset, as upstream's `IsZero` and `Equal` read it.
pub fn active_pods_less(a: &CachedPod, b: &CachedPod) -> bool {
    if let Some(decision) = unscheduled_pending_unready_first(a, b) {
        return decision;
    }
    if is_pod_ready(a) && is_pod_ready(b) {
        let (since_a, since_b) = (non_zero(pod_ready_time(a)), non_zero(pod_ready_time(b)));
        if since_a != since_b {
            return after_or_zero(since_a, since_b);
        }
    }
    if let Some(decision) = restarts_first(a, b) {
        return decision;
    }
    let (created_a, created_b) = (non_zero(creation_time(a)), non_zero(creation_time(b)));
    if created_a != created_b {
        return after_or_zero(created_a, created_b);
    }
    false
}

/// The first three rules of both orders, if one tells `a` and `b` apart: unscheduled before
/// scheduled, then `Pending` < `Unknown` < `Running`, then not ready before ready.
fn unscheduled_pending_unready_first(a: &CachedPod, b: &CachedPod) -> Option<bool> {
    let (node_a, node_b) = (node_name(a), node_name(b));
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return Some(node_a.is_empty());
    }
    let (phase_a, phase_b) = (phase_ordinal(a), phase_ordinal(b));
    if phase_a != phase_b {
        return Some(phase_a < phase_b);
    }
    let (ready_a, ready_b) = (is_pod_ready(a), is_pod_ready(b));
    (ready_a != ready_b).then_some(!ready_a)
}

/// Sorts `pods` by [`active_pods_less`] (`sort.Sort(controller.ActivePods(pods))`), stably:
/// upstream's sort is not stable, so pods equal under the order may come out in another order
/// there; here they keep their input order. Takes `&CachedPod`s or `Arc<CachedPod>`s.
pub fn sort_active_pods<P: Borrow<CachedPod> + Clone>(pods: &mut [P]) {
    stable_sort_by_less(pods, |a, b| active_pods_less(a.borrow(), b.borrow()));
}

/// Sorts `items` by a "less" predicate, stably (equal items keep their order). Unlike
/// `slice::sort_by`, it never panics when the predicate is not a strict weak order (hostile
/// timestamps can make upstream's orders inconsistent); a merge sort, O(n log n).
pub fn stable_sort_by_less<T: Clone>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let sorted = merge_sort(items.to_vec(), &less);
    items.clone_from_slice(&sorted);
}

/// A time, `None` when unset or set to Go's zero time.
fn non_zero(time: Option<Timestamp>) -> Option<Timestamp> {
    time.filter(|time| *time != GO_ZERO_TIME)
}

/// Upstream's `afterOrZero`: `a` is after `b`, an unset (zero) time counting as after any
/// other.
fn after_or_zero(a: Option<Timestamp>, b: Option<Timestamp>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a > b,
        _ => a.is_none(),
    }
}

/// The pod's node, `""` when it is not scheduled (upstream compares the empty string).
fn node_name(pod: &CachedPod) -> &str {
    pod.node_name().unwrap_or_default()
}

/// Upstream's `podPhaseToOrdinal`: phases missing from its map (Succeeded, Failed, empty)
/// count as 0, like Pending.
fn phase_ordinal(pod: &CachedPod) -> u8 {
    match pod.phase() {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

/// The pod's deletion cost; missing or invalid values are 0 (upstream
/// `GetDeletionCostFromPodAnnotations`, which rejects a leading `+` and leading zeros).
pub fn deletion_cost(pod: &CachedPod) -> i32 {
    let Some(value) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST_ANNOTATION))
    else {
        return 0;
    };
    let valid_first_digit = match value.as_bytes().first() {
        Some(b'-') | Some(b'1'..=b'9') => true,
        Some(b'0') => value == "0",
        _ => false,
    };
    if !valid_first_digit {
        return 0;
    }
    value.parse::<i32>().unwrap_or(0)
}

fn creation_time(pod: &CachedPod) -> Option<Timestamp> {
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// Upstream's time rule with `LogarithmicScaleDown`: zero times sort first; otherwise pods in a
/// more recent power-of-two age bucket sort first and a shared bucket is ordered by UID.
fn newer_first(
    time_a: Option<Timestamp>,
    time_b: Option<Timestamp>,
    pa: &CachedPod,
    pb: &CachedPod,
    now: Timestamp,
) -> bool {
    let (Some(time_a), Some(time_b)) = (time_a, time_b) else {
        return time_a.is_none();
    };
    let bucket_diff = age_bucket(time_a, now) - age_bucket(time_b, now);
    if bucket_diff == 0 {
        return uid(pa) < uid(pb);
    }
    bucket_diff < 0
}

/// floor(log2(age in nanoseconds)), or -1 when the time is not in the past.
fn age_bucket(time: Timestamp, now: Timestamp) -> i64 {
    let age = now.as_nanosecond() - time.as_nanosecond();
    if age > 0 {
        // Truncation towards zero matches Go's int64(math.Log2(float64(d))).
        (age as f64).log2() as i64
    } else {
        -1
    }
}

fn uid(pod: &CachedPod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// Upstream `compareMaxContainerRestarts`: the higher max restart count of regular containers
/// first, then of restartable (sidecar) init containers.
fn restarts_first(pa: &CachedPod, pb: &CachedPod) -> Option<bool> {
    let (regular_a, sidecar_a) = max_container_restarts(pa);
    let (regular_b, sidecar_b) = max_container_restarts(pb);
    if regular_a != regular_b {
        return Some(regular_a > regular_b);
    }
    if sidecar_a != sidecar_b {
        return Some(sidecar_a > sidecar_b);
    }
    None
}

/// Upstream's `maxContainerRestarts` (v1.36): the highest restart count of the regular
/// containers, and that of the restartable (sidecar: `restartPolicy: Always`) init containers;
/// a plain init container's restarts count in neither.
fn max_container_restarts(pod: &CachedPod) -> (i32, i32) {
    let Some(status) = pod.status.as_ref() else {
        return (0, 0);
    };
    let regular = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    let sidecars: HashSet<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    let sidecar = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| sidecars.contains(c.name.as_str()))
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    (regular, sidecar)
}

/// A stable merge sort driven by a "less" predicate; it tolerates predicates that are not
/// strict weak orders.
fn merge_sort<T>(items: Vec<T>, less: &dyn Fn(&T, &T) -> bool) -> Vec<T> {
    if items.len() <= 1 {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let left = merge_sort(left, less);
    let right = merge_sort(right, less);
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    while let (Some(l), Some(r)) = (left.peek(), right.peek()) {
        let next = if less(r, l) {
            right.next()
        } else {
            left.next()
        };
        merged.extend(next);
    }
    merged.extend(left);
    merged.extend(right);
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer::ReadyCondition;
    use k8s_openapi::api::core::v1::{
        Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    const NOW: i64 = 1_000_000;

    fn ts(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("valid timestamp")
    }

    /// A pod that loses every rule against the default "victim" built by tweaking it: scheduled,
    /// Running, ready long ago, high cost, created long ago, no restarts.
    #[derive(Clone)]
    struct Shape {
        uid: &'static str,
        node: &'static str,
        phase: &'static str,
        ready_since: Option<i64>,
        cost: Option<&'static str>,
        rank: usize,
        restarts: i32,
        sidecar_restarts: i32,
        created: Option<i64>,
    }

    impl Default for Shape {
        fn default() -> Self {
            Shape {
                uid: "m",
                node: "node-1",
                phase: "Running",
                ready_since: Some(NOW - 100_000),
                cost: Some("100"),
                rank: 1,
                restarts: 0,
                sidecar_restarts: 0,
                created: Some(NOW - 200_000),
            }
        }
    }

    /// A default-shaped pod `uid`, Ready since `since` (not ready when None).
    fn ready_since(uid: &'static str, since: Option<i64>) -> RankedPod {
        build(&Shape {
            uid,
            ready_since: since,
            ..Shape::default()
        })
    }

    /// A default-shaped pod `uid` created at `created` (no creationTimestamp when None).
    fn created_at(uid: &'static str, created: Option<i64>) -> RankedPod {
        build(&Shape {
            uid,
            created,
            ..Shape::default()
        })
    }

    fn build(shape: &Shape) -> RankedPod {
        let conditions = shape.ready_since.map(|since| {
            vec![PodCondition {
                type_: "Ready".to_owned(),
                status: "True".to_owned(),
                last_transition_time: Some(Time(ts(since))),
                ..PodCondition::default()
            }]
        });
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(format!("pod-{}", shape.uid)),
                namespace: Some("ns".to_owned()),
                uid: Some(shape.uid.to_owned()),
                creation_timestamp: shape.created.map(|c| Time(ts(c))),
                annotations: shape
                    .cost
                    .map(|c| [(POD_DELETION_COST_ANNOTATION.to_owned(), c.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: (!shape.node.is_empty()).then(|| shape.node.to_owned()),
                init_containers: Some(vec![Container {
                    name: "sidecar".to_owned(),
                    restart_policy: Some("Always".to_owned()),
                    ..Container::default()
                }]),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(shape.phase.to_owned()),
                conditions,
                container_statuses: Some(vec![ContainerStatus {
                    name: "main".to_owned(),
                    restart_count: shape.restarts,
                    ..ContainerStatus::default()
                }]),
                init_container_statuses: Some(vec![ContainerStatus {
                    name: "sidecar".to_owned(),
                    restart_count: shape.sidecar_restarts,
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
        };
        RankedPod {
            pod: Arc::new(CachedPod::from(pod)),
            rank: shape.rank,
        }
    }

    /// Each case: a victim that must sort before the keeper. The victim wins on the named rule
    /// and loses on every later rule, so the test fails unless rules apply in order.
    #[test]
    fn every_rule_in_order() {
        // The two tie on the default deletion cost and rank.
        let loser_on_later_rules = Shape {
            uid: "z",
            ready_since: Some(NOW - 400_000),
            created: Some(NOW - 800_000),
            ..Shape::default()
        };
        let keeper_later = Shape {
            uid: "a",
            ready_since: Some(NOW - 10),
            restarts: 9,
            sidecar_restarts: 9,
            created: Some(NOW - 20),
            ..Shape::default()
        };
        // A keeper for the rules up to readiness: it loses on every rule after them.
        let not_ready_keeper = |phase| Shape {
            phase,
            ready_since: None,
            cost: Some("-5"),
            rank: 9,
            ..keeper_later.clone()
        };
        let cases: Vec<(&str, Shape, Shape)> = vec![
            (
                "1 unscheduled before scheduled",
                Shape {
                    node: "",
                    phase: "Running",
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    node: "node-1",
                    ..not_ready_keeper("Pending")
                },
            ),
            (
                "2 pending before running",
                Shape {
                    phase: "Pending",
                    ..loser_on_later_rules.clone()
                },
                not_ready_keeper("Running"),
            ),
            (
                "2 unknown before running",
                Shape {
                    phase: "Unknown",
                    ..loser_on_later_rules.clone()
                },
                not_ready_keeper("Running"),
            ),
            (
                "2 pending before unknown",
                Shape {
                    phase: "Pending",
                    ..loser_on_later_rules.clone()
                },
                not_ready_keeper("Unknown"),
            ),
            (
                "3 not ready before ready",
                Shape {
                    ready_since: None,
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    cost: Some("-5"),
                    rank: 9,
                    ..keeper_later.clone()
                },
            ),
            (
                "4 lower deletion cost first",
                Shape {
                    cost: Some("-1"),
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    cost: Some("0"),
                    rank: 9,
                    ..keeper_later.clone()
                },
            ),
            (
                "5 higher rank first",
                Shape {
                    rank: 3,
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    rank: 2,
                    ..keeper_later.clone()
                },
            ),
            (
                "6 ready more recently (other log2 bucket) first",
                Shape {
                    ready_since: Some(NOW - 10),
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    ready_since: Some(NOW - 1000),
                    ..keeper_later.clone()
                },
            ),
            (
                "7 more restarts first",
                Shape {
                    ready_since: Some(NOW - 10),
                    restarts: 5,
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    ready_since: Some(NOW - 10),
                    restarts: 4,
                    sidecar_restarts: 9,
                    ..keeper_later.clone()
                },
            ),
            (
                "7 equal regular restarts: more sidecar restarts first",
                Shape {
                    ready_since: Some(NOW - 10),
                    restarts: 4,
                    sidecar_restarts: 2,
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    ready_since: Some(NOW - 10),
                    restarts: 4,
                    sidecar_restarts: 1,
                    ..keeper_later.clone()
                },
            ),
            (
                "8 newer (other log2 bucket) first",
                Shape {
                    ready_since: Some(NOW - 10),
                    created: Some(NOW - 20),
                    ..loser_on_later_rules.clone()
                },
                Shape {
                    ready_since: Some(NOW - 10),
                    restarts: 0,
                    sidecar_restarts: 0,
                    created: Some(NOW - 5000),
                    ..keeper_later.clone()
                },
            ),
        ];
        for (name, victim, keeper) in cases {
            let (victim, keeper) = (build(&victim), build(&keeper));
            let now = ts(NOW);
            assert!(
                deletes_before(&victim, &keeper, now),
                "{name}: victim first"
            );
            assert!(
                !deletes_before(&keeper, &victim, now),
                "{name}: not both ways"
            );
            let sorted = sort_for_deletion(vec![keeper.clone(), victim.clone()], now);
            assert_eq!(
                sorted[0].pod.metadata.uid, victim.pod.metadata.uid,
                "{name}"
            );
        }
    }

    #[test]
    fn same_log2_bucket_is_ordered_by_uid() {
        // Ready 700s and 600s ago share the bucket floor(log2(age ns)) = 39, so the UID
        // decides even though "b" became ready more recently.
        let now = ts(NOW);
        let a = ready_since("a", Some(NOW - 700));
        let b = ready_since("b", Some(NOW - 600));
        assert_eq!(
            age_bucket(ts(NOW - 700), now),
            age_bucket(ts(NOW - 600), now)
        );
        assert!(deletes_before(&a, &b, now));
        assert!(!deletes_before(&b, &a, now));
    }

    #[test]
    fn equal_ready_times_fall_through_to_creation_buckets_and_uid() {
        let now = ts(NOW);
        let older_uid_small = created_at("a", Some(NOW - 700));
        let newer_uid_big = created_at("b", Some(NOW - 600));
        assert!(deletes_before(&older_uid_small, &newer_uid_big, now));
        let much_newer = created_at("c", Some(NOW - 10));
        assert!(deletes_before(&much_newer, &older_uid_small, now));
    }

    #[test]
    fn zero_timestamps_count_as_newest() {
        let now = ts(NOW);
        let no_ready_time = ready_since("z", None);
        // A ready pod without a transition time: make it ready with a zero time.
        let mut zero_ready = (*no_ready_time.pod).clone();
        if let Some(status) = zero_ready.status.as_mut() {
            status.set_ready(Some(ReadyCondition {
                is_true: true,
                last_transition_time: None,
            }));
        }
        let zero_ready = RankedPod {
            pod: Arc::new(zero_ready),
            rank: 1,
        };
        let ready_recently = ready_since("a", Some(NOW - 1));
        assert!(deletes_before(&zero_ready, &ready_recently, now));
        assert!(!deletes_before(&ready_recently, &zero_ready, now));

        let no_creation = created_at("z", None);
        let created_now = created_at("a", Some(NOW));
        assert!(deletes_before(&no_creation, &created_now, now));
        assert!(!deletes_before(&created_now, &no_creation, now));
    }

    #[test]
    fn identical_pods_are_not_less_than_each_other() {
        let p = build(&Shape::default());
        assert!(!deletes_before(&p, &p.clone(), ts(NOW)));
    }

    #[test]
    fn deletion_cost_parsing() {
        let cases = [
            (None, 0),
            (Some("0"), 0),
            (Some("7"), 7),
            (Some("-7"), -7),
            (Some("-007"), -7),
            (Some("+7"), 0),
            (Some("007"), 0),
            (Some("abc"), 0),
            (Some(""), 0),
            (Some("2147483647"), i32::MAX),
            (Some("2147483648"), 0),
            (Some("-2147483648"), i32::MIN),
            (Some("1.5"), 0),
        ];
        for (value, want) in cases {
            let p = build(&Shape {
                cost: value,
                ..Shape::default()
            });
            assert_eq!(deletion_cost(&p.pod), want, "{value:?}");
        }
    }

    #[test]
    fn ranks_count_active_related_pods_per_node() {
        let on = |uid: &'static str, node: &'static str, phase: &'static str| {
            build(&Shape {
                uid,
                node,
                phase,
                ..Shape::default()
            })
            .pod
        };
        let related = vec![
            on("r1", "node-1", "Running"),
            on("r2", "node-1", "Running"),
            on("r3", "node-1", "Failed"),
            on("r4", "node-2", "Running"),
            on("r5", "", "Pending"),
        ];
        let to_rank = vec![
            on("a", "node-1", "Running"),
            on("b", "node-2", "Running"),
            on("c", "node-3", "Running"),
            on("d", "", "Pending"),
        ];
        let ranks: Vec<usize> = rank_by_related_pods_on_same_node(&to_rank, &related)
            .iter()
            .map(|r| r.rank)
            .collect();
        assert_eq!(ranks, [2, 1, 0, 1]);
    }

    #[test]
    fn sorts_a_mixed_set_victims_first() {
        let now = ts(NOW);
        let pods = vec![
            build(&Shape {
                uid: "old-ready",
                ..Shape::default()
            }),
            build(&Shape {
                uid: "unscheduled",
                node: "",
                phase: "Pending",
                ready_since: None,
                ..Shape::default()
            }),
            build(&Shape {
                uid: "pending",
                phase: "Pending",
                ready_since: None,
                ..Shape::default()
            }),
            build(&Shape {
                uid: "not-ready",
                ready_since: None,
                ..Shape::default()
            }),
            build(&Shape {
                uid: "cheap",
                cost: Some("-10"),
                ..Shape::default()
            }),
        ];
        let order: Vec<String> = sort_for_deletion(pods, now)
            .iter()
            .map(|r| r.pod.metadata.uid.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            order,
            ["unscheduled", "pending", "not-ready", "cheap", "old-ready"]
        );
    }

    /// A pod of the `ActivePods` rows, built step by step as the Job controller's tables build
    /// theirs (upstream's `buildPod()`), then cached.
    #[derive(Default)]
    struct ActivePod(Pod);

    impl ActivePod {
        fn status(&mut self) -> &mut PodStatus {
            self.0.status.get_or_insert_with(PodStatus::default)
        }

        fn uid(mut self, uid: &str) -> Self {
            self.0.metadata.uid = Some(uid.to_owned());
            self.0.metadata.name = Some(uid.to_owned());
            self
        }

        fn phase(mut self, phase: &str) -> Self {
            self.status().phase = Some(phase.to_owned());
            self
        }

        fn node(mut self, node: &str) -> Self {
            self.0.spec.get_or_insert_with(PodSpec::default).node_name = Some(node.to_owned());
            self
        }

        fn condition_at(mut self, type_: &str, status: &str, at: Option<Timestamp>) -> Self {
            self.status()
                .conditions
                .get_or_insert_with(Vec::new)
                .push(PodCondition {
                    type_: type_.to_owned(),
                    status: status.to_owned(),
                    last_transition_time: at.map(Time),
                    ..PodCondition::default()
                });
            self
        }

        fn ready_since(self, at: Timestamp) -> Self {
            self.condition_at("Ready", "True", Some(at))
        }

        fn restarts(mut self, name: &str, count: i32) -> Self {
            self.status()
                .container_statuses
                .get_or_insert_with(Vec::new)
                .push(ContainerStatus {
                    name: name.to_owned(),
                    restart_count: count,
                    ..ContainerStatus::default()
                });
            self
        }

        fn init_restarts(mut self, name: &str, count: i32) -> Self {
            self.status()
                .init_container_statuses
                .get_or_insert_with(Vec::new)
                .push(ContainerStatus {
                    name: name.to_owned(),
                    restart_count: count,
                    ..ContainerStatus::default()
                });
            self
        }

        fn sidecar(mut self, name: &str) -> Self {
            self.0
                .spec
                .get_or_insert_with(PodSpec::default)
                .init_containers
                .get_or_insert_with(Vec::new)
                .push(Container {
                    name: name.to_owned(),
                    restart_policy: Some("Always".to_owned()),
                    ..Container::default()
                });
            self
        }

        fn created(mut self, at: Timestamp) -> Self {
            self.0.metadata.creation_timestamp = Some(Time(at));
            self
        }

        fn build(self) -> CachedPod {
            CachedPod::from(&self.0)
        }
    }

    fn active_pod() -> ActivePod {
        ActivePod::default()
    }

    /// The Job controller's test clock (upstream's `defaultTestTime`) shifted by `seconds`.
    fn test_time(seconds: i64) -> Timestamp {
        let now: Timestamp = "2009-11-10T23:00:00Z".parse().expect("a valid time");
        ts(now.as_second() + seconds)
    }

    fn active_uids<P: Borrow<CachedPod>>(pods: &[P]) -> Vec<String> {
        pods.iter()
            .map(|p| p.borrow().metadata.uid.clone().unwrap_or_default())
            .collect()
    }

    /// `controller.ActivePods`: rows in the spirit of upstream's `TestSortingActivePods`, plus
    /// the v1.36 sidecar restart rule, from first to delete to last; every rotation sorts back
    /// into it and every pair compares as its positions do.
    #[test]
    fn active_pods_order() {
        let ordered: Vec<CachedPod> = [
            active_pod().uid("unscheduled").phase("Pending"),
            active_pod().uid("pending").phase("Pending").node("n"),
            active_pod().uid("unknown").phase("Unknown").node("n"),
            active_pod()
                .uid("running-not-ready")
                .phase("Running")
                .node("n"),
            active_pod()
                .uid("ready-zero-time")
                .phase("Running")
                .node("n")
                .condition_at("Ready", "True", None),
            active_pod()
                .uid("ready-recently")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-10)),
            active_pod()
                .uid("ready-long-restarted")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-100))
                .restarts("c", 3),
            active_pod()
                .uid("ready-long-sidecar-restarted")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-100))
                .sidecar("s")
                .init_restarts("s", 2),
            active_pod()
                .uid("ready-long-no-creation")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-100)),
            active_pod()
                .uid("ready-long-new")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-100))
                .created(test_time(-200)),
            active_pod()
                .uid("ready-long-old")
                .phase("Running")
                .node("n")
                .ready_since(test_time(-100))
                .created(test_time(-300)),
        ]
        .into_iter()
        .map(ActivePod::build)
        .collect();
        let want = active_uids(&ordered);
        for rotation in 0..ordered.len() {
            let mut shuffled: Vec<&CachedPod> = ordered.iter().collect();
            shuffled.rotate_left(rotation);
            shuffled.reverse();
            sort_active_pods(&mut shuffled);
            assert_eq!(active_uids(&shuffled), want, "rotation {rotation}");
            let mut shared: Vec<Arc<CachedPod>> = ordered.iter().cloned().map(Arc::new).collect();
            shared.rotate_left(rotation);
            sort_active_pods(&mut shared);
            assert_eq!(active_uids(&shared), want, "rotation {rotation}, shared");
        }
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(active_pods_less(a, b), i < j, "{i} < {j}");
            }
        }
    }

    /// A time set to Go's zero time reads as unset, as upstream's `IsZero` and `Equal` read
    /// it: equal to none, and before any other.
    #[test]
    fn active_pods_take_a_zero_time_for_none() {
        let zero = GO_ZERO_TIME;
        let ready = |uid: &str, at: Option<Timestamp>| {
            active_pod()
                .uid(uid)
                .phase("Running")
                .node("n")
                .condition_at("Ready", "True", at)
        };
        let pairs = [
            (
                "ready at the zero time before ready recently",
                ready("a", Some(zero)),
                ready("b", Some(test_time(-10))),
                true,
                false,
            ),
            (
                "ready at the zero time ties with no ready time",
                ready("a", Some(zero)),
                ready("b", None),
                false,
                false,
            ),
            (
                "created at the zero time before created recently",
                ready("a", None).created(zero),
                ready("b", None).created(test_time(-10)),
                true,
                false,
            ),
            (
                "created at the zero time ties with no creation time",
                ready("a", None).created(zero),
                ready("b", None),
                false,
                false,
            ),
        ];
        for (name, a, b, a_first, b_first) in pairs {
            let (a, b) = (a.build(), b.build());
            assert_eq!(active_pods_less(&a, &b), a_first, "{name}");
            assert_eq!(active_pods_less(&b, &a), b_first, "{name}: reversed");
        }
    }

    /// `maxContainerRestarts` (v1.36), shared by both orders: the regular containers' highest
    /// count, then the sidecars'; a plain init container's restarts count in neither.
    #[test]
    fn sidecar_restarts_only_count_for_sidecars() {
        let pod = active_pod()
            .restarts("a", 2)
            .restarts("b", 5)
            .sidecar("s")
            .init_restarts("s", 7)
            .init_restarts("plain-init", 9)
            .build();
        assert_eq!(max_container_restarts(&pod), (5, 7));
        assert_eq!(max_container_restarts(&active_pod().build()), (0, 0));
        let negative = active_pod().restarts("a", -3).build();
        assert_eq!(
            max_container_restarts(&negative),
            (0, 0),
            "from 0, as Go's max"
        );
    }

    #[test]
    fn sorting_with_an_inconsistent_order_does_not_panic() {
        let mut items: Vec<u32> = (0..200).rev().collect();
        // Not a strict weak order: everything is less than everything.
        stable_sort_by_less(&mut items, |_, _| true);
        assert_eq!(items.len(), 200);
        let mut items: Vec<u32> = (0..200).rev().collect();
        stable_sort_by_less(&mut items, |a, b| a < b);
        assert_eq!(items, (0..200).collect::<Vec<_>>());
        let mut pairs = vec![(1, 'a'), (0, 'b'), (1, 'c'), (0, 'd')];
        stable_sort_by_less(&mut pairs, |a, b| a.0 < b.0);
        assert_eq!(pairs, [(0, 'b'), (0, 'd'), (1, 'a'), (1, 'c')], "stable");
    }
}
