//! Delegated authentication and authorization on the secure port, as upstream
//! kube-controller-manager configures k8s.io/apiserver's `DelegatingAuthenticationOptions` and
//! `DelegatingAuthorizationOptions`: `/metrics` must not be readable by anyone who can reach
//! the port, so every request is authenticated (front-proxy headers, client certificate,
//! bearer token via TokenReview, else anonymous) and then authorized (`system:masters`,
//! `--authorization-always-allow-paths`, else a SubjectAccessReview) before a handler runs.
//!
//! Answers follow upstream: 401 `Unauthorized` when presented credentials do not authenticate,
//! 403 `forbidden: User "…" cannot get path "/metrics"` when authorization does not allow.
//! Unlike upstream, which answers 500 when a SubjectAccessReview fails, a failed review is a
//! 403 here; either way nothing is served without an answer from the API server. A failed
//! review is not retried with upstream's webhook backoff (kube's client still retries 429 and
//! 503), and is not cached, so the next request asks again. The client CA and front-proxy
//! settings are read once at start, not watched.
//!
//! With `--plain-http` (loopback only) there is no TLS, so no client certificates; bearer
//! tokens and SubjectAccessReviews work as over HTTPS.

pub mod authn;
pub mod authz;
mod cache;
pub mod tls;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    config::{KubeConfigOptions, Kubeconfig},
};
use rustls::pki_types::{CertificateDer, pem::PemObject};
use serde_json::json;

pub use authn::{Authenticator, AuthnError, RequestHeaderConfig, TokenReviewer, UserInfo};
pub use authz::{
    AlwaysAllowPaths, Authorizer, AuthzError, Decision, SubjectAccessReviewer, verb_for,
};

use crate::{
    options::{Options, OptionsError},
    rest_client::{ClientError, ClientFactory, RestClientMetrics},
};

/// How long one TokenReview or SubjectAccessReview may take (upstream's client timeout).
pub(crate) const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// Where upstream publishes the cluster's client CA and front-proxy configuration.
const AUTHENTICATION_CONFIGMAP_NAMESPACE: &str = "kube-system";
/// The ConfigMap's name.
const AUTHENTICATION_CONFIGMAP_NAME: &str = "extension-apiserver-authentication";

/// Client-side rate limit of the review clients (upstream: QPS 200, burst 400).
const REVIEW_CLIENT_QPS: f32 = 200.0;
/// See [`REVIEW_CLIENT_QPS`].
const REVIEW_CLIENT_BURST: u32 = 400;

/// The client's TLS certificate chain (leaf first), as a request extension; absent with plain
/// HTTP, empty when the client sent none.
#[derive(Debug, Clone, Default)]
pub struct PeerCertificates(pub Arc<[CertificateDer<'static>]>);

impl PeerCertificates {
    /// (leaf, intermediates), if the client sent a certificate.
    pub fn chain(&self) -> Option<(&CertificateDer<'static>, &[CertificateDer<'static>])> {
        self.0.split_first()
    }
}

/// Delegated authentication or authorization could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum DelegatedAuthError {
    /// A CA file could not be read or holds no certificate.
    #[error("reading {path}: {message}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// CA data from the ConfigMap is not PEM certificates.
    #[error("{key} in configmap/{AUTHENTICATION_CONFIGMAP_NAME}: {message}")]
    CaData {
        /// The ConfigMap key.
        key: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A certificate verifier could not be built from a CA.
    #[error("building the client certificate verifier: {0}")]
    Verifier(String),
    /// A delegated kubeconfig could not be loaded.
    #[error("{flag}: {message}")]
    Kubeconfig {
        /// The flag naming it.
        flag: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The review client could not be built.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The in-cluster authentication ConfigMap could not be read.
    #[error(
        "unable to load configmap based request-header-client-ca-file: {0} (set --authentication-tolerate-lookup-failure to start anyway)"
    )]
    Lookup(String),
    /// An invalid `--authorization-always-allow-paths`.
    #[error(transparent)]
    Options(#[from] OptionsError),
}

/// The authenticator and authorizer in front of every endpoint.
pub struct DelegatedAuth {
    authenticator: Authenticator,
    authorizer: Authorizer,
    client_cas: Vec<CertificateDer<'static>>,
}

impl DelegatedAuth {
    /// From explicit parts; `client_cas` are the CAs the TLS handshake accepts client
    /// certificates from (every CA the authenticator verifies against).
    pub fn new(
        authenticator: Authenticator,
        authorizer: Authorizer,
        client_cas: Vec<CertificateDer<'static>>,
    ) -> Self {
        Self {
            authenticator,
            authorizer,
            client_cas,
        }
    }

    /// From the flags, as upstream's `ApplyTo`: review clients from the delegated kubeconfigs
    /// (else in-cluster configuration, else none), CAs from the flags, missing ones from the
    /// `kube-system/extension-apiserver-authentication` ConfigMap.
    pub async fn from_options(
        options: &Options,
        metrics: &RestClientMetrics,
    ) -> Result<Self, DelegatedAuthError> {
        let paths = AlwaysAllowPaths::parse(&options.authorization_always_allow_paths)?;
        let authn_client = delegated_client(
            options.authentication_kubeconfig.as_deref(),
            "--authentication-kubeconfig",
            "delegated-authentication",
            metrics,
        )
        .await?;
        let authz_client = delegated_client(
            options.authorization_kubeconfig.as_deref(),
            "--authorization-kubeconfig",
            "delegated-authorization",
            metrics,
        )
        .await?;
        if authn_client.is_none() {
            tracing::warn!(
                "no --authentication-kubeconfig and not in a cluster: bearer tokens will not be accepted"
            );
        }
        if authz_client.is_none() {
            tracing::warn!(
                "no --authorization-kubeconfig and not in a cluster: only --authorization-always-allow-paths and system:masters are allowed"
            );
        }

        let (client_cas, request_header) = if options.plain_http {
            (Vec::new(), None)
        } else {
            certificate_sources(options, authn_client.as_ref()).await?
        };
        let client_ca = match client_cas.is_empty() {
            true => None,
            false => Some(tls::client_verifier(&client_cas, false)?),
        };
        let mut handshake_cas = client_cas;
        let request_header = match request_header {
            Some(source) => {
                handshake_cas.extend(source.cas.iter().cloned());
                Some(RequestHeaderConfig {
                    verifier: tls::client_verifier(&source.cas, false)?,
                    allowed_names: source.allowed_names,
                    username_headers: source.username_headers,
                    group_headers: source.group_headers,
                    extra_headers_prefixes: source.extra_headers_prefixes,
                })
            }
            None => None,
        };
        tracing::info!(
            client_certificates = client_ca.is_some(),
            front_proxy = request_header.is_some(),
            token_review = authn_client.is_some(),
            subject_access_review = authz_client.is_some(),
            always_allow_paths = ?options.authorization_always_allow_paths,
            "delegated authentication and authorization configured"
        );
        let tokens = authn_client.map(|client| {
            TokenReviewer::new(client, options.authentication_token_webhook_cache_ttl)
        });
        let reviewer = authz_client.map(|client| {
            SubjectAccessReviewer::new(
                client,
                options.authorization_webhook_cache_authorized_ttl,
                options.authorization_webhook_cache_unauthorized_ttl,
            )
        });
        Ok(Self::new(
            Authenticator::new(request_header, client_ca, tokens),
            Authorizer::new(paths, reviewer),
            handshake_cas,
        ))
    }

    /// CAs the TLS handshake should accept client certificates from; empty: ask for none.
    pub fn client_cas(&self) -> &[CertificateDer<'static>] {
        &self.client_cas
    }
}

/// Front-proxy settings before the verifier is built.
struct RequestHeaderSource {
    cas: Vec<CertificateDer<'static>>,
    allowed_names: Vec<String>,
    username_headers: Vec<String>,
    group_headers: Vec<String>,
    extra_headers_prefixes: Vec<String>,
}

/// Client CAs and front-proxy settings from the flags, missing ones from the ConfigMap.
async fn certificate_sources(
    options: &Options,
    authn_client: Option<&kube::Client>,
) -> Result<(Vec<CertificateDer<'static>>, Option<RequestHeaderSource>), DelegatedAuthError> {
    let mut client_cas = match &options.client_ca_file {
        Some(path) => read_ca_file(path)?,
        None => Vec::new(),
    };
    let mut request_header = match &options.requestheader_client_ca_file {
        Some(path) => Some(RequestHeaderSource {
            cas: read_ca_file(path)?,
            allowed_names: non_empty(&options.requestheader_allowed_names),
            username_headers: non_empty(&options.requestheader_username_headers),
            group_headers: non_empty(&options.requestheader_group_headers),
            extra_headers_prefixes: non_empty(&options.requestheader_extra_headers_prefix),
        }),
        None => None,
    };
    let missing = options.client_ca_file.is_none() || request_header.is_none();
    if !missing || options.authentication_skip_lookup {
        return Ok((client_cas, request_header));
    }
    let Some(client) = authn_client else {
        tracing::warn!(
            "no authentication-kubeconfig to look up configmap/{AUTHENTICATION_CONFIGMAP_NAME} in {AUTHENTICATION_CONFIGMAP_NAMESPACE}: client certificate authentication is limited to the flags"
        );
        return Ok((client_cas, request_header));
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), AUTHENTICATION_CONFIGMAP_NAMESPACE);
    let looked_up = match api.get_opt(AUTHENTICATION_CONFIGMAP_NAME).await {
        Ok(configmap) => configmap
            .and_then(|configmap| configmap.data)
            .map(|data| lookup_sources(&data))
            .transpose(),
        Err(error) => Err(DelegatedAuthError::Lookup(error.to_string())),
    };
    match looked_up {
        Ok(Some((cluster_client_cas, cluster_request_header))) => {
            if options.client_ca_file.is_none() {
                client_cas = cluster_client_cas;
            }
            if request_header.is_none() {
                request_header = cluster_request_header;
            }
        }
        Ok(None) => {}
        Err(error) if options.authentication_tolerate_lookup_failure => {
            tracing::warn!(%error, "error looking up in-cluster authentication configuration; continuing without it, which may treat all requests as anonymous");
        }
        Err(error) => return Err(error),
    }
    Ok((client_cas, request_header))
}

/// Client CAs and front-proxy settings from the ConfigMap's data.
fn lookup_sources(
    data: &std::collections::BTreeMap<String, String>,
) -> Result<(Vec<CertificateDer<'static>>, Option<RequestHeaderSource>), DelegatedAuthError> {
    let client_cas = match data.get("client-ca-file").filter(|pem| !pem.is_empty()) {
        Some(pem) => parse_ca_data("client-ca-file", pem)?,
        None => Vec::new(),
    };
    let request_header = match data
        .get("requestheader-client-ca-file")
        .filter(|pem| !pem.is_empty())
    {
        Some(pem) => {
            let list = |key: &'static str| -> Result<Vec<String>, DelegatedAuthError> {
                match data.get(key).filter(|value| !value.is_empty()) {
                    Some(value) => serde_json::from_str::<Vec<String>>(value)
                        .map(|values| non_empty(&values))
                        .map_err(|error| DelegatedAuthError::Lookup(format!("{key}: {error}"))),
                    None => Ok(Vec::new()),
                }
            };
            Some(RequestHeaderSource {
                cas: parse_ca_data("requestheader-client-ca-file", pem)?,
                allowed_names: list("requestheader-allowed-names")?,
                username_headers: list("requestheader-username-headers")?,
                group_headers: list("requestheader-group-headers")?,
                extra_headers_prefixes: list("requestheader-extra-headers-prefix")?,
            })
        }
        None => None,
    };
    Ok((client_cas, request_header))
}

fn non_empty(values: &[String]) -> Vec<String> {
    values
        .iter()
        .map(|value| value.trim())
        .filter(|value| !value.is_empty())
        .map(str::to_string)
        .collect()
}

fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, DelegatedAuthError> {
    let error = |message: String| DelegatedAuthError::CaFile {
        path: path.to_path_buf(),
        message,
    };
    let pem = std::fs::read(path).map_err(|source| error(source.to_string()))?;
    let cas = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| error(source.to_string()))?;
    if cas.is_empty() {
        return Err(error("no PEM certificate found".to_string()));
    }
    Ok(cas)
}

fn parse_ca_data(
    key: &'static str,
    pem: &str,
) -> Result<Vec<CertificateDer<'static>>, DelegatedAuthError> {
    let cas = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| DelegatedAuthError::CaData {
            key,
            message: error.to_string(),
        })?;
    if cas.is_empty() {
        return Err(DelegatedAuthError::CaData {
            key,
            message: "no PEM certificate found".to_string(),
        });
    }
    Ok(cas)
}

/// A review client from `kubeconfig`, else from the in-cluster configuration, else none (as
/// upstream with `RemoteKubeConfigFileOptional`).
async fn delegated_client(
    kubeconfig: Option<&Path>,
    flag: &'static str,
    client_name: &str,
    metrics: &RestClientMetrics,
) -> Result<Option<kube::Client>, DelegatedAuthError> {
    let error = |message: String| DelegatedAuthError::Kubeconfig { flag, message };
    let mut config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path).map_err(|e| error(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| error(e.to_string()))?
        }
        None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() => return Ok(None),
        None => match kube::Config::incluster() {
            Ok(config) => config,
            Err(e) => {
                tracing::warn!(error = %e, flag, "failed to read in-cluster configuration for delegated auth");
                return Ok(None);
            }
        },
    };
    config.connect_timeout = Some(REVIEW_TIMEOUT);
    config.read_timeout = Some(REVIEW_TIMEOUT);
    let factory = ClientFactory::new(
        config,
        REVIEW_CLIENT_QPS,
        REVIEW_CLIENT_BURST,
        metrics.clone(),
    )?;
    Ok(Some(factory.client(client_name)?))
}

/// The axum middleware: authenticate, authorize, then run the handler.
pub async fn authenticate_and_authorize(
    State(auth): State<Arc<DelegatedAuth>>,
    mut request: Request,
    next: Next,
) -> Response {
    let peer = request.extensions().get::<PeerCertificates>().cloned();
    let user = match auth
        .authenticator
        .authenticate(request.headers_mut(), peer.as_ref())
        .await
    {
        Ok(Some(user)) => user,
        Ok(None) => UserInfo::anonymous(),
        Err(error) => {
            match error {
                AuthnError::Review(_) => {
                    tracing::warn!(%error, path = request.uri().path(), "unable to authenticate the request")
                }
                _ => {
                    tracing::debug!(%error, path = request.uri().path(), "unable to authenticate the request")
                }
            }
            return unauthorized();
        }
    };
    let verb = verb_for(request.method());
    let path = request.uri().path().to_string();
    match auth.authorizer.authorize(&user, &verb, &path).await {
        Ok(Decision::Allow) => next.run(request).await,
        Ok(Decision::Deny(reason)) => {
            tracing::debug!(user = %user.name, %verb, %path, %reason, "forbidden");
            forbidden(&user.name, &verb, &path, &reason)
        }
        Err(error) => {
            tracing::warn!(%error, user = %user.name, %verb, %path, "authorization failed; forbidding");
            forbidden(&user.name, &verb, &path, "")
        }
    }
}

/// Upstream's 401: a `Status` with message `Unauthorized`.
fn unauthorized() -> Response {
    status_response(
        StatusCode::UNAUTHORIZED,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401
        }),
    )
}

/// Upstream's 403 for a non-resource request.
fn forbidden(user: &str, verb: &str, path: &str, reason: &str) -> Response {
    let mut message = format!("forbidden: User {user:?} cannot {verb} path {path:?}");
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    status_response(
        StatusCode::FORBIDDEN,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "Forbidden",
            "details": {},
            "code": 403
        }),
    )
}

fn status_response(code: StatusCode, status: serde_json::Value) -> Response {
    let mut response = (code, status.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn configmap_data_is_read_like_upstream() {
        let ca = rcgen::generate_simple_self_signed(vec!["ca".to_string()]).expect("ca");
        let pem = ca.cert.pem();
        let data: BTreeMap<String, String> = [
            ("client-ca-file", pem.as_str()),
            ("requestheader-client-ca-file", pem.as_str()),
            ("requestheader-allowed-names", r#"["front-proxy-client"]"#),
            ("requestheader-username-headers", r#"["X-Remote-User"]"#),
            ("requestheader-group-headers", r#"["X-Remote-Group"]"#),
            (
                "requestheader-extra-headers-prefix",
                r#"["X-Remote-Extra-"]"#,
            ),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
        let (client_cas, request_header) = lookup_sources(&data).expect("valid");
        assert_eq!(client_cas.len(), 1);
        let request_header = request_header.expect("front proxy");
        assert_eq!(request_header.cas.len(), 1);
        assert_eq!(request_header.allowed_names, vec!["front-proxy-client"]);
        assert_eq!(request_header.username_headers, vec!["X-Remote-User"]);
        assert_eq!(request_header.group_headers, vec!["X-Remote-Group"]);
        assert_eq!(
            request_header.extra_headers_prefixes,
            vec!["X-Remote-Extra-"]
        );

        let (none, no_proxy) = lookup_sources(&BTreeMap::new()).expect("empty");
        assert!(none.is_empty() && no_proxy.is_none());
        let mut bad = data.clone();
        bad.insert("requestheader-allowed-names".into(), "front-proxy".into());
        assert!(matches!(
            lookup_sources(&bad),
            Err(DelegatedAuthError::Lookup(_))
        ));
        let mut not_pem = data;
        not_pem.insert("client-ca-file".into(), "garbage".into());
        assert!(matches!(
            lookup_sources(&not_pem),
            Err(DelegatedAuthError::CaData { .. })
        ));
    }

    async fn status_of(response: Response) -> (StatusCode, serde_json::Value) {
        let code = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("body");
        (code, serde_json::from_slice(&body).expect("JSON status"))
    }

    #[tokio::test]
    async fn answers_are_upstream_statuses() {
        let (code, status) = status_of(forbidden("system:anonymous", "get", "/metrics", "")).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
        assert_eq!(
            status["message"],
            r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
        );
        assert_eq!(status["reason"], "Forbidden");
        let (_, status) = status_of(forbidden("bob", "post", "/x", "no rule")).await;
        assert_eq!(
            status["message"],
            r#"forbidden: User "bob" cannot post path "/x": no rule"#
        );
        let (code, status) = status_of(unauthorized()).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED);
        assert_eq!(status["message"], "Unauthorized");
        assert_eq!(status["code"], 401);
    }
}
