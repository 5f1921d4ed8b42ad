//! The CronJob controller: its construction and its sync, upstream's `sync` and
//! `syncCronJob` as numbered steps (`docs/spec/cronjob.md` sections 3 and 6).
//!
//! Each sync brings `status.active` up to date with the CronJob's Jobs, removes the finished
//! Jobs beyond the history limits, then decides from the schedule and `now` (the pure
//! [`plan`]) whether a run starts; the key is requeued for exactly the next run. The status is
//! written once, with the cached copy's resourceVersion, and only when it changed.

use std::sync::Arc;

use controller_toolkit::{
    api_errors::{error_message, has_status_cause, is_already_exists},
    events::EventType,
    runtime::{BuildError, Controller, ControllerRuntime, ControllerSync, Reconciler},
    stale_reads::WrittenVersions,
    writes::Propagation,
};
use informer::{Lister, SharedInformerFactory};
use k8s_openapi::{
    api::{
        batch::v1::{CronJob, CronJobStatus, Job},
        core::v1::ObjectReference,
    },
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time},
    jiff::{Timestamp, Zoned},
};
use kube::{Api, Client, ResourceExt};

use crate::{
    context::{CronJobOptions, IDENTITY, Shared, SyncError},
    decide::{
        jobs::{beyond_history_limits, finished, succeeded},
        plan::{Outcome, PlannedEvent, plan, requeue_delay},
        schedule::{format_schedule, parse_schedule},
        template::job_from_template,
        times::next_schedule_time_duration,
    },
    handlers::{CronJobHandler, JOBS_BY_CONTROLLER_NAME, JobHandler, jobs_by_controller_name},
};

/// The CronJob controller: build it with `CronJobController::new` (client, informer factory,
/// options) and run it with `run(workers, shutdown)`.
pub type CronJobController = Controller<CronJobSync>;

/// The sync: the CronJob and Job caches and the shared handles.
pub struct CronJobSync {
    cronjobs: Lister<CronJob>,
    jobs: Lister<Job>,
    shared: Arc<Shared>,
}

impl ControllerSync for CronJobSync {
    type Options = CronJobOptions;

    /// upstream `NewControllerV2`: the Job and CronJob informers' handlers, the queue.
    fn build(
        client: Client,
        informers: &SharedInformerFactory,
        options: CronJobOptions,
    ) -> Result<(ControllerRuntime, Self), BuildError> {
        let job_informer = informers.informer::<Job>();
        job_informer.add_indexer(JOBS_BY_CONTROLLER_NAME, jobs_by_controller_name)?;
        let cronjob_informer = informers.informer::<CronJob>();
        let mut runtime = ControllerRuntime::new(&client, IDENTITY, &options.runtime)?;
        let shared = Arc::new(Shared {
            client,
            writer: runtime.writer().clone(),
            recorder: runtime.recorder().clone(),
            queue: runtime.queue().clone(),
            clock: options.clock,
            metrics: options.metrics,
            written: WrittenVersions::new("batch", "cronjobs")
                .counting(options.runtime.stale_sync_skips.clone()),
        });
        runtime.handles(
            &job_informer,
            JobHandler::new(cronjob_informer.lister(), shared.clone()),
        );
        runtime.handles(&cronjob_informer, CronJobHandler::new(shared.clone()));
        let sync = CronJobSync {
            cronjobs: cronjob_informer.lister(),
            jobs: job_informer.lister(),
            shared,
        };
        Ok((runtime, sync))
    }
}

impl Reconciler for CronJobSync {
    type Error = SyncError;

    /// upstream `sync`.
    async fn sync(&self, key: &str) -> Result<(), SyncError> {
        let shared = &self.shared;
        // 1. The CronJob from the cache; gone means nothing to do. Never from a copy older
        //    than our own last status write.
        let Some((namespace, _)) = key
            .split_once('/')
            .filter(|(namespace, name)| !namespace.is_empty() && !name.is_empty())
        else {
            return Err(SyncError::InvalidKey(key.to_owned()));
        };
        let Some(cached) = self.cronjobs.get_by_key(key) else {
            tracing::debug!(key, "CronJob not found, may be it is deleted");
            shared.written.forget(key);
            return Ok(());
        };
        shared.written.check(key, &cached.metadata)?;

        // 2. Its Jobs: those whose controller reference names it (upstream
        //    `getJobsToBeReconciled`, through the index).
        let jobs = self.jobs.by_index(JOBS_BY_CONTROLLER_NAME, key);
        let jobs: Vec<&Job> = jobs.iter().map(AsRef::as_ref).collect();

        // 3. All status edits go into a working copy.
        let mut working = Working::new(&cached);

        // 4. Finished Jobs beyond the history limits go first, whatever the schedule says.
        for job in beyond_history_limits(&cached, &jobs) {
            if self.delete_job(&mut working, job).await {
                working.changed = true;
            }
        }

        // 5. The runs: the children passes, then the schedule.
        let now = shared.now();
        let synced = self
            .sync_cronjob(key, namespace, &mut working, &jobs, &now)
            .await;

        // 6. One status write, if anything changed, with the cached copy's version (a newer
        //    copy answers 409 and the key is retried).
        if working.changed {
            let written = shared
                .writer
                .update_status(&working.cronjob, "status")
                .await
                .inspect_err(|error| {
                    tracing::debug!(key, %error, "unable to update status for cronjob");
                })?;
            shared.written.record(key, &written.metadata);
        }

        // 7. Requeued for the next run, or the sync's error.
        match synced {
            Ok(Some(requeue)) => {
                tracing::trace!(key, ?requeue, "re-queuing cronjob");
                shared.requeue_after(key, requeue);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// The CronJob a sync edits and whether its status changed.
struct Working {
    cronjob: CronJob,
    changed: bool,
}

impl Working {
    fn new(cached: &CronJob) -> Self {
        Self {
            cronjob: cached.clone(),
            changed: false,
        }
    }

    fn status(&mut self) -> &mut CronJobStatus {
        self.cronjob
            .status
            .get_or_insert_with(CronJobStatus::default)
    }

    fn active(&self) -> &[ObjectReference] {
        self.cronjob
            .status
            .as_ref()
            .and_then(|status| status.active.as_deref())
            .unwrap_or_default()
    }

    fn lists(&self, uid: &str) -> bool {
        self.active()
            .iter()
            .any(|reference| reference.uid.as_deref() == Some(uid))
    }

    /// upstream `deleteFromActiveList`.
    fn remove_active(&mut self, uid: &str) {
        if let Some(active) = &mut self.status().active {
            active.retain(|reference| reference.uid.as_deref() != Some(uid));
        }
    }
}

impl CronJobSync {
    /// upstream `syncCronJob`: the requeue, if any, or the error that stopped it (the status
    /// edits made before it are written either way).
    async fn sync_cronjob(
        &self,
        key: &str,
        namespace: &str,
        working: &mut Working,
        jobs: &[&Job],
        now: &Zoned,
    ) -> Result<Option<std::time::Duration>, SyncError> {
        let shared = &self.shared;
        // 1. Each of its Jobs: an unfinished one the status does not list is unexpected (unless
        //    the server's copy lists it: then the cache is behind); a finished one leaves the
        //    active list, and a success moves lastSuccessfulTime.
        for job in jobs {
            let uid = job.metadata.uid.clone().unwrap_or_default();
            let listed = working.lists(&uid);
            match finished(job) {
                None if !listed => {
                    let api: Api<CronJob> = Api::namespaced(shared.client.clone(), namespace);
                    let fresh = api.get(&working.cronjob.name_any()).await?;
                    let fresh_lists = fresh
                        .status
                        .iter()
                        .flat_map(|status| status.active.iter().flatten())
                        .any(|reference| reference.uid.as_deref() == Some(uid.as_str()));
                    if fresh_lists {
                        return Err(SyncError::CacheBehind(key.to_owned()));
                    }
                    self.event(
                        &working.cronjob,
                        EventType::Warning,
                        "UnexpectedJob",
                        format!(
                            "Saw a job that the controller did not create or forgot: {}",
                            job.name_any()
                        ),
                    );
                }
                None => {}
                Some(condition) => {
                    if listed {
                        working.remove_active(&uid);
                        self.event(
                            &working.cronjob,
                            EventType::Normal,
                            "SawCompletedJob",
                            format!(
                                "Saw completed job: {}, condition: {}",
                                job.name_any(),
                                condition.as_str()
                            ),
                        );
                        working.changed = true;
                    }
                    if succeeded(job) {
                        update_last_successful_time(working, job);
                    }
                }
            }
        }

        // 2. Listed Jobs the cache does not have: the server decides (a watch may lag).
        let children: Vec<&str> = jobs
            .iter()
            .filter_map(|job| job.metadata.uid.as_deref())
            .collect();
        let unseen: Vec<ObjectReference> = working
            .active()
            .iter()
            .filter(|reference| !children.contains(&reference.uid.as_deref().unwrap_or_default()))
            .cloned()
            .collect();
        for reference in unseen {
            let api: Api<Job> = Api::namespaced(
                shared.client.clone(),
                reference.namespace.as_deref().unwrap_or(namespace),
            );
            let name = reference.name.clone().unwrap_or_default();
            if api.get_opt(&name).await?.is_none() {
                self.event(
                    &working.cronjob,
                    EventType::Normal,
                    "MissingJob",
                    format!("Active job went missing: {name}"),
                );
                working.remove_active(reference.uid.as_deref().unwrap_or_default());
                working.changed = true;
            }
        }

        // 3-12. The schedule decides.
        let decided = plan(&working.cronjob, now);
        for event in &decided.events {
            self.planned_event(&working.cronjob, event);
        }
        let (scheduled, job_name, replace_active) = match decided.outcome {
            Outcome::Idle => return Ok(None),
            Outcome::Wait { requeue } => return Ok(Some(requeue)),
            Outcome::Start {
                scheduled,
                job_name,
                replace_active,
            } => (scheduled, job_name, replace_active),
        };
        if replace_active {
            for reference in working.active().to_vec() {
                let api: Api<Job> = Api::namespaced(
                    shared.client.clone(),
                    reference.namespace.as_deref().unwrap_or(namespace),
                );
                let name = reference.name.clone().unwrap_or_default();
                let job = match api.get(&name).await {
                    Ok(job) => job,
                    Err(error) => {
                        self.event(
                            &working.cronjob,
                            EventType::Warning,
                            "FailedGet",
                            format!("Get job: {}", error_message(&error)),
                        );
                        return Err(error.into());
                    }
                };
                if !self.delete_job(working, &job).await {
                    return Err(SyncError::Replace(format!("{namespace}/{name}")));
                }
                working.changed = true;
            }
        }

        // 13-14. Create the run's Job.
        let template = job_from_template(&working.cronjob, scheduled, &job_name)
            .map_err(|error| SyncError::Template(error.to_string()))?;
        let created = match shared
            .writer
            .create_for_metadata(&with_namespace(template, namespace), "create job")
            .await
        {
            Ok(created) => {
                self.observe_skew(&created, scheduled);
                self.event(
                    &working.cronjob,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created job {job_name}"),
                );
                created
            }
            Err(error) if has_status_cause(&error, "NamespaceTerminating") => {
                return Err(error.into());
            }
            Err(error) if is_already_exists(&error) => {
                // A run whose status write was lost, or another's Job under the name.
                let api: Api<Job> = Api::namespaced(shared.client.clone(), namespace);
                let existing = api.get(&job_name).await?;
                let ours = existing.owner_references().iter().any(|owner| {
                    owner.controller == Some(true)
                        && Some(&owner.uid) == working.cronjob.metadata.uid.as_ref()
                });
                if !ours || working.lists(existing.metadata.uid.as_deref().unwrap_or_default()) {
                    return Ok(None);
                }
                tracing::info!(key, job = job_name, "Job already exists");
                existing.metadata
            }
            Err(error) => {
                self.event(
                    &working.cronjob,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating job: {}", error_message(&error)),
                );
                return Err(error.into());
            }
        };

        // 15. The run is active and was scheduled; the next one decides the requeue.
        let status = working.status();
        status
            .active
            .get_or_insert_with(Vec::new)
            .push(job_reference(&created, namespace));
        status.last_schedule_time = Some(Time(scheduled));
        working.changed = true;
        let schedule = parse_schedule(&format_schedule(&working.cronjob).spec)
            .map_err(|error| SyncError::Template(error.to_string()))?;
        Ok(Some(requeue_delay(next_schedule_time_duration(
            &working.cronjob,
            now,
            &schedule,
        ))))
    }

    /// upstream `deleteJob`: by name, background propagation, no precondition; the Job leaves
    /// the active list. Whether it was deleted.
    async fn delete_job(&self, working: &mut Working, job: &Job) -> bool {
        let result = self
            .shared
            .writer
            .delete_propagating::<Job>(&job.metadata, false, Propagation::Background, "delete job")
            .await;
        match result {
            Ok(_) => {
                working.remove_active(job.metadata.uid.as_deref().unwrap_or_default());
                self.event(
                    &working.cronjob,
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted job {}", job.name_any()),
                );
                true
            }
            Err(error) => {
                tracing::warn!(job = job.name_any(), %error, "error deleting job from cronjob");
                self.event(
                    &working.cronjob,
                    EventType::Warning,
                    "FailedDelete",
                    format!("Deleted job: {}", error_message(&error)),
                );
                false
            }
        }
    }

    fn event(&self, cronjob: &CronJob, kind: EventType, reason: &str, message: String) {
        self.shared.recorder.record(cronjob, kind, reason, message);
    }

    fn planned_event(&self, cronjob: &CronJob, event: &PlannedEvent) {
        let kind = if event.warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        self.event(cronjob, kind, event.reason, event.message.clone());
    }

    /// `cronjob_controller_job_creation_skew_duration_seconds`: the created Job's
    /// creationTimestamp minus the run's scheduled time.
    fn observe_skew(&self, created: &ObjectMeta, scheduled: Timestamp) {
        if let (Some(metrics), Some(created_at)) =
            (&self.shared.metrics, &created.creation_timestamp)
        {
            let skew = created_at.0.duration_since(scheduled).as_secs_f64();
            metrics.job_creation_skew.observe(skew);
        }
    }
}

/// A succeeded Job's completion moves `lastSuccessfulTime` forward (a success without a
/// completion time sets it unset, as upstream, when none was known).
fn update_last_successful_time(working: &mut Working, job: &Job) {
    let completion = job
        .status
        .as_ref()
        .and_then(|status| status.completion_time.clone());
    let status = working.status();
    match (&status.last_successful_time, &completion) {
        (None, _) => {
            status.last_successful_time = completion;
            working.changed = true;
        }
        (Some(last), Some(completed)) if completed.0 > last.0 => {
            status.last_successful_time = completion;
            working.changed = true;
        }
        _ => {}
    }
}

/// The Job to create, in the CronJob's namespace.
fn with_namespace(mut job: Job, namespace: &str) -> Job {
    job.metadata.namespace = Some(namespace.to_owned());
    job
}

/// upstream `ref.GetReference` of the created Job: its kind, namespace, name, UID and version.
fn job_reference(created: &ObjectMeta, namespace: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        namespace: Some(
            created
                .namespace
                .clone()
                .unwrap_or_else(|| namespace.to_owned()),
        ),
        name: created.name.clone(),
        uid: created.uid.clone(),
        resource_version: created.resource_version.clone(),
        ..ObjectReference::default()
    }
}
