//! Legacy rollback through the `deprecated.deployment.rollback.to` annotation:
//! which template and annotations the Deployment gets back, and which events to record.

use std::collections::BTreeMap;

use informer::{CachedDeployment, CachedReplicaSet, CompactLabels, CompactPodTemplate};
use k8s_openapi::api::core::v1::PodTemplateSpec;

use crate::annotations::{rollback_to, skip_copy_annotation};
use crate::constants::{POD_TEMPLATE_HASH_LABEL, ROLLBACK_TO_ANNOTATION};
use crate::error::Error;
use crate::events::{self, Event};
use crate::replica_set::deployment_name;
use crate::revision::{last_revision, revision};
use crate::template::{deployment_template, equal_ignore_hash, replica_set_template};

/// What a rollback sync writes.
///
/// Contract for the caller: record `warning` (if any), PUT `deployment` (full update), and
/// record `on_success` only if that PUT succeeded; the PUT's error is the sync's error.
#[derive(Debug, Clone, PartialEq)]
pub struct RollbackPlan {
    /// The Deployment to PUT: rollback annotation removed and, for a performed rollback, the
    /// template and annotations of the target ReplicaSet.
    pub deployment: CachedDeployment,
    /// Warning recorded before the PUT (revision not found, template unchanged).
    pub warning: Option<Event>,
    /// `DeploymentRollback` event recorded after a successful PUT.
    pub on_success: Option<Event>,
}

/// rollback, after getAllReplicaSetsAndSyncRevision *with* create. `None` when the Deployment carries no
/// parseable rollback request.
pub fn plan_rollback(
    d: &CachedDeployment,
    new_rs: Option<&CachedReplicaSet>,
    old: &[&CachedReplicaSet],
) -> Result<Option<RollbackPlan>, Error> {
    let Some(requested) = rollback_to(d) else {
        return Ok(None);
    };
    let all: Vec<&CachedReplicaSet> = old.iter().copied().chain(new_rs).collect();
    let target = if requested == 0 {
        last_revision(all.iter().copied())
    } else {
        requested
    };
    let mut updated = d.clone();
    clear_rollback_to(&mut updated);
    if target == 0 {
        return Ok(Some(RollbackPlan {
            deployment: updated,
            warning: Some(events::rollback_last_revision_not_found()),
            on_success: None,
        }));
    }
    let Some(rs) = all
        .iter()
        .copied()
        .find(|rs| revision(&rs.metadata).is_ok_and(|value| value == target))
    else {
        return Ok(Some(RollbackPlan {
            deployment: updated,
            warning: Some(events::rollback_revision_not_found()),
            on_success: None,
        }));
    };
    let rs_template = replica_set_template(rs);
    if equal_ignore_hash(&deployment_template(d), &rs_template) {
        return Ok(Some(RollbackPlan {
            deployment: updated,
            warning: Some(events::rollback_template_unchanged(deployment_name(d))),
            on_success: None,
        }));
    }
    set_from_replica_set_template(&mut updated, rs_template)?;
    set_annotations_to(&mut updated, rs);
    clear_rollback_to(&mut updated);
    Ok(Some(RollbackPlan {
        deployment: updated,
        warning: None,
        on_success: Some(events::rollback_done(deployment_name(d), target)),
    }))
}

fn clear_rollback_to(d: &mut CachedDeployment) {
    if d.metadata.annotations.contains_key(ROLLBACK_TO_ANNOTATION) {
        d.metadata.annotations.edit(|annotations| {
            annotations.remove(ROLLBACK_TO_ANNOTATION);
        });
    }
}

/// SetFromReplicaSetTemplate: the ReplicaSet's template metadata and spec, without the
/// pod-template-hash label.
fn set_from_replica_set_template(
    d: &mut CachedDeployment,
    mut template: PodTemplateSpec,
) -> Result<(), Error> {
    if let Some(labels) = template
        .metadata
        .as_mut()
        .and_then(|metadata| metadata.labels.as_mut())
    {
        labels.remove(POD_TEMPLATE_HASH_LABEL);
    }
    if let Some(metadata) = template.metadata.as_mut()
        && metadata.labels.as_ref().is_some_and(BTreeMap::is_empty)
    {
        metadata.labels = None;
    }
    d.spec.get_or_insert_with(Default::default).template = CompactPodTemplate::encode(&template)?;
    Ok(())
}

/// SetDeploymentAnnotationsTo: the Deployment's own skip-list annotations plus the
/// ReplicaSet's other annotations.
fn set_annotations_to(d: &mut CachedDeployment, rs: &CachedReplicaSet) {
    let mut annotations: BTreeMap<&str, &str> = d
        .metadata
        .annotations
        .iter()
        .filter(|(key, _)| skip_copy_annotation(key))
        .collect();
    annotations.extend(
        rs.metadata
            .annotations
            .iter()
            .filter(|(key, _)| !skip_copy_annotation(key)),
    );
    d.metadata.annotations = CompactLabels::from_entries(annotations);
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    use super::*;
    use crate::constants::{POD_TEMPLATE_HASH_LABEL, REVISION_ANNOTATION};
    use crate::replica_set::test_support::{annotate, compact, rolling, rs, template};

    fn request(to: &str) -> CachedDeployment {
        let mut d = rolling(3, IntOrString::Int(1), IntOrString::Int(0));
        d.metadata.annotations = BTreeMap::from([
            (ROLLBACK_TO_ANNOTATION.to_owned(), to.to_owned()),
            (REVISION_ANNOTATION.to_owned(), "3".to_owned()),
            ("team".to_owned(), "current".to_owned()),
        ])
        .into();
        d
    }

    fn revision_rs(name: &str, rev: &str, image: &str) -> CachedReplicaSet {
        let mut r = annotate(
            annotate(rs(name, 0, 0, 0), REVISION_ANNOTATION, rev),
            "team",
            "old",
        );
        let mut t = template(image);
        if let Some(labels) = t.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), "h".to_owned());
        }
        if let Some(spec) = r.spec.as_mut() {
            spec.template = Some(compact(&t));
        }
        r
    }

    fn annotations(d: &CachedDeployment) -> BTreeMap<String, String> {
        d.metadata.annotations.to_map()
    }

    #[test]
    fn rollback_to_previous_revision_restores_template() {
        let d = request("0");
        let v1 = revision_rs("web-1", "1", "nginx:1");
        let v2 = revision_rs("web-2", "2", "nginx:1.5");
        let v3 = revision_rs("web-3", "3", "nginx:2");
        let plan = plan_rollback(&d, Some(&v3), &[&v1, &v2])
            .expect("encodes")
            .expect("requested");
        assert_eq!(plan.warning, None);
        assert_eq!(
            plan.on_success.map(|e| e.message),
            Some("Rolled back deployment \"web\" to revision 2".to_owned())
        );
        assert_eq!(deployment_template(&plan.deployment), template("nginx:1.5"));
        let got = annotations(&plan.deployment);
        assert_eq!(got.get("team").map(String::as_str), Some("old"));
        assert_eq!(got.get(REVISION_ANNOTATION).map(String::as_str), Some("3"));
        assert!(!got.contains_key(ROLLBACK_TO_ANNOTATION));
    }

    #[test]
    fn rollback_warnings_table() {
        let current = revision_rs("web-3", "3", "nginx:2");
        let v1 = revision_rs("web-1", "1", "nginx:1");
        let cases = [
            (request("0"), vec![], "Unable to find last revision."),
            (
                request("7"),
                vec![&v1],
                "Unable to find the revision to rollback to.",
            ),
            (
                request("3"),
                vec![&v1],
                "The rollback revision contains the same template as current deployment \"web\"",
            ),
        ];
        for (d, old, message) in cases {
            let new_rs = if old.is_empty() { None } else { Some(&current) };
            let plan = plan_rollback(&d, new_rs, &old)
                .expect("encodes")
                .expect("requested");
            assert_eq!(plan.warning.map(|e| e.message).as_deref(), Some(message));
            assert_eq!(plan.on_success, None);
            assert_eq!(
                deployment_template(&plan.deployment),
                deployment_template(&d)
            );
            assert!(!annotations(&plan.deployment).contains_key(ROLLBACK_TO_ANNOTATION));
            assert_eq!(
                annotations(&plan.deployment)
                    .get("team")
                    .map(String::as_str),
                Some("current")
            );
        }
        assert_eq!(
            plan_rollback(
                &rolling(1, IntOrString::Int(1), IntOrString::Int(0)),
                None,
                &[]
            ),
            Ok(None)
        );
    }
}
