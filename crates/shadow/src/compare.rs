//! What a recorded write expects of the cluster, and the verdict once the object has settled:
//! pure functions of plain JSON, table-tested without a server.
//!
//! A write is compared on the fields the issue names and upstream's users read: ReplicaSet
//! sizes and `deployment.kubernetes.io/` annotations, the status counts, `observedGeneration`,
//! revisions and conditions' type/status/reason; the names of created ReplicaSets,
//! ControllerRevisions, StatefulSet pods and claims; which object was deleted. Timestamps,
//! messages and generated names are never compared: two correct controllers differ on them.

use std::{collections::BTreeMap, time::Duration};

use controller_toolkit::writes::{Write, WriteVerb};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

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
    /// A create of an object with a name of its own: it should exist.
    Exists {
        /// The controller owner named in the created object, if any.
        owner: Option<OwnerName>,
    },
    /// A delete: the object decided on (this UID, when known) should be gone or going.
    Gone {
        /// The UID of the object decided on.
        uid: Option<String>,
    },
    /// Not compared: events, generated names, adopt/release patches.
    NotCompared,
}

/// An owner as an owner reference names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerName {
    /// The owner's resource (plural), e.g. `deployments`.
    pub resource: String,
    /// The owner's name (same namespace as the dependent).
    pub name: String,
}

/// The plural of a workload owner kind (`None` for kinds shadow mode does not follow).
pub fn owner_resource(kind: &str) -> Option<&'static str> {
    match kind {
        "Deployment" => Some("deployments"),
        "ReplicaSet" => Some("replicasets"),
        "StatefulSet" => Some("statefulsets"),
        _ => None,
    }
}

/// The controller owner a JSON object names in `metadata.ownerReferences`.
pub fn controller_owner(object: &Value) -> Option<OwnerName> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|owner| owner.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|owner| {
            Some(OwnerName {
                resource: owner_resource(owner.get("kind")?.as_str()?)?.to_owned(),
                name: owner.get("name")?.as_str()?.to_owned(),
            })
        })
}

/// The controller owner that `meta.ownerReferences` names.
pub fn controller_owner_of(meta: &ObjectMeta) -> Option<OwnerName> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|owner| owner.controller == Some(true))
        .and_then(|owner| {
            Some(OwnerName {
                resource: owner_resource(&owner.kind)?.to_owned(),
                name: owner.name.clone(),
            })
        })
}

/// What `write` expects of the cluster.
pub fn expectation_of(write: &Write) -> Expectation {
    let resource = write.resource.plural.as_str();
    if resource == "events" {
        return Expectation::NotCompared;
    }
    let body = || serde_json::from_slice::<Value>(&write.body).ok();
    match &write.verb {
        WriteVerb::Create => match body() {
            Some(object) if has_own_name(&object) => Expectation::Exists {
                owner: controller_owner(&object),
            },
            _ => Expectation::NotCompared,
        },
        WriteVerb::Update | WriteVerb::UpdateStatus => match body() {
            Some(object) => Expectation::Fields {
                based_on: object
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .filter(|version| !version.is_empty())
                    .map(str::to_owned),
                fields: compared_fields(resource, &write.verb, &object),
            },
            None => Expectation::NotCompared,
        },
        WriteVerb::Delete { .. } => Expectation::Gone {
            uid: write.uid.clone(),
        },
        WriteVerb::StrategicPatch | WriteVerb::MergePatch => Expectation::NotCompared,
    }
}

fn has_own_name(object: &Value) -> bool {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty())
}

/// The status fields compared on a status write, by resource (conditions come on top).
const STATUS_FIELDS: &[(&str, &[&str])] = &[
    (
        "replicasets",
        &[
            "status.replicas",
            "status.fullyLabeledReplicas",
            "status.readyReplicas",
            "status.availableReplicas",
            "status.terminatingReplicas",
            "status.observedGeneration",
        ],
    ),
    (
        "deployments",
        &[
            "status.replicas",
            "status.updatedReplicas",
            "status.readyReplicas",
            "status.availableReplicas",
            "status.unavailableReplicas",
            "status.terminatingReplicas",
            "status.observedGeneration",
            "status.collisionCount",
        ],
    ),
    (
        "statefulsets",
        &[
            "status.replicas",
            "status.readyReplicas",
            "status.currentReplicas",
            "status.updatedReplicas",
            "status.availableReplicas",
            "status.currentRevision",
            "status.updateRevision",
            "status.observedGeneration",
            "status.collisionCount",
        ],
    ),
];

/// The fields compared on a write of the whole object, by resource (`deployment.kubernetes.io/`
/// annotations come on top).
const OBJECT_FIELDS: &[(&str, &[&str])] = &[
    ("replicasets", &["spec.replicas"]),
    ("deployments", &["spec.template"]),
    ("pods", &["metadata.labels"]),
    ("controllerrevisions", &["revision"]),
    ("persistentvolumeclaims", &["metadata.ownerReferences"]),
];

/// The fields of `object` a write with `verb` on `resource` is compared on.
pub fn compared_fields(resource: &str, verb: &WriteVerb, object: &Value) -> Fields {
    let status = matches!(verb, WriteVerb::UpdateStatus);
    let table = if status { STATUS_FIELDS } else { OBJECT_FIELDS };
    let mut fields: Fields = table
        .iter()
        .filter(|(listed, _)| *listed == resource)
        .flat_map(|(_, paths)| paths.iter())
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
    if !status || resource == "deployments" {
        // The Deployment controller persists its revision annotation through /status too.
        for (key, value) in object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(key, _)| key.starts_with("deployment.kubernetes.io/"))
        {
            fields.insert(
                format!("metadata.annotations[{key}]"),
                canonical(Some(value)),
            );
        }
    }
    fields
}

/// A value as text: strings as they are, absent, null and empty collections as `""`, anything
/// else as its JSON.
fn canonical(value: Option<&Value>) -> String {
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

/// The owner of a dependent a create or delete was decided for, then and now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerChange {
    /// No owner followed, or the owner's spec (generation) is what the decision saw.
    Unchanged,
    /// The owner's spec changed or the owner went away: the decision no longer stands.
    Changed,
}

/// The outcome of comparing one recorded write with the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Too early: the settle window has not passed.
    Wait,
    /// The cluster did what kcm-rs would have done.
    Match,
    /// The cluster moved on (the object changed, or its owner's spec did) before it could be
    /// judged; a newer decision, if any, is judged instead.
    Superseded,
    /// The object settled at the version kcm-rs decided on with other values.
    Differs(Vec<FieldDiff>),
    /// An object kcm-rs would have created does not exist.
    NotCreated,
    /// An object kcm-rs would have deleted is still there.
    NotDeleted,
}

/// Judges a write recorded `age` ago, with the object as the caches hold it now (`None`:
/// absent), what became of the owner, and whether the object or one it controls changed
/// since (`inputs_moved`). Timing is never a divergence: nothing is judged before `settle`
/// has passed, and an update whose object or inputs changed after the decision is judged by
/// the decision made on the newer state (the controller syncs again on every such change).
pub fn verdict(
    expectation: &Expectation,
    age: Duration,
    settle: Duration,
    current: Option<&Observed>,
    owner: OwnerChange,
    inputs_moved: bool,
) -> Verdict {
    match expectation {
        Expectation::NotCompared => Verdict::Superseded,
        Expectation::Exists { .. } if current.is_some() => Verdict::Match,
        Expectation::Gone { uid } => match current {
            None => Verdict::Match,
            Some(object)
                if object.terminating || (uid.is_some() && object.uid.as_ref() != uid.as_ref()) =>
            {
                Verdict::Match
            }
            Some(_) if age < settle => Verdict::Wait,
            Some(_) if owner == OwnerChange::Changed => Verdict::Superseded,
            Some(_) => Verdict::NotDeleted,
        },
        _ if age < settle => Verdict::Wait,
        Expectation::Exists { .. } if owner == OwnerChange::Changed => Verdict::Superseded,
        Expectation::Exists { .. } => Verdict::NotCreated,
        Expectation::Fields { based_on, fields } => {
            let Some(object) = current else {
                return Verdict::Superseded;
            };
            let diffs = differing(fields, &object.fields);
            let unchanged =
                based_on.is_some() && object.resource_version == *based_on && !inputs_moved;
            match (diffs.is_empty(), unchanged) {
                (true, _) => Verdict::Match,
                (false, true) => Verdict::Differs(diffs),
                (false, false) => Verdict::Superseded,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn expectations_of_writes() {
        let owned = json!({"metadata": {"name": "web-0", "ownerReferences": [
            {"kind": "StatefulSet", "name": "web", "controller": true, "uid": "u", "apiVersion": "apps/v1"}]}});
        let cases = [
            (
                "named create expects the object, with its owner",
                write(WriteVerb::Create, "pods", owned),
                Expectation::Exists {
                    owner: Some(OwnerName {
                        resource: "statefulsets".into(),
                        name: "web".into(),
                    }),
                },
            ),
            (
                "generated name is not compared",
                write(
                    WriteVerb::Create,
                    "pods",
                    json!({"metadata": {"generateName": "rs-"}}),
                ),
                Expectation::NotCompared,
            ),
            (
                "event is not compared",
                write(
                    WriteVerb::Create,
                    "events",
                    json!({"metadata": {"name": "e"}}),
                ),
                Expectation::NotCompared,
            ),
            (
                "scale compares spec.replicas and the deployment annotations",
                write(
                    WriteVerb::Update,
                    "replicasets",
                    json!({"metadata": {"resourceVersion": "7", "annotations": {
                        "deployment.kubernetes.io/desired-replicas": "3", "other": "x"}},
                        "spec": {"replicas": 3}}),
                ),
                Expectation::Fields {
                    based_on: Some("7".into()),
                    fields: fields(&[
                        ("spec.replicas", "3"),
                        (
                            "metadata.annotations[deployment.kubernetes.io/desired-replicas]",
                            "3",
                        ),
                    ]),
                },
            ),
            (
                "delete expects the object decided on gone, precondition or not",
                write(
                    WriteVerb::Delete {
                        precondition: false,
                    },
                    "pods",
                    json!({}),
                ),
                Expectation::Gone {
                    uid: Some("u1".into()),
                },
            ),
            (
                "adopt patch is not compared",
                write(WriteVerb::StrategicPatch, "pods", json!({"metadata": {}})),
                Expectation::NotCompared,
            ),
        ];
        for (name, write, expected) in cases {
            assert_eq!(expectation_of(&write), expected, "{name}");
        }
    }

    #[test]
    fn status_fields_are_canonical_and_conditions_keyed_by_type() {
        let object = json!({"status": {"replicas": 3, "readyReplicas": 0, "observedGeneration": 2,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                            "lastUpdateTime": "2026-01-01T00:00:00Z", "message": "ignored"}]}});
        let got = compared_fields("deployments", &WriteVerb::UpdateStatus, &object);
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
        let create = Expectation::Exists { owner: None };
        let delete = Expectation::Gone {
            uid: Some("u1".into()),
        };
        let same = OwnerChange::Unchanged;
        let moved = OwnerChange::Changed;
        struct Case<'a> {
            name: &'a str,
            expectation: &'a Expectation,
            age: Duration,
            current: Option<Observed>,
            owner: OwnerChange,
            inputs_moved: bool,
            expected: Verdict,
        }
        let case = |name, expectation, age, current, owner, expected| Case {
            name,
            expectation,
            age,
            current,
            owner,
            inputs_moved: false,
            expected,
        };
        let cases = [
            case(
                "too early to judge a difference",
                &scale,
                early,
                Some(at("7", "2")),
                same,
                Verdict::Wait,
            ),
            case(
                "settled at the decided-on version with another size",
                &scale,
                late,
                Some(at("7", "2")),
                same,
                Verdict::Differs(vec![FieldDiff {
                    field: "spec.replicas".into(),
                    kcm_rs: "3".into(),
                    cluster: "2".into(),
                }]),
            ),
            Case {
                inputs_moved: true,
                ..case(
                    "its inputs moved after the decision: a newer decision is judged",
                    &scale,
                    late,
                    Some(at("7", "2")),
                    same,
                    Verdict::Superseded,
                )
            },
            case(
                "the cluster made the same write",
                &scale,
                late,
                Some(at("8", "3")),
                same,
                Verdict::Match,
            ),
            case(
                "the object moved on: a newer decision is judged",
                &scale,
                late,
                Some(at("9", "5")),
                same,
                Verdict::Superseded,
            ),
            case(
                "the object is gone",
                &scale,
                late,
                None,
                same,
                Verdict::Superseded,
            ),
            case(
                "created",
                &create,
                early,
                Some(at("1", "")),
                same,
                Verdict::Match,
            ),
            case("not yet created", &create, early, None, same, Verdict::Wait),
            case(
                "never created",
                &create,
                late,
                None,
                same,
                Verdict::NotCreated,
            ),
            case(
                "owner's spec changed before the create",
                &create,
                late,
                None,
                moved,
                Verdict::Superseded,
            ),
            case("deleted", &delete, early, None, same, Verdict::Match),
            case(
                "being deleted",
                &delete,
                early,
                Some(Observed {
                    terminating: true,
                    ..at("3", "")
                }),
                same,
                Verdict::Match,
            ),
            case(
                "a namesake with another UID",
                &delete,
                late,
                Some(Observed {
                    uid: Some("u2".into()),
                    ..at("3", "")
                }),
                same,
                Verdict::Match,
            ),
            case(
                "not yet deleted",
                &delete,
                early,
                Some(at("3", "")),
                same,
                Verdict::Wait,
            ),
            case(
                "never deleted",
                &delete,
                late,
                Some(at("3", "")),
                same,
                Verdict::NotDeleted,
            ),
            case(
                "owner's spec changed before the delete",
                &delete,
                late,
                Some(at("3", "")),
                moved,
                Verdict::Superseded,
            ),
        ];
        for case in cases {
            assert_eq!(
                verdict(
                    case.expectation,
                    case.age,
                    SETTLE,
                    case.current.as_ref(),
                    case.owner,
                    case.inputs_moved
                ),
                case.expected,
                "{}",
                case.name
            );
        }
    }
}
