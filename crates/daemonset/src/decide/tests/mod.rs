//! Table tests of the decision modules, one file per module, on the fixtures below: objects
//! are written as the API server's JSON, so a case reads like the object it stands for.

use std::sync::Arc;

use informer::CachedNode;
use informer::CachedPod;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::NodesToPods;

mod backoff;
mod budget;
mod node_affinity;
mod node_fit;
mod nodes_to_pods;
mod revision;
mod rolling_update;
mod slow_start;
mod status;
mod template;
mod tolerations;

/// The DaemonSet of every test unless a case patches it: `default/ds`, UID `ds-uid`,
/// generation 1, selector and template labels `app: ds`, one container, `OnDelete`.
pub(super) fn daemon_set_json() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "default", "uid": "ds-uid", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": "ds"}},
            "template": {
                "metadata": {"labels": {"app": "ds"}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]}
            },
            "updateStrategy": {"type": "OnDelete"}
        }
    })
}

/// JSON merge patch (RFC 7386): objects merge, `null` removes, anything else replaces.
pub(super) fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(key);
                } else {
                    merge(target.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// [`daemon_set_json`] with `patch` merged in.
pub(super) fn daemon_set(patch: Value) -> DaemonSet {
    let mut object = daemon_set_json();
    merge(&mut object, &patch);
    serde_json::from_value(object).expect("a valid DaemonSet")
}

/// A `RollingUpdate` strategy with the given `rollingUpdate` parameters.
pub(super) fn rolling(params: Value) -> Value {
    json!({"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": params}}})
}

/// A node with `labels` and `taints` (JSON arrays of taints).
pub(super) fn node(name: &str, labels: Value, taints: Value) -> CachedNode {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints}
    }))
    .expect("a valid node")
}

/// A plain node without labels or taints.
pub(super) fn plain_node(name: &str) -> CachedNode {
    node(name, json!({}), json!([]))
}

/// `seconds` after the epoch.
pub(super) fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(seconds).expect("a valid time")
}

/// The clock of the tests: well after every pod's creation and readiness.
pub(super) fn now() -> Timestamp {
    at(10_000)
}

/// A daemon pod, built step by step.
#[derive(Clone)]
pub(super) struct PodBuilder(Value);

/// A running pod `name` of the DaemonSet in `default`, bound to no node yet.
pub(super) fn pod(name: &str) -> PodBuilder {
    PodBuilder(json!({
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "labels": {"app": "ds"},
            "creationTimestamp": "1970-01-01T00:16:40Z"
        },
        "spec": {},
        "status": {"phase": "Running"}
    }))
}

impl PodBuilder {
    fn patch(mut self, patch: Value) -> Self {
        merge(&mut self.0, &patch);
        self
    }

    /// Bound to `node`.
    pub(super) fn on(self, node: &str) -> Self {
        self.patch(json!({"spec": {"nodeName": node}}))
    }

    /// Not bound, pinned to `node` by the required node affinity the controller gives it.
    pub(super) fn pinned_to(self, node: &str) -> Self {
        self.patch(json!({"spec": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
            ]}
        }}}}))
    }

    /// In `phase`.
    pub(super) fn phase(self, phase: &str) -> Self {
        self.patch(json!({"status": {"phase": phase}}))
    }

    /// Ready since `seconds` after the epoch.
    pub(super) fn ready_since(self, seconds: i64) -> Self {
        let since = at(seconds).to_string();
        self.patch(json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": since}
        ]}}))
    }

    /// Ready long before [`now`].
    pub(super) fn ready(self) -> Self {
        self.ready_since(0)
    }

    /// Created `seconds` after the epoch.
    pub(super) fn created(self, seconds: i64) -> Self {
        let created = at(seconds).to_string();
        self.patch(json!({"metadata": {"creationTimestamp": created}}))
    }

    /// Labelled with the revision `hash`.
    pub(super) fn hash(self, hash: &str) -> Self {
        self.patch(json!({"metadata": {"labels": {"controller-revision-hash": hash}}}))
    }

    /// Labelled with the template `generation`.
    pub(super) fn generation(self, generation: i64) -> Self {
        let generation = generation.to_string();
        self.patch(json!({"metadata": {"labels": {"pod-template-generation": generation}}}))
    }

    /// Being deleted.
    pub(super) fn deleting(self) -> Self {
        self.patch(json!({"metadata": {"deletionTimestamp": "1970-01-01T01:00:00Z"}}))
    }

    /// The pod as cached.
    pub(super) fn build(self) -> Arc<CachedPod> {
        Arc::new(serde_json::from_value(self.0).expect("a valid pod"))
    }
}

/// A node-to-pods map from `(node, pods)` pairs.
pub(super) fn nodes_to_pods(entries: Vec<(&str, Vec<PodBuilder>)>) -> NodesToPods {
    entries
        .into_iter()
        .map(|(node, pods)| {
            (
                node.to_owned(),
                pods.into_iter().map(PodBuilder::build).collect(),
            )
        })
        .collect()
}

/// `default/<name>` for each name.
pub(super) fn keys(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| format!("default/{name}")).collect()
}
