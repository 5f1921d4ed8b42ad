//! Whether a pod fits a node, as upstream's scheduler filters decide it: `spec.nodeSelector`,
//! required node affinity (terms ORed, expressions ANDed, `matchFields` on `metadata.name`),
//! taints with effect NoSchedule or NoExecute against the pod's tolerations, unschedulable
//! nodes and NotReady nodes (as if tainted `node.kubernetes.io/not-ready:NoSchedule`).
//!
//! Pure functions over the few fields that matter, parsed once from the JSON objects, so the
//! rules are tested table by table apart from the store and the kubelet.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::config::NodeTaint;
use crate::object::labels_of;
use crate::selector::Labels;

/// The taint key upstream's node lifecycle controller puts on NotReady nodes.
pub(crate) const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";
/// The taint key that stands for `spec.unschedulable`.
pub(crate) const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// The string at `key` of a JSON object ("" when absent or not a string).
fn str_field<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The array at `pointer`, empty when absent or not an array.
fn array_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// What scheduling looks at in a Node.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NodeView {
    pub labels: Labels,
    pub taints: Vec<NodeTaint>,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// The `InternalIP` address ("" when none), the hostIP of its pods.
    pub internal_ip: String,
}

impl NodeView {
    /// The view of a Node object.
    pub fn of(node: &Value) -> Self {
        let taints = array_at(node, "/spec/taints")
            .iter()
            .map(|t| {
                NodeTaint::new(
                    str_field(t, "key"),
                    str_field(t, "value"),
                    str_field(t, "effect"),
                )
            })
            .collect();
        let ready = array_at(node, "/status/conditions")
            .iter()
            .any(|c| str_field(c, "type") == "Ready" && str_field(c, "status") == "True");
        let internal_ip = array_at(node, "/status/addresses")
            .iter()
            .find(|a| str_field(a, "type") == "InternalIP")
            .map(|a| str_field(a, "address").to_string())
            .unwrap_or_default();
        NodeView {
            labels: labels_of(node),
            taints,
            unschedulable: node
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            ready,
            internal_ip,
        }
    }
}

/// A pod's toleration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Toleration {
    key: String,
    operator: String,
    value: String,
    effect: String,
}

impl Toleration {
    fn of(toleration: &Value) -> Self {
        Toleration {
            key: str_field(toleration, "key").to_string(),
            operator: str_field(toleration, "operator").to_string(),
            value: str_field(toleration, "value").to_string(),
            effect: str_field(toleration, "effect").to_string(),
        }
    }

    /// Upstream's `Toleration.ToleratesTaint`: an empty effect matches every effect, an empty
    /// key (with `Exists`) every key; `Equal` (or no operator) needs the same value.
    pub fn tolerates(&self, taint: &NodeTaint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// Whether some toleration tolerates `taint`.
fn tolerated(tolerations: &[Toleration], taint: &NodeTaint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// The first taint with effect NoSchedule or NoExecute that no toleration tolerates
/// (PreferNoSchedule never keeps a pod off a node).
pub(crate) fn untolerated_taint<'a>(
    taints: impl IntoIterator<Item = &'a NodeTaint>,
    tolerations: &[Toleration],
) -> Option<&'a NodeTaint> {
    taints
        .into_iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerated(tolerations, t))
}

/// One `matchExpressions` or `matchFields` requirement of a node selector term.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Requirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

impl Requirement {
    fn of(requirement: &Value) -> Self {
        Requirement {
            key: str_field(requirement, "key").to_string(),
            operator: str_field(requirement, "operator").to_string(),
            values: array_at(requirement, "/values")
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        }
    }

    /// Whether the labels satisfy a `matchExpressions` requirement; `None` when the
    /// requirement is malformed (upstream then matches nothing with its term).
    fn matches_labels(&self, labels: &Labels) -> Option<bool> {
        let value = labels.get(&self.key);
        let number = |s: &str| s.parse::<i64>().ok();
        match self.operator.as_str() {
            "In" if !self.values.is_empty() => Some(value.is_some_and(|v| self.values.contains(v))),
            "NotIn" if !self.values.is_empty() => {
                Some(value.is_none_or(|v| !self.values.contains(v)))
            }
            "Exists" if self.values.is_empty() => Some(value.is_some()),
            "DoesNotExist" if self.values.is_empty() => Some(value.is_none()),
            "Gt" | "Lt" => {
                let [bound] = self.values.as_slice() else {
                    return None;
                };
                let bound = number(bound)?;
                let Some(actual) = value.and_then(|v| number(v)) else {
                    return Some(false);
                };
                Some(if self.operator == "Gt" {
                    actual > bound
                } else {
                    actual < bound
                })
            }
            _ => None,
        }
    }

    /// Whether the node named `name` satisfies a `matchFields` requirement: only `In` and
    /// `NotIn` with one value, on `metadata.name` (any other field reads as "").
    fn matches_fields(&self, name: &str) -> Option<bool> {
        let [value] = self.values.as_slice() else {
            return None;
        };
        let actual = if self.key == "metadata.name" {
            name
        } else {
            ""
        };
        match self.operator.as_str() {
            "In" => Some(actual == value),
            "NotIn" => Some(actual != value),
            _ => None,
        }
    }
}

/// One node selector term: its expressions and fields must all match.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Term {
    expressions: Vec<Requirement>,
    fields: Vec<Requirement>,
}

impl Term {
    fn of(term: &Value) -> Self {
        let requirements = |pointer| {
            array_at(term, pointer)
                .iter()
                .map(Requirement::of)
                .collect()
        };
        Term {
            expressions: requirements("/matchExpressions"),
            fields: requirements("/matchFields"),
        }
    }

    /// Whether node `name` with `labels` matches; an empty or malformed term matches nothing.
    pub fn matches(&self, name: &str, labels: &Labels) -> bool {
        if self.expressions.is_empty() && self.fields.is_empty() {
            return false;
        }
        self.expressions
            .iter()
            .all(|r| r.matches_labels(labels) == Some(true))
            && self
                .fields
                .iter()
                .all(|r| r.matches_fields(name) == Some(true))
    }

    /// The node names a `metadata.name In [one]` field pins this term to, if any.
    fn pinned_name(&self) -> Option<&str> {
        self.fields
            .iter()
            .find(|r| r.key == "metadata.name" && r.operator == "In")
            .and_then(|r| match r.values.as_slice() {
                [name] => Some(name.as_str()),
                _ => None,
            })
    }
}

/// What a pod asks of its node.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PodNeeds {
    node_selector: Labels,
    /// `requiredDuringSchedulingIgnoredDuringExecution` terms, when the pod has them.
    required: Option<Vec<Term>>,
    tolerations: Vec<Toleration>,
}

impl PodNeeds {
    /// The needs of a Pod object.
    pub fn of(pod: &Value) -> Self {
        let node_selector = pod
            .pointer("/spec/nodeSelector")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let required = pod
            .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
            .filter(|r| !r.is_null())
            .map(|r| {
                array_at(r, "/nodeSelectorTerms")
                    .iter()
                    .map(Term::of)
                    .collect()
            });
        PodNeeds {
            node_selector,
            required,
            tolerations: array_at(pod, "/spec/tolerations")
                .iter()
                .map(Toleration::of)
                .collect(),
        }
    }

    /// Whether `spec.nodeSelector` and the required node affinity both match node `name`.
    pub fn matches_node(&self, name: &str, labels: &Labels) -> bool {
        let selected = self
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        let affine = self
            .required
            .as_ref()
            .is_none_or(|terms| terms.iter().any(|t| t.matches(name, labels)));
        selected && affine
    }

    /// The only nodes the pod can fit, when every required term pins it by name with
    /// `matchFields` `metadata.name In` (as DaemonSet pods are): lets the scheduler look at
    /// those nodes alone.
    pub fn pinned_names(&self) -> Option<Vec<&str>> {
        let terms = self.required.as_ref()?;
        terms.iter().map(Term::pinned_name).collect()
    }
}

/// Why a node does not fit a pod, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Misfit {
    /// `spec.unschedulable` and no toleration of `node.kubernetes.io/unschedulable`.
    Unschedulable,
    /// A NoSchedule or NoExecute taint (key, value) is not tolerated.
    Taint(String, String),
    /// nodeSelector or required node affinity does not match.
    Affinity,
}

impl Misfit {
    /// The reason as upstream's filter plugins phrase it.
    pub fn reason(&self) -> String {
        match self {
            Misfit::Unschedulable => "node(s) were unschedulable".to_string(),
            Misfit::Taint(key, value) => {
                format!("node(s) had untolerated taint {{{key}: {value}}}")
            }
            Misfit::Affinity => "node(s) didn't match Pod's node affinity/selector".to_string(),
        }
    }
}

/// Whether `pod` fits node `name`, checked in upstream's filter order: NodeUnschedulable,
/// TaintToleration (a NotReady node counts as tainted `node.kubernetes.io/not-ready:
/// NoSchedule`), NodeAffinity.
pub(crate) fn fit(pod: &PodNeeds, name: &str, node: &NodeView) -> Result<(), Misfit> {
    if node.unschedulable
        && !tolerated(
            &pod.tolerations,
            &NodeTaint::new(UNSCHEDULABLE_TAINT, "", "NoSchedule"),
        )
    {
        return Err(Misfit::Unschedulable);
    }
    let not_ready = (!node.ready && !node.taints.iter().any(|t| t.key == NOT_READY_TAINT))
        .then(|| NodeTaint::new(NOT_READY_TAINT, "", "NoSchedule"));
    if let Some(taint) = untolerated_taint(node.taints.iter().chain(&not_ready), &pod.tolerations) {
        return Err(Misfit::Taint(taint.key.clone(), taint.value.clone()));
    }
    if !pod.matches_node(name, &node.labels) {
        return Err(Misfit::Affinity);
    }
    Ok(())
}

/// The `PodScheduled=False` message for a pod no node fits, as upstream's `FitError`:
/// `0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match ...`.
pub(crate) fn unschedulable_message(nodes: usize, misfits: &[Misfit]) -> String {
    if nodes == 0 {
        return "no nodes available to schedule pods".to_string();
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for misfit in misfits {
        *counts.entry(misfit.reason()).or_default() += 1;
    }
    let mut reasons: Vec<String> = counts
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    reasons.sort();
    format!("0/{nodes} nodes are available: {}.", reasons.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::tests::labels;
    use serde_json::json;

    fn taint(key: &str, value: &str, effect: &str) -> NodeTaint {
        NodeTaint::new(key, value, effect)
    }

    #[test]
    fn tolerations_match_taints() {
        #[rustfmt::skip]
        let cases = [
            // (toleration, taint, tolerated)
            (json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}), taint("k", "v", "NoSchedule"), true),
            (json!({"key": "k", "value": "v", "effect": "NoSchedule"}), taint("k", "v", "NoSchedule"), true),
            (json!({"key": "k", "operator": "Equal", "value": "w", "effect": "NoSchedule"}), taint("k", "v", "NoSchedule"), false),
            (json!({"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"}), taint("k", "v", "NoSchedule"), false),
            (json!({"key": "k", "operator": "Equal", "value": "v"}), taint("k", "v", "NoExecute"), true),
            (json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}), taint("k", "anything", "NoSchedule"), true),
            (json!({"key": "other", "operator": "Exists"}), taint("k", "", "NoSchedule"), false),
            (json!({"operator": "Exists"}), taint("k", "v", "NoExecute"), true),
            (json!({"operator": "Exists", "effect": "NoSchedule"}), taint("k", "v", "NoExecute"), false),
            (json!({"key": "k", "operator": "Equal"}), taint("k", "", "NoSchedule"), true),
            (json!({"key": "k", "operator": "Lt", "value": "3"}), taint("k", "2", "NoSchedule"), false),
        ];
        for (toleration, taint, expected) in cases {
            assert_eq!(
                Toleration::of(&toleration).tolerates(&taint),
                expected,
                "{toleration} vs {taint:?}"
            );
        }
    }

    #[test]
    fn only_hard_taints_keep_pods_off() {
        let tolerations = vec![Toleration::of(&json!({"key": "a", "operator": "Exists"}))];
        #[rustfmt::skip]
        let cases = [
            (vec![], None),
            (vec![taint("b", "", "PreferNoSchedule")], None),
            (vec![taint("a", "x", "NoSchedule")], None),
            (vec![taint("a", "x", "NoSchedule"), taint("b", "y", "NoExecute")], Some("b")),
            (vec![taint("c", "", "NoSchedule"), taint("b", "", "NoExecute")], Some("c")),
        ];
        for (taints, expected) in cases {
            assert_eq!(
                untolerated_taint(&taints, &tolerations).map(|t| t.key.as_str()),
                expected,
                "{taints:?}"
            );
        }
    }

    #[test]
    fn node_selector_terms() {
        let node = labels(&[("zone", "a"), ("cores", "8"), ("gpu", "")]);
        #[rustfmt::skip]
        let cases = [
            // (term, matches node "n1")
            (json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}), true),
            (json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}), false),
            (json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": []}]}), false),
            (json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]}]}), true),
            (json!({"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["b"]}]}), true),
            (json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}), false),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}), true),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "Exists", "values": ["x"]}]}), false),
            (json!({"matchExpressions": [{"key": "absent", "operator": "DoesNotExist"}]}), true),
            (json!({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}), false),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}), true),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]}), false),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["10"]}]}), true),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["8"]}]}), false),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4", "5"]}]}), false),
            (json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["four"]}]}), false),
            (json!({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]}), false),
            (json!({"matchExpressions": [{"key": "absent", "operator": "Lt", "values": ["1"]}]}), false),
            (json!({"matchExpressions": [{"key": "zone", "operator": "Like", "values": ["a"]}]}), false),
            // Expressions and fields of one term are ANDed.
            (json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "gpu", "operator": "DoesNotExist"}]}), false),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}), true),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}), false),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}), true),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}), false),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}), false),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}), false),
            (json!({"matchFields": [{"key": "spec.podCIDR", "operator": "NotIn", "values": ["x"]}]}), true),
            (json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}], "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}), false),
            (json!({}), false),
        ];
        for (term, expected) in cases {
            assert_eq!(Term::of(&term).matches("n1", &node), expected, "{term}");
        }
    }

    fn pod(spec: Value) -> PodNeeds {
        PodNeeds::of(&json!({"spec": spec}))
    }

    #[test]
    fn pods_match_nodes_by_selector_and_affinity() {
        let node = labels(&[("zone", "a"), ("disk", "ssd")]);
        let term = |zone: &str| json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]});
        let affinity = |terms: Value| json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
        #[rustfmt::skip]
        let cases = [
            (json!({}), true),
            (json!({"nodeSelector": {"zone": "a"}}), true),
            (json!({"nodeSelector": {"zone": "a", "disk": "hdd"}}), false),
            (json!({"affinity": affinity(json!([term("b"), term("a")]))}), true),
            (json!({"affinity": affinity(json!([term("b")]))}), false),
            (json!({"affinity": affinity(json!([]))}), false),
            (json!({"affinity": {"nodeAffinity": {}}}), true),
            (json!({"nodeSelector": {"zone": "b"}, "affinity": affinity(json!([term("a")]))}), false),
        ];
        for (spec, expected) in cases {
            assert_eq!(
                pod(spec.clone()).matches_node("n", &node),
                expected,
                "{spec}"
            );
        }
    }

    #[test]
    fn pinned_names_come_from_match_fields() {
        let pinned = |names: &[&str]| {
            let terms: Vec<Value> = names
                .iter()
                .map(|n| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}))
                .collect();
            pod(
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}),
            )
        };
        assert_eq!(pinned(&["n1"]).pinned_names(), Some(vec!["n1"]));
        assert_eq!(pinned(&["n1", "n2"]).pinned_names(), Some(vec!["n1", "n2"]));
        assert_eq!(pod(json!({})).pinned_names(), None);
        let mixed = pod(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
                {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
            ]}}}}),
        );
        assert_eq!(mixed.pinned_names(), None);
    }

    #[test]
    fn fit_checks_in_upstream_order() {
        let ready = NodeView {
            labels: labels(&[("zone", "a")]),
            ready: true,
            ..NodeView::default()
        };
        let cordoned = NodeView {
            unschedulable: true,
            taints: vec![taint("x", "", "NoSchedule")],
            ..ready.clone()
        };
        let not_ready = NodeView {
            ready: false,
            ..ready.clone()
        };
        let tainted = NodeView {
            taints: vec![
                taint("dedicated", "gpu", "NoSchedule"),
                taint("soft", "", "PreferNoSchedule"),
            ],
            ..ready.clone()
        };
        let tolerate = |key: &str| json!({"tolerations": [{"key": key, "operator": "Exists"}]});
        let wrong_zone = json!({"nodeSelector": {"zone": "b"}});
        #[rustfmt::skip]
        let cases = [
            (json!({}), &ready, Ok(())),
            (wrong_zone.clone(), &ready, Err(Misfit::Affinity)),
            (json!({}), &cordoned, Err(Misfit::Unschedulable)),
            (json!({"tolerations": [{"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]}), &cordoned, Err(Misfit::Taint("x".into(), String::new()))),
            (json!({"tolerations": [{"operator": "Exists"}]}), &cordoned, Ok(())),
            (json!({}), &not_ready, Err(Misfit::Taint(NOT_READY_TAINT.into(), String::new()))),
            // The admission defaults tolerate not-ready only for NoExecute.
            (json!({"tolerations": [{"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute"}]}), &not_ready, Err(Misfit::Taint(NOT_READY_TAINT.into(), String::new()))),
            (tolerate(NOT_READY_TAINT), &not_ready, Ok(())),
            (json!({}), &tainted, Err(Misfit::Taint("dedicated".into(), "gpu".into()))),
            (json!({"tolerations": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}), &tainted, Ok(())),
            (json!({"tolerations": [{"key": "dedicated", "operator": "Exists"}], "nodeSelector": {"zone": "b"}}), &tainted, Err(Misfit::Affinity)),
        ];
        for (spec, node, expected) in cases {
            assert_eq!(
                fit(&pod(spec.clone()), "n", node),
                expected,
                "{spec} on {node:?}"
            );
        }
    }

    #[test]
    fn node_views_and_messages() {
        let node = json!({"metadata": {"labels": {"a": "b"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "n"}, {"type": "InternalIP", "address": "10.0.0.7"}]}});
        let view = NodeView::of(&node);
        assert_eq!(view.labels, labels(&[("a", "b")]));
        assert_eq!(view.taints, vec![taint("k", "", "NoSchedule")]);
        assert!(view.unschedulable && view.ready);
        assert_eq!(view.internal_ip, "10.0.0.7");
        assert!(
            !NodeView::of(
                &json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
            )
            .ready
        );

        assert_eq!(
            unschedulable_message(0, &[]),
            "no nodes available to schedule pods"
        );
        assert_eq!(
            unschedulable_message(
                4,
                &[
                    Misfit::Affinity,
                    Misfit::Unschedulable,
                    Misfit::Affinity,
                    Misfit::Taint("k".into(), "v".into())
                ]
            ),
            "0/4 nodes are available: 1 node(s) had untolerated taint {k: v}, 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector."
        );
    }
}
