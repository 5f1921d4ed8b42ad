//! The simulated kubelets and scheduler. For each new pod it picks a node that fits (or
//! leaves a pod already bound to a node there), starts it (phase Running, podIP, hostIP,
//! startTime, containerStatuses) and makes it Ready after a delay; a pod no node fits stays
//! Pending with `PodScheduled=False` (reason `Unschedulable`) and is retried when nodes change.
//! Graceful deletions finish after a delay: the containers are stopped (exit code 137 unless
//! they had already exited), the pod's terminal phase is written, and the pod is deleted
//! (finalizers may still hold it, terminal).
//!
//! A container ends as its command says ([`crate::container_exit`]: `sh -c 'sleep S; exit N'`
//! and the like; any other command keeps running), `S` seconds after it started, and the pod's
//! `restartPolicy` decides what follows ([`crate::container_status`] shapes the statuses):
//! `Never` leaves it terminated; `OnFailure` restarts it in place after a non-zero exit and
//! `Always` after any exit, each after [`RESTART_DELAY`] (upstream's kubelet backs off 10 s,
//! doubling to 5 min; the sim waits the same short time before every restart), with
//! `restartCount` one higher, and it ends again by the same command. Once every container has
//! ended for good the pod is `Succeeded` (all exit codes 0) or `Failed`. Each container keeps
//! its own schedule; a pod being deleted stops changing until its deletion finishes.
//!
//! Pod annotations steer it per pod for tests: `sim.kcm-rs.io/never-ready`, `ready-after-ms`,
//! and `fail-after-ms` / `succeed-after-ms`, which end the whole pod (exit code 1 / 0) and,
//! when set, take precedence over the containers' commands.
//!
//! It also plays each node's kubelet: registers nodes created through the API, renews every
//! node's Lease and status heartbeat from one ticking task (spread over the period, so 5,000
//! nodes never write in one burst), keeps pods on a NotReady node from being Ready (marking
//! Ready pods NotReady as upstream's node lifecycle controller does), and force-deletes the
//! pods of a deleted node after the pod GC delay, as upstream's pod garbage collector does.
//!
//! It writes through the store like any client would, so every transition is a watch event.
//! Its timers end at the cluster's shutdown.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, MissedTickBehavior};

use crate::config::{KubeletConfig, NodesConfig};
use crate::container_exit::{self, Exit};
use crate::container_status::{self, RestartPolicy};
use crate::fit::PodNeeds;
use crate::heartbeats::Heartbeats;
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

/// How long a container that its pod's `restartPolicy` restarts waits before it runs again.
pub(crate) const RESTART_DELAY: Duration = Duration::from_millis(100);

/// What the kubelet does to a pod, decided from its annotations, its containers' commands and
/// the configuration.
#[derive(Debug, Clone, PartialEq)]
struct PodPlan {
    ready_after: Option<Duration>,
    /// The whole pod's end, from an annotation.
    finish: Option<(Duration, Outcome)>,
    /// Each container that ends by its command (by name), unless an annotation ends the pod.
    exits: Vec<(String, Exit)>,
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
    let exits = if finish.is_some() {
        Vec::new()
    } else {
        container_exits(pod)
    };
    PodPlan {
        ready_after,
        finish,
        exits,
    }
}

/// The containers of `pod` whose commands end them, by name.
fn container_exits(pod: &Value) -> Vec<(String, Exit)> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|containers| {
            containers
                .iter()
                .filter_map(|c| {
                    let name = c.get("name")?.as_str()?;
                    Some((name.to_string(), container_exit::exit_of(c)?))
                })
                .collect()
        })
        .unwrap_or_default()
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
        for (container, exit) in plan.exits {
            let run = ContainerRun {
                container,
                restarts: 0,
                exit,
                ready_after: plan.ready_after,
            };
            later(
                &self.shared,
                exit.after,
                key.clone(),
                uid.to_string(),
                Step::ContainerExit(run),
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
                if self.heartbeats.enabled() {
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

/// Something the kubelet does to a pod later.
#[derive(Debug, Clone)]
enum Step {
    Ready,
    Finish(Outcome),
    Remove,
    /// A container's command ends.
    ContainerExit(ContainerRun),
    /// A container runs again after its restart delay.
    ContainerRestart(ContainerRun),
}

/// One run of a container: which one, after how many restarts, how its command ends, and
/// how soon it is Ready once (re)started.
#[derive(Debug, Clone)]
struct ContainerRun {
    container: String,
    restarts: i64,
    exit: Exit,
    ready_after: Option<Duration>,
}

/// Does `step` to the pod `key` with `uid` after `delay` (at once when zero), unless the
/// cluster shuts down first.
fn later(shared: &Arc<Shared>, delay: Duration, key: ObjectKey, uid: String, step: Step) {
    if delay.is_zero() {
        act(shared, key, uid, step);
        return;
    }
    let shared = shared.clone();
    let mut stop = shared.shutdown.subscribe();
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(delay) => act(&shared, key, uid, step),
            _ = stop.wait_for(|stopped| *stopped) => {}
        }
    });
}

/// Does `step` under the state lock, then schedules what it leads to once the lock is free.
fn act(shared: &Arc<Shared>, key: ObjectKey, uid: String, step: Step) {
    let next = {
        let mut state = shared.state.write();
        match step {
            Step::Ready => {
                become_ready(&mut state, &key, &uid);
                Vec::new()
            }
            Step::Finish(outcome) => {
                finish(&mut state, &key, &uid, outcome);
                Vec::new()
            }
            Step::Remove => {
                remove(&mut state, &key, &uid);
                Vec::new()
            }
            Step::ContainerExit(run) => container_exited(&mut state, &key, &uid, run),
            Step::ContainerRestart(run) => container_restarted(&mut state, &key, &uid, run),
        }
    };
    for (delay, step) in next {
        later(shared, delay, key.clone(), uid.clone(), step);
    }
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
    if container_status::set_containers_ready(&mut pod, true, &now_timestamp()) {
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

/// Ends the whole pod as its annotation says: every container terminated with exit code 1
/// (Failed) or 0 (Succeeded).
fn finish(state: &mut State, key: &ObjectKey, uid: &str, outcome: Outcome) {
    let Some(mut pod) = live_pod(state, key, uid) else {
        return;
    };
    let now = now_timestamp();
    let (phase, code) = match outcome {
        Outcome::Failed => ("Failed", 1),
        Outcome::Succeeded => ("Succeeded", 0),
    };
    for name in container_names(&pod) {
        container_status::terminate(&mut pod, &name, code, &now);
    }
    set_phase(&mut pod, phase);
    container_status::sync_ready_conditions(&mut pod, &now);
    tracing::debug!(namespace = %key.0, name = %key.1, phase, "kubelet finished pod");
    state.put(PODS, key.clone(), pod);
}

/// The names in a pod's `containerStatuses`.
fn container_names(pod: &Value) -> Vec<String> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|statuses| {
            statuses
                .iter()
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn set_phase(pod: &mut Value, phase: &str) {
    if let Some(status) = pod.get_mut("status").and_then(Value::as_object_mut) {
        status.insert("phase".into(), json!(phase));
    }
}

/// The live pod `key` (that UID, not being deleted) if it is Running and its container is in
/// the state a scheduled step expects (`in_step`): a step of an earlier run does nothing.
fn running_pod(
    state: &State,
    key: &ObjectKey,
    uid: &str,
    in_step: impl Fn(&Value) -> bool,
) -> Option<Value> {
    live_pod(state, key, uid).filter(|pod| phase(pod) == "Running" && in_step(pod))
}

/// A container's command ended: under its pod's `restartPolicy` it waits for a restart, or
/// it stays terminated and the pod finishes once every container has. Returns the restart
/// to schedule, if any. Nothing happens unless the pod runs, is not being deleted, and the
/// container is still in this run.
fn container_exited(
    state: &mut State,
    key: &ObjectKey,
    uid: &str,
    run: ContainerRun,
) -> Vec<(Duration, Step)> {
    let Some(mut pod) = running_pod(state, key, uid, |pod| {
        container_status::is_running(pod, &run.container, run.restarts)
    }) else {
        return Vec::new();
    };
    let now = now_timestamp();
    let code = run.exit.code;
    if RestartPolicy::of(&pod).restarts_after(code) {
        container_status::back_off(&mut pod, &run.container, code, &now, RESTART_DELAY);
        container_status::sync_ready_conditions(&mut pod, &now);
        tracing::debug!(namespace = %key.0, name = %key.1, container = %run.container, code, restarts = run.restarts, "container exited; restarting it");
        state.put(PODS, key.clone(), pod);
        return vec![(RESTART_DELAY, Step::ContainerRestart(run))];
    }
    container_status::terminate(&mut pod, &run.container, code, &now);
    let finished = container_status::finished_phase(&pod);
    if let Some(phase) = finished {
        set_phase(&mut pod, phase);
    }
    container_status::sync_ready_conditions(&mut pod, &now);
    tracing::debug!(namespace = %key.0, name = %key.1, container = %run.container, code, phase = finished.unwrap_or("Running"), "container exited");
    state.put(PODS, key.clone(), pod);
    Vec::new()
}

/// A container runs again after its restart delay, and is Ready at once or later as its pod's
/// plan says (not while its node is NotReady). Returns its next exit and readiness to
/// schedule.
fn container_restarted(
    state: &mut State,
    key: &ObjectKey,
    uid: &str,
    run: ContainerRun,
) -> Vec<(Duration, Step)> {
    let Some(mut pod) = running_pod(state, key, uid, |pod| {
        container_status::is_waiting(pod, &run.container, run.restarts)
    }) else {
        return Vec::new();
    };
    let now = now_timestamp();
    let Some(restarts) = container_status::restart(&mut pod, &run.container, &now) else {
        return Vec::new();
    };
    container_status::sync_ready_conditions(&mut pod, &now);
    let mut next = Vec::new();
    let mut held_on = None;
    match run.ready_after {
        Some(delay) if delay.is_zero() => {
            let node = state.get(PODS, key).and_then(|s| s.node.clone());
            match node {
                Some(node) if !state.nodes.is_ready(&node) => held_on = Some(node),
                _ => {
                    container_status::set_containers_ready(&mut pod, true, &now);
                }
            }
        }
        Some(delay) => next.push((delay, Step::Ready)),
        None => {}
    }
    tracing::debug!(namespace = %key.0, name = %key.1, container = %run.container, restarts, "container restarted");
    state.put(PODS, key.clone(), pod);
    if let Some(node) = held_on {
        state.nodes.hold(&node, key, uid);
    }
    let exit_after = run.exit.after;
    next.push((
        exit_after,
        Step::ContainerExit(ContainerRun { restarts, ..run }),
    ));
    next
}

/// Completes a graceful deletion as upstream's kubelet does: its containers are stopped and
/// the pod's terminal phase written ([`container_status::stop_all`]: Failed unless every
/// container had already exited 0), then it is deleted with no grace period: gone, unless
/// finalizers still hold it (it then waits, terminal, for them to be removed).
fn remove(state: &mut State, key: &ObjectKey, uid: &str) {
    let Some(stored) = state.get(PODS, key).filter(|s| &*s.uid == uid) else {
        return;
    };
    let mut pod = stored.value();
    if !matches!(phase(&pod), "Succeeded" | "Failed") {
        let now = now_timestamp();
        let ended = container_status::stop_all(&mut pod, &now);
        set_phase(&mut pod, ended);
        container_status::sync_ready_conditions(&mut pod, &now);
        tracing::debug!(namespace = %key.0, name = %key.1, phase = ended, "kubelet stopped the containers of a deleted pod");
        state.put(PODS, key.clone(), pod);
    }
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        precondition_uid: Some(uid.to_string()),
        ..DeleteOptions::default()
    };
    tracing::debug!(namespace = %key.0, name = %key.1, "kubelet finished pod deletion");
    let _ = state.delete(PODS, key, &opts);
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
    fn plans_from_annotations_and_commands() {
        let config = KubeletConfig {
            ready_delay: Duration::from_millis(5),
            ..KubeletConfig::default()
        };
        let pod = |annotations: Value| {
            json!({"metadata": {"annotations": annotations}, "spec": {"containers": [
                {"name": "plain", "image": "nginx"},
                {"name": "job", "image": "busybox", "command": ["sh", "-c", "sleep 0.5; exit 3"]},
            ]}})
        };
        let job = (
            "job".to_string(),
            Exit {
                after: Duration::from_millis(500),
                code: 3,
            },
        );
        let cases = [
            (
                json!({}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: None,
                    exits: vec![job.clone()],
                },
            ),
            (
                json!({NEVER_READY: "true"}),
                PodPlan {
                    ready_after: None,
                    finish: None,
                    exits: vec![job.clone()],
                },
            ),
            (
                json!({READY_AFTER_MS: "70"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(70)),
                    finish: None,
                    exits: vec![job.clone()],
                },
            ),
            (
                json!({FAIL_AFTER_MS: "10"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: Some((Duration::from_millis(10), Outcome::Failed)),
                    exits: Vec::new(),
                },
            ),
            (
                json!({SUCCEED_AFTER_MS: "0", NEVER_READY: "true"}),
                PodPlan {
                    ready_after: None,
                    finish: Some((Duration::ZERO, Outcome::Succeeded)),
                    exits: Vec::new(),
                },
            ),
            (
                json!({READY_AFTER_MS: "soon", SUCCEED_AFTER_MS: "later"}),
                PodPlan {
                    ready_after: Some(Duration::from_millis(5)),
                    finish: None,
                    exits: vec![job.clone()],
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
        let odd = json!({"spec": {"containers": [{"command": ["sh", "-c", "exit 0"]}, 7]}});
        assert_eq!(plan(&odd, &config).exits, Vec::new(), "no name, no exit");
    }
}
