//! The DaemonSet's ControllerRevisions (upstream update.go `getPatch`, `Match`, `snapshot`,
//! `constructHistory`, `dedupCurHistories`, `cleanupHistory`), as pure steps: the revision data
//! bytes, the revision to create, which existing revision is current, which duplicates to
//! delete and pods to relabel, and which old revisions to clean up. The caller does the HTTP.
//!
//! A revision is current when its data bytes equal the DaemonSet's `getPatch` bytes; the data
//! is built by `history` from the template exactly as the API server sent it, as for a
//! StatefulSet. Unlike a StatefulSet's, a DaemonSet revision is named after the *template*
//! hash (`ComputeHash` with the collision count, `history::compute_hash`), its hash label is
//! `controller-revision-hash` (pods carry the same hash), and the name is not truncated.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use controller_toolkit::pod_key;
use history::{
    Error, RevisionParent, compute_hash, encode_go_json, revision_data_bytes,
    template_revision_data,
};
use informer::CachedPod;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::{Value, json};

use super::NodesToPods;
use super::spec::{collision_count, name, namespace, pod_template, revision_history_limit, uid};
use super::template::DAEMONSET_REVISION_HASH_LABEL;

/// `getPatch`: the revision data of the DaemonSet `raw_daemon_set` (the whole object as the
/// API server sent it): `{"spec":{"template":<spec.template + "$patch":"replace">}}`, keys
/// sorted.
pub fn revision_data(raw_daemon_set: &Value) -> Result<Value, Error> {
    let template = raw_daemon_set
        .pointer("/spec/template")
        .ok_or_else(|| Error::NotAnObject {
            path: "spec.template".to_owned(),
        })?;
    template_revision_data(template)
}

/// The bytes upstream compares revisions with: [`revision_data`] encoded as Go's
/// `json.Marshal` writes it.
pub fn revision_data_bytes_of(raw_daemon_set: &Value) -> Result<Vec<u8>, Error> {
    encode_go_json(&revision_data(raw_daemon_set)?)
}

/// `Match`: whether `revision` holds exactly the DaemonSet's data bytes (`data_bytes`, from
/// [`revision_data_bytes_of`]). Revision data that cannot be encoded matches nothing.
pub fn matches(data_bytes: &[u8], revision: &ControllerRevision) -> bool {
    revision_data_bytes(revision).is_ok_and(|bytes| bytes == data_bytes)
}

/// The hash naming the DaemonSet's revision for its current template: `ComputeHash` of
/// `spec.template` with `status.collisionCount`.
pub fn template_hash(daemon_set: &DaemonSet) -> String {
    let template = pod_template(daemon_set).cloned().unwrap_or_default();
    compute_hash(&template, collision_count(daemon_set))
}

/// `<DaemonSet name>-<hash>` (upstream does not shorten it).
pub fn revision_name(daemon_set_name: &str, hash: &str) -> String {
    format!("{daemon_set_name}-{hash}")
}

/// The `controller-revision-hash` label of a revision, `""` without one.
pub fn revision_hash_label(revision: &ControllerRevision) -> &str {
    revision
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(DAEMONSET_REVISION_HASH_LABEL))
        .map_or("", String::as_str)
}

/// `snapshot`: the revision to create for the DaemonSet's current template, numbered
/// `revision`: named `<ds>-<hash>` ([`template_hash`]), in the DaemonSet's namespace, labelled
/// with the template's labels plus the hash, annotated with all of the DaemonSet's
/// annotations, controlled by the DaemonSet, holding [`revision_data`] of `raw_daemon_set`
/// (the same object as the server sent it).
pub fn new_revision(
    daemon_set: &DaemonSet,
    raw_daemon_set: &Value,
    revision: i64,
) -> Result<ControllerRevision, Error> {
    let data = revision_data(raw_daemon_set)?;
    let hash = template_hash(daemon_set);
    let mut labels = pod_template(daemon_set)
        .and_then(|template| template.metadata.as_ref())
        .and_then(|metadata| metadata.labels.clone())
        .unwrap_or_default();
    labels.insert(DAEMONSET_REVISION_HASH_LABEL.to_owned(), hash.clone());
    let parent = RevisionParent {
        api_version: "apps/v1".to_owned(),
        kind: "DaemonSet".to_owned(),
        name: name(daemon_set).to_owned(),
        uid: uid(daemon_set).to_owned(),
    };
    Ok(ControllerRevision {
        metadata: ObjectMeta {
            name: Some(revision_name(name(daemon_set), &hash)),
            namespace: Some(namespace(daemon_set).to_owned()),
            labels: Some(labels),
            annotations: daemon_set.metadata.annotations.clone(),
            owner_references: Some(vec![parent.controller_ref()]),
            ..ObjectMeta::default()
        },
        data: Some(RawExtension(data)),
        revision,
    })
}

/// `constructHistory` step 1: a revision without the hash label (written by an old
/// controller) gets its own **name** as the label; the copy to PUT, `None` when it has a label.
pub fn with_legacy_hash_label(revision: &ControllerRevision) -> Option<ControllerRevision> {
    let has_label = revision
        .metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(DAEMONSET_REVISION_HASH_LABEL));
    if has_label {
        return None;
    }
    let mut labelled = revision.clone();
    let name = labelled.metadata.name.clone().unwrap_or_default();
    labelled
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(DAEMONSET_REVISION_HASH_LABEL.to_owned(), name);
    Some(labelled)
}

/// `constructHistory` step 2: the revisions that [`matches`] `data_bytes` (current) and the
/// others (old), each in the order given.
pub fn split_current_and_old<'a, R: Borrow<ControllerRevision>>(
    data_bytes: &[u8],
    revisions: &'a [R],
) -> (Vec<&'a R>, Vec<&'a R>) {
    revisions
        .iter()
        .partition(|revision| matches(data_bytes, (*revision).borrow()))
}

/// `constructHistory` step 3: the number the current revision must have, one above the
/// highest old one (`maxRevision`, which starts from 0: 1 with no old revision).
pub fn next_revision_number<R: Borrow<ControllerRevision>>(old: &[R]) -> i64 {
    old.iter()
        .map(|revision| revision.borrow().revision)
        .fold(0, i64::max)
        .saturating_add(1)
}

/// What to do about the current revision (`constructHistory` steps 4 and 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurrentRevision {
    /// No revision matches: create [`new_revision`] numbered `revision`.
    Create {
        /// Its number ([`next_revision_number`]).
        revision: i64,
    },
    /// Revisions match: keep one (`dedupCurHistories`).
    Existing {
        /// Index (into the current revisions) of the one kept.
        keep: usize,
        /// Indexes of the other current revisions: first relabel the pods
        /// ([`pods_to_relabel`]), then delete these.
        duplicates: Vec<usize>,
        /// The kept revision's new number when it is below the next one (a rollback reuses
        /// the old revision and renumbers it).
        renumber_to: Option<i64>,
    },
}

/// `constructHistory` steps 4 and 5 over the `current` revisions, given the `next` number.
pub fn choose_current<R: Borrow<ControllerRevision>>(current: &[R], next: i64) -> CurrentRevision {
    let Some(keep) = dedup_current(current) else {
        return CurrentRevision::Create { revision: next };
    };
    let duplicates = (0..current.len()).filter(|index| *index != keep).collect();
    let kept_revision = current[keep].borrow().revision;
    CurrentRevision::Existing {
        keep,
        duplicates,
        renumber_to: (kept_revision < next).then_some(next),
    }
}

/// `dedupCurHistories`' choice: the only one, or the one with the highest revision number,
/// the later of equals (upstream's running maximum starts at 0; were all numbers negative,
/// where upstream would fail, the highest is kept). `None` when there is none.
pub fn dedup_current<R: Borrow<ControllerRevision>>(current: &[R]) -> Option<usize> {
    if current.len() == 1 {
        return Some(0);
    }
    let mut kept: Option<(usize, i64)> = None;
    for (index, revision) in current.iter().enumerate() {
        let number = revision.borrow().revision;
        let floor = kept.map_or(0, |(_, highest)| highest);
        if number >= floor {
            kept = Some((index, number));
        }
    }
    kept.map(|(index, _)| index).or_else(|| {
        current
            .iter()
            .enumerate()
            .max_by_key(|(_, revision)| Borrow::<ControllerRevision>::borrow(*revision).revision)
            .map(|(index, _)| index)
    })
}

/// `dedupCurHistories`' relabelling: keys of the claimed `pods` whose hash label differs from
/// the kept revision's `kept_hash` (unlabelled pods included); each gets [`relabel_patch`].
pub fn pods_to_relabel(pods: &[Arc<CachedPod>], kept_hash: &str) -> Vec<String> {
    pods.iter()
        .filter(|pod| {
            pod.metadata
                .labels
                .get(DAEMONSET_REVISION_HASH_LABEL)
                .unwrap_or_default()
                != kept_hash
        })
        .map(|pod| pod_key(pod))
        .collect()
}

/// The JSON merge patch (`application/merge-patch+json`) relabelling a pod to `hash`:
/// `{"metadata":{"labels":{"controller-revision-hash":"<hash>"}}}`, as Go's `json.Marshal`
/// writes it.
pub fn relabel_patch(hash: &str) -> Result<Vec<u8>, Error> {
    encode_go_json(&json!({"metadata": {"labels": {DAEMONSET_REVISION_HASH_LABEL: hash}}}))
}

/// `cleanupHistory`: the old revisions to delete, in order, so that at most
/// `spec.revisionHistoryLimit` of them remain: the lowest-numbered first, skipping those whose
/// hash label a pod still carries. `nodes_to_pods` must include the deleted terminal pods
/// (`getNodesToDaemonPods(true)`). Nothing when there are no more than the limit; live
/// revisions are kept even beyond it. The caller deletes in order and stops at the first error.
pub fn revisions_to_clean_up<'a, R: Borrow<ControllerRevision>>(
    daemon_set: &DaemonSet,
    old: &'a [R],
    nodes_to_pods: &NodesToPods,
) -> Vec<&'a R> {
    let limit = usize::try_from(revision_history_limit(daemon_set).max(0)).unwrap_or(0);
    let to_kill = old.len().saturating_sub(limit);
    if to_kill == 0 {
        return Vec::new();
    }
    let live: HashSet<&str> = nodes_to_pods
        .values()
        .flatten()
        .filter_map(|pod| pod.metadata.labels.get(DAEMONSET_REVISION_HASH_LABEL))
        .filter(|hash| !hash.is_empty())
        .collect();
    let mut by_number: Vec<&R> = old.iter().collect();
    by_number.sort_by_key(|revision| Borrow::<ControllerRevision>::borrow(*revision).revision);
    by_number
        .into_iter()
        .filter(|revision| !live.contains(revision_hash_label((*revision).borrow())))
        .take(to_kill)
        .collect()
}
