//! Which ReplicaSet is "new": template equality ignoring the pod-template-hash
//! label, and the new/old split of a Deployment's ReplicaSets.
//!
//! Recognition is by template equality, never by hash, so ReplicaSets written by upstream
//! (whose hash we do not reproduce) are found as well.

use informer::{CachedDeployment, CachedReplicaSet, CompactPodTemplate};
use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::constants::POD_TEMPLATE_HASH_LABEL;
use crate::replica_set::{by_creation, same_replica_set};
use crate::semantic::semantic_equal;

/// The Deployment's pod template (Go's zero value when the spec is absent).
pub fn deployment_template(d: &CachedDeployment) -> PodTemplateSpec {
    d.spec
        .as_ref()
        .map(|spec| spec.template.decode())
        .unwrap_or_default()
}

/// The ReplicaSet's pod template (Go's zero value when absent).
pub fn replica_set_template(rs: &CachedReplicaSet) -> PodTemplateSpec {
    rs.spec
        .as_ref()
        .and_then(|spec| spec.template.as_ref())
        .map(CompactPodTemplate::decode)
        .unwrap_or_default()
}

/// A copy of `template` without the pod-template-hash label. `metadata` and `spec` are Go
/// non-pointer structs, so absent ones become their zero value.
pub fn without_hash_label(template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut copy = template.clone();
    let metadata = copy.metadata.get_or_insert_with(Default::default);
    if let Some(labels) = metadata.labels.as_mut() {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    copy.spec.get_or_insert_with(Default::default);
    copy
}

/// EqualIgnoreHash: semantic equality of two pod templates after removing the
/// pod-template-hash label from both.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    semantic_equal(&without_hash_label(a), &without_hash_label(b))
}

/// A Deployment's ReplicaSets split into the new one and the old ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SplitReplicaSets<'a> {
    /// FindNewReplicaSet: the oldest ReplicaSet whose template equals the Deployment's.
    pub new: Option<&'a CachedReplicaSet>,
    /// FindOldReplicaSets (all): every other ReplicaSet, oldest first (creation, then name),
    /// the order upstream leaves them in after sorting for FindNewReplicaSet.
    pub old: Vec<&'a CachedReplicaSet>,
}

/// FindNewReplicaSet: sort by creation (ties by name) and take the first whose template
/// equals the Deployment's, ignoring the hash label. With duplicates the oldest wins.
pub fn find_new_replica_set<'a>(
    d: &CachedDeployment,
    rss: &[&'a CachedReplicaSet],
) -> Option<&'a CachedReplicaSet> {
    let template = deployment_template(d);
    let mut sorted = rss.to_vec();
    sorted.sort_by(|a, b| by_creation(a, b));
    sorted
        .into_iter()
        .find(|rs| equal_ignore_hash(&replica_set_template(rs), &template))
}

/// FindNewReplicaSet + FindOldReplicaSets in one pass.
pub fn split_replica_sets<'a>(
    d: &CachedDeployment,
    rss: &[&'a CachedReplicaSet],
) -> SplitReplicaSets<'a> {
    let new = find_new_replica_set(d, rss);
    let mut old: Vec<&CachedReplicaSet> = rss
        .iter()
        .copied()
        .filter(|rs| new.is_none_or(|new| !same_replica_set(rs, new)))
        .collect();
    old.sort_by(|a, b| by_creation(a, b));
    SplitReplicaSets { new, old }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::replica_set::rs_name;
    use crate::replica_set::test_support::{compact, rolling, rs, template};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn with_template(mut r: CachedReplicaSet, image: &str, hash: &str) -> CachedReplicaSet {
        let mut t = template(image);
        if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), hash.to_owned());
        }
        if let Some(spec) = r.spec.as_mut() {
            spec.template = Some(compact(&t));
        }
        r
    }

    #[test]
    fn equal_ignore_hash_table() {
        let base = template("nginx:1");
        let mut hashed = base.clone();
        if let Some(labels) = hashed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), "abc".to_owned());
        }
        let mut other_label = base.clone();
        if let Some(labels) = other_label
            .metadata
            .as_mut()
            .and_then(|m| m.labels.as_mut())
        {
            labels.insert("tier".to_owned(), "x".to_owned());
        }
        let mut no_labels = base.clone();
        if let Some(m) = no_labels.metadata.as_mut() {
            m.labels = None;
        }
        let mut only_hash = no_labels.clone();
        if let Some(m) = only_hash.metadata.as_mut() {
            m.labels = Some(BTreeMap::from([(
                POD_TEMPLATE_HASH_LABEL.to_owned(),
                "h".to_owned(),
            )]));
        }
        let mut no_metadata = no_labels.clone();
        no_metadata.metadata = None;
        let cases = [
            (&base, &hashed, true),
            (&base, &template("nginx:2"), false),
            (&base, &other_label, false),
            (&no_labels, &only_hash, true),
            (&no_labels, &no_metadata, true),
        ];
        for (i, (a, b, want)) in cases.into_iter().enumerate() {
            assert_eq!(equal_ignore_hash(a, b), want, "case {i}");
            assert_eq!(equal_ignore_hash(b, a), want, "case {i} reversed");
        }
    }

    #[test]
    fn oldest_matching_replica_set_is_new() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let older_dup = with_template(rs("web-b", 5, 1, 1), "nginx:2", "b");
        let newer_dup = with_template(rs("web-a", 9, 1, 1), "nginx:2", "a");
        let same_time = with_template(rs("web-c", 5, 1, 1), "nginx:2", "c");
        let old = with_template(rs("web-old", 1, 0, 0), "nginx:1", "o");
        let list = [&newer_dup, &same_time, &old, &older_dup];
        let split = split_replica_sets(&d, &list);
        assert_eq!(split.new.map(rs_name), Some("web-b"));
        assert_eq!(
            split.old.iter().map(|r| rs_name(r)).collect::<Vec<_>>(),
            ["web-old", "web-c", "web-a"]
        );
    }

    #[test]
    fn no_match_means_every_replica_set_is_old() {
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let a = rs("a", 1, 1, 1);
        let split = split_replica_sets(&d, &[&a]);
        assert!(split.new.is_none());
        assert_eq!(split.old.len(), 1);
    }

    #[test]
    fn upstream_fixture_replica_set_is_recognized() {
        let d: CachedDeployment = serde_json::from_str(include_str!("../fixtures/deployment.json"))
            .expect("fixture parses");
        let list: kube::core::ObjectList<CachedReplicaSet> =
            serde_json::from_str(include_str!("../fixtures/replicaset-list.json"))
                .expect("fixture parses");
        let refs: Vec<&CachedReplicaSet> = list.items.iter().collect();
        let split = split_replica_sets(&d, &refs);
        assert_eq!(split.new.map(rs_name), Some("web-896bb5df7"));
        assert!(split.old.is_empty());
    }
}
