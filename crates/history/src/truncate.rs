//! Revision history truncation (`truncateHistory`): which revisions to delete so that at most
//! `revisionHistoryLimit` non-live revisions remain.
//!
//! Live revisions (the current and update revisions and every revision a pod is labelled with)
//! are never deleted; the oldest of the others go first.

use std::borrow::Borrow;
use std::collections::HashSet;

use k8s_openapi::api::apps::v1::ControllerRevision;

/// Names of the revisions in use: `current`, `update` and each pod's revision, its
/// `controller-revision-hash` label (`""` for an unlabelled pod, as upstream). Pods come as
/// that label's value, so full and cached pods serve alike.
pub fn live_revision_names<'a>(
    current: &'a ControllerRevision,
    update: &'a ControllerRevision,
    pod_revisions: impl IntoIterator<Item = &'a str>,
) -> HashSet<&'a str> {
    let mut live: HashSet<&str> = [current, update]
        .into_iter()
        .filter_map(|revision| revision.metadata.name.as_deref())
        .collect();
    live.extend(pod_revisions);
    live
}

/// The revisions to delete, oldest first: the first `len - limit` non-live revisions of the
/// sorted list. Nothing when there are at most `history_limit` of them or the limit is negative.
/// The caller deletes them in order and stops at the first error.
pub fn revisions_to_truncate<'a, R: Borrow<ControllerRevision>>(
    sorted_revisions: &'a [R],
    live: &HashSet<&str>,
    history_limit: i32,
) -> Vec<&'a R> {
    let Ok(limit) = usize::try_from(history_limit) else {
        return Vec::new();
    };
    let history: Vec<&R> = sorted_revisions
        .iter()
        .filter(|revision| {
            let revision: &ControllerRevision = (*revision).borrow();
            let name = revision.metadata.name.as_deref().unwrap_or_default();
            !live.contains(name)
        })
        .collect();
    let excess = history.len().saturating_sub(limit);
    history.into_iter().take(excess).collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn revision(name: &str) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..ControllerRevision::default()
        }
    }

    #[test]
    fn live_names() {
        let current = revision("r1");
        let update = revision("r3");
        let pod_revisions = ["r2", "", "r3"];
        let mut live: Vec<&str> = live_revision_names(&current, &update, pod_revisions)
            .into_iter()
            .collect();
        live.sort_unstable();
        assert_eq!(live, vec!["", "r1", "r2", "r3"]);
    }

    #[test]
    fn truncation() {
        let all: Vec<ControllerRevision> = ["r1", "r2", "r3", "r4", "r5"]
            .into_iter()
            .map(revision)
            .collect();
        let cases: [(&str, &[&str], i32, &[&str]); 7] = [
            ("within the limit", &["r5"], 5, &[]),
            ("exactly at the limit", &["r5"], 4, &[]),
            ("oldest non-live first", &["r5"], 2, &["r1", "r2"]),
            (
                "live revisions are skipped",
                &["r1", "r2", "r5"],
                1,
                &["r3"],
            ),
            (
                "limit zero deletes all non-live",
                &["r3"],
                0,
                &["r1", "r2", "r4", "r5"],
            ),
            ("negative limit deletes nothing", &[], -1, &[]),
            ("everything live", &["r1", "r2", "r3", "r4", "r5"], 0, &[]),
        ];
        for (name, live, limit, want) in cases {
            let live: HashSet<&str> = live.iter().copied().collect();
            let got: Vec<&str> = revisions_to_truncate(&all, &live, limit)
                .into_iter()
                .filter_map(|r| r.metadata.name.as_deref())
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
