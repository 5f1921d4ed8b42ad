//! The Deployment controller's pure planners for a Deployment of 100 replicas in the middle of
//! a rolling update with 10 old ReplicaSets (a long chain of interrupted rollouts): every sync
//! runs the new/old split, one planner and the status calculation, so these bound the cost of
//! a sync apart from API calls.
//!
//! * `split_replica_sets_11`: find the new ReplicaSet by template equality among 11.
//! * `plan_rolling_update`: rolloutRolling's scaling step (here: scale old ReplicaSets down,
//!   with unhealthy replicas cleaned up first).
//! * `plan_scale_proportional`: proportional scaling when the Deployment is resized from 100
//!   to 150 mid-rollout.
//! * `calculate_status`: the Deployment status from its 11 ReplicaSets.
//! * `compute_hash`: the pod-template-hash of the Deployment's template (`pod_template_hash`).
//!
//! Run with `cargo bench -p deployment --bench plan`.

use std::{hint::black_box, time::Duration};

use criterion::{Criterion, criterion_group, criterion_main};
use deployment::{
    proportional::plan_scale,
    rolling::{RollingStep, plan_rolling_update},
    status::{FeatureGates, calculate_status},
    template::{deployment_template, pod_template_hash, split_replica_sets},
};
use informer::{CachedDeployment, CachedReplicaSet};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

const OLD_REPLICA_SETS: usize = 10;

/// The pod template of version `version` (only the image differs between versions).
fn template(version: usize) -> Value {
    json!({
        "metadata": {"labels": {"app": "web"}, "annotations": {"prometheus.io/scrape": "true"}},
        "spec": {
            "containers": [{
                "name": "web",
                "image": format!("registry.example.com/web:1.{version}.0"),
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}],
                "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                    "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler"
        }
    })
}

/// The Deployment at template version `OLD_REPLICA_SETS` with `replicas` replicas, 25% surge
/// and unavailability.
fn deployment(replicas: i32) -> CachedDeployment {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "prod", "uid": "5b1f0c9e-7d3a-4e2b-9a8f-1c2d3e4f5a6b",
            "generation": 12, "annotations": {"deployment.kubernetes.io/revision": "11"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": template(OLD_REPLICA_SETS),
            "progressDeadlineSeconds": 600,
            "revisionHistoryLimit": 10
        },
        "status": {"observedGeneration": 11, "replicas": 130, "updatedReplicas": 30, "readyReplicas": 95,
            "availableReplicas": 90, "unavailableReplicas": 40, "collisionCount": 0,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.",
                "lastUpdateTime": "2026-11-23T17:00:00Z", "lastTransitionTime": "2026-11-23T17:00:00Z"},
                {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                "message": "ReplicaSet \"web-v10\" is progressing.",
                "lastUpdateTime": "2026-11-23T18:00:00Z", "lastTransitionTime": "2026-11-23T17:00:00Z"}]}
    }))
    .expect("valid deployment")
}

/// ReplicaSet of template `version` with `replicas` pods of which `available` are available.
fn replica_set(version: usize, replicas: i32, available: i32) -> CachedReplicaSet {
    let mut template = template(version);
    template["metadata"]["labels"]["pod-template-hash"] = json!(format!("v{version}"));
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("web-v{version}"),
            "namespace": "prod",
            "uid": format!("9e8d7c6b-0000-4000-8000-{version:012}"),
            "creationTimestamp": Timestamp::from_second(1_795_000_000 + version as i64 * 600)
                .expect("valid time").to_string(),
            "generation": 3,
            "labels": {"app": "web", "pod-template-hash": format!("v{version}")},
            "annotations": {"deployment.kubernetes.io/revision": (version + 1).to_string(),
                "deployment.kubernetes.io/desired-replicas": "100",
                "deployment.kubernetes.io/max-replicas": "125"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                "uid": "5b1f0c9e-7d3a-4e2b-9a8f-1c2d3e4f5a6b", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": format!("v{version}")}},
            "template": template},
        "status": {"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": available,
            "availableReplicas": available, "terminatingReplicas": 0, "observedGeneration": 3}
    }))
    .expect("valid replica set")
}

fn plan_benches(c: &mut Criterion) {
    let d = deployment(100);
    let scaled_up = deployment(150);
    // 10 old ReplicaSets of 10 pods, the older half partly unavailable; the new one has 30.
    let old: Vec<CachedReplicaSet> = (0..OLD_REPLICA_SETS)
        .map(|v| replica_set(v, 10, if v < 5 { 7 } else { 10 }))
        .collect();
    let new_rs = replica_set(OLD_REPLICA_SETS, 30, 20);
    let old_refs: Vec<&CachedReplicaSet> = old.iter().collect();
    let all: Vec<&CachedReplicaSet> = old.iter().chain([&new_rs]).collect();
    let now = Timestamp::from_second(1_795_010_000).expect("valid time");

    let split = split_replica_sets(&d, &all);
    assert_eq!(
        split.new.and_then(|rs| rs.metadata.name.as_deref()),
        Some("web-v10")
    );
    let plan = plan_rolling_update(&d, &new_rs, &old_refs).expect("plannable");
    assert!(
        matches!(plan.step, RollingStep::ScaleOld { .. }),
        "{plan:?}"
    );
    assert!(!plan_scale(&scaled_up, Some(&new_rs), &old_refs).is_empty());

    let mut group = c.benchmark_group("deployment_plan");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("split_replica_sets_11", |b| {
        b.iter(|| split_replica_sets(black_box(&d), black_box(&all)).old.len())
    });
    group.bench_function("plan_rolling_update_10_old", |b| {
        b.iter(|| plan_rolling_update(black_box(&d), &new_rs, black_box(&old_refs)))
    });
    group.bench_function("plan_scale_proportional_10_old", |b| {
        b.iter(|| plan_scale(black_box(&scaled_up), Some(&new_rs), black_box(&old_refs)))
    });
    group.bench_function("calculate_status_11_rs", |b| {
        b.iter(|| {
            calculate_status(
                black_box(&all),
                Some(&new_rs),
                &d,
                FeatureGates::default(),
                now,
            )
        })
    });
    let pod_template = deployment_template(&d);
    group.bench_function("compute_hash", |b| {
        b.iter(|| pod_template_hash(black_box(&pod_template), Some(0)))
    });
    group.finish();
}

criterion_group!(benches, plan_benches);
criterion_main!(benches);
