//! The informer cache at 100,000 pods, the scale a large cluster's kube-controller-manager
//! holds: every watch event is one store write, and every controller sync reads through a
//! lister, so these costs bound how fast the controllers can follow the cluster.
//!
//! * `fill_100k_pods`: 100,000 adds into an empty store with the pod controller-UID index
//!   registered, as the controllers register it (the initial list of a fresh informer).
//! * `update_one_pod_in_100k`: one pod replaced by a newer resourceVersion (a watch MODIFIED).
//! * `list_namespaced_selector`: `Lister::list_namespaced` with a label selector in a namespace
//!   holding 1,000 of the 100,000 pods (100 match).
//! * `by_controller_uid_index`: `Lister::by_index` on the controller-UID index (5 pods per owner).
//!
//! With `--bench` it also prints `bytes per cached pod: N`, the growth of the process RSS per pod
//! while a store is filled with realistic pods (labels, controller ref, a container with
//! resources, the service-account token volume and default tolerations that admission adds,
//! status with conditions; managedFields dropped as the factory's transform does),
//! once as the manager caches them (`informer::CachedPod`, decoded from JSON and copied without
//! spare capacity, as the informer does) and once as a whole `Pod`. The process's allocator
//! here is glibc's; the manager's is jemalloc, whose size classes round differently.
//!
//! Run with `cargo bench -p informer --bench store`.

use std::{hint::black_box, sync::Arc, time::Duration};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use informer::{
    CONTROLLER_UID_INDEX, CachedPod, LabelMatcher, Lister, POD_CONTROLLER_UID_INDEX, Store,
    controller_index, pod_controller_index,
};
use k8s_openapi::api::core::v1::Pod;
use kube::core::{Expression, Selector};
use serde_json::json;
use sim::rss_bytes;

const PODS: usize = 100_000;
const PODS_PER_NAMESPACE: usize = 1_000;
const PODS_PER_OWNER: usize = 5;
/// Distinct `app` labels per namespace: a selector on one matches 100 of the 1,000 pods.
const APPS_PER_NAMESPACE: usize = 10;

/// The UID of the ReplicaSet owning pod `i` (5 consecutive pods per owner).
fn owner_uid(i: usize) -> String {
    format!("7a22afba-8c90-445b-ae91-{:012x}", i / PODS_PER_OWNER)
}

/// The template every pod is built from: a running ReplicaSet pod as the API server returns it.
fn template_pod() -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-896bb5df7-x2x7z",
            "generateName": "web-896bb5df7-",
            "namespace": "ns-0",
            "uid": "00000000-0000-0000-0000-000000000000",
            "resourceVersion": "1",
            "creationTimestamp": "2026-11-23T18:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "896bb5df7"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-896bb5df7",
                "uid": "7a22afba-8c90-445b-ae91-f8f40dc52b89", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-23T18:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "registry.k8s.io/nginx:1.25.3",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
                "volumeMounts": [{"name": "kube-api-access-7xk2p", "readOnly": true,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
            }],
            "volumes": [{"name": "kube-api-access-7xk2p", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": "node-17",
            "schedulerName": "default-scheduler"
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-23T18:00:02Z"},
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-23T18:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-23T18:00:03Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-23T18:00:03Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-23T18:00:00Z"}
            ],
            "hostIP": "10.0.0.17",
            "podIP": "10.244.17.5",
            "podIPs": [{"ip": "10.244.17.5"}],
            "startTime": "2026-11-23T18:00:00Z",
            "qosClass": "Burstable",
            "containerStatuses": [{
                "name": "nginx", "ready": true, "started": true, "restartCount": 0,
                "image": "registry.k8s.io/nginx:1.25.3",
                "imageID": "registry.k8s.io/nginx@sha256:2bdc49f2f8ae8d8dc50ed00f2ee56d00385c6f8bc8a8b320d0a294d9e3b49026",
                "containerID": "containerd://5d7f6c1f8e3a",
                "state": {"running": {"startedAt": "2026-11-23T18:00:02Z"}},
                "lastState": {}
            }]
        }
    }))
    .expect("valid pod")
}

/// Pod `i` of the 100,000: its own namespace, name, UID, labels and owner, with
/// managedFields cleared as the informer factory's transform does before caching.
fn pod(template: &Pod, i: usize) -> Pod {
    let mut pod = template.clone();
    let owner = i / PODS_PER_OWNER;
    let meta = &mut pod.metadata;
    let rs_name = format!("web-{owner}-896bb5df7");
    meta.namespace = Some(format!("ns-{}", i / PODS_PER_NAMESPACE));
    meta.name = Some(format!("{rs_name}-{:05x}", i));
    meta.generate_name = Some(format!("{rs_name}-"));
    meta.uid = Some(format!("3f6e1c2a-51d4-4e8b-9c1f-{i:012x}"));
    meta.resource_version = Some((1_000 + i).to_string());
    if let Some(labels) = meta.labels.as_mut() {
        labels.insert(
            "app".into(),
            format!(
                "app-{}",
                (i % PODS_PER_NAMESPACE) / PODS_PER_OWNER % APPS_PER_NAMESPACE
            ),
        );
    }
    if let Some(owner_ref) = meta
        .owner_references
        .as_mut()
        .and_then(|refs| refs.first_mut())
    {
        owner_ref.name = rs_name;
        owner_ref.uid = owner_uid(i);
    }
    meta.managed_fields = None;
    pod
}

/// `pod` as the informer caches it: decoded from the JSON the API server sends, then copied
/// without spare capacity (the informer's transform).
fn as_the_informer_caches(pod: &Pod) -> CachedPod {
    let json = serde_json::to_vec(pod).expect("a pod encodes");
    let decoded: CachedPod = serde_json::from_slice(&json).expect("a pod decodes");
    decoded.clone()
}

/// An empty store with the controller-UID index registered, as the controllers do.
fn indexed_store() -> Arc<Store<CachedPod>> {
    let store = Arc::new(Store::new());
    store.add_indexer(POD_CONTROLLER_UID_INDEX, Arc::new(pod_controller_index));
    store
}

/// The RSS growth per pod while `fill` adds 100,000 pods to a store it returns (kept alive by
/// the caller, so a later fill cannot reuse its memory).
fn bytes_per_pod<S>(label: &str, fill: impl FnOnce() -> S) -> S {
    let before = rss_bytes().unwrap_or(0);
    let store = fill();
    let after = rss_bytes().unwrap_or(0);
    println!(
        "bytes per cached pod ({label}): {} (RSS {} MiB -> {} MiB for {PODS} pods)",
        after.saturating_sub(before) / PODS as u64,
        before / (1 << 20),
        after / (1 << 20),
    );
    store
}

/// Prints the RSS growth per pod while a store fills with 100,000 pods (only under `--bench`:
/// `cargo test --all-targets` runs this binary once in test mode, where it would only cost time).
fn report_memory_per_pod() {
    if !std::env::args().any(|arg| arg == "--bench") {
        return;
    }
    let template = template_pod();
    let cached = bytes_per_pod("as the manager caches them", || {
        let store = indexed_store();
        for i in 0..PODS {
            store.upsert(Arc::new(as_the_informer_caches(&pod(&template, i))));
        }
        store
    });
    let whole = bytes_per_pod("whole Pod", || {
        let store: Arc<Store<Pod>> = Arc::new(Store::new());
        store.add_indexer(CONTROLLER_UID_INDEX, Arc::new(controller_index::<Pod>));
        for i in 0..PODS {
            store.upsert(Arc::new(pod(&template, i)));
        }
        store
    });
    assert_eq!((cached.len(), whole.len()), (PODS, PODS));
    println!(
        "size_of::<CachedPod>() = {}, size_of::<Pod>() = {}",
        std::mem::size_of::<CachedPod>(),
        std::mem::size_of::<Pod>()
    );
}

fn store_benches(c: &mut Criterion) {
    // First, before other allocations are freed and reused, so the RSS delta is the store's.
    report_memory_per_pod();

    let template = template_pod();
    let pods: Vec<Arc<CachedPod>> = (0..PODS)
        .map(|i| Arc::new(CachedPod::from(pod(&template, i))))
        .collect();
    let mut group = c.benchmark_group("informer_store");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));

    // One fill takes a few hundred milliseconds: give its 10 samples the time they need.
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("fill_100k_pods", |b| {
        b.iter_batched(
            || (indexed_store(), pods.clone()),
            |(store, pods)| {
                for pod in pods {
                    store.upsert(pod);
                }
                store
            },
            BatchSize::PerIteration,
        )
    });

    let store = indexed_store();
    for pod in &pods {
        store.upsert(pod.clone());
    }
    let target = PODS / 2 + 3;
    let versions = [pods[target].clone(), {
        let mut newer = pods[target].as_ref().clone();
        newer.metadata.resource_version = Some("999999".into());
        Arc::new(newer)
    }];
    // From here on one element is one call.
    group.measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function("update_one_pod_in_100k", |b| {
        b.iter(|| {
            next ^= 1;
            store.upsert(versions[next].clone())
        })
    });

    let lister = Lister::from_store(store.clone());
    let namespace = "ns-42";
    let selector = LabelMatcher::from(Selector::from(Expression::Equal(
        "app".into(),
        "app-3".into(),
    )));
    assert_eq!(lister.list_namespaced(namespace, &selector).len(), 100);
    group.bench_function("list_namespaced_selector_100_of_1k_in_ns", |b| {
        b.iter(|| lister.list_namespaced(black_box(namespace), black_box(&selector)))
    });

    let i = PODS / 3;
    let owner_key = informer::controller_index_key(
        &format!("ns-{}", i / PODS_PER_NAMESPACE),
        "ReplicaSet",
        &format!("web-{}-896bb5df7", i / PODS_PER_OWNER),
        &owner_uid(i),
    );
    assert_eq!(
        lister.by_index(POD_CONTROLLER_UID_INDEX, &owner_key).len(),
        PODS_PER_OWNER
    );
    group.bench_function("by_controller_index_5_pods", |b| {
        b.iter(|| lister.by_index(POD_CONTROLLER_UID_INDEX, black_box(&owner_key)))
    });
    group.finish();
}

criterion_group!(benches, store_benches);
criterion_main!(benches);
