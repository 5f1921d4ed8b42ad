//! Table tests of the plan and the status (statefulset.md §6, §9, §10).

use std::{collections::BTreeMap, sync::Arc};

use informer::CompactLabels;
use k8s_openapi::{
    api::{
        apps::v1::{StatefulSet, StatefulSetStatus},
        core::v1::{PersistentVolumeClaim, Pod},
    },
    apimachinery::pkg::apis::meta::v1::OwnerReference,
    jiff::{Timestamp, ToSpan},
};
use serde_json::{Value, json};

use super::*;

use crate::identity::pod_revision;

const CURRENT: &str = "web-old";
const UPDATE: &str = "web-new";

fn now() -> Timestamp {
    "2026-11-22T08:00:00Z".parse().unwrap()
}

fn set(replicas: i32, extra_spec: Value) -> StatefulSet {
    let mut value = json!({
        "metadata": {"name": "web", "namespace": "default", "uid": "set-uid", "generation": 4},
        "spec": {
            "replicas": replicas,
            "serviceName": "web",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
        }
    });
    for (key, field) in extra_spec.as_object().cloned().unwrap_or_default() {
        value["spec"][key] = field;
    }
    serde_json::from_value(value).unwrap()
}

/// A pod of `web`: `state` is one of "ready", "running" (not ready), "pending", "failed",
/// "succeeded", "terminating"; `revision` its revision label.
fn pod(ordinal: i32, state: &str, revision: &str) -> Arc<CachedPod> {
    let phase = match state {
        "pending" => "Pending",
        "failed" => "Failed",
        "succeeded" => "Succeeded",
        _ => "Running",
    };
    let ready = matches!(state, "ready" | "terminating" | "fresh");
    let ready_since = if state == "fresh" {
        now() - 2.seconds()
    } else {
        now() - 1.hour()
    };
    let mut value = json!({
        "metadata": {
            "name": format!("web-{ordinal}"), "namespace": "default", "uid": format!("uid-{ordinal}"),
            "labels": {"app": "web", "controller-revision-hash": revision,
                       "statefulset.kubernetes.io/pod-name": format!("web-{ordinal}"),
                       "apps.kubernetes.io/pod-index": ordinal.to_string()}
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                                                   "lastTransitionTime": ready_since.to_string()}]}
    });
    if state == "terminating" {
        value["metadata"]["deletionTimestamp"] = json!(now().to_string());
    }
    Arc::new(serde_json::from_value(value).unwrap())
}

/// Pods `web-0`, `web-1`, … with the given (state, revision) pairs (see [`pod`]).
fn pods_from_zero(states: &[(&str, &str)]) -> Vec<Arc<CachedPod>> {
    (0..)
        .zip(states)
        .map(|(ordinal, (state, revision))| pod(ordinal, state, revision))
        .collect()
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: "web".into(),
        uid: "set-uid".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The plan with upstream v1.36's default gates.
fn run(
    set: &StatefulSet,
    pods: &[Arc<CachedPod>],
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> Plan {
    run_with(set, pods, claims, FeatureGates::default())
}

fn run_with(
    set: &StatefulSet,
    pods: &[Arc<CachedPod>],
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
    gates: FeatureGates,
) -> Plan {
    run_recovering(set, pods, claims, gates, (None, &[]))
}

/// The plan with broken-rollout recovery at `recovery` grace (`None`: off) and the names of
/// the revisions equal in content to the update revision.
fn run_recovering(
    set: &StatefulSet,
    pods: &[Arc<CachedPod>],
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
    gates: FeatureGates,
    (recovery, update_equivalents): (Option<Duration>, &[String]),
) -> Plan {
    let owner = owner();
    plan(&PlanInput {
        set,
        revisions: Revisions {
            current: CURRENT,
            update: UPDATE,
            current_set: set,
            update_set: set,
        },
        collision_count: 0,
        pods,
        claims,
        controller_ref: &owner,
        now: now(),
        gates,
        recovery,
        update_equivalents,
    })
}

/// The plan as readable steps, e.g. `create web-0@web-new`, `delete web-2`, `update web-1`.
fn steps(plan: &Plan) -> Vec<String> {
    plan.phases
        .iter()
        .flatten()
        .map(|action| match action {
            PodAction::Create { pod, claims } => format!(
                "create {}@{}{}",
                pod.metadata.name.as_deref().unwrap(),
                pod_revision(&CachedPod::from(pod.as_ref())),
                claim_count(" +", claims.len())
            ),
            PodAction::Repair {
                pod,
                updated,
                claims,
            } => format!(
                "repair {}{}{}",
                pod.metadata.name.as_deref().unwrap(),
                if updated.is_some() { " pod" } else { "" },
                claim_count(" ", claims.len())
            ),
            PodAction::Delete {
                pod,
                for_update: true,
            } => format!("update {}", pod.metadata.name.as_deref().unwrap()),
            PodAction::Delete {
                pod,
                for_update: false,
            } => format!("delete {}", pod.metadata.name.as_deref().unwrap()),
            PodAction::Recover(stuck) => {
                format!("recover {}", stuck.pod.metadata.name.as_deref().unwrap())
            }
        })
        .collect()
}

/// `<prefix>N claims` for a step with N claims, nothing for one without ([`steps`] writes
/// ` +N claims` after a create and ` N claims` after a repair).
fn claim_count(prefix: &str, count: usize) -> String {
    if count == 0 {
        String::new()
    } else {
        format!("{prefix}{count} claims")
    }
}

#[test]
fn plans() {
    let parallel = json!({"podManagementPolicy": "Parallel"});
    // (case, set, pods, the plan's steps)
    #[rustfmt::skip]
    let cases = [
        ("ordered: create the first missing ordinal only", set(3, json!({})), vec![], vec!["create web-0@web-new"]),
        ("ordered: wait for an unready predecessor", set(3, json!({})), vec![pod(0, "running", UPDATE)], vec![]),
        ("ordered: wait for minReadySeconds", set(3, json!({"minReadySeconds": 10})), vec![pod(0, "fresh", UPDATE)], vec![]),
        ("ordered: next ordinal once the previous is ready", set(3, json!({})), vec![pod(0, "ready", UPDATE)], vec!["create web-1@web-new"]),
        ("ordered: a gap is filled before anything else", set(3, json!({})), vec![pod(0, "ready", UPDATE), pod(2, "ready", UPDATE)], vec!["create web-1@web-new"]),
        ("parallel: create every missing ordinal at once", set(3, parallel.clone()), vec![pod(1, "running", UPDATE)], vec!["create web-0@web-new", "create web-2@web-new"]),
        ("failed pod is deleted (recreated on a later sync)", set(2, json!({})), pods_from_zero(&[("failed", UPDATE), ("ready", UPDATE)]), vec!["delete web-0"]),
        ("succeeded pod is deleted too", set(1, json!({})), vec![pod(0, "succeeded", UPDATE)], vec!["delete web-0"]),
        ("ordered scale-down: highest ordinal first, one at a time", set(1, json!({})), pods_from_zero(&[("ready", UPDATE), ("ready", UPDATE), ("ready", UPDATE)]), vec!["delete web-2"]),
        ("ordered scale-down waits for a terminating pod", set(1, json!({})), pods_from_zero(&[("ready", UPDATE), ("ready", UPDATE), ("terminating", UPDATE)]), vec![]),
        ("ordered scale-down deletes the first unavailable condemned pod", set(1, json!({})), pods_from_zero(&[("ready", UPDATE), ("ready", UPDATE), ("running", UPDATE)]), vec!["delete web-2"]),
        ("ordered scale-down waits when an unhealthy pod is not the first unavailable", set(1, json!({})), pods_from_zero(&[("ready", UPDATE), ("running", UPDATE), ("running", UPDATE)]), vec![]),
        ("parallel scale-down deletes all condemned pods", set(1, parallel.clone()), pods_from_zero(&[("ready", UPDATE), ("running", UPDATE), ("ready", UPDATE)]), vec!["delete web-2", "delete web-1"]),
        ("rolling update: highest outdated ordinal first", set(3, json!({})), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", CURRENT)]), vec!["update web-2"]),
        ("rolling update: skips updated pods", set(3, json!({})), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", UPDATE)]), vec!["update web-1"]),
        ("rolling update: a missing pod is recreated at the update revision first", set(3, json!({})), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT)]), vec!["create web-2@web-new"]),
        ("rolling update: partition protects lower ordinals", set(3, json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}})), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", UPDATE)]), vec![]),
        ("rolling update: below the partition a new pod gets the current revision", set(3, json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}})), vec![pod(1, "ready", CURRENT), pod(2, "ready", UPDATE)], vec!["create web-0@web-old"]),
        ("OnDelete: nothing is replaced", set(3, json!({"updateStrategy": {"type": "OnDelete"}})), (0..3).map(|o| pod(o, "ready", CURRENT)).collect(), vec![]),
        ("OnDelete: a deleted pod comes back at the update revision", set(3, json!({"updateStrategy": {"type": "OnDelete"}})), vec![pod(0, "ready", CURRENT), pod(2, "ready", CURRENT)], vec!["create web-1@web-new"]),
        ("ordinals.start: ordinals below start are condemned", set(2, json!({"ordinals": {"start": 5}})), vec![pod(0, "ready", UPDATE)], vec!["create web-5@web-new"]),
        ("ordinals.start: in range and settled", set(2, json!({"ordinals": {"start": 5}})), vec![pod(0, "ready", UPDATE), pod(5, "ready", UPDATE), pod(6, "ready", UPDATE)], vec!["delete web-0"]),
    ];
    for (name, set, pods, want) in cases {
        assert_eq!(steps(&run(&set, &pods, &BTreeMap::new())), want, "{name}");
    }
}

/// Step 14 both ways of the `MaxUnavailableStatefulSet` gate (§6.3 on, §6.4 off): off, the
/// v1.36 default (kubernetes#137904), one outdated pod goes per sync whatever
/// `maxUnavailable` and the policy say, and only an unavailable pod at or above the target
/// blocks.
#[test]
fn rolling_update_by_max_unavailable_gate() {
    let strategy = |rolling_update: Value, extra: Value| {
        let mut spec =
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update}});
        for (key, field) in extra.as_object().cloned().unwrap_or_default() {
            spec[key] = field;
        }
        spec
    };
    let parallel = || json!({"podManagementPolicy": "Parallel"});
    let max_unavailable_2 = |extra: Value| set(4, strategy(json!({"maxUnavailable": 2}), extra));
    // (case, set, pods, the plan's steps with the gate off, with the gate on)
    #[rustfmt::skip]
    let cases = [
        ("OrderedReady, maxUnavailable 2: one pod per sync with the gate off", max_unavailable_2(json!({})), (0..4).map(|o| pod(o, "ready", CURRENT)).collect(), vec!["update web-3"], vec!["update web-3", "update web-2"]),
        ("Parallel, maxUnavailable 2: one pod per sync with the gate off", max_unavailable_2(parallel()), (0..4).map(|o| pod(o, "ready", CURRENT)).collect(), vec!["update web-3"], vec!["update web-3", "update web-2"]),
        ("maxUnavailable 2 with an updated pod down: it blocks with the gate off", max_unavailable_2(parallel()), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", CURRENT), ("running", UPDATE)]), vec![], vec!["update web-2"]),
        ("Parallel, a broken old pod at ordinal 0: the highest outdated pod still goes", set(3, parallel()), pods_from_zero(&[("running", CURRENT), ("ready", CURRENT), ("ready", CURRENT)]), vec!["update web-2"], vec!["update web-0"]),
        ("Parallel: unavailable outdated pods go regardless of budget only with the gate on", set(3, parallel()), pods_from_zero(&[("running", CURRENT), ("running", CURRENT), ("ready", CURRENT)]), vec!["update web-2"], vec!["update web-1", "update web-0"]),
        ("an updated pod not yet available (minReadySeconds) blocks the next deletion", set(3, strategy(json!({"maxUnavailable": 2}), json!({"podManagementPolicy": "Parallel", "minReadySeconds": 10}))), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("fresh", UPDATE)]), vec![], vec!["update web-1"]),
        ("an unavailable updated pod below the target does not block with the gate off", set(3, parallel()), pods_from_zero(&[("running", UPDATE), ("ready", CURRENT), ("ready", CURRENT)]), vec!["update web-2"], vec![]),
        ("a terminating pod at the top is waited for", set(3, parallel()), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("terminating", CURRENT)]), vec![], vec![]),
        ("Parallel: a pod created this sync is unavailable and stops the loop", max_unavailable_2(parallel()), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", CURRENT)]), vec!["create web-3@web-new"], vec!["create web-3@web-new", "update web-2"]),
        ("partition: ordinals below it are never replaced", set(3, strategy(json!({"partition": 1, "maxUnavailable": 3}), json!({}))), (0..3).map(|o| pod(o, "ready", CURRENT)).collect(), vec!["update web-2"], vec!["update web-2", "update web-1"]),
        ("partition: nothing left above it", set(3, strategy(json!({"partition": 2}), json!({}))), pods_from_zero(&[("ready", CURRENT), ("ready", CURRENT), ("ready", UPDATE)]), vec![], vec![]),
        ("OnDelete: nothing is replaced either way", set(3, json!({"updateStrategy": {"type": "OnDelete"}})), (0..3).map(|o| pod(o, "ready", CURRENT)).collect(), vec![], vec![]),
    ];
    let on = FeatureGates {
        max_unavailable_statefulset: true,
    };
    for (name, set, pods, gate_off, gate_on) in cases {
        let claims = BTreeMap::new();
        let off = run(&set, &pods, &claims);
        assert_eq!(steps(&off), gate_off, "gate off: {name}");
        let plan_on = run_with(&set, &pods, &claims, on);
        assert_eq!(steps(&plan_on), gate_on, "gate on: {name}");
        assert_eq!(off.status, plan_on.status, "status either way: {name}");
    }
}

#[test]
fn unavailable_gauge_is_reported_only_with_the_gate_on() {
    let set = set(3, json!({}));
    let pods = [pod(0, "ready", CURRENT), pod(1, "running", CURRENT)];
    let claims = BTreeMap::new();
    assert_eq!(run(&set, &pods, &claims).unavailable, None);
    let on = FeatureGates {
        max_unavailable_statefulset: true,
    };
    assert_eq!(
        run_with(&set, &pods, &claims, on).unavailable,
        Some(2),
        "web-1 not ready, web-2 missing"
    );
}

/// Step 7 of `sync` (kubernetes#135428): the requeue waits for the first ready pod to turn
/// available, measured after the status write, not the full `minReadySeconds`.
#[test]
fn availability_recheck_at_the_first_pod_turning_available() {
    let min_ready_10 = set(3, json!({"minReadySeconds": 10}));
    let pods = [
        pod(0, "ready", UPDATE),
        pod(1, "fresh", UPDATE),
        pod(2, "running", UPDATE),
    ];
    let status = count_replicas(pods.iter().map(AsRef::as_ref), (CURRENT, UPDATE), 10, now());
    assert_eq!(
        (status.ready_replicas, status.available_replicas),
        (Some(2), Some(1))
    );
    // web-1 has been ready for 2 s of 10; half a second went by writing the status.
    let after_write = now() + 500.milliseconds();
    assert_eq!(
        availability_recheck(&min_ready_10, &status, &pods, now(), after_write),
        Some(Duration::from_millis(7_500))
    );
    let settled = count_replicas(
        pods[..1].iter().map(AsRef::as_ref),
        (CURRENT, UPDATE),
        10,
        now(),
    );
    assert_eq!(
        availability_recheck(&min_ready_10, &settled, &pods[..1], now(), after_write),
        None
    );
    let without_min_ready = set(3, json!({}));
    assert_eq!(
        availability_recheck(&without_min_ready, &status, &pods, now(), after_write),
        None
    );
}

#[test]
fn a_set_being_deleted_only_gets_a_status() {
    let mut deleted = set(3, json!({}));
    deleted.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    let plan = run(&deleted, &[pod(0, "ready", UPDATE)], &BTreeMap::new());
    assert!(plan.phases.is_empty());
    assert_eq!(plan.status.replicas, 1);
}

#[test]
fn identity_drift_is_repaired_in_place() {
    let mut drifted = pod(0, "ready", UPDATE).as_ref().clone();
    let mut labels = drifted.metadata.labels.to_map();
    labels.remove("statefulset.kubernetes.io/pod-name");
    drifted.metadata.labels = CompactLabels::from(&labels);
    let plan = run(&set(1, json!({})), &[Arc::new(drifted)], &BTreeMap::new());
    assert_eq!(steps(&plan), vec!["repair web-0 pod"]);
    let PodAction::Repair {
        updated: Some(updated),
        ..
    } = &plan.phases[0][0]
    else {
        panic!("expected a repair");
    };
    assert_eq!(
        updated.metadata.labels.as_ref().unwrap()["statefulset.kubernetes.io/pod-name"],
        "web-0"
    );
}

/// One replica with a claim template `data` whose claims are deleted on scale-down.
fn set_with_claims() -> StatefulSet {
    set(
        1,
        json!({
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}
        }),
    )
}

#[test]
fn claims_are_created_with_the_pod_and_stale_claims_block_it() {
    let set = set_with_claims();
    assert_eq!(
        steps(&run(&set, &[], &BTreeMap::new())),
        vec!["create web-0@web-new +1 claims"]
    );
    let stale: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data-web-0", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "gone", "controller": true}]}
    }))
    .unwrap();
    let claims = BTreeMap::from([("data-web-0".to_owned(), Arc::new(stale))]);
    assert_eq!(steps(&run(&set, &[], &claims)), Vec::<String>::new());
}

#[test]
fn condemned_claims_get_the_pod_as_owner_before_the_pod_goes() {
    let set = set_with_claims();
    let mut pods = Vec::new();
    let mut claims = BTreeMap::new();
    for ordinal in 0..2 {
        let mut mounted = Pod::default();
        crate::identity::set_storage(&set, &mut mounted, ordinal);
        let mut with_volume = pod(ordinal, "ready", UPDATE).as_ref().clone();
        with_volume.spec = CachedPod::from(&mounted).spec;
        pods.push(Arc::new(with_volume));
        let claim: PersistentVolumeClaim =
            serde_json::from_value(json!({"metadata": {"name": format!("data-web-{ordinal}")}}))
                .unwrap();
        claims.insert(format!("data-web-{ordinal}"), Arc::new(claim));
    }
    assert_eq!(
        steps(&run(&set, &pods, &claims)),
        vec!["repair web-1 1 claims", "delete web-1"]
    );
}

#[test]
fn status_counts_pods() {
    let pods = [
        pod(0, "ready", CURRENT),
        pod(1, "fresh", UPDATE),
        pod(2, "running", UPDATE),
        pod(3, "terminating", UPDATE),
        pod(4, "pending", CURRENT),
    ];
    let status = count_replicas(pods.iter().map(AsRef::as_ref), (CURRENT, UPDATE), 10, now());
    assert_eq!(status.replicas, 5);
    assert_eq!(
        status.ready_replicas,
        Some(3),
        "running and ready, terminating included"
    );
    assert_eq!(
        status.available_replicas,
        Some(2),
        "web-1 is ready for only 2s of 10"
    );
    assert_eq!(status.current_replicas, Some(2));
    assert_eq!(
        status.updated_replicas,
        Some(2),
        "terminating pods are not counted as updated"
    );
}

#[test]
fn plan_status_carries_revisions_generation_and_collision_count() {
    let set = set(2, json!({}));
    let plan = run(&set, &[pod(0, "ready", CURRENT)], &BTreeMap::new());
    assert_eq!(plan.status.observed_generation, Some(4));
    assert_eq!(plan.status.current_revision.as_deref(), Some(CURRENT));
    assert_eq!(plan.status.update_revision.as_deref(), Some(UPDATE));
    assert_eq!(plan.status.collision_count, Some(0));
    assert_eq!(plan.status.replicas, 1, "the in-memory pod is not counted");
}

#[test]
fn rolling_update_completes_when_everything_is_updated_and_ready() {
    let status = |replicas, ready, updated| StatefulSetStatus {
        replicas,
        ready_replicas: Some(ready),
        updated_replicas: Some(updated),
        current_replicas: Some(replicas - updated),
        current_revision: Some(CURRENT.into()),
        update_revision: Some(UPDATE.into()),
        ..StatefulSetStatus::default()
    };
    let wants = |replicas| set(replicas, json!({}));
    let on_delete = || set(3, json!({"updateStrategy": {"type": "OnDelete"}}));
    // (case, set, status, whether the update completes): OnDelete never completes.
    let cases = [
        ("all updated and ready", wants(3), status(3, 3, 3), true),
        ("one not ready", wants(3), status(3, 2, 3), false),
        ("one not updated", wants(3), status(3, 3, 2), false),
        ("fewer than wanted", wants(4), status(3, 3, 3), false),
        ("OnDelete", on_delete(), status(3, 3, 3), false),
    ];
    for (name, set, mut status, completes) in cases {
        let before = status.clone();
        complete_rolling_update(&set, &mut status);
        if completes {
            assert_eq!(status.current_revision.as_deref(), Some(UPDATE), "{name}");
            assert_eq!(status.current_replicas, Some(status.replicas), "{name}");
        } else {
            assert_eq!(status, before, "{name}: unchanged");
        }
    }
}

#[test]
fn status_is_written_only_when_a_watched_field_changes() {
    let stored = StatefulSetStatus {
        observed_generation: Some(3),
        replicas: 2,
        ready_replicas: Some(2),
        current_replicas: Some(2),
        updated_replicas: Some(2),
        available_replicas: Some(2),
        current_revision: Some(CURRENT.into()),
        update_revision: Some(CURRENT.into()),
        collision_count: Some(0),
        conditions: None,
    };
    let mut only_collisions = stored.clone();
    only_collisions.collision_count = Some(1);
    let mut ready = stored.clone();
    ready.ready_replicas = Some(1);
    let mut older_generation = stored.clone();
    older_generation.observed_generation = Some(2);
    let mut revision = stored.clone();
    revision.update_revision = Some(UPDATE.into());
    assert!(!status_needs_write(Some(&stored), &stored));
    assert!(!status_needs_write(Some(&stored), &only_collisions));
    assert!(!status_needs_write(Some(&stored), &older_generation));
    assert!(status_needs_write(Some(&stored), &ready));
    assert!(status_needs_write(Some(&stored), &revision));
    assert!(status_needs_write(None, &stored));
}

#[test]
fn max_unavailable_resolution() {
    let with = |value: Value| {
        set(
            5,
            json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": value}}}),
        )
    };
    assert_eq!(max_unavailable(&set(5, json!({}))), 1);
    assert_eq!(max_unavailable(&with(json!(3))), 3);
    assert_eq!(max_unavailable(&with(json!(0))), 1);
    assert_eq!(max_unavailable(&with(json!("50%"))), 2);
    assert_eq!(max_unavailable(&with(json!("10%"))), 1);
    assert_eq!(max_unavailable(&with(json!("100%"))), 5);
}

#[test]
fn revision_of_a_new_pod() {
    let partitioned = set(
        5,
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 3}}}),
    );
    assert!(uses_current_revision(&partitioned, 2));
    assert!(!uses_current_revision(&partitioned, 3));
    let mut unset = set(5, json!({"updateStrategy": {"type": "RollingUpdate"}}));
    unset.status = Some(StatefulSetStatus {
        current_replicas: Some(2),
        ..StatefulSetStatus::default()
    });
    assert!(uses_current_revision(&unset, 1));
    assert!(!uses_current_revision(&unset, 2));
    let on_delete = set(5, json!({"updateStrategy": {"type": "OnDelete"}}));
    assert!(!uses_current_revision(&on_delete, 0));
    let started = set(
        5,
        json!({"ordinals": {"start": 10}, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}}),
    );
    assert!(uses_current_revision(&started, 11));
    assert!(!uses_current_revision(&started, 12));
}

/// The recovery grace the tests run with.
const GRACE: Duration = Duration::from_secs(30);
/// The broken revision a stuck pod is at (neither current nor update).
const BROKEN: &str = "web-broken";

/// A running, not Ready pod of `web` at `revision`, created `created_ago` before `now()`, whose
/// Ready condition turned False `not_ready_ago` before `now()`.
fn not_ready(
    ordinal: i32,
    revision: &str,
    created_ago: std::time::Duration,
    not_ready_ago: std::time::Duration,
) -> Arc<CachedPod> {
    let at = |ago: std::time::Duration| (now() - ago).to_string();
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {
                "name": format!("web-{ordinal}"), "namespace": "default", "uid": format!("uid-{ordinal}"),
                "creationTimestamp": at(created_ago),
                "labels": {"app": "web", "controller-revision-hash": revision,
                           "statefulset.kubernetes.io/pod-name": format!("web-{ordinal}"),
                           "apps.kubernetes.io/pod-index": ordinal.to_string()}
            },
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False",
                                                           "lastTransitionTime": at(not_ready_ago)}]}
        }))
        .unwrap(),
    )
}

/// `web-0` and `web-1` Ready at the update revision and `web-2` as given.
fn with_third(third: Arc<CachedPod>) -> Vec<Arc<CachedPod>> {
    vec![pod(0, "ready", UPDATE), pod(1, "ready", UPDATE), third]
}

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// The stuck rule (kcm-rs only, kubernetes#67250): each condition flipped on its own, the
/// timing boundary, the budget and one at a time, through the whole plan.
#[test]
fn broken_rollout_recovery_deletes_only_a_stuck_pod() {
    struct Case {
        name: &'static str,
        set: StatefulSet,
        pods: Vec<Arc<CachedPod>>,
        gates: FeatureGates,
        equivalents: Vec<String>,
        want: Vec<&'static str>,
        recheck: Option<Duration>,
    }
    let stuck = || not_ready(2, BROKEN, secs(3600), secs(31));
    let ordered = || set(3, json!({}));
    let case = |name, set, pods, want| Case {
        name,
        set,
        pods,
        gates: FeatureGates::default(),
        equivalents: Vec::new(),
        want,
        recheck: None,
    };
    let rolling = |rolling_update: Value| json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update}});
    let gate_on = FeatureGates {
        max_unavailable_statefulset: true,
    };
    #[rustfmt::skip]
    let cases = vec![
        case("stuck at an outdated revision past the grace: deleted", ordered(), with_third(stuck()), vec!["recover web-2"]),
        case("OnDelete: left to the user", set(3, json!({"updateStrategy": {"type": "OnDelete"}})), with_third(stuck()), vec![]),
        case("below the partition: left alone", set(3, rolling(json!({"partition": 3}))), with_third(stuck()), vec![]),
        case("at the partition: deleted", set(3, rolling(json!({"partition": 2}))), with_third(stuck()), vec!["recover web-2"]),
        case("at the update revision: a broken new template is the user's to fix", ordered(), with_third(not_ready(2, UPDATE, secs(3600), secs(3600))), vec![]),
        Case {
            equivalents: vec![BROKEN.to_owned()],
            ..case(
                "at a revision equal in content to the update revision: left alone",
                ordered(),
                with_third(stuck()),
                vec![],
            )
        },
        case("at the current revision: deleted too", ordered(), with_third(not_ready(2, CURRENT, secs(3600), secs(31))), vec!["recover web-2"]),
        case("Ready at an outdated revision: replaced by the rolling update, not recovered", ordered(), with_third(pod(2, "ready", BROKEN)), vec!["update web-2"]),
        case("terminating: left to finish", ordered(), with_third({ let mut pod = Arc::unwrap_or_clone(stuck()); pod.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now())); Arc::new(pod) }), vec![]),
        case("another pod of the set terminating (a condemned one): none", ordered(), vec![pod(0, "ready", UPDATE), pod(1, "ready", UPDATE), stuck(), pod(3, "terminating", UPDATE)], vec![]),
        case("failed: recreated by the ordered pass, not by the rule", ordered(), with_third(pod(2, "failed", BROKEN)), vec!["delete web-2"]),
        Case {
            recheck: Some(Duration::from_millis(1)),
            ..case(
                "one millisecond short of the grace: waits and looks again then",
                ordered(),
                with_third(not_ready(
                    2,
                    BROKEN,
                    secs(3600),
                    secs(30) - Duration::from_millis(1),
                )),
                vec![],
            )
        },
        case("exactly the grace: deleted (inclusive)", ordered(), with_third(not_ready(2, BROKEN, secs(3600), secs(30))), vec!["recover web-2"]),
        Case {
            recheck: Some(secs(20)),
            ..case(
                "created later than its last Ready transition: timed from its creation",
                ordered(),
                with_third(not_ready(2, BROKEN, secs(10), secs(3600))),
                vec![],
            )
        },
        Case {
            recheck: Some(secs(5)),
            ..case(
                "minReadySeconds adds to the grace",
                set(3, json!({"minReadySeconds": 10})),
                with_third(not_ready(2, BROKEN, secs(3600), secs(35))),
                vec![],
            )
        },
        case("minReadySeconds plus the grace elapsed: deleted", set(3, json!({"minReadySeconds": 10})), with_third(not_ready(2, BROKEN, secs(3600), secs(40))), vec!["recover web-2"]),
        case("another replica unavailable: over the budget of one, waits", ordered(), vec![pod(0, "ready", UPDATE), pod(1, "running", UPDATE), stuck()], vec![]),
        case("a missing replica is unavailable too: it is created, the stuck pod waits", ordered(), vec![pod(0, "ready", UPDATE), stuck()], vec!["create web-1@web-new"]),
        case("two stuck pods with the gate off: over the budget of one, none", ordered(), vec![pod(0, "ready", UPDATE), not_ready(1, BROKEN, secs(3600), secs(60)), stuck()], vec![]),
        Case {
            gates: gate_on,
            ..case(
                "two stuck pods within maxUnavailable 2 (gate on): one at a time, lowest first",
                set(3, rolling(json!({"maxUnavailable": 2}))),
                vec![
                    pod(0, "ready", UPDATE),
                    not_ready(1, BROKEN, secs(3600), secs(60)),
                    stuck(),
                ],
                vec!["recover web-1"],
            )
        },
        Case {
            gates: gate_on,
            ..case(
                "maxUnavailable 2 (gate on): a stuck pod beside an unavailable one is deleted",
                set(3, rolling(json!({"maxUnavailable": 2}))),
                vec![pod(0, "ready", UPDATE), pod(1, "running", UPDATE), stuck()],
                vec!["recover web-2"],
            )
        },
    ];
    for case in cases {
        let plan = run_recovering(
            &case.set,
            &case.pods,
            &BTreeMap::new(),
            case.gates,
            (Some(GRACE), &case.equivalents),
        );
        assert_eq!(steps(&plan), case.want, "{}", case.name);
        assert_eq!(
            plan.recovery_recheck, case.recheck,
            "recheck: {}",
            case.name
        );
        let upstream = run_recovering(
            &case.set,
            &case.pods,
            &BTreeMap::new(),
            case.gates,
            (None, &[]),
        );
        let without: Vec<String> = steps(&plan)
            .into_iter()
            .filter(|step| !step.starts_with("recover"))
            .collect();
        assert_eq!(
            without,
            steps(&upstream),
            "the rest as upstream: {}",
            case.name
        );
        assert_eq!(upstream.recovery_recheck, None, "off: {}", case.name);
    }
}

/// The stuck rule alone over `pods` (one at each ordinal), with the tests' grace and revisions.
fn stuck_rule(set: &StatefulSet, pods: &[Arc<CachedPod>]) -> Recovery {
    let slots: Vec<Option<&Arc<CachedPod>>> = pods.iter().map(Some).collect();
    let rule = RecoveryRule {
        grace: GRACE,
        current_revision: CURRENT,
        update_revision: UPDATE,
        update_equivalents: &[],
        gates: FeatureGates::default(),
        now: now(),
    };
    broken_rollout_recovery(set, &ReplicaSlots::from(slots.as_slice()), pods, &rule)
}

/// Parallel sets already replace not-Ready outdated pods: the rule leaves their plans alone.
#[test]
fn broken_rollout_recovery_leaves_parallel_sets_unchanged() {
    let parallel = set(3, json!({"podManagementPolicy": "Parallel"}));
    let pods = with_third(not_ready(2, BROKEN, secs(3600), secs(3600)));
    for gates in [
        FeatureGates::default(),
        FeatureGates {
            max_unavailable_statefulset: true,
        },
    ] {
        let on = run_recovering(
            &parallel,
            &pods,
            &BTreeMap::new(),
            gates,
            (Some(GRACE), &[]),
        );
        let off = run_recovering(&parallel, &pods, &BTreeMap::new(), gates, (None, &[]));
        assert_eq!(on, off);
        assert_eq!(steps(&on), vec!["update web-2"]);
    }
    assert_eq!(stuck_rule(&parallel, &pods), Recovery::Nothing);
}

#[test]
fn broken_rollout_recovery_names_the_pod_and_both_revisions() {
    let pods = with_third(not_ready(2, CURRENT, secs(3600), secs(31)));
    let Recovery::Delete(stuck) = stuck_rule(&set(3, json!({})), &pods) else {
        panic!("web-2 is stuck");
    };
    assert_eq!(
        stuck.message(),
        "Deleting pod web-2 stuck at revision web-old (not Ready for 31s); it will be recreated at update revision web-new"
    );
    assert!(stuck.counted_current, "web-old is the current revision");
    let mut being_deleted = set(3, json!({}));
    being_deleted.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now()));
    assert_eq!(stuck_rule(&being_deleted, &pods), Recovery::Nothing);
}

#[test]
fn recovery_is_on_by_annotation_or_flag() {
    let annotated = |value: Option<&str>| {
        let mut set = set(3, json!({}));
        if let Some(value) = value {
            set.metadata.annotations = Some(
                [(
                    RECOVER_BROKEN_ROLLOUT_ANNOTATION.to_owned(),
                    value.to_owned(),
                )]
                .into_iter()
                .collect(),
            );
        }
        set
    };
    let off = BrokenRolloutRecovery::default();
    assert_eq!(off.grace, secs(30));
    let on = BrokenRolloutRecovery {
        all_sets: true,
        grace: secs(2),
    };
    for (value, flag_off, flag_on) in [
        (None, None, Some(secs(2))),
        (Some("true"), Some(secs(30)), Some(secs(2))),
        (Some("false"), None, None),
        (Some("yes"), None, Some(secs(2))),
    ] {
        assert_eq!(
            off.grace_for(&annotated(value)),
            flag_off,
            "{value:?}, flag off"
        );
        assert_eq!(
            on.grace_for(&annotated(value)),
            flag_on,
            "{value:?}, flag on"
        );
    }
}
