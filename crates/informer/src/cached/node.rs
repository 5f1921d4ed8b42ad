//! The node as the DaemonSet controller caches it: its name and identity, its labels and its
//! taints, decoded straight from the API server's JSON; the status is skipped, never built.
//!
//! Why a type of its own: the DaemonSet controller watches every node of the cluster, and a
//! k8s-openapi `Node` keeps its whole status — conditions, addresses, capacity and
//! allocatable, `nodeInfo`, and on real nodes the list of cached images, often tens of
//! kilobytes. The controller reads the name (the pinning term), the labels (node selector and
//! node affinity) and `spec.taints` (tolerations); the node-update rule compares only labels
//! and taints. At 5,000 nodes a full `Node` would cost tens of megabytes of a 150 MiB budget;
//! this costs about a kilobyte a node. The annotations are dropped too (nodes carry large ones
//! from their network and storage agents); nothing reads them.
//!
//! A cached node is never written back.

use k8s_openapi::api::core::v1::{Node, Taint};
use serde::{Deserialize, Deserializer};

use super::PodMetadata;

/// A node as cached by the informers: metadata (bar `managedFields` and `annotations`, the
/// labels compact, as a pod's are kept) and the taints. Field names follow `Node`'s.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CachedNode {
    /// The node's metadata, bar `managedFields` and `annotations`, the labels compact.
    pub metadata: PodMetadata,
    /// What the DaemonSet controller reads of `spec`.
    pub spec: Option<CachedNodeSpec>,
}

/// What the DaemonSet controller reads of a `NodeSpec`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedNodeSpec {
    /// `spec.taints`, as k8s-openapi decodes them.
    pub taints: Option<Vec<Taint>>,
}

impl CachedNode {
    /// `spec.taints`, empty when there are none.
    pub fn taints(&self) -> &[Taint] {
        self.spec
            .as_ref()
            .and_then(|spec| spec.taints.as_deref())
            .unwrap_or_default()
    }

    /// Whether `other` has the same labels and taints (absent and empty are the same, as Go's
    /// semantic equality has it): all a node update changes of what decides where daemon pods
    /// run (upstream's `shouldIgnoreNodeUpdate`); heartbeats change neither.
    pub fn same_labels_and_taints(&self, other: &CachedNode) -> bool {
        self.metadata.labels.iter().eq(other.metadata.labels.iter())
            && self.taints() == other.taints()
    }
}

/// The node's JSON as decoded: `status` (and anything else) is skipped.
#[derive(Deserialize)]
struct Wire {
    #[serde(default, deserialize_with = "super::null_as_default")]
    metadata: PodMetadata,
    spec: Option<CachedNodeSpec>,
}

impl<'de> Deserialize<'de> for CachedNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Wire { mut metadata, spec } = Wire::deserialize(deserializer)?;
        metadata.annotations = None;
        Ok(Self { metadata, spec })
    }
}

impl k8s_openapi::Resource for CachedNode {
    const API_VERSION: &'static str = <Node as k8s_openapi::Resource>::API_VERSION;
    const GROUP: &'static str = <Node as k8s_openapi::Resource>::GROUP;
    const KIND: &'static str = <Node as k8s_openapi::Resource>::KIND;
    const VERSION: &'static str = <Node as k8s_openapi::Resource>::VERSION;
    const URL_PATH_SEGMENT: &'static str = <Node as k8s_openapi::Resource>::URL_PATH_SEGMENT;
    type Scope = <Node as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for CachedNode {
    type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn metadata(&self) -> &Self::Ty {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut Self::Ty {
        &mut self.metadata
    }
}

/// The cached form of a full node (one built in a test or read from the server): exactly what
/// decoding the node's JSON into [`CachedNode`] keeps.
impl From<&Node> for CachedNode {
    fn from(node: &Node) -> Self {
        let mut metadata = PodMetadata::from(node.metadata.clone());
        metadata.annotations = None;
        CachedNode {
            metadata,
            spec: node.spec.as_ref().map(|spec| CachedNodeSpec {
                taints: spec.taints.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node as a kubelet registers it, heartbeats and images included.
    fn api_server_node() -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {
                "name": "worker-1", "uid": "n1", "resourceVersion": "42",
                "labels": {"kubernetes.io/hostname": "worker-1", "disk": "ssd"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                "flannel.alpha.coreos.com/backend-data": "{\"VNI\":1}"},
                "managedFields": [{"manager": "kubelet", "operation": "Update"}]
            },
            "spec": {
                "podCIDR": "10.244.1.0/24",
                "unschedulable": true,
                "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                           {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule",
                            "timeAdded": "2026-11-23T10:00:00Z"}]
            },
            "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True",
                                "lastHeartbeatTime": "2026-11-23T10:00:10Z",
                                "lastTransitionTime": "2026-11-23T09:00:00Z"}],
                "images": [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 321520}],
                "nodeInfo": {"kubeletVersion": "v1.36.0", "architecture": "amd64",
                             "bootID": "b", "containerRuntimeVersion": "containerd://2.0",
                             "kernelVersion": "6.1", "kubeProxyVersion": "", "machineID": "m",
                             "operatingSystem": "linux", "osImage": "Debian", "systemUUID": "s"}
            }
        })
    }

    #[test]
    fn decoding_keeps_name_labels_and_taints_only() {
        let node: CachedNode = serde_json::from_value(api_server_node()).expect("decodes");
        assert_eq!(node.metadata.name.as_deref(), Some("worker-1"));
        assert_eq!(node.metadata.uid.as_deref(), Some("n1"));
        assert_eq!(node.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(node.metadata.labels.get("disk"), Some("ssd"));
        assert!(node.metadata.annotations.is_none(), "annotations dropped");
        assert!(node.metadata.managed_fields.is_none());
        let taints: Vec<(&str, &str)> = node
            .taints()
            .iter()
            .map(|taint| (taint.key.as_str(), taint.effect.as_str()))
            .collect();
        assert_eq!(
            taints,
            [
                ("dedicated", "NoSchedule"),
                ("node.kubernetes.io/unschedulable", "NoSchedule")
            ]
        );
        assert!(node.taints()[1].time_added.is_some());
    }

    #[test]
    fn converting_a_full_node_keeps_what_decoding_keeps() {
        let full: Node = serde_json::from_value(api_server_node()).expect("decodes as Node");
        let decoded: CachedNode = serde_json::from_value(api_server_node()).expect("decodes");
        assert_eq!(CachedNode::from(&full), decoded);
    }

    #[test]
    fn absent_and_null_parts_decode_as_node_decodes_them() {
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"metadata": null, "spec": null, "status": null}),
            serde_json::json!({"metadata": {"name": "a", "labels": null},
                               "spec": {"taints": null}}),
        ];
        for json in cases {
            let decoded: CachedNode = serde_json::from_value(json.clone()).expect("decodes");
            let full: Node = serde_json::from_value(json.clone()).expect("decodes as Node");
            assert_eq!(decoded, CachedNode::from(&full), "{json}");
            assert!(decoded.taints().is_empty(), "{json}");
        }
    }

    /// What a node costs in the cache: a few hundred bytes inline, however large its status.
    #[test]
    fn a_cached_node_is_small_inline() {
        assert!(
            std::mem::size_of::<CachedNode>() <= 400,
            "CachedNode is {} bytes inline",
            std::mem::size_of::<CachedNode>()
        );
    }
}
