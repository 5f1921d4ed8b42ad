//! Defaulting as upstream applies it on create and update: apps/v1 workload and batch/v1 Job
//! and CronJob defaults (their own in [`crate::jobs`] and [`crate::cronjobs`]), pod-template
//! and pod defaults (including what admission plugins add to pods), and the initial status of
//! new objects.

use serde_json::{Map, Value, json};

/// Inserts `value` under `key` when the key is absent or null.
pub(crate) fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        Some(v) if !v.is_null() => {}
        _ => {
            map.insert(key.to_string(), value);
        }
    }
}

/// The object at `key`, created (or replaced if not an object).
pub(crate) fn object_at<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("entry was just made an object"),
    }
}

/// `Always` for `:latest` or untagged images, `IfNotPresent` otherwise (upstream rule).
fn image_pull_policy(image: &str) -> &'static str {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match last.split_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

fn default_containers(spec: &mut Map<String, Value>, key: &str) {
    let Some(Value::Array(containers)) = spec.get_mut(key) else {
        return;
    };
    for container in containers.iter_mut().filter_map(Value::as_object_mut) {
        default_field(container, "resources", json!({}));
        default_field(
            container,
            "terminationMessagePath",
            json!("/dev/termination-log"),
        );
        default_field(container, "terminationMessagePolicy", json!("File"));
        let image = container
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        default_field(
            container,
            "imagePullPolicy",
            json!(image_pull_policy(&image)),
        );
        if let Some(Value::Array(ports)) = container.get_mut("ports") {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                default_field(port, "protocol", json!("TCP"));
            }
        }
    }
}

/// Defaults of a PodSpec (both in templates and in pods).
pub(crate) fn pod_spec(spec: &mut Map<String, Value>) {
    default_containers(spec, "initContainers");
    default_containers(spec, "containers");
    default_field(spec, "restartPolicy", json!("Always"));
    default_field(spec, "terminationGracePeriodSeconds", json!(30));
    default_field(spec, "dnsPolicy", json!("ClusterFirst"));
    default_field(spec, "securityContext", json!({}));
    default_field(spec, "schedulerName", json!("default-scheduler"));
}

/// The `metadata` of a template (a pod template, a CronJob's job template), with the
/// `creationTimestamp: null` Go writes for a template's zero timestamp, first.
pub(crate) fn template_metadata(template: &mut Map<String, Value>) {
    let metadata = object_at(template, "metadata");
    if !metadata.contains_key("creationTimestamp") {
        let mut reordered = Map::new();
        reordered.insert("creationTimestamp".into(), Value::Null);
        reordered.extend(std::mem::take(metadata));
        *metadata = reordered;
    }
}

/// Defaults of a pod template: spec defaults, and the `creationTimestamp: null` Go writes.
pub(crate) fn pod_template(spec: &mut Map<String, Value>) {
    let template = object_at(spec, "template");
    template_metadata(template);
    pod_spec(object_at(template, "spec"));
}

/// Defaults for an object of resource `plural` (apps/v1 workloads, Jobs, CronJobs and pods).
pub(crate) fn apply(plural: &str, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match plural {
        "deployments" => {
            let spec = replicated_spec(map);
            let rolling = [("maxUnavailable", json!("25%")), ("maxSurge", json!("25%"))];
            rolling_update_strategy(spec, "strategy", rolling);
            default_field(spec, "revisionHistoryLimit", json!(10));
            default_field(spec, "progressDeadlineSeconds", json!(600));
        }
        "replicasets" => {
            replicated_spec(map);
        }
        "daemonsets" => {
            let spec = object_at(map, "spec");
            pod_template(spec);
            let rolling = [("maxUnavailable", json!(1)), ("maxSurge", json!(0))];
            rolling_update_strategy(spec, "updateStrategy", rolling);
            default_field(spec, "revisionHistoryLimit", json!(10));
        }
        "statefulsets" => {
            let spec = replicated_spec(map);
            default_field(spec, "podManagementPolicy", json!("OrderedReady"));
            rolling_update_strategy(spec, "updateStrategy", [("partition", json!(0))]);
            default_field(spec, "revisionHistoryLimit", json!(10));
            let retention = object_at(spec, "persistentVolumeClaimRetentionPolicy");
            default_field(retention, "whenDeleted", json!("Retain"));
            default_field(retention, "whenScaled", json!("Retain"));
            if let Some(Value::Array(claims)) = spec.get_mut("volumeClaimTemplates") {
                for claim in claims.iter_mut().filter_map(Value::as_object_mut) {
                    let claim_spec = object_at(claim, "spec");
                    default_field(claim_spec, "volumeMode", json!("Filesystem"));
                    default_field(claim, "status", json!({"phase": "Pending"}));
                }
            }
        }
        "pods" => {
            let spec = object_at(map, "spec");
            pod_spec(spec);
            default_field(
                spec,
                "tolerations",
                json!([
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
                ]),
            );
            default_field(spec, "priority", json!(0));
            default_field(spec, "enableServiceLinks", json!(true));
            default_field(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
        }
        "persistentvolumeclaims" => {
            let spec = object_at(map, "spec");
            default_field(spec, "volumeMode", json!("Filesystem"));
        }
        "jobs" => {
            let spec = object_at(map, "spec");
            crate::jobs::default_spec(spec);
            pod_template(spec);
            crate::jobs::default_labels(map);
        }
        "cronjobs" => crate::cronjobs::default(map),
        _ => {}
    }

    /// The `spec` of a workload with replicas: `replicas` 1 and the pod template defaulted.
    fn replicated_spec(map: &mut Map<String, Value>) -> &mut Map<String, Value> {
        let spec = object_at(map, "spec");
        default_field(spec, "replicas", json!(1));
        pod_template(spec);
        spec
    }

    /// `spec.<field>.type` defaults to `RollingUpdate`; for that type, `rollingUpdate` takes
    /// `defaults`.
    fn rolling_update_strategy<const N: usize>(
        spec: &mut Map<String, Value>,
        field: &str,
        defaults: [(&str, Value); N],
    ) {
        let strategy = object_at(spec, field);
        default_field(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type") == Some(&json!("RollingUpdate")) {
            let rolling = object_at(strategy, "rollingUpdate");
            for (name, value) in defaults {
                default_field(rolling, name, value);
            }
        }
    }
}

/// The DaemonSet annotation holding the template generation (`spec.templateGeneration` of the
/// internal type, which apps/v1 carries as this annotation).
pub(crate) const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// A DaemonSet's template generation as the registry keeps it (upstream's DaemonSet strategy):
/// on create the one given if at least 1, else 1; on update the stored one, plus one when
/// `spec.template` changed (a client cannot set it). Written as the annotation.
pub(crate) fn daemon_set_template_generation(obj: &mut Value, old: Option<&Value>) {
    let generation_of = |object: &Value| {
        object
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(TEMPLATE_GENERATION_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(|value| value.parse::<i64>().ok())
    };
    let generation = match old {
        None => generation_of(obj)
            .filter(|generation| *generation >= 1)
            .unwrap_or(1),
        Some(old) => {
            let stored = generation_of(old).unwrap_or(1);
            if obj.pointer("/spec/template") == old.pointer("/spec/template") {
                stored
            } else {
                stored + 1
            }
        }
    };
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let annotations = object_at(object_at(map, "metadata"), "annotations");
    annotations.insert(
        TEMPLATE_GENERATION_ANNOTATION.to_string(),
        Value::from(generation.to_string()),
    );
}

/// The pod QoS class upstream computes from container requests and limits.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        let requests = c.pointer("/resources/requests").and_then(Value::as_object);
        let limits = c.pointer("/resources/limits").and_then(Value::as_object);
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for resource in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(resource));
            let request = requests.and_then(|r| r.get(resource)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The status a new object starts with (upstream resets client-sent status on create).
pub(crate) fn initial_status(plural: &str, obj: &Value) -> Option<Value> {
    match plural {
        "deployments" | "replicasets" | "statefulsets" | "jobs" | "cronjobs" => Some(json!({})),
        // The four counters are not omitempty in apps/v1.
        "daemonsets" => Some(json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                    "desiredNumberScheduled": 0, "numberReady": 0})),
        "pods" => {
            let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            Some(json!({"phase": "Pending", "qosClass": qos_class(&spec)}))
        }
        "namespaces" => Some(json!({"phase": "Active"})),
        "persistentvolumeclaims" => Some(json!({"phase": "Pending"})),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;

    #[test]
    fn deployment_defaults_match_the_fixture() {
        let expected = fixture("deployment.json");
        let mut obj = json!({"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}});
        apply("deployments", &mut obj);
        assert_eq!(obj["spec"], expected["spec"]);
    }

    #[test]
    fn daemonset_defaults_as_upstream() {
        let mut obj = json!({"spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}}}});
        apply("daemonsets", &mut obj);
        assert_eq!(
            obj["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(obj["spec"]["revisionHistoryLimit"], json!(10));
        assert_eq!(
            obj["spec"]["template"]["spec"]["restartPolicy"],
            json!("Always")
        );
        let mut on_delete = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
        apply("daemonsets", &mut on_delete);
        assert_eq!(
            on_delete["spec"]["updateStrategy"],
            json!({"type": "OnDelete"})
        );
        assert_eq!(
            initial_status("daemonsets", &obj),
            Some(json!({"currentNumberScheduled": 0, "numberMisscheduled": 0,
                        "desiredNumberScheduled": 0, "numberReady": 0}))
        );
    }

    /// The template generation: 1 on create (or the one given), bumped only by a template
    /// change, never set by a client on update.
    #[test]
    fn daemonset_template_generation_follows_the_template() {
        let generation =
            |obj: &Value| obj["metadata"]["annotations"][TEMPLATE_GENERATION_ANNOTATION].clone();
        let template =
            |image: &str| json!({"spec": {"containers": [{"name": "c", "image": image}]}});
        let mut created =
            json!({"metadata": {"name": "ds"}, "spec": {"template": template("a:1")}});
        daemon_set_template_generation(&mut created, None);
        assert_eq!(generation(&created), json!("1"));
        let mut given = json!({"metadata": {"annotations": {TEMPLATE_GENERATION_ANNOTATION: "7"}}});
        daemon_set_template_generation(&mut given, None);
        assert_eq!(generation(&given), json!("7"));

        let mut same = json!({"metadata": {"annotations": {TEMPLATE_GENERATION_ANNOTATION: "5"}},
                              "spec": {"template": template("a:1"), "minReadySeconds": 3}});
        daemon_set_template_generation(&mut same, Some(&created));
        assert_eq!(
            generation(&same),
            json!("1"),
            "the client's value is not kept"
        );
        let mut changed = json!({"spec": {"template": template("a:2")}});
        daemon_set_template_generation(&mut changed, Some(&created));
        assert_eq!(generation(&changed), json!("2"));
    }

    #[test]
    fn statefulset_defaults_match_the_fixture() {
        let expected = fixture("statefulset.json");
        let mut obj = json!({"spec": {"replicas": 1, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"note": "a<b & c>d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "env": [{"name": "X", "value": "1"}],
                    "resources": {"requests": {"cpu": "500m", "memory": "1536Mi"}}}]}}}});
        apply("statefulsets", &mut obj);
        assert_eq!(obj["spec"], expected["spec"]);
    }

    #[test]
    fn pod_defaults_and_status_match_the_fixture() {
        let list = fixture("pod-list.json");
        let expected = &list["items"][1];
        let mut obj = json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}});
        apply("pods", &mut obj);
        assert_eq!(obj["spec"], expected["spec"]);
        assert_eq!(
            initial_status("pods", &obj),
            Some(expected["status"].clone())
        );
        let burstable = &list["items"][0];
        assert_eq!(
            initial_status("pods", burstable),
            Some(burstable["status"].clone())
        );
    }

    #[test]
    fn pull_policy_and_qos() {
        let cases = [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
        ];
        for (image, policy) in cases {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
        let guaranteed =
            json!({"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
    }
}
