//! Deployment and ReplicaSet annotations: which annotations are copied, the
//! revision and revision-history bookkeeping of the new ReplicaSet, and the desired/max
//! replicas annotations that proportional scaling reads back.

use informer::{CachedDeployment, CachedReplicaSet, LabelLookup};

use crate::constants::{
    DESIRED_REPLICAS_ANNOTATION, LAST_APPLIED_CONFIG_ANNOTATION, MAX_REPLICAS_ANNOTATION,
    REVISION_ANNOTATION, REVISION_HISTORY_ANNOTATION, REVISION_HISTORY_LIMIT_CHARS,
    ROLLBACK_TO_ANNOTATION,
};
use crate::replica_set::deployment_replicas;
use crate::rollout_limits::max_total_replicas;

/// Whether an annotation stays on the Deployment only (upstream `annotationsToSkip`).
pub fn skip_copy_annotation(key: &str) -> bool {
    matches!(
        key,
        LAST_APPLIED_CONFIG_ANNOTATION
            | REVISION_ANNOTATION
            | REVISION_HISTORY_ANNOTATION
            | DESIRED_REPLICAS_ANNOTATION
            | MAX_REPLICAS_ANNOTATION
            | ROLLBACK_TO_ANNOTATION
    )
}

/// The value of annotation `key` ("" when absent, as Go reads a missing map key).
pub(crate) fn annotation<'a>(annotations: &'a impl LabelLookup, key: &str) -> &'a str {
    annotations.label(key).unwrap_or_default()
}

/// copyDeploymentAnnotationsToReplicaSet: sets every non-skipped Deployment
/// annotation whose value differs on the ReplicaSet; never removes any. As upstream, a
/// missing RS annotation reads as "" (so an empty Deployment value is not copied onto a
/// missing key). Returns whether anything changed.
pub fn copy_deployment_annotations(d: &CachedDeployment, rs: &mut CachedReplicaSet) -> bool {
    let copies: Vec<(&str, &str)> = d
        .metadata
        .annotations
        .iter()
        .filter(|(key, value)| {
            !skip_copy_annotation(key) && annotation(&rs.metadata.annotations, key) != *value
        })
        .collect();
    if copies.is_empty() {
        return false;
    }
    rs.metadata.annotations.edit(|annotations| {
        for (key, value) in copies {
            annotations.insert(key.to_owned(), value.to_owned());
        }
    });
    true
}

/// Appends `old_revision` to a revision-history value under the character limit (upstream
/// `SetNewReplicaSetAnnotations`): an empty history becomes the old value; otherwise entries are dropped from the
/// front until it fits, and if it still does not fit the history is left unchanged (`None`).
pub fn append_revision_history(history: &str, old_revision: &str, limit: usize) -> Option<String> {
    let entries: Vec<&str> = history.split(',').collect();
    if entries[0].is_empty() {
        return Some(old_revision.to_owned());
    }
    let mut total = history.len() + old_revision.len() + 1;
    let mut start = 0;
    while total > limit && start < entries.len() {
        total = total.saturating_sub(entries[start].len() + 1);
        start += 1;
    }
    if total > limit {
        return None;
    }
    let mut kept: Vec<&str> = entries[start..].to_vec();
    kept.push(old_revision);
    Some(kept.join(","))
}

/// SetNewReplicaSetAnnotations: copies Deployment annotations,
/// moves the revision forward (recording the old one in the history), and for a ReplicaSet
/// about to be created (`exists == false`) sets desired/max replicas. Returns whether an
/// annotation changed; as upstream, `false` when the RS revision is non-empty and not an int
/// (annotations copied before that point stay on `rs`).
pub fn set_new_replica_set_annotations(
    d: &CachedDeployment,
    rs: &mut CachedReplicaSet,
    new_revision: &str,
    exists: bool,
) -> bool {
    let mut changed = copy_deployment_annotations(d, rs);
    let replica_set = rs.metadata.name.clone();
    let replica_set = replica_set.as_deref();
    let old_revision = rs.metadata.annotations.get(REVISION_ANNOTATION);
    let old_value = old_revision.unwrap_or_default();
    let old_number = match old_value.parse::<i64>() {
        Ok(number) => number,
        Err(_) if old_value.is_empty() => 0,
        Err(error) => {
            tracing::info!(replica_set, %error,
                "updating replica set revision: old revision is not an int");
            return false;
        }
    };
    let new_number = match new_revision.parse::<i64>() {
        Ok(number) => number,
        Err(error) => {
            tracing::info!(replica_set, %error,
                "updating replica set revision: new revision is not an int");
            return false;
        }
    };
    if old_number < new_number {
        let old_revision = old_revision.map(str::to_owned);
        rs.metadata.annotations.edit(|annotations| {
            annotations.insert(REVISION_ANNOTATION.to_owned(), new_revision.to_owned());
            let Some(old_revision) = old_revision else {
                return;
            };
            let history = annotation(annotations, REVISION_HISTORY_ANNOTATION);
            match append_revision_history(history, &old_revision, REVISION_HISTORY_LIMIT_CHARS) {
                Some(updated) => {
                    annotations.insert(REVISION_HISTORY_ANNOTATION.to_owned(), updated);
                }
                None => tracing::info!(
                    replica_set,
                    limit = REVISION_HISTORY_LIMIT_CHARS,
                    "not appending revision: revision history length limit reached"
                ),
            }
        });
        changed = true;
    }
    if !exists {
        changed |= set_replicas_annotations(rs, deployment_replicas(d), max_total_replicas(d));
    }
    changed
}

/// SetReplicasAnnotations: records `desired` and `max` on the ReplicaSet; returns whether
/// either changed.
pub fn set_replicas_annotations(rs: &mut CachedReplicaSet, desired: i32, max: i32) -> bool {
    if !replicas_annotations_need_update(rs, desired, max) {
        return false;
    }
    rs.metadata.annotations.edit(|annotations| {
        annotations.insert(DESIRED_REPLICAS_ANNOTATION.to_owned(), desired.to_string());
        annotations.insert(MAX_REPLICAS_ANNOTATION.to_owned(), max.to_string());
    });
    true
}

/// ReplicasAnnotationsNeedUpdate: whether desired/max differ from the given values.
pub fn replicas_annotations_need_update(rs: &CachedReplicaSet, desired: i32, max: i32) -> bool {
    let annotations = &rs.metadata.annotations;
    annotation(annotations, DESIRED_REPLICAS_ANNOTATION) != desired.to_string()
        || annotation(annotations, MAX_REPLICAS_ANNOTATION) != max.to_string()
}

/// Why a desired/max-replicas annotation reads as "no value".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplicasAnnotationError {
    /// Not a base-10 number of digits only (Go's `ParseUint(s, 10, 32)` takes no sign, no
    /// spaces, no underscores).
    #[error("{0:?} is not a non-negative base-10 integer")]
    NotANumber(String),
    /// Digits, but above int32's range.
    #[error("value {0} is out of range (higher than 2147483647)")]
    OutOfRange(String),
}

/// getNonNegativeInt32FromAnnotation (kubernetes#128527, v1.32): the value as a base-10
/// integer in `[0, 2147483647]`. Negative, signed, non-numeric and out-of-range values are
/// errors, so a tampered annotation can never read as a wrapped or negative count.
pub fn parse_non_negative_i32(value: &str) -> Result<i32, ReplicasAnnotationError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ReplicasAnnotationError::NotANumber(value.to_owned()));
    }
    value
        .parse::<u64>()
        .ok()
        .and_then(|number| i32::try_from(number).ok())
        .ok_or_else(|| ReplicasAnnotationError::OutOfRange(value.to_owned()))
}

/// A desired/max-replicas annotation, `None` when missing or not a non-negative int32 (logged,
/// as upstream does at V(2)).
fn non_negative_i32_annotation(rs: &CachedReplicaSet, key: &str) -> Option<i32> {
    let value = rs.metadata.annotations.get(key)?;
    parse_non_negative_i32(value)
        .inspect_err(|error| {
            tracing::debug!(replica_set = rs.metadata.name.as_deref(), key, %error,
                "could not convert the annotation to a non-negative int32");
        })
        .ok()
}

/// GetDesiredReplicasAnnotation.
pub fn desired_replicas_annotation(rs: &CachedReplicaSet) -> Option<i32> {
    non_negative_i32_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
}

/// getMaxReplicasAnnotation.
pub fn max_replicas_annotation(rs: &CachedReplicaSet) -> Option<i32> {
    non_negative_i32_annotation(rs, MAX_REPLICAS_ANNOTATION)
}

/// getRollbackTo: the legacy rollback request, if present, non-empty and an int64.
pub fn rollback_to(d: &CachedDeployment) -> Option<i64> {
    let value = annotation(&d.metadata.annotations, ROLLBACK_TO_ANNOTATION);
    if value.is_empty() {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use informer::CompactLabels;

    use super::*;
    use crate::replica_set::test_support::{annotate, rolling, rs};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn d_with_annotations(pairs: &[(&str, &str)]) -> CachedDeployment {
        let mut d = rolling(10, IntOrString::Int(3), IntOrString::Int(2));
        d.metadata.annotations = CompactLabels::from_entries(pairs.iter().copied().collect());
        d
    }

    fn ann<'a>(rs: &'a CachedReplicaSet, key: &str) -> Option<&'a str> {
        rs.metadata.annotations.get(key)
    }

    #[test]
    fn skip_list() {
        for key in [
            LAST_APPLIED_CONFIG_ANNOTATION,
            REVISION_ANNOTATION,
            REVISION_HISTORY_ANNOTATION,
            DESIRED_REPLICAS_ANNOTATION,
            MAX_REPLICAS_ANNOTATION,
            ROLLBACK_TO_ANNOTATION,
        ] {
            assert!(skip_copy_annotation(key), "{key}");
        }
        assert!(!skip_copy_annotation("team"));
    }

    #[test]
    fn copy_sets_differing_and_keeps_extra() {
        let d = d_with_annotations(&[("team", "a"), (REVISION_ANNOTATION, "9"), ("empty", "")]);
        let mut target = annotate(rs("r", 0, 1, 1), "own", "x");
        assert!(copy_deployment_annotations(&d, &mut target));
        assert_eq!(ann(&target, "team"), Some("a"));
        assert_eq!(ann(&target, "own"), Some("x"));
        assert_eq!(ann(&target, REVISION_ANNOTATION), None);
        assert_eq!(ann(&target, "empty"), None);
        assert!(!copy_deployment_annotations(&d, &mut target));
    }

    #[test]
    fn revision_history_append_table() {
        let long_entry = "1".repeat(10);
        let cases = [
            ("", "3", 2000, Some("3".to_owned())),
            ("1,2", "3", 2000, Some("1,2,3".to_owned())),
            // len("1,2")=3 + len("3")+1 = 5 > 4: drop "1" (total 3) then append.
            ("1,2", "3", 4, Some("2,3".to_owned())),
            // Nothing fits: even dropping all entries leaves "3"+"," over 1.
            ("1,2", "33", 1, None),
            (long_entry.as_str(), "5", 5, Some("5".to_owned())),
        ];
        for (history, old, limit, want) in cases {
            assert_eq!(
                append_revision_history(history, old, limit),
                want,
                "{history} + {old}"
            );
        }
    }

    #[test]
    fn new_replica_set_annotations_move_revision_forward() {
        let d = d_with_annotations(&[("team", "a")]);
        // Existing RS at revision 2 with history "1" reused as revision 5.
        let mut existing = annotate(
            annotate(rs("r", 0, 1, 1), REVISION_ANNOTATION, "2"),
            REVISION_HISTORY_ANNOTATION,
            "1",
        );
        assert!(set_new_replica_set_annotations(
            &d,
            &mut existing,
            "5",
            true
        ));
        assert_eq!(ann(&existing, REVISION_ANNOTATION), Some("5"));
        assert_eq!(ann(&existing, REVISION_HISTORY_ANNOTATION), Some("1,2"));
        assert_eq!(ann(&existing, DESIRED_REPLICAS_ANNOTATION), None);
        // Already current: nothing changes.
        assert!(!set_new_replica_set_annotations(
            &d,
            &mut existing,
            "5",
            true
        ));
        // Unparseable old revision: reported unchanged even though "team" was copied.
        let mut bad = annotate(rs("b", 0, 1, 1), REVISION_ANNOTATION, "x");
        assert!(!set_new_replica_set_annotations(&d, &mut bad, "5", true));
        assert_eq!(ann(&bad, "team"), Some("a"));
        assert_eq!(ann(&bad, REVISION_ANNOTATION), Some("x"));
        // New RS: revision without history, and desired/max = 10 / 10+3.
        let mut fresh = rs("n", 0, 0, 0);
        assert!(set_new_replica_set_annotations(&d, &mut fresh, "1", false));
        assert_eq!(ann(&fresh, REVISION_ANNOTATION), Some("1"));
        assert_eq!(ann(&fresh, REVISION_HISTORY_ANNOTATION), None);
        assert_eq!(ann(&fresh, DESIRED_REPLICAS_ANNOTATION), Some("10"));
        assert_eq!(ann(&fresh, MAX_REPLICAS_ANNOTATION), Some("13"));
    }

    #[test]
    fn replicas_annotations_and_readers() {
        let mut target = rs("r", 0, 1, 1);
        assert!(replicas_annotations_need_update(&target, 3, 4));
        assert!(set_replicas_annotations(&mut target, 3, 4));
        assert!(!replicas_annotations_need_update(&target, 3, 4));
        assert!(!set_replicas_annotations(&mut target, 3, 4));
        assert_eq!(desired_replicas_annotation(&target), Some(3));
        assert_eq!(max_replicas_annotation(&target), Some(4));
        let junk = annotate(rs("j", 0, 1, 1), MAX_REPLICAS_ANNOTATION, "many");
        assert_eq!(max_replicas_annotation(&junk), None);
    }

    #[test]
    fn replicas_annotations_read_as_non_negative_int32() {
        // Upstream's TestGetNonNegativeIntFromAnnotation cases (kubernetes#128527) plus Go
        // ParseUint's syntax: no sign, no blanks, no underscores.
        let cases: [(&str, Option<i32>); 16] = [
            ("0", Some(0)),
            ("10", Some(10)),
            ("007", Some(7)),
            ("2147483647", Some(i32::MAX)),
            ("2147483648", None),
            ("4294967295", None),
            ("4294967296", None),
            ("99999999999999999999999", None),
            ("-1", None),
            ("-2147483648", None),
            ("+5", None),
            (" 5", None),
            ("1_000", None),
            ("", None),
            ("ten", None),
            ("1.5", None),
        ];
        for (value, want) in cases {
            assert_eq!(parse_non_negative_i32(value).ok(), want, "{value:?}");
            let annotated = annotate(
                annotate(rs("r", 0, 1, 1), DESIRED_REPLICAS_ANNOTATION, value),
                MAX_REPLICAS_ANNOTATION,
                value,
            );
            assert_eq!(desired_replicas_annotation(&annotated), want, "{value:?}");
            assert_eq!(max_replicas_annotation(&annotated), want, "{value:?}");
        }
        assert_eq!(desired_replicas_annotation(&rs("bare", 0, 1, 1)), None);
    }

    #[test]
    fn rollback_to_parsing() {
        assert_eq!(
            rollback_to(&d_with_annotations(&[(ROLLBACK_TO_ANNOTATION, "3")])),
            Some(3)
        );
        assert_eq!(
            rollback_to(&d_with_annotations(&[(ROLLBACK_TO_ANNOTATION, "0")])),
            Some(0)
        );
        assert_eq!(
            rollback_to(&d_with_annotations(&[(ROLLBACK_TO_ANNOTATION, "")])),
            None
        );
        assert_eq!(
            rollback_to(&d_with_annotations(&[(ROLLBACK_TO_ANNOTATION, "x")])),
            None
        );
        assert_eq!(rollback_to(&d_with_annotations(&[])), None);
    }
}
