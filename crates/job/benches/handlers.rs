//! The Job controller's event handlers beside 10,000 Jobs (upstream once took 3 ms at p99 on a
//! Job update, kubernetes#126510): what each pod and Job event costs the informer that
//! delivers it, the inline expectations observer and the queued handler together.
//!
//! * `owned_pod_update`: a pod of one Job changes (it turns ready): its Job is enqueued,
//!   batched.
//! * `owned_pod_add`: a pod of one Job appears (a creation observed).
//! * `orphan_pod_add`: a pod without a controller appears, with the finalizer and its Job's
//!   UID label: the orphan queue, and the Jobs whose selector matches it.
//! * `job_status_update`: a Job's status changes (same generation): batched.
//!
//! Criterion reports the mean; then each event is timed 20,000 times one by one and its p50,
//! p99 and maximum are printed (the bar: p99 ≤ 0.05 ms).
//!
//! Run with `cargo bench -p job --bench handlers`.

use std::{hint::black_box, sync::Arc, time::Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use informer::{CachedPod, Store};
use job::testing::EventHandlers;
use k8s_openapi::api::batch::v1::Job;
use serde_json::{Value, json};

const JOBS: usize = 10_000;
const NAMESPACE: &str = "batch";
const UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const SAMPLES: usize = 20_000;

fn job(i: usize, resource_version: &str, active: i32) -> Job {
    let uid = format!("job-uid-{i}");
    serde_json::from_value(json!({
        "metadata": {"name": format!("job-{i}"), "namespace": NAMESPACE, "uid": uid,
                     "generation": 1, "resourceVersion": resource_version},
        "spec": {
            "parallelism": 2, "completions": 4, "backoffLimit": 6,
            "selector": {"matchLabels": {UID_LABEL: uid}},
            "template": {"metadata": {"labels": {UID_LABEL: uid, "batch.kubernetes.io/job-name": format!("job-{i}")}},
                         "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
        },
        "status": {"active": active, "ready": 0, "terminating": 0,
                   "startTime": "2026-12-02T10:00:00Z"}
    }))
    .expect("a Job")
}

fn pod(job: usize, resource_version: &str, owned: bool, ready: &str) -> Arc<CachedPod> {
    let uid = format!("job-uid-{job}");
    let mut metadata = json!({
        "name": format!("job-{job}-x7k2p"), "namespace": NAMESPACE, "uid": format!("pod-of-{job}"),
        "resourceVersion": resource_version,
        "labels": {UID_LABEL: uid, "batch.kubernetes.io/job-name": format!("job-{job}")},
        "finalizers": ["batch.kubernetes.io/job-tracking"]
    });
    if owned {
        metadata["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
            "name": format!("job-{job}"), "uid": uid, "controller": true,
            "blockOwnerDeletion": true}]);
    }
    let pod: Value = json!({
        "metadata": metadata,
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": ready, "lastTransitionTime": "2026-12-02T10:00:01Z"}]}
    });
    Arc::new(serde_json::from_value(pod).expect("a pod"))
}

struct Scene {
    _runtime: tokio::runtime::Runtime,
    handlers: EventHandlers,
    pending_pod: Arc<CachedPod>,
    ready_pod: Arc<CachedPod>,
    orphan: Arc<CachedPod>,
    job: Arc<Job>,
    job_updated: Arc<Job>,
}

fn scene() -> Scene {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let _entered = runtime.enter();
    let store = Arc::new(Store::new());
    for i in 0..JOBS {
        store.upsert(Arc::new(job(i, "1", 2)));
    }
    let uri: http::Uri = "http://127.0.0.1:9".parse().expect("a uri");
    let client = kube::Client::try_from(kube::Config::new(uri)).expect("a client");
    let handlers = EventHandlers::new(&client, store).expect("the handlers");
    drop(_entered);
    Scene {
        handlers,
        pending_pod: pod(5_000, "10", true, "False"),
        ready_pod: pod(5_000, "11", true, "True"),
        orphan: pod(7_000, "12", false, "False"),
        job: Arc::new(job(3_000, "1", 2)),
        job_updated: Arc::new(job(3_000, "2", 1)),
        _runtime: runtime,
    }
}

fn events(c: &mut Criterion) {
    let scene = scene();
    let _entered = scene._runtime.enter();
    let mut group = c.benchmark_group("job_handlers_10000_jobs");
    group.bench_function("owned_pod_update", |b| {
        b.iter(|| {
            scene
                .handlers
                .pod_updated(black_box(&scene.pending_pod), black_box(&scene.ready_pod))
        })
    });
    group.bench_function("owned_pod_add", |b| {
        b.iter(|| scene.handlers.pod_added(black_box(&scene.ready_pod)))
    });
    group.bench_function("orphan_pod_add", |b| {
        b.iter(|| scene.handlers.pod_added(black_box(&scene.orphan)))
    });
    group.bench_function("job_status_update", |b| {
        b.iter(|| {
            scene
                .handlers
                .job_updated(black_box(&scene.job), black_box(&scene.job_updated))
        })
    });
    group.finish();

    println!("\nper event, {SAMPLES} samples each, beside {JOBS} Jobs:");
    println!("| event | p50 µs | p99 µs | max µs |\n|---|---:|---:|---:|");
    let cases: [(&str, &dyn Fn()); 4] = [
        ("owned_pod_update", &|| {
            scene
                .handlers
                .pod_updated(&scene.pending_pod, &scene.ready_pod)
        }),
        ("owned_pod_add", &|| {
            scene.handlers.pod_added(&scene.ready_pod)
        }),
        ("orphan_pod_add", &|| {
            scene.handlers.pod_added(&scene.orphan)
        }),
        ("job_status_update", &|| {
            scene.handlers.job_updated(&scene.job, &scene.job_updated)
        }),
    ];
    for (name, event) in cases {
        let mut micros: Vec<f64> = (0..SAMPLES)
            .map(|_| {
                let start = Instant::now();
                event();
                start.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        micros.sort_by(f64::total_cmp);
        let at = |q: f64| micros[((micros.len() - 1) as f64 * q) as usize];
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            at(0.5),
            at(0.99),
            micros[micros.len() - 1]
        );
    }
    let (jobs, orphans) = scene.handlers.queued();
    assert!(orphans >= 1, "the orphan was queued ({jobs} Job keys due)");
}

criterion_group!(benches, events);
criterion_main!(benches);
