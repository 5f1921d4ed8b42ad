//! Property tests: whatever the API server hands the controller — a StatefulSet with
//! `spec.replicas`, `spec.ordinals.start` or `rollingUpdate.partition` anywhere in int32, an
//! intstr `maxUnavailable` such as `"99999999999%"`, a huge or negative `minReadySeconds`, an
//! unknown policy or strategy, pods whose names carry no ordinal, a negative-looking one or one
//! past int32 — [`plan`] never panics and plans only what upstream's algorithm could: pods
//! created at ordinals in `[start, start + replicas)` (computed in i64), each once, never over
//! an existing pod, named so that the next sync finds them, no more than `replicas` (nor
//! [`MAX_CREATES_PER_SYNC`]) and one at a time when ordered; deletions of input pods only, for
//! update only of outdated pods at or above the partition, never with `OnDelete`, one at a
//! time with `MaxUnavailableStatefulSet` off and within the `maxUnavailable` budget with it on
//! (ordered); status counts within the pods given.
//!
//! The API server validates most of these fields, but not all combinations (`start + replicas`
//! may pass `i32::MAX`, and `replicas: 2147483647` is valid), and a cache can hold what an
//! older server or a direct etcd write let through. One panicking sync would take every
//! controller of the manager down with it, and the dev and test profiles check integer
//! overflow, so an int32 overflow here is a panic the properties find. They are checked over
//! arbitrary input rather than over the cases someone thought of, as the Deployment planners'
//! are (`deployment::planner_bounds`); the inputs they found are tables at the end.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use controller_toolkit::hostile_values::{self, int_or_string, one_of_two_or_garbage};
use informer::CachedPod;
use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::PersistentVolumeClaim},
    apimachinery::pkg::{apis::meta::v1::OwnerReference, util::intstr::IntOrString},
    jiff::{Timestamp, ToSpan},
};
use proptest::prelude::*;
use serde_json::json;

use crate::{
    decide::{
        MAX_CREATES_PER_SYNC, Plan, PlanInput, PodAction, Revisions, availability_recheck,
        complete_rolling_update, is_monotonic, is_terminating, max_unavailable, partition, plan,
        status_needs_write,
    },
    features::FeatureGates,
    identity::{OrdinalRange, POD_INDEX_LABEL, parent_and_ordinal, pod_ordinal, pod_revision},
};

const SET: &str = "web";
const CURRENT: &str = "web-old";
const UPDATE: &str = "web-new";

/// The time every sync is judged at.
fn now() -> Timestamp {
    Timestamp::from_second(1_795_334_400).expect("a valid time")
}

/// A replica count as the property tests draw it.
fn count() -> impl Strategy<Value = i32> {
    hostile_values::count(12)
}

/// `spec.replicas`: as [`count`], huge less often (a huge `Parallel` set plans
/// [`MAX_CREATES_PER_SYNC`] creations, the slowest case to check).
fn replicas() -> impl Strategy<Value = i32> {
    prop_oneof![
        16 => 0..12i32,
        1 => any::<i32>(),
        1 => Just(i32::MAX),
        1 => -3..0i32,
    ]
}

/// `spec.ordinals.start`: mostly small, sometimes near or at `i32::MAX` (so that
/// `start + replicas` passes int32), sometimes negative.
fn start() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => 0..5i32,
        2 => any::<i32>(),
        1 => (0..4i32).prop_map(|back| i32::MAX - back),
        1 => Just(i32::MIN),
        1 => -3..0i32,
    ]
}

/// `minReadySeconds`: unset, small, huge or negative.
fn min_ready_seconds() -> impl Strategy<Value = Option<i32>> {
    prop_oneof![
        2 => Just(None),
        3 => (0..20i32).prop_map(Some),
        1 => any::<i32>().prop_map(Some),
        1 => prop::sample::select(vec![i32::MAX, i32::MIN, -1]).prop_map(Some),
    ]
}

/// `podManagementPolicy`: the two values, unset, or garbage.
fn policy() -> impl Strategy<Value = Option<String>> {
    one_of_two_or_garbage([(3, "OrderedReady"), (3, "Parallel")], "[A-Za-z]{0,8}")
}

/// `updateStrategy.type`: the two values, unset, or garbage.
fn strategy_type() -> impl Strategy<Value = Option<String>> {
    one_of_two_or_garbage([(4, "RollingUpdate"), (2, "OnDelete")], "[A-Za-z]{0,8}")
}

/// A pod name: an ordinal near `spec.ordinals.start` (resolved once the start is known, so
/// in range or just out of it), a small or arbitrary ordinal, a suffix past int32, a
/// negative-looking one, or no ordinal at all.
#[derive(Debug, Clone)]
enum Name {
    /// `web-<start + offset>`, computed in i64 (so possibly `web--1` or `web-2147483648`).
    NearStart(i64),
    /// This name.
    Exact(String),
}

impl Name {
    /// The name, for a set whose ordinals start at `start`.
    fn resolve(&self, start: i32) -> String {
        match self {
            Name::NearStart(offset) => format!("{SET}-{}", i64::from(start) + offset),
            Name::Exact(name) => name.clone(),
        }
    }
}

/// A [`Name`] of each kind.
fn name() -> impl Strategy<Value = Name> {
    prop_oneof![
        4 => (-2..6i64).prop_map(Name::NearStart),
        2 => (0..8i64).prop_map(|ordinal| Name::Exact(format!("{SET}-{ordinal}"))),
        1 => any::<i64>().prop_map(|ordinal| Name::Exact(format!("{SET}-{ordinal}"))),
        1 => prop::sample::select(vec![
            "web-2147483647", "web-2147483648", "web-99999999999", "web--5", "web--0",
            "web-01", "web", "web-", "-3", "other-3", "", "web-+3",
        ])
        .prop_map(|name| Name::Exact(name.to_owned())),
        1 => "web-[-+0-9]{0,12}".prop_map(Name::Exact),
    ]
}

/// What a generated pod looks like, besides its name.
#[derive(Debug, Clone)]
struct PodShape {
    name: Name,
    phase: Option<&'static str>,
    ready: bool,
    /// Seconds since the Ready condition's last transition (and the pod's creation); `None`:
    /// neither is set.
    since: Option<i64>,
    terminating: bool,
    revision: &'static str,
}

prop_compose! {
    /// A pod in any phase and readiness, maybe terminating, at any revision.
    fn pod_shape()(
        name in name(),
        phase in prop::sample::select(vec![
            Some("Running"), Some("Running"), Some("Running"), Some("Pending"), Some("Failed"),
            Some("Succeeded"), Some(""), None,
        ]),
        ready in any::<bool>(),
        since in prop::sample::select(vec![None, Some(0), Some(5), Some(3_600), Some(1_000_000_000)]),
        terminating in prop::bool::weighted(0.2),
        revision in prop::sample::select(vec![CURRENT, UPDATE, UPDATE, "web-other", ""]),
    ) -> PodShape {
        PodShape { name, phase, ready, since, terminating, revision }
    }
}

/// The pod of `shape`, its name resolved against `start`.
fn build_pod(shape: &PodShape, start: i32, uid: usize) -> Arc<CachedPod> {
    let name = shape.name.resolve(start);
    let since = shape
        .since
        .map(|seconds| (now() - seconds.seconds()).to_string());
    let mut condition = json!({"type": "Ready", "status": if shape.ready {"True"} else {"False"}});
    let mut metadata = json!({
        "name": name, "namespace": "default", "uid": format!("uid-{uid}"),
        "labels": {"app": SET, "controller-revision-hash": shape.revision,
                   "statefulset.kubernetes.io/pod-name": name},
    });
    if let Some(since) = &since {
        condition["lastTransitionTime"] = json!(since);
        metadata["creationTimestamp"] = json!(since);
    }
    if shape.terminating {
        metadata["deletionTimestamp"] = json!(now().to_string());
    }
    let mut status = json!({"conditions": [condition]});
    if let Some(phase) = shape.phase {
        status["phase"] = json!(phase);
    }
    let pod = json!({"metadata": metadata, "spec": {"containers": []}, "status": status});
    Arc::new(serde_json::from_value(pod).expect("a valid pod"))
}

/// A claim of the `data` template named after `name`: owned by a pod of that name with
/// another UID (stale under `whenScaled: Delete`), maybe being deleted.
fn build_claim(name: &str, deleting: bool) -> (String, Arc<PersistentVolumeClaim>) {
    let claim_name = format!("data-{name}");
    let mut metadata = json!({
        "name": claim_name, "namespace": "default",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name,
                             "uid": "an-earlier-pod", "controller": true}],
    });
    if deleting {
        metadata["deletionTimestamp"] = json!(now().to_string());
    }
    let claim = serde_json::from_value(json!({"metadata": metadata})).expect("a valid claim");
    (claim_name, Arc::new(claim))
}

/// Everything a hostile set is made of.
#[derive(Debug, Clone)]
struct SetShape {
    replicas: Option<i32>,
    start: Option<i32>,
    policy: Option<String>,
    strategy: Option<String>,
    /// `rollingUpdate`: `None` unset, else (partition, maxUnavailable).
    rolling_update: Option<(Option<i32>, Option<IntOrString>)>,
    min_ready_seconds: Option<i32>,
    status_current_replicas: Option<i32>,
    /// A `data` claim template, and `whenScaled: Delete` (claims of stale pods block).
    claims: Option<bool>,
    deleting: bool,
}

prop_compose! {
    /// A hostile set (see [`SetShape`]).
    fn set_shape()(
        replicas in proptest::option::weighted(0.95, replicas()),
        start in proptest::option::of(start()),
        policy in policy(),
        strategy in strategy_type(),
        rolling_update in proptest::option::weighted(
            0.8,
            (proptest::option::of(count()), proptest::option::of(int_or_string())),
        ),
        min_ready_seconds in min_ready_seconds(),
        status_current_replicas in proptest::option::of(count()),
        claims in proptest::option::of(any::<bool>()),
        deleting in prop::bool::weighted(0.1),
    ) -> SetShape {
        SetShape {
            replicas, start, policy, strategy, rolling_update, min_ready_seconds,
            status_current_replicas, claims, deleting,
        }
    }
}

/// The set of `shape`, named `web`, with an empty pod template.
fn build_set(shape: &SetShape) -> StatefulSet {
    let mut spec = json!({
        "serviceName": SET,
        "selector": {"matchLabels": {"app": SET}},
        "template": {"metadata": {"labels": {"app": SET}}, "spec": {"containers": []}},
        "updateStrategy": {},
    });
    let optional = [
        ("replicas", shape.replicas.map(|replicas| json!(replicas))),
        ("ordinals", shape.start.map(|start| json!({"start": start}))),
        (
            "podManagementPolicy",
            shape.policy.as_ref().map(|policy| json!(policy)),
        ),
        (
            "minReadySeconds",
            shape.min_ready_seconds.map(|seconds| json!(seconds)),
        ),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            spec[key] = value;
        }
    }
    if let Some(when_scaled) = shape.claims {
        spec["volumeClaimTemplates"] =
            json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]);
        let when_scaled = if when_scaled { "Delete" } else { "Retain" };
        spec["persistentVolumeClaimRetentionPolicy"] =
            json!({"whenDeleted": "Retain", "whenScaled": when_scaled});
    }
    if let Some(type_) = &shape.strategy {
        spec["updateStrategy"]["type"] = json!(type_);
    }
    if let Some((partition, max_unavailable)) = &shape.rolling_update {
        let mut rolling = json!({});
        if let Some(partition) = partition {
            rolling["partition"] = json!(partition);
        }
        if let Some(max_unavailable) = max_unavailable {
            rolling["maxUnavailable"] = serde_json::to_value(max_unavailable).expect("an intstr");
        }
        spec["updateStrategy"]["rollingUpdate"] = rolling;
    }
    let mut metadata =
        json!({"name": SET, "namespace": "default", "uid": "set-uid", "generation": 3});
    if shape.deleting {
        metadata["deletionTimestamp"] = json!(now().to_string());
    }
    let mut status = json!({"replicas": 0});
    if let Some(current) = shape.status_current_replicas {
        status["currentReplicas"] = json!(current);
    }
    serde_json::from_value(json!({"metadata": metadata, "spec": spec, "status": status}))
        .expect("a valid set")
}

/// A hostile set, its pods and claims, and the sync's other inputs.
#[derive(Clone)]
struct Scenario {
    /// What the set and pods were built from (all a failure report shows).
    shapes: (SetShape, Vec<PodShape>, Vec<String>),
    set: StatefulSet,
    pods: Vec<Arc<CachedPod>>,
    claims: BTreeMap<String, Arc<PersistentVolumeClaim>>,
    update: &'static str,
    gates: FeatureGates,
    recovery: Option<Duration>,
    update_equivalents: Vec<String>,
    collision_count: i32,
}

/// What [`scenario`] draws besides the set and pods: claim names (and whether each is being
/// deleted), the update revision, the gate, the recovery grace, whether `web-other` is equal
/// to the update revision, and `status.collisionCount`.
type Extras = (
    Vec<(Name, bool)>,
    &'static str,
    bool,
    Option<u64>,
    bool,
    i32,
);

impl Scenario {
    /// Builds the objects of a drawn scenario, pod and claim names resolved against the start.
    fn new(set: SetShape, pods: Vec<PodShape>, extras: Extras) -> Self {
        let (claims, update, gate, recovery, equivalent, collision_count) = extras;
        let start = set.start.unwrap_or(0);
        let resolved: Vec<PodShape> = pods
            .iter()
            .map(|shape| PodShape {
                name: Name::Exact(shape.name.resolve(start)),
                ..shape.clone()
            })
            .collect();
        let claim_names: Vec<(String, bool)> = claims
            .iter()
            .map(|(name, deleting)| (name.resolve(start), *deleting))
            .collect();
        Scenario {
            pods: resolved
                .iter()
                .enumerate()
                .map(|(uid, shape)| build_pod(shape, start, uid))
                .collect(),
            claims: claim_names
                .iter()
                .map(|(name, deleting)| build_claim(name, *deleting))
                .collect(),
            set: build_set(&set),
            shapes: (
                set,
                resolved,
                claim_names
                    .iter()
                    .map(|(name, deleting)| format!("{name} deleting={deleting}"))
                    .collect(),
            ),
            update,
            gates: FeatureGates {
                max_unavailable_statefulset: gate,
            },
            recovery: recovery.map(Duration::from_secs),
            update_equivalents: if equivalent {
                vec!["web-other".to_owned()]
            } else {
                Vec::new()
            },
            collision_count,
        }
    }
}

prop_compose! {
    /// A hostile set, up to five pods, up to two claims, and the sync's other inputs.
    fn scenario()(
        set in set_shape(),
        pods in prop::collection::vec(pod_shape(), 0..6),
        extras in (
            prop::collection::vec((name(), prop::bool::weighted(0.3)), 0..3),
            prop::sample::select(vec![UPDATE, UPDATE, CURRENT]),
            any::<bool>(),
            proptest::option::of(prop::sample::select(vec![0u64, 30])),
            any::<bool>(),
            any::<i32>(),
        ),
    ) -> Scenario {
        Scenario::new(set, pods, extras)
    }
}

/// The shapes and the other inputs, without the built objects' every field.
impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("set", &self.shapes.0)
            .field("pods", &self.shapes.1)
            .field("claims", &self.shapes.2)
            .field("update", &self.update)
            .field("gates", &self.gates)
            .field("recovery", &self.recovery)
            .field("update_equivalents", &self.update_equivalents)
            .finish_non_exhaustive()
    }
}

/// The plan of `scenario`'s sync, both revisions applied to the same set.
fn run(scenario: &Scenario) -> Plan {
    let owner = OwnerReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: SET.into(),
        uid: "set-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    plan(&PlanInput {
        set: &scenario.set,
        revisions: Revisions {
            current: CURRENT,
            update: scenario.update,
            current_set: &scenario.set,
            update_set: &scenario.set,
        },
        collision_count: scenario.collision_count,
        pods: &scenario.pods,
        claims: &scenario.claims,
        controller_ref: &owner,
        now: now(),
        gates: scenario.gates,
        recovery: scenario.recovery,
        update_equivalents: &scenario.update_equivalents,
    })
}

/// The ordinal a planned pod is created at: its pod-index label, read in i64 so that a label
/// past int32 would show rather than fail to parse.
fn created_ordinal(pod: &k8s_openapi::api::core::v1::Pod) -> Option<i64> {
    pod.metadata
        .labels
        .as_ref()?
        .get(POD_INDEX_LABEL)?
        .parse()
        .ok()
}

/// Whether `pod` is one of the input pods (the very object, not a namesake).
fn is_input(scenario: &Scenario, pod: &Arc<CachedPod>) -> bool {
    scenario.pods.iter().any(|input| Arc::ptr_eq(input, pod))
}

/// The bounds every plan keeps, whatever the input.
fn check(scenario: &Scenario, plan: &Plan) -> Result<(), TestCaseError> {
    let set = &scenario.set;
    let range = OrdinalRange::of(set);
    let (start, replicas) = (i64::from(range.start), i64::from(range.replicas));
    let actions: Vec<&PodAction> = plan.phases.iter().flatten().collect();
    if set.metadata.deletion_timestamp.is_some() {
        prop_assert!(
            actions.is_empty(),
            "a set being deleted gets its status only"
        );
    }

    // Creations: inside [start, start + replicas), each ordinal once, never over a pod that
    // holds its slot, named so that the next sync finds the pod at its slot again.
    let held: Vec<i64> = scenario
        .pods
        .iter()
        .map(|pod| i64::from(pod_ordinal(pod)))
        .filter(|ordinal| *ordinal >= 0)
        .collect();
    let mut created: BTreeSet<i64> = BTreeSet::new();
    for action in &actions {
        let PodAction::Create { pod, .. } = action else {
            continue;
        };
        let ordinal = created_ordinal(pod);
        prop_assert!(
            ordinal.is_some_and(|ordinal| ordinal >= start && ordinal < start + replicas),
            "created ordinal {ordinal:?} outside [{start}, {})",
            start + replicas
        );
        let ordinal = ordinal.unwrap_or(-1);
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        prop_assert_eq!(
            parent_and_ordinal(name),
            (SET, i32::try_from(ordinal).unwrap_or(-1)),
            "created {} does not parse back to its ordinal",
            name
        );
        prop_assert!(created.insert(ordinal), "{name} created twice");
        prop_assert!(
            !held.contains(&ordinal),
            "{name} created over an existing pod"
        );
    }
    let created = i64::try_from(created.len()).unwrap_or(i64::MAX);
    prop_assert!(
        created <= replicas,
        "{created} pods created for {replicas} replicas"
    );
    prop_assert!(
        created <= i64::try_from(MAX_CREATES_PER_SYNC).unwrap_or(i64::MAX),
        "{created} pods created in one sync"
    );

    // Deletions: input pods only, each at most once for update and once otherwise (a Parallel
    // sync deletes a finished outdated pod, then the rolling update deletes it again, as
    // upstream's); for update only outdated pods at or above the partition (an index:
    // ordinal - start), none with OnDelete, at most one with the gate off; at most one
    // recovery, of an outdated pod.
    let mut deleted: [Vec<&Arc<CachedPod>>; 3] = Default::default();
    let on_delete = set
        .spec
        .as_ref()
        .and_then(|spec| spec.update_strategy.as_ref())
        .and_then(|strategy| strategy.type_.as_deref())
        == Some("OnDelete");
    for action in &actions {
        let (pod, kind) = match action {
            PodAction::Delete {
                pod,
                for_update: true,
            } => (pod, 0),
            PodAction::Delete {
                pod,
                for_update: false,
            } => (pod, 1),
            PodAction::Recover(stuck) => (&stuck.pod, 2),
            PodAction::Create { .. } | PodAction::Repair { .. } => continue,
        };
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        prop_assert!(
            is_input(scenario, pod),
            "{name} deleted but not an input pod"
        );
        prop_assert!(
            !deleted[kind].iter().any(|other| Arc::ptr_eq(other, pod)),
            "{name} deleted twice ({action:?})"
        );
        deleted[kind].push(pod);
        if kind == 0 {
            prop_assert!(!on_delete, "{name} deleted for update with OnDelete");
            prop_assert!(
                pod_revision(pod) != scenario.update,
                "{name} already updated"
            );
            prop_assert!(!is_terminating(pod), "{name} already terminating");
            let index = i64::from(pod_ordinal(pod)) - start;
            prop_assert!(
                index >= i64::from(partition(set)),
                "{name} (index {index}) below partition {}",
                partition(set)
            );
        }
        if kind == 2 {
            prop_assert!(
                pod_revision(pod) != scenario.update,
                "{name} recovered, updated"
            );
        }
    }
    let [for_update, other_deletes, recovered] = deleted.map(|pods| pods.len());
    let other_deletes = i64::try_from(other_deletes).unwrap_or(i64::MAX);
    prop_assert!(recovered <= 1, "{recovered} pods recovered in one sync");
    if !scenario.gates.max_unavailable_statefulset {
        prop_assert!(
            for_update <= 1,
            "{for_update} updated at once with the gate off"
        );
    }
    // OrderedReady: one pod created or deleted per sync outside the rolling update.
    if is_monotonic(set) {
        prop_assert!(
            created + other_deletes <= 1,
            "ordered: {created} created and {other_deletes} deleted in one sync"
        );
        if let (true, Some(unavailable)) =
            (scenario.gates.max_unavailable_statefulset, plan.unavailable)
        {
            let budget = usize::try_from(max_unavailable(set))
                .unwrap_or(1)
                .saturating_sub(unavailable);
            prop_assert!(
                for_update <= budget,
                "ordered: {for_update} updated, budget {budget}"
            );
        }
    }
    prop_assert!(
        max_unavailable(set) >= 1,
        "maxUnavailable {}",
        max_unavailable(set)
    );

    // Status: counts of the input pods; the unavailable gauge counts slots.
    let status = &plan.status;
    let counted = |count: Option<i32>| i64::from(count.unwrap_or(0));
    let pods = i64::try_from(scenario.pods.len()).unwrap_or(i64::MAX);
    prop_assert!(
        (0..=pods).contains(&i64::from(status.replicas)),
        "{status:?}"
    );
    prop_assert!(
        counted(status.ready_replicas) <= i64::from(status.replicas),
        "{status:?}"
    );
    prop_assert!(
        counted(status.available_replicas) <= counted(status.ready_replicas),
        "{status:?}"
    );
    for count in [status.current_replicas, status.updated_replicas] {
        prop_assert!(
            (0..=i64::from(status.replicas)).contains(&counted(count)),
            "{status:?}"
        );
    }
    if let Some(unavailable) = plan.unavailable {
        let unavailable = i64::try_from(unavailable).unwrap_or(i64::MAX);
        prop_assert!(
            unavailable <= replicas,
            "{unavailable} unavailable of {replicas}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn plans_stay_within_the_sets_ordinals(scenario in scenario()) {
        let plan = run(&scenario);
        check(&scenario, &plan)?;
        // The rest of a sync's pure steps take the same hostile input.
        let mut status = plan.status.clone();
        complete_rolling_update(&scenario.set, &mut status);
        let _ = status_needs_write(scenario.set.status.as_ref(), &status);
        let _ = availability_recheck(&scenario.set, &status, &scenario.pods, now(), now());
    }
}

/// A set of `replicas` from ordinal `start` with the given `podManagementPolicy`, a rolling
/// update from partition 0 and nothing else hostile.
fn plain_set(replicas: i32, start: i32, policy: &str) -> SetShape {
    SetShape {
        replicas: Some(replicas),
        start: Some(start),
        policy: Some(policy.to_owned()),
        strategy: Some("RollingUpdate".to_owned()),
        rolling_update: Some((Some(0), None)),
        min_ready_seconds: None,
        status_current_replicas: None,
        claims: None,
        deleting: false,
    }
}

/// `set` with Running, Ready, updated pods of these names, and no claims.
fn scenario_of(set: SetShape, pod_names: &[&str], gate: bool) -> Scenario {
    let pods = pod_names
        .iter()
        .map(|name| PodShape {
            name: Name::Exact((*name).to_owned()),
            phase: Some("Running"),
            ready: true,
            since: Some(3_600),
            terminating: false,
            revision: UPDATE,
        })
        .collect();
    Scenario::new(set, pods, (Vec::new(), UPDATE, gate, None, false, 0))
}

/// The names of the pods a plan creates, in order.
fn created(plan: &Plan) -> Vec<String> {
    plan.phases
        .iter()
        .flatten()
        .filter_map(|action| match action {
            PodAction::Create { pod, .. } => pod.metadata.name.clone(),
            _ => None,
        })
        .collect()
}

/// Inputs the properties found panicking (int32 overflow of `start + index`), or building a
/// pod named after an ordinal no sync parses back (`web-2147483648`, `web--1`), and what the
/// plan does with them now: slots whose ordinal no pod can carry stay empty and, like a slot
/// held back by a stale claim, stop an ordered pass.
#[test]
fn hostile_ordinal_ranges() {
    // (case, set, pods, the pods created)
    let cases: [(&str, SetShape, &[&str], &[&str]); 7] = [
        (
            "start 2147483647, replicas 2, ordered: add overflowed",
            plain_set(2, i32::MAX, "OrderedReady"),
            &[],
            &["web-2147483647"],
        ),
        (
            "start 2147483647, replicas 2, parallel: add overflowed",
            plain_set(2, i32::MAX, "Parallel"),
            &[],
            &["web-2147483647"],
        ),
        (
            "start 2147483647, replicas 2, slot 0 ready: slot 1 has no ordinal, waits",
            plain_set(2, i32::MAX, "OrderedReady"),
            &["web-2147483647"],
            &[],
        ),
        (
            "start -1, replicas 2, ordered: no web--1, waits",
            plain_set(2, -1, "OrderedReady"),
            &[],
            &[],
        ),
        (
            "start -1, replicas 3, parallel: ordinals from 0",
            plain_set(3, -1, "Parallel"),
            &[],
            &["web-0", "web-1"],
        ),
        (
            "start -1: a pod without an ordinal does not fill slot -1",
            plain_set(3, -1, "Parallel"),
            &["web"],
            &["web-0", "web-1"],
        ),
        (
            "replicas 2147483647, ordered: one slot at a time, none allocated per replica",
            plain_set(i32::MAX, 0, "OrderedReady"),
            &["web-0"],
            &["web-1"],
        ),
    ];
    for (case, set, pods, want) in cases {
        for gate in [false, true] {
            let scenario = scenario_of(set.clone(), pods, gate);
            let plan = run(&scenario);
            assert_eq!(created(&plan), want, "{case} (gate {gate})");
            if let Err(error) = check(&scenario, &plan) {
                panic!("{case} (gate {gate}): {error}");
            }
        }
    }
}

/// `replicas: 2147483647` made the plan allocate a slot per replica (tens of GiB) and build
/// a pod for each; a Parallel set now creates [`MAX_CREATES_PER_SYNC`] pods, from ordinal
/// `start` up, and still counts every empty slot as unavailable.
#[test]
fn a_parallel_set_of_i32_max_replicas_creates_a_bounded_batch() {
    for start in [0, 7] {
        let scenario = scenario_of(plain_set(i32::MAX, start, "Parallel"), &[], true);
        let plan = run(&scenario);
        let created = created(&plan);
        assert_eq!(created.len(), MAX_CREATES_PER_SYNC, "start {start}");
        assert_eq!(created.first(), Some(&format!("web-{start}")));
        let last = i64::from(start) + i64::try_from(MAX_CREATES_PER_SYNC).unwrap() - 1;
        assert_eq!(created.last(), Some(&format!("web-{last}")));
        assert_eq!(plan.unavailable, usize::try_from(i32::MAX).ok());
        check(&scenario, &plan).unwrap();
    }
}

/// `rollingUpdate.maxUnavailable` percentages whose product with `spec.replicas` overflowed
/// i64, and the budget they resolve to now (at least 1, at most `i32::MAX`).
#[test]
fn hostile_max_unavailable_percentages() {
    // (replicas, maxUnavailable, resolved)
    let cases = [
        (3, "3100000000000000000%", i32::MAX),
        (i32::MAX, "99999999999%", i32::MAX),
        (i32::MAX, "-99999999999%", 1),
        (i32::MAX, "50%", 1_073_741_823),
        (10, "25%", 2),
        (10, "-5%", 1),
        (10, "abc%", 1),
    ];
    for (replicas, percent, want) in cases {
        let mut set = plain_set(replicas, 0, "Parallel");
        set.rolling_update = Some((Some(0), Some(IntOrString::String(percent.to_owned()))));
        assert_eq!(
            max_unavailable(&build_set(&set)),
            want,
            "{percent} of {replicas}"
        );
    }
}
