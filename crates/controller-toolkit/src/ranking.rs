//! Upstream's pod deletion ranking for scale-down (`ActivePodsWithRanks`).
//!
//! When a ReplicaSet has too many pods, the pods that sort first are deleted first. The order
//! prefers pods that cost least to lose: unscheduled, not running, not ready, cheap (by the
//! `controller.kubernetes.io/pod-deletion-cost` annotation), doubled up on a node, ready for the
//! shortest time, crash-looping, and youngest. `LogarithmicScaleDown` and `PodDeletionCost` are
//! on (their upstream defaults). The comparison is a pure function of the pods, their ranks and
//! `now`, so the scale-down choice is table-testable.
//!
//! The comparison is not a strict total order in corner cases (equal ready times fall through
//! to later rules while nearby times compare by UID), so the sort is a merge sort that never
//! panics on such input, unlike `slice::sort_by`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use informer::CachedPod;
use k8s_openapi::jiff::Timestamp;

use crate::pod_predicates::{is_pod_active, is_pod_ready, pod_ready_time};

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
    // 1. Unscheduled before scheduled.
    let (node_a, node_b) = (node_name(pa), node_name(pb));
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return node_a.is_empty();
    }
    // 2. Pending < Unknown < Running.
    let (phase_a, phase_b) = (phase_ordinal(pa), phase_ordinal(pb));
    if phase_a != phase_b {
        return phase_a < phase_b;
    }
    // 3. Not ready before ready.
    let (ready_a, ready_b) = (is_pod_ready(pa), is_pod_ready(pb));
    if ready_a != ready_b {
        return !ready_a;
    }
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
}
