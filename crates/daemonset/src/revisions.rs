//! The DaemonSet's ControllerRevisions against the API server (upstream `constructHistory`,
//! `controlledHistories`, `snapshot`, `dedupCurHistories`, `cleanupHistory`): the decisions
//! are `decide::revision`'s, the requests are made here.
//!
//! The current revision is the one whose data bytes equal the DaemonSet's (`Match`), so a
//! revision upstream wrote for the same template is taken over as is and no pod is restarted;
//! its hash label is the hash new pods are labelled with.

use std::sync::Arc;

use controller_toolkit::{api_errors::is_already_exists, controller_ref::ClaimErrors};
use history::create_request_body;
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, DaemonSet},
    core::v1::Pod,
};
use kube::Api;

use crate::{
    controller::{Claims, DaemonSetSync, RawDaemonSet, SyncContext, SyncError},
    decide::{
        revision::{
            CurrentRevision, choose_current, matches, new_revision, next_revision_number,
            pods_to_relabel, relabel_patch, revision_data_bytes_of, revision_hash_label,
            revisions_to_clean_up, split_current_and_old, with_legacy_hash_label,
        },
        spec::{collision_count, name, namespace},
    },
};

/// Why the revisions could not be determined or written.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// The selector does not parse.
    #[error("{0}")]
    Selector(String),
    /// Claiming the revisions (or, to relabel them, the pods) failed.
    #[error(transparent)]
    Claim(#[from] ClaimErrors),
    /// The revision data could not be built.
    #[error(transparent)]
    History(#[from] history::Error),
    /// An API request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// A revision of another template holds the name, and the cached collision count is not
    /// the stored one: hashing again once the cache has caught up may resolve it.
    #[error(
        "found a stale collision count ({cached}, expected {stored}) of DaemonSet {name:?} while processing; will retry until it is updated"
    )]
    StaleCollisionCount {
        /// The DaemonSet's name.
        name: String,
        /// The cached `status.collisionCount`.
        cached: String,
        /// The stored one.
        stored: String,
    },
}

/// What `constructHistory` hands to the rest of the sync.
pub(crate) struct History {
    /// The current revision's `controller-revision-hash` label.
    pub(crate) hash: String,
    /// The other revisions of the DaemonSet.
    pub(crate) old: Vec<Arc<ControllerRevision>>,
}

/// `%d` of an optional count, as upstream's message shows it (`<nil>` when unset).
fn shown(count: Option<i32>) -> String {
    count.map_or_else(|| "<nil>".to_owned(), |count| count.to_string())
}

impl DaemonSetSync {
    /// upstream `constructHistory`: the claimed revisions (legacy ones labelled with their own
    /// name first), split into current and old by their data bytes; no current one is
    /// created (`snapshot`), several are deduplicated, and the current one is renumbered
    /// above every old one.
    pub(crate) async fn construct_history(
        &self,
        key: &str,
        ds: &RawDaemonSet,
        claims: &Claims,
    ) -> Result<History, SyncError> {
        let candidates = self.revisions.controlled_by_or_orphaned(&ds.object);
        // kcm-rs: a revision we created and the cache lacks would be POSTed again only to
        // meet AlreadyExists; wait for it instead.
        self.count_stale_skip(
            self.revisions_created
                .check(key, candidates.iter().map(|revision| &revision.metadata)),
        )?;
        self.current_and_old(ds, claims, &candidates)
            .await
            .map_err(SyncError::ConstructHistory)
    }

    async fn current_and_old(
        &self,
        ds: &RawDaemonSet,
        claims: &Claims,
        candidates: &[Arc<ControllerRevision>],
    ) -> Result<History, RevisionError> {
        // upstream `controlledHistories`.
        let claimed = claims.manager.claim(candidates).await.into_result()?;
        let mut revisions = Vec::with_capacity(claimed.len());
        for revision in claimed {
            match with_legacy_hash_label(&revision) {
                Some(labelled) => revisions.push(Arc::new(
                    self.writer
                        .update(&labelled, "label legacy revision")
                        .await?,
                )),
                None => revisions.push(revision),
            }
        }
        let data = revision_data_bytes_of(&ds.raw)?;
        let (current, old) = split_current_and_old(&data, &revisions);
        let (current, old): (Vec<_>, Vec<_>) = (
            current.into_iter().cloned().collect(),
            old.into_iter().cloned().collect(),
        );
        let next = next_revision_number(&old);
        let current = match choose_current(&current, next) {
            CurrentRevision::Create { revision } => self.snapshot(ds, &data, revision).await?,
            CurrentRevision::Existing {
                keep,
                duplicates,
                renumber_to,
            } => {
                let kept = Arc::clone(&current[keep]);
                for duplicate in duplicates {
                    self.remove_duplicate(ds, claims, &kept, &current[duplicate])
                        .await?;
                }
                if let Some(number) = renumber_to {
                    let mut renumbered = kept.as_ref().clone();
                    renumbered.revision = number;
                    self.writer.update(&renumbered, "renumber revision").await?;
                }
                kept
            }
        };
        Ok(History {
            hash: revision_hash_label(&current).to_owned(),
            old,
        })
    }

    /// upstream `dedupCurHistories`, for one duplicate of the kept revision: every claimed pod
    /// labelled otherwise is relabelled with the kept hash (a JSON merge patch), then the
    /// duplicate is deleted.
    async fn remove_duplicate(
        &self,
        ds: &RawDaemonSet,
        claims: &Claims,
        kept: &ControllerRevision,
        duplicate: &ControllerRevision,
    ) -> Result<(), RevisionError> {
        let hash = revision_hash_label(kept);
        let pods = self.daemon_pods(ds, claims).await?;
        for pod_key in pods_to_relabel(&pods, hash) {
            let pod_name = pod_key.rsplit('/').next().unwrap_or_default();
            self.writer
                .merge_patch::<Pod>(
                    namespace(&ds.object),
                    pod_name,
                    relabel_patch(hash)?,
                    "relabel pod",
                )
                .await?;
        }
        self.writer
            .delete::<ControllerRevision>(&duplicate.metadata, false, "dedup revision")
            .await?;
        Ok(())
    }

    /// upstream `snapshot`: creates the revision of the current template, numbered
    /// `revision` (its data sent as Go's bytes). Its name taken: by the same data, that one
    /// is the revision; by other data, a hash collision: the stored `collisionCount` is
    /// raised (unless the cached one was stale) and the AlreadyExists returned, so the next
    /// sync hashes with the new count.
    async fn snapshot(
        &self,
        ds: &RawDaemonSet,
        data: &[u8],
        revision: i64,
    ) -> Result<Arc<ControllerRevision>, RevisionError> {
        let proposal = new_revision(&ds.object, &ds.raw, revision)?;
        let body = create_request_body(&proposal)?;
        let error = match self
            .writer
            .create_exact(&proposal, body, "create revision")
            .await
        {
            Ok(created) => {
                self.revisions_created
                    .record(&informer::object_key(&ds.object), &created.metadata);
                return Ok(Arc::new(created));
            }
            Err(error) if is_already_exists(&error) => error,
            Err(error) => return Err(error.into()),
        };
        let revision_name = proposal.metadata.name.clone().unwrap_or_default();
        tracing::debug!(revision = %revision_name, "name collision for a DaemonSet revision");
        let revisions: Api<ControllerRevision> =
            Api::namespaced(self.writer.client().clone(), namespace(&ds.object));
        let existing = revisions.get(&revision_name).await?;
        if matches(data, &existing) {
            return Ok(Arc::new(existing));
        }
        let daemon_sets: Api<DaemonSet> =
            Api::namespaced(self.writer.client().clone(), namespace(&ds.object));
        let mut stored = daemon_sets.get(name(&ds.object)).await?;
        let (cached_count, stored_count) = (collision_count(&ds.object), collision_count(&stored));
        if cached_count != stored_count {
            return Err(RevisionError::StaleCollisionCount {
                name: name(&ds.object).to_owned(),
                cached: shown(cached_count),
                stored: shown(stored_count),
            });
        }
        stored
            .status
            .get_or_insert_with(Default::default)
            .collision_count = Some(stored_count.unwrap_or(0).saturating_add(1));
        let written = self
            .writer
            .update_status(&stored, "collision count")
            .await?;
        self.written
            .record(&informer::object_key(&ds.object), &written.metadata);
        tracing::info!(
            daemon_set = %informer::object_key(&ds.object),
            "found a hash collision for DaemonSet - bumping collisionCount to resolve it"
        );
        Err(error.into())
    }

    /// upstream `cleanupHistory`: deletes the oldest old revisions beyond
    /// `revisionHistoryLimit` that no pod (deleted terminal ones included) is labelled with,
    /// stopping at the first failure.
    pub(crate) async fn cleanup_history(
        &self,
        context: &SyncContext<'_>,
        old: &[Arc<ControllerRevision>],
    ) -> Result<(), SyncError> {
        let nodes_to_pods = self.nodes_to_pods(context, true).await?;
        for revision in revisions_to_clean_up(&context.ds.object, old, &nodes_to_pods) {
            self.writer
                .delete::<ControllerRevision>(&revision.metadata, false, "clean up history")
                .await?;
        }
        Ok(())
    }
}
