//! Choosing the update revision (`getStatefulSetRevisions`, step 4): reuse, renumber or create.
//!
//! Pure decision; the StatefulSet controller performs the write it asks for (a PUT of the new
//! revision number, or a create with the collision loop of [`RevisionCreation`](crate::RevisionCreation)).

use std::borrow::Borrow;

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::Value;

use crate::revision::equal_revision;
use crate::semantic::latest_revision_is_semantically_current;

/// What the update revision is, given the existing revisions and the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateRevisionChoice {
    /// The latest existing revision holds the proposed data: use it, write nothing.
    Latest,
    /// An older revision holds the proposed data (a rollback): PUT that revision (the index into
    /// the sorted list) with `revision` set to the proposed number and use it.
    Renumber {
        /// Index of the revision to renumber in the sorted list.
        index: usize,
        /// The proposed revision number to give it.
        revision: i64,
    },
    /// No revision holds the proposed bytes but the latest one describes the same template
    /// (semantic comparison): use the latest, write nothing.
    LatestSemanticallyEqual,
    /// The template is new: create the proposal.
    Create,
}

/// Decides the update revision as upstream does. `sorted_revisions` are the set's revisions
/// sorted by [`sort_controller_revisions`](crate::sort_controller_revisions); `proposal` comes from
/// [`new_statefulset_revision`](crate::new_statefulset_revision) with the next revision number;
/// `set` is the raw StatefulSet; `semantic_comparison` is the
/// `StatefulSetSemanticRevisionComparison` gate (on by default since v1.35).
pub fn choose_update_revision<R: Borrow<ControllerRevision>>(
    set: &Value,
    sorted_revisions: &[R],
    proposal: &ControllerRevision,
    semantic_comparison: bool,
) -> UpdateRevisionChoice {
    let Some(latest) = sorted_revisions.last().map(Borrow::borrow) else {
        return UpdateRevisionChoice::Create;
    };
    let last_equal = sorted_revisions
        .iter()
        .rposition(|candidate| equal_revision(candidate.borrow(), proposal));
    match last_equal {
        Some(index) if equal_revision(latest, sorted_revisions[index].borrow()) => {
            UpdateRevisionChoice::Latest
        }
        Some(index) => UpdateRevisionChoice::Renumber {
            index,
            revision: proposal.revision,
        },
        None if semantic_comparison
            && latest_revision_is_semantically_current(set, latest, proposal) =>
        {
            UpdateRevisionChoice::LatestSemanticallyEqual
        }
        None => UpdateRevisionChoice::Create,
    }
}
