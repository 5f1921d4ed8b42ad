//! Which object the cluster created for a create kcm-rs decided on, and what a delete kcm-rs
//! decided on became: pure functions over what the watch stream saw, table-tested without a
//! server.
//!
//! A created object is matched by identity, not by name, wherever the name is not part of the
//! decision ([`Identity`]), as the owner's controller declares it in its descriptor
//! ([`DependentsMatch`], merged into the [`Catalog`]):
//!
//! * by owner and pod template, with the controller's own template equality: a Deployment's
//!   ReplicaSet, ignoring the pod-template-hash label as finding the new ReplicaSet does
//!   (upstream's hash, of Go's printed struct, differs from kcm-rs's by design, so the name
//!   does); the replicas it was created with are then compared;
//! * by owner and revision data: a DaemonSet's ControllerRevision, named after the same
//!   template hash as a ReplicaSet (so differing from upstream's name by design); the revision
//!   number it was created with is then compared;
//! * by owner and count, for generated names: a ReplicaSet's or a DaemonSet's pods;
//! * everything else (a StatefulSet's pods, claims and revisions) by name: the controller
//!   decides it.
//!
//! Creates and deletes are judged against what the watch stream saw since shortly before the
//! decision, not only against the final state: an object the cluster created and someone then
//! deleted (a scale-down, a namespace teardown, a user) was created; an object deleted and
//! recreated under its name was deleted.

use std::{sync::Arc, time::Instant};

use controller_toolkit::shadow_view::{DependentsMatch, Snapshot};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    catalog::{Catalog, TemplatesEqual},
    compare::{FieldDiff, OwnerName, canonical, same},
};

/// The rule by which a recorded write was matched with the cluster (reported with each
/// divergence and counted per match on `/shadow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Rule {
    /// The object of the same name (and, for a delete, UID): names the controller decides,
    /// and every update.
    #[serde(rename = "name")]
    Name,
    /// A Deployment's ReplicaSet: the one the cluster created for the same owner with the same
    /// pod template, ignoring the pod-template-hash label.
    #[serde(rename = "owner+template")]
    OwnerTemplate,
    /// A DaemonSet's ControllerRevision: the one the cluster created for the same owner with
    /// the same data, whatever its name.
    #[serde(rename = "owner+data")]
    OwnerData,
    /// A ReplicaSet's pods: as many created for the same owner as kcm-rs would have created.
    #[serde(rename = "owner+count")]
    OwnerCount,
    /// The objects of one owner the cluster deleted, against those kcm-rs would have deleted
    /// (a scale-down or recovery ranking).
    #[serde(rename = "owner")]
    Owner,
}

impl Rule {
    /// The rule as `/shadow` and the logs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Name => "name",
            Rule::OwnerTemplate => "owner+template",
            Rule::OwnerData => "owner+data",
            Rule::OwnerCount => "owner+count",
            Rule::Owner => "owner",
        }
    }
}

/// How the object a create decided on is recognized among the cluster's.
#[derive(Debug, Clone, PartialEq)]
pub enum Identity {
    /// By name: the controller decides it.
    Name,
    /// By owner and template, as the owner's controller compares templates (a Deployment's
    /// ReplicaSet, ignoring the pod-template-hash label); the replicas it was created with are
    /// then compared.
    Template {
        /// The object kcm-rs would have created, as the write's JSON (shared with the write,
        /// read only once the cluster created a candidate).
        created: Arc<[u8]>,
        /// Its `spec.replicas` as compared text.
        replicas: String,
    },
    /// By owner and data (a DaemonSet's ControllerRevision); the revision number it was
    /// created with is then compared.
    Data {
        /// Its `data`, as the write sent it.
        data: Value,
        /// Its `revision` as compared text.
        revision: String,
    },
    /// A pod with a generated name: by owner and count.
    Count,
}

impl Identity {
    /// The rule this identity is matched by.
    pub fn rule(&self) -> Rule {
        match self {
            Identity::Name => Rule::Name,
            Identity::Template { .. } => Rule::OwnerTemplate,
            Identity::Data { .. } => Rule::OwnerData,
            Identity::Count => Rule::OwnerCount,
        }
    }
}

/// How the object `created` (a create's body, `body` as sent) of `resource` written for
/// `owner` is recognized: by template or by data when the owner's kind matches `resource` so in
/// `catalog`, else by name when it has one, else by owner and count; `None` when it cannot be
/// (a generated name without a followed owner).
pub fn identity_of(
    catalog: &Catalog,
    resource: &str,
    created: &Value,
    body: &Arc<[u8]>,
    owner: Option<&OwnerName>,
) -> Option<Identity> {
    let named = created
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty());
    let matched = owner.and_then(|owner| catalog.dependents_of(&owner.resource, resource));
    match (owner, matched) {
        (Some(_), Some(DependentsMatch::Template { .. })) => Some(Identity::Template {
            created: body.clone(),
            replicas: canonical(created.pointer("/spec/replicas")),
        }),
        (Some(_), Some(DependentsMatch::Data)) => Some(Identity::Data {
            data: created.get("data").cloned().unwrap_or(Value::Null),
            revision: canonical(created.get("revision")),
        }),
        _ if named => Some(Identity::Name),
        (Some(_), _) => Some(Identity::Count),
        (None, _) => None,
    }
}

/// An object the watch stream saw created (added after the caches' first list).
#[derive(Debug, Clone)]
pub struct Creation {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// When the watch delivered it.
    pub at: Instant,
    /// The object as created, for kinds matched by template (ReplicaSets): read as JSON only
    /// when a create is matched by its content.
    pub object: Option<Snapshot>,
    /// Whether a create decided on was matched with it by count.
    pub claimed: bool,
}

/// An object the watch stream saw deleted (or start being deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// Its name (shared by the log's entries by name and by owner).
    pub name: Arc<str>,
    /// Its UID.
    pub uid: Arc<str>,
    /// When the watch delivered it.
    pub at: Instant,
}

/// The cluster's object found for a create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its name (a ReplicaSet's may differ from kcm-rs's).
    pub name: String,
    /// The rule that matched it.
    pub rule: Rule,
    /// The fields it was created with that differ from kcm-rs's (a ReplicaSet's replicas).
    pub diffs: Vec<FieldDiff>,
}

/// By name: the object `name` is in the cache (`live`), or one of that name was created at or
/// after `since` (`created`: the creations of that name the watch saw).
pub fn found_by_name(
    name: &str,
    live: bool,
    created: &[Creation],
    since: Instant,
) -> Option<Found> {
    (live || created.iter().any(|creation| creation.at >= since)).then(|| Found {
        name: name.to_owned(),
        rule: Rule::Name,
        diffs: Vec::new(),
    })
}

/// By owner and template: of the owner's objects created at or after `since` (oldest first),
/// the first whose pod template is `equal` to that of `created` (the create's JSON) as the
/// owner's controller compares them, with its replicas at creation compared with `replicas`.
pub fn found_by_template(
    equal: TemplatesEqual,
    created: &[u8],
    replicas: &str,
    candidates: &[Creation],
    since: Instant,
) -> Option<Found> {
    let mut candidates = candidates
        .iter()
        .filter(|creation| creation.at >= since)
        .peekable();
    candidates.peek()?;
    let wanted = template_of(created)?;
    candidates.find_map(|creation| {
        let object = creation.object.as_ref()?.json();
        let theirs = decode_template(object.pointer("/spec/template")?)?;
        equal(&wanted, &theirs).then(|| {
            let diffs = created_with(
                "spec.replicas",
                replicas,
                canonical(object.pointer("/spec/replicas")),
            );
            Found {
                name: creation.name.clone(),
                rule: Rule::OwnerTemplate,
                diffs,
            }
        })
    })
}

/// The difference in `field` between what kcm-rs would have created an object with
/// (`kcm_rs`) and what the cluster's was created with (`held`), if any.
fn created_with(field: &str, kcm_rs: &str, held: String) -> Vec<FieldDiff> {
    (!same(&held, kcm_rs))
        .then(|| FieldDiff {
            field: field.to_owned(),
            kcm_rs: kcm_rs.to_owned(),
            cluster: held,
        })
        .into_iter()
        .collect()
}

/// By owner and data: of the owner's objects created at or after `since` (oldest first), the
/// first whose `data` equals `data` (a DaemonSet's revision: its name carries a template hash
/// computed differently by upstream), with its revision number at creation compared with
/// `revision`.
pub fn found_by_data(
    data: &Value,
    revision: &str,
    candidates: &[Creation],
    since: Instant,
) -> Option<Found> {
    candidates
        .iter()
        .filter(|creation| creation.at >= since)
        .find_map(|creation| {
            let object = creation.object.as_ref()?.json();
            (object.get("data") == Some(data)).then(|| {
                let diffs = created_with("revision", revision, canonical(object.get("revision")));
                Found {
                    name: creation.name.clone(),
                    rule: Rule::OwnerData,
                    diffs,
                }
            })
        })
}

/// The pod template (`spec.template`) of an object given as JSON (a ReplicaSet).
fn template_of(created: &[u8]) -> Option<PodTemplateSpec> {
    #[derive(Deserialize)]
    struct Templated {
        spec: Spec,
    }
    #[derive(Deserialize)]
    struct Spec {
        template: PodTemplateSpec,
    }
    match serde_json::from_slice::<Templated>(created) {
        Ok(templated) => Some(templated.spec.template),
        Err(error) => {
            tracing::debug!(%error, "shadow: a created object's pod template does not decode");
            None
        }
    }
}

fn decode_template(template: &Value) -> Option<PodTemplateSpec> {
    match serde_json::from_value(template.clone()) {
        Ok(template) => Some(template),
        Err(error) => {
            tracing::debug!(%error, "shadow: a pod template does not decode");
            None
        }
    }
}

/// By owner and count: of the owner's objects created at or after `since`, the oldest that no
/// other create claimed, to be claimed by this one (its index). Claiming the oldest leaves the
/// later creations to the later decisions, whose windows start later.
pub fn claimable(created: &[Creation], since: Instant) -> Option<usize> {
    created
        .iter()
        .enumerate()
        .filter(|(_, creation)| creation.at >= since && !creation.claimed)
        .min_by_key(|(_, creation)| creation.at)
        .map(|(index, _)| index)
}

/// Whether the objects of `resource` created for an owner of `owner_resource` are matched by
/// owner rather than by name, as `catalog` says (a Deployment's ReplicaSets by template, a
/// DaemonSet's revisions by data, a ReplicaSet's pods by count), so that their creations are
/// never looked up by name.
pub fn matched_by_owner(catalog: &Catalog, owner_resource: &str, resource: &str) -> bool {
    matches!(
        catalog.dependents_of(owner_resource, resource),
        Some(DependentsMatch::Count | DependentsMatch::Template { .. } | DependentsMatch::Data)
    )
}

/// Whether the object decided on (`name`, and `uid` when known) was seen deleted at or after
/// `since`: a namesake seen since is another object.
pub fn seen_deleted(uid: Option<&str>, deleted: &[Deletion], since: Instant) -> bool {
    deleted
        .iter()
        .any(|deletion| deletion.at >= since && uid.is_none_or(|uid| uid == &*deletion.uid))
}

/// The owner's objects the cluster deleted at or after `since` that kcm-rs did not pick
/// (`picked`), in the order they were deleted: what it deleted instead.
pub fn deleted_instead(deleted: &[Deletion], picked: &[String], since: Instant) -> Vec<String> {
    let mut instead: Vec<&Deletion> = deleted
        .iter()
        .filter(|deletion| {
            deletion.at >= since && !picked.iter().any(|name| **name == *deletion.name)
        })
        .collect();
    instead.sort_by_key(|deletion| deletion.at);
    instead
        .into_iter()
        .map(|deletion| deletion.name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::catalog::of_every_controller;

    fn owner(resource: &str, name: &str) -> OwnerName {
        OwnerName {
            resource: resource.into(),
            name: name.into(),
            uid: None,
        }
    }

    fn template(image: &str, hash: &str) -> Value {
        json!({"metadata": {"labels": {"app": "web", "pod-template-hash": hash}},
               "spec": {"containers": [{"name": "c", "image": image}]}})
    }

    fn body(object: &Value) -> Arc<[u8]> {
        serde_json::to_vec(object).expect("encodes").into()
    }

    fn replica_set(name: &str, image: &str, hash: &str, replicas: i64) -> Value {
        json!({"metadata": {"name": name}, "spec": {"replicas": replicas, "template": template(image, hash)}})
    }

    #[test]
    fn identities_of_creates() {
        let catalog = of_every_controller();
        let deployment = owner("deployments", "web");
        let replica_set_owner = owner("replicasets", "web-1");
        let set = owner("statefulsets", "db");
        let daemon_set = owner("daemonsets", "agent");
        /// Case name, resource, created object, its owner, the rule expected.
        type Case<'a> = (&'a str, &'a str, Value, Option<&'a OwnerName>, Option<Rule>);
        let cases: [Case<'_>; 9] = [
            (
                "a Deployment's ReplicaSet by owner and template",
                "replicasets",
                replica_set("web-5fc8c76488", "nginx", "5fc8c76488", 3),
                Some(&deployment),
                Some(Rule::OwnerTemplate),
            ),
            (
                "a ReplicaSet's generated pod by owner and count",
                "pods",
                json!({"metadata": {"generateName": "web-1-"}}),
                Some(&replica_set_owner),
                Some(Rule::OwnerCount),
            ),
            (
                "a DaemonSet's revision by owner and data",
                "controllerrevisions",
                revision("agent-76dd9966c8", "nginx", 1),
                Some(&daemon_set),
                Some(Rule::OwnerData),
            ),
            (
                "a DaemonSet's generated pod by owner and count",
                "pods",
                json!({"metadata": {"generateName": "agent-"}}),
                Some(&daemon_set),
                Some(Rule::OwnerCount),
            ),
            (
                "a StatefulSet's revision by name",
                "controllerrevisions",
                revision("db-5d8f9c7b4", "nginx", 1),
                Some(&set),
                Some(Rule::Name),
            ),
            (
                "a StatefulSet's pod by name",
                "pods",
                json!({"metadata": {"name": "db-0"}}),
                Some(&set),
                Some(Rule::Name),
            ),
            (
                "a claim without owner by name",
                "persistentvolumeclaims",
                json!({"metadata": {"name": "data-db-0"}}),
                None,
                Some(Rule::Name),
            ),
            (
                "a ReplicaSet nobody owns by name",
                "replicasets",
                replica_set("rs", "nginx", "1", 1),
                None,
                Some(Rule::Name),
            ),
            (
                "a generated name without owner is not matched",
                "pods",
                json!({"metadata": {"generateName": "x-"}}),
                None,
                None,
            ),
        ];
        for (name, resource, object, owner, rule) in cases {
            assert_eq!(
                identity_of(&catalog, resource, &object, &body(&object), owner)
                    .map(|identity| identity.rule()),
                rule,
                "{name}"
            );
        }
        let created = replica_set("web-1", "nginx", "1", 3);
        let sent = body(&created);
        let Some(Identity::Template {
            replicas,
            created: kept,
        }) = identity_of(&catalog, "replicasets", &created, &sent, Some(&deployment))
        else {
            panic!("a template identity");
        };
        assert_eq!(replicas, "3");
        assert!(Arc::ptr_eq(&kept, &sent), "the write's bytes, not a copy");
    }

    /// A DaemonSet revision `name` of the template with `image`, numbered `number`.
    fn revision(name: &str, image: &str, number: i64) -> Value {
        json!({"metadata": {"name": name},
               "data": {"spec": {"template": {"$patch": "replace",
                   "spec": {"containers": [{"name": "c", "image": image}]}}}},
               "revision": number})
    }

    /// Upstream names a DaemonSet's revision after Go's template hash: kcm-rs's create is
    /// answered by the owner's revision with the same data, whatever its name, and its number
    /// is compared.
    #[test]
    fn created_daemon_set_revisions_are_found_by_data_whatever_their_name() {
        let t0 = Instant::now();
        let since = t0 + Duration::from_secs(1);
        let after = since + Duration::from_millis(10);
        let ours = revision("agent-76dd9966c8", "nginx:1.25", 3);
        let upstream = |name: &str, image: &str, number: i64, at: Instant| {
            created(name, at, Some(revision(name, image, number)))
        };
        let cases = [
            (
                "another name, same data and number",
                vec![upstream("agent-66586d966f", "nginx:1.25", 3, after)],
                Some(("agent-66586d966f", vec![])),
            ),
            (
                "same data, another number: that field",
                vec![upstream("agent-66586d966f", "nginx:1.25", 2, after)],
                Some((
                    "agent-66586d966f",
                    vec![FieldDiff {
                        field: "revision".to_owned(),
                        kcm_rs: "3".to_owned(),
                        cluster: "2".to_owned(),
                    }],
                )),
            ),
            (
                "other data only",
                vec![upstream("agent-69fbd69bb", "nginx:1.26", 3, after)],
                None,
            ),
            (
                "the same data created before the window",
                vec![upstream("agent-66586d966f", "nginx:1.25", 3, t0)],
                None,
            ),
            (
                "the first with the same data among others",
                vec![
                    upstream("agent-69fbd69bb", "nginx:1.26", 2, after),
                    upstream("agent-66586d966f", "nginx:1.25", 3, after),
                ],
                Some(("agent-66586d966f", vec![])),
            ),
        ];
        for (name, candidates, expected) in cases {
            let found = found_by_data(&ours["data"], "3", &candidates, since);
            assert_eq!(
                found.map(|found| (found.name, found.rule, found.diffs)),
                expected.map(|(name, diffs)| (name.to_owned(), Rule::OwnerData, diffs)),
                "{name}"
            );
        }
    }

    fn created(name: &str, at: Instant, object: Option<Value>) -> Creation {
        Creation {
            name: name.into(),
            uid: format!("uid-{name}"),
            at,
            object: object.map(Snapshot::of_json),
            claimed: false,
        }
    }

    #[test]
    fn created_replica_sets_are_found_by_template_ignoring_the_hash() {
        let Some(DependentsMatch::Template { equal }) =
            of_every_controller().dependents_of("deployments", "replicasets")
        else {
            panic!("a Deployment's ReplicaSets are matched by template");
        };
        let t0 = Instant::now();
        let since = t0 + Duration::from_secs(1);
        let after = since + Duration::from_millis(10);
        let wanted = body(&replica_set(
            "web-5fc8c76488",
            "nginx:1.26",
            "5fc8c76488",
            3,
        ));
        let upstream = |name: &str, image: &str, replicas: i64, at: Instant| {
            created(
                name,
                at,
                Some(replica_set(name, image, "6d8fb7bfdf", replicas)),
            )
        };
        let cases = [
            (
                "another hash, same template and replicas",
                vec![upstream("web-6d8fb7bfdf", "nginx:1.26", 3, after)],
                Some(("web-6d8fb7bfdf", vec![])),
            ),
            (
                "same template, created with other replicas: that field",
                vec![upstream("web-6d8fb7bfdf", "nginx:1.26", 2, after)],
                Some((
                    "web-6d8fb7bfdf",
                    vec![FieldDiff {
                        field: "spec.replicas".into(),
                        kcm_rs: "3".into(),
                        cluster: "2".into(),
                    }],
                )),
            ),
            (
                "another template",
                vec![upstream("web-6d8fb7bfdf", "nginx:1.25", 3, after)],
                None,
            ),
            (
                "created before the window",
                vec![upstream("web-6d8fb7bfdf", "nginx:1.26", 3, t0)],
                None,
            ),
            (
                "the matching one among others",
                vec![
                    upstream("web-old", "nginx:1.25", 0, after),
                    upstream("web-new", "nginx:1.26", 3, after),
                ],
                Some(("web-new", vec![])),
            ),
            ("nothing created", vec![], None),
        ];
        for (name, creations, expected) in cases {
            let found = found_by_template(equal, &wanted, "3", &creations, since);
            let expected = expected.map(|(object, diffs)| Found {
                name: object.into(),
                rule: Rule::OwnerTemplate,
                diffs,
            });
            assert_eq!(found, expected, "{name}");
        }
    }

    #[test]
    fn named_objects_are_found_live_or_seen_created() {
        let t0 = Instant::now();
        let since = t0 + Duration::from_secs(1);
        let later = since + Duration::from_secs(1);
        let cases = [
            ("in the cache", true, vec![], true),
            (
                "created and deleted since (a namespace teardown)",
                false,
                vec![created("data-web-2", later, None)],
                true,
            ),
            (
                "created before the decision's window, gone since",
                false,
                vec![created("data-web-2", t0, None)],
                false,
            ),
            ("never created", false, vec![], false),
        ];
        for (name, live, creations, found) in cases {
            assert_eq!(
                found_by_name("data-web-2", live, &creations, since).is_some(),
                found,
                "{name}"
            );
        }
    }

    #[test]
    fn generated_pods_are_claimed_once_oldest_first() {
        let t0 = Instant::now();
        let since = t0 + Duration::from_secs(1);
        let first = since + Duration::from_millis(1);
        let second = since + Duration::from_millis(2);
        let mut creations = vec![
            created("web-1-b", second, None),
            created("web-1-a", first, None),
            created("web-1-z", t0, None),
        ];
        let mut claimed = Vec::new();
        while let Some(index) = claimable(&creations, since) {
            creations[index].claimed = true;
            claimed.push(creations[index].name.clone());
        }
        assert_eq!(
            claimed,
            ["web-1-a", "web-1-b"],
            "oldest first, each once, none before the window"
        );
    }

    #[test]
    fn objects_of_deployments_replica_sets_and_daemon_sets_are_matched_by_owner() {
        let catalog = of_every_controller();
        let by_owner = [
            ("deployments", "replicasets", true),
            ("replicasets", "pods", true),
            ("daemonsets", "pods", true),
            ("daemonsets", "controllerrevisions", true),
            ("statefulsets", "pods", false),
            ("statefulsets", "controllerrevisions", false),
            ("deployments", "pods", false),
        ];
        for (owner, resource, expected) in by_owner {
            assert_eq!(
                matched_by_owner(&catalog, owner, resource),
                expected,
                "{resource} of {owner}"
            );
        }
    }

    #[test]
    fn deletions_seen_and_deleted_instead() {
        let t0 = Instant::now();
        let since = t0 + Duration::from_secs(1);
        let deletion = |name: &str, uid: &str, at: Instant| Deletion {
            name: name.into(),
            uid: uid.into(),
            at,
        };
        let later = since + Duration::from_millis(5);
        let seen = [
            (
                "deleted, UID known",
                Some("u1"),
                vec![deletion("web-1", "u1", later)],
                true,
            ),
            (
                "deleted, UID unknown",
                None,
                vec![deletion("web-1", "u1", later)],
                true,
            ),
            (
                "another object of that name deleted",
                Some("u1"),
                vec![deletion("web-1", "u0", later)],
                false,
            ),
            (
                "deleted before the window",
                Some("u1"),
                vec![deletion("web-1", "u1", t0)],
                false,
            ),
        ];
        for (name, uid, deleted, expected) in seen {
            assert_eq!(seen_deleted(uid, &deleted, since), expected, "{name}");
        }

        let deleted = vec![
            deletion("rs-c", "3", later + Duration::from_millis(1)),
            deletion("rs-a", "1", later),
            deletion("rs-b", "2", later),
            deletion("rs-old", "0", t0),
        ];
        assert_eq!(
            deleted_instead(&deleted, &["rs-a".into()], since),
            vec!["rs-b".to_owned(), "rs-c".to_owned()]
        );
        assert!(
            deleted_instead(
                &deleted,
                &["rs-a".into(), "rs-b".into(), "rs-c".into()],
                since
            )
            .is_empty()
        );
    }
}
