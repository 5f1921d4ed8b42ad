//! Delegated authentication in upstream's order (`DelegatingAuthenticatorConfig.New`): front-proxy
//! request headers behind a certificate from `--requestheader-client-ca-file`, then a client
//! certificate from `--client-ca-file` (user = CN, groups = O), then a bearer token checked with
//! a TokenReview (`authentication.k8s.io/v1`), cached for
//! `--authentication-token-webhook-cache-ttl`. The first that succeeds wins; if none does but
//! one failed, the request is unauthorized; with no credentials at all it is anonymous.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use http::HeaderMap;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::{Api, PostParams};
use rustls::{
    pki_types::{CertificateDer, UnixTime},
    server::danger::ClientCertVerifier,
};

use super::{PeerCertificates, REVIEW_TIMEOUT, cache::ReviewCache};

/// The user name of requests without credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of requests without credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The group every authenticated user gets.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Who made a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub name: String,
    /// UID, when the authenticator knows one.
    pub uid: Option<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra attributes (front-proxy extra headers, TokenReview extra).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// `system:anonymous` in `system:unauthenticated`.
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS_USER.to_string(),
            groups: vec![UNAUTHENTICATED_GROUP.to_string()],
            ..Self::default()
        }
    }

    /// Adds `system:authenticated`, as upstream's authenticated-group adder does.
    fn with_authenticated_group(mut self) -> Self {
        if !self
            .groups
            .iter()
            .any(|group| group == AUTHENTICATED_GROUP || group == UNAUTHENTICATED_GROUP)
        {
            self.groups.push(AUTHENTICATED_GROUP.to_string());
        }
        self
    }
}

/// Credentials were presented but did not authenticate.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AuthnError {
    /// The client certificate did not verify against the CA of that authenticator.
    #[error("verifying client certificate: {0}")]
    Certificate(String),
    /// The front-proxy certificate's CN is not in `--requestheader-allowed-names`.
    #[error("x509: subject with cn={0} is not in the allowed list")]
    NotAllowedName(String),
    /// The TokenReview said the token is not valid.
    #[error("invalid bearer token{}", .0.as_deref().map(|reason| format!(": {reason}")).unwrap_or_default())]
    InvalidToken(Option<String>),
    /// The TokenReview could not be made.
    #[error("TokenReview failed: {0}")]
    Review(String),
    /// Several authenticators failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    All(Vec<AuthnError>),
}

/// Front-proxy configuration (`--requestheader-*` or the in-cluster ConfigMap).
#[derive(Clone)]
pub struct RequestHeaderConfig {
    /// Verifies the front proxy's certificate against the requestheader CA.
    pub verifier: Arc<dyn ClientCertVerifier>,
    /// Allowed common names of the front proxy; empty allows any.
    pub allowed_names: Vec<String>,
    /// Headers with the user name; the first non-empty wins.
    pub username_headers: Vec<String>,
    /// Headers with the groups; every value of each counts.
    pub group_headers: Vec<String>,
    /// Prefixes of headers with extra attributes.
    pub extra_headers_prefixes: Vec<String>,
}

impl std::fmt::Debug for RequestHeaderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHeaderConfig")
            .field("allowed_names", &self.allowed_names)
            .field("username_headers", &self.username_headers)
            .field("group_headers", &self.group_headers)
            .field("extra_headers_prefixes", &self.extra_headers_prefixes)
            .finish_non_exhaustive()
    }
}

impl RequestHeaderConfig {
    /// The user named by the headers, removing them; `None` without a user name header.
    pub fn user_from_headers(&self, headers: &mut HeaderMap) -> Option<UserInfo> {
        let name = self
            .username_headers
            .iter()
            .filter_map(|header| headers.get(header.as_str()))
            .filter_map(|value| value.to_str().ok())
            .find(|value| !value.is_empty())?
            .to_string();
        let mut groups = Vec::new();
        for header in &self.group_headers {
            groups.extend(
                headers
                    .get_all(header.as_str())
                    .iter()
                    .filter_map(|value| value.to_str().ok())
                    .filter(|value| !value.is_empty())
                    .map(str::to_string),
            );
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut extra_headers = Vec::new();
        for prefix in &self.extra_headers_prefixes {
            let prefix = prefix.to_ascii_lowercase();
            for (header, value) in headers.iter() {
                let Some(key) = header.as_str().strip_prefix(prefix.as_str()) else {
                    continue;
                };
                if let Ok(value) = value.to_str() {
                    extra
                        .entry(unescape_extra_key(key))
                        .or_default()
                        .push(value.to_string());
                }
                extra_headers.push(header.clone());
            }
        }
        for header in self.username_headers.iter().chain(&self.group_headers) {
            headers.remove(header.as_str());
        }
        for header in extra_headers {
            headers.remove(header);
        }
        Some(UserInfo {
            name,
            uid: None,
            groups,
            extra,
        })
    }
}

/// Extra keys are percent-encoded in header names (`url.PathUnescape` upstream); a malformed
/// escape keeps the key as it is.
fn unescape_extra_key(encoded: &str) -> String {
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = encoded
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok());
            match hex {
                Some(byte) => {
                    decoded.push(byte);
                    index += 3;
                    continue;
                }
                None => return encoded.to_string(),
            }
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    String::from_utf8(decoded).unwrap_or_else(|_| encoded.to_string())
}

/// The bearer token of an `Authorization` header, as upstream's bearer token authenticator
/// reads it: `Bearer <token>`, scheme case-insensitive; anything else is no token.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Checks bearer tokens with TokenReviews, caching the answers.
pub struct TokenReviewer {
    client: kube::Client,
    ttl: Duration,
    cache: ReviewCache<[u8; 32], Option<UserInfo>, AuthnError>,
}

impl TokenReviewer {
    /// A reviewer using `client`, keeping answers (valid or not) for `ttl`.
    pub fn new(client: kube::Client, ttl: Duration) -> Self {
        Self {
            client,
            ttl,
            cache: ReviewCache::default(),
        }
    }

    /// The user `token` belongs to. Tokens are cached by their SHA-256, never kept in memory.
    async fn authenticate(&self, token: &str) -> Result<UserInfo, AuthnError> {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut key = [0u8; 32];
        key.copy_from_slice(digest.as_ref());
        let api: Api<TokenReview> = Api::all(self.client.clone());
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let ttl = self.ttl;
        let answer = self
            .cache
            .get_or_review(key, move || async move {
                let answer = tokio::time::timeout(
                    REVIEW_TIMEOUT,
                    api.create(&PostParams::default(), &review),
                )
                .await
                .map_err(|_| AuthnError::Review("timed out".to_string()))?
                .map_err(|error| AuthnError::Review(error.to_string()))?;
                let status = answer.status.unwrap_or_default();
                let user = match (status.authenticated, status.user) {
                    (Some(true), Some(user)) => Some(UserInfo {
                        name: user.username.unwrap_or_default(),
                        uid: user.uid,
                        groups: user.groups.unwrap_or_default(),
                        extra: user.extra.unwrap_or_default(),
                    }),
                    _ => {
                        if let Some(error) = status.error.filter(|error| !error.is_empty()) {
                            tracing::debug!(%error, "TokenReview did not authenticate the token");
                        }
                        None
                    }
                };
                Ok((user, ttl))
            })
            .await?;
        answer.ok_or(AuthnError::InvalidToken(None))
    }
}

/// The authenticator chain of the secure port.
#[derive(Default)]
pub struct Authenticator {
    request_header: Option<RequestHeaderConfig>,
    client_ca: Option<Arc<dyn ClientCertVerifier>>,
    tokens: Option<TokenReviewer>,
}

impl Authenticator {
    /// The chain from its optional parts.
    pub fn new(
        request_header: Option<RequestHeaderConfig>,
        client_ca: Option<Arc<dyn ClientCertVerifier>>,
        tokens: Option<TokenReviewer>,
    ) -> Self {
        Self {
            request_header,
            client_ca,
            tokens,
        }
    }

    /// Whether any client certificate can authenticate (the TLS server then asks for one).
    pub fn wants_client_certificates(&self) -> bool {
        self.request_header.is_some() || self.client_ca.is_some()
    }

    /// The user of a request: `Ok(None)` without credentials (anonymous), `Err` when
    /// credentials were presented and none authenticated. Consumed credentials (front-proxy
    /// headers, a valid `Authorization` header) are removed from `headers`.
    pub async fn authenticate(
        &self,
        headers: &mut HeaderMap,
        peer: Option<&PeerCertificates>,
    ) -> Result<Option<UserInfo>, AuthnError> {
        let mut errors = Vec::new();
        let chain = peer.and_then(|peer| peer.chain());
        if let (Some(config), Some((leaf, intermediates))) = (&self.request_header, chain) {
            match verify(config.verifier.as_ref(), leaf, intermediates).and_then(|()| {
                let name = subject(leaf).0;
                if config.allowed_names.is_empty() || config.allowed_names.contains(&name) {
                    Ok(())
                } else {
                    Err(AuthnError::NotAllowedName(name))
                }
            }) {
                Ok(()) => {
                    if let Some(user) = config.user_from_headers(headers) {
                        return Ok(Some(user.with_authenticated_group()));
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        if let (Some(verifier), Some((leaf, intermediates))) = (&self.client_ca, chain) {
            match verify(verifier.as_ref(), leaf, intermediates) {
                Ok(()) => {
                    let (name, groups) = subject(leaf);
                    if !name.is_empty() {
                        return Ok(Some(
                            UserInfo {
                                name,
                                groups,
                                ..UserInfo::default()
                            }
                            .with_authenticated_group(),
                        ));
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        if let (Some(tokens), Some(token)) = (&self.tokens, bearer_token(headers)) {
            match tokens.authenticate(token).await {
                Ok(user) => {
                    headers.remove(http::header::AUTHORIZATION);
                    return Ok(Some(user.with_authenticated_group()));
                }
                Err(error) => errors.push(error),
            }
        }
        match errors.len() {
            0 => Ok(None),
            1 => Err(errors.remove(0)),
            _ => Err(AuthnError::All(errors)),
        }
    }
}

fn verify(
    verifier: &dyn ClientCertVerifier,
    leaf: &CertificateDer<'static>,
    intermediates: &[CertificateDer<'static>],
) -> Result<(), AuthnError> {
    verifier
        .verify_client_cert(leaf, intermediates, UnixTime::now())
        .map(|_| ())
        .map_err(|error| AuthnError::Certificate(error.to_string()))
}

/// (CN, O values) of a certificate's subject; like Go's `pkix.Name`, the last CN counts.
pub fn subject(certificate: &CertificateDer<'_>) -> (String, Vec<String>) {
    let Ok((_, parsed)) = x509_parser::parse_x509_certificate(certificate.as_ref()) else {
        return (String::new(), Vec::new());
    };
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .filter_map(|attribute| attribute.as_str().ok())
        .last()
        .unwrap_or_default()
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|attribute| attribute.as_str().ok())
        .map(str::to_string)
        .collect();
    (name, groups)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn header_config() -> RequestHeaderConfig {
        let mut roots = rustls::RootCertStore::empty();
        let ca = rcgen::generate_simple_self_signed(vec!["ca".to_string()]).expect("ca");
        roots.add(ca.cert.der().clone()).expect("root");
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .expect("verifier");
        RequestHeaderConfig {
            verifier,
            allowed_names: Vec::new(),
            username_headers: vec!["x-remote-user".into(), "x-user".into()],
            group_headers: vec!["x-remote-group".into()],
            extra_headers_prefixes: vec!["X-Remote-Extra-".into()],
        }
    }

    #[test]
    fn request_headers_name_the_user() {
        let config = header_config();
        let mut headers = HeaderMap::new();
        headers.insert("x-remote-user", HeaderValue::from_static(""));
        headers.insert("x-user", HeaderValue::from_static("alice"));
        headers.append("x-remote-group", HeaderValue::from_static("ops"));
        headers.append("x-remote-group", HeaderValue::from_static(""));
        headers.append("x-remote-group", HeaderValue::from_static("dev"));
        headers.append("x-remote-extra-scopes", HeaderValue::from_static("a"));
        headers.append("x-remote-extra-scopes", HeaderValue::from_static("b"));
        headers.append(
            "x-remote-extra-example.org%2fteam",
            HeaderValue::from_static("blue"),
        );
        headers.insert("accept", HeaderValue::from_static("*/*"));
        let user = config.user_from_headers(&mut headers).expect("user");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, vec!["ops", "dev"]);
        assert_eq!(user.extra["scopes"], vec!["a", "b"]);
        assert_eq!(user.extra["example.org/team"], vec!["blue"]);
        assert_eq!(headers.len(), 1, "authentication headers are removed");

        let mut no_user = HeaderMap::new();
        no_user.insert("x-remote-group", HeaderValue::from_static("ops"));
        assert_eq!(config.user_from_headers(&mut no_user), None);
    }

    #[test]
    fn extra_keys_are_unescaped() {
        assert_eq!(unescape_extra_key("plain"), "plain");
        assert_eq!(unescape_extra_key("a%2fb%2Fc"), "a/b/c");
        assert_eq!(unescape_extra_key("bad%zz"), "bad%zz");
        assert_eq!(unescape_extra_key("cut%2"), "cut%2");
    }

    #[test]
    fn bearer_tokens_are_read_like_upstream() {
        let token = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::AUTHORIZATION, HeaderValue::from_static(value));
            bearer_token(&headers).map(str::to_string)
        };
        assert_eq!(token("Bearer abc"), Some("abc".into()));
        assert_eq!(token("bearer abc"), Some("abc".into()));
        assert_eq!(token("  Bearer abc  "), Some("abc".into()));
        assert_eq!(token("Bearer"), None);
        assert_eq!(token("Bearer  abc"), None);
        assert_eq!(token("Basic abc"), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn certificate_subject_is_the_user() {
        let mut params = rcgen::CertificateParams::new(Vec::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "ops");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        assert_eq!(subject(cert.der()), ("alice".into(), vec!["ops".into()]));
    }

    #[test]
    fn groups_get_authenticated() {
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["ops".into()],
            ..UserInfo::default()
        }
        .with_authenticated_group();
        assert_eq!(user.groups, vec!["ops", "system:authenticated"]);
        let anonymous = UserInfo::anonymous().with_authenticated_group();
        assert_eq!(anonymous.groups, vec!["system:unauthenticated"]);
    }
}
