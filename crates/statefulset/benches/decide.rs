//! The StatefulSet controller's pure plan for a set of 100 replicas in the middle of a rolling
//! update (ordinals 70..99 already at the update revision, 0..69 at the current one, every pod
//! with a data claim): each sync of the set computes this plan from the cached pods and claims,
//! so its cost grows with the set's size.
//!
//! * `plan_100_replicas_mid_rolling_update`: `decide::plan` (identity and storage checks of
//!   every pod, claim checks, status counts, the next pod to replace).
//! * `status_needs_write`: the no-op check before a status write.
//!
//! Run with `cargo bench -p statefulset --bench decide`.

use std::{collections::BTreeMap, hint::black_box, sync::Arc, time::Duration};

use criterion::{Criterion, criterion_group, criterion_main};
use informer::CachedPod;
use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::PersistentVolumeClaim},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
    jiff::Timestamp,
};
use serde_json::json;
use statefulset::{
    FeatureGates,
    decide::{PlanInput, Revisions, plan, status_needs_write},
    identity::{new_pod, pod_claims},
};

const REPLICAS: i32 = 100;
/// Ordinals at or above this one already run the update revision.
const UPDATED_FROM: i32 = 70;
const CURRENT: &str = "db-6d5f8c7b9";
const UPDATE: &str = "db-7f9c6d8b5";

/// The set with its pod template at `image`.
fn set(image: &str) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": "prod", "uid": "0b7c4f0e-2a55-4d0c-8f3e-5a8d6a1c9e21", "generation": 7},
        "spec": {
            "replicas": REPLICAS,
            "serviceName": "db",
            "minReadySeconds": 10,
            "selector": {"matchLabels": {"app": "db"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{
                    "name": "postgres",
                    "image": image,
                    "ports": [{"name": "pg", "containerPort": 5432}],
                    "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}},
                    "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"}]
                }]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}
            }]
        },
        "status": {"observedGeneration": 7, "replicas": REPLICAS, "readyReplicas": REPLICAS,
            "availableReplicas": REPLICAS, "currentReplicas": UPDATED_FROM, "updatedReplicas": REPLICAS - UPDATED_FROM,
            "currentRevision": CURRENT, "updateRevision": UPDATE, "collisionCount": 0}
    }))
    .expect("valid statefulset")
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: "db".into(),
        uid: "0b7c4f0e-2a55-4d0c-8f3e-5a8d6a1c9e21".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Pod `ordinal` as the controller built it from `template_set` at `revision`, then
/// scheduled, running and ready for an hour.
fn running_pod(
    set: &StatefulSet,
    template_set: &StatefulSet,
    ordinal: i32,
    revision: &str,
    now: Timestamp,
) -> Arc<CachedPod> {
    let mut pod = new_pod(set, template_set, &owner(), ordinal, revision);
    let ready_since = Timestamp::from_second(now.as_second() - 3_600).expect("valid time");
    pod.metadata.uid = Some(format!("3f6e1c2a-51d4-4e8b-9c1f-{ordinal:012}"));
    pod.metadata.resource_version = Some((5_000 + ordinal).to_string());
    let status = json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready_since.to_string()}],
        "containerStatuses": [{"name": "postgres", "ready": true, "started": true, "restartCount": 0,
            "image": "postgres", "imageID": ""}]
    });
    pod.status = Some(serde_json::from_value(status).expect("valid status"));
    pod.spec.get_or_insert_default().node_name = Some(format!("node-{}", ordinal % 20));
    Arc::new(CachedPod::from(pod))
}

fn decide_benches(c: &mut Criterion) {
    let current_set = set("postgres:16.3");
    let update_set = set("postgres:16.4");
    let now = Timestamp::from_second(1_795_000_000).expect("valid time");
    let pods: Vec<Arc<CachedPod>> = (0..REPLICAS)
        .map(|ordinal| {
            if ordinal >= UPDATED_FROM {
                running_pod(&update_set, &update_set, ordinal, UPDATE, now)
            } else {
                running_pod(&update_set, &current_set, ordinal, CURRENT, now)
            }
        })
        .collect();
    let claims: BTreeMap<String, Arc<PersistentVolumeClaim>> = (0..REPLICAS)
        .flat_map(|ordinal| pod_claims(&update_set, ordinal))
        .map(|claim| {
            let name = claim.metadata.name.clone().unwrap_or_default();
            (name, Arc::new(claim))
        })
        .collect();
    let controller_ref = owner();
    let input = PlanInput {
        set: &update_set,
        revisions: Revisions {
            current: CURRENT,
            update: UPDATE,
            current_set: &current_set,
            update_set: &update_set,
        },
        collision_count: 0,
        pods: &pods,
        claims: &claims,
        controller_ref: &controller_ref,
        now,
        gates: FeatureGates::default(),
        recovery: None,
        update_equivalents: &[],
    };
    let planned = plan(&input);
    assert_eq!(
        planned.phases.iter().flatten().count(),
        1,
        "one pod replaced per sync: {:?}",
        planned.phases
    );

    let mut group = c.benchmark_group("statefulset_decide");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("plan_100_replicas_mid_rolling_update", |b| {
        b.iter(|| plan(black_box(&input)))
    });
    group.bench_function("status_needs_write", |b| {
        b.iter(|| status_needs_write(update_set.status.as_ref(), black_box(&planned.status)))
    });
    group.finish();
}

criterion_group!(benches, decide_benches);
criterion_main!(benches);
