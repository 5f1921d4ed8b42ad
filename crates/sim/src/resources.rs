//! The fixed catalogue of resources the sim serves, with what discovery and the store need
//! to know about each (group, version, kind, scope, subresources).

/// One served resource.
#[derive(Debug)]
pub(crate) struct ResourceInfo {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource: the main resource never changes status.
    pub status: bool,
    /// Has a `scale` subresource (autoscaling/v1 Scale).
    pub scale: bool,
    /// `metadata.generation` is maintained (bumped on spec changes).
    pub generation: bool,
    /// A delete naming no propagation policy orphans the dependents (batch/v1 Jobs, for
    /// backward compatibility) instead of collecting them in the background.
    pub orphans_by_default: bool,
}

impl ResourceInfo {
    /// `v1` or `group/version`, as in an object's `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`, as upstream names a resource in error messages.
    pub fn qualified_plural(&self) -> String {
        self.qualified(self.plural)
    }

    /// `Pod` or `Deployment.apps`, as upstream names a kind in validation messages.
    pub fn qualified_kind(&self) -> String {
        self.qualified(self.kind)
    }

    /// `name`, followed by `.group` for a resource outside the core group.
    fn qualified(&self, name: &str) -> String {
        if self.group.is_empty() {
            name.to_string()
        } else {
            format!("{name}.{}", self.group)
        }
    }

    /// The kind of a list of this resource.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
}

const fn resource(
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
) -> ResourceInfo {
    ResourceInfo {
        group,
        version: "v1",
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        status: false,
        scale: false,
        generation: false,
        orphans_by_default: false,
    }
}

const fn workload(
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
) -> ResourceInfo {
    ResourceInfo {
        status: true,
        scale: true,
        generation: true,
        ..resource("apps", plural, singular, kind, true, short)
    }
}

/// Index of namespaces in [`RESOURCES`].
pub(crate) const NAMESPACES: usize = 0;
/// Index of pods in [`RESOURCES`].
pub(crate) const PODS: usize = 1;
/// Index of coordination.k8s.io leases in [`RESOURCES`].
pub(crate) const LEASES: usize = 9;
/// Index of nodes in [`RESOURCES`].
pub(crate) const NODES: usize = 10;
/// Index of apps/v1 daemonsets in [`RESOURCES`].
pub(crate) const DAEMONSETS: usize = 11;
/// Index of batch/v1 jobs in [`RESOURCES`].
pub(crate) const JOBS: usize = 12;

/// Every resource served, in discovery order. Indexes are stable and used as table ids.
pub(crate) static RESOURCES: &[ResourceInfo] = &[
    ResourceInfo {
        status: true,
        ..resource("", "namespaces", "namespace", "Namespace", false, &["ns"])
    },
    ResourceInfo {
        status: true,
        ..resource("", "pods", "pod", "Pod", true, &["po"])
    },
    resource(
        "",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
    ),
    resource("", "events", "event", "Event", true, &["ev"]),
    workload("deployments", "deployment", "Deployment", &["deploy"]),
    workload("replicasets", "replicaset", "ReplicaSet", &["rs"]),
    workload("statefulsets", "statefulset", "StatefulSet", &["sts"]),
    resource(
        "apps",
        "controllerrevisions",
        "controllerrevision",
        "ControllerRevision",
        true,
        &[],
    ),
    resource("events.k8s.io", "events", "event", "Event", true, &["ev"]),
    resource("coordination.k8s.io", "leases", "lease", "Lease", true, &[]),
    ResourceInfo {
        status: true,
        ..resource("", "nodes", "node", "Node", false, &["no"])
    },
    // A workload without a scale subresource.
    ResourceInfo {
        scale: false,
        ..workload("daemonsets", "daemonset", "DaemonSet", &["ds"])
    },
    // batch/v1 Jobs: status and generation, no scale, no short name; deleting one without a
    // propagation policy orphans its pods (upstream keeps batch/v1's old default).
    ResourceInfo {
        status: true,
        generation: true,
        orphans_by_default: true,
        ..resource("batch", "jobs", "job", "Job", true, &[])
    },
    // batch/v1 CronJobs: status and generation, short name `cj`; a delete naming no policy
    // collects their Jobs in the background (only batch/v1beta1 orphaned them).
    ResourceInfo {
        status: true,
        generation: true,
        ..resource("batch", "cronjobs", "cronjob", "CronJob", true, &["cj"])
    },
];

/// The resource `plural` of `group`/`version`, if served.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<usize> {
    RESOURCES
        .iter()
        .position(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The API groups served under `/apis`, in discovery order.
pub(crate) fn groups() -> Vec<&'static str> {
    let mut groups: Vec<&'static str> = Vec::new();
    for r in RESOURCES {
        if !r.group.is_empty() && !groups.contains(&r.group) {
            groups.push(r.group);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_by_group_version_plural() {
        let cases = [
            ("", "v1", "pods", Some("Pod")),
            ("apps", "v1", "deployments", Some("Deployment")),
            ("events.k8s.io", "v1", "events", Some("Event")),
            ("", "v1", "events", Some("Event")),
            ("apps", "v1", "pods", None),
            ("", "v2", "pods", None),
        ];
        for (group, version, plural, kind) in cases {
            assert_eq!(
                find(group, version, plural).map(|i| RESOURCES[i].kind),
                kind,
                "{group}/{version}/{plural}"
            );
        }
        assert_eq!(RESOURCES[NAMESPACES].plural, "namespaces");
        assert_eq!(RESOURCES[PODS].plural, "pods");
        assert_eq!(RESOURCES[LEASES].plural, "leases");
        assert_eq!(RESOURCES[NODES].plural, "nodes");
        assert!(!RESOURCES[NODES].namespaced);
        assert_eq!(RESOURCES[JOBS].qualified_kind(), "Job.batch");
        assert_eq!(find("batch", "v1", "jobs"), Some(JOBS));
        let cronjobs = &RESOURCES[find("batch", "v1", "cronjobs").unwrap()];
        assert_eq!(cronjobs.qualified_kind(), "CronJob.batch");
        assert_eq!(cronjobs.short_names, ["cj"]);
        assert!(cronjobs.namespaced && cronjobs.status && cronjobs.generation);
        assert!(!cronjobs.scale && !cronjobs.orphans_by_default);
    }

    #[test]
    fn names_in_messages() {
        let deploy = &RESOURCES[find("apps", "v1", "deployments").unwrap()];
        assert_eq!(deploy.qualified_plural(), "deployments.apps");
        assert_eq!(deploy.qualified_kind(), "Deployment.apps");
        assert_eq!(deploy.api_version(), "apps/v1");
        assert_eq!(RESOURCES[PODS].qualified_plural(), "pods");
        assert_eq!(RESOURCES[PODS].api_version(), "v1");
        assert_eq!(
            groups(),
            vec!["apps", "events.k8s.io", "coordination.k8s.io", "batch"]
        );
    }
}
