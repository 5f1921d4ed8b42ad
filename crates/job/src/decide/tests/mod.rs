//! Table tests of the decision modules, one file per module, mirroring upstream's test tables
//! (their case names are kept as row names). Jobs are written as the API server's JSON and
//! patched per case; pods are built like upstream's `buildPod()` helper, as k8s-openapi
//! `Pod`s, and handed to the decision functions as the informer caches them
//! (`CachedPod::from`, in [`PodBuilder::build`]).

use std::collections::BTreeMap;

use informer::CachedPod;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStatus,
    Pod, PodCondition, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::spec::{
    JOB_COMPLETION_INDEX_ANNOTATION, JOB_INDEX_FAILURE_COUNT_ANNOTATION,
    JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, JOB_TRACKING_FINALIZER,
};

mod backoff;
mod end_state;
mod failure_policy;
mod indexes;
mod manage;
mod pods;
mod spec;
mod success_policy;
mod tracking;
mod types;

/// The clock of the tests (upstream's `defaultTestTime` is 2009-11-10T23:00:00Z).
pub(super) fn now() -> Timestamp {
    "2009-11-10T23:00:00Z".parse().expect("a valid time")
}

/// `now()` shifted by `seconds`.
pub(super) fn now_plus(seconds: i64) -> Timestamp {
    Timestamp::from_second(now().as_second() + seconds).expect("a valid time")
}

/// The Job of every test unless a case patches it: `default/job`, UID `job-uid`, a template
/// with one container and `restartPolicy: Never`, nothing else set (so API defaults apply).
pub(super) fn job_json() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job", "namespace": "default", "uid": "job-uid"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "job"}},
                "spec": {"containers": [{"name": "c", "image": "img"}], "restartPolicy": "Never"}
            }
        }
    })
}

/// [`job_json`] with `patch` merged in (a JSON merge patch, RFC 7386).
pub(super) fn job(patch: Value) -> Job {
    let mut object = job_json();
    json_patch::merge(&mut object, &patch);
    serde_json::from_value(object).expect("a valid Job")
}

/// An Indexed Job with `completions` (and `parallelism`), patched with `patch`.
pub(super) fn indexed_job(completions: i32, patch: Value) -> Job {
    let mut object = job_json();
    json_patch::merge(
        &mut object,
        &json!({"spec": {"completionMode": "Indexed", "completions": completions,
            "parallelism": completions}}),
    );
    json_patch::merge(&mut object, &patch);
    serde_json::from_value(object).expect("a valid Job")
}

/// A pod, built step by step (upstream's `buildPod()`).
#[derive(Clone, Debug)]
pub(super) struct PodBuilder(Pod);

/// A pod in `default` without name, UID, phase or anything else.
pub(super) fn pod() -> PodBuilder {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some("default".to_owned());
    PodBuilder(pod)
}

impl PodBuilder {
    fn status(&mut self) -> &mut PodStatus {
        self.0.status.get_or_insert_with(PodStatus::default)
    }

    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_with(PodSpec::default)
    }

    fn annotate(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// UID `uid`, named after it.
    pub(super) fn uid(mut self, uid: &str) -> Self {
        self.0.metadata.uid = Some(uid.to_owned());
        self.0.metadata.name = Some(uid.to_owned());
        self
    }

    /// Named `name`.
    pub(super) fn name(mut self, name: &str) -> Self {
        self.0.metadata.name = Some(name.to_owned());
        self
    }

    /// In `phase`.
    pub(super) fn phase(mut self, phase: &str) -> Self {
        self.status().phase = Some(phase.to_owned());
        self
    }

    /// With the completion index annotation `index` (any string).
    pub(super) fn index(self, index: &str) -> Self {
        self.annotate(JOB_COMPLETION_INDEX_ANNOTATION, index)
    }

    /// With the failure-count annotation `count` (any string).
    pub(super) fn index_failure_count(self, count: &str) -> Self {
        self.annotate(JOB_INDEX_FAILURE_COUNT_ANNOTATION, count)
    }

    /// With the ignored-failure-count annotation `count` (any string).
    pub(super) fn index_ignored_failure_count(self, count: &str) -> Self {
        self.annotate(JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION, count)
    }

    /// With the tracking finalizer.
    pub(super) fn tracking_finalizer(mut self) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(JOB_TRACKING_FINALIZER.to_owned());
        self
    }

    /// Being deleted (at [`now`]).
    pub(super) fn deletion_timestamp(self) -> Self {
        self.deleted_at(now())
    }

    /// Being deleted, at `time` (upstream's `customDeletionTimestamp`).
    pub(super) fn deleted_at(mut self, time: Timestamp) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(time));
        self
    }

    /// With `deletionGracePeriodSeconds`.
    pub(super) fn grace_period(mut self, seconds: i64) -> Self {
        self.0.metadata.deletion_grace_period_seconds = Some(seconds);
        self
    }

    /// Created at `time`.
    pub(super) fn created(mut self, time: Timestamp) -> Self {
        self.0.metadata.creation_timestamp = Some(Time(time));
        self
    }

    /// Bound to `node`.
    pub(super) fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.to_owned());
        self
    }

    /// With the pod condition `type_`=`status`.
    pub(super) fn condition(self, type_: &str, status: &str) -> Self {
        self.condition_at(type_, status, None)
    }

    /// With the pod condition `type_`=`status`, transitioned at `time`.
    pub(super) fn condition_at(
        mut self,
        type_: &str,
        status: &str,
        time: Option<Timestamp>,
    ) -> Self {
        self.status()
            .conditions
            .get_or_insert_with(Vec::new)
            .push(PodCondition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                last_transition_time: time.map(Time),
                ..PodCondition::default()
            });
        self
    }

    /// Ready since `time`.
    pub(super) fn ready_since(self, time: Timestamp) -> Self {
        self.condition_at("Ready", "True", Some(time))
    }

    /// With an app container status `name` terminated with `exit_code` (no time).
    pub(super) fn exited(mut self, name: &str, exit_code: i32) -> Self {
        let status = terminated(name, exit_code, None);
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With an app container status `name` terminated at `time`.
    pub(super) fn finished(mut self, name: &str, time: Option<Timestamp>) -> Self {
        let status = terminated(name, 0, time);
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With an init container status `name` terminated with `exit_code` at `time`.
    pub(super) fn init_exited(
        mut self,
        name: &str,
        exit_code: i32,
        time: Option<Timestamp>,
    ) -> Self {
        let status = terminated(name, exit_code, time);
        self.status()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With an app container status `name` that is running.
    pub(super) fn running(mut self, name: &str) -> Self {
        let status = ContainerStatus {
            name: name.to_owned(),
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..ContainerState::default()
            }),
            ..ContainerStatus::default()
        };
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With an app container status `name` (no state) restarted `count` times.
    pub(super) fn restarts(mut self, name: &str, count: i32) -> Self {
        let status = ContainerStatus {
            name: name.to_owned(),
            restart_count: count,
            ..ContainerStatus::default()
        };
        self.status()
            .container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With an init container status `name` (no state) restarted `count` times.
    pub(super) fn init_restarts(mut self, name: &str, count: i32) -> Self {
        let status = ContainerStatus {
            name: name.to_owned(),
            restart_count: count,
            ..ContainerStatus::default()
        };
        self.status()
            .init_container_statuses
            .get_or_insert_with(Vec::new)
            .push(status);
        self
    }

    /// With the restartable init container (sidecar) `name` in the spec.
    pub(super) fn sidecar(mut self, name: &str) -> Self {
        self.spec()
            .init_containers
            .get_or_insert_with(Vec::new)
            .push(Container {
                name: name.to_owned(),
                restart_policy: Some("Always".to_owned()),
                ..Container::default()
            });
        self
    }

    /// Controlled by an object of `kind` (in `api_version`).
    pub(super) fn controlled_by(mut self, api_version: &str, kind: &str) -> Self {
        self.0.metadata.owner_references = Some(vec![OwnerReference {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            name: "owner".to_owned(),
            uid: "owner-uid".to_owned(),
            controller: Some(true),
            ..OwnerReference::default()
        }]);
        self
    }

    /// Carrying a finalizer other than the Job's.
    pub(super) fn other_finalizer(mut self) -> Self {
        self.0
            .metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push("example.com/keep".to_owned());
        self
    }

    /// The pod, as the informer caches it.
    pub(super) fn build(self) -> CachedPod {
        CachedPod::from(&self.0)
    }
}

fn terminated(name: &str, exit_code: i32, finished_at: Option<Timestamp>) -> ContainerStatus {
    ContainerStatus {
        name: name.to_owned(),
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code,
                finished_at: finished_at.map(Time),
                ..ContainerStateTerminated::default()
            }),
            ..ContainerState::default()
        }),
        ..ContainerStatus::default()
    }
}

/// Builds every pod.
pub(super) fn build(pods: Vec<PodBuilder>) -> Vec<CachedPod> {
    pods.into_iter().map(PodBuilder::build).collect()
}

/// References to `pods`, as the decision functions take them.
pub(super) fn refs(pods: &[CachedPod]) -> Vec<&CachedPod> {
    pods.iter().collect()
}

/// The UIDs of `pods`, in order.
pub(super) fn uids(pods: &[&CachedPod]) -> Vec<String> {
    pods.iter()
        .map(|p| p.metadata.uid.clone().unwrap_or_default())
        .collect()
}

/// A UID set.
pub(super) fn uid_set(uids: &[&str]) -> super::types::UidSet {
    uids.iter().map(|u| (*u).to_owned()).collect()
}

/// `(index annotation, phase)` of pods, `"-"` for no annotation (upstream's `indexPhase`).
pub(super) fn index_phases(pods: &[&CachedPod]) -> Vec<(String, String)> {
    pods.iter()
        .map(|p| {
            let index = p
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(JOB_COMPLETION_INDEX_ANNOTATION))
                .cloned()
                .unwrap_or_else(|| "-".to_owned());
            let phase = p.phase().unwrap_or_default().to_owned();
            (index, phase)
        })
        .collect()
}

/// Pods from `(index, phase)` pairs, `"-"` for no annotation (upstream's
/// `hollowPodsWithIndexPhase`).
pub(super) fn hollow_pods(descs: &[(&str, &str)]) -> Vec<CachedPod> {
    descs
        .iter()
        .map(|(index, phase)| {
            let builder = pod().phase(phase);
            if *index == "-" {
                builder.build()
            } else {
                builder.index(index).build()
            }
        })
        .collect()
}

/// Owned `(index, phase)` pairs.
pub(super) fn owned(descs: &[(&str, &str)]) -> Vec<(String, String)> {
    descs
        .iter()
        .map(|(i, p)| ((*i).to_owned(), (*p).to_owned()))
        .collect()
}
