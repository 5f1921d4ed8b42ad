//! The ReplicaSet controller's pure decisions over 500 pods (the largest burst one sync may
//! act on): every sync computes the status from all active pods, and every scale-down ranks
//! the pods to pick its victims, so both scale with the ReplicaSet's size.
//!
//! * `calculate_status_500_pods`: `calculate_status` over 500 active pods (mixed ready,
//!   available and not-yet-available pods, with minReadySeconds).
//! * `plan_replicas` and `slow_start_batches_500`: the replica diff and the slow-start batches.
//! * `rank_and_sort_500_pods`: `rank_by_related_pods_on_same_node` + `sort_for_deletion`
//!   (upstream `getPodsToDelete`) over 500 pods spread over 50 nodes.
//!
//! Run with `cargo bench -p replicaset --bench decide`.

use std::{hint::black_box, sync::Arc, time::Duration};

use controller_toolkit::ranking::{rank_by_related_pods_on_same_node, sort_for_deletion};
use controller_toolkit::writes::slow_start_batches;
use criterion::{Criterion, criterion_group, criterion_main};
use informer::{CachedPod, CachedReplicaSet};
use k8s_openapi::jiff::Timestamp;
use replicaset::decide::{StatusInputs, calculate_status, plan_replicas};
use serde_json::json;

const PODS: usize = 500;
const NODES: usize = 50;

/// The ReplicaSet owning the pods: 500 replicas, minReadySeconds 10.
fn replica_set() -> CachedReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": "web-896bb5df7", "namespace": "prod", "uid": "7a22afba-8c90-445b-ae91-f8f40dc52b89",
            "generation": 4, "labels": {"app": "web", "pod-template-hash": "896bb5df7"}},
        "spec": {
            "replicas": PODS,
            "minReadySeconds": 10,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "896bb5df7"}},
            "template": {
                "metadata": {"labels": {"app": "web", "pod-template-hash": "896bb5df7"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
            }
        },
        "status": {"replicas": PODS, "fullyLabeledReplicas": PODS, "readyReplicas": 450,
            "availableReplicas": 400, "observedGeneration": 4}
    }))
    .expect("valid replica set")
}

/// Pod `i`: every 10th unscheduled and pending, every 10th (offset 5) running but not ready,
/// the rest ready since a time that varies per pod (some not yet past minReadySeconds); a few
/// carry a pod-deletion-cost annotation.
fn pod(i: usize) -> Arc<CachedPod> {
    let created = 1_795_000_000 + (i as i64 * 7) % 3_600;
    let ready_since = created + 30 + (i as i64 % 40) * 60;
    let scheduled = !i.is_multiple_of(10);
    let ready = scheduled && i % 10 != 5;
    let mut pod = json!({
        "metadata": {
            "name": format!("web-896bb5df7-{i:05}"),
            "namespace": "prod",
            "uid": format!("3f6e1c2a-51d4-4e8b-9c1f-{i:012x}"),
            "creationTimestamp": Timestamp::from_second(created).expect("valid time").to_string(),
            "labels": {"app": "web", "pod-template-hash": "896bb5df7"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-896bb5df7",
                "uid": "7a22afba-8c90-445b-ae91-f8f40dc52b89", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
        "status": {"phase": if scheduled { "Running" } else { "Pending" }}
    });
    if i % 50 == 7 {
        pod["metadata"]["annotations"] =
            json!({"controller.kubernetes.io/pod-deletion-cost": (i % 3).to_string()});
    }
    if scheduled {
        pod["spec"]["nodeName"] = json!(format!("node-{}", i % NODES));
        let ready_time = Timestamp::from_second(ready_since)
            .expect("valid time")
            .to_string();
        pod["status"]["conditions"] = json!([
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": if ready { "True" } else { "False" }, "lastTransitionTime": ready_time}
        ]);
        pod["status"]["containerStatuses"] = json!([{"name": "nginx", "ready": ready, "restartCount": i % 4,
            "image": "nginx:1.25", "imageID": "", "started": true}]);
    }
    Arc::new(serde_json::from_value(pod).expect("valid pod"))
}

fn decide_benches(c: &mut Criterion) {
    let replica_set = replica_set();
    let pods: Vec<Arc<CachedPod>> = (0..PODS).map(pod).collect();
    // Late enough that most ready pods are available, early enough that some are not.
    let now = Timestamp::from_second(1_795_000_000 + 2_400).expect("valid time");

    let mut group = c.benchmark_group("replicaset_decide");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(2));
    group.bench_function("calculate_status_500_pods", |b| {
        b.iter(|| {
            calculate_status(&StatusInputs {
                replica_set: black_box(&replica_set),
                active_pods: black_box(&pods),
                terminating: 3,
                manage_error: None,
                now,
            })
        })
    });
    group.bench_function("plan_replicas", |b| {
        b.iter(|| plan_replicas(black_box(PODS - 120), black_box(PODS as i32)))
    });
    group.bench_function("slow_start_batches_500", |b| {
        b.iter(|| slow_start_batches(black_box(PODS)))
    });
    group.bench_function("rank_and_sort_500_pods", |b| {
        b.iter(|| {
            let ranked = rank_by_related_pods_on_same_node(black_box(&pods), &pods);
            sort_for_deletion(ranked, now)
        })
    });
    group.finish();
}

criterion_group!(benches, decide_benches);
criterion_main!(benches);
