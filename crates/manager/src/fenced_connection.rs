//! The lease fence at the socket (kcm-rs only): the controllers' connections to the API server
//! write no byte once this process's lease has expired by its own clock.
//!
//! Why: the fence in `rest_client` refuses every request a deposed leader *starts*, but a
//! leader stopped (SIGSTOP, a frozen VM) with a request already handed to its HTTP stack sends
//! that request on resume, seconds after its successor took over; a pod create sent that way
//! lands beside the successor's (`make chaos` saw 8 live pods for 5 replicas + 2 surge). Here
//! every write to the socket, including the TLS records of a request that was already on its
//! way, checks the fence first, so a resumed process's connection fails instead. What the
//! kernel had already taken before the stop reached the API server before the stop, long
//! before any successor could write.
//!
//! The stack is kube's default (`ClientBuilder::try_from`): HTTP connector, rustls, timeouts,
//! then the base URI, retry, auth and extra-headers layers, with the fenced stream between the
//! TCP connector and TLS; kube's per-request tracing spans are left out (`rest_client`
//! accounts for every request). A proxy is refused, as kube refuses one without its proxy
//! features, which kcm-rs does not enable.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use futures::future::BoxFuture;
use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_timeout::TimeoutConnector;
use hyper_util::{
    client::legacy::{
        Client as HyperClient,
        connect::{Connected, Connection, HttpConnector},
    },
    rt::TokioExecutor,
};
use kube::client::{Body, ConfigExt, retry::RetryPolicy};
use tower::{BoxError, Service, ServiceBuilder, retry::RetryLayer};

use crate::rest_client::LeaseExpired;
use crate::write_fence::LeaseFence;

/// kube's default client stack with every connection's writes behind `fence`; the service to
/// give `kube::client::ClientBuilder::new`.
pub fn fenced_stack(
    config: &kube::Config,
    fence: LeaseFence,
) -> Result<
    impl Service<
        http::Request<Body>,
        Response = http::Response<hyper::body::Incoming>,
        Error = BoxError,
        Future = impl Send + 'static,
    > + Send
    + 'static,
    kube::Error,
> {
    if let Some(proxy_url) = &config.proxy_url {
        return Err(kube::Error::ProxyProtocolUnsupported {
            proxy_url: Box::new(proxy_url.clone()),
        });
    }
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let tls =
        config.rustls_https_connector_with_connector(FencedConnector { inner: http, fence })?;
    let mut connector = TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let client: HyperClient<_, Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new()).build(connector);
    Ok(ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(client))
}

/// A connector whose connections write only while the fence is open.
#[derive(Clone)]
struct FencedConnector<C> {
    inner: C,
    fence: LeaseFence,
}

impl<C> Service<Uri> for FencedConnector<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = FencedStream<C::Response>;
    type Error = C::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let fence = self.fence.clone();
        let connecting = self.inner.call(uri);
        Box::pin(async move {
            let inner = connecting.await?;
            Ok(FencedStream { inner, fence })
        })
    }
}

/// A connection that checks the fence before each write.
struct FencedStream<S> {
    inner: S,
    fence: LeaseFence,
}

impl<S> FencedStream<S> {
    /// The error a write gets once the lease has expired: the connection is dropped and the
    /// request fails (hyper never retries a request whose bytes it began to send).
    fn refuse_if_closed(&self) -> Option<io::Error> {
        (!self.fence.is_open()).then(|| io::Error::other(LeaseExpired))
    }
}

impl<S: Read + Unpin> Read for FencedStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: Write + Unpin> Write for FencedStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(refused) = self.refuse_if_closed() {
            return Poll::Ready(Err(refused));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(refused) = self.refuse_if_closed() {
            return Poll::Ready(Err(refused));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: Connection> Connection for FencedStream<S> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, ListParams, PostParams};
    use kube::client::ClientBuilder;
    use sim::{SimCluster, SimConfig};

    use super::*;
    use crate::rest_client::tests::lease;

    /// Whether `error` or one of its sources is the fence's refusal (an I/O error wrapping
    /// [`LeaseExpired`]).
    fn refused_by_the_fence(error: &(dyn std::error::Error + 'static)) -> bool {
        std::iter::successors(Some(error), |error| error.source()).any(|error| {
            error
                .downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| inner.is::<LeaseExpired>())
        })
    }

    #[tokio::test]
    async fn a_connection_made_while_leading_writes_nothing_once_the_lease_expired() {
        let sim = SimCluster::start(SimConfig::default()).await.unwrap();
        let config = kube::Config::new(sim.url().parse().unwrap());
        let fence = LeaseFence::new();
        // Only the socket fence: no request-level check in front of it.
        let fenced: Api<Lease> = Api::namespaced(
            ClientBuilder::new(fenced_stack(&config, fence.clone()).unwrap(), "default").build(),
            "default",
        );
        let unfenced: Api<Lease> =
            Api::namespaced(kube::Client::try_from(config.clone()).unwrap(), "default");
        let post = PostParams::default();

        // Leading: requests go through, and the connection stays in the pool.
        fence.extend(Instant::now(), Duration::from_secs(10));
        fenced.create(&post, &lease("early")).await.unwrap();
        fenced.list(&ListParams::default()).await.unwrap();

        // The lease expired (as for a process stopped with a request already in its HTTP
        // stack): the pooled connection refuses the request's bytes.
        fence.close();
        let refused = fenced.create(&post, &lease("late")).await.unwrap_err();
        assert!(refused_by_the_fence(&refused), "{refused:?}");
        assert!(unfenced.get_opt("late").await.unwrap().is_none());
        assert!(unfenced.get_opt("early").await.unwrap().is_some());

        // Leading again (a new acquire): the client works again on new connections.
        fence.extend(Instant::now(), Duration::from_secs(10));
        fenced.create(&post, &lease("again")).await.unwrap();
        sim.shutdown().await;
    }
}
