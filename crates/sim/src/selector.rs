//! Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!`exists) and field selectors
//! (`=`, `==`, `!=` on a supported field), parsed from the query string as upstream does.

use std::collections::BTreeMap;

use serde_json::Value;

/// Object labels, as stored beside each object for cheap selector matching.
pub(crate) type Labels = BTreeMap<String, String>;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::NotEquals(k, _)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k,
        }
    }

    fn matches(&self, labels: &Labels) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty() && !key.contains(|c: char| c.is_whitespace() || "=!(),".contains(c))
}

/// Splits an equality term `k!=v`, `k==v` or `k=v` into key, value and whether it is negated
/// (`!=`); None for a term with no equality operator.
fn split_equality(term: &str) -> Option<(&str, &str, bool)> {
    if let Some((k, v)) = term.split_once("!=") {
        Some((k, v, true))
    } else if let Some((k, v)) = term.split_once("==") {
        Some((k, v, false))
    } else {
        term.split_once('=').map(|(k, v)| (k, v, false))
    }
}

fn parse_term(term: &str) -> Result<Requirement, String> {
    let bad = || format!("unable to parse requirement: {term}");
    if let Some(rest) = term.strip_prefix('!') {
        let key = rest.trim();
        return if valid_key(key) {
            Ok(Requirement::DoesNotExist(key.to_string()))
        } else {
            Err(bad())
        };
    }
    if let Some(open) = term.find('(') {
        let close = term.rfind(')').filter(|c| *c > open).ok_or_else(bad)?;
        let head = term[..open].trim();
        let (key, op) = head.rsplit_once(char::is_whitespace).ok_or_else(bad)?;
        let key = key.trim();
        if !valid_key(key) {
            return Err(bad());
        }
        let values: Vec<String> = term[open + 1..close]
            .split(',')
            .map(|v| v.trim().to_string())
            .collect();
        return match op {
            "in" => Ok(Requirement::In(key.to_string(), values)),
            "notin" => Ok(Requirement::NotIn(key.to_string(), values)),
            _ => Err(bad()),
        };
    }
    let Some((key, value, negate)) = split_equality(term) else {
        return if valid_key(term) {
            Ok(Requirement::Exists(term.to_string()))
        } else {
            Err(bad())
        };
    };
    let (key, value) = (key.trim(), value.trim());
    if !valid_key(key) || value.contains(|c: char| "=!(),".contains(c) || c.is_whitespace()) {
        return Err(bad());
    }
    Ok(if negate {
        Requirement::NotEquals(key.to_string(), value.to_string())
    } else {
        Requirement::Equals(key.to_string(), value.to_string())
    })
}

impl LabelSelector {
    /// Parses `labelSelector=...`; an error message for a 400 answer.
    pub fn parse(s: &str) -> Result<Self, String> {
        split_terms(s)
            .into_iter()
            .map(parse_term)
            .collect::<Result<Vec<_>, _>>()
            .map(LabelSelector)
    }

    /// Converts a `metav1.LabelSelector` (matchLabels, matchExpressions) from an object.
    pub fn from_json(selector: &Value) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in labels {
                reqs.push(Requirement::Equals(
                    k.clone(),
                    v.as_str().unwrap_or("").to_string(),
                ));
            }
        }
        if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
            for expr in exprs {
                let key = expr
                    .get("key")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let values: Vec<String> = expr
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|vs| {
                        vs.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                let op = expr.get("operator").and_then(Value::as_str).unwrap_or("");
                reqs.push(match op {
                    "In" => Requirement::In(key, values),
                    "NotIn" => Requirement::NotIn(key, values),
                    "Exists" => Requirement::Exists(key),
                    "DoesNotExist" => Requirement::DoesNotExist(key),
                    other => {
                        return Err(format!("{other:?} is not a valid label selector operator"));
                    }
                });
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether the selector has no requirement (and so selects everything).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The selector in query-string syntax, as upstream's `FormatLabelSelector`
    /// (used for `status.selector` of Scale).
    pub fn to_query(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|r| match r {
                Requirement::Equals(k, v) => format!("{k}={v}"),
                Requirement::NotEquals(k, v) => format!("{k}!={v}"),
                Requirement::In(k, vs) => format!("{k} in ({})", vs.join(",")),
                Requirement::NotIn(k, vs) => format!("{k} notin ({})", vs.join(",")),
                Requirement::Exists(k) => k.clone(),
                Requirement::DoesNotExist(k) => format!("!{k}"),
            })
            .collect();
        parts.join(",")
    }

    /// The selector as upstream's `metav1.FormatLabelSelector` prints it: requirements sorted
    /// by key, set values sorted (`a=1,tier in (x,y)`).
    pub fn to_sorted_query(&self) -> String {
        let mut sorted = self.clone();
        sorted.0.sort_by(|a, b| a.key().cmp(b.key()));
        for requirement in &mut sorted.0 {
            if let Requirement::In(_, values) | Requirement::NotIn(_, values) = requirement {
                values.sort();
            }
        }
        sorted.to_query()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.0.iter().all(|r| r.matches(labels))
    }
}

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq)]
struct FieldRequirement {
    field: String,
    value: String,
    negate: bool,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSelector(Vec<FieldRequirement>);

/// Fields every resource supports.
const COMMON_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// Extra fields supported per resource plural, as upstream's field label conversions.
fn extra_fields(plural: &str) -> &'static [&'static str] {
    match plural {
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "type",
            "source",
            "reportingComponent",
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
        ],
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "status.phase",
            "status.podIP",
        ],
        "namespaces" => &["status.phase"],
        "nodes" => &["spec.unschedulable"],
        "jobs" => &["status.successful"],
        _ => &[],
    }
}

impl FieldSelector {
    /// Parses `fieldSelector=...` for resource `plural`; unsupported fields are an error
    /// (upstream answers 400 `field label not supported`).
    pub fn parse(s: &str, plural: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for term in split_terms(s) {
            let Some((field, value, negate)) = split_equality(term) else {
                return Err(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                ));
            };
            let field = field.trim();
            if !COMMON_FIELDS.contains(&field) && !extra_fields(plural).contains(&field) {
                return Err(format!("field label not supported: {field}"));
            }
            reqs.push(FieldRequirement {
                field: field.to_string(),
                value: value.trim().to_string(),
                negate,
            });
        }
        Ok(FieldSelector(reqs))
    }

    /// Whether the selector is empty (matches everything without looking at the object).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the selector only needs name and namespace (no object parsing).
    pub fn needs_object(&self) -> bool {
        self.0
            .iter()
            .any(|r| !COMMON_FIELDS.contains(&r.field.as_str()))
    }

    /// Whether the object at `namespace`/`name` (with `object` parsed when
    /// [`Self::needs_object`]) matches.
    pub fn matches(&self, namespace: &str, name: &str, object: Option<&Value>) -> bool {
        self.0.iter().all(|r| {
            let actual = match r.field.as_str() {
                "metadata.name" => name.to_string(),
                "metadata.namespace" => namespace.to_string(),
                "source" => field_value(object, "source.component"),
                // A Job's `status.succeeded` (an int32: unset reads as "0").
                "status.successful" => Some(field_value(object, "status.succeeded"))
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "0".to_string()),
                // A Go bool: unset reads as "false".
                "spec.unschedulable" => Some(field_value(object, "spec.unschedulable"))
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "false".to_string()),
                other => field_value(object, other),
            };
            (actual == r.value) != r.negate
        })
    }
}

/// The string at a dotted path, or "" when absent (as upstream's field sets).
fn field_value(object: Option<&Value>, path: &str) -> String {
    let mut cur = match object {
        Some(v) => v,
        None => return String::new(),
    };
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// Labels from `(key, value)` pairs.
    pub(crate) fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors() {
        let web = labels(&[("app", "web"), ("tier", "front")]);
        let db = labels(&[("app", "db")]);
        let none = labels(&[]);
        let cases: &[(&str, [bool; 3])] = &[
            ("", [true, true, true]),
            ("app=web", [true, false, false]),
            ("app==web", [true, false, false]),
            ("app!=web", [false, true, true]),
            ("app in (web, db)", [true, true, false]),
            ("app notin (web)", [false, true, true]),
            ("tier", [true, false, false]),
            ("!tier", [false, true, true]),
            ("app=web,tier=front", [true, false, false]),
            ("app in (web,db),!tier", [false, true, false]),
            (" app = db ", [false, true, false]),
        ];
        for (sel, expected) in cases {
            let parsed = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            let got = [
                parsed.matches(&web),
                parsed.matches(&db),
                parsed.matches(&none),
            ];
            assert_eq!(&got, expected, "{sel}");
        }
    }

    #[test]
    fn selectors_from_objects() {
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "gone", "operator": "DoesNotExist"}]});
        let parsed = LabelSelector::from_json(&sel).unwrap();
        assert_eq!(parsed.to_query(), "app=web,tier in (a,b),!gone");
        assert!(parsed.matches(&labels(&[("app", "web"), ("tier", "b")])));
        assert!(!parsed.matches(&labels(&[("app", "web")])));
        assert!(LabelSelector::from_json(&json!({})).unwrap().is_empty());
        assert!(
            LabelSelector::from_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]})
            )
            .is_err()
        );
    }

    #[test]
    fn bad_label_selectors() {
        for sel in ["app=(", "app in web", "=x", "a b=c", "app foo (x)"] {
            assert!(LabelSelector::parse(sel).is_err(), "{sel}");
        }
    }

    #[test]
    fn field_selectors() {
        let ev = json!({"involvedObject": {"kind": "ReplicaSet", "name": "web-1", "uid": "u1"}, "source": {"component": "rs"}});
        let cases = [
            ("metadata.name=a", "events", true),
            ("metadata.name!=a", "events", false),
            ("metadata.namespace==default", "events", true),
            (
                "involvedObject.kind=ReplicaSet,involvedObject.name=web-1",
                "events",
                true,
            ),
            ("involvedObject.uid=u2", "events", false),
            ("involvedObject.namespace=", "events", true),
            ("source=rs", "events", true),
        ];
        for (sel, plural, expected) in cases {
            let parsed = FieldSelector::parse(sel, plural).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(parsed.matches("default", "a", Some(&ev)), expected, "{sel}");
        }
        let unschedulable = |sel: &str, node: Value| {
            FieldSelector::parse(sel, "nodes")
                .unwrap()
                .matches("", "n", Some(&node))
        };
        assert!(unschedulable(
            "spec.unschedulable=false",
            json!({"spec": {}})
        ));
        assert!(unschedulable(
            "spec.unschedulable=true",
            json!({"spec": {"unschedulable": true}})
        ));
        assert!(!unschedulable(
            "spec.unschedulable=false",
            json!({"spec": {"unschedulable": true}})
        ));
        assert!(FieldSelector::parse("spec.replicas=1", "deployments").is_err());
        assert!(FieldSelector::parse("metadata.name", "pods").is_err());
        let successful = FieldSelector::parse("status.successful=0", "jobs").unwrap();
        assert!(successful.matches("ns", "j", Some(&serde_json::json!({"status": {}}))));
        assert!(!successful.matches(
            "ns",
            "j",
            Some(&serde_json::json!({"status": {"succeeded": 2}}))
        ));
        assert!(FieldSelector::parse("status.successful=0", "pods").is_err());
        let sorted = LabelSelector::parse("tier in (b,a),app=web,!gone").unwrap();
        assert_eq!(sorted.to_sorted_query(), "app=web,!gone,tier in (a,b)");
        assert!(
            !FieldSelector::parse("metadata.name=a", "pods")
                .unwrap()
                .needs_object()
        );
        assert!(
            FieldSelector::parse("status.phase=Running", "pods")
                .unwrap()
                .needs_object()
        );
    }
}
