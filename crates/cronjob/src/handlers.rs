//! The Job and CronJob informers' handlers (upstream `addJob`, `updateJob`, `deleteJob`,
//! `updateCronJob`, `enqueueController`, `enqueueControllerAfter`), and the index that finds a
//! CronJob's Jobs without scanning its namespace.

use std::sync::Arc;

use controller_toolkit::events::EventType;
use informer::{DeletedObject, EventHandler, Lister, object_key};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::{Resource, ResourceExt};

use crate::{
    context::Shared,
    decide::{
        plan::requeue_delay,
        schedule::{format_schedule, parse_schedule},
        times::next_schedule_time_duration,
    },
};

/// The Job informer's index of Jobs by the CronJob their controller reference names:
/// `namespace/name`. Upstream lists every Job of the namespace on each sync and keeps those
/// whose controller reference has the CronJob's name; the index finds the same Jobs, so a sync
/// costs the same beside 10 Jobs or 10,000.
pub const JOBS_BY_CONTROLLER_NAME: &str = "cronjob-jobs-by-controller-name";

/// [`JOBS_BY_CONTROLLER_NAME`]'s index function: any controller reference's name (upstream
/// compares the name alone, not the kind).
pub fn jobs_by_controller_name(job: &Job) -> Vec<String> {
    let namespace = job.namespace().unwrap_or_default();
    job.owner_references()
        .iter()
        .filter(|owner| owner.controller == Some(true))
        .map(|owner| format!("{namespace}/{}", owner.name))
        .collect()
}

/// Enqueues the CronJob a Job's controller reference resolves to.
pub(crate) struct JobHandler {
    cronjobs: Lister<CronJob>,
    shared: Arc<Shared>,
}

impl JobHandler {
    pub(crate) fn new(cronjobs: Lister<CronJob>, shared: Arc<Shared>) -> Self {
        Self { cronjobs, shared }
    }

    /// upstream `resolveControllerRef` then `enqueueController`.
    fn enqueue_controller_of(&self, job: &Job) {
        let namespace = job.namespace().unwrap_or_default();
        let Some(owner) = job
            .meta()
            .owner_references
            .iter()
            .flatten()
            .find(|owner| owner.controller == Some(true))
        else {
            return;
        };
        if let Some(cronjob) = self.cronjobs.resolve_controller_ref(&namespace, owner) {
            self.shared.queue.add(object_key(cronjob.as_ref()));
        }
    }
}

impl EventHandler<Job> for JobHandler {
    /// upstream `addJob`: a Job being deleted is handled as deleted; otherwise its CronJob is
    /// enqueued. A Job without a controller reference is never adopted.
    fn on_add(&self, job: &Arc<Job>, _is_in_initial_list: bool) {
        self.enqueue_controller_of(job);
    }

    /// upstream `updateJob`: a resync changes nothing; a changed controller reference enqueues
    /// the old CronJob as well as the new.
    fn on_update(&self, old: &Arc<Job>, new: &Arc<Job>) {
        if old.metadata.resource_version == new.metadata.resource_version {
            return;
        }
        let controller = |job: &Job| {
            job.owner_references()
                .iter()
                .find(|owner| owner.controller == Some(true))
                .cloned()
        };
        if controller(old) != controller(new) {
            self.enqueue_controller_of(old);
        }
        self.enqueue_controller_of(new);
    }

    /// upstream `deleteJob` (a tombstone's last state included).
    fn on_delete(&self, job: &DeletedObject<Job>) {
        self.enqueue_controller_of(job.object());
    }
}

/// Enqueues a CronJob on every change; a changed schedule or time zone requeues it for its
/// next run instead.
pub(crate) struct CronJobHandler {
    shared: Arc<Shared>,
}

impl CronJobHandler {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

impl EventHandler<CronJob> for CronJobHandler {
    fn on_add(&self, cronjob: &Arc<CronJob>, _is_in_initial_list: bool) {
        self.shared.queue.add(object_key(cronjob.as_ref()));
    }

    /// upstream `updateCronJob`.
    fn on_update(&self, old: &Arc<CronJob>, new: &Arc<CronJob>) {
        let schedule = |cronjob: &CronJob| {
            (
                cronjob.spec.schedule.clone(),
                cronjob.spec.time_zone.clone(),
            )
        };
        let key = object_key(new.as_ref());
        if schedule(old) == schedule(new) {
            self.shared.queue.add(key);
            return;
        }
        match parse_schedule(&format_schedule(new).spec) {
            Ok(parsed) => {
                let now = self.shared.now();
                let delay = next_schedule_time_duration(new, &now, &parsed);
                self.shared.requeue_after(&key, requeue_delay(delay));
            }
            Err(_) => {
                let text = new.spec.schedule.as_str();
                tracing::debug!(key, schedule = text, "unparseable schedule");
                self.shared.recorder.record(
                    new.as_ref(),
                    EventType::Warning,
                    "UnParseableCronJobSchedule",
                    format!("unparseable schedule for cronjob: {text}"),
                );
            }
        }
    }

    fn on_delete(&self, cronjob: &DeletedObject<CronJob>) {
        self.shared.queue.add(cronjob.key());
    }
}
