//! Stable pod identity: ordinals, pod and claim names, the
//! identity labels, and building the pod and claims of one ordinal from a set's template.

use std::{collections::BTreeMap, ops::Range};

use informer::CachedPod;
use k8s_openapi::{
    api::{
        apps::v1::StatefulSet,
        core::v1::{
            PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodSpec, Volume,
        },
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};

/// Label holding the pod's own name, so a Service can select exactly one replica.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// Label holding the pod's ordinal (decimal).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// Label naming the ControllerRevision a pod was built from.
pub use history::STATEFULSET_REVISION_LABEL as REVISION_LABEL;

/// The parent name and ordinal encoded in a pod name `<parent>-<ordinal>`; ordinal -1 when the
/// name has no decimal suffix fitting an int32 (upstream `getParentNameAndOrdinal`).
pub fn parent_and_ordinal(pod_name: &str) -> (&str, i32) {
    let Some((parent, suffix)) = pod_name.rsplit_once('-') else {
        return ("", -1);
    };
    if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_digit()) {
        return ("", -1);
    }
    match suffix.parse::<i32>() {
        Ok(ordinal) => (parent, ordinal),
        Err(_) => (parent, -1),
    }
}

/// The ordinal of a pod, -1 if its name carries none.
pub fn pod_ordinal(pod: &CachedPod) -> i32 {
    parent_and_ordinal(pod.metadata.name.as_deref().unwrap_or_default()).1
}

/// `<set>-<ordinal>`.
pub fn pod_name(set_name: &str, ordinal: i32) -> String {
    format!("{set_name}-{ordinal}")
}

/// `<claim template>-<set>-<ordinal>`.
pub fn claim_name(template_name: &str, set_name: &str, ordinal: i32) -> String {
    format!("{template_name}-{set_name}-{ordinal}")
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

/// The ordinals a set wants: `[start, start + replicas)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrdinalRange {
    /// `spec.ordinals.start`, 0 when unset.
    pub start: i32,
    /// `spec.replicas` (the server defaults it to 1).
    pub replicas: i32,
}

impl OrdinalRange {
    /// The range of `set`.
    pub fn of(set: &StatefulSet) -> Self {
        let spec = set.spec.as_ref();
        Self {
            start: spec
                .and_then(|s| s.ordinals.as_ref())
                .and_then(|o| o.start)
                .unwrap_or(0),
            replicas: spec.and_then(|s| s.replicas).unwrap_or(1).max(0),
        }
    }

    /// kcm-rs only: the slots (index = ordinal - start) whose ordinal a pod name can carry,
    /// those in `0..=i32::MAX`: upstream parses a pod name's ordinal as int32, so a pod past it
    /// (`start + replicas` may pass it) or below 0 would never be recognised again. The planner
    /// leaves the other slots empty.
    pub fn nameable(self) -> Range<usize> {
        let start = i64::from(self.start);
        let len = usize::try_from(self.replicas).unwrap_or(0);
        let low = usize::try_from(-start).unwrap_or(0);
        let high = usize::try_from(i64::from(i32::MAX) - start + 1).unwrap_or(usize::MAX);
        low.min(len)..high.min(len)
    }

    /// kcm-rs only: the wanted ordinals outside [`Self::nameable`], as (how many, the first).
    pub fn unnameable(self) -> Option<(i64, i64)> {
        let len = usize::try_from(self.replicas).unwrap_or(0);
        let nameable = self.nameable();
        let count = len.saturating_sub(nameable.len());
        if count == 0 {
            return None;
        }
        // Below 0 they come first; otherwise they follow the nameable ones.
        let first = if nameable.start > 0 || nameable.is_empty() {
            0
        } else {
            nameable.end
        };
        let as_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        Some((as_i64(count), i64::from(self.start) + as_i64(first)))
    }

    /// Whether `ordinal` is one of the wanted ordinals.
    pub fn contains(self, ordinal: i32) -> bool {
        ordinal >= self.start
            && i64::from(ordinal) < i64::from(self.start) + i64::from(self.replicas)
    }
}

/// Whether the pod's name, namespace and pod-name label are those of its ordinal in `set`
/// (upstream `identityMatches`).
pub fn identity_matches(set: &StatefulSet, pod: &CachedPod) -> bool {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let (parent, ordinal) = parent_and_ordinal(name);
    ordinal >= 0
        && parent == set_name(set)
        && name == pod_name(set_name(set), ordinal)
        && pod.metadata.namespace == set.metadata.namespace
        && label(pod, POD_NAME_LABEL) == Some(name)
}

/// Whether every claim template has a volume of its name pointing at the pod's claim
/// (upstream `storageMatches`).
pub fn storage_matches(set: &StatefulSet, pod: &CachedPod) -> bool {
    let ordinal = pod_ordinal(pod);
    if ordinal < 0 {
        return false;
    }
    let volumes = pod
        .spec
        .as_ref()
        .map(|spec| &spec.volumes[..])
        .unwrap_or_default();
    claim_templates(set).iter().all(|template| {
        let template_name = template.metadata.name.as_deref().unwrap_or_default();
        volumes.iter().any(|volume| {
            volume.name == template_name
                && volume
                    .persistent_volume_claim
                    .as_ref()
                    .is_some_and(|claim| {
                        claim.claim_name == claim_name(template_name, set_name(set), ordinal)
                    })
        })
    })
}

/// A label value of a pod.
pub fn label<'a>(pod: &'a CachedPod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.get(key)
}

/// The revision name a pod was built from (its `controller-revision-hash` label), or "".
pub fn pod_revision(pod: &CachedPod) -> &str {
    label(pod, REVISION_LABEL).unwrap_or_default()
}

/// The set's claim templates.
pub fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|spec| spec.volume_claim_templates.as_deref())
        .unwrap_or_default()
}

/// Sets the identity of `pod` for `ordinal` of `set` (upstream `updateIdentity`): name,
/// namespace, pod-name and pod-index labels.
pub fn set_identity(set: &StatefulSet, pod: &mut Pod, ordinal: i32) {
    let name = pod_name(set_name(set), ordinal);
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.to_owned(), name.clone());
    labels.insert(POD_INDEX_LABEL.to_owned(), ordinal.to_string());
    pod.metadata.name = Some(name);
    pod.metadata.namespace.clone_from(&set.metadata.namespace);
}

/// Points the pod's claim volumes at the ordinal's claims (upstream `updateStorage`): one
/// volume per claim template, in template order, then the pod's other volumes.
pub fn set_storage(set: &StatefulSet, pod: &mut Pod, ordinal: i32) {
    let templates = claim_templates(set);
    if templates.is_empty() {
        return;
    }
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    let mut volumes: Vec<Volume> = templates
        .iter()
        .map(|template| {
            let template_name = template.metadata.name.clone().unwrap_or_default();
            Volume {
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: claim_name(&template_name, set_name(set), ordinal),
                    read_only: Some(false),
                }),
                name: template_name,
                ..Volume::default()
            }
        })
        .collect();
    for volume in spec.volumes.take().unwrap_or_default() {
        if !volumes.iter().any(|claim| claim.name == volume.name) {
            volumes.push(volume);
        }
    }
    spec.volumes = Some(volumes);
}

/// The pod of `ordinal` built from `template_set` (the set with the chosen revision applied),
/// labelled with `revision_name` (upstream `newVersionedStatefulSetPod`).
pub fn new_pod(
    set: &StatefulSet,
    template_set: &StatefulSet,
    controller_ref: &OwnerReference,
    ordinal: i32,
    revision_name: &str,
) -> Pod {
    let template = template_set.spec.as_ref().map(|spec| &spec.template);
    let template_meta = template.and_then(|t| t.metadata.as_ref());
    let mut pod = Pod {
        metadata: ObjectMeta {
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: template_meta.and_then(|m| m.annotations.clone()),
            finalizers: template_meta.and_then(|m| m.finalizers.clone()),
            generate_name: Some(format!("{}-", set_name(set))),
            owner_references: Some(vec![controller_ref.clone()]),
            ..ObjectMeta::default()
        },
        spec: template.and_then(|t| t.spec.clone()),
        status: None,
    };
    set_identity(set, &mut pod, ordinal);
    set_storage(set, &mut pod, ordinal);
    let name = pod.metadata.name.clone();
    let spec = pod.spec.get_or_insert_with(PodSpec::default);
    spec.hostname = name;
    spec.subdomain = set.spec.as_ref().and_then(|s| s.service_name.clone());
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.to_owned(), revision_name.to_owned());
    pod
}

/// The claims the pod of `ordinal` needs (upstream `getPersistentVolumeClaims`): each
/// template renamed, in the set's namespace, labelled with the template's labels and the
/// selector's `matchLabels`.
pub fn pod_claims(set: &StatefulSet, ordinal: i32) -> Vec<PersistentVolumeClaim> {
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|spec| spec.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|template| {
            let mut claim = template.clone();
            let template_name = template.metadata.name.as_deref().unwrap_or_default();
            claim.metadata.name = Some(claim_name(template_name, set_name(set), ordinal));
            claim.metadata.namespace.clone_from(&set.metadata.namespace);
            let labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(match_labels.clone());
            claim.status = None;
            claim
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn set(value: serde_json::Value) -> StatefulSet {
        serde_json::from_value(value).expect("valid set")
    }

    fn web() -> StatefulSet {
        set(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {
                "replicas": 3,
                "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}],
                             "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "emptyDir": {}}]}
                },
                "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"tier": "db"}},
                                          "spec": {"accessModes": ["ReadWriteOnce"]}}]
            }
        }))
    }

    #[test]
    fn parses_parent_and_ordinal() {
        let cases = [
            ("web-0", ("web", 0)),
            ("web-12", ("web", 12)),
            ("my-web-3", ("my-web", 3)),
            ("web-", ("", -1)),
            ("web", ("", -1)),
            ("web-x1", ("", -1)),
            ("web-2147483647", ("web", 2_147_483_647)),
            ("web-2147483648", ("web", -1)),
        ];
        for (name, want) in cases {
            assert_eq!(parent_and_ordinal(name), want, "{name}");
        }
    }

    #[test]
    fn unnameable_ordinals_are_those_outside_int32() {
        let max = i64::from(i32::MAX);
        let cases = [
            ((0, 3), None),
            ((i32::MAX - 2, 3), None),
            ((i32::MAX - 1, 3), Some((1, max + 1))),
            ((i32::MAX, i32::MAX), Some((max - 1, max + 1))),
            ((-2, 5), Some((2, -2))),
            ((-5, 2), Some((2, -5))),
            ((i32::MIN, i32::MAX), Some((max, i64::from(i32::MIN)))),
            ((7, 0), None),
        ];
        for ((start, replicas), want) in cases {
            let range = OrdinalRange { start, replicas };
            assert_eq!(
                range.unnameable(),
                want,
                "start {start}, replicas {replicas}"
            );
        }
    }

    #[test]
    fn ordinal_range_honours_start() {
        let mut with_start = web();
        with_start.spec.as_mut().unwrap().ordinals =
            Some(serde_json::from_value(json!({"start": 5})).unwrap());
        let range = OrdinalRange::of(&with_start);
        assert_eq!(
            range,
            OrdinalRange {
                start: 5,
                replicas: 3
            }
        );
        let inside: Vec<i32> = (0..10).filter(|o| range.contains(*o)).collect();
        assert_eq!(inside, vec![5, 6, 7]);
        assert_eq!(
            OrdinalRange::of(&web()),
            OrdinalRange {
                start: 0,
                replicas: 3
            }
        );
    }

    #[test]
    fn builds_the_pod_of_an_ordinal() {
        let set = web();
        let owner = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "StatefulSet".into(),
            name: "web".into(),
            uid: "u1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let pod = new_pod(&set, &set, &owner, 2, "web-abc");
        assert_eq!(pod.metadata.name.as_deref(), Some("web-2"));
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let labels = pod.metadata.labels.clone().unwrap();
        assert_eq!(labels["app"], "web");
        assert_eq!(labels[POD_NAME_LABEL], "web-2");
        assert_eq!(labels[POD_INDEX_LABEL], "2");
        assert_eq!(labels[REVISION_LABEL], "web-abc");
        assert_eq!(pod.metadata.annotations.clone().unwrap()["a"], "b");
        let spec = pod.spec.clone().unwrap();
        assert_eq!(spec.hostname.as_deref(), Some("web-2"));
        assert_eq!(spec.subdomain.as_deref(), Some("nginx"));
        let volumes: Vec<(String, Option<String>)> = spec
            .volumes
            .unwrap()
            .into_iter()
            .map(|v| (v.name, v.persistent_volume_claim.map(|c| c.claim_name)))
            .collect();
        assert_eq!(
            volumes,
            vec![
                ("data".to_owned(), Some("data-web-2".to_owned())),
                ("cfg".to_owned(), None)
            ]
        );
        assert!(identity_matches(&set, &CachedPod::from(&pod)));
        assert!(storage_matches(&set, &CachedPod::from(&pod)));

        let mut renamed = pod.clone();
        renamed
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(POD_NAME_LABEL);
        assert!(!identity_matches(&set, &CachedPod::from(renamed)));
        let mut unmounted = pod;
        unmounted.spec.as_mut().unwrap().volumes = None;
        assert!(!storage_matches(&set, &CachedPod::from(unmounted)));
    }

    #[test]
    fn claims_are_named_and_labelled_per_ordinal() {
        let claims = pod_claims(&web(), 1);
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0].metadata.name.as_deref(), Some("data-web-1"));
        assert_eq!(claims[0].metadata.namespace.as_deref(), Some("default"));
        let labels = claims[0].metadata.labels.clone().unwrap();
        assert_eq!(labels["tier"], "db");
        assert_eq!(labels["app"], "web");
    }
}
