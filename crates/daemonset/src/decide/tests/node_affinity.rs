//! `GetRequiredNodeAffinity(pod).Match(node)`: nodeSelector AND any of the terms, each term
//! all its expressions and fields; unparsable terms skipped.

use informer::CachedNode;
use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{Value, json};

use super::node;
use crate::decide::node_affinity::matches_required_node_affinity;

fn spec(value: Value) -> PodSpec {
    serde_json::from_value(value).expect("a valid pod spec")
}

fn required(terms: Value) -> PodSpec {
    spec(json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
    }}}))
}

fn expressions(expressions: Value) -> PodSpec {
    required(json!([{"matchExpressions": expressions}]))
}

fn labelled() -> CachedNode {
    node(
        "node-1",
        json!({"zone": "a", "type": "production", "cores": "8", "empty": ""}),
        json!([]),
    )
}

#[test]
fn required_node_affinity_cases() {
    #[rustfmt::skip]
    let cases: Vec<(&str, PodSpec, bool)> = vec![
        ("no nodeSelector and no affinity: every node", spec(json!({"containers": []})), true),
        ("nodeSelector: every pair must be a node label", spec(json!({"containers": [], "nodeSelector": {"zone": "a", "type": "production"}})), true),
        ("nodeSelector: one pair differs", spec(json!({"containers": [], "nodeSelector": {"zone": "b"}})), false),
        ("nodeSelector: an empty value needs the label present", spec(json!({"containers": [], "nodeSelector": {"missing": ""}})), false),
        ("nodeSelector: an empty value matches an empty label", spec(json!({"containers": [], "nodeSelector": {"empty": ""}})), true),
        ("nodeSelector AND affinity: the selector fails first", spec(json!({"containers": [], "nodeSelector": {"zone": "b"}, "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}}}})), false),
        ("a required selector without terms matches nothing", required(json!([])), false),
        ("an empty term is dropped: nothing left", required(json!([{}])), false),
        ("In: the label's value is listed", expressions(json!([{"key": "type", "operator": "In", "values": ["test", "production"]}])), true),
        ("In: ErrPodAffinityNotMatch", expressions(json!([{"key": "type", "operator": "In", "values": ["test"]}])), false),
        ("NotIn: an absent label matches", expressions(json!([{"key": "missing", "operator": "NotIn", "values": ["x"]}])), true),
        ("NotIn: a listed value does not", expressions(json!([{"key": "zone", "operator": "NotIn", "values": ["a"]}])), false),
        ("Exists", expressions(json!([{"key": "zone", "operator": "Exists"}])), true),
        ("DoesNotExist", expressions(json!([{"key": "zone", "operator": "DoesNotExist"}])), false),
        ("Gt compares integers", expressions(json!([{"key": "cores", "operator": "Gt", "values": ["4"]}])), true),
        ("Lt compares integers", expressions(json!([{"key": "cores", "operator": "Lt", "values": ["4"]}])), false),
        ("Gt on a non-integer label does not match", expressions(json!([{"key": "zone", "operator": "Gt", "values": ["4"]}])), false),
        ("Gt on an absent label does not match", expressions(json!([{"key": "missing", "operator": "Gt", "values": ["4"]}])), false),
        ("all expressions of a term must hold", expressions(json!([{"key": "zone", "operator": "In", "values": ["a"]}, {"key": "type", "operator": "In", "values": ["test"]}])), false),
        ("terms are ORed", required(json!([{"matchExpressions": [{"key": "type", "operator": "In", "values": ["test"]}]}, {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}])), true),
        ("an unparsable term (Exists with values) is skipped, the next one matches", required(json!([{"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]}, {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}])), true),
        ("an invalid key makes the term unparsable", expressions(json!([{"key": "bad key", "operator": "DoesNotExist"}])), false),
        ("a prefixed key is valid", expressions(json!([{"key": "example.com/zone", "operator": "DoesNotExist"}])), true),
        ("NotIn without values is unparsable (it would match an absent label)", expressions(json!([{"key": "missing", "operator": "NotIn", "values": []}])), false),
        ("Gt needs exactly one integer", expressions(json!([{"key": "cores", "operator": "Gt", "values": ["4", "5"]}])), false),
        ("Lt with a negative bound is not a valid label value: unparsable", expressions(json!([{"key": "cores", "operator": "Lt", "values": ["-5"]}])), false),
        ("an unknown operator is unparsable", expressions(json!([{"key": "zone", "operator": "Equals", "values": ["a"]}])), false),
        ("matchFields metadata.name In the node", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}])), true),
        ("matchFields metadata.name In another node", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}])), false),
        ("matchFields NotIn another node", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-2"]}]}])), true),
        ("matchFields with two values is unparsable", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}]}])), false),
        ("matchFields with Exists is unparsable", required(json!([{"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}])), false),
        ("matchFields on another field reads an empty value", required(json!([{"matchFields": [{"key": "metadata.foo", "operator": "In", "values": ["bar"]}]}])), false),
        ("expressions and fields of one term both hold", required(json!([{ "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}] }])), true),
    ];
    let node = labelled();
    for (rule, spec, want) in cases {
        assert_eq!(matches_required_node_affinity(&spec, &node), want, "{rule}");
    }
}

#[test]
fn fields_are_not_checked_against_a_node_without_a_name() {
    let nameless: CachedNode = serde_json::from_value(json!({"metadata": {}})).expect("a node");
    let pinned = required(json!([{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
    ]}]));
    assert!(matches_required_node_affinity(&pinned, &nameless));
}
