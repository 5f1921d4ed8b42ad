//! The harness every controller's integration tests share: a sim cluster started in-process,
//! controller tasks running against it through real clients, one polling helper and the few
//! object helpers more than one crate's tests need.
//!
//! Why it lives in the sim: each controller crate had grown its own copy of the same harness
//! (with `eventually` polling at three different rates), and the sim is the one crate every
//! test already depends on. The sim depends on no crate of ours, so the harness knows nothing
//! of informers or controllers: a test builds its controller in a closure handed to
//! [`TestCluster::spawn_controller`], which supplies a client with the controller's user agent
//! and the shutdown token, and keeps the task for [`TestCluster::stop`].
//!
//! For tests only: the helpers panic with a message saying what failed, as a test should.

mod cluster;
mod kubectl;
mod objects;

use std::future::Future;
use std::time::Duration;

pub use cluster::TestCluster;
pub use kubectl::{KUBECTL, Kubectl};
pub use objects::{
    annotation, blocking_controller_kind, controller_uid, is_active, is_ready, is_serving, workload,
};

use crate::{FaultConfig, KubeletConfig, SimConfig};

/// Makes a crate's test harness (a struct with a `cluster: TestCluster` field and the crate's
/// controllers) a [`TestCluster`]: `Deref` to it, so the cluster's helpers apply, and `stop`,
/// which stops the controllers and the sim.
///
/// With `start: <without> then <start_controllers>`, also the two ways every test begins:
/// `start()` and `start_with(config)` build the harness with `Self::<without>(config)` and
/// then call `<start_controllers>`.
#[macro_export]
macro_rules! cluster_harness {
    ($harness:ty, start: $without:ident then $start_controllers:ident) => {
        $crate::cluster_harness!($harness);

        impl $harness {
            /// A sim cluster with the default configuration and the crate's controllers.
            pub async fn start() -> Self {
                Self::start_with($crate::SimConfig::default()).await
            }

            /// A sim cluster started with `config` and the crate's controllers.
            pub async fn start_with(config: $crate::SimConfig) -> Self {
                let mut harness = Self::$without(config).await;
                harness.$start_controllers();
                harness
            }
        }
    };
    ($harness:ty) => {
        impl std::ops::Deref for $harness {
            type Target = $crate::testing::TestCluster;

            fn deref(&self) -> &Self::Target {
                &self.cluster
            }
        }

        impl $harness {
            /// Stops the controllers, then the sim.
            pub async fn stop(self) {
                self.cluster.stop().await;
            }
        }
    };
}

/// The namespace the harness's helpers work in (one of the sim's initial namespaces).
pub const NAMESPACE: &str = "default";

/// How often [`eventually`] checks. 50 ms keeps the wait after a change small next to what a
/// controller takes to react, while checks that list a whole namespace (the chaos tests list
/// hundreds of objects) leave the controllers most of two shared cores.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// Runs `check` every [`POLL_INTERVAL`] until it returns `Some`, and returns that value.
///
/// # Panics
/// When `check` has not returned `Some` after `timeout`, naming `what` it waited for.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// The faults of the chaos tests: 5% of writes fail with a 500 and 5% with a 409 Conflict,
/// and every watch is cut `watch_disconnect_every`, drawn from `seed`.
pub fn chaos_faults(seed: u64, watch_disconnect_every: Duration) -> FaultConfig {
    FaultConfig {
        seed,
        write_500: 0.05,
        write_409: 0.05,
        watch_disconnect_every: Some(watch_disconnect_every),
        ..FaultConfig::default()
    }
}

/// Retries a write of the test itself, which sees the same injected faults as the
/// controllers, every 10 ms until it succeeds or the object already exists.
///
/// # Panics
/// When the write still fails after 30 s.
pub async fn retry_write<T, F, Fut>(mut write: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match write().await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => return,
            Err(e) => assert!(
                tokio::time::Instant::now() < deadline,
                "a test write kept failing: {e}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The sim without its kubelet, so pods change only when the test changes them.
pub fn quiet_config() -> SimConfig {
    SimConfig {
        kubelet: KubeletConfig {
            enabled: false,
            ..KubeletConfig::default()
        },
        ..SimConfig::default()
    }
}
