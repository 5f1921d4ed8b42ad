//! `NodeShouldRunDaemonPod`: upstream's `TestNodeShouldRunDaemonPod` table (for both update
//! strategies) and the taint tests of daemon_controller_test.go, then the node-update worker's
//! tests (`TestUpdateNode`, `shouldIgnoreNodeUpdate`).

use informer::CachedNode;
use k8s_openapi::api::apps::v1::DaemonSet;
use serde_json::{Value, json};

use super::{daemon_set, node, plain_node};
use crate::FeatureGates;
use crate::decide::node_fit::{
    NodeFit, node_fits, node_should_run_daemon_pod, node_update_concerns, node_update_is_ignored,
};

/// A template spec patch.
fn template_spec(spec: Value) -> Value {
    json!({"spec": {"template": {"spec": spec}}})
}

fn resources(memory: &str, cpu: &str) -> Value {
    json!([{"name": "c", "image": "img:1", "resources": {"requests": {"memory": memory, "cpu": cpu}}}])
}

/// Asserts upstream's `(shouldRun, shouldContinueRunning)` for the DaemonSet on the node.
fn assert_fit(node: &CachedNode, ds: &DaemonSet, want: (bool, bool), rule: &str) {
    let fit = node_should_run_daemon_pod(node, ds, FeatureGates::default());
    assert_eq!(
        (fit.should_run, fit.should_continue_running),
        want,
        "{rule}"
    );
}

#[test]
fn upstream_node_should_run_daemon_pod_table() {
    let simple_label = json!({"name": "simple-daemon", "type": "production"});
    let affinity = |value: &str| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "type", "operator": "In", "values": [value]}
            ]}]
        }}})
    };
    // (predicate name, template spec, node unschedulable, shouldRun, shouldContinueRunning)
    #[rustfmt::skip]
    let cases = [
        ("ShouldRunDaemonPod", json!({"containers": resources("50M", "0.5")}), false, true, true),
        ("InsufficientResourceError: resources are the scheduler's business", json!({"containers": resources("200M", "0.5")}), false, true, true),
        ("ErrPodNotMatchHostName", json!({"nodeName": "other-node", "containers": resources("50M", "0.5")}), false, false, false),
        ("ShouldRunDaemonPod: a template pinned to this node", json!({"nodeName": "test-node", "containers": resources("50M", "0.5")}), false, true, true),
        ("ErrPodNotFitsHostPorts: ports are the scheduler's business", json!({"containers": [{"name": "c", "image": "i", "ports": [{"hostPort": 666, "containerPort": 666}]}]}), false, true, true),
        ("ErrNodeSelectorNotMatch", json!({"containers": [], "nodeSelector": {"name": "simple-daemon-2", "type": "production"}}), false, false, false),
        ("ShouldRunDaemonPod: nodeSelector matches", json!({"containers": [], "nodeSelector": simple_label.clone()}), false, true, true),
        ("ErrPodAffinityNotMatch", json!({"containers": [], "affinity": affinity("test")}), false, false, false),
        ("ShouldRunDaemonPod: affinity matches", json!({"containers": [], "affinity": affinity("production")}), false, true, true),
        ("ShouldRunDaemonPodOnUnschedulableNode", json!({"containers": resources("50M", "0.5")}), true, true, true),
    ];
    for strategy in ["OnDelete", "RollingUpdate"] {
        for (name, spec, unschedulable, should_run, should_continue_running) in cases.clone() {
            let mut patch = template_spec(spec);
            json_patch::merge(
                &mut patch,
                &json!({"spec": {"updateStrategy": {"type": strategy}}}),
            );
            let ds = daemon_set(patch);
            // `spec.unschedulable` is not even kept in the cache: it never decides.
            let test_node: CachedNode = serde_json::from_value(json!({
                "metadata": {"name": "test-node", "labels": simple_label.clone()},
                "spec": {"unschedulable": unschedulable, "taints": []}
            }))
            .expect("a node");
            let want = (should_run, should_continue_running);
            assert_fit(&test_node, &ds, want, &format!("{strategy}: {name}"));
        }
    }
}

#[test]
fn taints_against_the_daemon_pods_tolerations() {
    let taint = |key: &str, value: Option<&str>, effect: &str| json!({"key": key, "value": value, "effect": effect});
    let user_toleration = json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]);
    // (upstream test / rule, node taints, template spec, shouldRun, shouldContinueRunning)
    #[rustfmt::skip]
    let cases = [
        ("TestTaintedNodeDaemonDoesNotLaunchIntolerantPod: NoSchedule keeps a running pod", json!([taint("dedicated", Some("user1"), "NoSchedule")]), json!({"containers": []}), false, true),
        ("TestTaintedNodeDaemonLaunchesToleratePod", json!([taint("dedicated", Some("user1"), "NoSchedule")]), json!({"containers": [], "tolerations": user_toleration.clone()}), true, true),
        ("an untolerated NoExecute taint evicts", json!([taint("dedicated", Some("user1"), "NoExecute")]), json!({"containers": []}), false, false),
        ("untolerated NoSchedule with a tolerated NoExecute: the pod stays", json!([taint("dedicated", Some("user1"), "NoSchedule"), taint("evict", None, "NoExecute")]), json!({"containers": [], "tolerations": [{"key": "evict", "operator": "Exists", "effect": "NoExecute"}]}), false, true),
        ("PreferNoSchedule taints are ignored", json!([taint("dedicated", Some("user1"), "PreferNoSchedule")]), json!({"containers": []}), true, true),
        ("TestNotReadyNodeDaemonLaunchesPod: not-ready is tolerated by default", json!([taint("node.kubernetes.io/not-ready", None, "NoExecute")]), json!({"containers": []}), true, true),
        ("TestUnreachableNodeDaemonLaunchesPod: unreachable is tolerated by default", json!([taint("node.kubernetes.io/unreachable", None, "NoExecute")]), json!({"containers": []}), true, true),
        ("TestTaintPressureNodeDaemonLaunchesPod: pressure and unschedulable taints", json!([taint("node.kubernetes.io/disk-pressure", None, "NoSchedule"), taint("node.kubernetes.io/memory-pressure", None, "NoSchedule"), taint("node.kubernetes.io/pid-pressure", None, "NoSchedule"), taint("node.kubernetes.io/unschedulable", None, "NoSchedule")]), json!({"containers": []}), true, true),
        ("network-unavailable is not tolerated without hostNetwork", json!([taint("node.kubernetes.io/network-unavailable", None, "NoSchedule")]), json!({"containers": []}), false, true),
        ("network-unavailable is tolerated with hostNetwork", json!([taint("node.kubernetes.io/network-unavailable", None, "NoSchedule")]), json!({"containers": [], "hostNetwork": true}), true, true),
        ("the default tolerations cover NoSchedule pressure only, not NoExecute pressure", json!([taint("node.kubernetes.io/memory-pressure", None, "NoExecute")]), json!({"containers": []}), false, false),
        ("an Lt toleration without the comparison gate tolerates nothing", json!([taint("tier", Some("5"), "NoSchedule")]), json!({"containers": [], "tolerations": [{"key": "tier", "operator": "Lt", "value": "10", "effect": "NoSchedule"}]}), false, true),
    ];
    for (rule, taints, spec, should_run, should_continue_running) in cases {
        let ds = daemon_set(template_spec(spec));
        let tainted = node("node-1", json!({}), taints);
        assert_fit(&tainted, &ds, (should_run, should_continue_running), rule);
    }
}

#[test]
fn the_comparison_gate_lets_lt_tolerations_tolerate() {
    let ds = daemon_set(template_spec(json!({"containers": [], "tolerations": [
        {"key": "tier", "operator": "Lt", "value": "10", "effect": "NoSchedule"}
    ]})));
    let tainted = node(
        "node-1",
        json!({}),
        json!([{"key": "tier", "value": "5", "effect": "NoSchedule"}]),
    );
    let gates = FeatureGates {
        taint_toleration_comparison_operators: true,
    };
    assert!(node_should_run_daemon_pod(&tainted, &ds, gates).should_run);
}

#[test]
fn node_fits_keep_the_node_list_order() {
    let ds = daemon_set(template_spec(
        json!({"containers": [], "nodeSelector": {"role": "edge"}}),
    ));
    let nodes = [
        node("b", json!({"role": "edge"}), json!([])),
        plain_node("a"),
        node(
            "c",
            json!({"role": "edge"}),
            json!([{"key": "x", "effect": "NoSchedule"}]),
        ),
    ];
    let fit = |node: &str, should_run, should_continue_running| NodeFit {
        node: node.to_owned(),
        should_run,
        should_continue_running,
    };
    assert_eq!(
        node_fits(&ds, &nodes, FeatureGates::default()),
        vec![
            fit("b", true, true),
            fit("a", false, false),
            fit("c", false, true)
        ]
    );
}

#[test]
fn node_update_worker_enqueues_when_the_node_concerns_the_daemon_set() {
    let fit = |should_run, should_continue_running| NodeFit {
        node: "node-1".to_owned(),
        should_run,
        should_continue_running,
    };
    // (rule, fit, scheduled, numberMisscheduled, enqueue)
    #[rustfmt::skip]
    let cases = [
        ("should run, no pod yet: create", fit(true, true), false, 0, true),
        ("should run, has its pod", fit(true, true), true, 0, false),
        ("may not stay, has a pod: delete", fit(false, false), true, 0, true),
        ("may not stay, no pod", fit(false, false), false, 0, false),
        ("NoSchedule only, has a pod", fit(false, true), true, 0, false),
        ("has a pod and misscheduled pods are counted: recount (PR #132477)", fit(true, true), true, 1, true),
        ("no pod, misscheduled elsewhere", fit(false, true), false, 3, false),
    ];
    for (rule, fit, scheduled, misscheduled, want) in cases {
        assert_eq!(
            node_update_concerns(&fit, scheduled, misscheduled),
            want,
            "{rule}"
        );
    }
}

#[test]
fn only_label_and_taint_changes_reach_the_node_update_worker() {
    let base = node("node1", json!({"a": "b"}), json!([]));
    // What the cache keeps of a node whose status (and version) changed: its status is not
    // kept, so it reads as the same node.
    let status_only: CachedNode = serde_json::from_value(json!({
        "metadata": {"name": "node1", "labels": {"a": "b"}, "resourceVersion": "2"},
        "spec": {"taints": []},
        "status": {"allocatable": {"cpu": "200m", "memory": "200M"},
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastHeartbeatTime": "2026-11-23T10:00:10Z"}]}
    }))
    .expect("a node");
    let relabelled = node("node1", json!({"a": "c"}), json!([]));
    let tainted = node(
        "node1",
        json!({"a": "b"}),
        json!([{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]),
    );
    let unlabelled = node("node1", Value::Null, json!([]));
    let empty_labels = node("node1", json!({}), Value::Null);
    // (TestUpdateNode case, old, new, ignored)
    #[rustfmt::skip]
    let cases = [
        ("Nothing changed, should not enqueue", &base, &base, true),
        ("Node Allocatable changed", &base, &status_only, true),
        ("Node labels changed", &base, &relabelled, false),
        ("Node taints changed", &tainted, &base, false),
        ("absent and empty labels and taints are equal", &unlabelled, &empty_labels, true),
    ];
    for (name, old, new, ignored) in cases {
        assert_eq!(node_update_is_ignored(old, new), ignored, "{name}");
    }
}
