//! What a controller's init function receives: the shared informer factory, a way to get its
//! own API client, the metrics registry, the options and, in shadow mode, where writes go.

use std::sync::Arc;

use controller_toolkit::writes::WriteExecutor;
use informer::SharedInformerFactory;
use prometheus::Registry;
use shadow::Shadow;
use workqueue::ControllerMetrics;

use crate::{options::Options, registry::InitError, rest_client::ClientFactory};

/// Handed to every init function. Informers requested through `informers` are started by the
/// manager after every controller has been constructed.
pub struct ControllerContext {
    /// The process-wide shared informer factory.
    pub informers: SharedInformerFactory,
    /// The registry `/metrics` serves; controllers register their own families here.
    pub metrics: Registry,
    /// Workqueue and sync-duration families, registered once and shared by all controllers.
    pub controller_metrics: ControllerMetrics,
    /// Parsed command-line options (worker counts and the like).
    pub options: Arc<Options>,
    clients: ClientFactory,
    shadow: Option<Shadow>,
}

impl ControllerContext {
    /// Bundles the parts; the manager builds one per start of the controllers.
    pub fn new(
        informers: SharedInformerFactory,
        metrics: Registry,
        controller_metrics: ControllerMetrics,
        options: Arc<Options>,
        clients: ClientFactory,
        shadow: Option<Shadow>,
    ) -> Self {
        Self {
            informers,
            metrics,
            controller_metrics,
            options,
            clients,
            shadow,
        }
    }

    /// Where `controller`'s writes go: `None` (the API server) unless in shadow mode, where
    /// they are recorded and not sent.
    pub fn write_executor(&self, controller: &'static str) -> Option<Arc<dyn WriteExecutor>> {
        self.shadow
            .as_ref()
            .map(|shadow| shadow.executor(controller))
    }

    /// An API client named after the controller (its user agent suffix), with its own
    /// client-side rate limit, as upstream's `ClientOrDie(name)`.
    pub fn client(&self, controller: &str) -> Result<kube::Client, InitError> {
        self.clients.client(controller).map_err(|error| InitError {
            controller: controller.to_string(),
            message: error.to_string(),
        })
    }
}
