//! The Job of one run (upstream `getJobFromTemplate2`): the CronJob's job template with the
//! run's name, the scheduled-timestamp annotation and the CronJob as its controller.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::batch::v1::{CronJob, Job},
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
    jiff::Timestamp,
};
use kube::ResourceExt;

use crate::decide::{
    schedule::TimeZoneError,
    times::{SCHEDULED_TIMESTAMP_ANNOTATION, scheduled_timestamp_annotation},
};

/// The Job named `name` for the run of `cronjob` scheduled at `scheduled`: the template's
/// labels and annotations (plus the scheduled time, in the CronJob's time zone or UTC), its
/// spec, and a controller reference that blocks the CronJob's deletion until it is gone.
pub fn job_from_template(
    cronjob: &CronJob,
    scheduled: Timestamp,
    name: &str,
) -> Result<Job, TimeZoneError> {
    let template = cronjob.spec.job_template.clone();
    let template_meta = template.metadata.unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = template_meta.annotations.unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(),
        scheduled_timestamp_annotation(cronjob, scheduled)?,
    );
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(template_meta.labels.unwrap_or_default()),
            annotations: Some(annotations),
            owner_references: Some(vec![OwnerReference {
                api_version: "batch/v1".into(),
                kind: "CronJob".into(),
                name: cronjob.name_any(),
                uid: cronjob.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    })
}
