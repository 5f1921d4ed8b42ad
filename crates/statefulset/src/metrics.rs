//! The StatefulSet controller's own metrics: upstream's gauges (unavailable replicas and the
//! resolved maxUnavailable per set, labelled as upstream) and kcm-rs's count of broken-rollout
//! recoveries.

use prometheus::{IntCounter, IntGaugeVec, Opts, Registry};

/// Labels of both gauges.
const LABELS: [&str; 3] = [
    "statefulset_namespace",
    "statefulset_name",
    "pod_management_policy",
];

/// `statefulset_controller_statefulset_{unavailable_replicas,max_unavailable}` (ALPHA) and
/// `statefulset_controller_broken_rollout_recoveries_total` (kcm-rs only).
#[derive(Clone)]
pub struct StatefulSetMetrics {
    unavailable: IntGaugeVec,
    max_unavailable: IntGaugeVec,
    /// Unlabelled: recoveries are rare, and the event names the set and the pod.
    recoveries: IntCounter,
}

impl StatefulSetMetrics {
    /// Creates the gauges and the counter and registers them into `registry` (once per
    /// process).
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let metrics = Self {
            unavailable: IntGaugeVec::new(
                Opts::new(
                    "statefulset_unavailable_replicas",
                    "[ALPHA] Current number of unavailable pods in a StatefulSet",
                )
                .subsystem("statefulset_controller"),
                &LABELS,
            )?,
            max_unavailable: IntGaugeVec::new(
                Opts::new(
                    "statefulset_max_unavailable",
                    "[ALPHA] Maximum number of unavailable pods allowed during a rolling update",
                )
                .subsystem("statefulset_controller"),
                &LABELS,
            )?,
            recoveries: IntCounter::with_opts(
                Opts::new(
                    "broken_rollout_recoveries_total",
                    "kcm-rs only: pods stuck at an outdated revision of a broken OrderedReady rollout, deleted to be recreated at the update revision",
                )
                .subsystem("statefulset_controller"),
            )?,
        };
        registry.register(Box::new(metrics.unavailable.clone()))?;
        registry.register(Box::new(metrics.max_unavailable.clone()))?;
        registry.register(Box::new(metrics.recoveries.clone()))?;
        Ok(metrics)
    }

    /// Counts one stuck pod deleted by the broken-rollout recovery.
    pub fn observe_recovery(&self) {
        self.recoveries.inc();
    }

    /// Sets both gauges for one set.
    pub fn observe(
        &self,
        namespace: &str,
        name: &str,
        policy: &str,
        unavailable: i64,
        max_unavailable: i64,
    ) {
        let labels = [namespace, name, policy];
        self.unavailable.with_label_values(&labels).set(unavailable);
        self.max_unavailable
            .with_label_values(&labels)
            .set(max_unavailable);
    }

    /// Drops the series of a deleted set (under either policy).
    pub fn forget(&self, namespace: &str, name: &str) {
        for policy in ["OrderedReady", "Parallel"] {
            for gauge in [&self.unavailable, &self.max_unavailable] {
                // Absent series are fine: there is nothing to drop.
                let _ = gauge.remove_label_values(&[namespace, name, policy]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_and_reports_both_gauges_and_the_recovery_counter() {
        let registry = Registry::new();
        let metrics = StatefulSetMetrics::register(&registry).unwrap();
        metrics.observe("default", "web", "OrderedReady", 1, 2);
        metrics.observe_recovery();
        let names: Vec<String> = registry
            .gather()
            .iter()
            .map(|family| family.name().to_owned())
            .collect();
        assert_eq!(
            names,
            vec![
                "statefulset_controller_broken_rollout_recoveries_total",
                "statefulset_controller_statefulset_max_unavailable",
                "statefulset_controller_statefulset_unavailable_replicas"
            ]
        );
        assert_eq!(metrics.recoveries.get(), 1);
        metrics.forget("default", "web");
        assert!(
            registry
                .gather()
                .iter()
                .filter(|family| family
                    .name()
                    .starts_with("statefulset_controller_statefulset_"))
                .all(|family| family.get_metric().is_empty())
        );
        assert!(
            StatefulSetMetrics::register(&registry).is_err(),
            "registered once per registry"
        );
    }
}
