//! Creating a revision with upstream's collision loop (`CreateControllerRevision`), as pure steps.
//!
//! The name of a revision is derived from its data and a collision count. If the name is taken
//! by a revision with different data (a hash collision, or a stale object), upstream bumps the
//! caller's collision count and tries the next name; if the data is identical it reuses the
//! existing object. The controller does the HTTP: it POSTs [`RevisionCreation::candidate`] (ideally
//! with [`create_request_body`] so the stored bytes are Go's), and on AlreadyExists GETs the name
//! from the API server and asks [`RevisionCreation::on_already_exists`] what to do.

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Error;
use crate::hash::{controller_revision_name, hash_revision_data};
use crate::revision::revision_data_bytes;

/// What an AlreadyExists answer means for the revision being created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameConflict {
    /// The existing object holds the same data bytes: use it as the created revision.
    ReuseExisting,
    /// Different data under our name: bump the collision count and try the next name.
    Collision,
}

/// Whether `existing` (read from the API server under our name) can stand in for `ours`:
/// only identical data bytes count, labels and revision numbers do not.
pub fn resolve_name_conflict(
    ours: &ControllerRevision,
    existing: &ControllerRevision,
) -> NameConflict {
    match (revision_data_bytes(ours), revision_data_bytes(existing)) {
        (Ok(ours), Ok(existing)) if ours == existing => NameConflict::ReuseExisting,
        _ => NameConflict::Collision,
    }
}

/// The state of one create-with-collision-loop.
#[derive(Debug, Clone)]
pub struct RevisionCreation {
    revision: ControllerRevision,
    data_bytes: Vec<u8>,
    namespace: String,
    parent_name: String,
    collision_count: i32,
}

impl RevisionCreation {
    /// Starts creating `revision` (as built by `new_statefulset_revision`) for the parent
    /// `parent_namespace/parent_name`, from the parent's current collision count.
    pub fn new(
        revision: ControllerRevision,
        parent_namespace: &str,
        parent_name: &str,
        collision_count: i32,
    ) -> Result<Self, Error> {
        Ok(Self {
            data_bytes: revision_data_bytes(&revision)?,
            revision,
            namespace: parent_namespace.to_owned(),
            parent_name: parent_name.to_owned(),
            collision_count,
        })
    }

    /// The object to POST now: the revision in the parent's namespace, named
    /// `<parent>-<hash(data, collision count)>`. As upstream, only the name follows the count;
    /// the hash label keeps the value computed when the revision was built.
    pub fn candidate(&self) -> ControllerRevision {
        let hash = hash_revision_data(&self.data_bytes, Some(self.collision_count));
        let mut candidate = self.revision.clone();
        candidate.metadata.name = Some(controller_revision_name(&self.parent_name, &hash));
        candidate.metadata.namespace = Some(self.namespace.clone());
        candidate
    }

    /// Handles AlreadyExists for the current candidate given the object the API server holds
    /// under that name. On a collision the count is incremented (wrapping like Go's int32) and
    /// the next [`candidate`](Self::candidate) has a new name.
    pub fn on_already_exists(&mut self, existing: &ControllerRevision) -> NameConflict {
        let conflict = resolve_name_conflict(&self.revision, existing);
        if conflict == NameConflict::Collision {
            self.collision_count = self.collision_count.wrapping_add(1);
            tracing::debug!(
                parent = %format!("{}/{}", self.namespace, self.parent_name),
                collision_count = self.collision_count,
                "ControllerRevision name collision"
            );
        }
        conflict
    }

    /// The collision count to record in the parent's status (`status.collisionCount`).
    pub fn collision_count(&self) -> i32 {
        self.collision_count
    }
}

/// The JSON body for POSTing `revision` with its `data` written as Go's bytes (HTML-escaped
/// strings, Go number format, sorted keys), so the API server stores exactly what an upstream
/// controller would have stored. A plain serde serialization would write `<` instead of
/// `\u003c` and make the stored bytes differ from upstream's.
pub fn create_request_body(revision: &ControllerRevision) -> Result<Vec<u8>, Error> {
    let data: Option<Box<RawValue>> = match &revision.data {
        Some(data) if !data.0.is_null() => {
            Some(serde_json::from_slice(&revision_data_bytes(revision)?)?)
        }
        _ => None,
    };
    let mut without_data = revision.clone();
    without_data.data = None;
    let Value::Object(fields) = serde_json::to_value(&without_data)? else {
        return Err(Error::NotAnObject {
            path: "ControllerRevision".to_owned(),
        });
    };
    let body = RequestBody {
        fields: &fields,
        data: data.as_deref(),
    };
    Ok(serde_json::to_vec(&body)?)
}

struct RequestBody<'a> {
    fields: &'a serde_json::Map<String, Value>,
    data: Option<&'a RawValue>,
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.fields {
            map.serialize_entry(key, value)?;
        }
        if let Some(data) = self.data {
            map.serialize_entry("data", data)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    use serde_json::json;

    use super::*;
    use crate::revision::{RevisionParent, new_controller_revision, revision_hash};

    /// Example B's data (history.md section 8): hashes 776999688b, 776999688c, 7769996888 for
    /// collision counts 0, 1, 2.
    fn example_b_revision() -> ControllerRevision {
        let data: Value = serde_json::from_str(r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#).expect("valid");
        let parent = RevisionParent {
            api_version: "apps/v1".to_owned(),
            kind: "StatefulSet".to_owned(),
            name: "test".to_owned(),
            uid: "uid-1".to_owned(),
        };
        new_controller_revision(&parent, &Default::default(), &data, 1, Some(0)).expect("encodable")
    }

    #[test]
    fn collision_loop() {
        let mut creation =
            RevisionCreation::new(example_b_revision(), "default", "test", 0).expect("encodable");
        let first = creation.candidate();
        assert_eq!(first.metadata.name.as_deref(), Some("test-776999688b"));
        assert_eq!(first.metadata.namespace.as_deref(), Some("default"));

        // Someone else's data under our name: collide and move on.
        let mut squatter = first.clone();
        squatter.data = Some(RawExtension(json!({"other": true})));
        assert_eq!(
            creation.on_already_exists(&squatter),
            NameConflict::Collision
        );
        assert_eq!(creation.collision_count(), 1);
        let second = creation.candidate();
        assert_eq!(second.metadata.name.as_deref(), Some("test-776999688c"));
        // Only the name follows the count; the label keeps the hash computed at construction.
        assert_eq!(revision_hash(&second), Some("776999688b"));

        assert_eq!(
            creation.on_already_exists(&squatter),
            NameConflict::Collision
        );
        assert_eq!(
            creation.candidate().metadata.name.as_deref(),
            Some("test-7769996888")
        );

        // Our own data under the name (e.g. created by a previous attempt): reuse, count kept.
        let mut ours = creation.candidate();
        ours.revision = 9;
        ours.metadata.labels = None;
        assert_eq!(
            creation.on_already_exists(&ours),
            NameConflict::ReuseExisting
        );
        assert_eq!(creation.collision_count(), 2);
    }

    #[test]
    fn collision_count_wraps_like_go_int32() {
        let mut creation = RevisionCreation::new(example_b_revision(), "default", "test", i32::MAX)
            .expect("encodable");
        let other = ControllerRevision {
            data: Some(RawExtension(json!({}))),
            ..ControllerRevision::default()
        };
        assert_eq!(creation.on_already_exists(&other), NameConflict::Collision);
        assert_eq!(creation.collision_count(), i32::MIN);
    }

    #[test]
    fn conflict_resolution_compares_data_only() {
        let ours = example_b_revision();
        let cases = [
            (
                "same data, different metadata",
                {
                    let mut existing = ours.clone();
                    existing.metadata.name = Some("elsewhere".to_owned());
                    existing.revision = 5;
                    existing
                },
                NameConflict::ReuseExisting,
            ),
            (
                "different data",
                ControllerRevision {
                    data: Some(RawExtension(json!({"a": 1}))),
                    ..ours.clone()
                },
                NameConflict::Collision,
            ),
            (
                "no data",
                ControllerRevision {
                    data: None,
                    ..ours.clone()
                },
                NameConflict::Collision,
            ),
        ];
        for (name, existing, want) in cases {
            assert_eq!(resolve_name_conflict(&ours, &existing), want, "{name}");
        }
    }

    #[test]
    fn request_body_carries_go_bytes() {
        let mut revision = example_b_revision();
        revision.data = Some(RawExtension(
            json!({"note": "a<b & c>d", "n": 30.0, "b": 1}),
        ));
        let body = create_request_body(&revision).expect("serializable");
        let text = String::from_utf8(body.clone()).expect("utf-8");
        assert!(
            text.contains(r#""data":{"b":1,"n":30,"note":"a\u003cb \u0026 c\u003ed"}"#),
            "{text}"
        );
        assert!(
            text.starts_with(r#"{"apiVersion":"apps/v1","kind":"ControllerRevision","#),
            "{text}"
        );
        let parsed: ControllerRevision =
            serde_json::from_slice(&body).expect("body is a ControllerRevision");
        assert_eq!(
            revision_data_bytes(&parsed).expect("encodable"),
            revision_data_bytes(&revision).expect("encodable")
        );
        assert_eq!(parsed.metadata, revision.metadata);
        assert_eq!(parsed.revision, revision.revision);

        revision.data = None;
        let text = String::from_utf8(create_request_body(&revision).expect("serializable"))
            .expect("utf-8");
        assert!(!text.contains("\"data\""), "{text}");
    }
}
