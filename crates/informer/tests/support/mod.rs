//! Helpers shared by the integration tests: a handler that records calls, a pausable TCP
//! proxy to cut the informer off the sim, a recorded pod informer and object builders.

pub mod proxy;
pub mod recorder;

use std::time::Duration;

use informer::{FactoryConfig, SharedInformer, SharedInformerFactory, wait_for_cache_sync};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use recorder::Recorder;
use tokio_util::sync::CancellationToken;

/// Waits until `condition` holds (checked at [`sim::testing::POLL_INTERVAL`]); fails the test
/// after 10 s.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    sim::testing::eventually(what, Duration::from_secs(10), || {
        std::future::ready(condition().then_some(()))
    })
    .await;
}

/// A pod informer of its own factory with a [`Recorder`] registered, started and synced.
pub struct RecordedPods {
    pub pods: SharedInformer<Pod>,
    pub recorder: Recorder,
    /// Stops the factory's informers.
    pub shutdown: CancellationToken,
}

impl RecordedPods {
    pub async fn start(client: Client, config: FactoryConfig) -> Self {
        let factory = SharedInformerFactory::new(client, config);
        let pods = factory.informer::<Pod>();
        let recorder = Recorder::default();
        let registration = pods.add_event_handler(recorder.clone());
        let shutdown = CancellationToken::new();
        factory.start(shutdown.clone());
        assert!(
            wait_for_cache_sync(&shutdown, &[&pods, &registration]).await,
            "the pod informer and its handler sync"
        );
        Self {
            pods,
            recorder,
            shutdown,
        }
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
