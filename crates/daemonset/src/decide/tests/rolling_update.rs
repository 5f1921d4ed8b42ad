//! `rollingUpdate` (update.go): `TestIsPodUpdated`, `TestGetUnavailableNumbers`, and the
//! steps of update_test.go's rollouts as single syncs, without and with surge.

use serde_json::{Value, json};

use super::{PodBuilder, daemon_set, fit, keys, nodes_to_pods, now, pod, rolling, sync_input};
use crate::decide::node_fit::NodeFit;
use crate::decide::rolling_update::{
    DesiredNodeCounts, RollingUpdateError, RollingUpdatePlan, find_updated_pods_on_node,
    is_pod_updated, rolling_update, updated_desired_node_counts,
};
use crate::decide::{NodesToPods, SyncInput};

#[test]
fn upstream_is_pod_updated_cases() {
    let generation = 12345;
    let labelled = || pod("pod1").on("node1").generation(generation).hash("55555");
    let no_hash = || pod("pod1").on("node1").generation(generation);
    let no_labels = || {
        pod("pod1")
            .on("node1")
            .patch(json!({"metadata": {"labels": null}}))
    };
    // (case, DaemonSet generation, pod, hash, updated)
    #[rustfmt::skip]
    let cases = [
        ("templateGeneration and hash both match", Some(generation), labelled(), "55555", true),
        ("templateGeneration matches, hash doesn't", Some(generation), labelled(), "55555123", true),
        ("templateGeneration matches, no hash label, has hash", Some(generation), no_hash(), "55555", true),
        ("templateGeneration matches, no hash label, no hash", Some(generation), no_hash(), "", true),
        ("templateGeneration matches, has hash label, no hash", Some(generation), labelled(), "", true),
        ("templateGeneration doesn't match, hash does", Some(generation + 1), labelled(), "55555", true),
        ("templateGeneration and hash don't match", Some(generation + 1), labelled(), "55555123", false),
        ("empty labels, no hash", Some(generation), pod("pod1"), "", false),
        ("empty labels", Some(generation), pod("pod1"), "55555", false),
        ("no labels", Some(generation), no_labels(), "55555", false),
        ("no template generation, hash matches", None, labelled(), "55555", true),
        ("no template generation, no hash", None, labelled(), "", false),
    ];
    for (case, ds_generation, pod, hash, want) in cases {
        assert_eq!(
            is_pod_updated(&pod.build(), hash, ds_generation),
            want,
            "{case}"
        );
    }
}

fn fits(count: usize) -> Vec<NodeFit> {
    (0..count)
        .map(|index| fit(&format!("node-{index}"), true, true))
        .collect()
}

/// The input of a sync at the revision `new`, at [`now`].
fn input<'a>(
    daemon_set: &'a k8s_openapi::api::apps::v1::DaemonSet,
    fits: &'a [NodeFit],
    nodes_to_pods: &'a NodesToPods,
) -> SyncInput<'a> {
    sync_input(daemon_set, fits, nodes_to_pods, "new", now())
}

fn surge(value: Value) -> Value {
    rolling(json!({"maxUnavailable": 0, "maxSurge": value}))
}

fn unavailable(value: Value) -> Value {
    rolling(json!({"maxUnavailable": value}))
}

#[test]
fn upstream_get_unavailable_numbers_cases() {
    let ready = |name: &str, node: &str| pod(name).on(node).ready();
    // (case, strategy, nodes, node-to-pods, (maxSurge, maxUnavailable, desired), empty nodes)
    #[rustfmt::skip]
    let cases = [
        ("No nodes", unavailable(json!(0)), 0, vec![], (0, 0, 0), 0),
        ("Two nodes with ready pods", unavailable(json!(1)), 2, vec![("node-0", vec![ready("pod-0", "node-0")]), ("node-1", vec![ready("pod-1", "node-1")])], (0, 1, 2), 0),
        ("Two nodes, one node without pods", unavailable(json!(0)), 2, vec![("node-0", vec![ready("pod-0", "node-0")])], (0, 1, 2), 1),
        ("Two nodes, one node without pods, surge", surge(json!(0)), 2, vec![("node-0", vec![ready("pod-0", "node-0")])], (0, 1, 2), 1),
        ("Two nodes with pods, MaxUnavailable in percents", unavailable(json!("50%")), 2, vec![("node-0", vec![ready("pod-0", "node-0")]), ("node-1", vec![ready("pod-1", "node-1")])], (0, 1, 2), 0),
        ("Two nodes with pods, MaxUnavailable in percents, surge", surge(json!("50%")), 2, vec![("node-0", vec![ready("pod-0", "node-0")]), ("node-1", vec![ready("pod-1", "node-1")])], (1, 0, 2), 0),
        ("Two nodes with pods, MaxUnavailable is 100%, surge", surge(json!("100%")), 2, vec![("node-0", vec![ready("pod-0", "node-0")]), ("node-1", vec![ready("pod-1", "node-1")])], (2, 0, 2), 0),
        ("Two nodes with pods, MaxUnavailable in percents, pod terminating", unavailable(json!("50%")), 3, vec![("node-0", vec![ready("pod-0", "node-0")]), ("node-1", vec![ready("pod-1", "node-1").deleting()])], (0, 2, 3), 1),
    ];
    for (case, strategy, nodes, pods, (max_surge, max_unavailable, desired), empty) in cases {
        let ds = daemon_set(strategy);
        let node_fits = fits(nodes);
        let original = nodes_to_pods(pods);
        let mut map = original.clone();
        let counts = updated_desired_node_counts(&input(&ds, &node_fits, &original), &mut map);
        assert_eq!(
            counts,
            Ok(DesiredNodeCounts {
                max_surge,
                max_unavailable,
                desired_number_scheduled: desired,
            }),
            "{case}"
        );
        let empty_nodes = map.values().filter(|pods| pods.is_empty()).count();
        assert_eq!(empty_nodes, empty, "{case}");
    }
}

#[test]
fn find_updated_pods_on_node_cases() {
    let name = |pod: Option<&std::sync::Arc<informer::CachedPod>>| {
        pod.and_then(|pod| pod.metadata.name.clone())
    };
    // (rule, pods, Some((updated, old)) or None when not ok)
    type Found = Option<(Option<&'static str>, Option<&'static str>)>;
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<PodBuilder>, Found)> = vec![
        ("no pods", vec![], Some((None, None))),
        ("one of each", vec![pod("o").hash("old"), pod("n").hash("new")], Some((Some("n"), Some("o")))),
        ("two old: not ok", vec![pod("o1").hash("old"), pod("o2").hash("old")], None),
        ("two new: not ok", vec![pod("n1").hash("new"), pod("n2").hash("new")], None),
        ("pods being deleted do not count", vec![pod("o1").hash("old").deleting(), pod("o2").hash("old")], Some((None, Some("o2")))),
    ];
    for (rule, pods, want) in cases {
        let pods: Vec<_> = pods.into_iter().map(PodBuilder::build).collect();
        let found = find_updated_pods_on_node(&pods, "new", None)
            .map(|(updated, old)| (name(updated), name(old)));
        let want = want.map(|(updated, old)| (updated.map(str::to_owned), old.map(str::to_owned)));
        assert_eq!(found, want, "{rule}");
    }
}

fn plan(creates: &[&str], deletes: &[&str]) -> RollingUpdatePlan {
    RollingUpdatePlan {
        create_on_nodes: creates.iter().map(|node| (*node).to_owned()).collect(),
        delete_pods: keys(deletes),
    }
}

/// Node `node-<index>` with the given pods, named after their node.
fn on_nodes(pods: Vec<(usize, Vec<PodBuilder>)>) -> NodesToPods {
    let named: Vec<(String, Vec<PodBuilder>)> = pods
        .into_iter()
        .map(|(index, pods)| (format!("node-{index}"), pods))
        .collect();
    nodes_to_pods(
        named
            .iter()
            .map(|(node, pods)| (node.as_str(), pods.clone()))
            .collect(),
    )
}

/// The pod of template `hash` ("old" or "new") on node `index`, named after both.
fn placed(hash: &str, index: usize) -> PodBuilder {
    pod(&format!("{hash}-{index}"))
        .on(&format!("node-{index}"))
        .hash(hash)
}

fn old_ready(index: usize) -> PodBuilder {
    placed("old", index).ready()
}

fn old_unready(index: usize) -> PodBuilder {
    placed("old", index)
}

fn new_ready(index: usize) -> PodBuilder {
    placed("new", index).ready()
}

fn new_unready(index: usize) -> PodBuilder {
    placed("new", index)
}

#[test]
fn rolling_update_without_surge() {
    let all_old = || on_nodes((0..5).map(|i| (i, vec![old_ready(i)])).collect());
    // (case, strategy, node-to-pods, plan)
    #[rustfmt::skip]
    let cases = [
        ("OnDelete updates nothing", json!({}), all_old(), plan(&[], &[])),
        ("an unknown strategy type updates nothing", json!({"spec": {"updateStrategy": {"type": "Sometimes"}}}), all_old(), plan(&[], &[])),
        ("TestDaemonSetUpdatesPods: maxUnavailable 2 deletes 2 old pods", unavailable(json!(2)), all_old(), plan(&[], &["old-0", "old-1"])),
        ("TestDaemonSetUpdatesWhenNewPodIsNotReady: 3 new pods not ready use the budget", unavailable(json!(3)), on_nodes(vec![(0, vec![new_unready(0)]), (1, vec![new_unready(1)]), (2, vec![new_unready(2)]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&[], &[])),
        ("TestDaemonSetUpdatesSomeOldPodsNotReady: unavailable old pods go regardless", unavailable(json!(1)), on_nodes(vec![(0, vec![old_unready(0)]), (1, vec![old_unready(1)]), (2, vec![old_ready(2)]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&[], &["old-0", "old-1"])),
        ("replacements come first, then candidates up to what is left of the budget", unavailable(json!(2)), on_nodes(vec![(0, vec![old_ready(0)]), (1, vec![old_ready(1)]), (2, vec![old_unready(2)]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&[], &["old-2", "old-0"])),
        ("TestDaemonSetUpdatesNoTemplateChanged: nothing to update", unavailable(json!(3)), on_nodes((0..5).map(|i| (i, vec![new_ready(i)])).collect()), plan(&[], &[])),
        ("empty desired nodes, surplus pods, old and new together: all unavailable", unavailable(json!(3)), on_nodes(vec![(1, vec![old_ready(1), new_ready(1)]), (2, vec![new_ready(2), pod("new-2b").on("node-2").hash("new")]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&[], &[])),
        ("the template generation label keeps a pod current", json!({"metadata": {"annotations": {"deprecated.daemonset.template.generation": "3"}}, "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 5}}}}), on_nodes(vec![(0, vec![old_ready(0).generation(3)]), (1, vec![old_ready(1).generation(2)])]), plan(&[], &["old-1"])),
    ];
    for (case, strategy, map, want) in cases {
        let ds = daemon_set(strategy);
        let node_fits = fits(5);
        assert_eq!(
            rolling_update(&input(&ds, &node_fits, &map)),
            Ok(want),
            "{case}"
        );
    }
}

#[test]
fn rolling_update_with_surge() {
    let all_old = || on_nodes((0..5).map(|i| (i, vec![old_ready(i)])).collect());
    let node_0_tainted = || {
        let mut node_fits = fits(5);
        node_fits[0] = fit("node-0", false, true);
        node_fits
    };
    // (case, maxSurge, fits, node-to-pods, plan)
    #[rustfmt::skip]
    let cases = [
        ("TestDaemonSetUpdatesPodsWithMaxSurge: surge onto 2 nodes", json!(2), fits(5), all_old(), plan(&["node-0", "node-1"], &[])),
        ("new pods not yet available fill the surge", json!(2), fits(5), on_nodes(vec![(0, vec![old_ready(0), new_unready(0)]), (1, vec![old_ready(1), new_unready(1)]), (2, vec![old_ready(2)]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&[], &[])),
        ("available new pods retire their old ones and free the surge", json!(2), fits(5), on_nodes(vec![(0, vec![old_ready(0), new_ready(0)]), (1, vec![old_ready(1), new_ready(1)]), (2, vec![old_ready(2)]), (3, vec![old_ready(3)]), (4, vec![old_ready(4)])]), plan(&["node-2", "node-3"], &["old-0", "old-1"])),
        ("an unavailable old pod gets its new pod regardless of the surge", json!(1), fits(5), on_nodes(vec![(0, vec![old_ready(0), new_unready(0)]), (1, vec![old_unready(1)]), (2, vec![old_unready(2)]), (3, vec![old_ready(3)])]), plan(&["node-1", "node-2"], &[])),
        ("surplus pods on a node count as surge", json!(1), fits(5), on_nodes(vec![(0, vec![old_ready(0), pod("old-0b").on("node-0").hash("old")]), (1, vec![old_ready(1)])]), plan(&[], &[])),
        ("TestDaemonSetUpdatesPodsNotMatchTainstWithMaxSurge: availability moves first", json!(1), node_0_tainted(), all_old(), plan(&["node-1"], &["old-0"])),
        ("an old pod on a node that should not run it waits while availability is short", json!(1), node_0_tainted(), on_nodes(vec![(0, vec![old_ready(0)]), (1, vec![old_ready(1)]), (2, vec![old_unready(2)])]), plan(&["node-2", "node-1"], &[])),
        ("an unavailable old pod on a node that should not run it is deleted", json!(1), node_0_tainted(), on_nodes(vec![(0, vec![old_unready(0)])]), plan(&[], &["old-0"])),
    ];
    for (case, max_surge, node_fits, map, want) in cases {
        let ds = daemon_set(surge(max_surge));
        assert_eq!(
            rolling_update(&input(&ds, &node_fits, &map)),
            Ok(want),
            "{case}"
        );
    }
}

#[test]
fn rolling_update_errors_carry_upstreams_messages() {
    let map = on_nodes(vec![(7, vec![old_ready(7)])]);
    let node_fits = fits(2);
    let surging = daemon_set(surge(json!(1)));
    let error = rolling_update(&input(&surging, &node_fits, &map)).expect_err("node-7 is gone");
    assert_eq!(error, RollingUpdateError::NodeNotFound("node-7".to_owned()));
    assert_eq!(
        error.to_string(),
        r#"couldn't get node for nodeName "node-7": node "node-7" not found"#
    );
    #[rustfmt::skip]
    let cases = [
        (rolling(json!({"maxUnavailable": 0, "maxSurge": "x"})), "couldn't get unavailable numbers: invalid value for MaxSurge: invalid value for IntOrString: invalid type: string is not a percentage"),
        (rolling(json!({"maxUnavailable": "1.5%"})), r#"couldn't get unavailable numbers: invalid value for MaxUnavailable: invalid value for IntOrString: invalid value "1.5%": strconv.Atoi: parsing "1.5": invalid syntax"#),
    ];
    for (strategy, message) in cases {
        let ds = daemon_set(strategy);
        let error = rolling_update(&input(&ds, &node_fits, &map)).expect_err("invalid");
        assert_eq!(error.to_string(), message);
    }
}
