//! What the manager hands each controller's init function: the shared informer factory, the
//! controller's own client, the metrics registry, its flags and gates and where its writes go:
//! in shadow mode to the shadow, and with a warm standby through the record a release hands
//! over.

use std::sync::Arc;

use controller_toolkit::{
    descriptor::{ControllerDescriptor, InitContext, Runnable},
    runtime::RuntimeOptions,
    stale_reads::StaleSyncSkips,
    write_watermarks::WriteWatermarks,
    writes::ApiWriteExecutor,
};
use informer::SharedInformerFactory;
use prometheus::Registry;
use shadow::Shadow;
use workqueue::ControllerMetrics;

use crate::{
    feature_gates::EnabledGates, options::Options, registry::InitError, rest_client::ClientFactory,
};

/// Builds the enabled controllers. Informers requested through `informers` are started by the
/// manager after every controller has been constructed.
pub struct ControllerContext {
    /// The process-wide shared informer factory.
    pub informers: SharedInformerFactory,
    /// The registry `/metrics` serves; controllers register their own families here.
    pub metrics: Registry,
    /// Workqueue and sync-duration families, registered once and shared by all controllers.
    pub controller_metrics: ControllerMetrics,
    /// Parsed command-line options (worker counts, settings and the like).
    pub options: Arc<Options>,
    gates: EnabledGates,
    clients: ClientFactory,
    shadow: Option<Shadow>,
    write_watermarks: Option<WriteWatermarks>,
}

impl ControllerContext {
    /// Bundles the parts; the manager builds one per start of the controllers. With
    /// `write_watermarks` (a warm standby's), every write the controllers send is recorded
    /// there for the handover on release.
    pub fn new(
        informers: SharedInformerFactory,
        metrics: Registry,
        controller_metrics: ControllerMetrics,
        options: Arc<Options>,
        clients: ClientFactory,
        shadow: Option<Shadow>,
        write_watermarks: Option<WriteWatermarks>,
    ) -> Self {
        Self {
            informers,
            metrics,
            controller_metrics,
            gates: options.enabled_gates(),
            options,
            clients,
            shadow,
            write_watermarks,
        }
    }

    /// Builds the controller `descriptor` describes, upstream's `newXController`: with its own
    /// client, the shared metrics, its `<subsystem>_stale_sync_skips_total` counter, its
    /// settings and gates and, in shadow mode, the executor that records its writes instead of
    /// sending them (else, with a warm standby, one that sends them and records the versions
    /// they return). `Ok(None)` when it chose not to run.
    pub fn init(
        &self,
        descriptor: &ControllerDescriptor,
    ) -> Result<Option<Box<dyn Runnable>>, InitError> {
        let name = descriptor.name;
        let failed = |error: &dyn std::fmt::Display| InitError {
            controller: name.to_string(),
            message: error.to_string(),
        };
        let client = self
            .clients
            .client(descriptor.client_name)
            .map_err(|error| failed(&error))?;
        let writes = match (&self.shadow, &self.write_watermarks) {
            (Some(shadow), _) => Some(shadow.executor(descriptor.name)),
            (None, Some(written)) => {
                Some(written.recording(Arc::new(ApiWriteExecutor::new(client.clone()))))
            }
            (None, None) => None,
        };
        let runtime = RuntimeOptions {
            metrics: self.controller_metrics.clone(),
            stale_sync_skips: Some(
                StaleSyncSkips::register(&self.metrics, descriptor.metrics_subsystem)
                    .map_err(|error| failed(&error))?,
            ),
            writes,
        };
        let settings = self
            .options
            .controller_flags
            .settings_for(descriptor, &self.gates);
        (descriptor.init)(InitContext {
            client,
            informers: &self.informers,
            runtime,
            metrics: &self.metrics,
            settings: &settings,
        })
        .map_err(|error| failed(&error))
    }
}
