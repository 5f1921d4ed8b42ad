//! `kube-sim`: runs the sim cluster standalone, writes a kubeconfig for kubectl and the
//! controller manager, and serves until SIGINT/SIGTERM.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use sim::{
    AllowRule, AuthConfig, AuthRuleError, FaultConfig, KubeletConfig, NodeTaint, NodesConfig,
    SimCluster, SimConfig,
};

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "kube-sim",
    version,
    about = "In-memory Kubernetes API server with a simulated kubelet"
)]
struct Flags {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    address: IpAddr,
    /// Port to listen on (0 picks a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig (default: a file in the temporary directory).
    #[arg(long)]
    kubeconfig_out: Option<PathBuf>,
    /// Milliseconds from a pod starting to it becoming Ready.
    #[arg(long, default_value_t = 0)]
    ready_delay_ms: u64,
    /// Milliseconds a gracefully deleted pod lingers before it is gone.
    #[arg(long, default_value_t = 0)]
    deletion_delay_ms: u64,
    /// Disable the simulated kubelet (pods stay Pending, nodes send no heartbeats).
    #[arg(long)]
    no_kubelet: bool,
    /// How many nodes the cluster starts with (one is named after the prefix alone, several
    /// PREFIX-0, PREFIX-1, ...).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// The node name prefix.
    #[arg(long, default_value = "sim-node")]
    node_name_prefix: String,
    /// Labels of every node: `key=value,key2=value2`.
    #[arg(long, value_parser = sim::parse_labels, default_value = "", value_name = "K=V,...")]
    node_labels: BTreeMap<String, String>,
    /// Taints of every node: `key=value:Effect` or `key:Effect`, comma-separated or repeated.
    #[arg(long, value_delimiter = ',', value_name = "KEY=VALUE:EFFECT")]
    node_taints: Vec<NodeTaint>,
    /// Milliseconds between a node's Lease renewals and status heartbeats (spread over all
    /// nodes); 0 turns heartbeats off.
    #[arg(long, default_value_t = 10_000)]
    node_heartbeat_ms: u64,
    /// Milliseconds after a node is deleted until its pods are force-deleted (the pod GC).
    #[arg(long, default_value_t = 0)]
    pod_gc_delay_ms: u64,
    /// Seed of the fault-injection generator.
    #[arg(long, default_value_t = 0)]
    fault_seed: u64,
    /// Probability that a write answers 500.
    #[arg(long, default_value_t = 0.0)]
    fault_write_500: f64,
    /// Probability that a write answers 429 (with Retry-After).
    #[arg(long, default_value_t = 0.0)]
    fault_write_429: f64,
    /// Probability that a write answers 409 Conflict.
    #[arg(long, default_value_t = 0.0)]
    fault_write_409: f64,
    /// Milliseconds of latency added to every request.
    #[arg(long, default_value_t = 0)]
    fault_latency_ms: u64,
    /// Close every watch stream after this many seconds.
    #[arg(long)]
    fault_watch_disconnect_secs: Option<u64>,
    /// Lose every watch event of objects carrying this label key (lists still show them).
    #[arg(long)]
    fault_unwatched_label: Option<String>,
    /// Watch events retained per resource for watch resumption.
    #[arg(long, default_value_t = 10_000)]
    watch_window: usize,
    /// Milliseconds the garbage collector takes to delete a removed owner's dependents, per
    /// level of ownership (upstream's collector works from its own watch); 0 deletes them
    /// within the owner's delete request.
    #[arg(long, default_value_t = 0)]
    gc_delay_ms: u64,
    /// A bearer token TokenReviews accept: `TOKEN=user` or `TOKEN=user:group1,group2`
    /// (repeatable). Unknown tokens are not authenticated.
    #[arg(long = "token", value_name = "TOKEN=USER[:GROUPS]")]
    tokens: Vec<String>,
    /// A SubjectAccessReview allow rule: `user:verb:path` or `group:NAME:verb:path`; verb and
    /// path may be `*`, a path may end in `*` (repeatable). Everything else is denied.
    #[arg(long = "allow", value_name = "SUBJECT:VERB:PATH")]
    allow: Vec<AllowRule>,
}

impl Flags {
    fn config(&self) -> Result<SimConfig, AuthRuleError> {
        let mut auth = AuthConfig {
            allow: self.allow.clone(),
            ..AuthConfig::default()
        };
        for entry in &self.tokens {
            auth.add_token(entry)?;
        }
        Ok(SimConfig {
            kubelet: KubeletConfig {
                enabled: !self.no_kubelet,
                ready_delay: Duration::from_millis(self.ready_delay_ms),
                deletion_delay: Duration::from_millis(self.deletion_delay_ms),
            },
            nodes: NodesConfig {
                count: self.nodes,
                name_prefix: self.node_name_prefix.clone(),
                labels: self.node_labels.clone(),
                taints: self.node_taints.clone(),
                per_node: BTreeMap::new(),
                heartbeat: Duration::from_millis(self.node_heartbeat_ms),
                pod_gc_delay: Duration::from_millis(self.pod_gc_delay_ms),
            },
            faults: FaultConfig {
                seed: self.fault_seed,
                write_500: self.fault_write_500,
                write_429: self.fault_write_429,
                write_409: self.fault_write_409,
                latency: Duration::from_millis(self.fault_latency_ms),
                watch_disconnect_every: self.fault_watch_disconnect_secs.map(Duration::from_secs),
                unwatched_label: self.fault_unwatched_label.clone(),
                watch_lag: None,
            },
            watch_window: self.watch_window,
            gc_delay: Duration::from_millis(self.gc_delay_ms),
            auth,
        })
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn terminated() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for SIGINT")?,
        _ = term.recv() => {}
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let flags = Flags::parse();
    let addr = SocketAddr::new(flags.address, flags.port);
    let config = flags.config().context("--token")?;
    let cluster = SimCluster::start_on(addr, config)
        .await
        .context("starting the sim")?;
    let kubeconfig = flags.kubeconfig_out.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("kube-sim-{}.kubeconfig", cluster.addr().port()))
    });
    cluster
        .write_kubeconfig(&kubeconfig)
        .context("writing the kubeconfig")?;
    println!("kube-sim serving at {}", cluster.url());
    println!("kubeconfig written to {}", kubeconfig.display());
    println!(
        "try: kubectl --kubeconfig {} get pods",
        kubeconfig.display()
    );
    terminated().await?;
    tracing::info!("shutting down");
    cluster.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_the_config() {
        let flags = Flags::parse_from([
            "kube-sim",
            "--port",
            "8080",
            "--ready-delay-ms",
            "50",
            "--no-kubelet",
            "--fault-write-429",
            "0.5",
            "--fault-watch-disconnect-secs",
            "3",
            "--watch-window",
            "7",
            "--token",
            "T=alice:ops,dev",
            "--allow",
            "alice:get:/metrics",
        ]);
        let config = flags.config().unwrap();
        assert_eq!(flags.port, 8080);
        assert!(!config.kubelet.enabled);
        assert_eq!(config.kubelet.ready_delay, Duration::from_millis(50));
        assert_eq!(config.faults.write_429, 0.5);
        assert_eq!(
            config.faults.watch_disconnect_every,
            Some(Duration::from_secs(3))
        );
        assert_eq!(config.watch_window, 7);
        assert_eq!(config.auth.tokens["T"].name, "alice");
        assert_eq!(config.auth.tokens["T"].groups, vec!["ops", "dev"]);
        assert!(config.auth.allow[0].allows("alice", &[], "get", "/metrics"));
        assert!(
            Flags::parse_from(["kube-sim", "--token", "T"])
                .config()
                .is_err()
        );
        assert!(Flags::try_parse_from(["kube-sim", "--allow", "alice"]).is_err());
        let defaults = Flags::parse_from(["kube-sim"]).config().unwrap();
        assert!(defaults.kubelet.enabled);
        assert_eq!(defaults.watch_window, 10_000);
        assert_eq!(defaults.faults.latency, Duration::ZERO);
    }

    #[test]
    fn node_flags_map_to_the_config() {
        let flags = Flags::parse_from([
            "kube-sim",
            "--nodes",
            "5000",
            "--node-labels",
            "zone=a,tier=web",
            "--node-taints",
            "dedicated=infra:NoSchedule,gpu:NoExecute",
            "--node-taints",
            "slow:PreferNoSchedule",
            "--node-heartbeat-ms",
            "2000",
            "--pod-gc-delay-ms",
            "40000",
        ]);
        let nodes = flags.config().unwrap().nodes;
        assert_eq!(nodes.count, 5000);
        assert_eq!(nodes.name(4999), "sim-node-4999");
        assert_eq!(nodes.labels["zone"], "a");
        assert_eq!(nodes.labels["tier"], "web");
        assert_eq!(
            nodes.taints,
            vec![
                NodeTaint::new("dedicated", "infra", "NoSchedule"),
                NodeTaint::new("gpu", "", "NoExecute"),
                NodeTaint::new("slow", "", "PreferNoSchedule"),
            ]
        );
        assert_eq!(nodes.heartbeat, Duration::from_secs(2));
        assert_eq!(nodes.pod_gc_delay, Duration::from_secs(40));
        let defaults = Flags::parse_from(["kube-sim"]).config().unwrap().nodes;
        assert_eq!(defaults.names(), vec!["sim-node"]);
        assert!(defaults.labels.is_empty() && defaults.taints.is_empty());
        assert_eq!(defaults.heartbeat, Duration::from_secs(10));
        assert!(Flags::try_parse_from(["kube-sim", "--node-taints", "a=b"]).is_err());
        assert!(Flags::try_parse_from(["kube-sim", "--node-labels", "a"]).is_err());
    }
}
