//! Configuration of a simulated cluster: kubelet timings, fault injection, the watch window and
//! the garbage collector's delay.
//!
//! Kept separate from the server so tests and the `kube-sim` binary can build a configuration
//! without touching any server internals.

use std::time::Duration;

/// Everything that shapes how a [`crate::SimCluster`] behaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The simulated kubelet: whether pods become Running/Ready and how fast.
    pub kubelet: KubeletConfig,
    /// Injected failures, for chaos tests of controllers.
    pub faults: FaultConfig,
    /// Events retained per resource for watch resumption; a watch from an older
    /// resourceVersion gets a 410 Expired error, as from a real API server.
    pub watch_window: usize,
    /// How long the garbage collector takes to delete the dependents of a removed owner
    /// (background propagation), per level of ownership. Zero deletes them within the owner's
    /// delete request; upstream's collector works from its own watch, so its clients see the
    /// owner go before its dependents, which a delay reproduces.
    pub gc_delay: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            kubelet: KubeletConfig::default(),
            faults: FaultConfig::default(),
            watch_window: 10_000,
            gc_delay: Duration::ZERO,
        }
    }
}

/// Timings of the simulated kubelet, which plays every node of the cluster.
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// When false, pods stay unscheduled and Pending (and are deleted at once, as upstream
    /// deletes unscheduled pods without grace).
    pub enabled: bool,
    /// Time from a pod starting to it becoming Ready (unless an annotation says otherwise).
    pub ready_delay: Duration,
    /// Time a gracefully deleted pod lingers (with a deletionTimestamp) before it is gone.
    pub deletion_delay: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ready_delay: Duration::ZERO,
            deletion_delay: Duration::ZERO,
        }
    }
}

/// Seeded, reproducible fault injection. The default injects nothing.
#[derive(Debug, Clone, Default)]
pub struct FaultConfig {
    /// Seed of the random generator that decides which writes fail.
    pub seed: u64,
    /// Probability that a write answers 500 InternalError.
    pub write_500: f64,
    /// Probability that a write answers 429 TooManyRequests (with `Retry-After: 1`).
    pub write_429: f64,
    /// Probability that a write answers 409 Conflict.
    pub write_409: f64,
    /// Latency added to every request.
    pub latency: Duration,
    /// Close every watch stream after this long (the client must resume it).
    pub watch_disconnect_every: Option<Duration>,
}
