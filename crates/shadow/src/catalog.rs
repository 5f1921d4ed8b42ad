//! The kinds shadow mode compares, one entry per resource, built from what the enabled
//! controllers declare in their descriptors ([`ComparedKind`]).
//!
//! Why: shadow mode knows controllers only through their descriptors. Several controllers may
//! declare the same resource (pods are written by the ReplicaSet and the StatefulSet
//! controllers, ReplicaSets by the ReplicaSet and the Deployment controllers), so their
//! declarations are merged here once: the comparison and the watch log then ask one entry per
//! resource, whichever controllers declared it.
//!
//! The owners shadow mode follows are the objects the controllers reconcile: the kinds a
//! controller declares with their [`Dependents`] (Deployments, ReplicaSets, StatefulSets,
//! DaemonSets), which say how each kind of object created for such an owner is recognized.
//! Kinds declared without (pods, claims, revisions) are compared but not followed as owners: a
//! claim whose controller is its pod (a scale-down's retention policy) is judged by itself, not
//! by what became of the pod.

use std::{collections::BTreeMap, sync::Arc};

use controller_toolkit::shadow_view::{ComparedKind, Dependents, DependentsMatch, KindCache};
use informer::SharedInformerFactory;
use k8s_openapi::api::core::v1::PodTemplateSpec;

/// Whether two pod templates are the same for the controller that created them.
pub type TemplatesEqual = fn(&PodTemplateSpec, &PodTemplateSpec) -> bool;

/// Reads one kind's cache from the shared informers, if a controller asked for it.
pub type CacheOf = fn(&SharedInformerFactory) -> Option<Arc<dyn KindCache>>;

/// One resource as shadow mode compares it: the union of what every controller declaring it
/// compares.
#[derive(Debug, Clone)]
pub struct ComparedResource {
    /// The kind as owner references name it (the first declaration's).
    pub kind: &'static str,
    /// The fields a status write is compared on (conditions come on top).
    pub status_fields: Vec<&'static str>,
    /// The fields a write of the whole object is compared on.
    pub object_fields: Vec<&'static str>,
    /// Annotations with these prefixes are compared on writes of the whole object.
    pub annotation_prefixes: Vec<&'static str>,
    /// Whether those annotations are compared on status writes too.
    pub annotations_on_status: bool,
    /// How each kind of object created for an owner of this kind is recognized; empty when
    /// the kind is not followed as an owner (no controller declares it with its status).
    pub dependents: &'static [Dependents],
    /// Whether a controller decides its writes from the nodes too (any declaration's).
    pub decided_from_nodes: bool,
    /// Where it is read from (the first declaration's).
    pub cache: CacheOf,
}

/// Every resource shadow mode compares, by resource (plural).
#[derive(Debug, Clone)]
pub struct Catalog {
    resources: BTreeMap<&'static str, ComparedResource>,
}

impl Catalog {
    /// Merges `kinds` by resource: the union of their compared fields and annotation prefixes,
    /// annotations compared on status writes if any declaration says so, the first declared
    /// kind name and cache; the dependents' match of the first declaration that follows the kind
    /// as an owner.
    pub fn new(kinds: &[ComparedKind]) -> Self {
        let mut resources: BTreeMap<&'static str, ComparedResource> = BTreeMap::new();
        for declared in kinds {
            let merged = resources
                .entry(declared.resource)
                .or_insert_with(|| ComparedResource {
                    kind: declared.kind,
                    status_fields: Vec::new(),
                    object_fields: Vec::new(),
                    annotation_prefixes: Vec::new(),
                    annotations_on_status: false,
                    dependents: &[],
                    decided_from_nodes: false,
                    cache: declared.cache,
                });
            union(&mut merged.status_fields, declared.status_fields);
            union(&mut merged.object_fields, declared.object_fields);
            union(
                &mut merged.annotation_prefixes,
                declared.annotation_prefixes,
            );
            merged.annotations_on_status |= declared.annotations_on_status;
            merged.decided_from_nodes |= declared.decided_from_nodes;
            if merged.dependents.is_empty() {
                merged.dependents = declared.dependents;
            }
        }
        Self { resources }
    }

    /// The entry of `resource` (plural), if a controller declared it.
    pub fn get(&self, resource: &str) -> Option<&ComparedResource> {
        self.resources.get(resource)
    }

    /// Whether a controller decides the writes of `resource` from the nodes too.
    pub fn decided_from_nodes(&self, resource: &str) -> bool {
        self.get(resource)
            .is_some_and(|compared| compared.decided_from_nodes)
    }

    /// Every compared resource with its entry, by resource name.
    pub fn resources(&self) -> impl Iterator<Item = (&'static str, &ComparedResource)> {
        self.resources
            .iter()
            .map(|(resource, compared)| (*resource, compared))
    }

    /// The resource (plural) of the owner kind `kind`, as an owner reference names it; `None`
    /// for kinds not followed as owners.
    pub fn owner_resource(&self, kind: &str) -> Option<&'static str> {
        self.resources
            .iter()
            .find(|(_, compared)| compared.kind == kind && !compared.dependents.is_empty())
            .map(|(resource, _)| *resource)
    }

    /// How the objects of `resource` created for an owner of `owner_resource` are recognized;
    /// `None` when the owner is not followed or declares no such dependents.
    pub fn dependents_of(&self, owner_resource: &str, resource: &str) -> Option<DependentsMatch> {
        self.get(owner_resource)?
            .dependents
            .iter()
            .find(|dependents| dependents.resource == resource)
            .map(|dependents| dependents.matched)
    }

    /// Whether created objects of `resource` are kept whole, to be matched by content: an
    /// owner kind matches them by template ([`DependentsMatch::Template`]) or by data
    /// ([`DependentsMatch::Data`]).
    pub fn kept_whole(&self, resource: &str) -> bool {
        self.resources.values().any(|compared| {
            compared.dependents.iter().any(|dependents| {
                dependents.resource == resource
                    && matches!(
                        dependents.matched,
                        DependentsMatch::Template { .. } | DependentsMatch::Data
                    )
            })
        })
    }
}

/// Appends to `merged` the entries of `declared` it does not hold yet, in declaration order.
fn union(merged: &mut Vec<&'static str>, declared: &[&'static str]) {
    for entry in declared {
        if !merged.contains(entry) {
            merged.push(entry);
        }
    }
}

/// The catalog of the controllers kcm-rs runs, as their descriptors declare them: what the
/// tests compare and match with.
#[cfg(test)]
pub(crate) fn of_every_controller() -> Catalog {
    let kinds: Vec<ComparedKind> = [
        replicaset::DESCRIPTOR,
        deployment::DESCRIPTOR,
        statefulset::DESCRIPTOR,
        daemonset::DESCRIPTOR,
    ]
    .iter()
    .flat_map(|descriptor| descriptor.compared_kinds.iter().copied())
    .collect();
    Catalog::new(&kinds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_cache(_: &SharedInformerFactory) -> Option<Arc<dyn KindCache>> {
        None
    }

    fn pods(
        object_fields: &'static [&'static str],
        annotation_prefixes: &'static [&'static str],
        annotations_on_status: bool,
    ) -> ComparedKind {
        ComparedKind {
            resource: "pods",
            kind: "Pod",
            status_fields: &[],
            object_fields,
            annotation_prefixes,
            annotations_on_status,
            dependents: &[],
            decided_from_nodes: false,
            cache: no_cache,
        }
    }

    /// Two controllers writing pods: what either compares is compared, each field once, and
    /// the nodes are inputs if they are for either.
    #[test]
    fn declarations_of_one_resource_merge_as_a_union() {
        let catalog = Catalog::new(&[
            pods(&["metadata.labels"], &[], false),
            ComparedKind {
                decided_from_nodes: true,
                ..pods(
                    &["metadata.labels", "spec.nodeName"],
                    &["example.com/"],
                    true,
                )
            },
        ]);
        let merged = catalog.get("pods").expect("pods are compared");
        assert_eq!(merged.object_fields, ["metadata.labels", "spec.nodeName"]);
        assert_eq!(merged.annotation_prefixes, ["example.com/"]);
        assert!(merged.annotations_on_status, "either declaration says so");
        assert!(
            catalog.decided_from_nodes("pods"),
            "either declaration says so"
        );
        assert!(merged.status_fields.is_empty());
        assert_eq!(catalog.resources().count(), 1, "one entry per resource");
    }

    /// The owners followed are the kinds whose status a controller writes, each recognizing
    /// its dependents as declared; only a Deployment's ReplicaSets and a DaemonSet's revisions
    /// are kept whole.
    #[test]
    fn the_controllers_own_objects_are_the_owners() {
        let catalog = of_every_controller();
        let owners: Vec<_> = [
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "Pod",
            "Job",
        ]
        .into_iter()
        .map(|kind| catalog.owner_resource(kind))
        .collect();
        assert_eq!(
            owners,
            [
                Some("deployments"),
                Some("replicasets"),
                Some("statefulsets"),
                Some("daemonsets"),
                None,
                None
            ]
        );
        assert!(matches!(
            catalog.dependents_of("deployments", "replicasets"),
            Some(DependentsMatch::Template { .. })
        ));
        assert!(matches!(
            catalog.dependents_of("replicasets", "pods"),
            Some(DependentsMatch::Count)
        ));
        assert!(matches!(
            catalog.dependents_of("daemonsets", "pods"),
            Some(DependentsMatch::Count)
        ));
        assert!(matches!(
            catalog.dependents_of("daemonsets", "controllerrevisions"),
            Some(DependentsMatch::Data)
        ));
        assert!(matches!(
            catalog.dependents_of("statefulsets", "controllerrevisions"),
            Some(DependentsMatch::Name)
        ));
        assert!(
            catalog
                .dependents_of("replicasets", "controllerrevisions")
                .is_none()
        );
        assert!(catalog.kept_whole("replicasets") && catalog.kept_whole("controllerrevisions"));
        assert!(!catalog.kept_whole("pods") && !catalog.kept_whole("deployments"));
    }
}
