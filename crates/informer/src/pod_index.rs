//! Indexes by controller (informers.md §7; upstream `AddPodControllerIndexer`): let the
//! controllers find an owner's pods (or ReplicaSets), plus the orphans of its namespace that it
//! may adopt, without scanning the namespace.
//!
//! The key is the namespace, kind, name and UID of the controller reference, not the UID
//! alone (upstream v1.35, kubernetes#134654): an ownerReference is only a match when all four
//! agree, so a pod in another namespace, or one whose reference names another object, that
//! carries a ReplicaSet's UID is never counted, released or deleted by that ReplicaSet.
//!
//! Upstream indexes pods this way; kcm-rs indexes ReplicaSets the same way
//! ([`CONTROLLER_UID_INDEX`]) so the Deployment controller's claim looks at its own and the
//! orphaned ReplicaSets only, instead of listing every ReplicaSet of the namespace on each
//! sync. The candidates differ only by ReplicaSets another controller owns, which claiming
//! ignores anyway.

use k8s_openapi::{
    api::apps::v1::ControllerRevision, apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::Resource;

use crate::{CachedPod, CachedReplicaSet, InformerResource};

/// A cached kind whose informer is indexed by controller reference: the index it is found
/// in and the key of its namespace's orphans. Pods use upstream's own index
/// ([`POD_CONTROLLER_UID_INDEX`], orphans under `_ORPHAN_POD`), every other kind
/// [`CONTROLLER_UID_INDEX`] (orphans under `_ORPHAN`); the two orphan keys differ, so a lookup
/// that paired an index with the other kind's key would find nothing, silently. Going through
/// this trait ([`crate::SharedInformer::add_controller_indexer`],
/// [`crate::Lister::controlled_by_or_orphaned`]) pairs them once.
pub trait ControllerIndexed: InformerResource {
    /// The index's name.
    const INDEX: &'static str;

    /// The index function: the controller reference's key, or the namespace's orphan key.
    fn controller_index_values(&self) -> Vec<String>;

    /// The index value of the orphans of `namespace`.
    fn orphan_key(namespace: &str) -> String;
}

impl ControllerIndexed for CachedPod {
    const INDEX: &'static str = POD_CONTROLLER_UID_INDEX;

    fn controller_index_values(&self) -> Vec<String> {
        pod_controller_index(self)
    }

    fn orphan_key(namespace: &str) -> String {
        orphan_pod_index_key(namespace)
    }
}

/// Kinds indexed under [`CONTROLLER_UID_INDEX`].
macro_rules! controller_uid_indexed {
    ($($kind:ty),+) => {$(
        impl ControllerIndexed for $kind {
            const INDEX: &'static str = CONTROLLER_UID_INDEX;

            fn controller_index_values(&self) -> Vec<String> {
                controller_index(self)
            }

            fn orphan_key(namespace: &str) -> String {
                orphan_index_key(namespace)
            }
        }
    )+};
}

controller_uid_indexed!(CachedReplicaSet, ControllerRevision);

/// The index name, shared by all controllers that register it on the pod informer.
pub const POD_CONTROLLER_UID_INDEX: &str = "podControllerUID";

/// Prefix of the index value of pods without a controller.
pub const ORPHAN_POD_INDEX_KEY: &str = "_ORPHAN_POD";

/// The index value under which the orphan pods of `namespace` are found.
pub fn orphan_pod_index_key(namespace: &str) -> String {
    format!("{ORPHAN_POD_INDEX_KEY}/{namespace}")
}

/// Index function: [`controller_index_key`] of the pod's controller ownerReference, or
/// `_ORPHAN_POD/<namespace>` when no ownerReference has `controller: true`.
pub fn pod_controller_index(pod: &CachedPod) -> Vec<String> {
    vec![controller_key_or_else(&pod.metadata, orphan_pod_index_key)]
}

/// The index value of the objects whose controller reference names `kind` `name` with `uid`
/// in `namespace` (upstream `PodControllerIndexKey`; apiVersion is not part of it).
pub fn controller_index_key(namespace: &str, kind: &str, name: &str, uid: &str) -> String {
    format!("{namespace}/{kind}/{name}/{uid}")
}

/// The index value under which the dependents `owner` controls are found.
pub fn owner_index_key<K: Resource<DynamicType = ()>>(owner: &K) -> String {
    let meta = owner.meta();
    controller_index_key(
        meta.namespace.as_deref().unwrap_or_default(),
        &K::kind(&()),
        meta.name.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default(),
    )
}

/// The index name of [`controller_index`] (for ReplicaSets, say).
pub const CONTROLLER_UID_INDEX: &str = "controllerUID";

/// Prefix of the [`CONTROLLER_UID_INDEX`] value of objects without a controller.
pub const ORPHAN_INDEX_KEY: &str = "_ORPHAN";

/// The [`CONTROLLER_UID_INDEX`] value under which the orphans of `namespace` are found.
pub fn orphan_index_key(namespace: &str) -> String {
    format!("{ORPHAN_INDEX_KEY}/{namespace}")
}

/// Index function for any namespaced kind: [`controller_index_key`] of the object's
/// controller ownerReference, or `_ORPHAN/<namespace>` when it has none.
pub fn controller_index<K: Resource>(obj: &K) -> Vec<String> {
    vec![controller_key_or_else(obj.meta(), orphan_index_key)]
}

fn controller_key_or_else(meta: &ObjectMeta, orphan_key: fn(&str) -> String) -> String {
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let controller = meta
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true));
    match controller {
        Some(owner) => controller_index_key(namespace, &owner.kind, &owner.name, &owner.uid),
        None => orphan_key(namespace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    /// The metadata of object `name` in namespace `ns1` with `owner_references`.
    fn in_ns1(name: &str, owner_references: Option<Vec<OwnerReference>>) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns1".into()),
            name: Some(name.into()),
            owner_references,
            ..ObjectMeta::default()
        }
    }

    fn owner(uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: format!("rs-{uid}"),
            uid: uid.into(),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn indexes_controller_uid_or_namespace_orphan_key() {
        let cases: Vec<(&str, Option<Vec<OwnerReference>>, &str)> = vec![
            ("no owners", None, "_ORPHAN_POD/ns1"),
            ("empty owners", Some(vec![]), "_ORPHAN_POD/ns1"),
            (
                "non-controller owner",
                Some(vec![owner("u1", None), owner("u2", Some(false))]),
                "_ORPHAN_POD/ns1",
            ),
            (
                "controller owner",
                Some(vec![owner("u1", Some(true))]),
                "ns1/ReplicaSet/rs-u1/u1",
            ),
            (
                "controller among others",
                Some(vec![owner("u1", Some(false)), owner("u2", Some(true))]),
                "ns1/ReplicaSet/rs-u2/u2",
            ),
        ];
        for (name, owner_references, want) in cases {
            let pod = CachedPod {
                metadata: in_ns1("p", owner_references).into(),
                ..CachedPod::default()
            };
            assert_eq!(pod_controller_index(&pod), vec![want.to_string()], "{name}");
        }
    }

    #[test]
    fn indexes_replica_sets_by_controller_or_namespace_orphan_key() {
        use k8s_openapi::api::apps::v1::ReplicaSet;
        let cases: Vec<(&str, Option<Vec<OwnerReference>>, &str)> = vec![
            ("orphan", None, "_ORPHAN/ns1"),
            (
                "non-controller owner",
                Some(vec![owner("u1", None)]),
                "_ORPHAN/ns1",
            ),
            (
                "controlled",
                Some(vec![owner("d1", Some(true))]),
                "ns1/ReplicaSet/rs-d1/d1",
            ),
        ];
        for (name, owner_references, want) in cases {
            let replica_set = ReplicaSet {
                metadata: in_ns1("rs", owner_references),
                ..ReplicaSet::default()
            };
            assert_eq!(
                controller_index(&replica_set),
                vec![want.to_string()],
                "{name}"
            );
        }
    }

    #[test]
    fn owner_key_matches_the_key_of_its_dependents_only() {
        let owner_rs = crate::CachedReplicaSet {
            metadata: ObjectMeta {
                uid: Some("u1".into()),
                ..in_ns1("rs-u1", None)
            }
            .into(),
            ..Default::default()
        };
        let dependent = |namespace: &str, reference: OwnerReference| CachedPod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                ..in_ns1("p", Some(vec![reference]))
            }
            .into(),
            ..CachedPod::default()
        };
        let key = owner_index_key(&owner_rs);
        assert_eq!(key, "ns1/ReplicaSet/rs-u1/u1");
        assert_eq!(
            pod_controller_index(&dependent("ns1", owner("u1", Some(true)))),
            vec![key.clone()]
        );
        // The same UID in another namespace, under another name or kind: not a dependent.
        let mut renamed = owner("u1", Some(true));
        renamed.name = "other".into();
        let mut other_kind = owner("u1", Some(true));
        other_kind.kind = "StatefulSet".into();
        for pod in [
            dependent("ns2", owner("u1", Some(true))),
            dependent("ns1", renamed),
            dependent("ns1", other_kind),
        ] {
            assert_ne!(pod_controller_index(&pod), vec![key.clone()]);
        }
    }
}
