//! How a container's end and restart show in its pod's status, shaped as upstream's kubelet
//! reports them, so controllers (the Job controller first) read the sim's pods as real ones.
//!
//! Pure transformations of a pod's JSON; the kubelet decides when they happen and writes the
//! result through the store. A container that ends for good gets `state.terminated`
//! (`exitCode`, `reason` `Completed` for 0 and `Error` otherwise, `startedAt`, `finishedAt`,
//! `containerID`) and `ready`/`started` false. One that its pod's `restartPolicy` restarts
//! waits first (`state.waiting`, reason `CrashLoopBackOff`, `lastState.terminated` holding the
//! exit), then runs again with `restartCount` one higher and a new `startedAt` and
//! `containerID`. The pod's `Ready` and `ContainersReady` conditions follow the containers'
//! `ready` flags with upstream's reasons (`ContainersNotReady` listing the unready
//! containers, `PodCompleted` / `PodFailed` once the pod has finished).

use std::time::Duration;

use serde_json::{Map, Value, json};

/// A pod's `spec.restartPolicy`: which exits restart a container in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestartPolicy {
    /// Every exit restarts (the default; Deployments' pods).
    Always,
    /// Non-zero exits restart; exit 0 ends the container for good.
    OnFailure,
    /// No exit restarts.
    Never,
}

impl RestartPolicy {
    /// The policy of `pod`: `Always` when unset or not one of the three (as upstream defaults).
    pub fn of(pod: &Value) -> Self {
        match pod.pointer("/spec/restartPolicy").and_then(Value::as_str) {
            Some("OnFailure") => RestartPolicy::OnFailure,
            Some("Never") => RestartPolicy::Never,
            _ => RestartPolicy::Always,
        }
    }

    /// Whether a container that exited with `code` is restarted.
    pub fn restarts_after(self, code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// The status of container `name` in `pod`.
fn status_of<'a>(pod: &'a Value, name: &str) -> Option<&'a Map<String, Value>> {
    pod.pointer("/status/containerStatuses")?
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
}

/// The status of container `name` in `pod`, with its position among the statuses.
fn status_mut<'a>(pod: &'a mut Value, name: &str) -> Option<(usize, &'a mut Map<String, Value>)> {
    pod.pointer_mut("/status/containerStatuses")?
        .as_array_mut()?
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .enumerate()
        .find(|(_, s)| s.get("name").and_then(Value::as_str) == Some(name))
}

fn restart_count(status: &Map<String, Value>) -> i64 {
    status
        .get("restartCount")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn has_state(status: &Map<String, Value>, state: &str) -> bool {
    status.get("state").and_then(|s| s.get(state)).is_some()
}

/// Whether container `name` runs, in its run after `restarts` restarts.
pub(crate) fn is_running(pod: &Value, name: &str, restarts: i64) -> bool {
    status_of(pod, name).is_some_and(|s| has_state(s, "running") && restart_count(s) == restarts)
}

/// Whether container `name` waits to be restarted after its run after `restarts` restarts.
pub(crate) fn is_waiting(pod: &Value, name: &str, restarts: i64) -> bool {
    status_of(pod, name).is_some_and(|s| has_state(s, "waiting") && restart_count(s) == restarts)
}

/// The `terminated` state of a container that exited with `code` at `now`.
fn terminated(status: &Map<String, Value>, code: i32, now: &str) -> Value {
    let started = status
        .get("state")
        .and_then(|s| s.pointer("/running/startedAt"))
        .and_then(Value::as_str)
        .unwrap_or(now);
    let reason = if code == 0 { "Completed" } else { "Error" };
    let mut terminated = json!({
        "exitCode": code,
        "reason": reason,
        "startedAt": started,
        "finishedAt": now,
    });
    if let (Some(id), Some(map)) = (status.get("containerID"), terminated.as_object_mut()) {
        map.insert("containerID".into(), id.clone());
    }
    terminated
}

/// Container `name` exited with `code` at `now` and stays so: `state.terminated`, not ready,
/// not started. False when the pod has no such container.
pub(crate) fn terminate(pod: &mut Value, name: &str, code: i32, now: &str) -> bool {
    let Some((_, status)) = status_mut(pod, name) else {
        return false;
    };
    let state = json!({"terminated": terminated(status, code, now)});
    status.insert("state".into(), state);
    status.insert("ready".into(), json!(false));
    status.insert("started".into(), json!(false));
    true
}

/// Container `name` exited with `code` at `now` and waits `delay` to be restarted:
/// `lastState.terminated` holds the exit, `state.waiting` says `CrashLoopBackOff` with
/// upstream's message. False when the pod has no such container.
pub(crate) fn back_off(pod: &mut Value, name: &str, code: i32, now: &str, delay: Duration) -> bool {
    let pod_name = format!(
        "{}_{}({})",
        str_at(pod, "/metadata/name"),
        str_at(pod, "/metadata/namespace"),
        str_at(pod, "/metadata/uid")
    );
    let Some((_, status)) = status_mut(pod, name) else {
        return false;
    };
    let last = json!({"terminated": terminated(status, code, now)});
    let message = format!(
        "back-off {} restarting failed container={name} pod={pod_name}",
        go_duration(delay)
    );
    status.insert(
        "state".into(),
        json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}}),
    );
    status.insert("lastState".into(), last);
    status.insert("ready".into(), json!(false));
    status.insert("started".into(), json!(false));
    true
}

/// Container `name` runs again from `now`: `state.running`, `restartCount` one higher, a new
/// `containerID` (kept apart from the pod's other containers' by the status's position), not
/// ready yet. Returns the new restart count; None when the pod has no such container.
pub(crate) fn restart(pod: &mut Value, name: &str, now: &str) -> Option<i64> {
    let uid = str_at(pod, "/metadata/uid").to_string();
    let (position, status) = status_mut(pod, name)?;
    let restarts = restart_count(status) + 1;
    status.insert("state".into(), json!({"running": {"startedAt": now}}));
    status.insert("restartCount".into(), json!(restarts));
    status.insert(
        "containerID".into(),
        json!(format!("sim://{uid}-{position}-{restarts}")),
    );
    status.insert("ready".into(), json!(false));
    status.insert("started".into(), json!(true));
    Some(restarts)
}

/// The exit code of a container killed at the end of its pod's grace period (SIGKILL).
pub(crate) const KILLED_EXIT_CODE: i32 = 137;

/// Stops every container of a pod being deleted, as the kubelet does once its grace period
/// is over: a running container is killed (`state.terminated`, exit code 137, reason
/// `Error`); one waiting for a restart stays as its last run ended (its `lastState` becomes
/// its state); one that has exited keeps its exit. Returns the pod's terminal phase:
/// `Succeeded` when every container exited 0, else `Failed` (also for a pod with no
/// container status).
pub(crate) fn stop_all(pod: &mut Value, now: &str) -> &'static str {
    let names: Vec<String> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|statuses| {
            statuses
                .iter()
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for name in &names {
        let Some((_, status)) = status_mut(pod, name) else {
            continue;
        };
        if has_state(status, "waiting") {
            let last = status
                .get("lastState")
                .and_then(|s| s.get("terminated"))
                .cloned();
            let ended = last.unwrap_or_else(|| {
                json!({"exitCode": KILLED_EXIT_CODE, "reason": "ContainerStatusUnknown",
                       "message": "The container could not be located when the pod was terminated",
                       "startedAt": null, "finishedAt": now})
            });
            status.insert("state".into(), json!({"terminated": ended}));
            status.remove("lastState");
            status.insert("ready".into(), json!(false));
            status.insert("started".into(), json!(false));
        } else if !has_state(status, "terminated") {
            terminate(pod, name, KILLED_EXIT_CODE, now);
        }
    }
    finished_phase(pod).unwrap_or("Failed")
}

/// The phase of a pod whose containers have all ended for good: `Succeeded` when every exit
/// code is 0, else `Failed`; None while any container runs or waits for a restart.
pub(crate) fn finished_phase(pod: &Value) -> Option<&'static str> {
    let statuses = pod.pointer("/status/containerStatuses")?.as_array()?;
    let codes: Vec<i64> = statuses
        .iter()
        .map(|s| {
            s.pointer("/state/terminated/exitCode")
                .and_then(Value::as_i64)
        })
        .collect::<Option<_>>()?;
    if codes.is_empty() {
        return None;
    }
    Some(if codes.iter().all(|c| *c == 0) {
        "Succeeded"
    } else {
        "Failed"
    })
}

/// Sets every running container's `ready` to `ready` (a container that is not running is
/// never ready) and the pod's conditions to match; false when nothing changed.
pub(crate) fn set_containers_ready(pod: &mut Value, ready: bool, now: &str) -> bool {
    let before = pod.clone();
    if let Some(statuses) = pod
        .pointer_mut("/status/containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for status in statuses.iter_mut().filter_map(Value::as_object_mut) {
            let running = has_state(status, "running");
            status.insert("ready".into(), json!(ready && running));
        }
    }
    sync_ready_conditions(pod, now);
    *pod != before
}

/// Sets the pod's `Ready` and `ContainersReady` conditions from its containers' `ready` flags
/// and its phase, with upstream's reasons; a condition's `lastTransitionTime` moves only when
/// its status does.
///
/// Callers raise a pod to Ready only through [`set_containers_ready`] once its node is Ready
/// (a NotReady node's pods keep `Ready=False` with ready containers).
pub(crate) fn sync_ready_conditions(pod: &mut Value, now: &str) {
    let phase = str_at(pod, "/status/phase").to_string();
    let unready: Vec<String> = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|statuses| {
            statuses
                .iter()
                .filter(|s| s.get("ready") != Some(&json!(true)))
                .map(|s| {
                    s.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let (ready, reason, message) = match phase.as_str() {
        "Succeeded" => (false, Some("PodCompleted"), None),
        "Failed" => (false, Some("PodFailed"), None),
        _ if unready.is_empty() => (true, None, None),
        _ => (
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        ),
    };
    let Some(conditions) = pod
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions.iter_mut() {
        let kind = condition.get("type").and_then(Value::as_str).unwrap_or("");
        if kind != "Ready" && kind != "ContainersReady" {
            continue;
        }
        let status = if ready { "True" } else { "False" };
        let transition = if condition.get("status").and_then(Value::as_str) == Some(status) {
            condition
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or(json!(now))
        } else {
            json!(now)
        };
        let mut updated = json!({
            "type": kind,
            "status": status,
            "lastProbeTime": null,
            "lastTransitionTime": transition,
        });
        if let Some(map) = updated.as_object_mut() {
            if let Some(reason) = reason {
                map.insert("reason".into(), json!(reason));
            }
            if let Some(message) = &message {
                map.insert("message".into(), json!(message));
            }
        }
        *condition = updated;
    }
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `d` as Go prints a `time.Duration` of whole milliseconds: `100ms`, `10s`, `1m30s`.
fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let (minutes, rest_ms) = (ms / 60_000, ms % 60_000);
    let seconds = if rest_ms % 1000 == 0 {
        format!("{}s", rest_ms / 1000)
    } else {
        format!("{}s", rest_ms as f64 / 1000.0)
    };
    if minutes == 0 {
        seconds
    } else {
        format!("{minutes}m{seconds}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(policy: Option<&str>) -> Value {
        let mut pod = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "t0"},
                    {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "t0"},
                ],
                "containerStatuses": [
                    {"name": "a", "state": {"running": {"startedAt": "t0"}}, "lastState": {}, "ready": true, "restartCount": 0, "containerID": "sim://u-0", "started": true},
                    {"name": "b", "state": {"running": {"startedAt": "t0"}}, "lastState": {}, "ready": true, "restartCount": 0, "containerID": "sim://u-1", "started": true},
                ],
            },
        });
        if let Some(policy) = policy {
            pod["spec"]["restartPolicy"] = json!(policy);
        }
        pod
    }

    #[test]
    fn restart_policies() {
        assert_eq!(RestartPolicy::of(&pod(None)), RestartPolicy::Always);
        assert_eq!(
            RestartPolicy::of(&pod(Some("OnFailure"))),
            RestartPolicy::OnFailure
        );
        assert_eq!(RestartPolicy::of(&pod(Some("Never"))), RestartPolicy::Never);
        assert_eq!(
            RestartPolicy::of(&pod(Some("Sometimes"))),
            RestartPolicy::Always
        );
        assert!(RestartPolicy::Always.restarts_after(0));
        assert!(RestartPolicy::OnFailure.restarts_after(1));
        assert!(!RestartPolicy::OnFailure.restarts_after(0));
        assert!(!RestartPolicy::Never.restarts_after(1));
    }

    #[test]
    fn containers_end_one_by_one_and_the_pod_with_the_last() {
        let mut pod = pod(Some("Never"));
        assert!(terminate(&mut pod, "a", 0, "t1"));
        sync_ready_conditions(&mut pod, "t1");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"],
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "t0", "finishedAt": "t1", "containerID": "sim://u-0"}})
        );
        assert_eq!(pod["status"]["containerStatuses"][0]["ready"], false);
        assert_eq!(pod["status"]["containerStatuses"][0]["started"], false);
        assert_eq!(finished_phase(&pod), None, "b still runs");
        let ready = &pod["status"]["conditions"][0];
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "ContainersNotReady");
        assert_eq!(ready["message"], "containers with unready status: [a]");
        assert_eq!(ready["lastTransitionTime"], "t1");

        assert!(terminate(&mut pod, "b", 3, "t2"));
        assert_eq!(
            pod["status"]["containerStatuses"][1]["state"]["terminated"]["reason"],
            "Error"
        );
        assert_eq!(finished_phase(&pod), Some("Failed"));
        pod["status"]["phase"] = json!("Failed");
        sync_ready_conditions(&mut pod, "t2");
        let ready = &pod["status"]["conditions"][0];
        assert_eq!(ready["reason"], "PodFailed");
        assert!(ready.get("message").is_none());
        assert_eq!(ready["lastTransitionTime"], "t1", "no new transition");
        assert!(!terminate(&mut pod, "nope", 0, "t3"));
    }

    #[test]
    fn all_zero_exits_succeed() {
        let mut pod = pod(Some("OnFailure"));
        terminate(&mut pod, "a", 0, "t1");
        terminate(&mut pod, "b", 0, "t1");
        assert_eq!(finished_phase(&pod), Some("Succeeded"));
        assert_eq!(finished_phase(&json!({"status": {}})), None);
        assert_eq!(
            finished_phase(&json!({"status": {"containerStatuses": []}})),
            None
        );
    }

    #[test]
    fn restarts_wait_then_run_again() {
        let mut pod = pod(Some("OnFailure"));
        assert!(is_running(&pod, "a", 0));
        assert!(back_off(&mut pod, "a", 1, "t1", Duration::from_millis(100)));
        let a = &pod["status"]["containerStatuses"][0];
        assert_eq!(
            a["lastState"]["terminated"],
            json!({"exitCode": 1, "reason": "Error", "startedAt": "t0", "finishedAt": "t1", "containerID": "sim://u-0"})
        );
        assert_eq!(a["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            a["state"]["waiting"]["message"],
            "back-off 100ms restarting failed container=a pod=p_ns(u)"
        );
        assert!(!is_running(&pod, "a", 0));
        assert!(is_waiting(&pod, "a", 0));
        assert_eq!(restart(&mut pod, "a", "t2"), Some(1));
        let a = &pod["status"]["containerStatuses"][0];
        assert_eq!(a["state"], json!({"running": {"startedAt": "t2"}}));
        assert_eq!(a["restartCount"], 1);
        assert_eq!(a["containerID"], "sim://u-0-1");
        assert_eq!(a["lastState"]["terminated"]["exitCode"], 1);
        assert!(is_running(&pod, "a", 1));
        assert!(!is_running(&pod, "a", 0), "a stale run is not this one");
        assert_eq!(restart(&mut pod, "nope", "t2"), None);

        assert!(set_containers_ready(&mut pod, true, "t3"));
        assert_eq!(pod["status"]["conditions"][0]["status"], "True");
        assert!(pod["status"]["conditions"][0].get("reason").is_none());
        assert!(!set_containers_ready(&mut pod, true, "t4"), "no change");
    }

    #[test]
    fn durations_print_as_go_does() {
        assert_eq!(go_duration(Duration::from_millis(100)), "100ms");
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
    }
}
