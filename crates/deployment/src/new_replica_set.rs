//! getAllReplicaSetsAndSyncRevision as pure steps: bringing an existing new
//! ReplicaSet's annotations up to date, building the ReplicaSet to create, resolving a name
//! conflict (hash collision), and what to write on the Deployment afterwards.
//!
//! The controller sequences them: split the ReplicaSets (`template::split_replica_sets`);
//! with a new one, [`sync_existing_new_replica_set`]; without one and when creating,
//! [`build_new_replica_set`], POST it, then on AlreadyExists [`resolve_create_conflict`] on
//! the lister's copy, on another error (not NamespaceTerminating) [`create_failed`], and on
//! success (or reuse) [`after_create`].

use controller_toolkit::controller_ref::{gvk_of, new_controller_ref};

use std::collections::BTreeMap;

use informer::{
    CachedDeployment, CachedReplicaSet, CachedReplicaSetSpec, CompactLabelSelector,
    CompactPodTemplate,
};

use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

use crate::annotations::{annotation, set_new_replica_set_annotations};
use crate::conditions::{get_condition, new_condition, set_condition};
use crate::constants::{
    CONDITION_PROGRESSING, POD_TEMPLATE_HASH_LABEL, REASON_FAILED_RS_CREATE, REASON_FOUND_NEW_RS,
    REASON_NEW_REPLICA_SET, REVISION_ANNOTATION,
};
use crate::error::Error;
use crate::events::{self, Event};
use crate::progress::has_progress_deadline;
use crate::replica_set::{deployment_name, rs_name, rs_spec_replicas};
use crate::revision::max_revision;
use crate::rollout_limits::new_rs_new_replicas;
use crate::template::{TemplateMatcher, deployment_template, pod_template_hash};

/// The revision the new ReplicaSet gets: MaxRevision(old) + 1, in decimal.
pub fn new_revision(old: &[&CachedReplicaSet]) -> String {
    max_revision(old.iter().copied())
        .wrapping_add(1)
        .to_string()
}

fn min_ready_seconds(d: &CachedDeployment) -> Option<i32> {
    d.spec.as_ref().and_then(|spec| spec.min_ready_seconds)
}

/// What to write for an existing new ReplicaSet.
#[derive(Debug, Clone, PartialEq)]
pub enum ExistingNewReplicaSet {
    /// Annotations or minReadySeconds changed: PUT this ReplicaSet and use the response as the
    /// new ReplicaSet; nothing else happens in this call.
    UpdateReplicaSet(CachedReplicaSet),
    /// PUT this Deployment through the *status* endpoint (revision annotation and/or the
    /// FoundNewReplicaSet condition); continue with the response.
    UpdateDeploymentStatus(CachedDeployment),
    /// Nothing to write.
    Unchanged,
}

/// getNewReplicaSet with an existing new ReplicaSet: bring its annotations and
/// minReadySeconds up to date, else the Deployment's revision annotation and Progressing
/// condition.
pub fn sync_existing_new_replica_set(
    d: &CachedDeployment,
    new_rs: &CachedReplicaSet,
    old: &[&CachedReplicaSet],
    now: Timestamp,
) -> ExistingNewReplicaSet {
    let revision = new_revision(old);
    let mut copy = new_rs.clone();
    let annotations_updated = set_new_replica_set_annotations(d, &mut copy, &revision, true);
    let rs_min_ready = copy.spec.as_ref().and_then(|spec| spec.min_ready_seconds);
    if annotations_updated || rs_min_ready.unwrap_or(0) != min_ready_seconds(d).unwrap_or(0) {
        copy.spec
            .get_or_insert_with(Default::default)
            .min_ready_seconds = min_ready_seconds(d);
        return ExistingNewReplicaSet::UpdateReplicaSet(copy);
    }
    let rs_revision = annotation(&copy.metadata.annotations, REVISION_ANNOTATION);
    let without_progressing = get_condition(d.status.as_ref(), CONDITION_PROGRESSING).is_none();
    let found = (has_progress_deadline(d) && without_progressing).then(|| {
        let message = format!("Found new replica set {:?}", rs_name(&copy));
        new_condition(
            CONDITION_PROGRESSING,
            "True",
            REASON_FOUND_NEW_RS,
            message,
            now,
        )
    });
    match with_revision(d, rs_revision, found) {
        Some(updated) => ExistingNewReplicaSet::UpdateDeploymentStatus(updated),
        None => ExistingNewReplicaSet::Unchanged,
    }
}

/// The Deployment with its revision annotation set to `revision` and, if given, the
/// Progressing condition; `None` when neither changes it.
fn with_revision(
    d: &CachedDeployment,
    revision: &str,
    progressing: Option<DeploymentCondition>,
) -> Option<CachedDeployment> {
    let mut updated = d.clone();
    let mut changed = set_deployment_revision(&mut updated, revision);
    if let Some(condition) = progressing {
        let status = updated.status.get_or_insert_with(Default::default);
        set_condition(status, condition);
        changed = true;
    }
    changed.then_some(updated)
}

/// SetDeploymentRevision: sets the Deployment's revision annotation; whether it changed.
pub fn set_deployment_revision(d: &mut CachedDeployment, revision: &str) -> bool {
    if annotation(&d.metadata.annotations, REVISION_ANNOTATION) == revision {
        return false;
    }
    d.metadata.annotations.edit(|annotations| {
        annotations.insert(REVISION_ANNOTATION.to_owned(), revision.to_owned())
    });
    true
}

/// Longest object name the API server accepts (a DNS-1123 subdomain).
const MAX_NAME_LENGTH: usize = 253;

/// generateReplicaSetName (v1.34, kubernetes#132560): `<deployment>-<hash>`, the Deployment's
/// name cut so the result fits in 253 characters. Without the cut a Deployment named with
/// more than ~242 characters could never get a ReplicaSet.
pub fn replica_set_name(deployment: &str, hash: &str) -> String {
    let room = MAX_NAME_LENGTH.saturating_sub(1 + hash.len());
    // Names are DNS subdomains (ASCII); the boundary search keeps odd input from panicking.
    let cut = (0..=room.min(deployment.len()))
        .rev()
        .find(|index| deployment.is_char_boundary(*index))
        .unwrap_or(0);
    format!("{}-{hash}", &deployment[..cut])
}

/// getNewReplicaSet, creating: the ReplicaSet to POST: `<name>-<hash>`, hash label in labels, selector
/// and template, a controller reference to the Deployment, size from NewRSNewReplicas, and
/// the revision and desired/max annotations.
pub fn build_new_replica_set(
    d: &CachedDeployment,
    old: &[&CachedReplicaSet],
) -> Result<CachedReplicaSet, Error> {
    let required =
        |value: &Option<String>, field| value.clone().ok_or(Error::MissingDeploymentField(field));
    let name = required(&d.metadata.name, "name")?;
    // The controller reference needs it.
    required(&d.metadata.uid, "uid")?;
    let spec = d.spec.clone().unwrap_or_default();
    let collision_count = d.status.as_ref().and_then(|status| status.collision_count);
    let mut template = deployment_template(d);
    let hash = pod_template_hash(&template, collision_count);

    let labels = template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(BTreeMap::new);
    labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());
    let labels = labels.clone();
    let mut selector = spec.selector.decode();
    selector
        .match_labels
        .get_or_insert_with(BTreeMap::new)
        .insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.clone());

    let mut rs = CachedReplicaSet {
        metadata: ObjectMeta {
            name: Some(replica_set_name(&name, &hash)),
            namespace: d.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![new_controller_ref(d, &gvk_of::<CachedDeployment>())]),
            ..Default::default()
        }
        .into(),
        spec: Some(CachedReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: spec.min_ready_seconds,
            selector: CompactLabelSelector::encode(&selector)?,
            template: Some(CompactPodTemplate::encode(&template)?),
        }),
        status: None,
    };
    let all: Vec<&CachedReplicaSet> = old.iter().copied().chain([&rs]).collect();
    let replicas = new_rs_new_replicas(d, &all, &rs)?;
    if let Some(rs_spec) = rs.spec.as_mut() {
        rs_spec.replicas = Some(replicas);
    }
    set_new_replica_set_annotations(d, &mut rs, &new_revision(old), false);
    Ok(rs)
}

/// How to treat an AlreadyExists answer to the POST.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateConflict {
    /// The existing ReplicaSet is ours and has our template: use it as the new ReplicaSet
    /// (no event, no NewReplicaSetCreated condition).
    UseExisting,
    /// A hash collision: PUT this status (collisionCount + 1), then return the AlreadyExists
    /// error so the key is retried with the new count.
    Collision(DeploymentStatus),
}

/// AlreadyExists: `existing` is the lister's ReplicaSet of that name.
pub fn resolve_create_conflict(
    d: &CachedDeployment,
    existing: &CachedReplicaSet,
) -> CreateConflict {
    let controlled_by_us = existing
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|reference| reference.controller == Some(true))
        .is_some_and(|reference| Some(&reference.uid) == d.metadata.uid.as_ref());
    if controlled_by_us && TemplateMatcher::of(d).matches(existing) {
        return CreateConflict::UseExisting;
    }
    let mut status = d.status.clone().unwrap_or_default();
    status.collision_count = Some(status.collision_count.unwrap_or(0).wrapping_add(1));
    tracing::debug!(
        deployment = deployment_name(d),
        replica_set = rs_name(existing),
        collision_count = status.collision_count,
        "found a hash collision; bumping collisionCount"
    );
    CreateConflict::Collision(status)
}

/// What to do after a failed POST other than AlreadyExists and NamespaceTerminating.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFailure {
    /// Status to PUT (error ignored) when a progress deadline is set: Progressing=False
    /// `ReplicaSetCreateError`.
    pub status: Option<DeploymentStatus>,
    /// Warning `ReplicaSetCreateError` to record.
    pub event: Event,
}

/// getNewReplicaSet after a failed POST (not AlreadyExists, not NamespaceTerminating): the
/// ReplicaSetCreateError condition and event.
pub fn create_failed(
    d: &CachedDeployment,
    rs_name: &str,
    error: &str,
    now: Timestamp,
) -> CreateFailure {
    let status = has_progress_deadline(d).then(|| {
        let mut status = d.status.clone().unwrap_or_default();
        let condition = new_condition(
            CONDITION_PROGRESSING,
            "False",
            REASON_FAILED_RS_CREATE,
            events::replica_set_create_error_message(rs_name, error),
            now,
        );
        set_condition(&mut status, condition);
        status
    });
    CreateFailure {
        status,
        event: events::replica_set_create_error(rs_name, error),
    }
}

/// What to do once the new ReplicaSet exists.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterCreate {
    /// `ScalingReplicaSet` `Scaled up replica set <rs> to <n>` when really created with n > 0.
    pub event: Option<Event>,
    /// Deployment to PUT through the status endpoint (revision annotation, and
    /// NewReplicaSetCreated when really created with a deadline); `None` when unchanged.
    pub update: Option<CachedDeployment>,
}

/// getNewReplicaSet after the POST. `planned` is the ReplicaSet from [`build_new_replica_set`];
/// `created` is false when an existing ReplicaSet was reused after AlreadyExists.
pub fn after_create(
    d: &CachedDeployment,
    planned: &CachedReplicaSet,
    old: &[&CachedReplicaSet],
    created: bool,
    now: Timestamp,
) -> AfterCreate {
    let replicas = rs_spec_replicas(planned);
    let event = (created && replicas > 0)
        .then(|| events::scaled_up_on_creation(rs_name(planned), replicas));
    let created_condition = (created && has_progress_deadline(d)).then(|| {
        let message = format!("Created new replica set {:?}", rs_name(planned));
        new_condition(
            CONDITION_PROGRESSING,
            "True",
            REASON_NEW_REPLICA_SET,
            message,
            now,
        )
    });
    AfterCreate {
        event,
        update: with_revision(d, &new_revision(old), created_condition),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::conditions::reason;
    use crate::constants::{
        DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION, REVISION_HISTORY_ANNOTATION,
    };
    use crate::replica_set::test_support::{annotate, at, compact, pct, rolling, rs, template};
    use crate::template::{equal_ignore_hash, split_replica_sets, without_hash_label};

    fn ann<'a>(meta: &'a informer::WorkloadMetadata, key: &str) -> Option<&'a str> {
        meta.annotations.get(key)
    }

    #[test]
    fn built_replica_set_matches_upstream_shape() {
        let mut d = rolling(10, pct("25%"), pct("25%"));
        d.metadata.annotations = BTreeMap::from([("team".to_owned(), "a".to_owned())]).into();
        let old = annotate(rs("web-old", 0, 10, 10), REVISION_ANNOTATION, "4");
        let built = build_new_replica_set(&d, &[&old]).expect("built");
        let hash = pod_template_hash(&deployment_template(&d), None);
        assert_eq!(built.metadata.name, Some(format!("web-{hash}")));
        assert_eq!(built.metadata.namespace.as_deref(), Some("default"));
        let labels = &built.metadata.labels;
        assert_eq!(labels.get(POD_TEMPLATE_HASH_LABEL), Some(hash.as_str()));
        assert_eq!(labels.get("app"), Some("web"));
        let spec = built.spec.clone().expect("spec");
        assert_eq!(
            spec.selector
                .decode()
                .match_labels
                .as_ref()
                .and_then(|m| m.get(POD_TEMPLATE_HASH_LABEL)),
            Some(&hash)
        );
        let template = spec.template.as_ref().expect("template").decode();
        assert_eq!(
            template.metadata.as_ref().and_then(|m| m.labels.clone()),
            Some(labels.to_map())
        );
        assert!(equal_ignore_hash(&template, &deployment_template(&d)));
        // maxTotal 13, current 10 -> min(3, 10) = 3.
        assert_eq!(spec.replicas, Some(3));
        let owner = &built.metadata.owner_references.clone().expect("owner")[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.uid.as_str(),
                owner.controller,
                owner.block_owner_deletion
            ),
            ("Deployment", "d-uid", Some(true), Some(true))
        );
        assert_eq!(ann(&built.metadata, REVISION_ANNOTATION), Some("5"));
        assert_eq!(
            ann(&built.metadata, DESIRED_REPLICAS_ANNOTATION),
            Some("10")
        );
        assert_eq!(ann(&built.metadata, MAX_REPLICAS_ANNOTATION), Some("13"));
        assert_eq!(ann(&built.metadata, "team"), Some("a"));
        // The built RS is recognized as new once it exists.
        let split = split_replica_sets(&d, &[&old, &built]);
        assert_eq!(split.new.map(rs_name), built.metadata.name.as_deref());
        // A collision count changes the name.
        d.status = Some(DeploymentStatus {
            collision_count: Some(1),
            ..Default::default()
        });
        let renamed = build_new_replica_set(&d, &[&old]).expect("built");
        assert_ne!(renamed.metadata.name, built.metadata.name);
    }

    #[test]
    fn long_deployment_names_are_cut_to_fit_the_replica_set_name() {
        // (deployment name length, hash, want name length, want prefix length)
        let cases = [
            (3, "5d4f8c7b9", 13, 3),
            (242, "5d4f8c7b9", 252, 242),
            (243, "5d4f8c7b9", 253, 243),
            (253, "5d4f8c7b9", 253, 243),
            (253, "5d4f8c7b9x", 253, 242),
            (253, "", 253, 252),
        ];
        for (length, hash, want_length, want_prefix) in cases {
            let deployment = "d".repeat(length);
            let name = replica_set_name(&deployment, hash);
            assert_eq!(name.len(), want_length, "{length} {hash}");
            assert_eq!(name, format!("{}-{hash}", &deployment[..want_prefix]));
        }
        // Odd input (not a valid name) is cut at a character boundary instead of panicking.
        let wide = "é".repeat(200);
        assert!(replica_set_name(&wide, "abc").len() <= 253);

        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        d.metadata.name = Some("w".repeat(253));
        let built = build_new_replica_set(&d, &[]).expect("built");
        let name = built.metadata.name.clone().expect("name");
        assert_eq!(name.len(), 253);
        let owner = &built.metadata.owner_references.clone().expect("owner")[0];
        assert_eq!(
            owner.name.len(),
            253,
            "the owner reference keeps the full name"
        );
    }

    #[test]
    fn existing_new_replica_set_sync_steps() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let old = annotate(rs("web-old", 0, 0, 0), REVISION_ANNOTATION, "3");
        // Reused template at revision 1: moves to 4, history "1".
        let reused = annotate(rs("web-new", 1, 3, 3), REVISION_ANNOTATION, "1");
        match sync_existing_new_replica_set(&d, &reused, &[&old], at(0)) {
            ExistingNewReplicaSet::UpdateReplicaSet(updated) => {
                assert_eq!(ann(&updated.metadata, REVISION_ANNOTATION), Some("4"));
                assert_eq!(
                    ann(&updated.metadata, REVISION_HISTORY_ANNOTATION),
                    Some("1")
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        // minReadySeconds differs.
        let mut slow = d.clone();
        if let Some(spec) = slow.spec.as_mut() {
            spec.min_ready_seconds = Some(5);
        }
        let current = annotate(rs("web-new", 1, 3, 3), REVISION_ANNOTATION, "4");
        match sync_existing_new_replica_set(&slow, &current, &[&old], at(0)) {
            ExistingNewReplicaSet::UpdateReplicaSet(updated) => {
                assert_eq!(updated.spec.and_then(|s| s.min_ready_seconds), Some(5));
            }
            other => panic!("unexpected {other:?}"),
        }
        // RS current: the Deployment gets the revision and FoundNewReplicaSet.
        match sync_existing_new_replica_set(&d, &current, &[&old], at(0)) {
            ExistingNewReplicaSet::UpdateDeploymentStatus(updated) => {
                assert_eq!(ann(&updated.metadata, REVISION_ANNOTATION), Some("4"));
                let c = get_condition(updated.status.as_ref(), CONDITION_PROGRESSING).expect("set");
                assert_eq!(reason(c), REASON_FOUND_NEW_RS);
                assert_eq!(
                    c.message.as_deref(),
                    Some("Found new replica set \"web-new\"")
                );
                // Once stored, nothing more.
                assert_eq!(
                    sync_existing_new_replica_set(&updated, &current, &[&old], at(5)),
                    ExistingNewReplicaSet::Unchanged
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn create_conflict_table() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let mut ours = build_new_replica_set(&d, &[]).expect("built");
        assert_eq!(
            resolve_create_conflict(&d, &ours),
            CreateConflict::UseExisting
        );
        let mut foreign = ours.clone();
        if let Some(refs) = foreign.metadata.owner_references.as_mut() {
            refs[0].uid = "other".to_owned();
        }
        assert_eq!(
            resolve_create_conflict(&d, &foreign),
            CreateConflict::Collision(DeploymentStatus {
                collision_count: Some(1),
                ..Default::default()
            })
        );
        if let Some(spec) = ours.spec.as_mut() {
            spec.template = Some(compact(&without_hash_label(&template("other"))));
        }
        let mut counted = d.clone();
        counted.status = Some(DeploymentStatus {
            collision_count: Some(4),
            ..Default::default()
        });
        assert_eq!(
            resolve_create_conflict(&counted, &ours),
            CreateConflict::Collision(DeploymentStatus {
                collision_count: Some(5),
                ..Default::default()
            })
        );
    }

    #[test]
    fn create_failure_and_after_create() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let failure = create_failed(&d, "web-x", "quota exceeded", at(1));
        assert_eq!(
            failure.event.message,
            "Failed to create new replica set \"web-x\": quota exceeded"
        );
        let c = get_condition(failure.status.as_ref(), CONDITION_PROGRESSING).expect("set");
        assert_eq!(
            (c.status.as_str(), reason(c)),
            ("False", REASON_FAILED_RS_CREATE)
        );

        let planned = build_new_replica_set(&d, &[]).expect("built");
        let done = after_create(&d, &planned, &[], true, at(2));
        assert_eq!(
            done.event.map(|e| e.message),
            Some(format!("Scaled up replica set {} to 3", rs_name(&planned)))
        );
        let updated = done.update.expect("status write");
        assert_eq!(ann(&updated.metadata, REVISION_ANNOTATION), Some("1"));
        let c = get_condition(updated.status.as_ref(), CONDITION_PROGRESSING).expect("set");
        assert_eq!(reason(c), REASON_NEW_REPLICA_SET);
        // Reused after AlreadyExists: no event, no condition; revision only.
        let reused = after_create(&updated, &planned, &[], false, at(3));
        assert_eq!(
            reused,
            AfterCreate {
                event: None,
                update: None
            }
        );
    }
}
