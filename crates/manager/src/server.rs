//! The manager's HTTP endpoints: `/metrics`, `/healthz`, `/healthz/<name>`, `/livez`, `/readyz`.
//!
//! HTTPS on `--secure-port` as upstream, with the given certificate or an in-memory self-signed
//! one for `localhost`/`127.0.0.1`; plain HTTP only with `--plain-http`.

use std::{collections::HashMap, net::SocketAddr, path::PathBuf};

use axum::{
    Router,
    extract::{Path, Query, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use axum_server::{Handle, tls_rustls::RustlsConfig};
use prometheus::{Encoder, Registry, TextEncoder};
use tokio_util::sync::CancellationToken;

use crate::health::Health;

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

#[derive(Clone)]
struct AppState {
    health: Health,
    registry: Registry,
}

/// Builds the router; public so tests can drive it without a socket.
pub fn router(health: Health, registry: Registry) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/livez", get(healthz))
        .route("/healthz/{name}", get(healthz_one))
        .route("/readyz", get(readyz))
        .with_state(AppState { health, registry })
}

/// Binds `addr` and serves until `shutdown`; returns the bound address once listening.
pub async fn serve(
    addr: SocketAddr,
    serving: Serving,
    health: Health,
    registry: Registry,
    shutdown: CancellationToken,
) -> Result<SocketAddr, ServerError> {
    let app = router(health, registry);
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
    match serving {
        Serving::PlainHttp => {
            let server = axum_server::from_tcp(listener)
                .map_err(|source| ServerError::Io { addr, source })?
                .handle(handle);
            tokio::spawn(async move {
                if let Err(error) = server.serve(service).await {
                    tracing::error!(%error, "metrics and health server stopped");
                }
            });
        }
        Serving::TlsFiles { .. } | Serving::TlsSelfSigned => {
            let config = tls_config(&serving).await?;
            let server = axum_server::tls_rustls::from_tcp_rustls(listener, config)
                .map_err(|source| ServerError::Io { addr, source })?
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

async fn tls_config(serving: &Serving) -> Result<RustlsConfig, ServerError> {
    // kube and this server share rustls; the first to install the ring provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match serving {
        Serving::TlsFiles { cert, key } => RustlsConfig::from_pem_file(cert, key)
            .await
            .map_err(|error| ServerError::Tls(error.to_string())),
        _ => {
            let certified = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ])
            .map_err(|error| ServerError::Tls(error.to_string()))?;
            RustlsConfig::from_pem(
                certified.cert.pem().into_bytes(),
                certified.signing_key.serialize_pem().into_bytes(),
            )
            .await
            .map_err(|error| ServerError::Tls(error.to_string()))
        }
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let mut buffer = Vec::new();
    match TextEncoder::new().encode(&state.registry.gather(), &mut buffer) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], buffer).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

async fn healthz(
    State(state): State<AppState>,
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

async fn healthz_one(State(state): State<AppState>, Path(name): Path<String>) -> Response {
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

async fn readyz(State(state): State<AppState>) -> Response {
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
