//! Scale benchmarks of the sim: memory with 100,000 pods stored (printed as RSS, the
//! issue's < 1 GiB target), listing them, and watch fan-out of 10,000 events to 10 watchers.
//!
//! Run with `cargo bench -p sim --bench sim`.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use sim::{KubeletConfig, SimCluster, SimConfig, rss_bytes};

const PODS: usize = 100_000;
const EVENTS: usize = 10_000;
const WATCHERS: usize = 10;

/// A pod as the ReplicaSet controller creates it (labels, owner reference, one container).
fn controller_pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "generateName": "web-896bb5df7-",
            "labels": {"app": "web", "pod-template-hash": "896bb5df7", "shard": (i % 10).to_string()},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-896bb5df7",
                "uid": "7a22afba-8c90-445b-ae91-f8f40dc52b89", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
    }))
    .expect("valid pod")
}

async fn create_pods(pods: &Api<Pod>, n: usize) {
    futures::stream::iter(0..n)
        .map(|i| {
            let pods = pods.clone();
            async move {
                pods.create(&PostParams::default(), &controller_pod(i))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(64)
        .try_collect::<Vec<()>>()
        .await
        .expect("pods created");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn no_kubelet() -> SimConfig {
    SimConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    }
}

fn memory_and_list(c: &mut Criterion) {
    let rt = runtime();
    let before = rss_bytes().unwrap_or(0);
    let (cluster, pods) = rt.block_on(async {
        let cluster = SimCluster::start(no_kubelet()).await.expect("sim starts");
        let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
        let started = Instant::now();
        create_pods(&pods, PODS).await;
        println!("created {PODS} pods in {:?}", started.elapsed());
        (cluster, pods)
    });
    let after = rss_bytes().unwrap_or(0);
    println!(
        "RSS with {PODS} pods stored: {} MiB (process before: {} MiB, delta {} MiB)",
        after / (1 << 20),
        before / (1 << 20),
        after.saturating_sub(before) / (1 << 20)
    );
    let mut group = c.benchmark_group("store");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("list_100k_pods", |b| {
        b.to_async(&rt).iter(|| async {
            pods.list(&ListParams::default())
                .await
                .expect("list")
                .items
                .len()
        })
    });
    group.finish();
    rt.block_on(cluster.shutdown());
}

fn watch_fan_out(c: &mut Criterion) {
    let rt = runtime();
    let (cluster, pods, rv) = rt.block_on(async {
        let cluster = SimCluster::start(no_kubelet()).await.expect("sim starts");
        let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
        let rv = pods
            .list(&ListParams::default())
            .await
            .expect("list")
            .metadata
            .resource_version
            .expect("rv");
        create_pods(&pods, EVENTS).await;
        (cluster, pods, rv)
    });
    let mut group = c.benchmark_group("watch");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements((EVENTS * WATCHERS) as u64));
    group.bench_function("fan_out_10k_events_to_10_watchers", |b| {
        b.to_async(&rt).iter(|| async {
            let watchers = (0..WATCHERS).map(|_| {
                let pods = pods.clone();
                let rv = rv.clone();
                async move {
                    let params = WatchParams::default().disable_bookmarks();
                    let mut stream = pods.watch(&params, &rv).await.expect("watch").boxed();
                    let mut seen = 0;
                    while seen < EVENTS {
                        match stream.try_next().await.expect("event") {
                            Some(WatchEvent::Added(_)) => seen += 1,
                            Some(other) => panic!("unexpected {other:?}"),
                            None => panic!("watch ended after {seen}"),
                        }
                    }
                    seen
                }
            });
            futures::future::join_all(watchers).await
        })
    });
    group.finish();
    rt.block_on(cluster.shutdown());
}

criterion_group!(benches, memory_and_list, watch_fan_out);
criterion_main!(benches);
