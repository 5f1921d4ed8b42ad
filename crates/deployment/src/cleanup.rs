//! cleanupDeployment: which old ReplicaSets to delete to honour
//! `revisionHistoryLimit`.

use informer::{CachedDeployment, CachedReplicaSet};

use crate::constants::UNLIMITED;
use crate::replica_set::{rs_spec_replicas, rs_status_replicas};
use crate::revision::sort_by_revision;

/// The ReplicaSets to DELETE (NotFound ignored, other errors end the cleanup), in order.
///
/// Only with a limit set (and not MaxInt32); among old ReplicaSets not being deleted, the
/// `len - limit` lowest revisions are candidates, and a candidate that still has replicas, an
/// unobserved generation or a deletion timestamp is skipped, not replaced.
pub fn cleanup_victims<'a>(
    d: &CachedDeployment,
    old: &[&'a CachedReplicaSet],
) -> Vec<&'a CachedReplicaSet> {
    let Some(limit) = d
        .spec
        .as_ref()
        .and_then(|spec| spec.revision_history_limit)
        .filter(|limit| *limit != UNLIMITED)
    else {
        return Vec::new();
    };
    let mut candidates: Vec<&CachedReplicaSet> = old
        .iter()
        .copied()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .collect();
    let diff = i64::try_from(candidates.len()).unwrap_or(i64::MAX) - i64::from(limit);
    if diff <= 0 {
        return Vec::new();
    }
    sort_by_revision(&mut candidates);
    candidates
        .into_iter()
        .take(usize::try_from(diff).unwrap_or(usize::MAX))
        .filter(|rs| {
            let observed = rs
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            rs_status_replicas(rs) == 0
                && rs_spec_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= observed
                && rs.metadata.deletion_timestamp.is_none()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::constants::REVISION_ANNOTATION;
    use crate::replica_set::rs_name;
    use crate::replica_set::test_support::{annotate, at, rolling, rs};

    fn with_limit(limit: Option<i32>) -> CachedDeployment {
        let mut d = rolling(1, IntOrString::Int(1), IntOrString::Int(0));
        if let Some(spec) = d.spec.as_mut() {
            spec.revision_history_limit = limit;
        }
        d
    }

    fn old_rs(name: &str, revision: &str, replicas: i32) -> CachedReplicaSet {
        annotate(
            rs(name, 0, replicas, replicas),
            REVISION_ANNOTATION,
            revision,
        )
    }

    #[test]
    fn victims_table() {
        let r1 = old_rs("r1", "1", 0);
        let r2 = old_rs("r2", "2", 0);
        let r3 = old_rs("r3", "3", 0);
        let busy = old_rs("busy", "0", 1);
        let mut unobserved = old_rs("unobserved", "1", 0);
        unobserved.metadata.generation = Some(2);
        let mut deleting = old_rs("deleting", "1", 0);
        deleting.metadata.deletion_timestamp = Some(Time(at(1)));
        type Case<'a> = (Option<i32>, Vec<&'a CachedReplicaSet>, Vec<&'static str>);
        let cases: Vec<Case> = vec![
            (Some(1), vec![&r3, &r1, &r2], vec!["r1", "r2"]),
            (Some(3), vec![&r3, &r1, &r2], vec![]),
            (None, vec![&r3, &r1, &r2], vec![]),
            (Some(i32::MAX), vec![&r3, &r1, &r2], vec![]),
            (Some(0), vec![&r2, &r1], vec!["r1", "r2"]),
            // The lowest revision has replicas: skipped, not replaced by r2.
            (Some(2), vec![&busy, &r2, &r3], vec![]),
            (Some(0), vec![&unobserved, &r2], vec!["r2"]),
            // Deleting ones are not candidates: 2 alive - limit 1 = 1 victim.
            (Some(1), vec![&deleting, &r2, &r3], vec!["r2"]),
        ];
        for (limit, old, want) in cases {
            let victims = cleanup_victims(&with_limit(limit), &old);
            assert_eq!(
                victims.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
                want,
                "{limit:?}"
            );
        }
    }
}
