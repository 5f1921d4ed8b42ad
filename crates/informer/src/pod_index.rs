//! The pod index by controller UID (informers.md §7; upstream `AddPodControllerUIDIndexer`):
//! lets the ReplicaSet, Deployment and StatefulSet controllers find an owner's pods, plus the
//! orphans of its namespace that it may adopt, without scanning every pod.

use k8s_openapi::api::core::v1::Pod;

/// The index name, shared by all controllers that register it on the pod informer.
pub const POD_CONTROLLER_UID_INDEX: &str = "podControllerUID";

/// Prefix of the index value of pods without a controller.
pub const ORPHAN_POD_INDEX_KEY: &str = "_ORPHAN_POD";

/// The index value under which the orphan pods of `namespace` are found.
pub fn orphan_pod_index_key(namespace: &str) -> String {
    format!("{ORPHAN_POD_INDEX_KEY}/{namespace}")
}

/// Index function: the UID of the pod's controller ownerReference, or
/// `_ORPHAN_POD/<namespace>` when no ownerReference has `controller: true`.
pub fn pod_controller_uid_index(pod: &Pod) -> Vec<String> {
    let controller = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|owner| owner.controller == Some(true));
    match controller {
        Some(owner) => vec![owner.uid.clone()],
        None => vec![orphan_pod_index_key(
            pod.metadata.namespace.as_deref().unwrap_or_default(),
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

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
                "u1",
            ),
            (
                "controller among others",
                Some(vec![owner("u1", Some(false)), owner("u2", Some(true))]),
                "u2",
            ),
        ];
        for (name, owner_references, want) in cases {
            let pod = Pod {
                metadata: ObjectMeta {
                    namespace: Some("ns1".into()),
                    name: Some("p".into()),
                    owner_references,
                    ..ObjectMeta::default()
                },
                ..Pod::default()
            };
            assert_eq!(
                pod_controller_uid_index(&pod),
                vec![want.to_string()],
                "{name}"
            );
        }
    }
}
