//! The Job informer's handler (upstream `addJob`, `updateJob`, `enqueue`): a Job is queued
//! when it is this controller's (finished, with a TTL) and not already being deleted.
//!
//! There is no delete handler, as upstream has none: a queued key whose Job is gone ends at
//! the sync's first read.

use std::sync::Arc;

use informer::{DeletedObject, EventHandler, object_key};
use k8s_openapi::api::batch::v1::Job;
use workqueue::RateLimitingQueue;

use crate::decide::needs_cleanup;

/// Queues the finished Jobs with a TTL.
pub(crate) struct JobHandler {
    queue: RateLimitingQueue<String>,
}

impl JobHandler {
    /// Queues on `queue`.
    pub(crate) fn new(queue: &RateLimitingQueue<String>) -> Self {
        Self {
            queue: queue.clone(),
        }
    }

    /// upstream `addJob` / `updateJob`: the Job as it is now decides.
    fn enqueue_if_ours(&self, job: &Job) {
        if job.metadata.deletion_timestamp.is_none() && needs_cleanup(job) {
            let key = object_key(job);
            tracing::trace!(key, "add job to cleanup");
            self.queue.add(key);
        }
    }
}

impl EventHandler<Job> for JobHandler {
    fn on_add(&self, job: &Arc<Job>, _is_in_initial_list: bool) {
        self.enqueue_if_ours(job);
    }

    fn on_update(&self, _old: &Arc<Job>, new: &Arc<Job>) {
        self.enqueue_if_ours(new);
    }

    fn on_delete(&self, _job: &DeletedObject<Job>) {}
}
