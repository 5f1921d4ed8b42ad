//! Creating and deleting pods for a controller (upstream `GetPodFromTemplate` and
//! `RealPodControl`).
//!
//! The pod built from a template carries exactly what upstream copies (labels, annotations,
//! finalizers, spec, the controller ref) and a `generateName` derived from the owner, so pods
//! created by kcm-rs are indistinguishable from upstream's. Every create and delete records the
//! upstream event on the owner (SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete).

use informer::CachedPod;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use crate::api_errors::{
    NAMESPACE_TERMINATING_CAUSE, error_message, has_status_cause, is_not_found,
};
use crate::events::{EventRecorder, EventType};
use crate::writes::Writer;

/// Event reason of a successful pod create.
pub const SUCCESSFUL_CREATE_POD_REASON: &str = "SuccessfulCreate";
/// Event reason (and ReplicaFailure condition reason) of a failed pod create.
pub const FAILED_CREATE_POD_REASON: &str = "FailedCreate";
/// Event reason of a successful pod delete.
pub const SUCCESSFUL_DELETE_POD_REASON: &str = "SuccessfulDelete";
/// Event reason (and ReplicaFailure condition reason) of a failed pod delete.
pub const FAILED_DELETE_POD_REASON: &str = "FailedDelete";

const MAX_SUBDOMAIN_LENGTH: usize = 253;

/// Why a pod could not be created or deleted. Messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// The controller ref is unusable; nothing was sent.
    #[error("{0}")]
    InvalidControllerRef(&'static str),
    /// The template has no labels, so the pod could never be matched; nothing was sent.
    #[error("unable to create pods, no labels")]
    NoLabels,
    /// The API server refused the create.
    #[error("{}", error_message(.0))]
    Create(#[source] kube::Error),
    /// The pod was already gone (returned as-is, no event, like upstream).
    #[error("{}", error_message(.0))]
    DeleteNotFound(#[source] kube::Error),
    /// The API server refused the delete.
    #[error("unable to delete pods: {}", error_message(.0))]
    Delete(#[source] kube::Error),
}

impl PodControlError {
    /// Whether a create failed only because the namespace is being deleted; the ReplicaSet
    /// controller counts such a create as done.
    pub fn is_namespace_terminating(&self) -> bool {
        matches!(self, PodControlError::Create(err) if has_status_cause(err, NAMESPACE_TERMINATING_CAUSE))
    }

    /// Whether the pod to delete was already gone.
    pub fn is_not_found(&self) -> bool {
        matches!(self, PodControlError::DeleteNotFound(_))
    }
}

/// Checks the controller ref as upstream's `validateControllerRef` before any API call.
pub fn validate_controller_ref(controller_ref: &OwnerReference) -> Result<(), PodControlError> {
    if controller_ref.api_version.is_empty() {
        return Err(PodControlError::InvalidControllerRef(
            "controllerRef has empty APIVersion",
        ));
    }
    if controller_ref.kind.is_empty() {
        return Err(PodControlError::InvalidControllerRef(
            "controllerRef has empty Kind",
        ));
    }
    if controller_ref.controller != Some(true) {
        return Err(PodControlError::InvalidControllerRef(
            "controllerRef.Controller is not set to true",
        ));
    }
    if controller_ref.block_owner_deletion != Some(true) {
        return Err(PodControlError::InvalidControllerRef(
            "controllerRef.BlockOwnerDeletion is not set",
        ));
    }
    Ok(())
}

/// The `generateName` of pods created for `owner_name`: `<owner>-`, or `<owner>` when that
/// prefix would fail pod-name prefix validation (upstream `getPodsPrefix`).
pub fn pods_prefix(owner_name: &str) -> String {
    let prefix = format!("{owner_name}-");
    if is_valid_name_prefix(&prefix) {
        prefix
    } else {
        owner_name.to_owned()
    }
}

/// Upstream `NameIsDNSSubdomain(name, prefix=true)`: a trailing dash is masked (the last two
/// bytes become `a`) because the server appends a random suffix after it.
fn is_valid_name_prefix(prefix: &str) -> bool {
    let bytes = prefix.as_bytes();
    match bytes {
        [head @ .., _, b'-'] => {
            let mut masked = head.to_vec();
            masked.push(b'a');
            is_dns1123_subdomain(&masked)
        }
        _ => is_dns1123_subdomain(bytes),
    }
}

/// DNS-1123 subdomain: at most 253 bytes of dot-separated labels, each made of lowercase
/// alphanumerics and dashes, starting and ending with an alphanumeric.
fn is_dns1123_subdomain(value: &[u8]) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    value.len() <= MAX_SUBDOMAIN_LENGTH
        && value
            .split(|b| *b == b'.')
            .all(|label| match (label.first(), label.last()) {
                (Some(first), Some(last)) => {
                    alnum(first) && alnum(last) && label.iter().all(|b| alnum(b) || *b == b'-')
                }
                _ => false,
            })
}

/// The pod upstream's `GetPodFromTemplate` builds: labels, annotations and finalizers copied
/// from the template, `generateName` from the owner's name, `ownerReferences = [controller_ref]`
/// and a copy of the template spec. No name, no namespace (the request path carries it).
pub fn pod_from_template(
    template: &PodTemplateSpec,
    owner_name: &str,
    controller_ref: &OwnerReference,
) -> Pod {
    let template_meta = template.metadata.as_ref();
    Pod {
        metadata: ObjectMeta {
            labels: template_meta.and_then(|m| m.labels.clone()),
            annotations: template_meta.and_then(|m| m.annotations.clone()),
            finalizers: template_meta.and_then(|m| m.finalizers.clone()),
            generate_name: Some(pods_prefix(owner_name)),
            owner_references: Some(vec![controller_ref.clone()]),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// The FailedCreate event message for a failed create, or `None` when upstream records no
/// event (the namespace is being deleted, so the failure is expected and not the owner's fault).
fn failed_create_event_message(err: &PodControlError) -> Option<String> {
    (!err.is_namespace_terminating()).then(|| format!("Error creating: {err}"))
}

/// Creates and deletes pods on behalf of an owner, recording upstream's events on the owner.
#[derive(Clone)]
pub struct PodControl {
    writer: Writer,
    recorder: EventRecorder,
}

impl PodControl {
    /// Pod control writing through `writer` and recording events with `recorder`.
    pub fn new(writer: Writer, recorder: EventRecorder) -> Self {
        PodControl { writer, recorder }
    }

    /// Creates one pod from `template` in `namespace` for `owner` (upstream `CreatePods`); the
    /// created pod's metadata comes back (its server-generated name, UID and resourceVersion).
    pub async fn create_pods<O>(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &O,
        controller_ref: &OwnerReference,
    ) -> Result<ObjectMeta, PodControlError>
    where
        O: Resource<DynamicType = ()>,
    {
        self.create_pods_with_generate_name(namespace, template, owner, controller_ref, "")
            .await
    }

    /// Like [`create_pods`](Self::create_pods), with `generate_name` replacing the derived
    /// prefix when it is not empty (upstream `CreatePodsWithGenerateName`).
    pub async fn create_pods_with_generate_name<O>(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &O,
        controller_ref: &OwnerReference,
        generate_name: &str,
    ) -> Result<ObjectMeta, PodControlError>
    where
        O: Resource<DynamicType = ()>,
    {
        validate_controller_ref(controller_ref)?;
        let mut pod = pod_from_template(template, &owner.name_any(), controller_ref);
        if !generate_name.is_empty() {
            pod.metadata.generate_name = Some(generate_name.to_owned());
        }
        self.create(namespace, &pod, owner).await
    }

    async fn create<O>(
        &self,
        namespace: &str,
        pod: &Pod,
        owner: &O,
    ) -> Result<ObjectMeta, PodControlError>
    where
        O: Resource<DynamicType = ()>,
    {
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            return Err(PodControlError::NoLabels);
        }
        let mut pod = pod.clone();
        pod.metadata.namespace = Some(namespace.to_owned());
        match self
            .writer
            .create_for_metadata(&pod, "create replica")
            .await
        {
            Ok(created) => {
                tracing::debug!(
                    controller = %owner.name_any(),
                    pod = %format!("{namespace}/{}", created.name.as_deref().unwrap_or_default()),
                    "controller created pod"
                );
                self.recorder.record(
                    owner,
                    EventType::Normal,
                    SUCCESSFUL_CREATE_POD_REASON,
                    format!(
                        "Created pod: {}",
                        created.name.as_deref().unwrap_or_default()
                    ),
                );
                Ok(created)
            }
            Err(err) => {
                let err = PodControlError::Create(err);
                if let Some(message) = failed_create_event_message(&err) {
                    self.recorder.record(
                        owner,
                        EventType::Warning,
                        FAILED_CREATE_POD_REASON,
                        message,
                    );
                }
                Err(err)
            }
        }
    }

    /// Deletes `pod` (upstream `DeletePod`) with a UID precondition, so that a pod recreated
    /// under the same name since the cache saw it is never deleted by mistake (the API server
    /// answers 409 instead). NotFound is returned as [`PodControlError::DeleteNotFound`]
    /// without an event.
    pub async fn delete_pod<O>(&self, pod: &CachedPod, owner: &O) -> Result<(), PodControlError>
    where
        O: Resource<DynamicType = ()>,
    {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
        tracing::info!(
            controller = %owner.name_any(),
            pod = %format!("{namespace}/{pod_name}"),
            "deleting pod"
        );
        match self
            .writer
            .delete::<Pod>(&pod.metadata, true, "delete replica")
            .await
        {
            Ok(_) => {
                self.recorder.record(
                    owner,
                    EventType::Normal,
                    SUCCESSFUL_DELETE_POD_REASON,
                    format!("Deleted pod: {pod_name}"),
                );
                Ok(())
            }
            Err(err) if is_not_found(&err) => {
                tracing::debug!(pod = %format!("{namespace}/{pod_name}"), "pod has already been deleted");
                Err(PodControlError::DeleteNotFound(err))
            }
            Err(err) => {
                self.recorder.record(
                    owner,
                    EventType::Warning,
                    FAILED_DELETE_POD_REASON,
                    format!("Error deleting: {}", error_message(&err)),
                );
                Err(PodControlError::Delete(err))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec};
    use std::collections::BTreeMap;

    fn controller_ref() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".to_owned(),
            kind: "ReplicaSet".to_owned(),
            name: "web-896bb5df7".to_owned(),
            uid: "7a22afba-8c90-445b-ae91-f8f40dc52b89".to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn create_error(reason: &str, cause: Option<&str>) -> PodControlError {
        let mut status =
            kube::core::Status::failure("pods \"p\" is forbidden: nope", reason).with_code(403);
        if let Some(cause) = cause {
            status = status.with_details(kube::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: vec![kube::core::response::StatusCause {
                    reason: cause.to_owned(),
                    message: String::new(),
                    field: String::new(),
                }],
                retry_after_seconds: 0,
            });
        }
        PodControlError::Create(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn failed_create_event_is_suppressed_only_for_a_terminating_namespace() {
        let terminating = create_error("Forbidden", Some("NamespaceTerminating"));
        assert!(terminating.is_namespace_terminating());
        assert_eq!(failed_create_event_message(&terminating), None);
        let quota = create_error("Forbidden", None);
        assert!(!quota.is_namespace_terminating());
        assert_eq!(
            failed_create_event_message(&quota).as_deref(),
            Some("Error creating: pods \"p\" is forbidden: nope")
        );
        let other_cause = create_error("Forbidden", Some("FieldValueInvalid"));
        assert!(failed_create_event_message(&other_cause).is_some());
    }

    #[test]
    fn prefix_table() {
        let long_valid = "a".repeat(253);
        let cases = [
            ("web-896bb5df7", "web-896bb5df7-".to_owned()),
            ("a", "a-".to_owned()),
            ("web.v1", "web.v1-".to_owned()),
            // 254 characters with the dash, but the masked form is 253: accepted like upstream.
            (long_valid.as_str(), format!("{long_valid}-")),
            // Invalid owner names fall back to the bare name.
            ("Web", "Web".to_owned()),
            ("", "".to_owned()),
            ("web_1", "web_1".to_owned()),
            // Masking works on bytes, as in Go: a multi-byte character stays invalid.
            ("\u{e9}", "\u{e9}".to_owned()),
        ];
        for (owner, want) in cases {
            assert_eq!(pods_prefix(owner), want, "{owner}");
        }
    }

    #[test]
    fn subdomain_validation() {
        let cases = [
            ("a", true),
            ("a-b.c", true),
            ("0", true),
            ("-a", false),
            ("a-", false),
            ("a..b", false),
            ("A", false),
            ("", false),
            (&*"a".repeat(253), true),
            (&*"a".repeat(254), false),
        ];
        for (value, want) in cases {
            assert_eq!(is_dns1123_subdomain(value.as_bytes()), want, "{value}");
        }
    }

    #[test]
    fn pod_from_template_copies_exactly_upstreams_fields() {
        let labels = BTreeMap::from([
            ("app".to_owned(), "web".to_owned()),
            ("pod-template-hash".to_owned(), "896bb5df7".to_owned()),
        ]);
        let annotations = BTreeMap::from([("note".to_owned(), "a<b & c>d".to_owned())]);
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels.clone()),
                annotations: Some(annotations.clone()),
                finalizers: Some(vec!["example.com/keep".to_owned()]),
                name: Some("template-name".to_owned()),
                namespace: Some("template-ns".to_owned()),
                uid: Some("template-uid".to_owned()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "nginx".to_owned(),
                    image: Some("nginx:1.25".to_owned()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        };
        let pod = pod_from_template(&template, "web-896bb5df7", &controller_ref());
        let want = Pod {
            metadata: ObjectMeta {
                labels: Some(labels),
                annotations: Some(annotations),
                finalizers: Some(vec!["example.com/keep".to_owned()]),
                generate_name: Some("web-896bb5df7-".to_owned()),
                owner_references: Some(vec![controller_ref()]),
                ..ObjectMeta::default()
            },
            spec: template.spec.clone(),
            status: None,
        };
        assert_eq!(pod, want);
        let body = serde_json::to_value(&pod).expect("serializes");
        assert!(body["metadata"].get("namespace").is_none());
        assert!(body["metadata"].get("name").is_none());
    }

    #[test]
    fn controller_ref_validation_table() {
        let valid = controller_ref();
        let cases = [
            (valid.clone(), None),
            (
                OwnerReference {
                    api_version: String::new(),
                    ..valid.clone()
                },
                Some("controllerRef has empty APIVersion"),
            ),
            (
                OwnerReference {
                    kind: String::new(),
                    ..valid.clone()
                },
                Some("controllerRef has empty Kind"),
            ),
            (
                OwnerReference {
                    controller: None,
                    ..valid.clone()
                },
                Some("controllerRef.Controller is not set to true"),
            ),
            (
                OwnerReference {
                    controller: Some(false),
                    ..valid.clone()
                },
                Some("controllerRef.Controller is not set to true"),
            ),
            (
                OwnerReference {
                    block_owner_deletion: Some(false),
                    ..valid.clone()
                },
                Some("controllerRef.BlockOwnerDeletion is not set"),
            ),
        ];
        for (reference, want) in cases {
            let got = validate_controller_ref(&reference)
                .err()
                .map(|e| e.to_string());
            assert_eq!(got.as_deref(), want, "{reference:?}");
        }
    }
}
