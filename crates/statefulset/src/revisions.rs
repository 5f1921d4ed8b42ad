//! Revision management against the API server: choosing or
//! creating the update revision with the history crate, renumbering on rollback, and
//! truncating old revisions.

use std::sync::Arc;

use controller_toolkit::{
    api_errors::{is_already_exists, is_conflict, is_not_found},
    writes::Writer,
};
use history::{
    NameConflict, RevisionCreation, SemanticComparisonCache, UpdateRevisionChoice,
    choose_update_revision, create_request_body, live_revision_names, new_statefulset_revision,
    next_revision, revisions_to_truncate,
};
use informer::CachedPod;
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::Api;

use crate::{controller::RawStatefulSet, identity::pod_revision};

/// Why revisions could not be determined or written.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The revision could not be built or applied (malformed set or revision data).
    #[error("building revision: {0}")]
    History(#[from] history::Error),
    /// An API request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// The outcome of upstream `getStatefulSetRevisions`.
#[derive(Debug, Clone)]
pub struct SetRevisions {
    /// The revision the set's status names as current (or the update revision).
    pub current: Arc<ControllerRevision>,
    /// The revision matching the set's template now.
    pub update: Arc<ControllerRevision>,
    /// `status.collisionCount` after a possible name collision.
    pub collision_count: i32,
}

/// Upstream `getStatefulSetRevisions` over `sorted` (the set's revisions, sorted).
pub async fn resolve(
    writer: &Writer,
    semantic: &SemanticComparisonCache,
    set: &RawStatefulSet,
    sorted: &[Arc<ControllerRevision>],
) -> Result<SetRevisions, RevisionError> {
    let status = set.object.status.as_ref();
    let mut collision_count = status.and_then(|s| s.collision_count).unwrap_or(0);
    let proposal = new_statefulset_revision(&set.raw, next_revision(sorted), collision_count)?;
    let mut choice = choose_update_revision(&set.raw, sorted, &proposal, false);
    if choice == UpdateRevisionChoice::Create
        && let Some(latest) = sorted.last()
        && semantic.latest_revision_is_semantically_current(&set.raw, latest, &proposal)
    {
        choice = UpdateRevisionChoice::LatestSemanticallyEqual;
    }
    let namespace = set.object.metadata.namespace.clone().unwrap_or_default();
    let name = set.object.metadata.name.clone().unwrap_or_default();
    let update = match (choice, sorted.last()) {
        (
            UpdateRevisionChoice::Latest | UpdateRevisionChoice::LatestSemanticallyEqual,
            Some(latest),
        ) => latest.clone(),
        (UpdateRevisionChoice::Renumber { index, revision }, _) if index < sorted.len() => {
            Arc::new(renumber(writer, &sorted[index], revision).await?)
        }
        _ => {
            let (created, count) =
                create(writer, proposal, &namespace, &name, collision_count).await?;
            collision_count = count;
            Arc::new(created)
        }
    };
    let current_name = status.and_then(|s| s.current_revision.as_deref());
    let current = sorted
        .iter()
        .find(|revision| {
            revision.metadata.name.as_deref() == current_name && current_name.is_some()
        })
        .cloned()
        .unwrap_or_else(|| update.clone());
    Ok(SetRevisions {
        current,
        update,
        collision_count,
    })
}

fn api(writer: &Writer, namespace: &str) -> Api<ControllerRevision> {
    Api::namespaced(writer.client().clone(), namespace)
}

/// PUT the revision with a new number, retrying conflicts with a fresh read.
async fn renumber(
    writer: &Writer,
    revision: &ControllerRevision,
    number: i64,
) -> Result<ControllerRevision, kube::Error> {
    let api = api(
        writer,
        revision.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let name = revision.metadata.name.clone().unwrap_or_default();
    let mut copy = revision.clone();
    let mut attempts = 4;
    loop {
        if copy.revision == number {
            return Ok(copy);
        }
        copy.revision = number;
        match writer.update(&copy, "renumber revision").await {
            Ok(updated) => return Ok(updated),
            Err(error) if is_conflict(&error) && attempts > 1 => {
                attempts -= 1;
                copy = api.get(&name).await?;
            }
            Err(error) => return Err(error),
        }
    }
}

/// create with the collision loop, POSTing Go's bytes for the data.
async fn create(
    writer: &Writer,
    proposal: ControllerRevision,
    namespace: &str,
    set_name: &str,
    collision_count: i32,
) -> Result<(ControllerRevision, i32), RevisionError> {
    let api = api(writer, namespace);
    let mut creation = RevisionCreation::new(proposal, namespace, set_name, collision_count)?;
    loop {
        let candidate = creation.candidate();
        let body = create_request_body(&candidate)?;
        match writer
            .create_exact(&candidate, body, "create revision")
            .await
        {
            Ok(created) => return Ok((created, creation.collision_count())),
            Err(error) if is_already_exists(&error) => {
                let name = candidate.metadata.name.clone().unwrap_or_default();
                let existing = api.get(&name).await?;
                if creation.on_already_exists(&existing) == NameConflict::ReuseExisting {
                    return Ok((existing, creation.collision_count()));
                }
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// delete the oldest non-live revisions beyond `revisionHistoryLimit`; stops at the first
/// failed delete.
pub async fn truncate(
    writer: &Writer,
    sorted: &[Arc<ControllerRevision>],
    revisions: &SetRevisions,
    pods: &[Arc<CachedPod>],
    history_limit: i32,
) -> Result<(), kube::Error> {
    let live = live_revision_names(
        &revisions.current,
        &revisions.update,
        pods.iter().map(|pod| pod_revision(pod)),
    );
    for revision in revisions_to_truncate(sorted, &live, history_limit) {
        let name = revision.metadata.name.clone().unwrap_or_default();
        tracing::debug!(revision = %name, "truncating revision history");
        match writer
            .delete::<ControllerRevision>(&revision.metadata, false, "truncate history")
            .await
        {
            Ok(_) => {}
            Err(error) if is_not_found(&error) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}
