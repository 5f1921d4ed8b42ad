//! `GetTargetNodeName`, `getNodesToDaemonPods`, `podByCreationTimestampAndPhase`,
//! `podsShouldBeOnNode` and `manage`.

use std::sync::Arc;
use std::time::Duration;

use controller_toolkit::EventType;
use informer::CachedPod;
use serde_json::{Value, json};

use super::{PodBuilder, at, daemon_set, fit, keys, nodes_to_pods, now, pod, rolling, sync_input};
use crate::decide::backoff::FailedPodBackoff;
use crate::decide::node_fit::NodeFit;
use crate::decide::nodes_to_pods::{
    ManagePlan, creation_order, manage, nodes_to_daemon_pods, pods_should_be_on_node,
    unscheduled_pods_without_node,
};

/// `GetTargetNodeName` as the cached pod answers it (the node of an unbound pod is the one
/// its affinity pins it to): upstream's cases, on pods decoded as the informer decodes them.
#[test]
fn upstream_get_target_node_name_cases() {
    let pinned = |values: Value| {
        json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": values}]}]
        }}}})
    };
    #[rustfmt::skip]
    let cases = [
        ("bound: spec.nodeName", json!({"containers": [], "nodeName": "node-1"}), Some("node-1")),
        ("pinned by the affinity", pinned(json!(["node-1"])), Some("node-1")),
        ("pinned to two nodes: not unique", pinned(json!(["node-1", "node-2"])), None),
        ("no affinity", json!({"containers": []}), None),
        ("no terms", json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}), None),
        ("terms without a pinning requirement", json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["x"]}]}]}}}}), None),
        ("the first pinning requirement in a later term", json!({"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}}}}), Some("node-3")),
    ];
    for (rule, spec, want) in cases {
        let pod: CachedPod =
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec}))
                .expect("a valid pod");
        assert_eq!(pod.target_node_name(), want, "{rule}");
    }
}

fn names(pods: &[Arc<CachedPod>]) -> Vec<&str> {
    pods.iter()
        .filter_map(|pod| pod.metadata.name.as_deref())
        .collect()
}

#[test]
fn pods_are_grouped_by_target_node() {
    let pods: Vec<Arc<CachedPod>> = [
        pod("bound-1").on("node-1"),
        pod("bound-2").on("node-2"),
        // Pinned but unbound: it counts for its node already.
        pod("pinned").pinned_to("node-1"),
        pod("nowhere"),
        pod("failed-deleted")
            .on("node-1")
            .phase("Failed")
            .deleting(),
        pod("succeeded-deleted")
            .on("node-2")
            .phase("Succeeded")
            .deleting(),
        pod("terminating").on("node-2").deleting(),
        pod("failed").on("node-2").phase("Failed"),
    ]
    .into_iter()
    .map(PodBuilder::build)
    .collect();
    let grouped = nodes_to_daemon_pods(&pods, false);
    let by_node: Vec<(&str, Vec<&str>)> = grouped
        .iter()
        .map(|(node, pods)| (node.as_str(), names(pods)))
        .collect();
    assert_eq!(
        by_node,
        vec![
            ("node-1", vec!["bound-1", "pinned"]),
            ("node-2", vec!["bound-2", "terminating", "failed"]),
        ],
        "no target: skipped; terminal and deleted: dropped; terminating: kept"
    );
    let with_deleted = nodes_to_daemon_pods(&pods, true);
    assert_eq!(
        names(&with_deleted["node-1"]),
        vec!["bound-1", "pinned", "failed-deleted"],
        "history cleanup counts deleted terminal pods"
    );
}

#[test]
fn creation_order_puts_bound_then_older_then_smaller_names_first() {
    let mut pods: Vec<Arc<CachedPod>> = [
        pod("unbound-oldest").created(1),
        pod("b").on("n").created(5),
        pod("a").on("n").created(5),
        pod("oldest").on("n").created(2),
        pod("no-timestamp")
            .on("n")
            .patch(json!({"metadata": {"creationTimestamp": null}})),
    ]
    .into_iter()
    .map(PodBuilder::build)
    .collect();
    pods.sort_by(|lhs, rhs| creation_order(lhs, rhs));
    assert_eq!(
        names(&pods),
        vec!["no-timestamp", "oldest", "a", "b", "unbound-oldest"]
    );
}

fn plan(creates: &[&str], deletes: &[&str]) -> ManagePlan {
    ManagePlan {
        create_on_nodes: creates.iter().map(|node| (*node).to_owned()).collect(),
        delete_pods: keys(deletes),
        ..ManagePlan::default()
    }
}

fn surge() -> Value {
    rolling(json!({"maxUnavailable": 0, "maxSurge": 1}))
}

#[test]
fn pods_should_be_on_node_cases() {
    let runs = fit("node-1", true, true);
    // (rule, DaemonSet patch, fit, pods on the node (None: no entry), plan)
    type Case = (
        &'static str,
        Value,
        NodeFit,
        Option<Vec<PodBuilder>>,
        ManagePlan,
    );
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("should run, no pod: create", json!({}), runs.clone(), None, plan(&["node-1"], &[])),
        ("should run, its pod runs: nothing", json!({}), runs.clone(), Some(vec![pod("p").on("node-1")]), plan(&[], &[])),
        ("TestDealsWithExistingPods: duplicates keep the first, bound before older", json!({}), runs.clone(), Some(vec![pod("unbound-old").created(1), pod("bound-new").on("node-1").created(9), pod("bound-newer").on("node-1").created(10)]), plan(&[], &["bound-newer", "unbound-old"])),
        ("a terminating pod blocks a new one without surge", json!({}), runs.clone(), Some(vec![pod("going").on("node-1").deleting()]), plan(&[], &[])),
        ("a terminating pod does not block a new one with surge", surge(), runs.clone(), Some(vec![pod("going").on("node-1").deleting()]), plan(&["node-1"], &[])),
        ("surge: new pod not yet available beside a ready old one: keep both", surge(), runs.clone(), Some(vec![pod("old").on("node-1").hash("h0").ready().created(1), pod("new").on("node-1").hash("h1").created(2)]), plan(&[], &[])),
        ("surge: the new pod is available: delete the old one", surge(), runs.clone(), Some(vec![pod("old").on("node-1").hash("h0").ready().created(1), pod("new").on("node-1").hash("h1").ready().created(2)]), plan(&[], &["old"])),
        ("surge: the old pod is not ready: delete it", surge(), runs.clone(), Some(vec![pod("old").on("node-1").hash("h0").created(1), pod("new").on("node-1").hash("h1").created(2)]), plan(&[], &["old"])),
        ("surge: beyond the oldest new and the oldest old, every pod goes", surge(), runs.clone(), Some(vec![pod("old-1").on("node-1").hash("h0").ready().created(1), pod("old-2").on("node-1").hash("h0").created(2), pod("new-1").on("node-1").hash("h1").created(3), pod("new-2").on("node-1").hash("h1").created(4)]), plan(&[], &["old-2", "new-2"])),
        ("surge: two new pods, no old one", surge(), runs.clone(), Some(vec![pod("new-2").on("node-1").hash("h1").created(4), pod("new-1").on("node-1").hash("h1").created(3)]), plan(&[], &["new-2"])),
        ("TestSucceededPodsDeleted: a succeeded pod is deleted, no backoff", json!({}), runs.clone(), Some(vec![pod("done").on("node-1").phase("Succeeded")]), ManagePlan { events: vec![crate::decide::events::succeeded_daemon_pod("default", "done", "node-1")], ..plan(&[], &["done"]) }),
        ("may not stay (NoExecute): every pod not being deleted goes", json!({}), fit("node-1", false, false), Some(vec![pod("a").on("node-1"), pod("b").on("node-1").phase("Failed"), pod("c").on("node-1").deleting()]), plan(&[], &["a", "b"])),
        ("NoSchedule only, no pod: nothing", json!({}), fit("node-1", false, true), None, plan(&[], &[])),
        ("NoSchedule only, surging, no running pod: no new pod", surge(), fit("node-1", false, true), Some(vec![pod("going").on("node-1").deleting()]), plan(&[], &[])),
        ("should not run, no pod: nothing", json!({}), fit("node-1", false, false), None, plan(&[], &[])),
    ];
    for (rule, patch, fit, pods, want) in cases {
        let ds = daemon_set(patch);
        let map = nodes_to_pods(pods.map(|pods| vec![("node-1", pods)]).unwrap_or_default());
        let fits = [fit.clone()];
        let input = sync_input(&ds, &fits, &map, "h1", now());
        let mut backoff = FailedPodBackoff::default();
        assert_eq!(
            pods_should_be_on_node(&input, &fit, &mut backoff),
            want,
            "{rule}"
        );
    }
}

#[test]
fn failed_pods_are_deleted_once_per_backoff_window() {
    let ds = daemon_set(json!({}));
    let fits = [fit("node-1", true, true)];
    let map = nodes_to_pods(vec![(
        "node-1",
        vec![pod("crashed").on("node-1").phase("Failed")],
    )]);
    let mut backoff = FailedPodBackoff::default();
    let sync_at = |seconds: i64, backoff: &mut FailedPodBackoff| {
        let input = sync_input(&ds, &fits, &map, "h1", at(seconds));
        manage(&input, backoff)
    };
    // TestDaemonKillFailedPods: the first sighting deletes it with a warning.
    let first = sync_at(100, &mut backoff);
    assert_eq!(first.delete_pods, keys(&["crashed"]));
    assert_eq!(first.events.len(), 1);
    assert_eq!(first.events[0].type_, EventType::Warning);
    assert_eq!(first.events[0].reason, "FailedDaemonPod");
    assert_eq!(
        first.events[0].message,
        "Found failed daemon pod default/crashed on node node-1, will try to kill it"
    );
    assert_eq!(first.requeue_after, None);
    // TestDaemonKillFailedPodsBackoff: within the 1 s window: no delete, requeue after it.
    let again = sync_at(100, &mut backoff);
    assert_eq!(again.delete_pods, Vec::<String>::new());
    assert!(again.events.is_empty());
    assert_eq!(again.requeue_after, Some(Duration::from_secs(1)));
    // After the window: deleted again, and the window doubles.
    let later = sync_at(101, &mut backoff);
    assert_eq!(later.delete_pods, keys(&["crashed"]));
    let within = sync_at(102, &mut backoff);
    assert_eq!(within.requeue_after, Some(Duration::from_secs(2)));
}

#[test]
fn manage_walks_the_node_list_then_unbound_pods_of_vanished_nodes() {
    let ds = daemon_set(json!({}));
    let fits = [
        fit("node-1", true, true),
        fit("node-2", true, true),
        fit("node-3", false, false),
    ];
    let map = nodes_to_pods(vec![
        ("node-1", vec![pod("ok").on("node-1")]),
        ("node-3", vec![pod("misplaced").on("node-3")]),
        // TestDeleteUnscheduledPodForNotExistingNode: node-gone left the node list.
        (
            "node-gone",
            vec![pod("bound-gone").on("node-gone"), pod("unbound-gone")],
        ),
    ]);
    let input = sync_input(&ds, &fits, &map, "h1", now());
    let managed = manage(&input, &mut FailedPodBackoff::default());
    assert_eq!(managed, plan(&["node-2"], &["misplaced", "unbound-gone"]));
    assert_eq!(
        unscheduled_pods_without_node(&fits, &map),
        keys(&["unbound-gone"]),
        "bound pods of vanished nodes are pod GC's"
    );
}
