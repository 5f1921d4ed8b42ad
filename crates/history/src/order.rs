//! Ordering of a parent's revisions (`SortControllerRevisions`) and the next revision number.
//!
//! The last revision of the sorted list is "the latest", which decides whether a template
//! changed and which number a new revision gets.

use std::borrow::Borrow;
use std::cmp::Ordering;

use k8s_openapi::api::apps::v1::ControllerRevision;

fn compare(lhs: &ControllerRevision, rhs: &ControllerRevision) -> Ordering {
    lhs.revision
        .cmp(&rhs.revision)
        // A missing creationTimestamp is Go's zero time, the earliest instant.
        .then_with(|| {
            let left = lhs.metadata.creation_timestamp.as_ref().map(|time| time.0);
            let right = rhs.metadata.creation_timestamp.as_ref().map(|time| time.0);
            left.cmp(&right)
        })
        .then_with(|| lhs.metadata.name.cmp(&rhs.metadata.name))
}

/// Stable sort by revision number, then creation time (earlier first), then name.
pub fn sort_controller_revisions<R: Borrow<ControllerRevision>>(revisions: &mut [R]) {
    revisions.sort_by(|lhs, rhs| compare(lhs.borrow(), rhs.borrow()));
}

/// The number for a new revision: one more than the last revision of the *sorted* list, or 1
/// when there is none.
pub fn next_revision<R: Borrow<ControllerRevision>>(sorted_revisions: &[R]) -> i64 {
    sorted_revisions
        .last()
        .map_or(1, |last| last.borrow().revision.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use k8s_openapi::jiff::Timestamp;

    use super::*;

    fn revision(name: &str, number: i64, created_seconds: Option<i64>) -> ControllerRevision {
        ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                creation_timestamp: created_seconds
                    .map(|seconds| Time(Timestamp::from_second(seconds).expect("valid test time"))),
                ..ObjectMeta::default()
            },
            revision: number,
            data: None,
        }
    }

    fn names(revisions: &[ControllerRevision]) -> Vec<&str> {
        revisions
            .iter()
            .filter_map(|r| r.metadata.name.as_deref())
            .collect()
    }

    #[test]
    fn sorting() {
        let cases: Vec<(&str, Vec<ControllerRevision>, Vec<&str>)> = vec![
            ("empty", vec![], vec![]),
            (
                "by number",
                vec![
                    revision("c", 3, None),
                    revision("a", 1, None),
                    revision("b", 2, None),
                ],
                vec!["a", "b", "c"],
            ),
            (
                "number beats time and name",
                vec![revision("a", 2, Some(1)), revision("z", 1, Some(9))],
                vec!["z", "a"],
            ),
            (
                "equal numbers: earlier first",
                vec![revision("a", 1, Some(20)), revision("b", 1, Some(10))],
                vec!["b", "a"],
            ),
            (
                "missing timestamp is earliest",
                vec![revision("a", 1, Some(1)), revision("b", 1, None)],
                vec!["b", "a"],
            ),
            (
                "equal numbers and times: by name",
                vec![revision("y", 1, Some(5)), revision("x", 1, Some(5))],
                vec!["x", "y"],
            ),
        ];
        for (name, mut revisions, want) in cases {
            sort_controller_revisions(&mut revisions);
            assert_eq!(names(&revisions), want, "{name}");
        }
    }

    #[test]
    fn sorting_works_on_shared_revisions() {
        let mut shared = vec![
            Arc::new(revision("b", 2, None)),
            Arc::new(revision("a", 1, None)),
        ];
        sort_controller_revisions(&mut shared);
        assert_eq!(shared[0].metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn next_revision_numbers() {
        let cases: Vec<(Vec<ControllerRevision>, i64)> = vec![
            (vec![], 1),
            (vec![revision("a", 1, None)], 2),
            (vec![revision("a", 1, None), revision("b", 7, None)], 8),
            (vec![revision("a", i64::MAX, None)], i64::MAX),
        ];
        for (revisions, want) in cases {
            assert_eq!(next_revision(&revisions), want, "{:?}", names(&revisions));
        }
    }
}
