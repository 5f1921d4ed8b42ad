//! Server-side printing: `meta.k8s.io/v1` `Table` answers for clients that ask for them
//! (`Accept: application/json;as=Table;...`, as `kubectl get` does), with the columns
//! upstream's printers show for each kind and ages rendered as upstream's `HumanDuration`.

use serde_json::{Map, Value, json};

use crate::jobs;
use crate::object::meta;
use crate::selector::LabelSelector;

/// Whether the Accept header asks for a Table.
pub(crate) fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .any(|part| part.contains("as=Table") && part.contains("g=meta.k8s.io"))
}

/// What a row carries as its `object` (`includeObject` query parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    /// Parses `includeObject` (default Metadata, as upstream).
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Upstream's `duration.HumanDuration`.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return whole_and_rest(minutes, "m", seconds % 60, "s");
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return whole_and_rest(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return whole_and_rest(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return whole_and_rest(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// `{whole}{unit}`, followed by `{rest}{rest_unit}` unless `rest` is 0 (`3m`, `3m20s`).
fn whole_and_rest(whole: i64, unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{whole}{unit}")
    } else {
        format!("{whole}{unit}{rest}{rest_unit}")
    }
}

fn age_of(timestamp: Option<&str>) -> String {
    let Some(ts) = timestamp else {
        return "<unknown>".into();
    };
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => human_duration((chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds()),
        Err(_) => "<unknown>".into(),
    }
}

fn column(name: &str, kind: &str, priority: u8) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({"name": name, "type": kind, "format": format, "description": name, "priority": priority})
}

/// The columns shown for resource `plural`.
fn columns(plural: &str) -> Vec<Value> {
    // (name, type, priority): priority 1 columns show with `-o wide` only.
    const S: &str = "string";
    const I: &str = "integer";
    const B: &str = "boolean";
    #[rustfmt::skip]
    let spec: &[(&str, &str, u8)] = match plural {
        "pods" => &[("Name", S, 0), ("Ready", S, 0), ("Status", S, 0), ("Restarts", S, 0), ("Age", S, 0), ("IP", S, 1), ("Node", S, 1)],
        "deployments" => &[("Name", S, 0), ("Ready", S, 0), ("Up-to-date", I, 0), ("Available", I, 0), ("Age", S, 0)],
        "replicasets" => &[("Name", S, 0), ("Desired", I, 0), ("Current", I, 0), ("Ready", I, 0), ("Age", S, 0)],
        "statefulsets" => &[("Name", S, 0), ("Ready", S, 0), ("Age", S, 0)],
        "daemonsets" => &[("Name", S, 0), ("Desired", I, 0), ("Current", I, 0), ("Ready", I, 0), ("Up-to-date", I, 0), ("Available", I, 0), ("Node Selector", S, 0), ("Age", S, 0)],
        "namespaces" | "persistentvolumeclaims" => &[("Name", S, 0), ("Status", S, 0), ("Age", S, 0)],
        "controllerrevisions" => &[("Name", S, 0), ("Controller", S, 0), ("Revision", I, 0), ("Age", S, 0)],
        "leases" => &[("Name", S, 0), ("Holder", S, 0), ("Age", S, 0)],
        "nodes" => &[("Name", S, 0), ("Status", S, 0), ("Roles", S, 0), ("Age", S, 0), ("Version", S, 0), ("Internal-IP", S, 1), ("External-IP", S, 1), ("OS-Image", S, 1), ("Kernel-Version", S, 1), ("Container-Runtime", S, 1)],
        "events" => &[("Last Seen", S, 0), ("Type", S, 0), ("Reason", S, 0), ("Object", S, 0), ("Message", S, 0)],
        "jobs" => &[("Name", S, 0), ("Status", S, 0), ("Completions", S, 0), ("Duration", S, 0), ("Age", S, 0), ("Containers", S, 1), ("Images", S, 1), ("Selector", S, 1)],
        "cronjobs" => &[("Name", S, 0), ("Schedule", S, 0), ("Timezone", S, 0), ("Suspend", B, 0), ("Active", I, 0), ("Last Schedule", S, 0), ("Age", S, 0), ("Containers", S, 1), ("Images", S, 1), ("Selector", S, 1)],
        _ => &[("Name", S, 0), ("Age", S, 0)],
    };
    spec.iter().map(|(n, k, p)| column(n, k, *p)).collect()
}

fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s.to_string()
    }
}

/// A pod's STATUS as upstream's printer words it: the pod's reason or phase, overridden by
/// the first container (in status order) that waits or has terminated with a reason
/// (`CrashLoopBackOff`, `Completed`, `Error`), or `ExitCode:N` without one; `Completed` with a
/// container still running and ready reads `Running` (`NotReady` when the pod is not Ready).
fn pod_status(pod: &Value) -> String {
    let mut reason = match str_at(pod, "/status/reason") {
        "" => str_at(pod, "/status/phase").to_string(),
        reason => reason.to_string(),
    };
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut has_running = false;
    for container in statuses.iter().rev() {
        let waiting = str_at(container, "/state/waiting/reason");
        let terminated = container.pointer("/state/terminated");
        if !waiting.is_empty() {
            reason = waiting.to_string();
        } else if let Some(terminated) = terminated {
            reason = match str_at(terminated, "/reason") {
                "" => format!("ExitCode:{}", int_at(terminated, "/exitCode")),
                why => why.to_string(),
            };
        } else if container.get("ready") == Some(&json!(true))
            && container.pointer("/state/running").is_some()
        {
            has_running = true;
        }
    }
    if reason == "Completed" && has_running {
        let ready = pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type") == Some(&json!("Ready"))
                        && c.get("status") == Some(&json!("True"))
                })
            });
        reason = if ready { "Running" } else { "NotReady" }.to_string();
    }
    reason
}

/// The cells of one object, matching [`columns`].
fn cells(plural: &str, obj: &Value) -> Vec<Value> {
    let name = json!(str_at(obj, "/metadata/name"));
    let age = json!(age_of(
        obj.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
    ));
    match plural {
        "pods" => {
            let statuses = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array);
            let total = obj
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses.map_or(0, |s| {
                s.iter()
                    .filter(|c| c.get("ready") == Some(&json!(true)))
                    .count()
            });
            let restarts: i64 =
                statuses.map_or(0, |s| s.iter().map(|c| int_at(c, "/restartCount")).sum());
            let status = if obj.pointer("/metadata/deletionTimestamp").is_some() {
                "Terminating".to_string()
            } else {
                pod_status(obj)
            };
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(status),
                json!(restarts.to_string()),
                age,
                json!(or_none(str_at(obj, "/status/podIP"))),
                json!(or_none(str_at(obj, "/spec/nodeName"))),
            ]
        }
        "deployments" => vec![
            name,
            json!(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            json!(int_at(obj, "/status/updatedReplicas")),
            json!(int_at(obj, "/status/availableReplicas")),
            age,
        ],
        "replicasets" => vec![
            name,
            json!(int_at(obj, "/spec/replicas")),
            json!(int_at(obj, "/status/replicas")),
            json!(int_at(obj, "/status/readyReplicas")),
            age,
        ],
        "statefulsets" => vec![
            name,
            json!(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            age,
        ],
        "daemonsets" => {
            let selector = obj
                .pointer("/spec/template/spec/nodeSelector")
                .and_then(Value::as_object)
                .map(|selector| {
                    selector
                        .iter()
                        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or("")))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .filter(|selector| !selector.is_empty())
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                json!(int_at(obj, "/status/desiredNumberScheduled")),
                json!(int_at(obj, "/status/currentNumberScheduled")),
                json!(int_at(obj, "/status/numberReady")),
                json!(int_at(obj, "/status/updatedNumberScheduled")),
                json!(int_at(obj, "/status/numberAvailable")),
                json!(selector),
                age,
            ]
        }
        "namespaces" | "persistentvolumeclaims" => {
            vec![name, json!(str_at(obj, "/status/phase")), age]
        }
        "controllerrevisions" => {
            let controller = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .and_then(|refs| {
                    refs.iter()
                        .find(|r| r.get("controller") == Some(&json!(true)))
                })
                .map(|r| {
                    let group = str_at(r, "/apiVersion").split('/').next().unwrap_or("");
                    format!(
                        "{}.{group}/{}",
                        str_at(r, "/kind").to_lowercase(),
                        str_at(r, "/name")
                    )
                })
                .unwrap_or_else(|| "<none>".into());
            vec![
                name,
                json!(controller),
                json!(int_at(obj, "/revision")),
                age,
            ]
        }
        "leases" => vec![
            name,
            json!(or_none(str_at(obj, "/spec/holderIdentity"))),
            age,
        ],
        "nodes" => {
            let address = |kind: &str| {
                obj.pointer("/status/addresses")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().find(|a| str_at(a, "/type") == kind))
                    .map(|a| str_at(a, "/address"))
                    .unwrap_or("")
            };
            let unknown = |s: &str| {
                if s.is_empty() {
                    "<unknown>".to_string()
                } else {
                    s.to_string()
                }
            };
            vec![
                name,
                json!(node_status(obj)),
                json!(node_roles(obj)),
                age,
                json!(str_at(obj, "/status/nodeInfo/kubeletVersion")),
                json!(or_none(address("InternalIP"))),
                json!(or_none(address("ExternalIP"))),
                json!(unknown(str_at(obj, "/status/nodeInfo/osImage"))),
                json!(unknown(str_at(obj, "/status/nodeInfo/kernelVersion"))),
                json!(unknown(str_at(
                    obj,
                    "/status/nodeInfo/containerRuntimeVersion"
                ))),
            ]
        }
        "events" => {
            let last = [
                "/lastTimestamp",
                "/eventTime",
                "/series/lastObservedTime",
                "/metadata/creationTimestamp",
            ]
            .iter()
            .find_map(|p| obj.pointer(p).and_then(Value::as_str));
            let target = if obj.get("regarding").is_some() {
                "/regarding"
            } else {
                "/involvedObject"
            };
            let object = format!(
                "{}/{}",
                str_at(obj, &format!("{target}/kind")).to_lowercase(),
                str_at(obj, &format!("{target}/name"))
            );
            let message = if obj.get("note").is_some() {
                str_at(obj, "/note")
            } else {
                str_at(obj, "/message")
            };
            vec![
                json!(age_of(last)),
                json!(str_at(obj, "/type")),
                json!(str_at(obj, "/reason")),
                json!(object),
                json!(message),
            ]
        }
        "jobs" => {
            let template = obj.pointer("/spec/template/spec");
            let (containers, images) = container_cells(template);
            let duration = jobs::duration_seconds(obj).map_or_else(String::new, human_duration);
            let selector = selector_cell(obj.pointer("/spec/selector"));
            vec![
                name,
                json!(jobs::printed_status(obj)),
                json!(jobs::printed_completions(obj)),
                json!(duration),
                age,
                json!(containers),
                json!(images),
                json!(selector),
            ]
        }
        "cronjobs" => {
            let (containers, images) =
                container_cells(obj.pointer("/spec/jobTemplate/spec/template/spec"));
            let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            };
            let active = obj
                .pointer("/status/active")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let last_schedule = obj
                .pointer("/status/lastScheduleTime")
                .and_then(Value::as_str)
                .map_or_else(|| "<none>".to_string(), |t| age_of(Some(t)));
            vec![
                name,
                json!(str_at(obj, "/spec/schedule")),
                json!(or_none(str_at(obj, "/spec/timeZone"))),
                json!(suspend),
                json!(active),
                json!(last_schedule),
                age,
                json!(containers),
                json!(images),
                json!(selector_cell(
                    obj.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        _ => vec![name, age],
    }
}

/// Upstream's `metav1.FormatLabelSelector`: the selector as a sorted query, `<none>` when
/// there is none or it is empty.
fn selector_cell(selector: Option<&Value>) -> String {
    selector
        .and_then(|s| LabelSelector::from_json(s).ok())
        .map(|s| s.to_sorted_query())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "<none>".into())
}

/// Upstream's `layoutContainerCells`: the containers' names and images, comma-separated.
fn container_cells(pod_spec: Option<&Value>) -> (String, String) {
    let containers = pod_spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| str_at(c, field))
            .collect::<Vec<_>>()
            .join(",")
    };
    (join("/name"), join("/image"))
}

/// A node's STATUS as upstream prints it: `Ready`, `NotReady` or `Unknown` (no Ready
/// condition), then `SchedulingDisabled` when cordoned.
fn node_status(obj: &Value) -> String {
    let ready = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "Ready"));
    let mut status = match ready {
        Some(c) if str_at(c, "/status") == "True" => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if obj.pointer("/spec/unschedulable") == Some(&json!(true)) {
        status.push_str(",SchedulingDisabled");
    }
    status
}

/// A node's ROLES: the `node-role.kubernetes.io/ROLE` label keys and a
/// `kubernetes.io/role` value, sorted, or `<none>`.
fn node_roles(obj: &Value) -> String {
    let mut roles: Vec<&str> = meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
                    Some(role) if !role.is_empty() => Some(role),
                    _ if k == "kubernetes.io/role" => v.as_str(),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    }
}

fn row(plural: &str, obj: &Value, include: IncludeObject) -> Value {
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells(plural, obj)));
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => {
            row.insert("object".into(), obj.clone());
        }
        IncludeObject::Metadata => {
            let metadata = meta(obj)
                .cloned()
                .map(Value::Object)
                .unwrap_or_else(|| json!({}));
            row.insert(
                "object".into(),
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}),
            );
        }
    }
    Value::Object(row)
}

/// A Table of `objects`; `with_columns` is false for watch events after the first.
pub(crate) fn table(
    plural: &str,
    list_meta: Value,
    objects: &[Value],
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects.iter().map(|o| row(plural, o, include)).collect();
    let mut table = Map::new();
    table.insert("kind".into(), json!("Table"));
    table.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    table.insert("metadata".into(), list_meta);
    if with_columns {
        table.insert("columnDefinitions".into(), Value::Array(columns(plural)));
    }
    table.insert("rows".into(), Value::Array(rows));
    Value::Object(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (180, "3m"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 120, "3h2m"),
            (9 * 3600, "9h"),
            (50 * 3600, "2d2h"),
            (72 * 3600, "3d"),
            (10 * 86400, "10d"),
            (730 * 86400, "2y"),
            (800 * 86400, "2y70d"),
            (3000 * 86400, "8y"),
        ];
        for (secs, expected) in cases {
            assert_eq!(human_duration(secs), expected, "{secs}");
        }
    }

    #[test]
    fn accept_headers() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
        assert!(!wants_table(
            "application/json, application/vnd.kubernetes.protobuf"
        ));
    }

    #[test]
    fn rows_per_kind() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "2020-01-01T00:00:00Z", "deletionTimestamp": "x"},
            "spec": {"containers": [{}, {}], "nodeName": "n"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [{"ready": true, "restartCount": 2}, {"ready": false, "restartCount": 1}]}});
        let pod_cells = cells("pods", &pod);
        assert_eq!(
            pod_cells[..4],
            [json!("p"), json!("1/2"), json!("Terminating"), json!("3")]
        );
        assert_eq!(pod_cells[5..], [json!("10.0.0.1"), json!("n")]);
        let running = json!({"name": "a", "ready": true, "state": {"running": {}}});
        let completed = json!({"name": "b", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
        let statuses = [
            (json!({"phase": "Running"}), "Running"),
            (json!({"phase": "Failed", "reason": "Evicted"}), "Evicted"),
            (
                json!({"phase": "Succeeded", "containerStatuses": [completed]}),
                "Completed",
            ),
            (
                json!({"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}),
                "Error",
            ),
            (
                json!({"phase": "Failed", "containerStatuses": [{"state": {"terminated": {"exitCode": 3}}}]}),
                "ExitCode:3",
            ),
            (
                json!({"phase": "Running", "containerStatuses": [{"state": {"waiting": {"reason": "CrashLoopBackOff"}}}, running]}),
                "CrashLoopBackOff",
            ),
            (
                json!({"phase": "Running", "containerStatuses": [running, completed], "conditions": [{"type": "Ready", "status": "False"}]}),
                "NotReady",
            ),
            (
                json!({"phase": "Running", "containerStatuses": [running, completed], "conditions": [{"type": "Ready", "status": "True"}]}),
                "Running",
            ),
        ];
        for (status, expected) in statuses {
            assert_eq!(pod_status(&json!({"status": status})), expected, "{status}");
        }
        let deploy = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}, "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            cells("deployments", &deploy)[..4],
            [json!("web"), json!("2/3"), json!(3), json!(2)]
        );
        let cr = json!({"metadata": {"name": "web-1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 2});
        assert_eq!(
            cells("controllerrevisions", &cr)[1..3],
            [json!("statefulset.apps/web"), json!(2)]
        );
        let event = json!({"involvedObject": {"kind": "ReplicaSet", "name": "web-1"}, "type": "Normal", "reason": "SuccessfulCreate", "message": "m"});
        assert_eq!(
            cells("events", &event)[1..],
            [
                json!("Normal"),
                json!("SuccessfulCreate"),
                json!("replicaset/web-1"),
                json!("m")
            ]
        );
        for plural in [
            "pods",
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "namespaces",
            "persistentvolumeclaims",
            "controllerrevisions",
            "leases",
            "events",
            "nodes",
            "jobs",
            "cronjobs",
        ] {
            assert_eq!(
                columns(plural).len(),
                cells(plural, &json!({})).len(),
                "{plural}"
            );
        }
        let node = json!({"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "False"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "nodeInfo": {"kubeletVersion": "v1.28.0-sim", "osImage": "Debian"}}});
        assert_eq!(
            cells("nodes", &node)[..3],
            [
                json!("n1"),
                json!("NotReady,SchedulingDisabled"),
                json!("control-plane,worker")
            ]
        );
        assert_eq!(
            cells("nodes", &node)[4..],
            [
                json!("v1.28.0-sim"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("Debian"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        assert_eq!(
            cells("nodes", &json!({}))[1..3],
            [json!("Unknown"), json!("<none>")]
        );
        let job = json!({"metadata": {"name": "pi", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"completions": 3, "selector": {"matchLabels": {"b": "2", "a": "1"}},
                "template": {"spec": {"containers": [{"name": "main", "image": "perl:5"}, {"name": "side", "image": "busybox"}]}}},
            "status": {"succeeded": 1, "startTime": "2020-01-01T00:00:00Z", "completionTime": "2020-01-01T00:00:42Z",
                "conditions": [{"type": "Complete", "status": "True"}]}});
        let job_cells = cells("jobs", &job);
        assert_eq!(
            job_cells[..4],
            [json!("pi"), json!("Complete"), json!("1/3"), json!("42s")]
        );
        assert_eq!(
            job_cells[5..],
            [
                json!("main,side"),
                json!("perl:5,busybox"),
                json!("a=1,b=2")
            ]
        );
        assert_eq!(
            cells("jobs", &json!({"metadata": {"name": "new"}}))[1..4],
            [json!("Running"), json!("0/1"), json!("")]
        );
        let ten_minutes_ago = (chrono::Utc::now() - chrono::Duration::seconds(630))
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let cronjob = json!({"metadata": {"name": "hello", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "timeZone": "Europe/Rome", "suspend": false,
                "jobTemplate": {"spec": {"template": {"spec": {"containers": [
                    {"name": "main", "image": "busybox:1.36"}, {"name": "side", "image": "nginx"}]}}}}},
            "status": {"active": [{"name": "hello-1"}, {"name": "hello-2"}],
                "lastScheduleTime": ten_minutes_ago}});
        let cronjob_cells = cells("cronjobs", &cronjob);
        assert_eq!(
            cronjob_cells[..5],
            [
                json!("hello"),
                json!("*/5 * * * *"),
                json!("Europe/Rome"),
                json!("False"),
                json!(2)
            ]
        );
        assert_eq!(cronjob_cells[5], json!("10m"));
        assert_eq!(
            cronjob_cells[7..],
            [
                json!("main,side"),
                json!("busybox:1.36,nginx"),
                json!("<none>")
            ]
        );
        assert_eq!(
            cells("cronjobs", &json!({"metadata": {"name": "new"}}))[1..6],
            [
                json!(""),
                json!("<none>"),
                json!("<unset>"),
                json!(0),
                json!("<none>")
            ]
        );
        let suspended = json!({"spec": {"suspend": true, "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "1"}}}}}});
        assert_eq!(cells("cronjobs", &suspended)[3], json!("True"));
        assert_eq!(cells("cronjobs", &suspended)[9], json!("a=1"));
        let columns: Vec<(Value, Value, Value)> = columns("cronjobs")
            .into_iter()
            .map(|c| (c["name"].clone(), c["type"].clone(), c["priority"].clone()))
            .collect();
        assert_eq!(
            columns,
            [
                ("Name", "string", 0),
                ("Schedule", "string", 0),
                ("Timezone", "string", 0),
                ("Suspend", "boolean", 0),
                ("Active", "integer", 0),
                ("Last Schedule", "string", 0),
                ("Age", "string", 0),
                ("Containers", "string", 1),
                ("Images", "string", 1),
                ("Selector", "string", 1),
            ]
            .map(|(n, t, p)| (json!(n), json!(t), json!(p)))
        );
        let t = table(
            "deployments",
            json!({"resourceVersion": "5"}),
            &[deploy],
            IncludeObject::Metadata,
            true,
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        let t = table("deployments", json!({}), &[], IncludeObject::None, false);
        assert!(t.get("columnDefinitions").is_none());
    }
}
