//! What a recorded write expects of the cluster, and the verdict once the object has settled:
//! pure functions of plain data, table-tested without a server.
//!
//! A write is compared on the fields its controller declares for the kind in its descriptor,
//! as the [`Catalog`] merges them (ReplicaSet sizes and `deployment.kubernetes.io/`
//! annotations, the status counts, `observedGeneration`, revisions), and conditions'
//! type/status/reason on every status write; created objects, recognized by identity
//! ([`crate::identity`]); which object was deleted. Timestamps, messages and generated names are
//! never compared: two correct controllers differ on them.
//!
//! A verdict that is a divergence has a [`Kind`]: an object kcm-rs would have created and the
//! cluster did not (`missing`), one kcm-rs would have deleted and the cluster kept (`extra`), a
//! field the cluster settled at another value (`field`), or a scale-down or recovery that
//! deleted other objects of the same owner than kcm-rs would have (`choice`).

use std::{collections::BTreeMap, time::Duration};

use controller_toolkit::writes::{Write, WriteVerb};
use informer::CachedPod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    catalog::Catalog,
    identity::{Found, Identity, Rule, identity_of},
};

/// Compared field name → its value as text (`""` when absent); a zero value and an absent
/// field compare equal, as Go's `omitempty` makes them ([`same`]).
pub type Fields = BTreeMap<String, String>;

/// What the cluster should show once a recorded write has had the settle window to happen.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    /// An update: the object, while still at the version the decision was made on (`based_on`),
    /// should carry these field values.
    Fields {
        /// The resourceVersion the write was based on (none for an object only we "created").
        based_on: Option<String>,
        /// The values the write sets.
        fields: Fields,
    },
    /// A create: the cluster should have created the object, recognized by `identity`.
    Created {
        /// How the object is recognized among the cluster's.
        identity: Identity,
        /// The node a created pod is pinned to ([`pinned_node`]): once that node is gone, the
        /// pod garbage collector decides whether such a pod exists, not the controller.
        node: Option<String>,
    },
    /// A delete: the object decided on (this UID, when known) should be gone or going.
    Gone {
        /// The UID of the object decided on.
        uid: Option<String>,
        /// The node a deleted pod was for, as the cache held it when the delete was decided
        /// (filled in where it is recorded): once that node is gone, the pod garbage collector
        /// decides whether such a pod stays, not the controller.
        node: Option<String>,
    },
    /// Not compared: events, generated names without an owner, adopt/release patches.
    NotCompared,
}

impl Expectation {
    /// The node a created or deleted pod is for, where known.
    pub fn node(&self) -> Option<&str> {
        match self {
            Expectation::Created { node, .. } | Expectation::Gone { node, .. } => node.as_deref(),
            Expectation::Fields { .. } | Expectation::NotCompared => None,
        }
    }
}

/// A recorded write's expectation, and the controller owner of the object it writes (as the
/// written object names it; a delete's is read from the cache instead).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// What the cluster should show.
    pub expectation: Expectation,
    /// The written object's controller owner, if it names one shadow mode follows.
    pub owner: Option<OwnerName>,
}

/// An owner as an owner reference names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerName {
    /// The owner's resource (plural), e.g. `deployments`.
    pub resource: String,
    /// The owner's name (same namespace as the dependent).
    pub name: String,
    /// The owner's UID, when the reference carries it.
    pub uid: Option<String>,
}

impl std::fmt::Display for OwnerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.resource, self.name)
    }
}

/// The controller owner a JSON object names in `metadata.ownerReferences`, if `catalog`
/// follows its kind as an owner.
pub fn controller_owner(catalog: &Catalog, object: &Value) -> Option<OwnerName> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|owner| {
            Some(OwnerName {
                resource: catalog
                    .owner_resource(owner.get("kind")?.as_str()?)?
                    .to_owned(),
                name: owner.get("name")?.as_str()?.to_owned(),
                uid: owner.get("uid").and_then(Value::as_str).map(str::to_owned),
            })
        })
}

/// The controller owner that `meta.ownerReferences` names, if `catalog` follows its kind as an
/// owner.
pub fn controller_owner_of(catalog: &Catalog, meta: &ObjectMeta) -> Option<OwnerName> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|owner| owner.controller == Some(true))
        .and_then(|owner| {
            Some(OwnerName {
                resource: catalog.owner_resource(&owner.kind)?.to_owned(),
                name: owner.name.clone(),
                uid: Some(owner.uid.clone()),
            })
        })
}

/// What `write` expects of the cluster, and the owner of the object it writes, compared as
/// `catalog` says.
pub fn decision_of(catalog: &Catalog, write: &Write) -> Decision {
    let resource = write.resource.plural.as_str();
    let not_compared = Decision {
        expectation: Expectation::NotCompared,
        owner: None,
    };
    if resource == "events" {
        return not_compared;
    }
    let body = || serde_json::from_slice::<Value>(&write.body).ok();
    match &write.verb {
        WriteVerb::Create => match body() {
            Some(object) => {
                let owner = controller_owner(catalog, &object);
                match identity_of(catalog, resource, &object, &write.body, owner.as_ref()) {
                    Some(identity) => Decision {
                        expectation: Expectation::Created {
                            identity,
                            node: (resource == "pods").then(|| pinned_node(&object)).flatten(),
                        },
                        owner,
                    },
                    None => not_compared,
                }
            }
            None => not_compared,
        },
        WriteVerb::Update | WriteVerb::UpdateStatus => match body() {
            Some(object) => Decision {
                expectation: Expectation::Fields {
                    based_on: object
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .filter(|version| !version.is_empty())
                        .map(str::to_owned),
                    fields: compared_fields(catalog, resource, &write.verb, &object),
                },
                owner: controller_owner(catalog, &object),
            },
            None => not_compared,
        },
        WriteVerb::Delete { .. } => Decision {
            expectation: Expectation::Gone {
                uid: write.uid.clone(),
                node: None,
            },
            owner: None,
        },
        WriteVerb::StrategicPatch | WriteVerb::MergePatch => not_compared,
    }
}

/// The node the pod `object` is for, read as the controllers read a cached pod
/// ([`CachedPod::target_node_name`], upstream's `GetTargetNodeName`): its `spec.nodeName`, else
/// the node a daemon pod's required node affinity pins it to. `None` for pods pinned to no
/// single node and for what does not decode as a pod.
pub fn pinned_node(object: &Value) -> Option<String> {
    let pod = CachedPod::deserialize(object).ok()?;
    pod.target_node_name().map(str::to_owned)
}

/// The fields of `object` a write with `verb` on `resource` is compared on: those `catalog`
/// names for the resource, conditions on status writes, and the annotations with the declared
/// prefixes (on status writes only where declared so).
pub fn compared_fields(
    catalog: &Catalog,
    resource: &str,
    verb: &WriteVerb,
    object: &Value,
) -> Fields {
    let status = matches!(verb, WriteVerb::UpdateStatus);
    let compared = catalog.get(resource);
    let paths = compared
        .map(|compared| {
            if status {
                compared.status_fields.as_slice()
            } else {
                compared.object_fields.as_slice()
            }
        })
        .unwrap_or_default();
    let mut fields: Fields = paths
        .iter()
        .map(|path| {
            let pointer = format!("/{}", path.replace('.', "/"));
            ((*path).to_owned(), canonical(object.pointer(&pointer)))
        })
        .collect();
    if status {
        for condition in object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |key: &str| condition.get(key).and_then(Value::as_str).unwrap_or("");
            fields.insert(
                format!("status.conditions[{}]", text("type")),
                format!("{}/{}", text("status"), text("reason")),
            );
        }
    }
    let prefixes = compared
        .filter(|compared| !status || compared.annotations_on_status)
        .map(|compared| compared.annotation_prefixes.as_slice())
        .unwrap_or_default();
    for (key, value) in object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(key, _)| prefixes.iter().any(|prefix| key.starts_with(prefix)))
    {
        fields.insert(
            format!("metadata.annotations[{key}]"),
            canonical(Some(value)),
        );
    }
    fields
}

/// A value as text: strings as they are, absent, null and empty collections as `""`, anything
/// else as its JSON.
pub fn canonical(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) if a.is_empty() => String::new(),
        Some(Value::Object(o)) if o.is_empty() => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Whether two field values are the same, an absent field being the same as its zero value.
pub fn same(a: &str, b: &str) -> bool {
    let zero = |v: &str| matches!(v, "" | "0" | "false");
    a == b || (zero(a) && zero(b))
}

/// One field on which kcm-rs and the cluster differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDiff {
    /// The compared field, e.g. `spec.replicas` or `status.conditions[Available]`.
    pub field: String,
    /// What kcm-rs would have written.
    pub kcm_rs: String,
    /// What the cluster holds.
    pub cluster: String,
}

/// The fields of `intended` whose value in `actual` differs. A condition or annotation the
/// write does not carry is not compared (kcm-rs removes none of them by a write).
pub fn differing(intended: &Fields, actual: &Fields) -> Vec<FieldDiff> {
    intended
        .iter()
        .filter_map(|(field, value)| {
            let held = actual.get(field).cloned().unwrap_or_default();
            (!same(&held, value)).then(|| FieldDiff {
                field: field.clone(),
                kcm_rs: value.clone(),
                cluster: held,
            })
        })
        .collect()
}

/// The object a recorded write is about, as the caches hold it at evaluation time.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// Its resourceVersion.
    pub resource_version: Option<String>,
    /// Its UID.
    pub uid: Option<String>,
    /// Whether it is being deleted.
    pub terminating: bool,
    /// Its compared fields for the write being judged (empty unless the write is an update).
    pub fields: Fields,
}

impl Observed {
    /// What `meta` says, with no compared fields.
    pub fn of(meta: &ObjectMeta) -> Self {
        Self {
            resource_version: meta.resource_version.clone(),
            uid: meta.uid.clone(),
            terminating: meta.deletion_timestamp.is_some(),
            fields: Fields::default(),
        }
    }
}

/// What became of the owner of the object a write was decided for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OwnerState {
    /// No owner followed (none named, or its kind not cached).
    #[default]
    NotFollowed,
    /// The owner's spec (generation) is what the decision saw.
    Unchanged,
    /// The owner's spec changed: a create, delete or update decided before no longer stands
    /// (the decision may have read the spec from before the change).
    SpecChanged,
    /// The owner is gone, being deleted, or replaced by a namesake.
    Gone,
}

/// Why a recorded write is not compared at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Skip {
    /// Its namespace is being deleted (or gone): the namespace teardown decides, not a
    /// workload controller.
    NamespaceDeleting,
    /// The owner it was decided for is gone: the garbage collector decides.
    OwnerGone,
    /// A pod not created, or not deleted, for a node that is gone since: the pod garbage
    /// collector decides whether a pod for a gone node exists, not the controller (a sync that
    /// ran between the collector's deletion of the node's pods and the node's own deletion
    /// event decides a create for it, another sync of the same moment does not).
    NodeGone,
    /// A pod not created, or not deleted, for a node the watch added, relabelled or retainted
    /// after the sync that decided it started: the decision read the node as it was. (A node
    /// tainted `NoExecute`: the other manager deletes its pods, and a sync that sees those
    /// deletions on the pod watch before the taint on the node watch decides them again. A
    /// node added: the other manager creates its pod, and a sync that sees that pod, not yet
    /// bound, before the node would delete it as a pod of a vanished node.)
    NodeChanged,
}

impl Skip {
    /// The reason as `/shadow` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::NamespaceDeleting => "namespace-deleting",
            Skip::OwnerGone => "owner-gone",
            Skip::NodeGone => "node-gone",
            Skip::NodeChanged => "node-changed",
        }
    }
}

/// What a divergence is, so that a reader knows what to look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// kcm-rs would have created an object the cluster did not create.
    Missing,
    /// The cluster kept an object kcm-rs would have deleted, and deleted none of the same
    /// owner's instead.
    Extra,
    /// An object settled with another value in a compared field than kcm-rs would have written.
    Field,
    /// A scale-down or recovery deleted other objects of the same owner than kcm-rs would have.
    Choice,
}

impl Kind {
    /// The kind as `/shadow` and `shadow_divergences_total` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Missing => "missing",
            Kind::Extra => "extra",
            Kind::Field => "field",
            Kind::Choice => "choice",
        }
    }
}

/// Everything a verdict is decided from, gathered from the caches and the watch stream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts<'a> {
    /// How long ago the write was decided.
    pub age: Duration,
    /// The settle window.
    pub settle: Duration,
    /// Whether the object's namespace is being deleted (or gone).
    pub namespace_deleting: bool,
    /// What became of the owner the write was decided for.
    pub owner: OwnerState,
    /// The object as the caches hold it now (`None`: absent). Updates and deletes.
    pub current: Option<&'a Observed>,
    /// Whether the object or one it controls changed since the decision. Updates.
    pub inputs_moved: bool,
    /// The cluster's object found by the create's identity, live or seen created. Creates.
    pub found: Option<Found>,
    /// Whether the node the created or deleted pod is for is gone. Creates and deletes.
    pub node_gone: bool,
    /// Whether that node appeared, or its labels or taints changed, after the sync that
    /// decided the write started. Creates and deletes.
    pub node_changed: bool,
    /// Whether the watch saw the object decided on deleted since the decision. Deletes.
    pub seen_deleted: bool,
    /// The owner's other objects the cluster deleted since the decision, in order. Deletes.
    pub deleted_instead: Vec<String>,
}

/// The outcome of comparing one recorded write with the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Too early: the settle window has not passed.
    Wait,
    /// The cluster did what kcm-rs would have done; the object was matched by this rule.
    Match(Rule),
    /// The cluster moved on (the object changed, or its owner's spec did) before it could be
    /// judged; a newer decision, if any, is judged instead.
    Superseded,
    /// Not compared (a namespace teardown, an owner gone).
    NotCompared(Skip),
    /// The object (`object`, when the rule found it under another name) settled with other
    /// values.
    Field {
        /// The rule the object was found by.
        rule: Rule,
        /// The cluster's object, when another than the write's.
        object: Option<String>,
        /// The fields that differ.
        diffs: Vec<FieldDiff>,
    },
    /// An object kcm-rs would have created was not, by this rule.
    Missing(Rule),
    /// An object kcm-rs would have deleted is still there, and nothing else of its owner was
    /// deleted.
    Extra,
    /// An object kcm-rs would have deleted is still there; the cluster deleted these of the
    /// same owner instead, in this order.
    Choice {
        /// The objects deleted instead.
        instead: Vec<String>,
    },
}

impl Verdict {
    /// The kind of divergence this verdict is, if it is one.
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Verdict::Field { .. } => Some(Kind::Field),
            Verdict::Missing(_) => Some(Kind::Missing),
            Verdict::Extra => Some(Kind::Extra),
            Verdict::Choice { .. } => Some(Kind::Choice),
            Verdict::Wait | Verdict::Match(_) | Verdict::Superseded | Verdict::NotCompared(_) => {
                None
            }
        }
    }
}

/// Judges a write from `facts`. Objects in a namespace being deleted or whose owner is gone
/// are not compared. Timing is never a divergence: nothing is judged a difference before the
/// settle window has passed, an update whose object or inputs changed after the decision is
/// judged by the decision made on the newer state (the controller syncs again on every such
/// change), and a create, delete or update whose owner's spec changed since no longer stands.
pub fn verdict(expectation: &Expectation, facts: &Facts<'_>) -> Verdict {
    if matches!(expectation, Expectation::NotCompared) {
        return Verdict::Superseded;
    }
    if facts.namespace_deleting {
        return Verdict::NotCompared(Skip::NamespaceDeleting);
    }
    if facts.owner == OwnerState::Gone {
        return Verdict::NotCompared(Skip::OwnerGone);
    }
    let early = facts.age < facts.settle;
    let spec_changed = facts.owner == OwnerState::SpecChanged;
    match expectation {
        Expectation::NotCompared => Verdict::Superseded,
        Expectation::Created { identity, .. } => match &facts.found {
            Some(found) if found.diffs.is_empty() => Verdict::Match(found.rule),
            _ if early => Verdict::Wait,
            None if facts.node_gone => Verdict::NotCompared(Skip::NodeGone),
            None if facts.node_changed => Verdict::NotCompared(Skip::NodeChanged),
            _ if spec_changed => Verdict::Superseded,
            Some(found) => Verdict::Field {
                rule: found.rule,
                object: Some(found.name.clone()),
                diffs: found.diffs.clone(),
            },
            None => Verdict::Missing(identity.rule()),
        },
        Expectation::Gone { uid, .. } => {
            let gone = facts.seen_deleted
                || facts.current.is_none_or(|object| {
                    object.terminating || (uid.is_some() && object.uid.as_ref() != uid.as_ref())
                });
            if gone {
                Verdict::Match(Rule::Name)
            } else if early {
                Verdict::Wait
            } else if facts.node_gone {
                Verdict::NotCompared(Skip::NodeGone)
            } else if facts.node_changed {
                Verdict::NotCompared(Skip::NodeChanged)
            } else if spec_changed {
                Verdict::Superseded
            } else if facts.deleted_instead.is_empty() {
                Verdict::Extra
            } else {
                Verdict::Choice {
                    instead: facts.deleted_instead.clone(),
                }
            }
        }
        Expectation::Fields { based_on, fields } => {
            if early {
                return Verdict::Wait;
            }
            let Some(object) = facts.current else {
                return Verdict::Superseded;
            };
            let diffs = differing(fields, &object.fields);
            // The owner's spec moving after the sync began reading means the decision may
            // have read the spec from before (a watch behind the other manager's writes).
            let unchanged = based_on.is_some()
                && object.resource_version == *based_on
                && !facts.inputs_moved
                && !spec_changed;
            match (diffs.is_empty(), unchanged) {
                (true, _) => Verdict::Match(Rule::Name),
                (false, true) => Verdict::Field {
                    rule: Rule::Name,
                    object: None,
                    diffs,
                },
                (false, false) => Verdict::Superseded,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::of_every_controller;
    use controller_toolkit::writes::Propagation;
    use kube::core::ApiResource;
    use serde_json::json;

    fn write(verb: WriteVerb, plural: &str, body: Value) -> Write {
        Write {
            verb,
            resource: ApiResource {
                group: "apps".into(),
                version: "v1".into(),
                api_version: "apps/v1".into(),
                kind: "X".into(),
                plural: plural.into(),
            },
            namespace: "ns".into(),
            name: "x".into(),
            uid: Some("u1".into()),
            body: serde_json::to_vec(&body).expect("encodes").into(),
            reason: "test",
        }
    }

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn decisions_of_writes() {
        let catalog = of_every_controller();
        let owned = json!({"metadata": {"name": "web-0", "ownerReferences": [
            {"kind": "StatefulSet", "name": "web", "controller": true, "uid": "u", "apiVersion": "apps/v1"}]}});
        let set = OwnerName {
            resource: "statefulsets".into(),
            name: "web".into(),
            uid: Some("u".into()),
        };
        let replica_set = OwnerName {
            resource: "replicasets".into(),
            name: "rs".into(),
            uid: Some("r".into()),
        };
        #[rustfmt::skip]
        let cases = [
            ("named create expects the object by name, with its owner", write(WriteVerb::Create, "pods", owned), Expectation::Created { identity: Identity::Name, node: None }, Some(set)),
            ("a ReplicaSet's generated pod is expected by owner and count", write(WriteVerb::Create, "pods", json!({"metadata": {"generateName": "rs-", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": true, "uid": "r", "apiVersion": "apps/v1"}]}})), Expectation::Created { identity: Identity::Count, node: None }, Some(replica_set.clone())),
            ("generated name without owner is not compared", write(WriteVerb::Create, "pods", json!({"metadata": {"generateName": "rs-"}})), Expectation::NotCompared, None),
            ("event is not compared", write(WriteVerb::Create, "events", json!({"metadata": {"name": "e"}})), Expectation::NotCompared, None),
            ("scale compares spec.replicas and the deployment annotations", write(WriteVerb::Update, "replicasets", json!({"metadata": {"resourceVersion": "7", "annotations": { "deployment.kubernetes.io/desired-replicas": "3", "other": "x"}}, "spec": {"replicas": 3}})), Expectation::Fields { based_on: Some("7".into()), fields: fields(&[("spec.replicas", "3"), ("metadata.annotations[deployment.kubernetes.io/desired-replicas]", "3")]) }, None),
            ("status update keeps the owner it names", write(WriteVerb::UpdateStatus, "pods", json!({"metadata": {"resourceVersion": "7", "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "controller": true, "uid": "r", "apiVersion": "apps/v1"}]}})), Expectation::Fields { based_on: Some("7".into()), fields: Fields::new() }, Some(replica_set)),
            ("delete expects the object decided on gone, precondition or not", write(WriteVerb::Delete { precondition: false, propagation: Propagation::ServerDefault }, "pods", json!({})), Expectation::Gone { uid: Some("u1".into()), node: None }, None),
            ("adopt patch is not compared", write(WriteVerb::StrategicPatch, "pods", json!({"metadata": {}})), Expectation::NotCompared, None),
        ];
        for (name, write, expectation, owner) in cases {
            assert_eq!(
                decision_of(&catalog, &write),
                Decision { expectation, owner },
                "{name}"
            );
        }
    }

    #[test]
    fn the_node_a_pod_is_pinned_to() {
        let affinity = |terms: Value| {
            json!({"spec": {"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}})
        };
        let by_name = |values: Value| json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": values}]});
        #[rustfmt::skip]
        let cases = [
            ("bound", json!({"spec": {"nodeName": "n1"}}), Some("n1")),
            ("a daemon pod's affinity", affinity(json!([by_name(json!(["n2"]))])), Some("n2")),
            ("the first matchFields term naming a node", affinity(json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}, by_name(json!(["n3"])), by_name(json!(["n4"]))])), Some("n3")),
            ("more than one node", affinity(json!([by_name(json!(["n1", "n2"]))])), None),
            ("another operator", affinity(json!([{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}])), None),
            ("an empty nodeName", json!({"spec": {"nodeName": ""}}), None),
            ("no spec", json!({"metadata": {"name": "x"}}), None),
        ];
        for (name, object, node) in cases {
            assert_eq!(pinned_node(&object).as_deref(), node, "{name}");
        }
    }

    #[test]
    fn status_fields_are_canonical_and_conditions_keyed_by_type() {
        let object = json!({"status": {"replicas": 3, "readyReplicas": 0, "observedGeneration": 2,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                            "lastUpdateTime": "2026-01-01T00:00:00Z", "message": "ignored"}]}});
        let got = compared_fields(
            &of_every_controller(),
            "deployments",
            &WriteVerb::UpdateStatus,
            &object,
        );
        assert_eq!(got["status.replicas"], "3");
        assert_eq!(got["status.readyReplicas"], "0");
        assert_eq!(got["status.availableReplicas"], "");
        assert!(
            differing(&got, &fields(&[("status.readyReplicas", "")]))
                .iter()
                .all(|diff| diff.field != "status.readyReplicas"),
            "0 is the same as absent"
        );
        assert_eq!(
            got["status.conditions[Available]"],
            "True/MinimumReplicasAvailable"
        );
        assert!(!got.keys().any(|k| k.contains("lastUpdateTime")));
    }

    #[test]
    fn verdicts() {
        const SETTLE: Duration = Duration::from_secs(5);
        let late = Duration::from_secs(6);
        let early = Duration::from_secs(1);
        let scale = Expectation::Fields {
            based_on: Some("7".into()),
            fields: fields(&[("spec.replicas", "3")]),
        };
        let at = |version: &str, replicas: &str| Observed {
            resource_version: Some(version.into()),
            uid: Some("u1".into()),
            terminating: false,
            fields: fields(&[("spec.replicas", replicas)]),
        };
        let by_name = Expectation::Created {
            identity: Identity::Name,
            node: None,
        };
        let by_count = Expectation::Created {
            identity: Identity::Count,
            node: Some("node-1".into()),
        };
        let delete = Expectation::Gone {
            uid: Some("u1".into()),
            node: Some("node-1".into()),
        };
        let found = |rule: Rule, diffs: Vec<FieldDiff>| Found {
            name: "web-6d8fb7bfdf".into(),
            rule,
            diffs,
        };
        let short = FieldDiff {
            field: "spec.replicas".into(),
            kcm_rs: "3".into(),
            cluster: "2".into(),
        };
        let (settled_at_7, moved_on, terminating, namesake, still_there) = (
            at("7", "2"),
            at("9", "5"),
            Observed {
                terminating: true,
                ..at("3", "")
            },
            Observed {
                uid: Some("u2".into()),
                ..at("3", "")
            },
            at("3", ""),
        );
        let as_decided = at("7", "3");
        let facts = |age: Duration| Facts {
            age,
            settle: SETTLE,
            owner: OwnerState::Unchanged,
            ..Facts::default()
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, &Expectation, Facts<'_>, Verdict)> = vec![
            ("too early to judge a difference", &scale, Facts { current: Some(&settled_at_7), ..facts(early) }, Verdict::Wait),
            ("settled at the decided-on version with another size", &scale, Facts { current: Some(&settled_at_7), ..facts(late) }, Verdict::Field { rule: Rule::Name, object: None, diffs: vec![FieldDiff { cluster: "2".into(), ..short.clone() }] }),
            ("its inputs moved after the decision: a newer decision is judged", &scale, Facts { current: Some(&settled_at_7), inputs_moved: true, ..facts(late) }, Verdict::Superseded),
            ("the object moved on: a newer decision is judged", &scale, Facts { current: Some(&moved_on), ..facts(late) }, Verdict::Superseded),
            ("the object is gone", &scale, facts(late), Verdict::Superseded),
            ("its owner's spec changed after the sync began reading: a newer decision is judged", &scale, Facts { current: Some(&settled_at_7), owner: OwnerState::SpecChanged, ..facts(late) }, Verdict::Superseded),
            ("its owner's spec changed, the values match", &scale, Facts { current: Some(&as_decided), owner: OwnerState::SpecChanged, ..facts(late) }, Verdict::Match(Rule::Name)),
            ("a difference in a namespace being deleted is not compared", &scale, Facts { current: Some(&settled_at_7), namespace_deleting: true, ..facts(late) }, Verdict::NotCompared(Skip::NamespaceDeleting)),
            ("a difference of an object whose owner is gone is not compared", &scale, Facts { current: Some(&settled_at_7), owner: OwnerState::Gone, ..facts(late) }, Verdict::NotCompared(Skip::OwnerGone)),
            ("created, found by name", &by_name, Facts { found: Some(found(Rule::Name, vec![])), ..facts(early) }, Verdict::Match(Rule::Name)),
            ("created under another name, found by owner and template", &by_name, Facts { found: Some(found(Rule::OwnerTemplate, vec![])), ..facts(early) }, Verdict::Match(Rule::OwnerTemplate)),
            ("created with other replicas: that field, once settled", &by_name, Facts { found: Some(found(Rule::OwnerTemplate, vec![short.clone()])), ..facts(late) }, Verdict::Field { rule: Rule::OwnerTemplate, object: Some("web-6d8fb7bfdf".into()), diffs: vec![short.clone()] }),
            ("created with other replicas, not yet settled", &by_name, Facts { found: Some(found(Rule::OwnerTemplate, vec![short.clone()])), ..facts(early) }, Verdict::Wait),
            ("not yet created", &by_name, facts(early), Verdict::Wait),
            ("never created", &by_name, facts(late), Verdict::Missing(Rule::Name)),
            ("fewer pods created than kcm-rs would have", &by_count, facts(late), Verdict::Missing(Rule::OwnerCount)),
            ("never created, its node gone since", &by_count, Facts { node_gone: true, ..facts(late) }, Verdict::NotCompared(Skip::NodeGone)),
            ("its node gone since, not yet settled", &by_count, Facts { node_gone: true, ..facts(early) }, Verdict::Wait),
            ("created, its node gone since", &by_count, Facts { found: Some(found(Rule::OwnerCount, vec![])), node_gone: true, ..facts(late) }, Verdict::Match(Rule::OwnerCount)),
            ("never created, its node relabelled or retainted after the sync started", &by_count, Facts { node_changed: true, ..facts(late) }, Verdict::NotCompared(Skip::NodeChanged)),
            ("its node changed since, not yet settled", &by_count, Facts { node_changed: true, ..facts(early) }, Verdict::Wait),
            ("created, its node changed since", &by_count, Facts { found: Some(found(Rule::OwnerCount, vec![])), node_changed: true, ..facts(late) }, Verdict::Match(Rule::OwnerCount)),
            ("owner's spec changed before the create", &by_name, Facts { owner: OwnerState::SpecChanged, ..facts(late) }, Verdict::Superseded),
            ("never created, owner gone", &by_name, Facts { owner: OwnerState::Gone, ..facts(late) }, Verdict::NotCompared(Skip::OwnerGone)),
            ("never created, namespace being deleted", &by_name, Facts { namespace_deleting: true, ..facts(late) }, Verdict::NotCompared(Skip::NamespaceDeleting)),
            ("deleted", &delete, facts(early), Verdict::Match(Rule::Name)),
            ("being deleted", &delete, Facts { current: Some(&terminating), ..facts(early) }, Verdict::Match(Rule::Name)),
            ("a namesake with another UID", &delete, Facts { current: Some(&namesake), ..facts(late) }, Verdict::Match(Rule::Name)),
            ("deleted and recreated under its name, seen on the watch", &delete, Facts { current: Some(&still_there), seen_deleted: true, ..facts(late) }, Verdict::Match(Rule::Name)),
            ("not yet deleted", &delete, Facts { current: Some(&still_there), ..facts(early) }, Verdict::Wait),
            ("never deleted, nothing else deleted: extra", &delete, Facts { current: Some(&still_there), ..facts(late) }, Verdict::Extra),
            ("never deleted, others of the owner deleted instead: choice", &delete, Facts { current: Some(&still_there), deleted_instead: vec!["web-b".into(), "web-c".into()], ..facts(late) }, Verdict::Choice { instead: vec!["web-b".into(), "web-c".into()] }),
            ("owner's spec changed before the delete", &delete, Facts { current: Some(&still_there), owner: OwnerState::SpecChanged, ..facts(late) }, Verdict::Superseded),
            ("never deleted, its node gone since: the pod garbage collector decides", &delete, Facts { current: Some(&still_there), node_gone: true, deleted_instead: vec!["web-b".into()], ..facts(late) }, Verdict::NotCompared(Skip::NodeGone)),
            ("its node gone, not yet settled", &delete, Facts { current: Some(&still_there), node_gone: true, ..facts(early) }, Verdict::Wait),
            ("deleted, its node gone since", &delete, Facts { node_gone: true, ..facts(late) }, Verdict::Match(Rule::Name)),
            ("never deleted, its node added or changed after the sync started", &delete, Facts { current: Some(&still_there), node_changed: true, ..facts(late) }, Verdict::NotCompared(Skip::NodeChanged)),
            ("never deleted, its node changed, others deleted: not a choice either", &delete, Facts { current: Some(&still_there), node_changed: true, deleted_instead: vec!["web-b".into()], ..facts(late) }, Verdict::NotCompared(Skip::NodeChanged)),
            ("its node changed, not yet settled", &delete, Facts { current: Some(&still_there), node_changed: true, ..facts(early) }, Verdict::Wait),
            ("deleted, its node changed since", &delete, Facts { node_changed: true, ..facts(late) }, Verdict::Match(Rule::Name)),
        ];
        for (name, expectation, facts, expected) in cases {
            let judged = verdict(expectation, &facts);
            assert_eq!(judged, expected, "{name}");
            assert_eq!(
                judged.kind(),
                match expected {
                    Verdict::Field { .. } => Some(Kind::Field),
                    Verdict::Missing(_) => Some(Kind::Missing),
                    Verdict::Extra => Some(Kind::Extra),
                    Verdict::Choice { .. } => Some(Kind::Choice),
                    _ => None,
                },
                "{name}"
            );
        }
    }
}
