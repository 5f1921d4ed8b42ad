//! A pod-count quota per namespace, the way ResourceQuota admission refuses pod creation.
//!
//! Controllers meet `FailedCreate` in real clusters mostly through quota; tests of the
//! ReplicaSet controller's slow start and `ReplicaFailure` condition need such refusals on pod
//! creates only, deterministically, while every other write succeeds. A namespace annotated
//! with `sim.kcm-rs.io/pod-quota: "N"` admits a new pod only while fewer than N pods that have
//! not finished (phase other than Succeeded/Failed) exist in it; the refusal is upstream's
//! 403 Forbidden "exceeded quota" Status.

use serde_json::Value;

use crate::resources::{NAMESPACES, PODS, RESOURCES};
use crate::status::ApiError;
use crate::store::State;

/// Namespace annotation holding the number of unfinished pods the namespace may hold.
pub const POD_QUOTA: &str = "sim.kcm-rs.io/pod-quota";

impl State {
    /// Refuses the creation of pod `name` when the namespace's pod quota is used up.
    pub fn admit_pod(&self, namespace: &str, name: &str) -> Result<(), ApiError> {
        let Some(limit) = self.pod_quota(namespace) else {
            return Ok(());
        };
        let used = self.tables[PODS]
            .objects
            .range((namespace.to_string(), String::new())..)
            .take_while(|((pod_namespace, _), _)| pod_namespace == namespace)
            .filter(|(_, stored)| {
                let pod = stored.value();
                let phase = pod
                    .pointer("/status/phase")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                phase != "Succeeded" && phase != "Failed"
            })
            .count();
        if used < limit {
            return Ok(());
        }
        Err(ApiError::forbidden(
            &RESOURCES[PODS],
            name,
            &format!(
                "exceeded quota: sim-pod-quota, requested: pods=1, used: pods={used}, limited: pods={limit}"
            ),
        ))
    }

    fn pod_quota(&self, namespace: &str) -> Option<usize> {
        let stored = self.get(NAMESPACES, &(String::new(), namespace.to_string()))?;
        stored
            .value()
            .pointer("/metadata/annotations")?
            .get(POD_QUOTA)?
            .as_str()?
            .parse()
            .ok()
    }
}
