//! The simulated kubelet: binds new pods to a node, starts them (phase Running, podIP,
//! startTime, containerStatuses) and makes them Ready after a delay; finishes graceful
//! deletions after a delay. Pod annotations steer it per pod for tests:
//! `sim.kcm-rs.io/never-ready`, `ready-after-ms`, `fail-after-ms`, `succeed-after-ms`.
//!
//! It writes through the store like any client would, so every transition is a watch event.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::config::KubeletConfig;
use crate::object::{meta, now_timestamp};
use crate::ops::DeleteOptions;
use crate::resources::PODS;
use crate::server::{Shared, next_before_shutdown};
use crate::store::{ObjectKey, PodChange};

/// Annotation: `"true"` keeps the pod Running but never Ready.
pub const NEVER_READY: &str = "sim.kcm-rs.io/never-ready";
/// Annotation: the pod becomes Ready this many milliseconds after starting.
pub const READY_AFTER_MS: &str = "sim.kcm-rs.io/ready-after-ms";
/// Annotation: the pod goes to phase Failed this many milliseconds after starting.
pub const FAIL_AFTER_MS: &str = "sim.kcm-rs.io/fail-after-ms";
/// Annotation: the pod goes to phase Succeeded this many milliseconds after starting.
pub const SUCCEED_AFTER_MS: &str = "sim.kcm-rs.io/succeed-after-ms";

/// The node every pod is bound to.
const NODE_NAME: &str = "sim-node";
const HOST_IP: &str = "10.0.0.1";

/// What the kubelet does to a pod, decided from its annotations and the configuration.
#[derive(Debug, Clone, PartialEq)]
struct PodPlan {
    ready_after: Option<Duration>,
    finish: Option<(Duration, Outcome)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Failed,
    Succeeded,
}

fn annotation_ms(pod: &Value, key: &str) -> Option<Duration> {
    meta(pod)?
        .get("annotations")?
        .get(key)?
        .as_str()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_millis)
}

fn plan(pod: &Value, config: &KubeletConfig) -> PodPlan {
    let never_ready = meta(pod)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(NEVER_READY))
        .and_then(Value::as_str)
        == Some("true");
    let ready_after =
        (!never_ready).then(|| annotation_ms(pod, READY_AFTER_MS).unwrap_or(config.ready_delay));
    let finish = annotation_ms(pod, FAIL_AFTER_MS)
        .map(|d| (d, Outcome::Failed))
        .or_else(|| annotation_ms(pod, SUCCEED_AFTER_MS).map(|d| (d, Outcome::Succeeded)));
    PodPlan {
        ready_after,
        finish,
    }
}

/// Runs the kubelet until the cluster shuts down.
pub(crate) async fn run(
    shared: Arc<Shared>,
    config: KubeletConfig,
    mut changes: UnboundedReceiver<PodChange>,
) {
    let ips = Arc::new(AtomicU32::new(0));
    let mut stop = shared.shutdown.subscribe();
    loop {
        let Some(change) = next_before_shutdown(&mut changes, &mut stop).await else {
            return;
        };
        match change {
            PodChange::Created { key, uid } => {
                let pod = shared.state.read().get(PODS, &key).map(|s| s.value());
                let Some(pod) = pod else { continue };
                let plan = plan(&pod, &config);
                let n = ips.fetch_add(1, Ordering::Relaxed);
                let ip = format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 1);
                let ready_now = plan.ready_after == Some(Duration::ZERO);
                start(&shared, &key, &uid, &ip, ready_now);
                if let Some(delay) = plan.ready_after.filter(|d| !d.is_zero()) {
                    later(&shared, delay, key.clone(), uid.clone(), Step::Ready);
                }
                if let Some((delay, outcome)) = plan.finish {
                    later(&shared, delay, key, uid, Step::Finish(outcome));
                }
            }
            PodChange::Terminating { key, uid } => {
                later(&shared, config.deletion_delay, key, uid, Step::Remove);
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Ready,
    Finish(Outcome),
    Remove,
}

fn later(shared: &Arc<Shared>, delay: Duration, key: ObjectKey, uid: String, step: Step) {
    let act = move |shared: &Arc<Shared>| match step {
        Step::Ready => become_ready(shared, &key, &uid),
        Step::Finish(outcome) => finish(shared, &key, &uid, outcome),
        Step::Remove => remove(shared, &key, &uid),
    };
    if delay.is_zero() {
        act(shared);
        return;
    }
    let shared = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        act(&shared);
    });
}

fn condition(kind: &str, status: bool, now: &str) -> Value {
    json!({"type": kind, "status": if status { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": now})
}

/// Applies `change` to the live pod with `uid` (not yet terminating) and stores it.
fn modify_pod(
    shared: &Arc<Shared>,
    key: &ObjectKey,
    uid: &str,
    allow_terminating: bool,
    change: impl FnOnce(&mut Value),
) {
    let mut state = shared.state.write();
    let Some(stored) = state.get(PODS, key) else {
        return;
    };
    if &*stored.uid != uid {
        return;
    }
    let mut pod = stored.value();
    if !allow_terminating && meta(&pod).is_some_and(|m| m.contains_key("deletionTimestamp")) {
        return;
    }
    change(&mut pod);
    tracing::debug!(namespace = %key.0, name = %key.1, "kubelet updated pod");
    state.put(PODS, key.clone(), pod);
}

fn start(shared: &Arc<Shared>, key: &ObjectKey, uid: &str, ip: &str, ready: bool) {
    let now = now_timestamp();
    modify_pod(shared, key, uid, false, |pod| {
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".into(), json!(NODE_NAME));
        }
        let containers: Vec<Value> = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let image = c.get("image").cloned().unwrap_or(Value::Null);
                        json!({
                            "name": c.get("name").cloned().unwrap_or(Value::Null),
                            "state": {"running": {"startedAt": now}},
                            "lastState": {},
                            "ready": ready,
                            "restartCount": 0,
                            "image": image,
                            "imageID": format!("sim://{}", image.as_str().unwrap_or("")),
                            "containerID": format!("sim://{}-{i}", uid),
                            "started": true
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let qos = pod
            .pointer("/status/qosClass")
            .cloned()
            .unwrap_or(json!("BestEffort"));
        let status = json!({
            "phase": "Running",
            "conditions": [
                condition("Initialized", true, &now),
                condition("Ready", ready, &now),
                condition("ContainersReady", ready, &now),
                condition("PodScheduled", true, &now),
            ],
            "hostIP": HOST_IP,
            "hostIPs": [{"ip": HOST_IP}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "containerStatuses": containers,
            "qosClass": qos,
        });
        if let Some(map) = pod.as_object_mut() {
            map.insert("status".into(), status);
        }
    });
}

fn set_ready(pod: &mut Value, ready: bool, now: &str) {
    if let Some(conditions) = pod
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for c in conditions.iter_mut() {
            let kind = c.get("type").and_then(Value::as_str).unwrap_or("");
            if (kind == "Ready" || kind == "ContainersReady")
                && c.get("status").and_then(Value::as_str)
                    != Some(if ready { "True" } else { "False" })
            {
                *c = condition(kind, ready, now);
            }
        }
    }
    if let Some(statuses) = pod
        .pointer_mut("/status/containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for s in statuses.iter_mut().filter_map(Value::as_object_mut) {
            s.insert("ready".into(), json!(ready));
        }
    }
}

fn become_ready(shared: &Arc<Shared>, key: &ObjectKey, uid: &str) {
    let now = now_timestamp();
    modify_pod(shared, key, uid, false, |pod| {
        if pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running") {
            set_ready(pod, true, &now);
        }
    });
}

fn finish(shared: &Arc<Shared>, key: &ObjectKey, uid: &str, outcome: Outcome) {
    let now = now_timestamp();
    modify_pod(shared, key, uid, false, |pod| {
        let (phase, code, reason) = match outcome {
            Outcome::Failed => ("Failed", 1, "Error"),
            Outcome::Succeeded => ("Succeeded", 0, "Completed"),
        };
        set_ready(pod, false, &now);
        if let Some(status) = pod.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("phase".into(), json!(phase));
            if let Some(Value::Array(statuses)) = status.get_mut("containerStatuses") {
                for s in statuses.iter_mut().filter_map(Value::as_object_mut) {
                    s.insert(
                        "state".into(),
                        json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now}}),
                    );
                    s.insert("started".into(), json!(false));
                }
            }
        }
    });
}

/// Completes a graceful deletion: the pod is gone (unless finalizers still hold it).
fn remove(shared: &Arc<Shared>, key: &ObjectKey, uid: &str) {
    let mut state = shared.state.write();
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        precondition_uid: Some(uid.to_string()),
        ..DeleteOptions::default()
    };
    if state.get(PODS, key).is_some_and(|s| &*s.uid == uid) {
        tracing::debug!(namespace = %key.0, name = %key.1, "kubelet finished pod deletion");
        let _ = state.delete(PODS, key, &opts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_from_annotations() {
        let config = KubeletConfig {
            ready_delay: Duration::from_millis(5),
            ..KubeletConfig::default()
        };
        let pod = |annotations: Value| json!({"metadata": {"annotations": annotations}});
        let cases = [
            (
                json!({}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: None,
                },
            ),
            (
                json!({NEVER_READY: "true"}),
                PodPlan {
                    ready_after: None,
                    finish: None,
                },
            ),
            (
                json!({READY_AFTER_MS: "70"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(70)),
                    finish: None,
                },
            ),
            (
                json!({FAIL_AFTER_MS: "10"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: Some((Duration::from_millis(10), Outcome::Failed)),
                },
            ),
            (
                json!({SUCCEED_AFTER_MS: "0", NEVER_READY: "true"}),
                PodPlan {
                    ready_after: None,
                    finish: Some((Duration::ZERO, Outcome::Succeeded)),
                },
            ),
            (
                json!({READY_AFTER_MS: "soon"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: None,
                },
            ),
        ];
        for (annotations, expected) in cases {
            assert_eq!(
                plan(&pod(annotations.clone()), &config),
                expected,
                "{annotations}"
            );
        }
    }
}
