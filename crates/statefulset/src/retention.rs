//! PVC retention: which owner references a claim must carry so the
//! garbage collector deletes it when the set is deleted (`whenDeleted: Delete`) or when its
//! ordinal is scaled away (`whenScaled: Delete`), and the stale-claim check before creating a pod.

use informer::CachedPod;
use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::PersistentVolumeClaim},
    apimachinery::pkg::apis::meta::v1::OwnerReference,
};

use crate::identity::{OrdinalRange, pod_ordinal};

/// Policy value meaning "delete the claim with its owner".
const DELETE: &str = "Delete";

/// The resolved retention policy of a set (both default to Retain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// `whenDeleted: Delete`.
    pub delete_with_set: bool,
    /// `whenScaled: Delete`.
    pub delete_on_scale_down: bool,
}

impl RetentionPolicy {
    /// The policy of `set`.
    pub fn of(set: &StatefulSet) -> Self {
        let policy = set
            .spec
            .as_ref()
            .and_then(|spec| spec.persistent_volume_claim_retention_policy.as_ref());
        Self {
            delete_with_set: policy.and_then(|p| p.when_deleted.as_deref()) == Some(DELETE),
            delete_on_scale_down: policy.and_then(|p| p.when_scaled.as_deref()) == Some(DELETE),
        }
    }

    fn retains_all(self) -> bool {
        !self.delete_with_set && !self.delete_on_scale_down
    }

    /// Which of (set ref, pod ref) a claim of a pod with the given scale state must carry.
    fn required_refs(self, scaled_down: bool) -> (bool, bool) {
        match (self.delete_with_set, self.delete_on_scale_down) {
            (false, false) => (false, false),
            (true, false) => (true, false),
            (false, true) => (false, scaled_down),
            (true, true) => (!scaled_down, scaled_down),
        }
    }
}

/// The owners a claim's references are judged against.
struct Owners<'a> {
    set_name: &'a str,
    set_uid: &'a str,
    pod_name: &'a str,
    pod_uid: &'a str,
}

impl<'a> Owners<'a> {
    fn new(set: &'a StatefulSet, pod: &'a CachedPod) -> Self {
        Self {
            set_name: set.metadata.name.as_deref().unwrap_or_default(),
            set_uid: set.metadata.uid.as_deref().unwrap_or_default(),
            pod_name: pod.metadata.name.as_deref().unwrap_or_default(),
            pod_uid: pod.metadata.uid.as_deref().unwrap_or_default(),
        }
    }

    fn names_set(&self, owner: &OwnerReference) -> bool {
        owner.api_version == "apps/v1" && owner.kind == "StatefulSet" && owner.name == self.set_name
    }

    fn names_pod(&self, owner: &OwnerReference) -> bool {
        owner.api_version == "v1" && owner.kind == "Pod" && owner.name == self.pod_name
    }

    fn is_set(&self, owner: &OwnerReference) -> bool {
        self.names_set(owner) && owner.uid == self.set_uid
    }

    fn is_pod(&self, owner: &OwnerReference) -> bool {
        self.names_pod(owner) && !self.pod_uid.is_empty() && owner.uid == self.pod_uid
    }

    fn is_stale(&self, owner: &OwnerReference) -> bool {
        (self.names_set(owner) && !self.is_set(owner))
            || (self.names_pod(owner) && !self.is_pod(owner))
    }

    fn has_unexpected_controller(&self, refs: &[OwnerReference]) -> bool {
        refs.iter().any(|owner| {
            self.is_stale(owner)
                || (owner.controller == Some(true)
                    && !self.names_set(owner)
                    && !self.names_pod(owner))
        })
    }
}

fn refs(claim: &PersistentVolumeClaim) -> &[OwnerReference] {
    claim
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default()
}

fn scaled_down(set: &StatefulSet, pod: &CachedPod) -> bool {
    !OrdinalRange::of(set).contains(pod_ordinal(pod))
}

/// Whether `claim` (of `pod`) carries exactly the owner references the policy asks for
/// (upstream `isClaimOwnerUpToDate`).
pub fn claim_owner_up_to_date(
    set: &StatefulSet,
    pod: &CachedPod,
    claim: &PersistentVolumeClaim,
) -> bool {
    let owners = Owners::new(set, pod);
    let refs = refs(claim);
    let policy = RetentionPolicy::of(set);
    if policy.retains_all() {
        if refs.iter().any(|owner| owners.is_stale(owner)) {
            return true;
        }
    } else if owners.has_unexpected_controller(refs) {
        return !refs
            .iter()
            .any(|owner| owners.is_set(owner) || owners.is_pod(owner));
    }
    if refs.iter().any(|owner| {
        (owners.is_set(owner) || owners.is_pod(owner)) && owner.controller != Some(true)
    }) {
        return false;
    }
    let (want_set, want_pod) = policy.required_refs(scaled_down(set, pod));
    let has_set = refs.iter().any(|owner| owners.is_set(owner));
    let has_pod = refs.iter().any(|owner| owners.is_pod(owner));
    has_set == want_set && has_pod == want_pod
}

/// The owner references `claim` should carry (upstream `updateClaimOwnerRefForSetAndPod`):
/// ours removed, then the required controller refs added unless another controller owns it.
pub fn updated_claim_owners(
    set: &StatefulSet,
    pod: &CachedPod,
    claim: &PersistentVolumeClaim,
) -> Vec<OwnerReference> {
    let owners = Owners::new(set, pod);
    let unexpected = owners.has_unexpected_controller(refs(claim));
    let mut updated: Vec<OwnerReference> = refs(claim)
        .iter()
        .filter(|owner| !owners.names_set(owner) && !owners.names_pod(owner))
        .cloned()
        .collect();
    if unexpected {
        return updated;
    }
    let (want_set, want_pod) = RetentionPolicy::of(set).required_refs(scaled_down(set, pod));
    let controller_ref = |api_version: &str, kind: &str, name: &str, uid: &str| OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    if want_set {
        updated.push(controller_ref(
            "apps/v1",
            "StatefulSet",
            owners.set_name,
            owners.set_uid,
        ));
    }
    if want_pod && !owners.pod_uid.is_empty() {
        updated.push(controller_ref("v1", "Pod", owners.pod_name, owners.pod_uid));
    }
    updated
}

/// Whether an existing claim still belongs to a previous pod of the same name, which the
/// garbage collector is about to delete (upstream `isStale` check before creating a pod): only
/// with `whenScaled: Delete`.
pub fn claim_is_stale(set: &StatefulSet, pod: &CachedPod, claim: &PersistentVolumeClaim) -> bool {
    let owners = Owners::new(set, pod);
    RetentionPolicy::of(set).delete_on_scale_down
        && refs(claim)
            .iter()
            .any(|owner| owners.names_pod(owner) && owner.uid != owners.pod_uid)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn set(when_deleted: &str, when_scaled: &str, replicas: i32) -> StatefulSet {
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "set-uid"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted, "whenScaled": when_scaled}
            }
        }))
        .unwrap()
    }

    fn pod(ordinal: i32) -> CachedPod {
        serde_json::from_value(json!({
            "metadata": {"name": format!("web-{ordinal}"), "namespace": "default", "uid": format!("pod-uid-{ordinal}")}
        }))
        .unwrap()
    }

    fn claim(owners: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": "data-web-1", "ownerReferences": owners}}),
        )
        .unwrap()
    }

    fn set_ref() -> serde_json::Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set-uid", "controller": true, "blockOwnerDeletion": true})
    }

    fn pod_ref(uid: &str) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": uid, "controller": true, "blockOwnerDeletion": true})
    }

    #[test]
    fn up_to_date_per_policy() {
        // ((whenDeleted, whenScaled), replicas (web-1 is scaled down at 1), owners) -> want
        let (retain, delete) = ("Retain", "Delete");
        let pod_ref_1 = || pod_ref("pod-uid-1");
        let uncontrolled = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "set-uid"});
        let cases = [
            // Retain/Retain: no refs, and a set ref to remove.
            ((retain, retain), 3, json!([]), true),
            ((retain, retain), 3, json!([set_ref()]), false),
            // Delete on set delete: the set ref missing, then present.
            ((delete, retain), 3, json!([]), false),
            ((delete, retain), 3, json!([set_ref()]), true),
            // Delete on scale: in range without ref; scaled down without, then with a pod ref.
            ((retain, delete), 3, json!([]), true),
            ((retain, delete), 1, json!([]), false),
            ((retain, delete), 1, json!([pod_ref_1()]), true),
            // Delete/Delete: in range wants the set ref, scaled down the pod ref.
            ((delete, delete), 3, json!([pod_ref_1()]), false),
            ((delete, delete), 1, json!([pod_ref_1()]), true),
            // A stale pod ref is left alone.
            ((retain, delete), 1, json!([pod_ref("old-uid")]), true),
            // A ref without the controller flag.
            ((delete, retain), 3, json!([uncontrolled]), false),
        ];
        for ((when_deleted, when_scaled), replicas, owners, want) in cases {
            let set = set(when_deleted, when_scaled, replicas);
            let case = format!("{when_deleted}/{when_scaled} at {replicas}: {owners}");
            assert_eq!(
                claim_owner_up_to_date(&set, &pod(1), &claim(owners)),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn updates_to_the_required_refs() {
        let scaled_down = set("Retain", "Delete", 1);
        let updated = updated_claim_owners(&scaled_down, &pod(1), &claim(json!([])));
        assert_eq!(updated.len(), 1);
        assert_eq!(
            (updated[0].kind.as_str(), updated[0].uid.as_str()),
            ("Pod", "pod-uid-1")
        );
        let fixed = claim(serde_json::to_value(&updated).unwrap());
        assert!(claim_owner_up_to_date(&scaled_down, &pod(1), &fixed));

        let with_set = set("Delete", "Delete", 3);
        let updated =
            updated_claim_owners(&with_set, &pod(1), &claim(json!([pod_ref("pod-uid-1")])));
        assert_eq!(updated.len(), 1);
        assert_eq!(updated[0].kind, "StatefulSet");
    }

    #[test]
    fn stale_claims_block_creation_only_when_deleting_on_scale() {
        let mut fresh = pod(1);
        fresh.metadata.uid = None;
        let stale = claim(json!([pod_ref("old-uid")]));
        assert!(claim_is_stale(&set("Retain", "Delete", 3), &fresh, &stale));
        assert!(!claim_is_stale(&set("Retain", "Retain", 3), &fresh, &stale));
        assert!(!claim_is_stale(
            &set("Retain", "Delete", 3),
            &fresh,
            &claim(json!([]))
        ));
    }
}
