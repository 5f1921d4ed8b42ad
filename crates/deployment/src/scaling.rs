//! Scaling primitives: what one scale step of a ReplicaSet is, the body to PUT
//! for it, and its event. Planners return [`ScaleAction`]s; the controller applies them in
//! order with [`scaled_replica_set`] and records [`ScaleAction::event`] after each success.

use std::fmt;

use informer::{CachedDeployment, CachedReplicaSet};

use crate::annotations::{replicas_annotations_need_update, set_replicas_annotations};
use crate::events::{self, Event};
use crate::replica_set::{deployment_replicas, rs_name, rs_spec_replicas};
use crate::rollout_limits::max_total_replicas;

/// The `<op>` word of a scaling event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalingOperation {
    /// "up".
    Up,
    /// "down".
    Down,
    /// "" (proportional scaling with nothing to add).
    None,
}

impl fmt::Display for ScalingOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScalingOperation::Up => "up",
            ScalingOperation::Down => "down",
            ScalingOperation::None => "",
        })
    }
}

/// One scaleReplicaSet call: PUT the ReplicaSet with `to` replicas and refreshed
/// desired/max annotations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleAction {
    /// ReplicaSet name (namespace is the Deployment's).
    pub replica_set: String,
    /// `spec.replicas` before.
    pub from: i32,
    /// `spec.replicas` after.
    pub to: i32,
    /// Word used in the event.
    pub operation: ScalingOperation,
}

impl ScaleAction {
    /// A resize of `replica_set` from `from` to `to`: "down" when shrinking, else "up".
    pub fn resize(replica_set: &str, from: i32, to: i32) -> Self {
        let operation = if from > to {
            ScalingOperation::Down
        } else {
            ScalingOperation::Up
        };
        ScaleAction {
            replica_set: replica_set.to_owned(),
            from,
            to,
            operation,
        }
    }

    /// Why the ReplicaSet is written, for the write layer.
    pub fn reason(&self) -> &'static str {
        match self.operation {
            _ if self.from == self.to => "refresh replicas annotations",
            ScalingOperation::Down => "scale down",
            ScalingOperation::Up | ScalingOperation::None => "scale up",
        }
    }

    /// The ScalingReplicaSet event to record after the PUT succeeded (none when only the
    /// annotations were refreshed).
    pub fn event(&self) -> Option<Event> {
        (self.from != self.to)
            .then(|| events::scaled(self.operation, &self.replica_set, self.to, self.from))
    }
}

/// scaleReplicaSetAndRecordEvent: nothing when the size is already `to`; otherwise a
/// [`ScaleAction::resize`].
pub fn scale_and_record(rs: &CachedReplicaSet, to: i32) -> Option<ScaleAction> {
    let from = rs_spec_replicas(rs);
    (from != to).then(|| ScaleAction::resize(rs_name(rs), from, to))
}

/// The desired/max annotation values a scale writes: `spec.replicas` and
/// `spec.replicas + MaxSurge`.
pub fn replicas_annotation_values(d: &CachedDeployment) -> (i32, i32) {
    (deployment_replicas(d), max_total_replicas(d))
}

/// scaleReplicaSet's test: a PUT is needed when the size or either annotation differs.
pub fn scale_needs_update(rs: &CachedReplicaSet, to: i32, d: &CachedDeployment) -> bool {
    let (desired, max) = replicas_annotation_values(d);
    rs_spec_replicas(rs) != to || replicas_annotations_need_update(rs, desired, max)
}

/// The ReplicaSet to PUT for a scale to `to`: replicas set and annotations refreshed.
pub fn scaled_replica_set(
    rs: &CachedReplicaSet,
    to: i32,
    d: &CachedDeployment,
) -> CachedReplicaSet {
    let mut copy = with_spec_replicas(rs, to);
    let (desired, max) = replicas_annotation_values(d);
    set_replicas_annotations(&mut copy, desired, max);
    copy
}

/// The ReplicaSet as upstream sees it after a successful scale (used by planners that keep
/// going on updated objects).
pub(crate) fn with_spec_replicas(rs: &CachedReplicaSet, to: i32) -> CachedReplicaSet {
    let mut copy = rs.clone();
    copy.spec.get_or_insert_with(Default::default).replicas = Some(to);
    copy
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::{DESIRED_REPLICAS_ANNOTATION, MAX_REPLICAS_ANNOTATION};
    use crate::replica_set::test_support::{annotate, rolling, rs};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn scale_and_record_table() {
        let r = rs("web-a", 0, 3, 3);
        assert_eq!(scale_and_record(&r, 3), None);
        let up = scale_and_record(&r, 5).expect("resize");
        assert_eq!((up.from, up.to, up.operation), (3, 5, ScalingOperation::Up));
        let down = scale_and_record(&r, 0).expect("resize");
        assert_eq!(down.operation, ScalingOperation::Down);
        assert_eq!(
            down.event().map(|e| e.message),
            Some("Scaled down replica set web-a from 3 to 0".to_owned())
        );
    }

    #[test]
    fn scale_body_refreshes_annotations() {
        let d = rolling(10, IntOrString::Int(2), IntOrString::Int(0));
        let r = rs("web-a", 0, 3, 3);
        assert!(scale_needs_update(&r, 3, &d));
        let body = scaled_replica_set(&r, 4, &d);
        assert_eq!(rs_spec_replicas(&body), 4);
        let annotations = body.metadata.annotations.to_map();
        assert_eq!(
            annotations
                .get(DESIRED_REPLICAS_ANNOTATION)
                .map(String::as_str),
            Some("10")
        );
        assert_eq!(
            annotations.get(MAX_REPLICAS_ANNOTATION).map(String::as_str),
            Some("12")
        );
        let current = annotate(
            annotate(r, DESIRED_REPLICAS_ANNOTATION, "10"),
            MAX_REPLICAS_ANNOTATION,
            "12",
        );
        assert!(!scale_needs_update(&current, 3, &d));
        assert!(scale_needs_update(&current, 4, &d));
        let annotation_only = ScaleAction {
            replica_set: "x".to_owned(),
            from: 3,
            to: 3,
            operation: ScalingOperation::None,
        };
        assert_eq!(annotation_only.event(), None);
    }
}
