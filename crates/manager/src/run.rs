//! Start-up, leadership and shutdown, in upstream's order:
//! flags -> clients -> HTTP server -> leader election -> construct every enabled controller ->
//! start the shared informers -> run each controller (staggered by --controller-start-interval).
//!
//! With `--leader-elect-warm-standby` (kcm-rs) the construction and the informers move before
//! the campaign: a standby keeps its caches synced (and writes nothing: no worker runs, and the
//! lease fence is closed), and on winning the Lease passes the read barrier (its caches hold
//! every write made before; see `informer::SharedInformerFactory::read_barrier`) and starts
//! its workers, instead of listing every object then. Expectations and the other controller
//! state start empty either way, as on a cold start: the barrier is what makes that safe. A
//! leader that gives the Lease up hands its successor the barrier's targets (the versions its
//! writes returned and its caches last changed at; `leader_election::HANDOVER_ANNOTATION`), so
//! the successor waits only for what the old leader wrote and read, not for a bookmark.
//!
//! Losing the lease stops work and fails at once, as upstream (the process exits, controller
//! state with it); a graceful shutdown (SIGTERM) lets in-flight syncs finish within a bound and
//! releases the lease, so a standby takes over without waiting for the lease to expire.

use std::{
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use controller_toolkit::{
    descriptor::Runnable, shadow_view::ComparedKind, write_watermarks::WriteWatermarks,
};
use informer::{BarrierResource, CatchUp, FactoryConfig, HandedOver, SharedInformerFactory};
use k8s_openapi::api::core::v1::Namespace;
use kube::config::{KubeConfigOptions, Kubeconfig};
use prometheus::Registry;
use rand::Rng;
use shadow::{ClusterView, Shadow, ShadowMetrics};
use tokio_util::sync::CancellationToken;
use workqueue::ControllerMetrics;

use crate::{
    configz::Configz,
    context::ControllerContext,
    controller_selection::{ControllerSelection, UnknownControllerError},
    delegated_auth::{DelegatedAuth, DelegatedAuthError},
    feature_gates::parse_feature_gates,
    health::{Health, Readiness},
    leader_election::{
        Campaign, ElectionError, LeaderElectionConfig, LeaderElectionMetrics, LeaderElector, Start,
        handover_versions,
    },
    options::{Options, OptionsError},
    registry::{ControllerRegistry, InitError},
    rest_client::{ClientError, ClientFactory, RestClientMetrics},
    server::{self, ServerError, Serving},
    write_fence::LeaseFence,
};

/// How long in-flight syncs may take to finish after a shutdown request.
const SHUTDOWN_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the manager stopped with a failure; the binary exits 1 on any of these.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Invalid flags.
    #[error(transparent)]
    Options(#[from] OptionsError),
    /// `--controllers` names an unknown controller.
    #[error(transparent)]
    Selection(#[from] UnknownControllerError),
    /// No usable kubeconfig or in-cluster configuration.
    #[error("loading the client configuration: {0}")]
    Config(String),
    /// The API client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The HTTP server could not start.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Delegated authentication or authorization could not be set up.
    #[error(transparent)]
    DelegatedAuth(#[from] DelegatedAuthError),
    /// A controller failed to initialize.
    #[error(transparent)]
    Init(#[from] InitError),
    /// Metrics could not be registered.
    #[error("registering metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// Releasing the lease on shutdown failed.
    #[error("releasing the lease: {0}")]
    Release(#[from] ElectionError),
    /// The lease could not be renewed in time: stop at once.
    #[error("leaderelection lost")]
    LeadershipLost,
}

/// What the caller may want to know of a running manager (tests use the bound address).
#[derive(Debug, Clone, Default)]
pub struct RunHooks {
    /// Receives the address the HTTP endpoints listen on, once bound.
    pub on_serving: Option<tokio::sync::mpsc::UnboundedSender<SocketAddr>>,
}

/// Runs the manager until `shutdown` is cancelled (Ok) or leadership is lost (Err).
pub async fn run(
    options: Options,
    registry: ControllerRegistry,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    run_with_hooks(options, registry, shutdown, RunHooks::default()).await
}

/// [`run`] with hooks for embedding.
pub async fn run_with_hooks(
    options: Options,
    registry: ControllerRegistry,
    shutdown: CancellationToken,
    hooks: RunHooks,
) -> Result<(), RunError> {
    options.validate()?;
    if let Ok((_, ignored)) =
        parse_feature_gates(&options.feature_gates, options.controller_flags.gates())
    {
        for gate in ignored {
            tracing::warn!(
                gate,
                "--feature-gates: no controller of kcm-rs reads this gate; ignored"
            );
        }
    }
    let selection = ControllerSelection::parse(&options.controllers, &registry)?;
    if options.kube_api_content_type != "application/json" {
        tracing::info!(
            requested = %options.kube_api_content_type,
            "kcm-rs speaks JSON to the API server; --kube-api-content-type is noted, not used"
        );
    }

    let metrics = Registry::new();
    register_process_metrics(&metrics);
    let rest_metrics = RestClientMetrics::register(&metrics)?;
    let config = load_client_config(&options).await?;
    // Also the leader-election identity: every request names the process that sent it.
    let identity = LeaderElectionConfig::default_identity();
    // Under leader election, the controllers' writes are sent only while the lease is ours. A
    // shadow writes nothing (its controllers' writes are recorded, not sent), so it needs none.
    let fence = (options.leader_elect && !options.shadow).then(LeaseFence::new);
    let clients = ClientFactory::new(
        config,
        options.kube_api_qps,
        options.kube_api_burst,
        rest_metrics.clone(),
    )?
    .with_product(options.user_agent_product())
    .with_instance(&identity)
    .with_fence(fence.clone());
    let shadow = if options.shadow {
        tracing::info!(
            settle = ?options.shadow_settle,
            lease = options.lease_name(),
            "shadow mode: the controllers write nothing; divergences are reported on /shadow"
        );
        Some(Shadow::new(
            options.shadow_settle,
            ShadowMetrics::register(&metrics)?,
            &compared_kinds(&registry, &selection),
        ))
    } else {
        None
    };

    let health = Health::default();
    if options.secure_port != 0 {
        let serving = match (&options.tls_cert_file, &options.tls_private_key_file) {
            _ if options.plain_http => Serving::PlainHttp,
            (Some(cert), Some(key)) => Serving::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => Serving::TlsSelfSigned,
        };
        let addr = SocketAddr::new(serving_address(&options), options.secure_port);
        let auth = Arc::new(DelegatedAuth::from_options(&options, &rest_metrics).await?);
        let endpoints = server::Endpoints {
            health: health.clone(),
            registry: metrics.clone(),
            shadow: shadow.clone(),
            configz: Arc::new(Configz::new(&options, &selection)),
        };
        let bound = server::serve(addr, serving, auth, endpoints, shutdown.clone()).await?;
        tracing::info!(address = %bound, "serving metrics and health");
        if let Some(sender) = &hooks.on_serving {
            let _ = sender.send(bound);
        }
    }

    let options = Arc::new(options);
    let controller_metrics = ControllerMetrics::register(&metrics)?;
    let plan = ControllerPlan {
        registry,
        selection,
        clients: clients.clone(),
        metrics: metrics.clone(),
        controller_metrics,
        options: options.clone(),
        health: health.clone(),
        shadow,
        write_watermarks: (options.leader_elect && options.leader_elect_warm_standby)
            .then(WriteWatermarks::new),
    };

    if !options.leader_elect {
        let result = run_controllers(plan, shutdown.clone()).await;
        health.set_readiness(Readiness::Stopping);
        return result;
    }

    let election_metrics = LeaderElectionMetrics::register(&metrics)?;
    let lease_name = options.lease_name().to_owned();
    let mut elector = LeaderElector::new(
        clients.unfenced_client("leader-election")?,
        LeaderElectionConfig {
            namespace: options.leader_elect_resource_namespace.clone(),
            name: lease_name.clone(),
            identity: identity.clone(),
            lease_duration: options.leader_elect_lease_duration,
            renew_deadline: options.leader_elect_renew_deadline,
            retry_period: options.leader_elect_retry_period,
            record_events: !options.shadow,
        },
        election_metrics.clone(),
    );
    if let Some(fence) = fence {
        elector = elector.with_fence(fence);
    }
    let lease_health = elector.lease_health();
    let stale_after = options.leader_elect_lease_duration + Duration::from_secs(20);
    health.add_check(
        "leaderElection",
        Arc::new(move || lease_health.check(stale_after)),
    );
    // A warm standby builds its controllers and syncs their caches now, and watches the Lease.
    // Its informers stop only with the process: on shutdown, or when leadership is lost.
    let (warm, _stop_informers) = if options.leader_elect_warm_standby {
        elector = elector.watch_lease();
        let built = build_controllers(&plan, Standby::Warm)?;
        let (factory, written) = (built.factory.clone(), plan.write_watermarks.clone());
        elector = elector.with_handover(Box::new(move || {
            let written = written.as_ref().map(WriteWatermarks::snapshot);
            handover_versions(factory.changes_seen(), written.unwrap_or_default())
        }));
        let informers = CancellationToken::new();
        built.factory.start(informers.clone());
        let (factory, synced_metrics, name) = (
            built.factory.clone(),
            election_metrics.clone(),
            lease_name.clone(),
        );
        let until_shutdown = informers.clone();
        tokio::spawn(async move {
            if factory.wait_for_cache_sync(&until_shutdown).await {
                tracing::info!("standby: caches are synced");
                synced_metrics.set_standby_cache_synced(&name, true);
            }
        });
        (Some(built), Some(informers.drop_guard()))
    } else {
        (None, None)
    };
    health.set_readiness(Readiness::Standby);
    tracing::info!(identity = %elector.identity(), warm = warm.is_some(), "attempting to acquire leader lease");
    if elector.acquire(&shutdown).await == Campaign::Cancelled {
        health.set_readiness(Readiness::Stopping);
        return Ok(());
    }
    let won = Instant::now();
    let handed_over = elector.take_handed_over();
    let start = if warm.is_some() {
        Start::Warm
    } else {
        Start::Cold
    };
    if let Some(sync) = plan.controller_metrics.sync.clone() {
        let (metrics, name) = (election_metrics.clone(), lease_name.clone());
        tokio::spawn(async move {
            let after = sync
                .first_sync_started()
                .await
                .saturating_duration_since(won);
            tracing::info!(?start, ?after, "first sync since winning the lease");
            metrics.observe_first_sync(&name, start, after);
        });
    }

    let work = CancellationToken::new();
    let mut controllers = tokio::spawn(lead(
        plan,
        warm,
        Barrier {
            enabled: options.leader_elect_read_barrier,
            metrics: election_metrics,
            lease: lease_name,
            handed_over,
        },
        work.clone(),
    ));
    let renew_stop = CancellationToken::new();
    let renew_token = renew_stop.clone();
    let mut renewer = tokio::spawn(async move {
        let kept = elector.keep_renewing(&renew_token).await;
        (elector, kept)
    });

    tokio::select! {
        _ = &mut renewer => {
            work.cancel();
            health.set_readiness(Readiness::Stopping);
            return Err(RunError::LeadershipLost);
        }
        finished = &mut controllers => {
            // Controllers only return early on an init error.
            work.cancel();
            renew_stop.cancel();
            if let Ok((mut elector, _)) = renewer.await {
                elector.release().await?;
            }
            return finished.unwrap_or(Ok(()));
        }
        _ = shutdown.cancelled() => {}
    }

    tracing::info!("shutting down: draining in-flight syncs");
    health.set_readiness(Readiness::Stopping);
    work.cancel();
    match tokio::time::timeout(SHUTDOWN_DRAIN_TIMEOUT, &mut controllers).await {
        Ok(_) => tracing::info!("controllers stopped"),
        Err(_) => tracing::warn!("controllers did not stop within the drain timeout"),
    }
    renew_stop.cancel();
    if let Ok((mut elector, _)) = renewer.await {
        elector.release().await?;
    }
    Ok(())
}

/// Everything needed to construct and run the enabled controllers once leading.
struct ControllerPlan {
    registry: ControllerRegistry,
    selection: ControllerSelection,
    clients: ClientFactory,
    metrics: Registry,
    controller_metrics: ControllerMetrics,
    options: Arc<Options>,
    health: Health,
    shadow: Option<Shadow>,
    /// A warm standby's record of the versions its writes returned, for the handover.
    write_watermarks: Option<WriteWatermarks>,
}

/// Whether the controllers are built by a warm standby, before it leads, or once they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standby {
    /// Built while campaigning: the informers list and watch through a client the lease fence
    /// does not hold back, since the fence, closed until the Lease is won, lets a connection
    /// send nothing at all, reads included. Their client never writes.
    Warm,
    /// Built once leading (or without leader election), as upstream.
    Cold,
}

/// The enabled controllers, constructed on one informer factory (which they registered their
/// informers and handlers with) and not running yet.
struct BuiltControllers {
    factory: SharedInformerFactory,
    controllers: Vec<(&'static str, usize, Box<dyn Runnable>)>,
}

/// Constructs every enabled controller on a new informer factory (upstream's
/// `NewControllerInitializers` loop), and attaches shadow mode's view of its caches.
fn build_controllers(
    plan: &ControllerPlan,
    standby: Standby,
) -> Result<BuiltControllers, RunError> {
    let resync = informer::resync_period(plan.options.min_resync_period, &mut rand::rng());
    let client = match standby {
        Standby::Warm => plan.clients.unfenced_client("shared-informers")?,
        Standby::Cold => plan.clients.client("shared-informers")?,
    };
    let factory = SharedInformerFactory::new(
        client,
        FactoryConfig {
            default_resync: resync,
            drop_managed_fields: true,
        },
    );
    let context = ControllerContext::new(
        factory.clone(),
        plan.metrics.clone(),
        plan.controller_metrics.clone(),
        plan.options.clone(),
        plan.clients.clone(),
        plan.shadow.clone(),
        plan.write_watermarks.clone(),
    );

    let mut controllers: Vec<(&'static str, usize, Box<dyn Runnable>)> = Vec::new();
    for descriptor in plan.registry.descriptors() {
        if !plan
            .selection
            .is_enabled(descriptor.name, descriptor.disabled_by_default)
        {
            tracing::info!(controller = descriptor.name, "controller is disabled");
            continue;
        }
        match context.init(descriptor)? {
            Some(controller) => {
                tracing::info!(controller = descriptor.name, "constructed controller");
                let workers = plan.options.controller_flags.workers(descriptor);
                controllers.push((descriptor.name, workers, controller));
            }
            None => tracing::info!(controller = descriptor.name, "controller chose not to run"),
        }
    }
    if let Some(shadow) = &plan.shadow {
        let kinds = compared_kinds(&plan.registry, &plan.selection);
        shadow.attach(shadow_view(&factory, &kinds, plan.options.shadow_settle));
    }
    Ok(BuiltControllers {
        factory,
        controllers,
    })
}

/// The read barrier a warm standby passes on winning the Lease.
struct Barrier {
    /// Off only in tests (`Options::leader_elect_read_barrier`).
    enabled: bool,
    metrics: LeaderElectionMetrics,
    lease: String,
    /// What the previous leader handed over on release (empty after a crash).
    handed_over: HandedOver,
}

/// The leader's work: a warm standby's controllers once its caches passed the read barrier,
/// else controllers built and synced now.
async fn lead(
    plan: ControllerPlan,
    warm: Option<BuiltControllers>,
    barrier: Barrier,
    work: CancellationToken,
) -> Result<(), RunError> {
    let Some(built) = warm else {
        return run_controllers(plan, work).await;
    };
    plan.health.set_readiness(Readiness::Syncing);
    if barrier.enabled {
        let Some(report) = built
            .factory
            .read_barrier(CatchUp::DEFAULT, &barrier.handed_over, &work)
            .await
        else {
            return Ok(());
        };
        let resources_where = |pick: fn(&BarrierResource) -> bool| -> Vec<&str> {
            report
                .resources
                .iter()
                .filter(|part| pick(part))
                .map(|part| part.resource.as_str())
                .collect()
        };
        let relisted = resources_where(|part| part.relisted);
        let handed_over = resources_where(|part| part.handed_over);
        tracing::info!(
            waited = ?report.waited,
            ?handed_over,
            ?relisted,
            "read barrier passed: the caches hold every write made before the lease was won"
        );
        barrier
            .metrics
            .observe_read_barrier(&barrier.lease, report.waited);
    } else {
        tracing::warn!("read barrier disabled: the controllers may act on a stale cache");
    }
    plan.health.set_readiness(Readiness::Ready);
    run_built(plan, built, work).await
}

/// Constructs every enabled controller, starts the informers they asked for, then runs each
/// controller until `work` is cancelled.
async fn run_controllers(plan: ControllerPlan, work: CancellationToken) -> Result<(), RunError> {
    let built = build_controllers(&plan, Standby::Cold)?;
    plan.health.set_readiness(Readiness::Syncing);
    built.factory.start(work.clone());
    let health = plan.health.clone();
    let sync_factory = built.factory.clone();
    let sync_token = work.clone();
    tokio::spawn(async move {
        if sync_factory.wait_for_cache_sync(&sync_token).await {
            tracing::info!("caches are synced");
            health.set_readiness(Readiness::Ready);
        }
    });
    run_built(plan, built, work).await
}

/// Runs each built controller with its workers (staggered by --controller-start-interval; each
/// waits for its caches first) until `work` is cancelled.
async fn run_built(
    plan: ControllerPlan,
    built: BuiltControllers,
    work: CancellationToken,
) -> Result<(), RunError> {
    if let Some(shadow) = &plan.shadow {
        tokio::spawn(shadow.clone().run(work.clone()));
    }
    let start_interval = plan.options.controller_start_interval;
    let mut tasks = Vec::with_capacity(built.controllers.len());
    for (name, workers, controller) in built.controllers {
        tracing::info!(controller = name, "starting controller");
        let running = Arc::new(AtomicBool::new(true));
        let check_running = running.clone();
        let check_work = work.clone();
        plan.health.add_check(
            name,
            Arc::new(move || {
                if check_running.load(Ordering::Relaxed) || check_work.is_cancelled() {
                    Ok(())
                } else {
                    Err("controller stopped unexpectedly".to_string())
                }
            }),
        );
        let delay = if start_interval.is_zero() {
            Duration::ZERO
        } else {
            start_interval.mul_f64(1.0 + rand::rng().random_range(0.0..1.0))
        };
        let token = work.clone();
        tasks.push(tokio::spawn(async move {
            tokio::select! {
                _ = token.cancelled() => {}
                _ = tokio::time::sleep(delay) => controller.run(workers, token).await,
            }
            running.store(false, Ordering::Relaxed);
            tracing::info!(controller = name, "controller stopped");
        }));
    }
    futures::future::join_all(tasks).await;
    // With no controller enabled (or all stopped) the manager still serves until shutdown.
    work.cancelled().await;
    Ok(())
}

/// What shadow mode compares against: the caches of the compared `kinds` the enabled
/// controllers asked for, with what their watches delivered kept for four settle windows (20 s
/// at least), and the namespaces (its one informer of its own: nothing in a namespace being
/// deleted is compared).
fn shadow_view(
    factory: &SharedInformerFactory,
    kinds: &[ComparedKind],
    settle: Duration,
) -> ClusterView {
    ClusterView::new(shadow::keep(settle), kinds, factory)
        .with_namespaces(factory.informer::<Namespace>())
}

/// The kinds the controllers `selection` enables declare for shadow mode (the
/// `compared_kinds` of their descriptors).
fn compared_kinds(
    registry: &ControllerRegistry,
    selection: &ControllerSelection,
) -> Vec<ComparedKind> {
    registry
        .descriptors()
        .filter(|descriptor| selection.is_enabled(descriptor.name, descriptor.disabled_by_default))
        .flat_map(|descriptor| descriptor.compared_kinds.iter().copied())
        .collect()
}

/// `--bind-address`, except that `--plain-http` serves on loopback only: a non-loopback
/// address is replaced by the loopback address of its family.
fn serving_address(options: &Options) -> IpAddr {
    if !options.plain_http {
        return options.bind_address;
    }
    let address = if options.bind_address.is_loopback() {
        options.bind_address
    } else if options.bind_address.is_ipv6() {
        IpAddr::V6(Ipv6Addr::LOCALHOST)
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    };
    tracing::warn!(
        %address,
        requested = %options.bind_address,
        "--plain-http: serving plain HTTP without TLS on loopback only; no client certificates, bearer tokens and SubjectAccessReviews apply when the delegated kubeconfigs are given"
    );
    address
}

/// kubeconfig (`--kubeconfig`), else `$KUBECONFIG`/in-cluster inference; `--master` overrides
/// the server URL.
async fn load_client_config(options: &Options) -> Result<kube::Config, RunError> {
    let mut config = match &options.kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).map_err(|error| RunError::Config(error.to_string()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|error| RunError::Config(error.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|error| RunError::Config(error.to_string()))?,
    };
    if let Some(master) = &options.master {
        config.cluster_url = master
            .parse()
            .map_err(|error: http::uri::InvalidUri| RunError::Config(error.to_string()))?;
    }
    Ok(config)
}

/// `process_*` metrics from /proc (Linux).
fn register_process_metrics(registry: &Registry) {
    #[cfg(target_os = "linux")]
    {
        let collector = prometheus::process_collector::ProcessCollector::for_self();
        if let Err(error) = registry.register(Box::new(collector)) {
            tracing::warn!(%error, "process metrics unavailable");
        }
    }
}
