//! Helpers shared by the integration tests: a handler that records calls, a pausable TCP
//! proxy to cut the informer off the sim, and object builders.

pub mod proxy;
pub mod recorder;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

/// Polls `condition` every 10 ms; fails the test after 10 s.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A minimal pod in `default` with the given name and labels.
pub fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "namespace": "default", "labels": labels },
        "spec": { "containers": [{ "name": "c", "image": "busybox" }] }
    }))
    .expect("valid pod")
}

/// The sim without its kubelet, so pods change only when the test changes them.
pub fn quiet_sim_config() -> sim::SimConfig {
    sim::SimConfig {
        kubelet: sim::KubeletConfig {
            enabled: false,
            ..sim::KubeletConfig::default()
        },
        ..sim::SimConfig::default()
    }
}
