//! Pods that end as their containers' commands say, through a real `kube::Client`: exit codes
//! and phases under each restart policy, restarts in place, several containers on their own
//! schedules, commands the sim cannot follow (they keep running), the steering annotations'
//! precedence, and a pod being deleted no longer changing.

mod common;

use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use kube::api::{Api, DeleteParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use sim::{KubeletConfig, SimCluster};

/// A pod named `name` with `restartPolicy` `policy` (none: the default, Always) and the
/// containers `containers`.
fn pod_with(name: &str, policy: Option<&str>, containers: Value) -> Pod {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": containers},
    });
    if let Some(policy) = policy {
        pod["spec"]["restartPolicy"] = json!(policy);
    }
    serde_json::from_value(pod).expect("valid pod")
}

/// A container named `name` running `sh -c script`.
fn shell(name: &str, script: &str) -> Value {
    json!({"name": name, "image": "busybox:1.36", "command": ["sh", "-c", script]})
}

/// A pod with one container `c` running `sh -c script`.
fn script_pod(name: &str, policy: Option<&str>, script: &str) -> Pod {
    pod_with(name, policy, json!([shell("c", script)]))
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The status of container `name`, once the pod has started.
fn started_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == name))
}

fn container<'a>(pod: &'a Pod, name: &str) -> &'a ContainerStatus {
    started_container(pod, name).unwrap_or_else(|| panic!("no status of container {name}: {pod:?}"))
}

fn condition<'a>(pod: &'a Pod, kind: &str) -> &'a str {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == kind))
        .map_or("", |c| c.status.as_str())
}

fn is_running(status: &ContainerStatus) -> bool {
    status.state.as_ref().is_some_and(|s| s.running.is_some())
}

fn exit_code(status: &ContainerStatus) -> Option<i32> {
    status
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

async fn pod_in_phase(pods: &Api<Pod>, name: &str, wanted: &str) -> Pod {
    common::eventually(&format!("{name} {wanted}"), || async {
        pods.get(name).await.ok().filter(|p| phase(p) == wanted)
    })
    .await
}

/// The pod `name`'s watch events (type and object), from before it exists.
async fn watch_pod(pods: &Api<Pod>, name: &str) -> impl Stream<Item = (String, Pod)> + Unpin {
    let version = common::list_resource_version(pods).await;
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .disable_bookmarks();
    pods.watch(&params, &version)
        .await
        .expect("watch starts")
        .filter_map(|event| async move {
            match event {
                Ok(WatchEvent::Added(p)) => Some(("ADDED".to_string(), p)),
                Ok(WatchEvent::Modified(p)) => Some(("MODIFIED".to_string(), p)),
                Ok(WatchEvent::Deleted(p)) => Some(("DELETED".to_string(), p)),
                _ => None,
            }
        })
        .boxed()
}

/// The events of `stream` up to and including the first that `last` accepts.
async fn events_until(
    stream: &mut (impl Stream<Item = (String, Pod)> + Unpin),
    what: &str,
    last: impl Fn(&str, &Pod) -> bool,
) -> Vec<(String, Pod)> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}; saw {seen:#?}"))
            .unwrap_or_else(|| panic!("watch ended waiting for {what}"));
        let done = last(&event.0, &event.1);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

async fn cluster() -> (SimCluster, Api<Pod>) {
    let cluster = common::cluster().await;
    let pods = Api::namespaced(cluster.client(), "default");
    (cluster, pods)
}

#[tokio::test]
async fn exit_0_with_never_succeeds() {
    let (_cluster, pods) = cluster().await;
    common::create(&pods, &script_pod("done", Some("Never"), "exit 0")).await;
    let pod = pod_in_phase(&pods, "done", "Succeeded").await;
    let c = container(&pod, "c");
    let terminated = c.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(terminated.exit_code, 0);
    assert_eq!(terminated.reason.as_deref(), Some("Completed"));
    assert!(terminated.started_at.is_some() && terminated.finished_at.is_some());
    assert!(!c.ready);
    assert_eq!(c.started, Some(false));
    assert_eq!(c.restart_count, 0);
    assert_eq!(condition(&pod, "Ready"), "False");
    assert_eq!(condition(&pod, "ContainersReady"), "False");
}

#[tokio::test]
async fn a_sleep_then_exit_fails_with_its_code_once_the_sleep_is_over() {
    let (_cluster, pods) = cluster().await;
    let mut events = watch_pod(&pods, "slow").await;
    common::create(
        &pods,
        &script_pod("slow", Some("Never"), "sleep 0.3; exit 3"),
    )
    .await;
    let seen = events_until(&mut events, "slow Failed", |_, p| phase(p) == "Failed").await;
    let running = seen
        .iter()
        .position(|(_, p)| {
            phase(p) == "Running" && started_container(p, "c").is_some_and(is_running)
        })
        .unwrap_or_else(|| panic!("the container ran before it failed: {seen:#?}"));
    assert!(running < seen.len() - 1);
    let failed = &seen[seen.len() - 1].1;
    let c = container(failed, "c");
    let terminated = c.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(terminated.exit_code, 3);
    assert_eq!(terminated.reason.as_deref(), Some("Error"));
    let started = terminated.started_at.as_ref().unwrap().0;
    let finished = terminated.finished_at.as_ref().unwrap().0;
    assert!(started <= finished, "{started} then {finished}");
    assert!(!c.ready);
    assert_eq!(c.started, Some(false));
    assert_eq!(condition(failed, "Ready"), "False");
    assert_eq!(condition(failed, "ContainersReady"), "False");
}

#[tokio::test]
async fn on_failure_restarts_a_failing_container_in_place() {
    let (_cluster, pods) = cluster().await;
    let mut events = watch_pod(&pods, "retry").await;
    common::create(&pods, &script_pod("retry", Some("OnFailure"), "exit 1")).await;
    let seen = events_until(&mut events, "two restarts", |_, p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|cs| cs[0].restart_count >= 2 && is_running(&cs[0]))
    })
    .await;
    let mut counts = Vec::new();
    for (_, pod) in &seen {
        assert!(
            matches!(phase(pod), "Pending" | "Running"),
            "never ends: {pod:?}"
        );
        if let Some(c) = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
        {
            counts.push(c[0].restart_count);
        }
    }
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "{counts:?}");
    let last = &seen[seen.len() - 1].1;
    let c = container(last, "c");
    let previous = c.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(previous.exit_code, 1);
    assert_eq!(previous.reason.as_deref(), Some("Error"));
    assert!(
        c.state
            .as_ref()
            .unwrap()
            .running
            .as_ref()
            .unwrap()
            .started_at
            .is_some()
    );
    let backed_off = seen.iter().any(|(_, p)| {
        started_container(p, "c")
            .and_then(|c| c.state.as_ref())
            .as_ref()
            .and_then(|s| s.waiting.as_ref())
            .is_some_and(|w| w.reason.as_deref() == Some("CrashLoopBackOff"))
    });
    assert!(backed_off, "waits between runs");
}

#[tokio::test]
async fn always_restarts_after_any_exit_and_on_failure_ends_on_exit_0() {
    let (_cluster, pods) = cluster().await;
    common::create(&pods, &script_pod("always", None, "sleep 0.2; exit 0")).await;
    common::create(
        &pods,
        &script_pod("once", Some("OnFailure"), "sleep 0.2 && exit 0"),
    )
    .await;

    let once = pod_in_phase(&pods, "once", "Succeeded").await;
    assert_eq!(container(&once, "c").restart_count, 0);
    assert_eq!(exit_code(container(&once, "c")), Some(0));

    let always = common::eventually("always restarted and ready again", || async {
        pods.get("always").await.ok().filter(|p| {
            let c = container(p, "c");
            c.restart_count >= 1 && c.ready && pod_ready(p)
        })
    })
    .await;
    assert_eq!(phase(&always), "Running");
    let previous = container(&always, "c")
        .last_state
        .as_ref()
        .unwrap()
        .terminated
        .as_ref()
        .unwrap();
    assert_eq!(previous.exit_code, 0);
    assert_eq!(previous.reason.as_deref(), Some("Completed"));
}

fn pod_ready(pod: &Pod) -> bool {
    condition(pod, "Ready") == "True" && condition(pod, "ContainersReady") == "True"
}

#[tokio::test]
async fn each_container_ends_on_its_own_schedule() {
    let (_cluster, pods) = cluster().await;
    let mut pair = watch_pod(&pods, "pair").await;
    common::create(
        &pods,
        &pod_with(
            "pair",
            Some("Never"),
            json!([
                shell("quick", "exit 0"),
                shell("slow", "sleep 0.3 && exit 4")
            ]),
        ),
    )
    .await;
    common::create(
        &pods,
        &pod_with(
            "mixed",
            Some("Never"),
            json!([
                shell("quick", "exit 0"),
                shell("slow", "sleep 0.2; exit 2"),
                {"name": "server", "image": "nginx:1.25"},
            ]),
        ),
    )
    .await;

    let seen = events_until(&mut pair, "pair Failed", |_, p| phase(p) == "Failed").await;
    let half = seen.iter().position(|(_, p)| {
        phase(p) == "Running"
            && started_container(p, "quick").and_then(exit_code) == Some(0)
            && started_container(p, "slow").is_some_and(is_running)
    });
    assert!(half.is_some(), "quick ends first, alone: {seen:#?}");
    let failed = &seen[seen.len() - 1].1;
    assert_eq!(exit_code(container(failed, "quick")), Some(0));
    assert_eq!(exit_code(container(failed, "slow")), Some(4));

    let mixed = common::eventually("mixed's commands over", || async {
        pods.get("mixed")
            .await
            .ok()
            .filter(|p| exit_code(container(p, "slow")).is_some())
    })
    .await;
    assert_eq!(phase(&mixed), "Running", "the server keeps the pod running");
    assert_eq!(exit_code(container(&mixed, "quick")), Some(0));
    assert_eq!(exit_code(container(&mixed, "slow")), Some(2));
    assert!(is_running(container(&mixed, "server")));
    assert!(container(&mixed, "server").ready);
    assert_eq!(condition(&mixed, "Ready"), "False");
    assert_eq!(condition(&mixed, "ContainersReady"), "False");
}

#[tokio::test]
async fn commands_the_sim_cannot_follow_keep_running() {
    let (_cluster, pods) = cluster().await;
    let unknown = [
        pod_with(
            "server",
            Some("Never"),
            json!([{"name": "c", "image": "nginx:1.25"}]),
        ),
        script_pod("script", Some("Never"), "./run-tests.sh; exit 0"),
        script_pod("forever", Some("Never"), "sleep infinity"),
        script_pod("piped", Some("OnFailure"), "sleep 0.1 | exit 1"),
        script_pod("unbalanced", Some("Never"), "exit '0"),
    ];
    for pod in &unknown {
        common::create(&pods, pod).await;
    }
    // A pod created after them ends after a sleep; by then the others would have ended.
    common::create(
        &pods,
        &script_pod("marker", Some("Never"), "sleep 0.3; exit 0"),
    )
    .await;
    pod_in_phase(&pods, "marker", "Succeeded").await;
    for pod in &unknown {
        let name = pod.metadata.name.as_deref().unwrap();
        let pod = pods.get(name).await.unwrap();
        assert_eq!(phase(&pod), "Running", "{name}");
        let c = container(&pod, "c");
        assert!(is_running(c), "{name}: {c:?}");
        assert_eq!(c.restart_count, 0, "{name}");
        assert!(c.ready, "{name}");
    }
}

#[tokio::test]
async fn annotations_win_over_commands() {
    let (_cluster, pods) = cluster().await;
    let mut succeeds = watch_pod(&pods, "told-to-succeed").await;
    let mut told_to_succeed = script_pod("told-to-succeed", Some("Never"), "exit 3");
    told_to_succeed.metadata.annotations =
        Some([(sim::SUCCEED_AFTER_MS.to_string(), "200".to_string())].into());
    let mut told_to_fail = script_pod("told-to-fail", Some("Never"), "exit 0");
    told_to_fail.metadata.annotations =
        Some([(sim::FAIL_AFTER_MS.to_string(), "200".to_string())].into());
    common::create(&pods, &told_to_succeed).await;
    common::create(&pods, &told_to_fail).await;

    let seen = events_until(&mut succeeds, "told-to-succeed ended", |_, p| {
        matches!(phase(p), "Succeeded" | "Failed")
    })
    .await;
    let ended = &seen[seen.len() - 1].1;
    assert_eq!(phase(ended), "Succeeded", "{seen:#?}");
    assert_eq!(exit_code(container(ended, "c")), Some(0));

    let failed = common::eventually("told-to-fail ended", || async {
        pods.get("told-to-fail")
            .await
            .ok()
            .filter(|p| matches!(phase(p), "Succeeded" | "Failed"))
    })
    .await;
    assert_eq!(phase(&failed), "Failed");
    assert_eq!(exit_code(container(&failed, "c")), Some(1));
}

/// A pod being deleted restarts its containers no more; at the end of its grace period the
/// kubelet stops them and writes the terminal phase (one change), then the pod goes.
#[tokio::test]
async fn a_pod_being_deleted_stops_changing_until_the_kubelet_stops_it() {
    let cluster = common::cluster_with_kubelet(KubeletConfig {
        deletion_delay: Duration::from_millis(800),
        ..KubeletConfig::default()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(cluster.client(), "default");
    let mut events = watch_pod(&pods, "doomed").await;
    common::create(&pods, &script_pod("doomed", Some("OnFailure"), "exit 1")).await;
    common::eventually("doomed restarted", || async {
        pods.get("doomed")
            .await
            .ok()
            .filter(|p| container(p, "c").restart_count >= 1)
    })
    .await;
    common::delete(&pods, "doomed", &DeleteParams::default()).await;
    let seen = events_until(&mut events, "doomed gone", |kind, _| kind == "DELETED").await;
    let terminating = seen
        .iter()
        .position(|(_, p)| p.metadata.deletion_timestamp.is_some())
        .expect("a terminating update");
    let statuses: Vec<_> = seen[terminating..]
        .iter()
        .map(|(_, p)| p.status.clone())
        .collect();
    let changes = statuses.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        changes <= 1,
        "one change after the deletion began: {statuses:#?}"
    );
    assert!(seen.len() - terminating >= 2, "the DELETED event follows");
    let (_, last) = &seen[seen.len() - 1];
    assert_eq!(phase(last), "Failed", "{seen:#?}");
    let code = exit_code(container(last, "c"));
    assert!(
        matches!(code, Some(1 | 137)),
        "its last exit, or killed: {code:?}"
    );
    assert!(!container(last, "c").ready);
}
