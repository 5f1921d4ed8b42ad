//! What a controller crate tells the manager about itself: one [`ControllerDescriptor`].
//!
//! Why: the manager, its flags, `/configz`, shadow mode and the RBAC manifest each need to know
//! something of every controller (its names, its workers flag, the kinds it writes, the API
//! verbs it uses). Written into each of those places by hand, a fourth controller meant editing
//! about thirty files, and three of them failed silently when forgotten. Here the controller
//! crate states it once, next to the code it describes, and every consumer reads the
//! descriptor: the manager imports no controller type but the descriptor.
//!
//! Upstream's counterpart is `ControllerDescriptor` in `cmd/kube-controller-manager/app`
//! (name, aliases, init function) plus the controller's slice of the component configuration
//! and its bootstrap RBAC role; kcm-rs adds what shadow mode compares.

use std::{collections::BTreeMap, time::Duration};

use futures::future::BoxFuture;
use informer::SharedInformerFactory;
use tokio_util::sync::CancellationToken;

use crate::{
    runtime::{Controller, ControllerSync, RuntimeOptions},
    shadow_view::ComparedKind,
};

/// Everything the manager needs to know of one controller.
#[derive(Debug, Clone, Copy)]
pub struct ControllerDescriptor {
    /// Canonical name, as upstream (`replicaset-controller`): `--controllers`, the event
    /// source, the client's user agent, the health check and the log field.
    pub name: &'static str,
    /// The name upstream builds its API client under (`ClientBuilder.ClientOrDie`): the last
    /// part of its user agent and, with `--use-service-account-credentials`, its service
    /// account. The canonical name, except for the DaemonSet controller's `daemon-set-controller`.
    pub client_name: &'static str,
    /// Other names `--controllers` accepts (upstream's short names, e.g. `replicaset`).
    pub aliases: &'static [&'static str],
    /// Whether `*` leaves the controller off (only naming it enables it).
    pub disabled_by_default: bool,
    /// Its `--concurrent-<name>-syncs` flag.
    pub workers: WorkersFlag,
    /// Its work queue's name (the `name` label of the `workqueue_*` metrics).
    pub queue: &'static str,
    /// The prefix of its own metrics (`replicaset_controller` for
    /// `replicaset_controller_stale_sync_skips_total`).
    pub metrics_subsystem: &'static str,
    /// Flags only this controller reads (kcm-rs-only ones are named so in their help).
    pub settings: &'static [Setting],
    /// Feature gates that change what this controller does.
    pub feature_gates: &'static [FeatureGate],
    /// The kinds it writes (or reads to decide), as shadow mode compares them.
    pub compared_kinds: &'static [ComparedKind],
    /// The API access it needs (the manager's ClusterRole is generated from these).
    pub rbac: &'static [PolicyRule],
    /// Builds it on the manager's shared informers; starts nothing.
    pub init: InitFn,
}

/// A controller's `--concurrent-<name>-syncs` flag and where upstream's component
/// configuration (`/configz`) holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkersFlag {
    /// The flag, without dashes (`concurrent-replicaset-syncs`).
    pub flag: &'static str,
    /// Upstream's default.
    pub default: usize,
    /// The flag's help text.
    pub help: &'static str,
    /// The controller's section of `KubeControllerManagerConfiguration`
    /// (`ReplicaSetController`).
    pub config_section: &'static str,
    /// The field in that section (`ConcurrentRSSyncs`).
    pub config_field: &'static str,
}

/// A flag only one controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The flag, without dashes.
    pub flag: &'static str,
    /// What it takes.
    pub kind: SettingKind,
    /// Its default, as it would be written on the command line.
    pub default: &'static str,
    /// The flag's help text.
    pub help: &'static str,
}

/// The kinds of values a [`Setting`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// A Go duration (`1s`, `1m30s`).
    Duration,
    /// A boolean (`--flag`, `--flag=false`).
    Bool,
}

/// A parsed [`Setting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingValue {
    /// Of a [`SettingKind::Duration`] setting.
    Duration(Duration),
    /// Of a [`SettingKind::Bool`] setting.
    Bool(bool),
}

/// A feature gate a controller follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureGate {
    /// The gate's name (`MaxUnavailableStatefulSet`).
    pub name: &'static str,
    /// Its default at the upstream version kcm-rs follows.
    pub default: bool,
    /// Whether kcm-rs implements only the default: setting it the other way is refused.
    pub fixed: bool,
}

/// One rule of a ClusterRole, as the controller needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyRule {
    /// API group (`""` for core).
    pub api_group: &'static str,
    /// Resources (with subresources as `deployments/status`).
    pub resources: &'static [&'static str],
    /// Verbs.
    pub verbs: &'static [&'static str],
}

impl PolicyRule {
    /// A rule on core (`""` group) resources.
    pub const fn core(resources: &'static [&'static str], verbs: &'static [&'static str]) -> Self {
        Self {
            api_group: "",
            resources,
            verbs,
        }
    }

    /// A rule on `apps` resources.
    pub const fn apps(resources: &'static [&'static str], verbs: &'static [&'static str]) -> Self {
        Self {
            api_group: "apps",
            resources,
            verbs,
        }
    }

    /// A rule on `batch` resources.
    pub const fn batch(resources: &'static [&'static str], verbs: &'static [&'static str]) -> Self {
        Self {
            api_group: "batch",
            resources,
            verbs,
        }
    }
}

/// Events, as every controller records them (core/v1 Events, aggregated by patch).
pub const EVENTS_RULE: PolicyRule = PolicyRule::core(&["events"], &["create", "patch", "update"]);

/// ControllerRevisions, as the controllers that keep their history in them use them.
pub const CONTROLLER_REVISIONS_RULE: PolicyRule = PolicyRule::apps(
    &["controllerrevisions"],
    &[
        "get", "list", "watch", "create", "update", "patch", "delete",
    ],
);

/// Builds a controller: `Ok(None)` when it chose not to run (logged and skipped, as upstream).
pub type InitFn = fn(InitContext<'_>) -> Result<Option<Box<dyn Runnable>>, InitError>;

/// What an init function receives from the manager.
pub struct InitContext<'a> {
    /// The controller's own client (its user agent, its client-side rate limit).
    pub client: kube::Client,
    /// The process-wide shared informer factory; informers requested here are started by the
    /// manager once every controller is built.
    pub informers: &'a SharedInformerFactory,
    /// Metrics, the stale-read counter and, in shadow mode, the recording write executor.
    pub runtime: RuntimeOptions,
    /// The registry `/metrics` serves, for the controller's own metric families.
    pub metrics: &'a prometheus::Registry,
    /// The values of the controller's settings and feature gates.
    pub settings: &'a ControllerSettings,
}

/// The values of one controller's [`Setting`]s and [`FeatureGate`]s, as the command line set
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerSettings {
    values: BTreeMap<&'static str, SettingValue>,
    gates: BTreeMap<&'static str, bool>,
}

impl ControllerSettings {
    /// Settings with these values and gates.
    pub fn new(
        values: BTreeMap<&'static str, SettingValue>,
        gates: BTreeMap<&'static str, bool>,
    ) -> Self {
        Self { values, gates }
    }

    /// The duration `flag` was set to.
    pub fn duration(&self, flag: &str) -> Result<Duration, InitError> {
        match self.values.get(flag) {
            Some(SettingValue::Duration(value)) => Ok(*value),
            _ => Err(InitError::Setting(flag.to_owned())),
        }
    }

    /// The boolean `flag` was set to.
    pub fn bool(&self, flag: &str) -> Result<bool, InitError> {
        match self.values.get(flag) {
            Some(SettingValue::Bool(value)) => Ok(*value),
            _ => Err(InitError::Setting(flag.to_owned())),
        }
    }

    /// Whether the feature gate `name` is on.
    pub fn gate(&self, name: &str) -> Result<bool, InitError> {
        self.gates
            .get(name)
            .copied()
            .ok_or_else(|| InitError::Setting(name.to_owned()))
    }
}

/// Why a controller could not be built; aborts the manager's start-up, as upstream does.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// A setting or gate the init function reads is not in its descriptor.
    #[error("{0} is not a setting of this controller's descriptor")]
    Setting(String),
    /// A metric family could not be registered.
    #[error("registering metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// The controller could not be built.
    #[error(transparent)]
    Build(#[from] crate::runtime::BuildError),
}

/// A built controller, run by the manager once the informers have started.
pub trait Runnable: Send {
    /// Waits for the caches, then runs `workers` workers until `shutdown`; returns when every
    /// in-flight sync has finished.
    fn run(self: Box<Self>, workers: usize, shutdown: CancellationToken) -> BoxFuture<'static, ()>;
}

impl<S: ControllerSync> Runnable for Controller<S> {
    fn run(self: Box<Self>, workers: usize, shutdown: CancellationToken) -> BoxFuture<'static, ()> {
        Box::pin(Controller::run(*self, workers, shutdown))
    }
}
