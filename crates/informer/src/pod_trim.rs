//! Trimming cached pods to the fields the workload controllers read (a client-go transform).
//!
//! Why: pods dominate the manager's memory. Measured with heaptrack on the end-to-end bench,
//! the deserialized container specs and container statuses were about half of every cached
//! pod (k8s-openapi's `Container` alone is well over a kilobyte before any string). The
//! ReplicaSet, Deployment and StatefulSet controllers never read them: they read metadata,
//! phase, conditions, restart counts (deletion ranking), the node name, and the StatefulSet
//! identity and storage fields (hostname, subdomain, claim volumes). Other volumes go too: a
//! `Volume` is over 3 KB inline, and every pod of a real cluster carries at least the projected
//! service-account token volume.
//!
//! A trimmed pod must never be written back: the StatefulSet controller's pod repair therefore
//! applies its change to a fresh GET of the pod, never to the cached copy.

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod};

/// Drops the parts of `pod` no workload controller reads.
///
/// Kept: all metadata (bar managedFields, dropped separately), `spec.nodeName`, `hostname`,
/// `subdomain`, the volumes backed by a PersistentVolumeClaim, `restartPolicy`, the names and
/// restart policies of restartable (sidecar) init containers; `status.phase`, the `Ready`
/// condition (the only one the controllers read), and per container status its name, restart
/// count, readiness and started flag. The rest of `status` (other conditions, IPs, QoS class,
/// messages) goes.
pub fn trim_pod(pod: &mut Pod) {
    if let Some(spec) = pod.spec.as_mut() {
        spec.containers = Vec::new();
        // Collected into a new Vec: `retain` would keep the old buffer (3 KB per volume).
        spec.volumes = spec.volumes.take().and_then(|volumes| {
            let claims: Vec<_> = volumes
                .into_iter()
                .filter(|volume| volume.persistent_volume_claim.is_some())
                .collect();
            (!claims.is_empty()).then(|| {
                let mut claims = claims;
                claims.shrink_to_fit();
                claims
            })
        });
        spec.init_containers = spec.init_containers.take().and_then(|containers| {
            let sidecars: Vec<Container> = containers
                .into_iter()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"))
                .map(|c| Container {
                    name: c.name,
                    restart_policy: c.restart_policy,
                    ..Container::default()
                })
                .collect();
            (!sidecars.is_empty()).then_some(sidecars)
        });
        spec.ephemeral_containers = None;
        spec.affinity = None;
        spec.tolerations = None;
        spec.topology_spread_constraints = None;
        spec.security_context = None;
        spec.dns_config = None;
        spec.host_aliases = None;
        spec.image_pull_secrets = None;
        spec.readiness_gates = None;
        spec.resource_claims = None;
        spec.scheduling_gates = None;
        spec.overhead = None;
        spec.resources = None;
    }
    if let Some(status) = pod.status.as_mut() {
        for statuses in [
            &mut status.container_statuses,
            &mut status.init_container_statuses,
        ] {
            if let Some(statuses) = statuses.as_mut() {
                for container in statuses.iter_mut() {
                    *container = ContainerStatus {
                        name: std::mem::take(&mut container.name),
                        restart_count: container.restart_count,
                        ready: container.ready,
                        started: container.started,
                        ..ContainerStatus::default()
                    };
                }
            }
        }
        status.conditions = status.conditions.take().and_then(|conditions| {
            let mut ready: Vec<_> = conditions
                .into_iter()
                .filter(|condition| condition.type_ == "Ready")
                .collect();
            ready.shrink_to_fit();
            (!ready.is_empty()).then_some(ready)
        });
        status.ephemeral_container_statuses = None;
        status.resource_claim_statuses = None;
        status.host_ip = None;
        status.host_ips = None;
        status.pod_ip = None;
        status.pod_ips = None;
        status.qos_class = None;
        status.message = None;
        status.reason = None;
        status.nominated_node_name = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web-0", "namespace": "ns", "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                             "name": "web", "uid": "u1", "controller": true}]},
            "spec": {
                "nodeName": "node-1", "hostname": "web-0", "subdomain": "web",
                "restartPolicy": "Always",
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                    {"name": "kube-api-access-x1", "projected": {"sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}
                ],
                "initContainers": [
                    {"name": "setup", "image": "busybox"},
                    {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}
                ],
                "containers": [{"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}]}],
                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
            },
            "status": {
                "phase": "Running",
                "podIP": "10.244.0.5",
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "app", "restartCount": 3, "ready": true,
                    "image": "nginx", "imageID": "sha", "started": true,
                    "state": {"running": {"startedAt": "2026-11-23T10:00:00Z"}}}],
                "initContainerStatuses": [{"name": "proxy", "restartCount": 2, "ready": true,
                    "image": "envoy", "imageID": "sha"}]
            }
        }))
        .unwrap()
    }

    #[test]
    fn keeps_what_controllers_read_and_drops_the_rest() {
        let original = pod();
        let mut trimmed = original.clone();
        trim_pod(&mut trimmed);

        assert_eq!(trimmed.metadata, original.metadata);
        let spec = trimmed.spec.as_ref().unwrap();
        let original_spec = original.spec.as_ref().unwrap();
        assert_eq!(spec.node_name, original_spec.node_name);
        assert_eq!(spec.hostname, original_spec.hostname);
        assert_eq!(spec.subdomain, original_spec.subdomain);
        let volumes: Vec<&str> = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(volumes, vec!["data"]);
        assert_eq!(
            spec.volumes.as_ref().unwrap()[0],
            original_spec.volumes.as_ref().unwrap()[0]
        );
        assert_eq!(spec.restart_policy, original_spec.restart_policy);
        assert!(spec.containers.is_empty());
        assert!(spec.tolerations.is_none());
        let init: Vec<(&str, Option<&str>)> = spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| (c.name.as_str(), c.restart_policy.as_deref()))
            .collect();
        assert_eq!(init, vec![("proxy", Some("Always"))]);

        let status = trimmed.status.as_ref().unwrap();
        let original_status = original.status.as_ref().unwrap();
        assert_eq!(status.phase, original_status.phase);
        let conditions: Vec<&str> = status
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(conditions, vec!["Ready"]);
        assert_eq!(
            status.conditions.as_ref().unwrap()[0],
            original_status.conditions.as_ref().unwrap()[0]
        );
        assert!(status.pod_ip.is_none());
        let app = &status.container_statuses.as_ref().unwrap()[0];
        assert_eq!(
            (app.name.as_str(), app.restart_count, app.ready, app.started),
            ("app", 3, true, Some(true))
        );
        assert!(app.image.is_empty() && app.state.is_none());
        let proxy = &status.init_container_statuses.as_ref().unwrap()[0];
        assert_eq!((proxy.name.as_str(), proxy.restart_count), ("proxy", 2));
    }

    #[test]
    fn pods_without_spec_or_status_are_left_alone() {
        let mut bare = Pod::default();
        trim_pod(&mut bare);
        assert_eq!(bare, Pod::default());
    }
}
