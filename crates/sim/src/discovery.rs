//! Legacy discovery documents (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}`,
//! `/apis/{group}/{version}`), enough for kube-rs and for kubectl, which falls back to these
//! when it gets plain JSON instead of aggregated discovery.

use serde_json::{Value, json};

use crate::resources::{RESOURCES, ResourceInfo};
use crate::reviews;

/// Every API group served: the resource groups, then the review groups.
fn groups() -> Vec<&'static str> {
    let mut groups = crate::resources::groups();
    groups.extend(reviews::groups());
    groups
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// `/version`.
pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "28",
        "gitVersion": "v1.28.0-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.20",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`.
pub(crate) fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_entry(group: &str) -> Value {
    let gv = json!({"groupVersion": format!("{group}/v1"), "version": "v1"});
    json!({"name": group, "versions": [gv.clone()], "preferredVersion": gv})
}

/// `/apis`.
pub(crate) fn api_groups() -> Value {
    let groups: Vec<Value> = groups().into_iter().map(group_entry).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if served.
pub(crate) fn api_group(group: &str) -> Option<Value> {
    groups().contains(&group).then(|| {
        let mut entry = group_entry(group);
        if let Some(map) = entry.as_object_mut() {
            map.insert("kind".into(), json!("APIGroup"));
            map.insert("apiVersion".into(), json!("v1"));
        }
        entry
    })
}

fn resource_entry(r: &ResourceInfo) -> Value {
    let mut entry = json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": VERBS,
    });
    if let Some(map) = entry.as_object_mut() {
        if !r.short_names.is_empty() {
            map.insert("shortNames".into(), json!(r.short_names));
        }
        if matches!(
            r.plural,
            "pods"
                | "deployments"
                | "replicasets"
                | "statefulsets"
                | "daemonsets"
                | "jobs"
                | "cronjobs"
        ) {
            map.insert("categories".into(), json!(["all"]));
        }
    }
    entry
}

/// `/api/v1` or `/apis/{group}/{version}`, if served.
pub(crate) fn resource_list(group: &str, version: &str) -> Option<Value> {
    if let Some(list) = reviews::resource_list(group, version) {
        return Some(list);
    }
    let mut resources = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        resources.push(resource_entry(r));
        if r.plural == "pods" {
            resources.push(json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}));
        }
        if r.status {
            resources.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": SUB_VERBS}));
        }
        if r.scale {
            resources.push(json!({"name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUB_VERBS}));
        }
    }
    if resources.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let core = resource_list("", "v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            vec![
                "namespaces",
                "namespaces/status",
                "pods",
                "pods/eviction",
                "pods/status",
                "persistentvolumeclaims",
                "events",
                "nodes",
                "nodes/status"
            ]
        );
        let apps = resource_list("apps", "v1").unwrap();
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["group"], "autoscaling");
        assert!(resource_list("apps", "v2").is_none());
        assert_eq!(api_groups()["groups"].as_array().unwrap().len(), 6);
        let reviews = resource_list("authorization.k8s.io", "v1").unwrap();
        assert_eq!(reviews["resources"][0]["name"], "subjectaccessreviews");
        assert_eq!(reviews["resources"][0]["verbs"], json!(["create"]));
        assert!(api_group("authentication.k8s.io").is_some());
        assert_eq!(
            api_group("apps").unwrap()["preferredVersion"]["groupVersion"],
            "apps/v1"
        );
        assert_eq!(
            api_group("batch").unwrap()["preferredVersion"]["groupVersion"],
            "batch/v1"
        );
        let batch = resource_list("batch", "v1").unwrap();
        let names: Vec<&str> = batch["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            vec!["jobs", "jobs/status", "cronjobs", "cronjobs/status"]
        );
        assert_eq!(batch["resources"][0]["singularName"], "job");
        assert_eq!(batch["resources"][0]["categories"], json!(["all"]));
        assert!(batch["resources"][0].get("shortNames").is_none());
        // CronJobs as kube-apiserver lists them: short name `cj`, category `all`, every verb,
        // and a status subresource with get, patch and update.
        assert_eq!(
            batch["resources"][2],
            json!({"name": "cronjobs", "singularName": "cronjob", "namespaced": true,
                "kind": "CronJob", "verbs": VERBS, "shortNames": ["cj"], "categories": ["all"]})
        );
        assert_eq!(
            batch["resources"][3],
            json!({"name": "cronjobs/status", "singularName": "", "namespaced": true,
                "kind": "CronJob", "verbs": ["get", "patch", "update"]})
        );
        assert!(api_group("extensions").is_none());
    }
}
