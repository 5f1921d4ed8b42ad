//! The batch/v1 Job strategy of upstream's registry (`pkg/registry/batch/job/strategy.go`),
//! with the Job's API defaults (`pkg/apis/batch/v1/defaults.go`) and validation
//! (`pkg/apis/batch/validation`): the selector and template labels generated on create, the
//! spec defaults, the rules a spec and a spec update keep, and the rules a status update keeps
//! (the strengthened ones upstream applies since the `JobManagedBy` gate, on by default).
//!
//! Why in the sim: a Job controller is tested against it, and a controller that writes a
//! status a real API server refuses must fail here too.

use serde_json::{Map, Value, json};

use crate::defaults::{default_field, object_at};
use crate::object::{labels_of, meta_str};
use crate::selector::{LabelSelector, Labels};
use crate::status::Cause;
use crate::validation::{go_map, is_dns1123_label, is_dns1123_subdomain, pod_spec};

/// The template label (and selector key) holding the Job's uid.
pub(crate) const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The template label holding the Job's name.
pub(crate) const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The legacy, unprefixed form of [`CONTROLLER_UID_LABEL`].
pub(crate) const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// The legacy, unprefixed form of [`JOB_NAME_LABEL`].
pub(crate) const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// The warning upstream sends with a batch/v1 Job deletion that names no propagation policy
/// (the default for batch/v1 orphans the pods).
pub(crate) const ORPHAN_WARNING: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";

/// Upstream's limits (`pkg/apis/batch/validation`).
const MAX_PARALLELISM_FOR_INDEXED: i64 = 100_000;
const MAX_FAILED_INDEXES: i64 = 100_000;
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
const PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_FAILED_INDEXES_FOR_HIGH_COMPLETIONS: i64 = 10_000;
const MAX_POD_FAILURE_POLICY_RULES: usize = 20;
const MAX_ON_EXIT_CODES_VALUES: usize = 255;
const MAX_ON_POD_CONDITIONS: usize = 20;
const MAX_MANAGED_BY_LENGTH: usize = 63;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const MAX_SUCCESS_POLICY_RULES: usize = 20;

/// Upstream's `ValidateNonnegativeField` detail.
pub(crate) const NONNEGATIVE: &str = "must be greater than or equal to 0";
const IMMUTABLE: &str = "field is immutable";

/// The field `key` of `obj`, unless absent or null.
pub(crate) fn field<'a>(obj: &'a Value, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

/// The integer field `key` of `obj`, unless absent, null or not an integer.
pub(crate) fn int(obj: &Value, key: &str) -> Option<i64> {
    field(obj, key).and_then(Value::as_i64)
}

/// The string field `key` of `obj`, unless absent, null or not a string.
pub(crate) fn string<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    field(obj, key).and_then(Value::as_str)
}

/// A value as upstream's `field.Error` prints it: numbers and booleans bare, strings quoted,
/// anything else as JSON (upstream prints Go syntax there).
pub(crate) fn go_value(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "null".to_string(),
        Some(Value::String(s)) => format!("{s:?}"),
        Some(other) => other.to_string(),
    }
}

/// A timestamp as Go prints a `metav1.Time` (`2024-01-02 03:04:05 +0000 UTC`).
fn go_time(timestamp: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S +0000 UTC")
                .to_string()
        })
        .unwrap_or_else(|_| timestamp.to_string())
}

fn parse_time(timestamp: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::parse_from_rfc3339(timestamp)
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

fn is_manual_selector(job: &Value) -> bool {
    job.pointer("/spec/manualSelector") == Some(&json!(true))
}

fn is_indexed(spec: &Value) -> bool {
    string(spec, "completionMode") == Some("Indexed")
}

/// Sorts a JSON object by key, as Go serializes a map.
fn sort_keys(map: &mut Map<String, Value>) {
    let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    map.extend(entries);
}

/// Upstream's `generateSelector` (PrepareForCreate), unless `spec.manualSelector` is true: the
/// template gets `batch.kubernetes.io/job-name`, `job-name` (the Job's name) and
/// `batch.kubernetes.io/controller-uid`, `controller-uid` (its uid) where it has no such
/// label, and the selector matches `batch.kubernetes.io/controller-uid` unless it already
/// names that key. Conflicting values the client set are left for validation to refuse.
pub(crate) fn generate_selector(job: &mut Value) {
    if is_manual_selector(job) {
        return;
    }
    let name = meta_str(job, "name").to_string();
    let uid = meta_str(job, "uid").to_string();
    let Some(map) = job.as_object_mut() else {
        return;
    };
    let spec = object_at(map, "spec");
    let labels = object_at(object_at(object_at(spec, "template"), "metadata"), "labels");
    for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in [LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL] {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    sort_keys(labels);
    let match_labels = object_at(object_at(spec, "selector"), "matchLabels");
    match_labels
        .entry(CONTROLLER_UID_LABEL)
        .or_insert_with(|| json!(uid));
    sort_keys(match_labels);
}

/// Upstream's `SetDefaults_Job` on `spec` (the pod template is defaulted by the caller):
/// completions and parallelism 1 when both are unset, parallelism 1, backoffLimit 6 (the
/// largest int32 with `backoffLimitPerIndex`), completionMode NonIndexed, suspend false,
/// each pod-condition pattern's status True, podReplacementPolicy Failed with a pod failure
/// policy and TerminatingOrFailed without.
pub(crate) fn default_spec(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default_field(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        i64::from(i32::MAX)
    };
    default_field(spec, "backoffLimit", json!(backoff));
    default_field(spec, "completionMode", json!("NonIndexed"));
    default_field(spec, "suspend", json!(false));
    let has_failure_policy = !unset(spec, "podFailurePolicy");
    default_pod_condition_patterns(spec);
    let replacement = if has_failure_policy {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default_field(spec, "podReplacementPolicy", json!(replacement));
}

/// Upstream's `SetDefaults_PodFailurePolicyOnPodConditionsPattern` on every pattern of a Job
/// spec's pod failure policy: an unset `status` is True. Upstream defaults the pattern type
/// wherever it appears, so a CronJob's `spec.jobTemplate.spec` gets it too.
pub(crate) fn default_pod_condition_patterns(spec: &mut Map<String, Value>) {
    let rules = spec
        .get_mut("podFailurePolicy")
        .and_then(|policy| policy.get_mut("rules"));
    let Some(Value::Array(rules)) = rules else {
        return;
    };
    for rule in rules.iter_mut() {
        let Some(Value::Array(patterns)) = rule.get_mut("onPodConditions") else {
            continue;
        };
        for pattern in patterns.iter_mut().filter_map(Value::as_object_mut) {
            if pattern
                .get("status")
                .is_none_or(|s| s.is_null() || s == &json!(""))
            {
                pattern.insert("status".into(), json!("True"));
            }
        }
    }
}

/// `SetDefaults_Job`'s labels: a Job without labels takes its template's. Upstream defaults
/// on every decode, so a Job created without labels shows the generated template labels too
/// (its registry reads the object back from storage, defaulted again, after generating them).
pub(crate) fn default_labels(job: &mut Map<String, Value>) {
    let template_labels = job
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .and_then(Value::as_object)
        .filter(|labels| !labels.is_empty())
        .cloned();
    let Some(template_labels) = template_labels else {
        return;
    };
    let metadata = object_at(job, "metadata");
    let has_labels = metadata
        .get("labels")
        .and_then(Value::as_object)
        .is_some_and(|labels| !labels.is_empty());
    if !has_labels {
        metadata.insert("labels".into(), Value::Object(template_labels));
    }
}

/// The template labels of `job`.
fn template_labels(job: &Value) -> Labels {
    job.pointer("/spec/template")
        .map(labels_of)
        .unwrap_or_default()
}

/// Validates a Job being created (`old` None) or updated: upstream's `ValidateJob` and, on
/// update, `ValidateJobSpecUpdate`.
pub(crate) fn validate(job: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    // Upstream requires the prefixed labels on create, and on update only of a Job that had
    // them (older Jobs may not).
    let require_prefixed = old.is_none_or(|old| {
        let labels = template_labels(old);
        labels.contains_key(JOB_NAME_LABEL) && labels.contains_key(CONTROLLER_UID_LABEL)
    });
    generated_selector(job, require_prefixed, &mut causes);
    let spec = job.get("spec").unwrap_or(&Value::Null);
    spec_rules(spec, &mut causes);
    selector_rules(spec, &mut causes);
    if is_indexed(spec)
        && let Some(completions) = int(spec, "completions").filter(|c| *c > 0)
    {
        let name = meta_str(job, "name");
        let hostname = format!("{name}-{}", completions - 1);
        if !is_dns1123_label(&hostname) {
            causes.push(Cause::invalid(
                "metadata.name",
                &format!("{name:?}"),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    if let Some(old) = old {
        update_rules(job, old, &mut causes);
    }
    causes
}

/// Upstream's `validateGeneratedSelector`: unless the selector is manual, the template carries
/// the generated labels and the selector selects them.
fn generated_selector(job: &Value, require_prefixed: bool, causes: &mut Vec<Cause>) {
    let Some(selector) = job.pointer("/spec/selector").filter(|s| !s.is_null()) else {
        return;
    };
    if is_manual_selector(job) {
        return;
    }
    let uid = meta_str(job, "uid");
    let name = meta_str(job, "name");
    if uid.is_empty() {
        causes.push(Cause::required("metadata.uid"));
    }
    let labels = template_labels(job);
    let mut expected = vec![
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (LEGACY_JOB_NAME_LABEL, name),
    ];
    if require_prefixed {
        expected.extend([(CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)]);
    }
    for (key, value) in &expected {
        let path = format!("spec.template.metadata.labels[{key}]");
        let detail = format!("must be '{value}'");
        match labels.get(*key) {
            None => causes.push(Cause::required_because(&path, &detail)),
            Some(actual) if actual != value => {
                causes.push(Cause::invalid(&path, &go_map(&labels), &detail));
            }
            Some(_) => {}
        }
    }
    let expected: Labels = expected
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Ok(parsed) = LabelSelector::from_json(selector)
        && !parsed.matches(&expected)
    {
        causes.push(Cause::invalid(
            "spec.selector",
            &selector.to_string(),
            "`selector` not auto-generated",
        ));
    }
}

/// Upstream's `ValidateJobSpec` tail: a selector is required, valid, and matches the
/// template's labels.
fn selector_rules(spec: &Value, causes: &mut Vec<Cause>) {
    let Some(selector) = field(spec, "selector") else {
        causes.push(Cause::required("spec.selector"));
        return;
    };
    match LabelSelector::from_json(selector) {
        Err(e) => causes.push(Cause::invalid("spec.selector", &selector.to_string(), &e)),
        Ok(parsed) => {
            let labels = spec.get("template").map(labels_of).unwrap_or_default();
            if !parsed.matches(&labels) {
                causes.push(Cause::invalid(
                    "spec.template.metadata.labels",
                    &go_map(&labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
}

/// Upstream's `validateJobSpec` on a Job spec that lives at `path` rather than at `spec`
/// (a CronJob's `spec.jobTemplate.spec`): the same rules, their causes under `path`.
pub(crate) fn spec_rules_at(spec: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    spec_rules(spec, &mut causes);
    for cause in &mut causes {
        if let Some(rest) = cause.field.strip_prefix("spec") {
            cause.field = format!("{path}{rest}");
        }
    }
    causes
}

/// Upstream's `validateJobSpec` (every cause's field starts with `spec.`).
fn spec_rules(spec: &Value, causes: &mut Vec<Cause>) {
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(value) = int(spec, key).filter(|v| *v < 0) {
            causes.push(Cause::invalid(
                &format!("spec.{key}"),
                &value.to_string(),
                NONNEGATIVE,
            ));
        }
    }
    let per_index = int(spec, "backoffLimitPerIndex");
    let max_failed = int(spec, "maxFailedIndexes");
    let completions = int(spec, "completions");
    let parallelism = int(spec, "parallelism");
    if max_failed.is_some() && per_index.is_none() {
        causes.push(Cause::required_because(
            "spec.backoffLimitPerIndex",
            "when maxFailedIndexes is specified",
        ));
    }
    if let Some(managed_by) = string(spec, "managedBy") {
        managed_by_rules(managed_by, causes);
    }
    if let Some(mode) = field(spec, "completionMode") {
        let known = matches!(mode.as_str(), Some("NonIndexed" | "Indexed"));
        if !known {
            causes.push(Cause::not_supported(
                "spec.completionMode",
                &go_value(Some(mode)),
                &["NonIndexed", "Indexed"],
            ));
        }
    }
    if is_indexed(spec) {
        if completions.is_none() {
            causes.push(Cause::required_because(
                "spec.completions",
                "when completion mode is Indexed",
            ));
        }
        if let Some(p) = parallelism.filter(|p| *p > MAX_PARALLELISM_FOR_INDEXED) {
            causes.push(Cause::invalid(
                "spec.parallelism",
                &p.to_string(),
                &format!(
                    "must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED} when completion mode is Indexed"
                ),
            ));
        }
        if let (Some(c), Some(m)) = (completions, max_failed)
            && m > c
        {
            causes.push(Cause::invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                "must be less than or equal to completions",
            ));
        }
        if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES) {
            causes.push(Cause::invalid(
                "spec.maxFailedIndexes",
                &m.to_string(),
                &format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
            ));
        }
        if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT) && per_index.is_some() {
            if max_failed.is_none() {
                causes.push(Cause::required_because(
                    "spec.maxFailedIndexes",
                    &format!(
                        "must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"
                    ),
                ));
            }
            let high = format!(
                "when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
            );
            if let Some(p) = parallelism.filter(|p| *p > PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS) {
                causes.push(Cause::invalid(
                    "spec.parallelism",
                    &p.to_string(),
                    &format!(
                        "must be less than or equal to {PARALLELISM_LIMIT_FOR_HIGH_COMPLETIONS} {high}"
                    ),
                ));
            }
            if let Some(m) = max_failed.filter(|m| *m > MAX_FAILED_INDEXES_FOR_HIGH_COMPLETIONS) {
                causes.push(Cause::invalid(
                    "spec.maxFailedIndexes",
                    &m.to_string(),
                    &format!(
                        "must be less than or equal to {MAX_FAILED_INDEXES_FOR_HIGH_COMPLETIONS} {high}"
                    ),
                ));
            }
        }
    }
    if matches!(string(spec, "completionMode"), None | Some("NonIndexed")) {
        for (key, value) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(value) = value {
                causes.push(Cause::invalid(
                    &format!("spec.{key}"),
                    &value.to_string(),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    if let Some(policy) = field(spec, "podFailurePolicy") {
        pod_failure_policy_rules(spec, policy, causes);
    }
    if let Some(policy) = field(spec, "successPolicy") {
        if is_indexed(spec) {
            success_policy_rules(policy, completions, causes);
        } else {
            causes.push(Cause::invalid(
                "spec.successPolicy",
                &policy.to_string(),
                "requires indexed completion mode",
            ));
        }
    }
    if let Some(replacement) = field(spec, "podReplacementPolicy") {
        let value = replacement.as_str().unwrap_or("");
        let path = "spec.podReplacementPolicy";
        if field(spec, "podFailurePolicy").is_some() {
            if value != "Failed" {
                causes.push(Cause::not_supported(
                    path,
                    &go_value(Some(replacement)),
                    &["Failed"],
                ));
            }
        } else if !matches!(value, "Failed" | "TerminatingOrFailed") {
            causes.push(Cause::not_supported(
                path,
                &go_value(Some(replacement)),
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let template_spec = spec.pointer("/template/spec");
    pod_spec(template_spec, "spec.template.spec", causes);
    let restart_path = "spec.template.spec.restartPolicy";
    let restart = template_spec
        .and_then(|s| string(s, "restartPolicy"))
        .unwrap_or("");
    match restart {
        "" | "Always" => causes.push(Cause::required_because(
            restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" | "Never" => {
            if field(spec, "podFailurePolicy").is_some() && restart != "Never" {
                causes.push(Cause::invalid(
                    restart_path,
                    &format!("{restart:?}"),
                    "only \"Never\" is supported when podFailurePolicy is specified",
                ));
            }
        }
        other => causes.push(Cause::not_supported(
            restart_path,
            &format!("{other:?}"),
            &["OnFailure", "Never"],
        )),
    }
}

/// `spec.managedBy`: a domain-prefixed path of at most 63 characters.
fn managed_by_rules(managed_by: &str, causes: &mut Vec<Cause>) {
    let path = "spec.managedBy";
    match managed_by.split_once('/') {
        Some((domain, rest)) if !domain.is_empty() && !rest.is_empty() => {
            if !is_dns1123_subdomain(domain) {
                causes.push(Cause::invalid(
                    path,
                    &format!("{domain:?}"),
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ));
            }
        }
        _ => causes.push(Cause::invalid(
            path,
            &format!("{managed_by:?}"),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )),
    }
    if managed_by.len() > MAX_MANAGED_BY_LENGTH {
        causes.push(Cause::too_long(path, MAX_MANAGED_BY_LENGTH));
    }
}

/// The names of the template's containers and init containers.
fn container_names(spec: &Value) -> Vec<&str> {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|key| spec.pointer(&format!("/template/spec/{key}")))
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// Upstream's `validatePodFailurePolicy` and its rules.
fn pod_failure_policy_rules(spec: &Value, policy: &Value, causes: &mut Vec<Cause>) {
    let rules_path = "spec.podFailurePolicy.rules";
    let rules = policy
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.len() > MAX_POD_FAILURE_POLICY_RULES {
        causes.push(Cause::too_many(
            rules_path,
            rules.len(),
            MAX_POD_FAILURE_POLICY_RULES,
        ));
    }
    let names = container_names(spec);
    const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{rules_path}[{i}]");
        let action_path = format!("{rule_path}.action");
        match string(rule, "action").unwrap_or("") {
            "" => causes.push(Cause::required_because(
                &action_path,
                "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
            )),
            "FailIndex" => {
                if field(spec, "backoffLimitPerIndex").is_none() {
                    causes.push(Cause::invalid(
                        &action_path,
                        "\"FailIndex\"",
                        "requires the backoffLimitPerIndex to be set",
                    ));
                }
            }
            action if ACTIONS.contains(&action) => {}
            action => causes.push(Cause::not_supported(
                &action_path,
                &format!("{action:?}"),
                &ACTIONS,
            )),
        }
        let on_exit_codes = field(rule, "onExitCodes");
        let on_conditions = field(rule, "onPodConditions")
            .and_then(Value::as_array)
            .filter(|patterns| !patterns.is_empty());
        if let Some(requirement) = on_exit_codes {
            on_exit_codes_rules(
                requirement,
                &format!("{rule_path}.onExitCodes"),
                &names,
                causes,
            );
        }
        if let Some(patterns) = on_conditions {
            on_pod_conditions_rules(patterns, &format!("{rule_path}.onPodConditions"), causes);
        }
        match (on_exit_codes.is_some(), on_conditions.is_some()) {
            (true, true) => causes.push(Cause::invalid_omitted(
                &rule_path,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            )),
            (false, false) => causes.push(Cause::invalid_omitted(
                &rule_path,
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            _ => {}
        }
    }
}

fn on_exit_codes_rules(requirement: &Value, path: &str, names: &[&str], causes: &mut Vec<Cause>) {
    let operator_path = format!("{path}.operator");
    let operator = string(requirement, "operator").unwrap_or("");
    match operator {
        "" => causes.push(Cause::required_because(
            &operator_path,
            "valid values: [\"In\" \"NotIn\"]",
        )),
        "In" | "NotIn" => {}
        other => causes.push(Cause::not_supported(
            &operator_path,
            &format!("{other:?}"),
            &["In", "NotIn"],
        )),
    }
    if let Some(container) = string(requirement, "containerName")
        && !names.contains(&container)
    {
        causes.push(Cause::invalid(
            &format!("{path}.containerName"),
            &format!("{container:?}"),
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = format!("{path}.values");
    let values: Vec<i64> = requirement
        .get("values")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let go_list = |values: &[i64]| {
        let parts: Vec<String> = values.iter().map(i64::to_string).collect();
        format!("[]int32{{{}}}", parts.join(", "))
    };
    if values.is_empty() {
        causes.push(Cause::invalid(
            &values_path,
            &go_list(&values),
            "at least one value is required",
        ));
    } else if values.len() > MAX_ON_EXIT_CODES_VALUES {
        causes.push(Cause::too_many(
            &values_path,
            values.len(),
            MAX_ON_EXIT_CODES_VALUES,
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (j, value) in values.iter().enumerate() {
        let value_path = format!("{values_path}[{j}]");
        if operator == "In" && *value == 0 {
            causes.push(Cause::invalid(
                &value_path,
                "0",
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*value) {
            causes.push(Cause::duplicate(&value_path, &value.to_string()));
        }
    }
    if values.windows(2).any(|pair| pair[0] > pair[1]) {
        causes.push(Cause::invalid(
            &values_path,
            &go_list(&values),
            "must be ordered",
        ));
    }
}

fn on_pod_conditions_rules(patterns: &[Value], path: &str, causes: &mut Vec<Cause>) {
    if patterns.len() > MAX_ON_POD_CONDITIONS {
        causes.push(Cause::too_many(path, patterns.len(), MAX_ON_POD_CONDITIONS));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let pattern_path = format!("{path}[{j}]");
        if string(pattern, "type").unwrap_or("").is_empty() {
            causes.push(Cause::required_because(
                &format!("{pattern_path}.type"),
                "name part must be non-empty",
            ));
        }
        let status_path = format!("{pattern_path}.status");
        match string(pattern, "status").unwrap_or("") {
            "" => causes.push(Cause::required_because(
                &status_path,
                "valid values: [\"False\" \"True\" \"Unknown\"]",
            )),
            "False" | "True" | "Unknown" => {}
            other => causes.push(Cause::not_supported(
                &status_path,
                &format!("{other:?}"),
                &["False", "True", "Unknown"],
            )),
        }
    }
}

/// Upstream's `validateSuccessPolicy` and its rules.
fn success_policy_rules(policy: &Value, completions: Option<i64>, causes: &mut Vec<Cause>) {
    let rules_path = "spec.successPolicy.rules";
    let rules = policy
        .get("rules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if rules.is_empty() {
        causes.push(Cause::required_because(
            rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_POLICY_RULES {
        causes.push(Cause::too_many(
            rules_path,
            rules.len(),
            MAX_SUCCESS_POLICY_RULES,
        ));
    }
    let completions = completions.unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let rule_path = format!("{rules_path}[{i}]");
        let count = int(rule, "succeededCount");
        let indexes = string(rule, "succeededIndexes");
        if count.is_none() && indexes.is_none() {
            causes.push(Cause::required_because(
                &rule_path,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(indexes) = indexes {
            let path = format!("{rule_path}.succeededIndexes");
            if indexes.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                causes.push(Cause::too_long(&path, MAX_SUCCEEDED_INDEXES_LENGTH));
            }
            match indexes_total(indexes, completions) {
                Ok(n) => total = n,
                Err(e) => causes.push(Cause::invalid(
                    &path,
                    &format!("{indexes:?}"),
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(count) = count {
            let path = format!("{rule_path}.succeededCount");
            if count < 0 {
                causes.push(Cause::invalid(&path, &count.to_string(), NONNEGATIVE));
            }
            if count > completions {
                causes.push(Cause::invalid(
                    &path,
                    &count.to_string(),
                    &format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if indexes.is_some() && count > total {
                causes.push(Cause::invalid(
                    &path,
                    &count.to_string(),
                    &format!(
                        "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
    }
}

/// Upstream's `parseIndexInterval`: `x` or `x-y` with `x < y < completions`.
fn index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let limits: Vec<&str> = interval.split('-').collect();
    if limits.len() > 2 {
        return Err(format!(
            "the fragment {interval:?} violates the requirement that an index interval can have at most two parts separated by '-'"
        ));
    }
    let parse = |s: &str| {
        let n = s
            .parse::<i64>()
            .map_err(|_| format!("cannot convert string to integer for index: {s:?}"))?;
        if n >= completions {
            return Err(format!("too large index: {s:?}"));
        }
        Ok(n)
    };
    let x = parse(limits[0])?;
    match limits.get(1) {
        Some(second) => {
            let y = parse(second)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
        None => Ok((x, x)),
    }
}

/// Upstream's `validateIndexesFormat`: the number of indexes in `1,3-5`, or why it is invalid.
fn indexes_total(indexes: &str, completions: i64) -> Result<i64, String> {
    if indexes.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in indexes.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(last) = last
            && last >= x
        {
            return Err(format!(
                "non-increasing order, previous: {last}, current: {x}"
            ));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// Upstream's `validateFailedIndexesNotOverlapCompleted`: the first index in both sets, if any.
fn indexes_overlap(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let intervals = |s: &str| -> Vec<(i64, i64)> {
        s.split(',')
            .filter_map(|i| index_interval(i, completions).ok())
            .collect()
    };
    let (completed, failed) = (intervals(completed), intervals(failed));
    let (mut c, mut f) = (0, 0);
    while c < completed.len() && f < failed.len() {
        let ((cx, cy), (fx, fy)) = (completed[c], failed[f]);
        if cx <= fy && fx <= cy {
            return Some(cx.max(fx));
        }
        if cx <= fx {
            c += 1;
        } else {
            f += 1;
        }
    }
    None
}

/// Upstream's `ValidateJobSpecUpdate` beyond the spec rules: what may not change.
fn update_rules(job: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let null = Value::Null;
    let spec = job.get("spec").unwrap_or(&null);
    let old_spec = old.get("spec").unwrap_or(&null);
    let immutable = |key: &str, causes: &mut Vec<Cause>| {
        if field(spec, key) != field(old_spec, key) {
            causes.push(Cause::invalid(
                &format!("spec.{key}"),
                &go_value(field(spec, key)),
                IMMUTABLE,
            ));
        }
    };
    // Completions: immutable, except an Indexed Job's, changed in tandem with parallelism
    // (elastic Indexed Jobs).
    if is_indexed(spec) {
        let completions = int(spec, "completions");
        if field(spec, "completions") != field(old_spec, "completions")
            && let Some(completions) = completions
            && Some(completions) != int(spec, "parallelism")
        {
            causes.push(Cause::invalid(
                "spec.completions",
                &completions.to_string(),
                "can only be modified in tandem with spec.parallelism",
            ));
        }
    } else {
        immutable("completions", causes);
    }
    immutable("selector", causes);
    template_update_rules(spec, old_spec, old, causes);
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        immutable(key, causes);
    }
}

/// Upstream's `validatePodTemplateUpdate`: the template is immutable, except that a Job
/// suspended and never started may change its pods' scheduling directives (node selector,
/// node affinity, tolerations, scheduling gates) and the template's labels and annotations.
fn template_update_rules(spec: &Value, old_spec: &Value, old: &Value, causes: &mut Vec<Cause>) {
    let null = Value::Null;
    let template = spec.get("template").unwrap_or(&null);
    let mut old_template = old_spec.get("template").cloned().unwrap_or(Value::Null);
    let suspended = old_spec.get("suspend") == Some(&json!(true));
    let never_started = old.pointer("/status/startTime").is_none_or(Value::is_null);
    if suspended && never_started && old_template.is_object() {
        allow_scheduling_changes(template, &mut old_template);
    }
    if *template != old_template {
        causes.push(Cause::invalid(
            "spec.template",
            &template.to_string(),
            IMMUTABLE,
        ));
    }
}

/// Copies the mutable scheduling directives of `template` into `old`, as upstream does before
/// comparing the two.
fn allow_scheduling_changes(template: &Value, old: &mut Value) {
    let copy = |from: Option<&Value>, to: &mut Map<String, Value>, key: &str| match from
        .and_then(|f| f.get(key))
    {
        Some(value) => {
            to.insert(key.to_string(), value.clone());
        }
        None => {
            to.remove(key);
        }
    };
    let Some(old_map) = old.as_object_mut() else {
        return;
    };
    let old_meta = object_at(old_map, "metadata");
    for key in ["labels", "annotations"] {
        copy(template.get("metadata"), old_meta, key);
    }
    let new_spec = template.get("spec");
    let old_spec = object_at(old_map, "spec");
    for key in ["nodeSelector", "tolerations", "schedulingGates"] {
        copy(new_spec, old_spec, key);
    }
    let new_affinity = new_spec.and_then(|s| field(s, "affinity"));
    let old_has_affinity = old_spec.get("affinity").is_some_and(|a| !a.is_null());
    match (new_affinity, old_has_affinity) {
        (None, true) => {
            let affinity = object_at(old_spec, "affinity");
            affinity.remove("nodeAffinity");
            if affinity.is_empty() {
                old_spec.remove("affinity");
            }
        }
        (Some(new_affinity), false) => {
            let mut affinity = Map::new();
            if let Some(node) = new_affinity.get("nodeAffinity") {
                affinity.insert("nodeAffinity".into(), node.clone());
            }
            old_spec.insert("affinity".into(), Value::Object(affinity));
        }
        (Some(new_affinity), true) => {
            let affinity = object_at(old_spec, "affinity");
            copy(Some(new_affinity), affinity, "nodeAffinity");
        }
        (None, false) => {}
    }
}

/// Whether `job` has a condition of `kind` with status True.
fn condition_true(job: &Value, kind: &str) -> bool {
    job.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.get("type") == Some(&json!(kind)) && c.get("status") == Some(&json!("True"))
            })
        })
}

fn is_finished(job: &Value) -> bool {
    condition_true(job, "Complete") || condition_true(job, "Failed")
}

/// Validates a status update of a Job: upstream's `ValidateJobUpdateStatus` with the options
/// its status strategy sets (most rules apply only when the fields they read changed, so a
/// controller can mend other fields of a status that breaks them).
pub(crate) fn validate_status(job: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let null = Value::Null;
    let status = job.get("status").unwrap_or(&null);
    let old_status = old.get("status").unwrap_or(&null);
    let spec = job.get("spec").unwrap_or(&null);
    let changed = |key: &str| field(status, key) != field(old_status, key);
    let count = |status: &Value, key: &str| int(status, key).unwrap_or(0);
    let complete = condition_true(job, "Complete");
    let failed = condition_true(job, "Failed");
    let failure_target = condition_true(job, "FailureTarget");
    let criteria_met = condition_true(job, "SuccessCriteriaMet");
    let finished = complete || failed;
    let finished_changed = finished != is_finished(old);
    let complete_changed = complete != condition_true(old, "Complete");
    let failed_changed = failed != condition_true(old, "Failed");
    let failure_target_changed = failure_target != condition_true(old, "FailureTarget");
    let criteria_met_changed = criteria_met != condition_true(old, "SuccessCriteriaMet");
    let completed_indexes_changed = changed("completedIndexes");
    let failed_indexes_changed = changed("failedIndexes");
    let active_changed = changed("active");
    let start_changed = changed("startTime");
    let completion_changed = changed("completionTime");
    let conditions = "status.conditions";

    for key in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(value) = int(status, key).filter(|v| *v < 0) {
            causes.push(Cause::invalid(
                &format!("status.{key}"),
                &value.to_string(),
                NONNEGATIVE,
            ));
        }
    }
    uncounted_rules(status, &mut causes);
    if (complete_changed || failed_changed) && complete && failed {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_changed || failure_target_changed) && complete && failure_target {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion_time = string(status, "completionTime");
    let start_time = string(status, "startTime");
    if (complete_changed || completion_changed)
        && let Some(time) = completion_time
        && !complete
    {
        causes.push(Cause::invalid(
            "status.completionTime",
            &go_time(time),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if (complete_changed || completion_changed) && completion_time.is_none() && complete {
        causes.push(Cause::required_because(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        ));
    }
    if (start_changed || completion_changed)
        && let (Some(start), Some(end)) = (start_time, completion_time)
        && let (Some(start_at), Some(end_at)) = (parse_time(start), parse_time(end))
        && end_at < start_at
    {
        causes.push(Cause::invalid(
            "status.completionTime",
            &go_time(end),
            "completionTime cannot be set before startTime",
        ));
    }
    if (failed_changed || failed_indexes_changed) && failed && !failure_target {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ));
    }
    if (complete_changed || criteria_met_changed) && complete && !criteria_met {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    if (finished_changed || active_changed) && finished && count(status, "active") > 0 {
        causes.push(Cause::invalid(
            "status.active",
            &count(status, "active").to_string(),
            "active>0 is invalid for finished job",
        ));
    }
    if (finished_changed || start_changed) && finished && start_time.is_none() {
        causes.push(Cause::required_because(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    let uncounted = field(status, "uncountedTerminatedPods");
    let uncounted_pods = uncounted.map_or(0, |u| {
        ["succeeded", "failed"]
            .iter()
            .filter_map(|k| u.get(*k).and_then(Value::as_array))
            .map(Vec::len)
            .sum()
    });
    if (finished_changed || changed("uncountedTerminatedPods")) && finished && uncounted_pods > 0 {
        causes.push(Cause::invalid(
            "status.uncountedTerminatedPods",
            &go_value(uncounted),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }
    let completions = int(spec, "completions");
    let completed_indexes = string(status, "completedIndexes").unwrap_or("");
    let failed_indexes = string(status, "failedIndexes");
    if completed_indexes_changed
        && let Some(completions) = completions
        && let Err(e) = indexes_total(completed_indexes, completions)
    {
        causes.push(Cause::invalid(
            "status.completedIndexes",
            &format!("{completed_indexes:?}"),
            &format!("error parsing completedIndexes: {e}"),
        ));
    }
    let per_index = field(spec, "backoffLimitPerIndex").is_some();
    if failed_indexes_changed
        && let (Some(completions), true, Some(indexes)) = (completions, per_index, failed_indexes)
        && let Err(e) = indexes_total(indexes, completions)
    {
        causes.push(Cause::invalid(
            "status.failedIndexes",
            &format!("{indexes:?}"),
            &format!("error parsing failedIndexes: {e}"),
        ));
    }
    if completed_indexes_changed && !completed_indexes.is_empty() && !is_indexed(spec) {
        causes.push(Cause::invalid(
            "status.completedIndexes",
            &format!("{completed_indexes:?}"),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if failed_indexes_changed
        && !per_index
        && let Some(indexes) = failed_indexes
    {
        causes.push(Cause::invalid(
            "status.failedIndexes",
            &format!("{indexes:?}"),
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if (failed_indexes_changed || completed_indexes_changed)
        && let (Some(completions), Some(indexes)) = (completions, failed_indexes)
        && let Some(at) = indexes_overlap(completed_indexes, indexes, completions)
    {
        causes.push(Cause::invalid(
            "status.failedIndexes",
            &format!("{indexes:?}"),
            &format!("failedIndexes and completedIndexes overlap at index: {at}"),
        ));
    }
    if (finished_changed || changed("terminating"))
        && finished
        && let Some(terminating) = int(status, "terminating").filter(|t| *t > 0)
    {
        causes.push(Cause::invalid(
            "status.terminating",
            &terminating.to_string(),
            "terminating>0 is invalid for finished job",
        ));
    }
    if (changed("ready") || active_changed)
        && let Some(ready) = int(status, "ready")
        && ready > count(status, "active")
    {
        causes.push(Cause::invalid(
            "status.ready",
            &ready.to_string(),
            "cannot set more ready pods than active",
        ));
    }
    if criteria_met && failed {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if criteria_met && failure_target {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if field(spec, "successPolicy").is_some() && !criteria_met && complete {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }

    // The update rules.
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if condition_true(old, kind) && !condition_true(job, kind) {
            causes.push(Cause::invalid_omitted(
                conditions,
                &format!("cannot disable the terminal {kind}=True condition"),
            ));
        }
    }
    if count(status, "failed") < count(old_status, "failed") {
        causes.push(Cause::invalid(
            "status.failed",
            &count(status, "failed").to_string(),
            "cannot decrease the failed counter",
        ));
    }
    // Succeeded may go down for an Indexed Job scaled down (completions == parallelism).
    let elastic = is_indexed(spec) && completions == int(spec, "parallelism");
    if !elastic && count(status, "succeeded") < count(old_status, "succeeded") {
        causes.push(Cause::invalid(
            "status.succeeded",
            &count(status, "succeeded").to_string(),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(new), Some(previous)) = (completion_time, string(old_status, "completionTime"))
        && new != previous
    {
        causes.push(Cause::invalid(
            "status.completionTime",
            &go_time(new),
            "completionTime cannot be mutated",
        ));
    }
    // Since v1.35 (kubernetes#134769) a Job resumed from suspension (its stored status says
    // `Suspended=True`) may get a new start time.
    if start_changed
        && string(old_status, "startTime").is_some()
        && spec.get("suspend") != Some(&json!(true))
        && !condition_true(old, "Suspended")
    {
        causes.push(Cause::required_because(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    if condition_true(old, "SuccessCriteriaMet") && !criteria_met {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if condition_true(old, "Complete") && !condition_true(old, "SuccessCriteriaMet") && criteria_met
    {
        causes.push(Cause::invalid_omitted(
            conditions,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    causes
}

/// `status.uncountedTerminatedPods`: no empty and no repeated uid across both lists.
fn uncounted_rules(status: &Value, causes: &mut Vec<Cause>) {
    let Some(uncounted) = field(status, "uncountedTerminatedPods") else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    for list in ["succeeded", "failed"] {
        let uids = uncounted
            .get(list)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, uid) in uids.iter().enumerate() {
            let path = format!("status.uncountedTerminatedPods.{list}[{i}]");
            let uid = uid.as_str().unwrap_or("");
            if uid.is_empty() {
                causes.push(Cause::invalid(&path, "\"\"", "must not be empty"));
            } else if !seen.insert(uid) {
                causes.push(Cause::duplicate(&path, &format!("{uid:?}")));
            }
        }
    }
}

/// The STATUS column of `kubectl get jobs`, as upstream's `printJob` words it.
pub(crate) fn printed_status(job: &Value) -> &'static str {
    // Upstream looks at the first condition of each type only.
    let first_true = |kind: &str| {
        job.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!(kind))))
            .is_some_and(|c| c.get("status") == Some(&json!("True")))
    };
    if first_true("Complete") {
        "Complete"
    } else if first_true("Failed") {
        "Failed"
    } else if job.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if first_true("Suspended") {
        "Suspended"
    } else if first_true("FailureTarget") {
        "FailureTarget"
    } else if first_true("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// The COMPLETIONS column: `succeeded/completions`, or `succeeded/1` (`of P` when more than one
/// pod runs at once) for a Job without completions.
pub(crate) fn printed_completions(job: &Value) -> String {
    let succeeded = job
        .pointer("/status/succeeded")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let spec = job.get("spec").unwrap_or(&Value::Null);
    match int(spec, "completions") {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int(spec, "parallelism").unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

/// The DURATION column in seconds: from the start to the completion, or to now; None before
/// the Job started.
pub(crate) fn duration_seconds(job: &Value) -> Option<i64> {
    let start = parse_time(job.pointer("/status/startTime")?.as_str()?)?;
    let end = match job
        .pointer("/status/completionTime")
        .and_then(Value::as_str)
    {
        Some(end) => parse_time(end)?,
        None => chrono::Utc::now(),
    };
    Some((end - start).num_seconds())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(spec: Value) -> Value {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": spec});
        generate_selector(&mut job);
        if let Some(map) = job.as_object_mut() {
            let spec = object_at(map, "spec");
            default_spec(spec);
            crate::defaults::pod_template(spec);
            default_labels(map);
        }
        job
    }

    fn template(restart: &str) -> Value {
        json!({"spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}})
    }

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn selector_and_labels_are_generated() {
        let created = job(
            json!({"template": {"metadata": {"labels": {"app": "pi"}}, "spec": {"restartPolicy": "Never"}}}),
        );
        assert_eq!(
            created["spec"]["selector"],
            json!({"matchLabels": {CONTROLLER_UID_LABEL: "u-1"}})
        );
        let labels = &created["spec"]["template"]["metadata"]["labels"];
        assert_eq!(
            labels,
            &json!({"app": "pi", CONTROLLER_UID_LABEL: "u-1", JOB_NAME_LABEL: "pi",
                    "controller-uid": "u-1", "job-name": "pi"})
        );
        assert_eq!(&created["metadata"]["labels"], labels, "the Job takes them");
        let keys: Vec<&String> = labels.as_object().unwrap().keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "serialized in key order, as Go");

        let manual = job(
            json!({"manualSelector": true, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}}}),
        );
        assert_eq!(
            manual["spec"]["selector"],
            json!({"matchLabels": {"a": "b"}})
        );
        assert_eq!(
            manual["spec"]["template"]["metadata"]["labels"],
            json!({"a": "b"})
        );

        let own_labels = job(json!({"template": {}}));
        assert_eq!(own_labels["metadata"]["labels"]["job-name"], "pi");
        let mut labelled =
            json!({"metadata": {"name": "x", "uid": "u", "labels": {"team": "a"}}, "spec": {}});
        generate_selector(&mut labelled);
        if let Some(map) = labelled.as_object_mut() {
            default_labels(map);
        }
        assert_eq!(labelled["metadata"]["labels"], json!({"team": "a"}));
    }

    #[test]
    fn spec_defaults_as_upstream() {
        let plain = job(json!({}));
        let spec = &plain["spec"];
        assert_eq!(
            (
                &spec["parallelism"],
                &spec["completions"],
                &spec["backoffLimit"]
            ),
            (&json!(1), &json!(1), &json!(6))
        );
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert!(spec.get("manualSelector").is_none());
        assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");

        let parallel = job(json!({"parallelism": 3}));
        assert!(parallel["spec"].get("completions").is_none());
        let counted = job(json!({"completions": 5}));
        assert_eq!(counted["spec"]["parallelism"], 1);
        let per_index = job(json!({"backoffLimitPerIndex": 1}));
        assert_eq!(per_index["spec"]["backoffLimit"], 2147483647);
        let policy = job(json!({"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}));
        assert_eq!(policy["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(
            policy["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
    }

    #[test]
    fn spec_rules() {
        let ok = job(json!({"template": template("Never")}));
        assert!(validate(&ok, None).is_empty(), "{:?}", validate(&ok, None));
        let always = job(json!({"template": template("Always")}));
        assert_eq!(
            messages(&validate(&always, None)),
            vec![
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        let odd = job(json!({"template": template("Sometimes")}));
        assert_eq!(
            messages(&validate(&odd, None)),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        let indexed = job(
            json!({"completionMode": "Indexed", "parallelism": 2, "template": template("Never")}),
        );
        assert_eq!(
            messages(&validate(&indexed, None)),
            vec!["spec.completions: Required value: when completion mode is Indexed"]
        );
        let negative =
            job(json!({"parallelism": -1, "completions": 1, "template": template("OnFailure")}));
        assert_eq!(
            messages(&validate(&negative, None)),
            vec!["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]
        );
        let mut stolen = job(json!({"template": template("Never")}));
        stolen["spec"]["selector"]["matchLabels"][CONTROLLER_UID_LABEL] = json!("other");
        let causes = messages(&validate(&stolen, None));
        assert!(
            causes
                .iter()
                .any(|c| c.contains("`selector` not auto-generated")),
            "{causes:?}"
        );
        assert!(
            causes
                .iter()
                .any(|c| c.contains("`selector` does not match template `labels`")),
            "{causes:?}"
        );
        let policy = job(
            json!({"template": template("OnFailure"), "podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3, 0, 1]}},
            {"action": "Explode", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
        );
        assert_eq!(
            messages(&validate(&policy, None)),
            vec![
                "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{3, 0, 1}: must be ordered",
                "spec.podFailurePolicy.rules[1].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
            ]
        );
    }

    #[test]
    fn update_rules() {
        let old = job(json!({"parallelism": 1, "completions": 2, "template": template("Never")}));
        let mut scaled = old.clone();
        scaled["spec"]["parallelism"] = json!(2);
        assert!(validate(&scaled, Some(&old)).is_empty());

        let mut changed = old.clone();
        changed["spec"]["completions"] = json!(3);
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        changed["spec"]["completionMode"] = json!("Indexed");
        let fields: Vec<String> = validate(&changed, Some(&old))
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            vec!["spec.completions", "spec.template", "spec.completionMode"]
        );
        assert!(
            validate(&changed, Some(&old))[1]
                .message
                .ends_with("field is immutable")
        );

        // A suspended Job that never started may move its pods elsewhere.
        let mut suspended = old.clone();
        suspended["spec"]["suspend"] = json!(true);
        let mut moved = suspended.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        moved["spec"]["template"]["metadata"]["annotations"] = json!({"note": "x"});
        assert!(validate(&moved, Some(&suspended)).is_empty());
        let mut started = suspended.clone();
        started["status"] = json!({"startTime": "2024-01-01T00:00:00Z"});
        assert_eq!(validate(&moved, Some(&started))[0].field, "spec.template");

        // Elastic Indexed Jobs: completions follow parallelism.
        let indexed = job(
            json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2, "template": template("Never")}),
        );
        let mut grown = indexed.clone();
        grown["spec"]["completions"] = json!(4);
        grown["spec"]["parallelism"] = json!(4);
        assert!(validate(&grown, Some(&indexed)).is_empty());
        grown["spec"]["parallelism"] = json!(3);
        assert_eq!(
            messages(&validate(&grown, Some(&indexed))),
            vec![
                "spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"
            ]
        );
    }

    fn with_status(status: Value) -> Value {
        let mut j = job(json!({"template": template("Never")}));
        j["status"] = status;
        j
    }

    #[test]
    fn status_rules() {
        let running = with_status(json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"}));
        let done = with_status(json!({"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:00:05Z",
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}));
        assert!(
            validate_status(&done, &running).is_empty(),
            "{:?}",
            validate_status(&done, &running)
        );

        let mut sloppy = done.clone();
        sloppy["status"]["active"] = json!(1);
        sloppy["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        sloppy["status"]
            .as_object_mut()
            .unwrap()
            .remove("completionTime");
        assert_eq!(
            messages(&validate_status(&sloppy, &running)),
            vec![
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
            ]
        );

        let reopened = with_status(json!({"succeeded": 0, "startTime": "2024-01-01T00:00:00Z"}));
        assert_eq!(
            messages(&validate_status(&reopened, &done)),
            vec![
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
                "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
            ]
        );
        let dup = with_status(
            json!({"uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["a", ""]}}),
        );
        assert_eq!(
            messages(&validate_status(&dup, &running)),
            vec![
                "status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\"",
                "status.uncountedTerminatedPods.failed[1]: Invalid value: \"\": must not be empty",
                "status.startTime: Required value: startTime cannot be removed for unsuspended job",
            ]
        );
        // A Job resumed from a suspension that kept its start time gets a new one
        // (kubernetes#134769): the stored status says Suspended=True.
        let suspended = with_status(json!({"startTime": "2024-01-01T00:00:00Z", "conditions": [
            {"type": "Suspended", "status": "True", "reason": "JobSuspended"}]}));
        let resumed = with_status(json!({"startTime": "2024-01-01T00:05:00Z", "conditions": [
            {"type": "Suspended", "status": "False", "reason": "JobResumed"}]}));
        assert_eq!(
            messages(&validate_status(&resumed, &suspended)),
            Vec::<String>::new()
        );
        assert_eq!(
            messages(&validate_status(&resumed, &running)),
            vec![
                "status.startTime: Required value: startTime cannot be removed for unsuspended job"
            ],
            "a Job that was not suspended keeps its start time"
        );
    }

    #[test]
    fn index_formats() {
        assert_eq!(indexes_total("0,2-4,7", 8), Ok(5));
        assert_eq!(
            indexes_total("2,1", 8),
            Err("non-increasing order, previous: 2, current: 1".into())
        );
        assert_eq!(indexes_total("9", 8), Err("too large index: \"9\"".into()));
        assert_eq!(indexes_overlap("0-3", "3,5", 8), Some(3));
        assert_eq!(indexes_overlap("0-2", "3,5", 8), None);
    }

    #[test]
    fn printer_columns() {
        let mut j = with_status(json!({"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:02:05Z",
            "conditions": [{"type": "Complete", "status": "True"}]}));
        assert_eq!(printed_status(&j), "Complete");
        assert_eq!(printed_completions(&j), "1/1");
        assert_eq!(duration_seconds(&j), Some(125));
        j["status"] = json!({"conditions": [{"type": "Suspended", "status": "True"}]});
        assert_eq!(printed_status(&j), "Suspended");
        assert_eq!(duration_seconds(&j), None);
        j["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        assert_eq!(printed_status(&j), "Terminating");
        let parallel = json!({"spec": {"parallelism": 3}, "status": {"succeeded": 2}});
        assert_eq!(printed_completions(&parallel), "2/1 of 3");
        let criteria =
            json!({"status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}});
        assert_eq!(printed_status(&criteria), "SuccessCriteriaMet");
    }
}
