//! API clients as upstream builds them: one client per name (its own user agent and its own
//! client-side token bucket, `--kube-api-qps`/`--kube-api-burst`), all feeding client-go's
//! `rest_client_*` metrics.
//!
//! The limiter and the metrics are a tower layer on top of kube's default stack. kube's inner
//! service future is lazy (nothing is sent before it is polled), so waiting for a token before
//! polling it delays the request itself, exactly like client-go's `Throttle` before `Do`.

use std::{
    num::NonZeroU32,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use governor::Quota;
use http::{HeaderValue, Request, Response};
use kube::client::{Body, ClientBuilder};
use prometheus::{HistogramVec, IntCounterVec, Opts, Registry};
use tower::{BoxError, Layer, Service};
use workqueue::{histogram_vec, registered};

use crate::client_throttle::ClientThrottle;
use crate::fenced_connection::fenced_stack;
use crate::write_fence::LeaseFence;

/// Latency buckets of client-go's request and rate-limiter histograms.
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// Building a client failed (bad kubeconfig, TLS setup, invalid QPS).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// kube refused the configuration.
    #[error("building the API client: {0}")]
    Kube(#[from] kube::Error),
    /// `--kube-api-qps` or `--kube-api-burst` is not positive.
    #[error("--kube-api-qps and --kube-api-burst must be positive (got {qps} and {burst})")]
    InvalidRate {
        /// The QPS given.
        qps: f32,
        /// The burst given.
        burst: u32,
    },
    /// Registering the metrics failed (registered twice into one registry).
    #[error("registering rest client metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// client-go's `rest_client_*` families, shared by every client of the process.
#[derive(Clone)]
pub struct RestClientMetrics {
    requests: IntCounterVec,
    request_duration: HistogramVec,
    rate_limiter_duration: HistogramVec,
}

/// A latency family over [`LATENCY_BUCKETS`] labelled by verb and host, as both of upstream's
/// client latency histograms are.
fn latency_by_verb_and_host(name: &str, help: &str) -> Result<HistogramVec, prometheus::Error> {
    histogram_vec(name, help, LATENCY_BUCKETS, &["verb", "host"])
}

impl RestClientMetrics {
    /// Creates the families and registers them into `registry`.
    pub fn register(registry: &Registry) -> Result<Self, prometheus::Error> {
        let requests = IntCounterVec::new(
            Opts::new(
                "rest_client_requests_total",
                "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
            ),
            &["code", "method", "host"],
        )?;
        let request_duration = latency_by_verb_and_host(
            "rest_client_request_duration_seconds",
            "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
        )?;
        let rate_limiter_duration = latency_by_verb_and_host(
            "rest_client_rate_limiter_duration_seconds",
            "[ALPHA] Client side rate limiter latency in seconds. Broken down by verb, and host.",
        )?;
        Ok(Self {
            requests: registered(registry, requests)?,
            request_duration: registered(registry, request_duration)?,
            rate_limiter_duration: registered(registry, rate_limiter_duration)?,
        })
    }
}

/// Makes one `kube::Client` per client name from one base configuration.
#[derive(Clone)]
pub struct ClientFactory {
    config: kube::Config,
    quota: Quota,
    metrics: RestClientMetrics,
    host: String,
    /// The product named in the user agent (`kcm-rs`, `kcm-rs-shadow`).
    product: &'static str,
    /// This process's identity, named in the user agent.
    instance: Option<String>,
    /// Under leader election: the lease the controllers' writes wait on.
    fence: Option<LeaseFence>,
}

impl ClientFactory {
    /// Validates the rate and remembers the configuration; no connection is made here.
    pub fn new(
        config: kube::Config,
        qps: f32,
        burst: u32,
        metrics: RestClientMetrics,
    ) -> Result<Self, ClientError> {
        let invalid = ClientError::InvalidRate { qps, burst };
        let burst_nonzero =
            NonZeroU32::new(burst).ok_or(ClientError::InvalidRate { qps, burst })?;
        if !(qps.is_finite() && qps > 0.0) {
            return Err(invalid);
        }
        let period = Duration::from_secs_f64(1.0 / f64::from(qps));
        let quota = Quota::with_period(period)
            .ok_or(invalid)?
            .allow_burst(burst_nonzero);
        let host = config
            .cluster_url
            .authority()
            .map(|authority| authority.to_string())
            .unwrap_or_default();
        Ok(Self {
            config,
            quota,
            metrics,
            host,
            product: "kcm-rs",
            instance: None,
            fence: None,
        })
    }

    /// Sends the writes of every client made by [`client`](Self::client) only while `fence`
    /// is open (see [`LeaseFence`]); `None` leaves them unfenced.
    pub fn with_fence(mut self, fence: Option<LeaseFence>) -> Self {
        self.fence = fence;
        self
    }

    /// A client whose writes never wait on the fence: the elector's, which must renew the very
    /// lease the fence follows.
    pub fn unfenced_client(&self, client_name: &str) -> Result<kube::Client, ClientError> {
        self.build(client_name, None)
    }

    /// Names `product` (instead of `kcm-rs`) in every client's user agent.
    pub fn with_product(mut self, product: &'static str) -> Self {
        self.product = product;
        self
    }

    /// Names this process (its leader-election identity) at the end of every user agent
    /// (kcm-rs only): an API server's audit log then tells the replicas of an HA pair apart.
    pub fn with_instance(mut self, identity: &str) -> Self {
        self.instance = Some(identity.to_owned());
        self
    }

    /// A client with its own token bucket whose user agent holds `<product>/<client_name>`,
    /// like upstream's `kube-controller-manager/<version> (<os>/<arch>) kubernetes/<commit>/<name>`,
    /// then ` (<identity>)` when an instance is named.
    pub fn client(&self, client_name: &str) -> Result<kube::Client, ClientError> {
        self.build(client_name, self.fence.clone())
    }

    fn build(
        &self,
        client_name: &str,
        fence: Option<LeaseFence>,
    ) -> Result<kube::Client, ClientError> {
        let mut config = self.config.clone();
        let mut user_agent = format!(
            "kube-controller-manager/v{} ({}/{}) {}/{}",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            self.product,
            client_name
        );
        if let Some(instance) = &self.instance {
            user_agent.push_str(&format!(" ({instance})"));
        }
        if let Ok(value) = HeaderValue::from_str(&user_agent) {
            config
                .headers
                .retain(|(name, _)| name != http::header::USER_AGENT);
            config.headers.push((http::header::USER_AGENT, value));
        }
        let layer = RestClientLayer {
            limiter: Arc::new(ClientThrottle::new(self.quota)),
            metrics: self.metrics.clone(),
            host: self.host.clone(),
            fence,
        };
        Ok(match layer.fence.clone() {
            Some(fence) => {
                let namespace = config.default_namespace.clone();
                ClientBuilder::new(fenced_stack(&config, fence)?, namespace)
                    .with_layer(&layer)
                    .build()
            }
            None => ClientBuilder::try_from(config)?.with_layer(&layer).build(),
        })
    }
}

/// Tower layer: client-side rate limiting plus `rest_client_*` accounting, and the lease
/// fence for writes.
#[derive(Clone)]
struct RestClientLayer {
    limiter: Arc<ClientThrottle>,
    metrics: RestClientMetrics,
    host: String,
    fence: Option<LeaseFence>,
}

/// A write refused because this process's leader lease has expired.
#[derive(Debug, thiserror::Error)]
#[error("write not sent: this process's leader lease has expired")]
pub struct LeaseExpired;

impl<S> Layer<S> for RestClientLayer {
    type Service = RestClientService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RestClientService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service produced by [`RestClientLayer`].
struct RestClientService<S> {
    inner: S,
    layer: RestClientLayer,
}

impl<S, B> Service<Request<Body>> for RestClientService<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError> + 'static,
    B: 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let method = request.method().as_str().to_string();
        let fenced = self.layer.fence.clone().filter(|_| {
            !matches!(
                *request.method(),
                http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
            )
        });
        let response = self.inner.call(request);
        let layer = self.layer.clone();
        Box::pin(async move {
            let waited = Instant::now();
            layer.limiter.acquire().await;
            layer
                .metrics
                .rate_limiter_duration
                .with_label_values(&[&method, &layer.host])
                .observe(waited.elapsed().as_secs_f64());
            // The last check before the request is sent: a process that stalled anywhere
            // before here (deciding, waiting on the limiter) finds the fence closed.
            if fenced.is_some_and(|fence| !fence.is_open()) {
                tracing::warn!(
                    method,
                    "write refused: this process's leader lease has expired"
                );
                return Err(Box::new(LeaseExpired) as BoxError);
            }
            let started = Instant::now();
            let result = response.await.map_err(Into::into);
            layer
                .metrics
                .request_duration
                .with_label_values(&[&method, &layer.host])
                .observe(started.elapsed().as_secs_f64());
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            layer
                .metrics
                .requests
                .with_label_values(&[&code, &method, &layer.host])
                .inc();
            result
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::time::{Duration, Instant};

    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, PostParams};
    use prometheus::Registry;
    use sim::{SimCluster, SimConfig};

    use super::*;

    /// A Lease named `name`: an object any client may write, to see which writes land.
    pub(crate) fn lease(name: &str) -> Lease {
        Lease {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_fence_refuses_a_fenced_clients_requests_but_not_the_unfenced_clients() {
        let sim = SimCluster::start(SimConfig::default()).await.unwrap();
        let config = kube::Config::new(sim.url().parse().unwrap());
        let fence = LeaseFence::new();
        let clients = ClientFactory::new(
            config,
            100.0,
            100,
            RestClientMetrics::register(&Registry::new()).unwrap(),
        )
        .unwrap()
        .with_fence(Some(fence.clone()));
        let fenced: Api<Lease> =
            Api::namespaced(clients.client("replicaset-controller").unwrap(), "default");
        let unfenced: Api<Lease> = Api::namespaced(
            clients.unfenced_client("leader-election").unwrap(),
            "default",
        );
        let post = PostParams::default();

        // Closed (lease not acquired, or expired): a write is refused before it is sent, and
        // the connection sends nothing else either (`fenced_connection`).
        let refused = fenced.create(&post, &lease("a")).await.unwrap_err();
        assert!(
            refused.to_string().contains("lease has expired"),
            "{refused}"
        );
        assert!(fenced.get_opt("a").await.is_err());
        unfenced.create(&post, &lease("b")).await.unwrap();
        assert!(unfenced.get_opt("a").await.unwrap().is_none());

        // Open within the renew deadline of the last success.
        fence.extend(Instant::now(), Duration::from_secs(10));
        fenced.create(&post, &lease("a")).await.unwrap();
        assert!(fenced.get_opt("a").await.unwrap().is_some());
        sim.shutdown().await;
    }
}
