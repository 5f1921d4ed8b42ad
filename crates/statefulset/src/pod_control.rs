//! Upstream `StatefulPodControl`: the pod and claim writes of a plan,
//! with upstream's event reasons and messages recorded on the set.

use std::sync::Arc;

use controller_toolkit::{
    api_errors::{error_message, is_already_exists, is_conflict, is_not_found},
    events::{EventRecorder, EventType},
    stale_reads::DependentWrites,
    writes::Writer,
};
use informer::CachedPod;
use k8s_openapi::{
    api::{apps::v1::StatefulSet, core::v1::Pod},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::Api;

use crate::{
    decide::{ClaimWrite, PodAction},
    identity::{OrdinalRange, POD_INDEX_LABEL, POD_NAME_LABEL},
};

/// Why one pod or claim write failed.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// An API request failed.
    #[error("{}", error_message(.0))]
    Api(#[from] kube::Error),
    /// A claim the pod needs is being deleted; the pod waits for it to go.
    #[error("pvc {0} is being deleted")]
    ClaimBeingDeleted(String),
    /// Several claim writes failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    Claims(Vec<PodControlError>),
}

/// What an executed action did that the status must know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing the status cares about.
    Done,
    /// A pod was deleted to be replaced at the update revision.
    DeletedForUpdate,
}

/// Executes [`PodAction`]s for one set.
#[derive(Clone)]
pub struct StatefulPodControl {
    writer: Writer,
    recorder: EventRecorder,
    /// The versions our pod writes returned, per set (the stale-read check of the next sync).
    pod_writes: Arc<DependentWrites>,
}

/// kcm-rs only: reason of the Warning event recorded when a stuck pod of a broken rollout is
/// deleted to be recreated at the update revision.
pub const RECOVERING_BROKEN_POD_REASON: &str = "RecoveringBrokenPod";

/// PUT attempts for a pod repair.
const POD_UPDATE_ATTEMPTS: usize = 4;

/// `fresh` with the identity labels and volumes of `repaired`. `repaired` comes from the
/// cache, which keeps only claim volumes, so its volumes go first (as `set_storage` orders
/// them) and `fresh` keeps every other volume it has.
fn carry_repair(mut fresh: Pod, repaired: &Pod) -> Pod {
    let labels = fresh.metadata.labels.get_or_insert_with(Default::default);
    for key in [POD_NAME_LABEL, POD_INDEX_LABEL] {
        if let Some(value) = repaired.metadata.labels.as_ref().and_then(|l| l.get(key)) {
            labels.insert(key.to_owned(), value.clone());
        }
    }
    if let (Some(spec), Some(repaired_volumes)) = (
        fresh.spec.as_mut(),
        repaired.spec.as_ref().and_then(|s| s.volumes.as_ref()),
    ) {
        let mut volumes = repaired_volumes.clone();
        for volume in spec.volumes.take().unwrap_or_default() {
            if !volumes.iter().any(|kept| kept.name == volume.name) {
                volumes.push(volume);
            }
        }
        spec.volumes = Some(volumes);
    }
    fresh
}

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

impl StatefulPodControl {
    /// A control writing through `writer`, recording events with `recorder` and the versions
    /// of its pod writes in `pod_writes`.
    pub fn new(writer: Writer, recorder: EventRecorder, pod_writes: Arc<DependentWrites>) -> Self {
        Self {
            writer,
            recorder,
            pod_writes,
        }
    }

    fn record_pod_write(&self, set: &StatefulSet, written: &Pod) {
        self.pod_writes
            .record(&informer::object_key(set), &written.metadata);
    }

    fn namespace(set: &StatefulSet) -> &str {
        set.metadata.namespace.as_deref().unwrap_or_default()
    }

    /// Runs one action.
    pub async fn execute(
        &self,
        set: &StatefulSet,
        action: &PodAction,
    ) -> Result<Outcome, PodControlError> {
        match action {
            PodAction::Create { pod, claims } => self
                .create_pod(set, pod, claims)
                .await
                .map(|()| Outcome::Done),
            PodAction::Repair {
                pod,
                updated,
                claims,
            } => self
                .repair_pod(set, pod, updated.as_deref(), claims)
                .await
                .map(|()| Outcome::Done),
            PodAction::Delete { pod, for_update } => {
                self.delete_pod(set, pod).await?;
                Ok(if *for_update {
                    Outcome::DeletedForUpdate
                } else {
                    Outcome::Done
                })
            }
            PodAction::Recover(stuck) => {
                self.delete_pod(set, &stuck.pod).await?;
                // Recorded once the pod is gone, so the Warning names a deletion that happened.
                self.recorder.record(
                    set,
                    EventType::Warning,
                    RECOVERING_BROKEN_POD_REASON,
                    stuck.message(),
                );
                Ok(Outcome::Done)
            }
        }
    }

    /// kcm-rs only: a Warning `FailedCreate` on a set some of whose ordinals no pod name can
    /// carry ([`OrdinalRange::unnameable`]), so the user learns why it stays short of
    /// `spec.replicas` (upstream creates such a pod, never recognises it again, and deletes and
    /// recreates it on every sync).
    pub fn warn_unnameable_ordinals(&self, set: &StatefulSet, range: OrdinalRange) {
        let Some((count, first)) = range.unnameable() else {
            return;
        };
        self.recorder.record(
            set,
            EventType::Warning,
            "FailedCreate",
            format!(
                "{count} of the StatefulSet's ordinals, from {first}, are outside 0..={}: no pod \
                 name can carry them, so those pods are not created (spec.ordinals.start {}, \
                 spec.replicas {})",
                i32::MAX,
                range.start,
                range.replicas
            ),
        );
    }

    fn record_pod_event(
        &self,
        set: &StatefulSet,
        verb: &str,
        pod_name: &str,
        error: Option<&PodControlError>,
    ) {
        let set_name = name_of(&set.metadata);
        let reason_verb = match verb {
            "create" => "Create",
            "update" => "Update",
            _ => "Delete",
        };
        match error {
            None => self.recorder.record(
                set,
                EventType::Normal,
                &format!("Successful{reason_verb}"),
                format!("{verb} Pod {pod_name} in StatefulSet {set_name} successful"),
            ),
            Some(error) => self.recorder.record(
                set,
                EventType::Warning,
                &format!("Failed{reason_verb}"),
                format!("{verb} Pod {pod_name} in StatefulSet {set_name} failed error: {error}"),
            ),
        }
    }

    /// Records the Successful/Failed event of a pod write and passes its result on.
    fn reported(
        &self,
        set: &StatefulSet,
        verb: &str,
        pod_name: &str,
        result: Result<(), PodControlError>,
    ) -> Result<(), PodControlError> {
        self.record_pod_event(set, verb, pod_name, result.as_ref().err());
        result
    }

    /// Upstream `CreateStatefulPod`: claims first, then the pod (AlreadyExists is success,
    /// without an event).
    async fn create_pod(
        &self,
        set: &StatefulSet,
        pod: &Pod,
        claims: &[ClaimWrite],
    ) -> Result<(), PodControlError> {
        let pod_name = name_of(&pod.metadata);
        let result = match self.write_claims(set, pod_name, claims).await {
            Ok(()) => match self.writer.create(pod, "create stateful pod").await {
                Ok(created) => {
                    self.record_pod_write(set, &created);
                    Ok(())
                }
                Err(error) if is_already_exists(&error) => return Ok(()),
                Err(error) => Err(error.into()),
            },
            Err(error) => Err(error),
        };
        self.reported(set, "create", pod_name, result)
    }

    /// Upstream `UpdateStatefulPod` / `fixPodClaim`: claim writes, then a PUT of the pod if its
    /// identity or storage changed.
    async fn repair_pod(
        &self,
        set: &StatefulSet,
        pod: &CachedPod,
        updated: Option<&Pod>,
        claims: &[ClaimWrite],
    ) -> Result<(), PodControlError> {
        let pod_name = name_of(&pod.metadata);
        self.write_claims(set, pod_name, claims).await?;
        let Some(updated) = updated else {
            return Ok(());
        };
        let result = self.put_pod(set, updated).await.map_err(Into::into);
        self.reported(set, "update", pod_name, result)
    }

    /// PUTs the repair (identity labels, volumes) carried over to a fresh read of the pod, and
    /// retries conflicts the same way (4 attempts, as upstream's retry-on-conflict). The
    /// repaired copy itself is never sent: it holds only what the cache keeps of the pod
    /// (`informer::CachedPod`: metadata and claim volumes).
    async fn put_pod(&self, set: &StatefulSet, updated: &Pod) -> Result<(), kube::Error> {
        let api: Api<Pod> = Api::namespaced(self.writer.client().clone(), Self::namespace(set));
        let name = name_of(&updated.metadata);
        let mut attempt = carry_repair(api.get(name).await?, updated);
        let mut remaining = POD_UPDATE_ATTEMPTS;
        loop {
            remaining -= 1;
            match self.writer.update(&attempt, "repair pod identity").await {
                Ok(written) => {
                    self.record_pod_write(set, &written);
                    return Ok(());
                }
                Err(error) if remaining > 0 && is_conflict(&error) => {
                    attempt = carry_repair(api.get(name).await?, updated);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Upstream `DeleteStatefulPod`; a pod already gone counts as deleted.
    async fn delete_pod(&self, set: &StatefulSet, pod: &CachedPod) -> Result<(), PodControlError> {
        let pod_name = name_of(&pod.metadata);
        let deleted = self
            .writer
            .delete::<Pod>(&pod.metadata, false, "delete stateful pod")
            .await;
        let result = match deleted {
            // A graceful delete returns the pod (with its new version); an immediate one
            // only a Status, and then the DELETED event carries no version of ours.
            Ok(deleted) => {
                if let Some(deleted) = deleted {
                    self.record_pod_write(set, &deleted);
                }
                Ok(())
            }
            Err(error) if is_not_found(&error) => return Ok(()),
            Err(error) => Err(error.into()),
        };
        self.reported(set, "delete", pod_name, result)
    }

    /// All claim writes of one pod; errors are aggregated (upstream
    /// `createPersistentVolumeClaims` and `updateClaimOwnerRefForSetAndPod`).
    async fn write_claims(
        &self,
        set: &StatefulSet,
        pod_name: &str,
        writes: &[ClaimWrite],
    ) -> Result<(), PodControlError> {
        let mut errors = Vec::new();
        for write in writes {
            if let Err(error) = self.write_claim(set, pod_name, write).await {
                errors.push(error);
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(PodControlError::Claims(errors)),
        }
    }

    async fn write_claim(
        &self,
        set: &StatefulSet,
        pod_name: &str,
        write: &ClaimWrite,
    ) -> Result<(), PodControlError> {
        let set_name = name_of(&set.metadata);
        match write {
            ClaimWrite::BeingDeleted(name) => Err(PodControlError::ClaimBeingDeleted(name.clone())),
            ClaimWrite::Create(claim) => {
                let claim_name = name_of(&claim.metadata);
                match self.writer.create(claim.as_ref(), "create claim").await {
                    Ok(_) => {
                        self.recorder.record(
                            set,
                            EventType::Normal,
                            "SuccessfulCreate",
                            format!("create Claim {claim_name} Pod {pod_name} in StatefulSet {set_name} success"),
                        );
                        Ok(())
                    }
                    Err(error) if is_already_exists(&error) => Err(error.into()),
                    Err(error) => {
                        self.recorder.record(
                            set,
                            EventType::Warning,
                            "FailedCreate",
                            format!(
                                "create Claim {claim_name} for Pod {pod_name} in StatefulSet {set_name} failed error: {}",
                                error_message(&error)
                            ),
                        );
                        Err(error.into())
                    }
                }
            }
            ClaimWrite::SetOwners { claim, owners } => {
                let mut updated = claim.as_ref().clone();
                updated.metadata.owner_references = (!owners.is_empty()).then(|| owners.clone());
                match self.writer.update(&updated, "claim owners").await {
                    Ok(_) => Ok(()),
                    Err(error) if is_not_found(&error) => Ok(()),
                    Err(error) => Err(error.into()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_conflicting_repair_is_carried_over_to_the_fresh_pod() {
        let fresh: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-0", "resourceVersion": "9", "labels": {"app": "web", "new": "label"}},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                     "volumes": [{"name": "data", "emptyDir": {}},
                                 {"name": "kube-api-access-x1", "projected": {"sources": []}}]}
        }))
        .unwrap();
        let repaired: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web-0", "resourceVersion": "7",
                         "labels": {"app": "web", POD_NAME_LABEL: "web-0", POD_INDEX_LABEL: "0"}},
            "spec": {"containers": [{"name": "c", "image": "x"}],
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]}
        }))
        .unwrap();
        let merged = carry_repair(fresh, &repaired);
        assert_eq!(merged.metadata.resource_version.as_deref(), Some("9"));
        let labels = merged.metadata.labels.unwrap();
        assert_eq!(labels["new"], "label");
        assert_eq!(labels[POD_NAME_LABEL], "web-0");
        assert_eq!(labels[POD_INDEX_LABEL], "0");
        let spec = merged.spec.unwrap();
        let volumes = spec.volumes.unwrap();
        let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
        // The repaired claim volume replaces the namesake; the token volume the trimmed cache
        // lacks is kept from the fresh pod, and the containers are the fresh pod's.
        assert_eq!(names, vec!["data", "kube-api-access-x1"]);
        assert!(volumes[0].persistent_volume_claim.is_some());
        assert_eq!(spec.containers[0].name, "c");
    }
}
