//! What the manager's integration tests share: the sim with a kubeconfig, a manager running in
//! this process (from real flags, against the sim) and a plain HTTP/1.1 exchange with its
//! endpoints.

#![allow(dead_code)] // each test binary uses its own part

use std::{
    net::{SocketAddr, TcpListener},
    path::{Path, PathBuf},
    time::Duration,
};

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use manager::{ControllerRegistry, Options, run::RunHooks};
use sim::{SimCluster, SimConfig, testing::TestCluster};
use tokio_util::sync::CancellationToken;

/// The sim (with the test's client) and a kubeconfig for in-process managers.
pub struct Cluster {
    pub test: TestCluster,
    /// Holds the kubeconfig; removed when the cluster is dropped.
    _dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Cluster {
    /// Starts the sim with `config` and writes its kubeconfig into a directory of its own.
    pub async fn start(config: SimConfig) -> Self {
        let test = TestCluster::start(config).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        test.sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Self {
            test,
            _dir: dir,
            kubeconfig,
        }
    }
}

impl Cluster {
    /// Runs a manager with the default registry (every controller) and `flags` against this
    /// cluster ([`start_manager`]).
    pub async fn start_manager(&self, flags: &[String]) -> RunningManager {
        let registry = manager::default_registry().expect("registry");
        start_manager(&self.kubeconfig, registry, flags).await
    }
}

/// How many `verb` requests on `resource` the clients whose user agent contains `agent` sent
/// (the sim's accounting).
pub fn requests_with_agent(sim: &SimCluster, agent: &str, verb: &str, resource: &str) -> u64 {
    sim.accounting()
        .entries()
        .into_iter()
        .filter(|((v, r, a), _)| v == verb && r == resource && a.contains(agent))
        .map(|(_, count)| count)
        .sum()
}

/// The manager's flags for plain-HTTP endpoints that serve `always_allow` (comma-separated
/// paths) without authorization, followed by `extra`.
pub fn plain_http_flags(always_allow: &str, extra: &[&str]) -> Vec<String> {
    [
        "--plain-http".to_owned(),
        format!("--authorization-always-allow-paths={always_allow}"),
    ]
    .into_iter()
    .chain(extra.iter().map(|flag| (*flag).to_owned()))
    .collect()
}

/// A manager running in this process until dropped.
pub struct RunningManager {
    /// Where its endpoints listen.
    pub addr: SocketAddr,
    stop: CancellationToken,
}

impl Drop for RunningManager {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("free port")
}

/// Runs the manager with `registry` and `flags` (after `--kubeconfig` and a free
/// `--secure-port`; `--bind-address=127.0.0.1` and `--leader-elect=false` unless `flags` say
/// otherwise); returns once it serves.
pub async fn start_manager(
    kubeconfig: &Path,
    registry: ControllerRegistry,
    flags: &[String],
) -> RunningManager {
    start_adjusted_manager(kubeconfig, registry, flags, |_| {}).await
}

/// [`start_manager`] with the parsed options changed by `adjust` first (for settings no flag
/// reaches).
pub async fn start_adjusted_manager(
    kubeconfig: &Path,
    registry: ControllerRegistry,
    flags: &[String],
    adjust: impl FnOnce(&mut Options),
) -> RunningManager {
    let mut argv = vec![
        "kube-controller-manager".to_string(),
        format!("--kubeconfig={}", kubeconfig.display()),
        format!("--secure-port={}", free_port()),
    ];
    for (flag, default) in [
        ("--bind-address", "--bind-address=127.0.0.1"),
        ("--leader-elect", "--leader-elect=false"),
    ] {
        if !flags.iter().any(|given| given.starts_with(flag)) {
            argv.push(default.to_string());
        }
    }
    argv.extend(flags.iter().cloned());
    let mut options = Options::parse_with(&registry, argv).expect("flags");
    adjust(&mut options);
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let stop = CancellationToken::new();
    let run_stop = stop.clone();
    tokio::spawn(async move {
        let hooks = RunHooks {
            on_serving: Some(sender),
        };
        if let Err(error) = manager::run::run_with_hooks(options, registry, run_stop, hooks).await {
            panic!("manager failed: {error}");
        }
    });
    let addr = tokio::time::timeout(Duration::from_secs(20), receiver.recv())
        .await
        .expect("manager serves within 20s")
        .expect("bound address");
    RunningManager { addr, stop }
}

/// A plain-HTTP GET of `path`: the status code and the body.
pub async fn plain_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|error| error.to_string())?;
    let request = http::Request::get(path)
        .header(http::header::HOST, "127.0.0.1")
        .body(Empty::<Bytes>::new())
        .expect("request");
    send(TokioIo::new(tcp), request).await
}

/// Sends `request` over `io` (HTTP/1.1): the status code and the body.
pub async fn send<IO>(io: IO, request: http::Request<Empty<Bytes>>) -> Result<(u16, String), String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (code, _, body) = send_with_headers(io, request).await?;
    Ok((code, body))
}

/// [`send`], with the response's headers too.
pub async fn send_with_headers<IO>(
    io: IO,
    request: http::Request<Empty<Bytes>>,
) -> Result<(u16, http::HeaderMap, String), String>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| error.to_string())?;
    let code = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| error.to_string())?
        .to_bytes();
    Ok((code, headers, String::from_utf8_lossy(&body).into_owned()))
}
