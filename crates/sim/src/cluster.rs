//! `SimCluster`: creates the initial namespaces and nodes, starts the server, the kubelet and
//! the delayed garbage collector on a tokio runtime, and hands out kubeconfigs, clients,
//! fault controls, node readiness and request accounting.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::accounting::{Accounting, RequestAccounting};
use crate::config::{FaultConfig, SimConfig};
use crate::error::SimError;
use crate::faults::FaultInjector;
use crate::nodes::{self, LEASE_NAMESPACE, node_key};
use crate::resources::{NAMESPACES, NODES};
use crate::server::{Shared, router};
use crate::store::State;

/// Namespaces every cluster starts with.
const INITIAL_NAMESPACES: &[&str] = &["default", LEASE_NAMESPACE, "kube-system"];

/// A running simulated cluster. Dropping it (or [`SimCluster::shutdown`]) stops the server,
/// its watch streams and the kubelet.
#[derive(Debug)]
pub struct SimCluster {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl SimCluster {
    /// Starts a cluster on 127.0.0.1 with a free port.
    pub async fn start(config: SimConfig) -> Result<SimCluster, SimError> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), config).await
    }

    /// Starts a cluster on `addr` (port 0 picks a free port).
    pub async fn start_on(addr: SocketAddr, config: SimConfig) -> Result<SimCluster, SimError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| SimError::Bind { addr, source })?;
        let bound = listener.local_addr().map_err(SimError::LocalAddr)?;
        let (pod_tx, pod_rx) = tokio::sync::mpsc::unbounded_channel();
        let pod_tx = config.kubelet.enabled.then_some(pod_tx);
        let (gc_tx, gc_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut state = State::new(config.watch_window, pod_tx);
        if !config.gc_delay.is_zero() {
            state = state.with_delayed_collection(gc_tx);
        }
        for ns in INITIAL_NAMESPACES {
            // Creating a well-formed namespace in an empty cluster cannot fail.
            let _ = state.create(NAMESPACES, "", json!({"metadata": {"name": ns}}));
        }
        let leases = config.kubelet.enabled && !config.nodes.heartbeat.is_zero();
        for (i, name) in config.nodes.names().into_iter().enumerate() {
            let node = nodes::node_object(
                &name,
                &nodes::node_ip(i),
                &config.nodes.labels_of(i),
                &config.nodes.taints_of(i),
            );
            state
                .create(NODES, "", node)
                .map_err(|e| SimError::Node(e.message))?;
            if leases {
                nodes::ensure_lease(&mut state, &name);
            }
        }
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            state: RwLock::new(state),
            faults: FaultInjector::new(config.faults.clone()),
            accounting: Accounting::default(),
            auth: config.auth.clone(),
            server_address: bound.to_string(),
            shutdown,
        });
        let mut tasks = Vec::new();
        if config.kubelet.enabled {
            tasks.push(tokio::spawn(crate::kubelet::run(
                shared.clone(),
                config.kubelet.clone(),
                config.nodes.clone(),
                pod_rx,
            )));
        }
        if !config.gc_delay.is_zero() {
            tasks.push(tokio::spawn(crate::gc::run(
                shared.clone(),
                config.gc_delay,
                gc_rx,
            )));
        }
        let app = router(shared.clone());
        let mut stop = shared.shutdown.subscribe();
        tasks.push(tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.wait_for(|stopped| *stopped).await;
                })
                .await;
            if let Err(e) = served {
                tracing::error!(error = %e, "sim server stopped");
            }
        }));
        tracing::info!(addr = %bound, "sim cluster started");
        Ok(SimCluster {
            shared,
            addr: bound,
            tasks,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig (plain http, no credentials) for kubectl and `kube::Config`.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n    namespace: default\ncurrent-context: sim\nusers:\n- name: sim\n  user: {{}}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Writes [`Self::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), SimError> {
        std::fs::write(path, self.kubeconfig_yaml()).map_err(|source| SimError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A client with user agent `sim-test`. Must be called inside a tokio runtime.
    pub fn client(&self) -> kube::Client {
        self.client_with_user_agent("sim-test")
    }

    /// A client with the given user agent (so request accounting can tell callers apart).
    /// Must be called inside a tokio runtime.
    pub fn client_with_user_agent(&self, user_agent: &str) -> kube::Client {
        let uri: http::Uri = match self.url().parse() {
            Ok(uri) => uri,
            Err(_) => unreachable!("an http URL of a socket address always parses"),
        };
        let mut config = kube::Config::new(uri);
        let agent = http::HeaderValue::from_str(user_agent)
            .unwrap_or(http::HeaderValue::from_static("sim-test"));
        config.headers.push((http::header::USER_AGENT, agent));
        match kube::Client::try_from(config) {
            Ok(client) => client,
            Err(e) => unreachable!("a plain-http client configuration is always valid: {e}"),
        }
    }

    /// Changes fault injection at run time (the random generator is reseeded).
    pub fn set_faults(&self, faults: FaultConfig) {
        self.shared.faults.set(faults);
    }

    /// A snapshot of the request counts so far.
    pub fn accounting(&self) -> RequestAccounting {
        self.shared.accounting.snapshot()
    }

    /// Makes node `name` Ready or NotReady, as its kubelet would report it (the `Ready`
    /// condition, with a new `lastTransitionTime` on a change). Heartbeats keep what was set;
    /// pods on a NotReady node are not Ready, and only pods tolerating
    /// `node.kubernetes.io/not-ready:NoSchedule` are scheduled there. Patching the condition
    /// through `nodes/status` does the same.
    pub fn set_node_ready(&self, name: &str, ready: bool) -> Result<(), SimError> {
        let mut state = self.shared.state.write();
        let mut node = state
            .get(NODES, &node_key(name))
            .ok_or_else(|| SimError::Node(format!("nodes \"{name}\" not found")))?
            .value();
        if nodes::set_ready(&mut node, ready) {
            state.put(NODES, node_key(name), node);
        }
        Ok(())
    }

    /// Drops every retained watch event, so watches from older versions get 410 Expired.
    pub fn compact(&self) {
        self.shared.state.write().compact();
    }

    /// Stops the server, ends watch streams and the kubelet, and waits for them (the server
    /// gets a second to close its connections gracefully before it is aborted).
    pub async fn shutdown(mut self) {
        self.shared.shutdown.send_replace(true);
        let tasks = std::mem::take(&mut self.tasks);
        for mut task in tasks {
            if tokio::time::timeout(Duration::from_secs(1), &mut task)
                .await
                .is_err()
            {
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for SimCluster {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}
