//! The manager's HTTP endpoints: `/metrics`, `/configz`, `/healthz`, `/healthz/<name>`, `/livez`,
//! `/readyz`, and `/shadow` in shadow mode.
//!
//! HTTPS on `--secure-port` as upstream, with the given certificate or an in-memory self-signed
//! one for `localhost`/`127.0.0.1`; plain HTTP only with `--plain-http`, on loopback only.
//! Every request goes through delegated authentication and authorization first
//! ([`crate::delegated_auth`]).

use std::{collections::HashMap, net::SocketAddr, path::PathBuf, sync::Arc};

use axum::{
    Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::{any, get},
};
use axum_server::{
    Handle,
    tls_rustls::{RustlsAcceptor, RustlsConfig},
};
use prometheus::{Encoder, Registry, TextEncoder};
use rustls::{
    ServerConfig,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject},
};
use shadow::Shadow;
use tokio_util::sync::CancellationToken;

use crate::{
    configz::Configz,
    delegated_auth::{
        DelegatedAuth, authenticate_and_authorize,
        tls::{ClientCertAcceptor, client_verifier},
    },
    health::Health,
};

/// How the endpoints are served.
#[derive(Debug, Clone)]
pub enum Serving {
    /// Plain HTTP (explicitly asked for).
    PlainHttp,
    /// HTTPS with a certificate and key from files.
    TlsFiles {
        /// PEM certificate chain.
        cert: PathBuf,
        /// PEM private key.
        key: PathBuf,
    },
    /// HTTPS with a self-signed certificate made at start-up.
    TlsSelfSigned,
}

/// The server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Binding or serving failed.
    #[error("serving on {addr}: {source}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The certificate could not be loaded or generated.
    #[error("TLS setup: {0}")]
    Tls(String),
}

/// What the endpoints serve.
#[derive(Clone)]
pub struct Endpoints {
    /// `/healthz`, `/healthz/<name>`, `/livez`, `/readyz`.
    pub health: Health,
    /// `/metrics`.
    pub registry: Registry,
    /// `/shadow`, in shadow mode.
    pub shadow: Option<Shadow>,
    /// `/configz`.
    pub configz: Arc<Configz>,
}

/// Builds the router, every route (and the 404 fallback) behind `auth`; `/shadow` answers only
/// in shadow mode.
pub fn router(endpoints: Endpoints, auth: Arc<DelegatedAuth>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/configz", any(configz))
        .route("/shadow", get(shadow_report))
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/healthz/{name}", get(healthz_one))
        .route("/readyz", get(readyz))
        .with_state(endpoints)
        .layer(middleware::from_fn_with_state(
            auth,
            authenticate_and_authorize,
        ))
}

/// Binds `addr` and serves until `shutdown`; returns the bound address once listening.
pub async fn serve(
    addr: SocketAddr,
    serving: Serving,
    auth: Arc<DelegatedAuth>,
    endpoints: Endpoints,
    shutdown: CancellationToken,
) -> Result<SocketAddr, ServerError> {
    let config = match serving {
        Serving::PlainHttp => None,
        _ => Some(tls_config(&serving, auth.client_cas())?),
    };
    let app = router(endpoints, auth);
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServerError::Io { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServerError::Io { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServerError::Io { addr, source })?;
    let handle: Handle<SocketAddr> = Handle::new();
    let stop_handle = handle.clone();
    tokio::spawn(async move {
        shutdown.cancelled().await;
        stop_handle.graceful_shutdown(Some(std::time::Duration::from_secs(1)));
    });
    let service = app.into_make_service();
    match config {
        None => {
            let server = axum_server::from_tcp(listener)
                .map_err(|source| ServerError::Io { addr, source })?
                .handle(handle);
            tokio::spawn(async move {
                if let Err(error) = server.serve(service).await {
                    tracing::error!(%error, "metrics and health server stopped");
                }
            });
        }
        Some(config) => {
            let acceptor = ClientCertAcceptor::new(RustlsAcceptor::new(RustlsConfig::from_config(
                Arc::new(config),
            )));
            let server = axum_server::from_tcp(listener)
                .map_err(|source| ServerError::Io { addr, source })?
                .acceptor(acceptor)
                .handle(handle);
            tokio::spawn(async move {
                if let Err(error) = server.serve(service).await {
                    tracing::error!(%error, "metrics and health server stopped");
                }
            });
        }
    }
    Ok(bound)
}

/// The rustls configuration: the serving certificate, and client certificates requested (but
/// optional) when `client_cas` is not empty.
fn tls_config(
    serving: &Serving,
    client_cas: &[CertificateDer<'static>],
) -> Result<ServerConfig, ServerError> {
    // kube and this server share rustls; the first to install the ring provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = |error: &dyn std::fmt::Display| ServerError::Tls(error.to_string());
    let (chain, key) = match serving {
        Serving::TlsFiles { cert, key } => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|error| ServerError::Tls(format!("{}: {error}", cert.display())))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|error| ServerError::Tls(format!("{}: {error}", key.display())))?;
            (chain, key)
        }
        _ => {
            let certified = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ])
            .map_err(|error| tls(&error))?;
            let key = PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
            (vec![certified.cert.der().clone()], key.into())
        }
    };
    let builder =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| tls(&error))?;
    let builder = if client_cas.is_empty() {
        builder.with_no_client_auth()
    } else {
        builder.with_client_cert_verifier(
            client_verifier(client_cas, true).map_err(|error| tls(&error))?,
        )
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|error| tls(&error))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

async fn metrics(State(state): State<Endpoints>) -> Response {
    let mut buffer = Vec::new();
    match TextEncoder::new().encode(&state.registry.gather(), &mut buffer) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], buffer).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

/// The effective configuration as JSON, as upstream's configz handler answers: whatever the
/// method (authorization has already checked the request's verb), `application/json` with
/// `X-Content-Type-Options: nosniff`, and a plain-text 500 if it cannot be marshalled.
async fn configz(State(state): State<Endpoints>) -> Response {
    match serde_json::to_vec(&*state.configz) {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            body,
        )
            .into_response(),
        Err(error) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            format!("error marshaling json: {error}\n"),
        )
            .into_response(),
    }
}

/// The shadow report as JSON; 404 (as an unknown path) when not in shadow mode.
async fn shadow_report(State(state): State<Endpoints>) -> Response {
    match &state.shadow {
        Some(shadow) => axum::Json(shadow.report()).into_response(),
        None => (StatusCode::NOT_FOUND, "404 page not found").into_response(),
    }
}

async fn healthz(
    State(state): State<Endpoints>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let verbose = query.contains_key("verbose");
    let exclude: Vec<String> = query.get("exclude").cloned().into_iter().collect();
    let report = state.health.report(verbose, &exclude);
    let status = if report.healthy {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    (status, report.body).into_response()
}

async fn healthz_one(State(state): State<Endpoints>, Path(name): Path<String>) -> Response {
    match state.health.check(&name) {
        Some(Ok(())) => (StatusCode::OK, "ok").into_response(),
        Some(Err(_)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal server error: check failed",
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "404 page not found").into_response(),
    }
}

async fn readyz(State(state): State<Endpoints>) -> Response {
    if state.health.is_ready() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {:?}", state.health.readiness()),
        )
            .into_response()
    }
}
