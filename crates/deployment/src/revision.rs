//! Revision numbers of ReplicaSets: parsing, the maximum, the previous one, and
//! upstream's revision ordering used by history cleanup.

use std::cmp::Ordering;

use informer::{CachedReplicaSet, WorkloadMetadata};

use crate::constants::REVISION_ANNOTATION;
use crate::error::Error;
use crate::replica_set::by_creation;

/// Revision of an object: the revision annotation as a decimal int64; missing = 0.
pub fn revision(metadata: &WorkloadMetadata) -> Result<i64, Error> {
    let Some(value) = metadata.annotations.get(REVISION_ANNOTATION) else {
        return Ok(0);
    };
    value
        .parse()
        .map_err(|e: std::num::ParseIntError| Error::InvalidRevision {
            object: metadata.name.clone().unwrap_or_default(),
            value: value.to_owned(),
            reason: e.to_string(),
        })
}

/// MaxRevision: the highest parseable revision (0 if none); unparseable ones are skipped.
pub fn max_revision<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i64 {
    rss.into_iter()
        .filter_map(|rs| match revision(&rs.metadata) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::debug!(replica_set = rs.metadata.name.as_deref(), %error,
                    "skipping unparseable revision");
                None
            }
        })
        .fold(0, i64::max)
}

/// LastRevision: the second-highest revision; a value equal to the current maximum pushes
/// the previous maximum to second place (upstream's `v >= max`).
pub fn last_revision<'a>(rss: impl IntoIterator<Item = &'a CachedReplicaSet>) -> i64 {
    let (mut max, mut second) = (0i64, 0i64);
    for rs in rss {
        let Ok(value) = revision(&rs.metadata) else {
            continue;
        };
        if value >= max {
            second = max;
            max = value;
        } else if value > second {
            second = value;
        }
    }
    second
}

/// ReplicaSetsByRevision "less": by revision, falling back to creation order when either
/// revision is unparseable or both are equal.
fn revision_less(a: &CachedReplicaSet, b: &CachedReplicaSet) -> bool {
    match (revision(&a.metadata), revision(&b.metadata)) {
        (Ok(x), Ok(y)) if x != y => x < y,
        _ => by_creation(a, b) == Ordering::Less,
    }
}

/// Sorts by ReplicaSetsByRevision. Go's comparator is not a total order when revisions fail
/// to parse, so this uses Go's own algorithm for the sizes that occur (insertion sort, which
/// `sort.Sort` uses for up to 12 elements) and which never panics on an inconsistent order.
pub fn sort_by_revision(rss: &mut [&CachedReplicaSet]) {
    for i in 1..rss.len() {
        let mut j = i;
        while j > 0 && revision_less(rss[j], rss[j - 1]) {
            rss.swap(j, j - 1);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replica_set::rs_name;
    use crate::replica_set::test_support::{annotate, rs};

    fn with_rev(name: &str, created: i64, rev: &str) -> CachedReplicaSet {
        annotate(rs(name, created, 0, 0), REVISION_ANNOTATION, rev)
    }

    #[test]
    fn revision_parsing() {
        assert_eq!(revision(&rs("a", 0, 0, 0).metadata), Ok(0));
        assert_eq!(revision(&with_rev("a", 0, "7").metadata), Ok(7));
        assert!(revision(&with_rev("a", 0, "x").metadata).is_err());
        assert!(revision(&with_rev("a", 0, "").metadata).is_err());
    }

    #[test]
    fn max_and_last_revision_table() {
        // (revisions, max, last)
        let cases: [(&[&str], i64, i64); 6] = [
            (&[], 0, 0),
            (&["1"], 1, 0),
            (&["1", "3", "2"], 3, 2),
            (&["3", "3"], 3, 3),
            (&["5", "x", "4"], 5, 4),
            (&["2", "4", "3"], 4, 3),
        ];
        for (revs, max, last) in cases {
            let list: Vec<_> = revs
                .iter()
                .enumerate()
                .map(|(i, r)| with_rev(&format!("rs{i}"), i as i64, r))
                .collect();
            assert_eq!(max_revision(&list), max, "{revs:?}");
            assert_eq!(last_revision(&list), last, "{revs:?}");
        }
    }

    #[test]
    fn sort_by_revision_falls_back_to_creation() {
        let a = with_rev("a", 30, "1");
        let b = with_rev("b", 10, "3");
        let c = with_rev("c", 20, "2");
        let d = with_rev("d", 5, "2");
        let mut list = vec![&b, &a, &c, &d];
        sort_by_revision(&mut list);
        assert_eq!(
            list.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["a", "d", "c", "b"]
        );
    }
}
