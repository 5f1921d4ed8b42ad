//! The Job controller's event handlers on their own, for the crate's benchmarks: the three
//! handlers the controller registers, over a Job cache the caller fills, with the controller's
//! queues and expectations. Handlers write nothing, so the client is never called.

use std::sync::Arc;

use controller_toolkit::runtime::{BuildError, ControllerRuntime, RuntimeOptions};
use informer::{CachedPod, EventHandler, Lister, Store};
use k8s_openapi::api::batch::v1::Job;
use kube::Client;

use crate::{
    ORPHAN_QUEUE_NAME,
    context::{JobOptions, Shared},
    controller::IDENTITY,
    handlers::{Handlers, JOBS_BY_SELECTED_UID, jobs_by_selected_uid},
};

/// The handlers of one controller over the Jobs of `jobs`.
pub struct EventHandlers {
    handlers: Handlers,
    shared: Arc<Shared>,
}

impl EventHandlers {
    /// The handlers over the Jobs of `jobs` (indexed as the controller indexes them), with a
    /// client that is never called. Must be called inside a tokio runtime.
    pub fn new(client: &Client, jobs: Arc<Store<Job>>) -> Result<Self, BuildError> {
        jobs.add_indexer(JOBS_BY_SELECTED_UID, Arc::new(jobs_by_selected_uid));
        let mut runtime = ControllerRuntime::new(client, IDENTITY, &RuntimeOptions::default())?;
        let orphan_queue = runtime.add_queue(ORPHAN_QUEUE_NAME)?;
        let shared = Arc::new(Shared::new(&runtime, orphan_queue, &JobOptions::default()));
        Ok(Self {
            handlers: Handlers::new(Lister::from_store(jobs), shared.clone()),
            shared,
        })
    }

    /// A pod added: the inline observer, then the queued handler.
    pub fn pod_added(&self, pod: &Arc<CachedPod>) {
        self.handlers.observer.on_add(pod, false);
        self.handlers.pods.on_add(pod, false);
    }

    /// A pod updated: the inline observer, then the queued handler.
    pub fn pod_updated(&self, old: &Arc<CachedPod>, new: &Arc<CachedPod>) {
        self.handlers.observer.on_update(old, new);
        self.handlers.pods.on_update(old, new);
    }

    /// A Job updated.
    pub fn job_updated(&self, old: &Arc<Job>, new: &Arc<Job>) {
        self.handlers.jobs.on_update(old, new);
    }

    /// The keys waiting on the Job queue and on the orphan queue (delayed adds not yet due
    /// are not counted).
    pub fn queued(&self) -> (usize, usize) {
        (self.shared.queue.len(), self.shared.orphan_queue.len())
    }
}
