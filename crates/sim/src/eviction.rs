//! The `pods/eviction` subresource (`POST /api/v1/namespaces/{ns}/pods/{name}/eviction` with a
//! `policy/v1` `Eviction`), as upstream's API server serves it: the pod gets the
//! `DisruptionTarget` condition (reason `EvictionByEvictionAPI`), then is deleted as a DELETE
//! with the Eviction's `deleteOptions` would delete it, and the answer is `201` with a
//! `Status` of `Success`. Controllers (the Job controller's pod failure policy first) tell an
//! evicted pod from a failed one by that condition, and `kubectl drain` evicts through here.
//!
//! No PodDisruptionBudget is consulted: every eviction is allowed (the sim serves no PDBs yet).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::object::{meta_str, now_timestamp};
use crate::ops::DeleteOptions;
use crate::resources::{PODS, RESOURCES};
use crate::status::ApiError;
use crate::store::{ObjectKey, State};

/// The condition an eviction adds, with upstream's values.
pub(crate) const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The `DisruptionTarget` reason of an eviction through the API.
pub(crate) const EVICTION_REASON: &str = "EvictionByEvictionAPI";
/// The `DisruptionTarget` message of an eviction through the API.
pub(crate) const EVICTION_MESSAGE: &str = "Eviction API: evicting";

/// The API versions an `Eviction` body may name (upstream accepts both).
const EVICTION_VERSIONS: &[&str] = &["policy/v1", "policy/v1beta1"];

/// Evicts the pod `key` as `body` (an `Eviction`) asks, and returns the `Status` to answer
/// with `201 Created`.
pub(crate) fn evict(state: &mut State, key: &ObjectKey, body: &[u8]) -> Result<Value, ApiError> {
    let eviction: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
    })?;
    let opts = check_eviction(&eviction, key)?;
    let info = &RESOURCES[PODS];
    let stored = state
        .get(PODS, key)
        .ok_or_else(|| ApiError::not_found(info, &key.1))?;
    opts.check_preconditions(info, &key.1, stored)?;
    let mut pod = stored.value();
    let mut opts = opts;
    if add_disruption_target(&mut pod, &now_timestamp()) {
        state.put(PODS, key.clone(), pod);
        // The condition's write moved the version the caller's precondition named, as upstream
        // moves it after its own update.
        if opts.precondition_rv.is_some() {
            opts.precondition_rv = state.get(PODS, key).map(|s| s.rv.to_string());
        }
    }
    tracing::debug!(namespace = %key.0, name = %key.1, "evicting pod");
    state.delete(PODS, key, &opts)?;
    Ok(json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }))
}

/// The delete options of an `Eviction` body, after checking it is one for `key`.
fn check_eviction(eviction: &Value, key: &ObjectKey) -> Result<DeleteOptions, ApiError> {
    if !eviction.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    let kind = eviction.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = eviction
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if (!kind.is_empty() && kind != "Eviction")
        || (!api_version.is_empty() && !EVICTION_VERSIONS.contains(&api_version))
    {
        return Err(ApiError::bad_request(format!(
            "the body is a {api_version} {kind}, not a policy/v1 Eviction"
        )));
    }
    if meta_str(eviction, "name") != key.1 {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let namespace = meta_str(eviction, "namespace");
    if !namespace.is_empty() && namespace != key.0 {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    let delete_options = eviction.get("deleteOptions").unwrap_or(&Value::Null);
    let dry_run = delete_options
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| !d.is_empty());
    if dry_run {
        return Err(ApiError::bad_request("dryRun is not supported by the sim"));
    }
    DeleteOptions::from_request(delete_options, &HashMap::new())
}

/// Sets the pod's `DisruptionTarget` condition to upstream's eviction values (appended when
/// missing; its `lastTransitionTime` kept when it was `True` already); false when the pod
/// had it already.
fn add_disruption_target(pod: &mut Value, now: &str) -> bool {
    let Some(pod) = pod.as_object_mut() else {
        return false;
    };
    let Some(status) = pod
        .entry("status")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return false;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else {
        return false;
    };
    let existing = conditions
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(DISRUPTION_TARGET));
    let transition = existing
        .and_then(|i| conditions.get(i))
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let condition = json!({
        "type": DISRUPTION_TARGET,
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": transition,
        "reason": EVICTION_REASON,
        "message": EVICTION_MESSAGE,
    });
    match existing {
        Some(i) if conditions[i] == condition => false,
        Some(i) => {
            conditions[i] = condition;
            true
        }
        None => {
            conditions.push(condition);
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ("ns".to_string(), "p".to_string())
    }

    #[test]
    fn eviction_bodies_are_checked() {
        let ok = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "ns"},
            "deleteOptions": {"gracePeriodSeconds": 0, "preconditions": {"uid": "u"}}});
        let opts = check_eviction(&ok, &key()).unwrap();
        assert_eq!(opts.grace_period_seconds, Some(0));
        assert_eq!(opts.precondition_uid.as_deref(), Some("u"));
        // kube-rs sends no kind and its options under `delete_options`, which upstream ignores.
        let bare = json!({"metadata": {"name": "p"}, "delete_options": {"gracePeriodSeconds": 0}});
        assert_eq!(
            check_eviction(&bare, &key()).unwrap(),
            DeleteOptions::default()
        );
        let v1beta1 =
            json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "p"}});
        assert!(check_eviction(&v1beta1, &key()).is_ok());
        for bad in [
            json!([]),
            json!({"metadata": {"name": "q"}}),
            json!({"metadata": {}}),
            json!({"metadata": {"name": "p", "namespace": "other"}}),
            json!({"kind": "Pod", "metadata": {"name": "p"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "p"}}),
            json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["All"]}}),
            json!({"metadata": {"name": "p"}, "deleteOptions": {"propagationPolicy": "Sideways"}}),
        ] {
            assert_eq!(check_eviction(&bad, &key()).unwrap_err().code, 400, "{bad}");
        }
    }

    #[test]
    fn the_condition_is_added_once() {
        let mut pod = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(add_disruption_target(&mut pod, "t1"));
        assert_eq!(
            pod["status"]["conditions"][1],
            json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                "lastTransitionTime": "t1", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"})
        );
        assert!(!add_disruption_target(&mut pod, "t2"), "already there");
        assert_eq!(pod["status"]["conditions"][1]["lastTransitionTime"], "t1");

        let mut other = json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True",
            "lastTransitionTime": "t0", "reason": "PreemptionByScheduler"}]}});
        assert!(add_disruption_target(&mut other, "t3"));
        assert_eq!(
            other["status"]["conditions"][0]["reason"],
            "EvictionByEvictionAPI"
        );
        assert_eq!(other["status"]["conditions"][0]["lastTransitionTime"], "t0");

        let mut bare = json!({"metadata": {}});
        assert!(add_disruption_target(&mut bare, "t4"));
        assert_eq!(bare["status"]["conditions"][0]["type"], "DisruptionTarget");
        let mut odd = json!({"status": {"conditions": 5}});
        assert!(add_disruption_target(&mut odd, "t5"));
        assert!(!add_disruption_target(&mut json!(7), "t6"));
        assert!(!add_disruption_target(&mut json!({"status": 7}), "t6"));
    }
}
