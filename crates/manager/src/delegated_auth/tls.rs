//! The TLS side of client-certificate authentication: the handshake asks for a certificate
//! from any CA authentication trusts, but lets clients without one in (they may still send a
//! bearer token or be anonymous); the acceptor hands the verified chain to the request
//! handlers as a [`PeerCertificates`] extension.

use std::{io, sync::Arc};

use axum::{Extension, middleware::AddExtension};
use axum_server::{accept::Accept, tls_rustls::RustlsAcceptor};
use futures::future::BoxFuture;
use rustls::{
    RootCertStore,
    pki_types::CertificateDer,
    server::{WebPkiClientVerifier, danger::ClientCertVerifier},
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::server::TlsStream;
use tower::Layer;

use super::{DelegatedAuthError, PeerCertificates};

/// A verifier accepting certificates that chain to one of `cas`; with `optional`, clients
/// without a certificate are accepted too.
pub fn client_verifier(
    cas: &[CertificateDer<'static>],
    optional: bool,
) -> Result<Arc<dyn ClientCertVerifier>, DelegatedAuthError> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        roots
            .add(ca.clone())
            .map_err(|error| DelegatedAuthError::Verifier(error.to_string()))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        Arc::new(rustls::crypto::ring::default_provider()),
    );
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|error| DelegatedAuthError::Verifier(error.to_string()))
}

/// axum-server's rustls acceptor, plus the client's certificate chain as a request extension.
#[derive(Clone)]
pub struct ClientCertAcceptor {
    inner: RustlsAcceptor,
}

impl ClientCertAcceptor {
    /// Wraps the TLS acceptor.
    pub fn new(inner: RustlsAcceptor) -> Self {
        Self { inner }
    }
}

impl<I, S> Accept<I, S> for ClientCertAcceptor
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: Send + 'static,
{
    type Stream = TlsStream<I>;
    type Service = AddExtension<S, PeerCertificates>;
    type Future = BoxFuture<'static, io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        let handshake = self.inner.accept(stream, service);
        Box::pin(async move {
            let (stream, service) = handshake.await?;
            let chain: Vec<CertificateDer<'static>> = stream
                .get_ref()
                .1
                .peer_certificates()
                .map(|chain| chain.iter().map(|cert| cert.clone().into_owned()).collect())
                .unwrap_or_default();
            Ok((
                stream,
                Extension(PeerCertificates(chain.into())).layer(service),
            ))
        })
    }
}
