//! Takeover without losing or repeating a completion: an Indexed Job in the middle of its run,
//! its pods and status written the way upstream's controller leaves them (pods with the
//! tracking finalizer; one succeeded index recorded in `completedIndexes` whose finalizer
//! removal had not happened yet, one succeeded pod not recorded at all, one failed pod recorded
//! in `uncountedTerminatedPods`, one pod running), is taken over by kcm-rs, which is then handed
//! over mid-run to another instance that knows only what the API server holds, as upstream
//! would. Every index succeeds exactly once, no index ever has two active pods, the failure is
//! counted once, and no finalizer is left.

mod support;

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    time::Duration,
};

use futures::StreamExt;
use job::{JobController, JobOptions};
use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::{
    Api,
    api::{PostParams, WatchParams},
    core::WatchEvent,
};
use parking_lot::Mutex;
use serde_json::json;
use support::{Harness, INDEX_KEY, TRACKING_FINALIZER, annotation, has_finalizer, job, phase};
use tokio_util::sync::CancellationToken;

const COMPLETIONS: usize = 12;

/// A pod of `job` for `index` as upstream's controller creates it, running `command`.
fn upstream_pod(job: &Job, index: usize, command: &str) -> Pod {
    let name = job.metadata.name.clone().unwrap_or_default();
    let template = &job.spec.as_ref().expect("spec").template;
    let mut labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(INDEX_KEY.to_owned(), index.to_string());
    let pod = json!({
        "metadata": {
            "generateName": format!("{name}-{index}-"),
            "labels": labels,
            "annotations": {INDEX_KEY: index.to_string()},
            "finalizers": [TRACKING_FINALIZER],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                 "uid": job.metadata.uid, "controller": true,
                                 "blockOwnerDeletion": true}]
        },
        "spec": {
            "restartPolicy": "Never",
            "hostname": format!("{name}-{index}"),
            "containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sh", "-c", command],
                "env": [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                    "fieldPath": format!("metadata.labels['{INDEX_KEY}']")}}}]
            }]
        }
    });
    serde_json::from_value(pod).expect("valid pod")
}

fn index_of(pod: &Pod) -> Option<usize> {
    annotation(pod, INDEX_KEY)?.parse().ok()
}

fn is_active(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && !matches!(phase(pod).as_str(), "Succeeded" | "Failed")
}

/// Watches the namespace's pods for the whole test and records every moment an index had
/// two active pods.
fn watch_active_per_index(
    harness: &Harness,
) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let violations = Arc::new(Mutex::new(Vec::new()));
    let pods: Api<Pod> = harness.pods();
    let seen = violations.clone();
    let task = tokio::spawn(async move {
        let mut active: BTreeMap<String, Pod> = BTreeMap::new();
        let Ok(stream) = pods.watch(&WatchParams::default(), "0").await else {
            seen.lock().push("the watch did not start".to_owned());
            return;
        };
        let mut stream = stream.boxed();
        while let Some(Ok(event)) = stream.next().await {
            match event {
                WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    if is_active(&pod) {
                        active.insert(name, pod);
                    } else {
                        active.remove(&name);
                    }
                }
                WatchEvent::Deleted(pod) => {
                    active.remove(&pod.metadata.name.clone().unwrap_or_default());
                }
                _ => {}
            }
            let mut per_index: BTreeMap<usize, usize> = BTreeMap::new();
            for pod in active.values() {
                if let Some(index) = index_of(pod) {
                    *per_index.entry(index).or_default() += 1;
                }
            }
            for (index, count) in per_index {
                if count > 1 {
                    seen.lock()
                        .push(format!("index {index} had {count} active pods"));
                }
            }
        }
    });
    (violations, task)
}

/// Runs a kcm-rs Job controller until the returned token is cancelled.
fn start_instance(
    harness: &Harness,
    agent: &str,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let token = CancellationToken::new();
    let run = JobController::standalone(
        harness.sim.client_with_user_agent(agent),
        JobOptions::default(),
        2,
        token.clone(),
    )
    .expect("the controller builds");
    (token, tokio::spawn(run))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_indexed_job_is_taken_over_and_handed_on_exactly_once() {
    let harness = Harness::without_controller(sim::SimConfig::default()).await;
    let created = harness
        .create_job(job(
            "handover",
            "sleep 1; exit 0",
            json!({"spec": {"completionMode": "Indexed", "completions": COMPLETIONS,
                            "parallelism": 4}}),
        ))
        .await;
    let (violations, watcher) = watch_active_per_index(&harness);

    // The pods upstream created: indexes 0 and 1 succeed, 2 fails, 3 runs a while.
    let commands = [
        (0, "exit 0"),
        (1, "exit 0"),
        (2, "exit 1"),
        (3, "sleep 3; exit 0"),
    ];
    let mut uids = BTreeMap::new();
    for (index, command) in commands {
        let pod = harness
            .pods()
            .create(
                &PostParams::default(),
                &upstream_pod(&created, index, command),
            )
            .await
            .expect("create upstream pod");
        uids.insert(index, pod.metadata.uid.clone().unwrap_or_default());
    }
    harness
        .wait_for_pods("handover", "upstream's pods where it left them", |pods| {
            let phase_of = |index| {
                pods.iter()
                    .find(|pod| index_of(pod) == Some(index))
                    .map(phase)
                    .unwrap_or_default()
            };
            phase_of(0) == "Succeeded"
                && phase_of(1) == "Succeeded"
                && phase_of(2) == "Failed"
                && phase_of(3) == "Running"
        })
        .await;
    // Upstream's last status write: index 0 recorded (its finalizer not removed yet), the
    // failed pod recorded as uncounted; index 1's success not seen yet.
    let mut status_job: Job = harness.job("handover").await;
    status_job.status = Some(
        serde_json::from_value::<k8s_openapi::api::batch::v1::JobStatus>(json!({
            "startTime": created.metadata.creation_timestamp,
            "active": 1, "ready": 1, "terminating": 0,
            "succeeded": 1, "failed": 0, "completedIndexes": "0",
            "uncountedTerminatedPods": {"failed": [uids[&2]]}
        }))
        .expect("status"),
    );
    harness
        .jobs()
        .replace_status("handover", &PostParams::default(), &status_job)
        .await
        .expect("write upstream's status");

    // kcm-rs takes over, and hands over mid-run to another instance.
    let (first, first_run) = start_instance(&harness, "kcm-rs-first");
    harness
        .wait_for_status("handover", "some progress under the first instance", |s| {
            s.succeeded.unwrap_or(0) >= 4
        })
        .await;
    first.cancel();
    first_run.await.expect("the first instance stops");
    let (second, second_run) = start_instance(&harness, "kcm-rs-second");
    let status = harness.wait_for_condition("handover", "Complete").await;
    second.cancel();
    second_run.await.expect("the second instance stops");

    assert_eq!(
        status.completed_indexes.as_deref(),
        Some(format!("0-{}", COMPLETIONS - 1).as_str())
    );
    assert_eq!(status.succeeded, Some(COMPLETIONS as i32));
    assert_eq!(status.failed, Some(1), "the recorded failure counted once");
    let pods = harness.job_pods("handover").await;
    let mut succeeded: BTreeMap<usize, usize> = BTreeMap::new();
    for pod in pods.iter().filter(|pod| phase(pod) == "Succeeded") {
        *succeeded.entry(index_of(pod).expect("index")).or_default() += 1;
    }
    let all: BTreeSet<usize> = (0..COMPLETIONS).collect();
    assert_eq!(succeeded.keys().copied().collect::<BTreeSet<_>>(), all);
    assert!(
        succeeded.values().all(|count| *count == 1),
        "each index succeeded exactly once: {succeeded:?}"
    );
    let failed: Vec<&Pod> = pods.iter().filter(|pod| phase(pod) == "Failed").collect();
    assert_eq!(failed.len(), 1, "only upstream's failed pod");
    assert!(
        pods.iter().all(|pod| !has_finalizer(pod)),
        "no finalizer left"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    watcher.abort();
    let violations = violations.lock().clone();
    assert!(violations.is_empty(), "{violations:?}");
    harness.stop().await;
}
