//! Building ControllerRevisions and comparing them (`NewControllerRevision`, `EqualRevision`,
//! `FindEqualRevisions` of `pkg/controller/history`).
//!
//! A revision's identity is its data bytes: the hash label is only a fast path for telling
//! revisions apart, and the name is derived from the hash.

use std::borrow::Borrow;
use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::Value;

use crate::Error;
use crate::go_json;
use crate::hash::{controller_revision_name, hash_revision_data};

/// Label on every ControllerRevision holding its hash (`ControllerRevisionHashLabel`).
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// The object a revision belongs to; becomes the revision's controller owner reference and the
/// prefix of its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevisionParent {
    /// `apiVersion` of the parent, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind` of the parent, e.g. `StatefulSet`.
    pub kind: String,
    /// Name of the parent; revision names are `<name>-<hash>`.
    pub name: String,
    /// UID of the parent, so the owner reference cannot point at a recreated namesake.
    pub uid: String,
}

impl RevisionParent {
    /// The controller owner reference upstream puts on revisions (`controller` and
    /// `blockOwnerDeletion` both true).
    pub fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// The exact bytes upstream stores and compares for a revision: its data encoded the way Go's
/// `encoding/json` writes it. Empty when the revision has no data (Go's empty `Raw`).
///
/// k8s-openapi parses `data` into a JSON tree, so the bytes the server holds are reconstructed:
/// for data written by a Go controller (sorted keys, Go escaping and numbers) the result equals
/// the stored bytes; data written in another key order or escaping is canonicalized.
pub fn revision_data_bytes(revision: &ControllerRevision) -> Result<Vec<u8>, Error> {
    match &revision.data {
        None | Some(RawExtension(Value::Null)) => Ok(Vec::new()),
        Some(RawExtension(data)) => go_json::encode(data),
    }
}

/// `HashControllerRevision`: the hash of the revision's data bytes and the collision count.
pub fn hash_controller_revision(
    revision: &ControllerRevision,
    collision_count: Option<i32>,
) -> Result<String, Error> {
    Ok(hash_revision_data(
        &revision_data_bytes(revision)?,
        collision_count,
    ))
}

/// `NewControllerRevision`: a revision of `parent` with a copy of `template_labels`, the
/// controller owner reference, `data`, the revision number, and the name and hash label derived
/// from the data and `collision_count`. The namespace is left for creation to fill in. `data`
/// is stored with its keys in Go's order so any serializer sends them sorted.
pub fn new_controller_revision(
    parent: &RevisionParent,
    template_labels: &BTreeMap<String, String>,
    data: &Value,
    revision: i64,
    collision_count: Option<i32>,
) -> Result<ControllerRevision, Error> {
    let hash = hash_revision_data(&go_json::encode(data)?, collision_count);
    let mut labels = template_labels.clone();
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_owned(), hash.clone());
    Ok(ControllerRevision {
        data: Some(RawExtension(go_json::sorted(data))),
        metadata: ObjectMeta {
            name: Some(controller_revision_name(&parent.name, &hash)),
            labels: Some(labels),
            owner_references: Some(vec![parent.controller_ref()]),
            ..ObjectMeta::default()
        },
        revision,
    })
}

/// The hash label parsed the way upstream's fast path does (`strconv.ParseInt(s, 10, 32)`):
/// only all-digit hashes that fit an int32 (legacy numeric ones, rare encoded ones) parse.
fn numeric_hash(revision: &ControllerRevision) -> Option<i32> {
    revision
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)?
        .parse::<i32>()
        .ok()
}

/// `EqualRevision`: revisions whose hash labels both parse as numbers and differ are unequal;
/// otherwise they are equal iff their data bytes are identical. Data that cannot be encoded is
/// never equal to anything.
pub fn equal_revision(lhs: &ControllerRevision, rhs: &ControllerRevision) -> bool {
    if let (Some(left), Some(right)) = (numeric_hash(lhs), numeric_hash(rhs))
        && left != right
    {
        return false;
    }
    match (revision_data_bytes(lhs), revision_data_bytes(rhs)) {
        (Ok(left), Ok(right)) => left == right,
        _ => false,
    }
}

/// `FindEqualRevisions`: the revisions equal to `needle`, in the order given.
pub fn find_equal_revisions<'a, R: Borrow<ControllerRevision>>(
    revisions: &'a [R],
    needle: &ControllerRevision,
) -> Vec<&'a R> {
    revisions
        .iter()
        .filter(|candidate| equal_revision((*candidate).borrow(), needle))
        .collect()
}

/// The hash label of a revision, if present.
pub fn revision_hash(revision: &ControllerRevision) -> Option<&str> {
    revision
        .metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn revision(hash: Option<&str>, data: Option<Value>) -> ControllerRevision {
        ControllerRevision {
            data: data.map(RawExtension),
            metadata: ObjectMeta {
                labels: hash.map(|hash| {
                    BTreeMap::from([(CONTROLLER_REVISION_HASH_LABEL.to_owned(), hash.to_owned())])
                }),
                ..ObjectMeta::default()
            },
            revision: 1,
        }
    }

    #[test]
    fn equality() {
        let data = || Some(json!({"spec": {"template": {"a": 1}}}));
        #[rustfmt::skip]
        let cases = [
            ("same data, same encoded hash", revision(Some("c77f6d978"), data()), revision(Some("c77f6d978"), data()), true),
            ("same data, different encoded hashes: labels are not compared", revision(Some("c77f6d978"), data()), revision(Some("776999688b"), data()), true),
            ("same data, no labels", revision(None, data()), revision(None, data()), true),
            ("different data", revision(Some("x"), data()), revision(Some("x"), Some(json!({"spec": {"template": {"a": 2}}}))), false),
            ("numeric hashes differ: unequal despite same data", revision(Some("123"), data()), revision(Some("124"), data()), false),
            ("numeric hashes equal: data decides", revision(Some("123"), data()), revision(Some("123"), data()), true),
            ("signed numeric hash parses like Go", revision(Some("+5"), data()), revision(Some("6"), data()), false),
            ("only one numeric hash: data decides", revision(Some("123"), data()), revision(Some("c77f6d978"), data()), true),
            ("too large for int32: data decides", revision(Some("4444444444"), data()), revision(Some("5"), data()), true),
            ("key order does not matter after canonical encoding", revision(None, Some(json!({"b": 1, "a": 2}))), revision(None, Some(json!({"a": 2, "b": 1}))), true),
            ("both without data", revision(None, None), revision(None, None), true),
            ("null data is no data", revision(None, Some(Value::Null)), revision(None, None), true),
            ("one without data", revision(None, data()), revision(None, None), false),
        ];
        for (name, lhs, rhs, want) in cases {
            assert_eq!(equal_revision(&lhs, &rhs), want, "{name}");
            assert_eq!(equal_revision(&rhs, &lhs), want, "{name} (swapped)");
        }
    }

    #[test]
    fn find_equal_keeps_order() {
        let a = || Some(json!({"a": 1}));
        let mut first = revision(None, a());
        first.revision = 1;
        let other = revision(None, Some(json!({"b": 1})));
        let mut third = revision(None, a());
        third.revision = 3;
        let list = vec![first, other, third];
        let found: Vec<i64> = find_equal_revisions(&list, &revision(None, a()))
            .iter()
            .map(|r| r.revision)
            .collect();
        assert_eq!(found, vec![1, 3]);
    }

    #[test]
    fn new_revision_fields() {
        let parent = RevisionParent {
            api_version: "apps/v1".to_owned(),
            kind: "StatefulSet".to_owned(),
            name: "test".to_owned(),
            uid: "uid-1".to_owned(),
        };
        let labels = BTreeMap::from([("app".to_owned(), "foo".to_owned())]);
        let data = json!({"z": 1, "a": {"y": 2, "x": 3}});
        let created = new_controller_revision(&parent, &labels, &data, 7, None).expect("encodable");
        let hash = hash_revision_data(br#"{"a":{"x":3,"y":2},"z":1}"#, None);
        assert_eq!(created.metadata.name, Some(format!("test-{hash}")));
        assert_eq!(revision_hash(&created), Some(hash.as_str()));
        assert_eq!(
            created
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str),
            Some("foo")
        );
        assert_eq!(created.metadata.namespace, None);
        assert_eq!(created.revision, 7);
        let owner = created
            .metadata
            .owner_references
            .as_deref()
            .and_then(<[_]>::first)
            .expect("owner set");
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("StatefulSet", "test", "uid-1")
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        // Data is stored with sorted keys, so even serde's serializer sends Go's order.
        let sent = serde_json::to_string(&created.data).expect("serializable");
        assert_eq!(sent, r#"{"a":{"x":3,"y":2},"z":1}"#);
        assert_eq!(
            hash_controller_revision(&created, None).expect("encodable"),
            hash
        );
    }
}
