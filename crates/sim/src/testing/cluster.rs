//! [`TestCluster`]: a sim cluster, the test's own client and the controller tasks running
//! against it.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{NAMESPACE, chaos_faults, eventually};
use crate::{SimCluster, SimConfig};

/// A running sim cluster with the controller tasks a test started against it.
/// [`TestCluster::stop`] cancels the controllers, waits for them and shuts the sim down.
pub struct TestCluster {
    /// The cluster, for fault injection, request accounting and kubeconfigs.
    pub sim: SimCluster,
    /// The test's own client (user agent `sim-test`, so accounting tells it from controllers).
    pub client: Client,
    shutdown: CancellationToken,
    controllers: Vec<JoinHandle<()>>,
}

impl TestCluster {
    /// Starts a sim cluster with `config`; no controller runs until
    /// [`TestCluster::spawn_controller`].
    ///
    /// # Panics
    /// When the sim does not start.
    pub async fn start(config: SimConfig) -> Self {
        let sim = SimCluster::start(config)
            .await
            .unwrap_or_else(|e| panic!("the sim cluster does not start: {e}"));
        let client = sim.client();
        Self {
            sim,
            client,
            shutdown: CancellationToken::new(),
            controllers: Vec::new(),
        }
    }

    /// Starts a controller task: `start` gets a client whose requests carry `user_agent` (for
    /// the sim's accounting) and the token cancelled by [`TestCluster::stop`], and returns the
    /// controller's run future, which is spawned and awaited on stop.
    pub fn spawn_controller<F, Fut>(&mut self, user_agent: &str, start: F)
    where
        F: FnOnce(Client, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let run = start(
            self.sim.client_with_user_agent(user_agent),
            self.shutdown.clone(),
        );
        self.controllers.push(tokio::spawn(run));
    }

    /// The test client's API for `K` in [`NAMESPACE`].
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    /// The pods of [`NAMESPACE`].
    pub fn pods(&self) -> Api<Pod> {
        self.api()
    }

    /// Creates `object` in [`NAMESPACE`] and returns it as stored.
    ///
    /// # Panics
    /// When the server refuses it.
    pub async fn create<K>(&self, object: &K) -> K
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + Serialize + DeserializeOwned,
        K::DynamicType: Default,
    {
        self.api::<K>()
            .create(&PostParams::default(), object)
            .await
            .unwrap_or_else(|e| panic!("create {}: {e}", kind::<K>()))
    }

    /// POSTs `body` to `path` as it is, byte for byte: for objects whose exact bytes matter
    /// (fields like `"creationTimestamp":null`, ControllerRevision data as upstream wrote it).
    ///
    /// # Panics
    /// When the server refuses it.
    pub async fn create_raw(&self, path: &str, body: &str) -> Value {
        let request = kube::core::Request::new(path)
            .create(&PostParams::default(), body.as_bytes().to_vec())
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        self.client
            .request::<Value>(request)
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// Applies a JSON merge patch to the `K` named `name` and returns it as stored.
    ///
    /// # Panics
    /// When the server refuses the patch.
    pub async fn merge_patch<K>(&self, name: &str, patch: Value) -> K
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
        K::DynamicType: Default,
    {
        self.api::<K>()
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("patch {} {name}: {e}", kind::<K>()))
    }

    /// Every `K` in [`NAMESPACE`].
    ///
    /// # Panics
    /// When the list fails.
    pub async fn list<K>(&self) -> Vec<K>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
        K::DynamicType: Default,
    {
        self.api::<K>()
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("list {}: {e}", kind::<K>()))
            .items
    }

    /// The names of every `K` in [`NAMESPACE`], in the list's order.
    ///
    /// # Panics
    /// When the list fails.
    pub async fn names<K>(&self) -> Vec<String>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
        K::DynamicType: Default,
    {
        self.list::<K>()
            .await
            .into_iter()
            .filter_map(|object| object.meta().name.clone())
            .collect()
    }

    /// How many `verb` requests on `resource` the clients whose user agent starts with `agent`
    /// sent (the sim's accounting).
    pub fn requests_by(&self, agent: &str, verb: &str, resource: &str) -> u64 {
        self.sim.accounting().count_for_agent(agent, verb, resource)
    }

    /// The `K`s labelled `app=<app>`, sorted by name.
    ///
    /// # Panics
    /// When the list fails.
    pub async fn labelled<K>(&self, app: &str) -> Vec<K>
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
        K::DynamicType: Default,
    {
        let mut objects = self
            .api::<K>()
            .list(&ListParams::default().labels(&format!("app={app}")))
            .await
            .unwrap_or_else(|e| panic!("list {} of {app}: {e}", kind::<K>()))
            .items;
        objects.sort_by(|a, b| a.meta().name.cmp(&b.meta().name));
        objects
    }

    /// The pods labelled `app=<app>`, sorted by name (terminating and finished ones included).
    pub async fn pods_labelled(&self, app: &str) -> Vec<Pod> {
        self.labelled(app).await
    }

    /// The events about the object of `kind` named `name`, whoever recorded them.
    ///
    /// # Panics
    /// When the list fails.
    pub async fn events_about(&self, kind: &str, name: &str) -> Vec<Event> {
        self.list::<Event>()
            .await
            .into_iter()
            .filter(|event| {
                event.involved_object.kind.as_deref() == Some(kind)
                    && event.involved_object.name.as_deref() == Some(name)
            })
            .collect()
    }

    /// Waits up to `timeout` for an event about the object of `kind` named `name` with
    /// `reason`, and returns the first.
    ///
    /// # Panics
    /// When none came in time.
    pub async fn wait_for_event(
        &self,
        kind: &str,
        name: &str,
        reason: &str,
        timeout: Duration,
    ) -> Event {
        let what = format!("a {reason} event about {kind} {name}");
        eventually(&what, timeout, || async {
            self.events_about(kind, name)
                .await
                .into_iter()
                .find(|event| event.reason.as_deref() == Some(reason))
        })
        .await
    }

    /// Reads the `K` named `name` every [`super::POLL_INTERVAL`] until `check` returns `Some`
    /// for it, and returns that value; a failed read counts as "not yet". The wait-then-check
    /// most tests do on one object, in one call.
    ///
    /// # Panics
    /// When `check` has not returned `Some` after `timeout`, naming `what` it waited for.
    pub async fn wait_for<K, T>(
        &self,
        name: &str,
        what: &str,
        timeout: Duration,
        check: impl Fn(K) -> Option<T>,
    ) -> T
    where
        K: Resource<Scope = NamespaceResourceScope> + Clone + Debug + DeserializeOwned,
        K::DynamicType: Default,
    {
        let (api, check) = (&self.api::<K>(), &check);
        eventually(
            what,
            timeout,
            || async move { check(api.get(name).await.ok()?) },
        )
        .await
    }

    /// Injects the chaos tests' faults ([`chaos_faults`]) into every request from now on, the
    /// test's own included: how each crate's chaos test starts.
    pub fn set_chaos_faults(&self, seed: u64, watch_disconnect_every: Duration) {
        self.sim
            .set_faults(chaos_faults(seed, watch_disconnect_every));
    }

    /// Cancels the controllers, waits for their tasks to end and shuts the sim down.
    pub async fn stop(self) {
        self.shutdown.cancel();
        for controller in self.controllers {
            // A controller that panicked has printed why; the sim is shut down all the same.
            let _ = controller.await;
        }
        self.sim.shutdown().await;
    }
}

/// `K`'s kind, for panic messages.
fn kind<K>() -> String
where
    K: Resource,
    K::DynamicType: Default,
{
    K::kind(&K::DynamicType::default()).into_owned()
}
