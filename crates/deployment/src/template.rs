//! Which ReplicaSet is "new": template equality ignoring the pod-template-hash
//! label, and the new/old split of a Deployment's ReplicaSets.
//!
//! Recognition is by template equality, never by hash, so ReplicaSets written by upstream
//! (whose hash we do not reproduce) are found as well.

use std::sync::OnceLock;

use informer::{CachedDeployment, CachedReplicaSet, CompactPodTemplate};
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec};

use crate::constants::POD_TEMPLATE_HASH_LABEL;
use crate::replica_set::{by_creation, same_replica_set};
use crate::semantic::{SemanticValue, semantic_equal};

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
    stripped_of_hash_label(template.clone())
}

/// [`without_hash_label`] of a template the caller owns, without copying it.
fn stripped_of_hash_label(mut template: PodTemplateSpec) -> PodTemplateSpec {
    let metadata = template.metadata.get_or_insert_with(Default::default);
    if let Some(labels) = metadata.labels.as_mut() {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    template.spec.get_or_insert_with(Default::default);
    template
}

/// The pod-template-hash of a Deployment's `template` with its `status.collisionCount`:
/// upstream's `ComputeHash` ([`history::compute_hash`]) of the template without the
/// pod-template-hash label.
pub fn pod_template_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    history::compute_hash(&without_hash_label(template), collision_count)
}

/// EqualIgnoreHash: semantic equality of two pod templates after removing the
/// pod-template-hash label from both.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    semantic_equal(&without_hash_label(a), &without_hash_label(b))
}

/// A Deployment's template, ready to be compared (EqualIgnoreHash) with each of its
/// ReplicaSets' on every sync.
///
/// Why: comparing by [`equal_ignore_hash`] decoded and copied the Deployment's template again
/// for every ReplicaSet and walked both for the semantic comparison; that was 9.5% of the
/// manager's CPU in a rollout (README, issue 21). Here the Deployment's template is decoded
/// once per split, and the semantic walk runs only when two cheaper checks, exact in the
/// direction they answer, cannot tell: equal values are semantically equal, and two templates
/// whose containers differ in number, name or image are not.
pub struct TemplateMatcher {
    wanted: PodTemplateSpec,
    wanted_semantic: OnceLock<SemanticValue>,
}

impl TemplateMatcher {
    /// The matcher for `d`'s template.
    pub fn of(d: &CachedDeployment) -> Self {
        Self {
            wanted: stripped_of_hash_label(deployment_template(d)),
            wanted_semantic: OnceLock::new(),
        }
    }

    /// EqualIgnoreHash of the Deployment's template and `rs`'s.
    pub fn matches(&self, rs: &CachedReplicaSet) -> bool {
        let candidate = stripped_of_hash_label(replica_set_template(rs));
        if containers_plainly_differ(&candidate, &self.wanted) {
            return false;
        }
        candidate == self.wanted
            || self
                .wanted_semantic
                .get_or_init(|| SemanticValue::of(&self.wanted))
                .equals(&SemanticValue::of(&candidate))
    }
}

/// Whether the two templates' containers differ in number, or one pair in name or image: each
/// makes them semantically different (a list compares by length and element; a name is a
/// string; an image an optional string, where absent and a value differ).
fn containers_plainly_differ(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    fn containers(t: &PodTemplateSpec) -> &[Container] {
        t.spec
            .as_ref()
            .map(|spec| spec.containers.as_slice())
            .unwrap_or_default()
    }
    let (a, b) = (containers(a), containers(b));
    a.len() != b.len()
        || a.iter()
            .zip(b)
            .any(|(x, y)| x.name != y.name || x.image != y.image)
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
    let matcher = TemplateMatcher::of(d);
    let mut sorted = rss.to_vec();
    sorted.sort_by(|a, b| by_creation(a, b));
    sorted.into_iter().find(|rs| matcher.matches(rs))
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

    /// `t` with the label `key=value` added to the labels it has.
    fn with_label(mut t: PodTemplateSpec, key: &str, value: &str) -> PodTemplateSpec {
        if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(key.to_owned(), value.to_owned());
        }
        t
    }

    #[test]
    fn the_pod_template_hash_ignores_the_hash_label() {
        let t = template("nginx:1.27");
        let labelled = with_label(t.clone(), POD_TEMPLATE_HASH_LABEL, "zzz");
        assert_eq!(
            pod_template_hash(&t, None),
            pod_template_hash(&labelled, None)
        );
        assert_eq!(pod_template_hash(&t, None), history::compute_hash(&t, None));
        assert_ne!(
            pod_template_hash(&t, None),
            pod_template_hash(&template("nginx:1.28"), None)
        );
    }

    fn with_template(mut r: CachedReplicaSet, image: &str, hash: &str) -> CachedReplicaSet {
        let t = with_label(template(image), POD_TEMPLATE_HASH_LABEL, hash);
        if let Some(spec) = r.spec.as_mut() {
            spec.template = Some(compact(&t));
        }
        r
    }

    #[test]
    fn equal_ignore_hash_table() {
        let base = template("nginx:1");
        let hashed = with_label(base.clone(), POD_TEMPLATE_HASH_LABEL, "abc");
        let other_label = with_label(base.clone(), "tier", "x");
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
    fn matcher_agrees_with_equal_ignore_hash_table() {
        use k8s_openapi::api::core::v1::{Container, EnvVar, ResourceRequirements};
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

        // The Deployment's template (nginx:2) against ReplicaSet templates that each check of
        // the matcher decides: plainly equal, containers plainly different, and the semantic
        // walk both ways.
        let d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        let edit = |change: &dyn Fn(&mut PodTemplateSpec)| {
            let mut t = template("nginx:2");
            change(&mut t);
            t
        };
        fn first_container(t: &mut PodTemplateSpec) -> &mut Container {
            &mut t.spec.as_mut().expect("spec").containers[0]
        }
        let with_cpu = |cpu: &str| {
            let cpu = cpu.to_owned();
            move |t: &mut PodTemplateSpec| {
                first_container(t).resources = Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([("cpu".to_owned(), Quantity(cpu.clone()))])),
                    ..Default::default()
                });
            }
        };
        let mut d_with_cpu = d.clone();
        if let Some(spec) = d_with_cpu.spec.as_mut() {
            spec.template = compact(&edit(&with_cpu("1")));
        }
        let cases: Vec<(&str, &CachedDeployment, PodTemplateSpec, bool)> = vec![
            ("same template", &d, template("nginx:2"), true),
            ("other image", &d, template("nginx:3"), false),
            (
                "no image",
                &d,
                edit(&|t| first_container(t).image = None),
                false,
            ),
            (
                "other container name",
                &d,
                edit(&|t| first_container(t).name = "web".to_owned()),
                false,
            ),
            (
                "a second container",
                &d,
                edit(&|t| {
                    let extra = first_container(t).clone();
                    t.spec.as_mut().expect("spec").containers.push(extra);
                }),
                false,
            ),
            (
                "an env var (semantic walk, different)",
                &d,
                edit(&|t| {
                    first_container(t).env = Some(vec![EnvVar {
                        name: "A".to_owned(),
                        value: Some("1".to_owned()),
                        ..Default::default()
                    }]);
                }),
                false,
            ),
            (
                "an empty env list (semantic walk, equal to none)",
                &d,
                edit(&|t| first_container(t).env = Some(Vec::new())),
                true,
            ),
            (
                "1000m and 1 CPU (semantic walk, equal)",
                &d_with_cpu,
                edit(&with_cpu("1000m")),
                true,
            ),
        ];
        for (case, d, rs_template, want) in cases {
            let mut replica_set = rs("web-x", 1, 1, 1);
            let mut hashed = rs_template.clone();
            if let Some(labels) = hashed.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
                labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), "h".to_owned());
            }
            if let Some(spec) = replica_set.spec.as_mut() {
                spec.template = Some(compact(&hashed));
            }
            assert_eq!(
                equal_ignore_hash(&deployment_template(d), &rs_template),
                want,
                "{case}: equal_ignore_hash"
            );
            assert_eq!(
                TemplateMatcher::of(d).matches(&replica_set),
                want,
                "{case}: matcher"
            );
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
