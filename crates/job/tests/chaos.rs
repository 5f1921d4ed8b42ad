//! Chaos: Jobs run under injected write failures (500 and 409) and periodic watch
//! disconnects. Every Job completes with each completion counted exactly once (the counters
//! equal the pods that succeeded) and no pod keeps the tracking finalizer, however the status
//! writes and finalizer patches in between failed.

mod support;

use std::time::Duration;

use k8s_openapi::api::{batch::v1::Job, core::v1::Pod};
use kube::api::PostParams;
use serde_json::json;
use sim::testing::{eventually, retry_write};
use support::{Harness, has_condition, has_finalizer, job, label, phase};

const JOBS: usize = 30;
const COMPLETIONS: i32 = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_complete_under_faults_with_every_completion_counted_once() {
    let harness = Harness::start().await;
    harness.set_chaos_faults(11, Duration::from_secs(3));
    let api = harness.jobs();
    let post = PostParams::default();
    for index in 0..JOBS {
        let object: Job = serde_json::from_value(job(
            &format!("chaos-{index}"),
            "exit 0",
            json!({"spec": {"completions": COMPLETIONS, "parallelism": 2}}),
        ))
        .expect("valid Job");
        retry_write(|| api.create(&post, &object)).await;
    }

    let pods = harness.api::<Pod>();
    eventually(
        "every Job complete and every pod freed",
        Duration::from_secs(120),
        || {
            let (api, pods) = (api.clone(), pods.clone());
            async move {
                let jobs = api.list(&Default::default()).await.ok()?.items;
                let pods = pods.list(&Default::default()).await.ok()?.items;
                let done = jobs.len() == JOBS
                    && jobs.iter().all(|job| {
                        job.status
                            .as_ref()
                            .is_some_and(|status| has_condition(status, "Complete"))
                    })
                    && pods.iter().all(|pod| !has_finalizer(pod));
                done.then_some(())
            }
        },
    )
    .await;

    let pods = pods.list(&Default::default()).await.expect("pods").items;
    for job in api.list(&Default::default()).await.expect("jobs").items {
        let name = job.metadata.name.clone().unwrap_or_default();
        let status = job.status.unwrap_or_default();
        let succeeded_pods = pods
            .iter()
            .filter(|pod| {
                label(pod, "batch.kubernetes.io/job-name").as_deref() == Some(name.as_str())
                    && phase(pod) == "Succeeded"
            })
            .count();
        assert_eq!(
            status.succeeded,
            Some(COMPLETIONS),
            "{name}: counted as many completions as asked"
        );
        assert_eq!(
            succeeded_pods, COMPLETIONS as usize,
            "{name}: each completion counted once, none run twice"
        );
        assert!(
            status
                .uncounted_terminated_pods
                .is_none_or(|u| u.succeeded.is_none() && u.failed.is_none()),
            "{name}: nothing left uncounted"
        );
    }
    harness.stop().await;
}
