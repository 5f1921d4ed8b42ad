//! Required node affinity (component-helpers `nodeaffinity.GetRequiredNodeAffinity(pod)
//! .Match(node)`): whether a pod's `nodeSelector` and required node affinity let it onto a node.
//!
//! kube's label selectors know neither `Gt`/`Lt` nor field selectors, and a requirement the
//! API machinery cannot parse must only disqualify its own term (a lazily reported parse
//! error), so the matching is spelled out here with apimachinery's syntax rules.

use informer::{CachedNode, LabelLookup};
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
};

/// The only node field a `matchFields` requirement can read (`metav1.ObjectNameField`).
pub const NODE_NAME_FIELD: &str = "metadata.name";
/// Node selector operators (`v1.NodeSelectorOp*`).
pub const OPERATOR_IN: &str = "In";
/// The value is not among the values (or the label is absent).
pub const OPERATOR_NOT_IN: &str = "NotIn";
/// The label is present.
pub const OPERATOR_EXISTS: &str = "Exists";
/// The label is absent.
pub const OPERATOR_DOES_NOT_EXIST: &str = "DoesNotExist";
/// The label's integer value is above the requirement's.
pub const OPERATOR_GT: &str = "Gt";
/// The label's integer value is below the requirement's.
pub const OPERATOR_LT: &str = "Lt";

const MAX_LABEL_NAME_LENGTH: usize = 63;
const MAX_SUBDOMAIN_LENGTH: usize = 253;

/// `GetRequiredNodeAffinity(pod).Match(node)` (a parse error counts as no match, as the
/// DaemonSet controller ignores it): every `nodeSelector` pair must be a label of the node,
/// and then, if the pod has a required node affinity, one of its terms must match.
pub fn matches_required_node_affinity(spec: &PodSpec, node: &CachedNode) -> bool {
    let labels = &node.metadata.labels;
    if let Some(selector) = spec.node_selector.as_ref()
        && !selector
            .iter()
            .all(|(key, value)| labels.label(key) == Some(value.as_str()))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|affinity| affinity.node_affinity.as_ref())
        .and_then(|affinity| {
            affinity
                .required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        Some(selector) => matches_node_selector(selector, labels, node_name(node)),
        None => true,
    }
}

fn node_name(node: &CachedNode) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// `LazyErrorNodeSelector.Match`: the terms are ORed; a term without expressions and fields
/// is dropped, a term with a requirement that does not parse is skipped; no matching term, no
/// match.
pub fn matches_node_selector(
    selector: &NodeSelector,
    labels: &impl LabelLookup,
    node_name: &str,
) -> bool {
    selector
        .node_selector_terms
        .iter()
        .filter(|term| !is_empty_term(term))
        .any(|term| term_matches(term, labels, node_name) == Some(true))
}

fn requirements(requirements: Option<&Vec<NodeSelectorRequirement>>) -> &[NodeSelectorRequirement] {
    requirements.map_or(&[], Vec::as_slice)
}

fn is_empty_term(term: &NodeSelectorTerm) -> bool {
    requirements(term.match_expressions.as_ref()).is_empty()
        && requirements(term.match_fields.as_ref()).is_empty()
}

/// One term: all its label requirements against the node's labels and all its field
/// requirements against the node's fields (skipped for a node without a name, whose field set
/// is empty); `None` when a requirement does not parse.
fn term_matches(
    term: &NodeSelectorTerm,
    labels: &impl LabelLookup,
    node_name: &str,
) -> Option<bool> {
    let expressions = requirements(term.match_expressions.as_ref());
    let fields = requirements(term.match_fields.as_ref());
    let expressions: Vec<LabelRequirement<'_>> = expressions
        .iter()
        .map(LabelRequirement::parse)
        .collect::<Option<_>>()?;
    let fields: Vec<FieldRequirement<'_>> = fields
        .iter()
        .map(FieldRequirement::parse)
        .collect::<Option<_>>()?;
    let labels_match = expressions
        .iter()
        .all(|requirement| requirement.matches(labels));
    let fields_match = node_name.is_empty()
        || fields
            .iter()
            .all(|requirement| requirement.matches(node_name));
    Some(labels_match && fields_match)
}

/// A `matchExpressions` requirement as `labels.NewRequirement` accepts it.
enum LabelRequirement<'a> {
    In(&'a str, &'a [String]),
    NotIn(&'a str, &'a [String]),
    Exists(&'a str),
    DoesNotExist(&'a str),
    GreaterThan(&'a str, i64),
    LessThan(&'a str, i64),
}

impl<'a> LabelRequirement<'a> {
    /// `nodeSelectorRequirementsAsSelector` and `labels.NewRequirement`: a known operator, a
    /// qualified-name key, the number of values the operator takes (one decimal int64 for
    /// `Gt`/`Lt`) and every value a valid label value.
    fn parse(requirement: &'a NodeSelectorRequirement) -> Option<Self> {
        let key = requirement.key.as_str();
        let values = requirements_values(requirement);
        if !is_qualified_name(key) || !values.iter().all(|value| is_label_value(value)) {
            return None;
        }
        let single_integer = || match values {
            [value] => value.parse::<i64>().ok(),
            _ => None,
        };
        match requirement.operator.as_str() {
            OPERATOR_IN if !values.is_empty() => Some(Self::In(key, values)),
            OPERATOR_NOT_IN if !values.is_empty() => Some(Self::NotIn(key, values)),
            OPERATOR_EXISTS if values.is_empty() => Some(Self::Exists(key)),
            OPERATOR_DOES_NOT_EXIST if values.is_empty() => Some(Self::DoesNotExist(key)),
            OPERATOR_GT => single_integer().map(|value| Self::GreaterThan(key, value)),
            OPERATOR_LT => single_integer().map(|value| Self::LessThan(key, value)),
            _ => None,
        }
    }

    /// `Requirement.Matches`.
    fn matches(&self, labels: &impl LabelLookup) -> bool {
        let label = |key: &str| labels.label(key);
        let contains = |values: &[String], key: &str| {
            label(key).is_some_and(|value| values.iter().any(|wanted| wanted == value))
        };
        let integer = |key: &str| label(key).and_then(|value| value.parse::<i64>().ok());
        match *self {
            Self::In(key, values) => contains(values, key),
            Self::NotIn(key, values) => !contains(values, key),
            Self::Exists(key) => label(key).is_some(),
            Self::DoesNotExist(key) => label(key).is_none(),
            Self::GreaterThan(key, bound) => integer(key).is_some_and(|value| value > bound),
            Self::LessThan(key, bound) => integer(key).is_some_and(|value| value < bound),
        }
    }
}

fn requirements_values(requirement: &NodeSelectorRequirement) -> &[String] {
    requirement.values.as_deref().unwrap_or_default()
}

/// A `matchFields` requirement as `nodeSelectorRequirementsAsFieldSelector` accepts it: `In`
/// or `NotIn` with exactly one value; any key (a key other than `metadata.name` reads `""`).
enum FieldRequirement<'a> {
    Equal(&'a str, &'a str),
    NotEqual(&'a str, &'a str),
}

impl<'a> FieldRequirement<'a> {
    fn parse(requirement: &'a NodeSelectorRequirement) -> Option<Self> {
        let [value] = requirements_values(requirement) else {
            return None;
        };
        let key = requirement.key.as_str();
        match requirement.operator.as_str() {
            OPERATOR_IN => Some(Self::Equal(key, value)),
            OPERATOR_NOT_IN => Some(Self::NotEqual(key, value)),
            _ => None,
        }
    }

    fn matches(&self, node_name: &str) -> bool {
        let field = |key: &str| {
            if key == NODE_NAME_FIELD {
                node_name
            } else {
                ""
            }
        };
        match *self {
            Self::Equal(key, value) => field(key) == value,
            Self::NotEqual(key, value) => field(key) != value,
        }
    }
}

/// `validation.IsQualifiedName`: `[prefix/]name`, the prefix a DNS-1123 subdomain, the name
/// at most 63 characters of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn is_qualified_name(key: &str) -> bool {
    match key.split('/').collect::<Vec<_>>().as_slice() {
        [name] => is_qualified_name_part(name),
        [prefix, name] => {
            !prefix.is_empty() && is_dns1123_subdomain(prefix) && is_qualified_name_part(name)
        }
        _ => false,
    }
}

fn is_qualified_name_part(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_LABEL_NAME_LENGTH && has_label_shape(name)
}

/// `validation.IsValidLabelValue`: empty, or a qualified name's name part.
fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_qualified_name_part(value)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` over a non-empty text.
fn has_label_shape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let inner = |byte: &u8| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.');
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && bytes.iter().all(inner)
        }
        _ => false,
    }
}

/// `validation.IsDNS1123Subdomain`: at most 253 characters of dot-separated labels of lower
/// case alphanumerics and `-`, each starting and ending alphanumeric.
fn is_dns1123_subdomain(text: &str) -> bool {
    text.len() <= MAX_SUBDOMAIN_LENGTH
        && text.split('.').all(|label| {
            let bytes = label.as_bytes();
            let lower_alphanumeric = |byte: &u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
            match (bytes.first(), bytes.last()) {
                (Some(first), Some(last)) => {
                    lower_alphanumeric(first)
                        && lower_alphanumeric(last)
                        && bytes
                            .iter()
                            .all(|byte| lower_alphanumeric(byte) || *byte == b'-')
                }
                _ => false,
            }
        })
}
