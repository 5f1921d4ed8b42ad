//! Validation that upstream performs and controllers rely on: object names (DNS-1123),
//! workload selectors that are non-empty and match the template labels, non-negative
//! replicas, required containers, and immutable selectors; a Job's rules, spec and status, are
//! upstream's Job validation in [`crate::jobs`], and a CronJob's upstream's CronJob validation
//! in [`crate::cronjobs`] (its status, as upstream's, is not validated).

use serde_json::Value;

use crate::selector::{LabelSelector, Labels};
use crate::status::Cause;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// DNS-1123 label: at most 63 of `[a-z0-9-]`, alphanumeric at both ends.
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// DNS-1123 subdomain: at most 253, dot-separated DNS-1123 labels.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// Checks the object name for resource `plural`.
pub(crate) fn name(plural: &str, name: &str) -> Vec<Cause> {
    let quoted = format!("{name:?}");
    if plural == "namespaces" {
        if !is_dns1123_label(name) {
            return vec![Cause::invalid("metadata.name", &quoted, LABEL_MSG)];
        }
    } else if !is_dns1123_subdomain(name) {
        return vec![Cause::invalid("metadata.name", &quoted, SUBDOMAIN_MSG)];
    }
    Vec::new()
}

/// Go's `%#v` of a `map[string]string`, as upstream prints labels in messages.
pub(crate) fn go_map(labels: &Labels) -> String {
    let parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", parts.join(", "))
}

pub(crate) fn pod_spec(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let containers = spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array);
    match containers {
        None => causes.push(Cause::required(&format!("{path}.containers"))),
        Some(list) if list.is_empty() => {
            causes.push(Cause::required(&format!("{path}.containers")))
        }
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
                if cname.is_empty() {
                    causes.push(Cause::required(&format!("{path}.containers[{i}].name")));
                } else if !is_dns1123_label(cname) {
                    causes.push(Cause::invalid(
                        &format!("{path}.containers[{i}].name"),
                        &format!("{cname:?}"),
                        LABEL_MSG,
                    ));
                }
                if c.get("image")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    causes.push(Cause::required(&format!("{path}.containers[{i}].image")));
                }
            }
        }
    }
}

fn workload(plural: &str, obj: &Value, causes: &mut Vec<Cause>) {
    let spec = obj.get("spec");
    if let Some(replicas) = spec.and_then(|s| s.get("replicas")).and_then(Value::as_i64)
        && replicas < 0
    {
        causes.push(Cause::invalid(
            "spec.replicas",
            &replicas.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let template_labels: Labels = spec
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .and_then(Value::as_object)
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    match spec
        .and_then(|s| s.get("selector"))
        .filter(|s| !s.is_null())
    {
        None => causes.push(Cause::required("spec.selector")),
        Some(selector) => match LabelSelector::from_json(selector) {
            Err(e) => causes.push(Cause::invalid("spec.selector", &selector.to_string(), &e)),
            Ok(sel) if sel.is_empty() => {
                let what = plural.trim_end_matches('s');
                causes.push(Cause::invalid(
                    "spec.selector",
                    &selector.to_string(),
                    &format!("empty selector is invalid for {what}"),
                ));
            }
            Ok(sel) if !sel.matches(&template_labels) => causes.push(Cause::invalid(
                "spec.template.metadata.labels",
                &go_map(&template_labels),
                "`selector` does not match template `labels`",
            )),
            Ok(_) => {}
        },
    }
    pod_spec(
        spec.and_then(|s| s.pointer("/template/spec")),
        "spec.template.spec",
        causes,
    );
}

/// Owner references need apiVersion, kind, name and uid, and at most one may be the
/// controller (upstream's `ValidateOwnerReferences`).
fn owner_references(obj: &Value, causes: &mut Vec<Cause>) {
    let Some(refs) = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    else {
        return;
    };
    for (i, r) in refs.iter().enumerate() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if r.get(field)
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                causes.push(Cause::required(&format!(
                    "metadata.ownerReferences[{i}].{field}"
                )));
            }
        }
    }
    let controllers: Vec<String> = refs
        .iter()
        .filter(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            format!("{kind}/{name}")
        })
        .collect();
    if controllers.len() > 1 {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            &Value::Array(refs.clone()).to_string(),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
}

/// Validates an object of resource `plural` being created (`old` is None) or updated.
pub(crate) fn validate(plural: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    owner_references(obj, &mut causes);
    match plural {
        "deployments" | "replicasets" | "statefulsets" | "daemonsets" => {
            workload(plural, obj, &mut causes);
            if let Some(old) = old {
                let (new_sel, old_sel) =
                    (obj.pointer("/spec/selector"), old.pointer("/spec/selector"));
                if new_sel != old_sel {
                    causes.push(Cause::invalid(
                        "spec.selector",
                        &new_sel.map(Value::to_string).unwrap_or_default(),
                        "field is immutable",
                    ));
                }
            }
        }
        "pods" => pod_spec(obj.get("spec"), "spec", &mut causes),
        "jobs" => causes.extend(crate::jobs::validate(obj, old)),
        "cronjobs" => causes.extend(crate::cronjobs::validate(obj, old)),
        _ => {}
    }
    causes
}

/// Validates a status update of an object of resource `plural` (`obj` is the object as it
/// would be stored, `old` as it is).
pub(crate) fn validate_status(plural: &str, obj: &Value, old: &Value) -> Vec<Cause> {
    match plural {
        "jobs" => crate::jobs::validate_status(obj, old),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dns_names() {
        let cases = [
            ("web", true, true),
            ("web-1", true, true),
            ("a.b", false, true),
            ("-a", false, false),
            ("A", false, false),
            ("a_b", false, false),
            ("", false, false),
        ];
        for (s, label, subdomain) in cases {
            assert_eq!(is_dns1123_label(s), label, "{s}");
            assert_eq!(is_dns1123_subdomain(s), subdomain, "{s}");
        }
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(name("namespaces", "a.b").len() == 1);
        assert!(name("pods", "a.b").is_empty());
    }

    fn deployment(selector: Value, labels: Value, replicas: i64) -> Value {
        json!({"spec": {"replicas": replicas, "selector": selector, "template": {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    }

    #[test]
    fn workload_rules() {
        let ok = deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "web"}),
            1,
        );
        assert!(validate("deployments", &ok, None).is_empty());
        let mismatch = deployment(
            json!({"matchLabels": {"app": "x"}}),
            json!({"app": "web"}),
            1,
        );
        let causes = validate("deployments", &mismatch, None);
        assert_eq!(causes[0].field, "spec.template.metadata.labels");
        assert_eq!(
            causes[0].message,
            "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`"
        );
        let empty = deployment(json!({}), json!({"app": "web"}), 1);
        assert_eq!(
            validate("replicasets", &empty, None)[0].field,
            "spec.selector"
        );
        let negative = deployment(
            json!({"matchLabels": {"app": "web"}}),
            json!({"app": "web"}),
            -1,
        );
        assert_eq!(
            validate("statefulsets", &negative, None)[0].field,
            "spec.replicas"
        );
        let changed = deployment(
            json!({"matchLabels": {"app": "web", "x": "y"}}),
            json!({"app": "web", "x": "y"}),
            1,
        );
        assert_eq!(
            validate("deployments", &changed, Some(&ok))[0].message,
            format!(
                "Invalid value: {}: field is immutable",
                changed["spec"]["selector"]
            )
        );
        assert_eq!(
            validate("pods", &json!({"spec": {}}), None)[0].field,
            "spec.containers"
        );
    }

    #[test]
    fn owner_reference_rules() {
        let owner = |name: &str, controller: bool| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": name, "controller": controller});
        let with = |refs: Value| json!({"metadata": {"ownerReferences": refs}});
        assert!(
            validate(
                "leases",
                &with(json!([owner("a", true), owner("b", false)])),
                None
            )
            .is_empty()
        );
        let two = validate(
            "leases",
            &with(json!([owner("a", true), owner("b", true)])),
            None,
        );
        assert_eq!(two.len(), 1);
        assert!(
            two[0]
                .message
                .ends_with("Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"),
            "{}",
            two[0].message
        );
        let missing = validate(
            "leases",
            &with(json!([{"kind": "ReplicaSet", "name": "a"}])),
            None,
        );
        let fields: Vec<&str> = missing.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "metadata.ownerReferences[0].apiVersion",
                "metadata.ownerReferences[0].uid"
            ]
        );
    }
}
