//! The simulated kubelets and scheduler. For each new pod it picks a node that fits (or
//! leaves a pod already bound to a node there), starts it (phase Running, podIP, hostIP,
//! startTime, containerStatuses) and makes it Ready after a delay; a pod no node fits stays
//! Pending with `PodScheduled=False` (reason `Unschedulable`) and is retried when nodes change.
//! Graceful deletions finish after a delay. Pod annotations steer it per pod for tests:
//! `sim.kcm-rs.io/never-ready`, `ready-after-ms`, `fail-after-ms`, `succeed-after-ms`.
//!
//! It also plays each node's kubelet: registers nodes created through the API, renews every
//! node's Lease and status heartbeat from one ticking task (spread over the period, so 5,000
//! nodes never write in one burst), keeps pods on a NotReady node from being Ready (marking
//! Ready pods NotReady as upstream's node lifecycle controller does), and force-deletes the
//! pods of a deleted node after the pod GC delay, as upstream's pod garbage collector does.
//!
//! It writes through the store like any client would, so every transition is a watch event.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, MissedTickBehavior};

use crate::config::{KubeletConfig, NodesConfig};
use crate::fit::PodNeeds;
use crate::nodes::{self, terminating};
use crate::object::{meta, now_timestamp};
use crate::ops::DeleteOptions;
use crate::resources::PODS;
use crate::server::Shared;
use crate::store::{KubeletEvent, ObjectKey, State};

/// Annotation: `"true"` keeps the pod Running but never Ready.
pub const NEVER_READY: &str = "sim.kcm-rs.io/never-ready";
/// Annotation: the pod becomes Ready this many milliseconds after starting.
pub const READY_AFTER_MS: &str = "sim.kcm-rs.io/ready-after-ms";
/// Annotation: the pod goes to phase Failed this many milliseconds after starting.
pub const FAIL_AFTER_MS: &str = "sim.kcm-rs.io/fail-after-ms";
/// Annotation: the pod goes to phase Succeeded this many milliseconds after starting.
pub const SUCCEED_AFTER_MS: &str = "sim.kcm-rs.io/succeed-after-ms";

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

/// Runs the kubelets and the scheduler until the cluster shuts down.
pub(crate) async fn run(
    shared: Arc<Shared>,
    config: KubeletConfig,
    nodes: NodesConfig,
    mut events: UnboundedReceiver<KubeletEvent>,
) {
    let mut stop = shared.shutdown.subscribe();
    let mut kubelet = Kubelet {
        shared,
        config,
        pod_gc_delay: nodes.pod_gc_delay,
        pod_ips: 0,
        registered: 0,
        waiting: Vec::new(),
        heartbeats: Heartbeats::new(nodes.heartbeat),
    };
    let mut tick = tokio::time::interval(kubelet.heartbeats.tick());
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(event) => kubelet.handle(event),
                None => return,
            },
            _ = tick.tick() => kubelet.heartbeat(),
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
    }
}

/// The heartbeat rotation: nodes queue up, and each tick renews as many from the front as
/// keeps every node on its period (`nodes × elapsed / period`, carrying the fraction), so
/// the writes are spread evenly over the period however many nodes there are.
#[derive(Debug)]
struct Heartbeats {
    period: Duration,
    queue: VecDeque<String>,
    /// Every node registered (whether or not heartbeats are on).
    known: HashSet<String>,
    credit: f64,
    last: Instant,
}

impl Heartbeats {
    fn new(period: Duration) -> Self {
        Self {
            period,
            queue: VecDeque::new(),
            known: HashSet::new(),
            credit: 0.0,
            last: Instant::now(),
        }
    }

    /// How often the rotation is looked at: a tenth of the period, between 1 ms and 100 ms
    /// (an hour when heartbeats are off).
    fn tick(&self) -> Duration {
        if self.period.is_zero() {
            return Duration::from_secs(3600);
        }
        (self.period / 10).clamp(Duration::from_millis(1), Duration::from_millis(100))
    }

    /// Registers node `name`; false when it was known already.
    fn add(&mut self, name: &str) -> bool {
        if !self.known.insert(name.to_string()) {
            return false;
        }
        if !self.period.is_zero() {
            self.queue.push_back(name.to_string());
        }
        true
    }

    /// Forgets a node that is gone.
    fn forget(&mut self, name: &str) {
        if self.known.remove(name) {
            self.queue.retain(|n| n != name);
        }
    }

    /// The nodes whose heartbeat is due at `now`, taken off the queue.
    fn due(&mut self, now: Instant) -> Vec<String> {
        let elapsed = now.saturating_duration_since(self.last);
        self.last = now;
        if self.period.is_zero() || self.queue.is_empty() {
            self.credit = 0.0;
            return Vec::new();
        }
        let queued = self.queue.len() as f64;
        self.credit =
            (self.credit + queued * elapsed.as_secs_f64() / self.period.as_secs_f64()).min(queued);
        let count = self.credit.floor();
        self.credit -= count;
        (0..count as usize)
            .filter_map(|_| self.queue.pop_front())
            .collect()
    }

    /// Puts a node that was renewed back at the end of the queue.
    fn requeue(&mut self, name: String) {
        self.queue.push_back(name);
    }
}

/// What became of a pod the scheduler looked at.
#[derive(Debug, PartialEq)]
enum Placement {
    /// Bound to a node and started.
    Started,
    /// Gone, terminating or already started: nothing to do.
    Done,
    /// No node fits: Pending with `PodScheduled=False`.
    Unschedulable,
    /// Bound to a node that does not exist.
    NodeMissing(String),
}

/// The state of the kubelets and the scheduler.
struct Kubelet {
    shared: Arc<Shared>,
    config: KubeletConfig,
    pod_gc_delay: Duration,
    /// Pod IPs handed out.
    pod_ips: u32,
    /// Nodes registered (the next one gets the InternalIP of this index).
    registered: usize,
    /// Pods (key, uid) waiting for a node, in creation order.
    waiting: Vec<(ObjectKey, String)>,
    heartbeats: Heartbeats,
}

impl Kubelet {
    fn handle(&mut self, event: KubeletEvent) {
        match event {
            KubeletEvent::Created { key, uid } => match self.place(&key, &uid) {
                Placement::Started | Placement::Done => {}
                Placement::Unschedulable => self.waiting.push((key, uid)),
                Placement::NodeMissing(node) => {
                    self.waiting.push((key, uid));
                    self.collect_later(node);
                }
            },
            KubeletEvent::Terminating { key, uid } => {
                later(
                    &self.shared,
                    self.config.deletion_delay,
                    key,
                    uid,
                    Step::Remove,
                );
            }
            KubeletEvent::NodeChanged { name } => self.node_changed(&name),
            KubeletEvent::NodeRemoved { name } => {
                self.heartbeats.forget(&name);
                self.collect_later(name);
            }
        }
    }

    /// Schedules and starts the pod `key` with `uid`, if it still waits for that.
    fn place(&mut self, key: &ObjectKey, uid: &str) -> Placement {
        let mut state = self.shared.state.write();
        let Some(pod) = live_pod(&state, key, uid) else {
            return Placement::Done;
        };
        if pod.pointer("/status/startTime").is_some() {
            return Placement::Done;
        }
        let bound = pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        let node = match bound {
            Some(node) if state.nodes.view(node).is_some() => node.to_string(),
            Some(node) => return Placement::NodeMissing(node.to_string()),
            None => match state.nodes.pick(&PodNeeds::of(&pod)) {
                Ok(node) => node,
                Err(message) => {
                    mark_unschedulable(&mut state, key, pod, &message);
                    return Placement::Unschedulable;
                }
            },
        };
        let (host_ip, node_ready) = state
            .nodes
            .view(&node)
            .map(|v| (v.internal_ip.clone(), v.ready))
            .unwrap_or_default();
        let plan = plan(&pod, &self.config);
        let n = self.pod_ips;
        self.pod_ips = self.pod_ips.wrapping_add(1);
        let ip = format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 1);
        let ready_now = plan.ready_after == Some(Duration::ZERO);
        let started = Start {
            node: &node,
            host_ip: &host_ip,
            pod_ip: &ip,
            ready: ready_now && node_ready,
        };
        start(&mut state, key, uid, pod, &started);
        if ready_now && !node_ready {
            state.nodes.hold(&node, key, uid);
        }
        drop(state);
        if let Some(delay) = plan.ready_after.filter(|d| !d.is_zero()) {
            later(
                &self.shared,
                delay,
                key.clone(),
                uid.to_string(),
                Step::Ready,
            );
        }
        if let Some((delay, outcome)) = plan.finish {
            later(
                &self.shared,
                delay,
                key.clone(),
                uid.to_string(),
                Step::Finish(outcome),
            );
        }
        Placement::Started
    }

    /// Tries every waiting pod again (after a node change).
    fn retry_waiting(&mut self) {
        let waiting = std::mem::take(&mut self.waiting);
        for (key, uid) in waiting {
            match self.place(&key, &uid) {
                Placement::Started | Placement::Done => {}
                Placement::Unschedulable | Placement::NodeMissing(_) => {
                    self.waiting.push((key, uid));
                }
            }
        }
    }

    /// A node appeared or its scheduling view changed: register a new one, follow its
    /// readiness, and retry the waiting pods.
    fn node_changed(&mut self, name: &str) {
        {
            let mut state = self.shared.state.write();
            if state.nodes.view(name).is_none() {
                return;
            }
            if self.heartbeats.add(name) {
                nodes::register(&mut state, name, &nodes::node_ip(self.registered));
                self.registered += 1;
                if !self.heartbeats.period.is_zero() {
                    nodes::ensure_lease(&mut state, name);
                }
            }
            if state.nodes.is_ready(name) {
                for (key, uid) in state.nodes.release(name) {
                    become_ready(&mut state, &key, &uid);
                }
            } else {
                mark_pods_not_ready(&mut state, name);
            }
        }
        self.retry_waiting();
    }

    /// Renews the nodes whose heartbeat is due.
    fn heartbeat(&mut self) {
        for name in self.heartbeats.due(Instant::now()) {
            let alive = nodes::heartbeat(&mut self.shared.state.write(), &name);
            if alive {
                self.heartbeats.requeue(name);
            } else {
                self.heartbeats.forget(&name);
            }
        }
    }

    /// Force-deletes the pods bound to `node` after the pod GC delay, if it is still gone.
    fn collect_later(&self, node: String) {
        if self.pod_gc_delay.is_zero() {
            collect_orphans(&mut self.shared.state.write(), &node);
            return;
        }
        let shared = self.shared.clone();
        let delay = self.pod_gc_delay;
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            collect_orphans(&mut shared.state.write(), &node);
        });
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Ready,
    Finish(Outcome),
    Remove,
}

fn later(shared: &Arc<Shared>, delay: Duration, key: ObjectKey, uid: String, step: Step) {
    let act = move |shared: &Arc<Shared>| {
        let mut state = shared.state.write();
        match step {
            Step::Ready => become_ready(&mut state, &key, &uid),
            Step::Finish(outcome) => finish(&mut state, &key, &uid, outcome),
            Step::Remove => remove(&mut state, &key, &uid),
        }
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

/// The pod with `uid` under `key`, unless it is gone or terminating.
fn live_pod(state: &State, key: &ObjectKey, uid: &str) -> Option<Value> {
    let stored = state.get(PODS, key).filter(|s| &*s.uid == uid)?;
    let pod = stored.value();
    (!terminating(&pod)).then_some(pod)
}

/// The pods (key, uid) bound to `node`.
fn pods_on(state: &State, node: &str) -> Vec<(ObjectKey, Box<str>)> {
    state.tables[PODS]
        .objects
        .iter()
        .filter(|(_, s)| s.node.as_deref() == Some(node))
        .map(|(k, s)| (k.clone(), s.uid.clone()))
        .collect()
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Where and how a pod starts.
struct Start<'a> {
    node: &'a str,
    host_ip: &'a str,
    pod_ip: &'a str,
    ready: bool,
}

/// Binds `pod` to its node and starts it, in one write.
fn start(state: &mut State, key: &ObjectKey, uid: &str, mut pod: Value, how: &Start) {
    let now = now_timestamp();
    let ready = how.ready;
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(how.node));
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
        "hostIP": how.host_ip,
        "hostIPs": [{"ip": how.host_ip}],
        "podIP": how.pod_ip,
        "podIPs": [{"ip": how.pod_ip}],
        "startTime": now,
        "containerStatuses": containers,
        "qosClass": qos,
    });
    if let Some(map) = pod.as_object_mut() {
        map.insert("status".into(), status);
    }
    tracing::debug!(namespace = %key.0, name = %key.1, node = how.node, "kubelet started pod");
    state.put(PODS, key.clone(), pod);
}

/// Records that no node fits `pod`: `PodScheduled=False`, reason `Unschedulable`, with why
/// (written only when the message changes, as upstream's scheduler does).
fn mark_unschedulable(state: &mut State, key: &ObjectKey, mut pod: Value, message: &str) {
    let now = now_timestamp();
    let Some(status) = pod.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let existing = conditions
        .iter()
        .position(|c| c.get("type") == Some(&json!("PodScheduled")));
    let mut scheduled = condition("PodScheduled", false, &now);
    scheduled["reason"] = json!("Unschedulable");
    scheduled["message"] = json!(message);
    match existing {
        Some(i) => {
            let old = &conditions[i];
            if old.get("status") == Some(&json!("False")) {
                if old.get("message") == Some(&json!(message))
                    && old.get("reason") == Some(&json!("Unschedulable"))
                {
                    return;
                }
                scheduled["lastTransitionTime"] =
                    old.get("lastTransitionTime").cloned().unwrap_or(json!(now));
            }
            conditions[i] = scheduled;
        }
        None => conditions.push(scheduled),
    }
    tracing::debug!(namespace = %key.0, name = %key.1, message, "pod unschedulable");
    state.put(PODS, key.clone(), pod);
}

/// Sets the Ready and ContainersReady conditions and the containers' `ready`; false when
/// nothing changed.
fn set_ready(pod: &mut Value, ready: bool, now: &str) -> bool {
    let before = pod.clone();
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
    *pod != before
}

/// Makes a running pod Ready, unless its node is NotReady: then it waits for the node.
fn become_ready(state: &mut State, key: &ObjectKey, uid: &str) {
    let Some(mut pod) = live_pod(state, key, uid) else {
        return;
    };
    if phase(&pod) != "Running" {
        return;
    }
    let node = state.get(PODS, key).and_then(|s| s.node.clone());
    if let Some(node) = node
        && !state.nodes.is_ready(&node)
    {
        state.nodes.hold(&node, key, uid);
        return;
    }
    if set_ready(&mut pod, true, &now_timestamp()) {
        tracing::debug!(namespace = %key.0, name = %key.1, "kubelet made pod ready");
        state.put(PODS, key.clone(), pod);
    }
}

/// Node `node` is NotReady: its Ready pods get `Ready=False` (as upstream's node lifecycle
/// controller marks them) and wait for the node to be Ready again.
fn mark_pods_not_ready(state: &mut State, node: &str) {
    let now = now_timestamp();
    for (key, uid) in pods_on(state, node) {
        let Some(mut pod) = live_pod(state, &key, &uid) else {
            continue;
        };
        if phase(&pod) != "Running" {
            continue;
        }
        let Some(ready) = pod
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
            .and_then(|cs| {
                cs.iter_mut().find(|c| {
                    c.get("type") == Some(&json!("Ready"))
                        && c.get("status") == Some(&json!("True"))
                })
            })
        else {
            continue;
        };
        *ready = condition("Ready", false, &now);
        tracing::debug!(namespace = %key.0, name = %key.1, node, "pod not ready: node NotReady");
        state.put(PODS, key.clone(), pod);
        state.nodes.hold(node, &key, &uid);
    }
}

fn finish(state: &mut State, key: &ObjectKey, uid: &str, outcome: Outcome) {
    let Some(mut pod) = live_pod(state, key, uid) else {
        return;
    };
    let now = now_timestamp();
    let (phase, code, reason) = match outcome {
        Outcome::Failed => ("Failed", 1, "Error"),
        Outcome::Succeeded => ("Succeeded", 0, "Completed"),
    };
    set_ready(&mut pod, false, &now);
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
    tracing::debug!(namespace = %key.0, name = %key.1, phase, "kubelet finished pod");
    state.put(PODS, key.clone(), pod);
}

/// Completes a graceful deletion: the pod is gone (unless finalizers still hold it).
fn remove(state: &mut State, key: &ObjectKey, uid: &str) {
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

/// The pod garbage collector: force-deletes the pods bound to `node` unless such a node
/// exists (again).
fn collect_orphans(state: &mut State, node: &str) {
    if state.nodes.view(node).is_some() {
        return;
    }
    for (key, uid) in pods_on(state, node) {
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            precondition_uid: Some(uid.to_string()),
            ..DeleteOptions::default()
        };
        tracing::debug!(namespace = %key.0, name = %key.1, node, "collecting a pod of a missing node");
        let _ = state.delete(PODS, &key, &opts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_spread_over_the_period() {
        let mut beats = Heartbeats::new(Duration::from_secs(10));
        assert_eq!(beats.tick(), Duration::from_millis(100));
        let t0 = beats.last;
        for i in 0..1000 {
            assert!(beats.add(&format!("n{i}")));
        }
        assert!(!beats.add("n0"));
        let mut per_tick = Vec::new();
        let mut first = None;
        for k in 1..=100u64 {
            let due = beats.due(t0 + Duration::from_millis(100 * k));
            per_tick.push(due.len());
            first = first.or(due.first().cloned());
            for name in due {
                beats.requeue(name);
            }
        }
        assert_eq!(first.as_deref(), Some("n0"));
        assert!(
            per_tick.iter().all(|n| (9..=11).contains(n)),
            "{per_tick:?}"
        );
        let total: usize = per_tick.iter().sum();
        assert!(
            (999..=1001).contains(&total),
            "{total} renewals in one period"
        );
        beats.forget("n5");
        assert_eq!(beats.queue.len(), 999);
        assert!(beats.add("n5"), "a recreated node is new again");

        let mut single = Heartbeats::new(Duration::from_millis(200));
        assert_eq!(single.tick(), Duration::from_millis(20));
        let t0 = single.last;
        single.add("only");
        assert!(single.due(t0 + Duration::from_millis(100)).is_empty());
        assert_eq!(single.due(t0 + Duration::from_millis(200)), vec!["only"]);

        let mut off = Heartbeats::new(Duration::ZERO);
        assert!(off.add("n"));
        assert!(off.due(Instant::now() + Duration::from_secs(60)).is_empty());
        assert_eq!(off.tick(), Duration::from_secs(3600));
    }

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
