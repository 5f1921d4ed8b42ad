//! Semantic revision comparison (upstream v1.35, gate `StatefulSetSemanticRevisionComparison`).
//!
//! The same template can serialize differently across versions: before v1.34 the template's
//! `metadata.creationTimestamp` was written as `null`, from v1.34 on it is omitted. Upstream
//! applies the latest stored revision to the set, decodes it into typed structs, defaults it and
//! re-serializes; if that equals the proposed revision the template did not change. Decoding
//! into Go structs makes a `null` member and an absent one the same value, so here both sides
//! are compared with `null` object members removed. That recognizes revisions written by any
//! upstream version as current, whichever serialization the API server uses. API defaulting of
//! fields that a newer server adds is not reproduced (see the crate README).

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::Value;

use crate::Error;
use crate::apply::apply_revision;
use crate::go_json;
use crate::statefulset::statefulset_revision_data;

/// Whether applying `latest` to the raw `set` and re-serializing gives the same data as
/// `proposal` (built from the same set), up to Go's null/absent equivalence. Any error means
/// "not the same", as upstream: the caller then creates a new revision.
pub fn latest_revision_is_semantically_current(
    set: &Value,
    latest: &ControllerRevision,
    proposal: &ControllerRevision,
) -> bool {
    match compare(set, latest, proposal) {
        Ok(same) => same,
        Err(error) => {
            tracing::debug!(
                revision = latest.metadata.name.as_deref().unwrap_or_default(),
                %error,
                "semantic revision comparison failed"
            );
            false
        }
    }
}

fn compare(
    set: &Value,
    latest: &ControllerRevision,
    proposal: &ControllerRevision,
) -> Result<bool, Error> {
    let applied = apply_revision(set, latest)?;
    let template = applied
        .pointer("/spec/template")
        .ok_or_else(|| Error::NotAnObject {
            path: "spec.template".to_owned(),
        })?;
    let rebuilt = statefulset_revision_data(&without_null_members(template))?;
    let proposed = proposal
        .data
        .as_ref()
        .ok_or_else(|| Error::MissingData(proposal.metadata.name.clone().unwrap_or_default()))?;
    Ok(go_json::encode(&rebuilt)? == go_json::encode(&without_null_members(&proposed.0))?)
}

/// The value with every object member whose value is `null` removed, at every level (array
/// elements are kept: a `null` element is not an absent one).
fn without_null_members(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, member)| !member.is_null())
                .map(|(key, member)| (key.clone(), without_null_members(member)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_null_members).collect()),
        other => other.clone(),
    }
}
