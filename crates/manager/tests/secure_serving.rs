//! The secure port end to end: the manager (`run_with_hooks`, from real flags) serves HTTPS on
//! 127.0.0.1 with delegated authentication and authorization against the in-process sim, which
//! answers TokenReviews and SubjectAccessReviews from its token table and allow rules. Requests
//! go over real TCP and TLS, with bearer tokens and client certificates minted here.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use manager::ControllerRegistry;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::{
    ClientConfig, RootCertStore,
    pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName},
};
use sim::{AllowRule, AuthConfig, SimCluster, SimConfig, SimUser};

mod support;

use support::{RunningManager, send_with_headers, start_manager};

const SCRAPER_TOKEN: &str = "scraper-token";
const NOBODY_TOKEN: &str = "nobody-token";

/// ServiceAccounts, as the API server's TokenReview names them: (token, namespace, name).
const UNBOUND_SA: (&str, &str, &str) = ("unbound-sa-token", "monitoring", "unbound");
/// Bound to the metrics-reader role (deploy/base/rbac.yaml's `kcm-rs-metrics-reader`).
const METRICS_READER_SA: (&str, &str, &str) =
    ("metrics-reader-sa-token", "monitoring", "prometheus-k8s");
/// Bound to a role allowing `get` on `/configz`.
const CONFIGZ_READER_SA: (&str, &str, &str) =
    ("configz-reader-sa-token", "kube-system", "configz-reader");

/// The user name of a ServiceAccount.
fn service_account_user((_, namespace, name): (&str, &str, &str)) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

/// Registers the ServiceAccount's token as the API server would authenticate it.
fn add_service_account(auth: &mut AuthConfig, account: (&str, &str, &str)) {
    let (token, namespace, _) = account;
    auth.tokens.insert(
        token.to_string(),
        SimUser {
            name: service_account_user(account),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_string(),
            ],
        },
    );
}

/// What a ClusterRoleBinding of `account` to a role with `get` on `paths` lets it do.
fn bind(auth: &mut AuthConfig, account: (&str, &str, &str), paths: &[&str]) {
    bind_verb(auth, account, "get", paths);
}

/// What a ClusterRoleBinding of `account` to a role with `verb` on `paths` lets it do.
fn bind_verb(auth: &mut AuthConfig, account: (&str, &str, &str), verb: &str, paths: &[&str]) {
    for path in paths {
        auth.allow.push(AllowRule {
            subject: service_account_user(account),
            group: false,
            verb: verb.to_string(),
            path: path.to_string(),
        });
    }
}

/// The methods a role may grant on a non-resource path; each has a ServiceAccount of its own
/// in kube-system, allowed that method's verb on `/configz` and nothing else.
const CONFIGZ_METHODS: [http::Method; 7] = [
    http::Method::GET,
    http::Method::HEAD,
    http::Method::POST,
    http::Method::PUT,
    http::Method::PATCH,
    http::Method::DELETE,
    http::Method::OPTIONS,
];

/// The token and ServiceAccount name allowed only `verb` on `/configz`.
fn configz_verb_account(verb: &str) -> (String, String) {
    (format!("configz-{verb}-token"), format!("configz-{verb}"))
}

/// A CA and what it signs.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
    der: CertificateDer<'static>,
}

impl Ca {
    fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("CA");
        Self {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
            der: cert.der().clone(),
        }
    }

    /// (certificate PEM, certificate DER, key) of a leaf.
    fn sign(
        &self,
        names: &[&str],
        common_name: &str,
        organizations: &[&str],
        usage: ExtendedKeyUsagePurpose,
    ) -> Leaf {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        for organization in organizations {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *organization);
        }
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        Leaf {
            pem: cert.pem(),
            der: cert.der().clone(),
            key_pem: key.serialize_pem(),
            key_der: key.serialize_der(),
        }
    }

    fn client(&self, common_name: &str, organizations: &[&str]) -> Leaf {
        self.sign(
            &[],
            common_name,
            organizations,
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }
}

struct Leaf {
    pem: String,
    der: CertificateDer<'static>,
    key_pem: String,
    key_der: Vec<u8>,
}

/// The sim, its kubeconfig and the files the manager's flags point at.
struct Fixture {
    sim: Option<SimCluster>,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    server_ca: Ca,
    client_ca: Ca,
    front_proxy_ca: Ca,
}

impl Fixture {
    async fn start() -> Self {
        let mut auth = AuthConfig::default();
        auth.add_token(&format!("{SCRAPER_TOKEN}=scraper:monitoring"))
            .expect("token");
        auth.add_token(&format!("{NOBODY_TOKEN}=nobody"))
            .expect("token");
        for rule in [
            "scraper:get:/metrics",
            "cert-user:get:/metrics",
            "proxied:get:*",
        ] {
            auth.allow.push(rule.parse().expect("rule"));
        }
        for account in [UNBOUND_SA, METRICS_READER_SA, CONFIGZ_READER_SA] {
            add_service_account(&mut auth, account);
        }
        // The rules of deploy/base/rbac.yaml's kcm-rs-metrics-reader.
        bind(&mut auth, METRICS_READER_SA, &["/metrics", "/shadow"]);
        bind(&mut auth, CONFIGZ_READER_SA, &["/configz"]);
        for method in CONFIGZ_METHODS {
            let verb = method.as_str().to_lowercase();
            let (token, name) = configz_verb_account(&verb);
            let account = (token.as_str(), "kube-system", name.as_str());
            add_service_account(&mut auth, account);
            bind_verb(&mut auth, account, &verb, &["/configz"]);
        }
        let sim = SimCluster::start(SimConfig {
            auth,
            ..SimConfig::default()
        })
        .await
        .expect("sim");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let fixture = Self {
            sim: Some(sim),
            dir,
            kubeconfig,
            server_ca: Ca::new("serving-ca"),
            client_ca: Ca::new("client-ca"),
            front_proxy_ca: Ca::new("front-proxy-ca"),
        };
        let serving = fixture.server_ca.sign(
            &["127.0.0.1", "localhost"],
            "kcm-rs",
            &[],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        fixture.write("serving.crt", &serving.pem);
        fixture.write("serving.key", &serving.key_pem);
        fixture.write("client-ca.crt", &fixture.client_ca.pem);
        fixture.write("front-proxy-ca.crt", &fixture.front_proxy_ca.pem);
        fixture
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write");
        path
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn sim(&self) -> &SimCluster {
        self.sim.as_ref().expect("sim running")
    }

    /// Flags of a manager serving HTTPS with every delegated authenticator configured.
    fn secure_flags(&self) -> Vec<String> {
        vec![
            format!("--tls-cert-file={}", self.path("serving.crt")),
            format!("--tls-private-key-file={}", self.path("serving.key")),
            format!("--client-ca-file={}", self.path("client-ca.crt")),
            format!(
                "--requestheader-client-ca-file={}",
                self.path("front-proxy-ca.crt")
            ),
            "--requestheader-allowed-names=front-proxy".to_string(),
            format!("--authentication-kubeconfig={}", self.kubeconfig.display()),
            format!("--authorization-kubeconfig={}", self.kubeconfig.display()),
        ]
    }

    async fn manager(&self, flags: &[String]) -> RunningManager {
        start_manager(&self.kubeconfig, ControllerRegistry::new(), flags).await
    }

    /// A fixture and a manager run with its [`Fixture::secure_flags`].
    async fn with_secure_manager() -> (Self, RunningManager) {
        let fixture = Self::start().await;
        let manager = fixture.manager(&fixture.secure_flags()).await;
        (fixture, manager)
    }
}

/// How a request authenticates.
#[derive(Default, Clone)]
struct Credentials<'a> {
    token: Option<&'a str>,
    certificate: Option<&'a Leaf>,
    headers: Vec<(&'a str, &'a str)>,
}

/// A bearer `token` and nothing else.
fn bearer(token: &str) -> Credentials<'_> {
    Credentials {
        token: Some(token),
        ..Credentials::default()
    }
}

/// A GET over HTTPS (trusting `server_ca`) or plain HTTP (`server_ca` None):
/// `Err` when the connection or handshake fails.
async fn get(
    addr: SocketAddr,
    server_ca: Option<&Ca>,
    path: &str,
    credentials: &Credentials<'_>,
) -> Result<(u16, String), String> {
    let (code, _, body) = request(addr, server_ca, http::Method::GET, path, credentials).await?;
    Ok((code, body))
}

/// [`get`] with any method, answering the headers too.
async fn request(
    addr: SocketAddr,
    server_ca: Option<&Ca>,
    method: http::Method,
    path: &str,
    credentials: &Credentials<'_>,
) -> Result<(u16, http::HeaderMap, String), String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|error| error.to_string())?;
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, "127.0.0.1");
    if let Some(token) = credentials.token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    for (name, value) in &credentials.headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Empty::<Bytes>::new()).expect("request");
    let response = match server_ca {
        Some(ca) => {
            let tls = tls_connector(ca, credentials.certificate)
                .connect(ServerName::IpAddress(addr.ip().into()), tcp)
                .await
                .map_err(|error| error.to_string())?;
            send_with_headers(TokioIo::new(tls), request).await?
        }
        None => send_with_headers(TokioIo::new(tcp), request).await?,
    };
    Ok(response)
}

/// [`get`] where the request must be answered: the status code and body.
async fn answer(
    addr: SocketAddr,
    server_ca: Option<&Ca>,
    path: &str,
    credentials: &Credentials<'_>,
) -> (u16, String) {
    get(addr, server_ca, path, credentials)
        .await
        .unwrap_or_else(|error| panic!("GET {path}: {error}"))
}

fn tls_connector(server_ca: &Ca, certificate: Option<&Leaf>) -> tokio_rustls::TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(server_ca.der.clone()).expect("root");
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots);
    let config = match certificate {
        Some(leaf) => builder
            .with_client_auth_cert(
                vec![leaf.der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf.key_der.clone())),
            )
            .expect("client certificate"),
        None => builder.with_no_client_auth(),
    };
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// The `message` of a `Status` body.
fn status_message(body: &str) -> String {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|status| status["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("not a Status: {body}"))
}

fn reviews(sim: &SimCluster) -> (u64, u64) {
    let accounting = sim.accounting();
    (
        accounting.count("create", "tokenreviews"),
        accounting.count("create", "subjectaccessreviews"),
    )
}

#[tokio::test]
async fn anonymous_requests_reach_health_but_not_metrics() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let anonymous = Credentials::default();
    let ca = Some(&fixture.server_ca);

    let (code, body) = answer(manager.addr, ca, "/metrics", &anonymous).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status_message(&body),
        r#"forbidden: User "system:anonymous" cannot get path "/metrics""#
    );
    let (code, body) = answer(manager.addr, ca, "/healthz", &anonymous).await;
    assert_eq!((code, body.as_str()), (200, "ok"));
    for path in ["/livez", "/readyz"] {
        let (code, body) = answer(manager.addr, ca, path, &anonymous).await;
        assert_ne!(code, 403, "{path} is always allowed: {body}");
    }
    let (code, _) = answer(manager.addr, ca, "/healthz/leaderElection", &anonymous).await;
    assert_eq!(
        code, 403,
        "only the exact always-allowed paths skip authorization"
    );
    // Anonymous requests are authorized by the API server; the sim allows nothing to them.
    assert_eq!(reviews(fixture.sim()), (0, 2));
}

#[tokio::test]
async fn tokens_are_reviewed_by_the_api_server() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);

    let (code, body) = answer(manager.addr, ca, "/metrics", &bearer("garbage")).await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(status_message(&body), "Unauthorized");
    let (code, _) = answer(manager.addr, ca, "/healthz", &bearer("garbage")).await;
    assert_eq!(code, 401, "a bad token is not anonymous, even on /healthz");

    let (code, body) = answer(manager.addr, ca, "/metrics", &bearer(SCRAPER_TOKEN)).await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("# TYPE rest_client_requests_total counter"),
        "{body}"
    );

    let (code, body) = answer(manager.addr, ca, "/metrics", &bearer(NOBODY_TOKEN)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status_message(&body),
        r#"forbidden: User "nobody" cannot get path "/metrics""#
    );
    // garbage (once: the negative answer is cached), scraper, nobody.
    assert_eq!(reviews(fixture.sim()).0, 3);
}

#[tokio::test]
async fn client_certificates_name_the_user() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let certificate = |leaf| Credentials {
        certificate: Some(leaf),
        ..Credentials::default()
    };

    let allowed = fixture.client_ca.client("cert-user", &["team"]);
    let (code, body) = answer(manager.addr, ca, "/metrics", &certificate(&allowed)).await;
    assert_eq!(code, 200, "{body}");

    let stranger = fixture.client_ca.client("cert-stranger", &["team"]);
    let (code, body) = answer(manager.addr, ca, "/metrics", &certificate(&stranger)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status_message(&body),
        r#"forbidden: User "cert-stranger" cannot get path "/metrics""#
    );

    let foreign = Ca::new("someone-else").client("cert-user", &[]);
    let answer = get(manager.addr, ca, "/metrics", &certificate(&foreign)).await;
    assert!(
        !matches!(answer, Ok((200, _))),
        "a certificate from an unknown CA must not authenticate: {answer:?}"
    );
    assert_eq!(
        reviews(fixture.sim()).0,
        0,
        "certificates need no TokenReview"
    );
}

#[tokio::test]
async fn front_proxy_headers_need_an_allowed_proxy_certificate() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let proxy = fixture.front_proxy_ca.client("front-proxy", &[]);
    let headers = vec![("X-Remote-User", "proxied"), ("X-Remote-Group", "viewers")];
    let via = |leaf| Credentials {
        certificate: Some(leaf),
        headers: headers.clone(),
        ..Credentials::default()
    };
    let (code, body) = answer(manager.addr, ca, "/metrics", &via(&proxy)).await;
    assert_eq!(code, 200, "{body}");

    let other_proxy = fixture.front_proxy_ca.client("not-the-proxy", &[]);
    let (code, body) = answer(manager.addr, ca, "/metrics", &via(&other_proxy)).await;
    assert_eq!(code, 401, "CN not in --requestheader-allowed-names: {body}");

    let client = fixture.client_ca.client("cert-stranger", &[]);
    let (code, body) = answer(manager.addr, ca, "/metrics", &via(&client)).await;
    assert_eq!(
        code, 403,
        "headers from a non-proxy client are ignored; the certificate's user counts: {body}"
    );
    assert!(
        status_message(&body).contains(r#"User "cert-stranger""#),
        "{body}"
    );
}

#[tokio::test]
async fn scrapes_within_the_ttl_cost_one_review_each() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let scraper = bearer(SCRAPER_TOKEN);
    let started = Instant::now();
    let burst =
        futures::future::join_all((0..20).map(|_| get(manager.addr, ca, "/metrics", &scraper)))
            .await;
    for answer in burst {
        assert_eq!(answer.expect("GET").0, 200);
    }
    for _ in 0..80 {
        let (code, body) = answer(manager.addr, ca, "/metrics", &scraper).await;
        assert_eq!(code, 200, "{body}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(reviews(fixture.sim()), (1, 1), "100 scrapes within the TTL");
}

#[tokio::test]
async fn nothing_is_served_without_the_api_server() {
    let (mut fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    if let Some(sim) = fixture.sim.take() {
        sim.shutdown().await;
    }
    let anonymous = Credentials::default();
    let scraper = bearer(SCRAPER_TOKEN);
    for credentials in [&anonymous, &scraper] {
        let (code, body) = answer(manager.addr, ca, "/metrics", credentials).await;
        assert!(code == 401 || code == 403, "{code}: {body}");
    }
    let (code, _) = answer(manager.addr, ca, "/metrics", &scraper).await;
    assert_eq!(code, 401, "a failed TokenReview is not cached as a user");
    let (code, _) = answer(manager.addr, ca, "/healthz", &anonymous).await;
    assert_eq!(code, 200, "always-allowed paths need no API server");
}

#[tokio::test]
async fn without_delegated_kubeconfigs_only_allowed_paths_pass() {
    let fixture = Fixture::start().await;
    let flags = vec![
        format!("--tls-cert-file={}", fixture.path("serving.crt")),
        format!("--tls-private-key-file={}", fixture.path("serving.key")),
    ];
    let manager = fixture.manager(&flags).await;
    let ca = Some(&fixture.server_ca);
    let scraper = bearer(SCRAPER_TOKEN);
    let (code, body) = answer(manager.addr, ca, "/metrics", &scraper).await;
    assert_eq!(
        code, 403,
        "tokens are not checked without an API server: {body}"
    );
    let (code, _) = answer(manager.addr, ca, "/healthz", &scraper).await;
    assert_eq!(code, 200);
    assert_eq!(reviews(fixture.sim()), (0, 0));
}

#[tokio::test]
async fn plain_http_applies_tokens_and_reviews() {
    let fixture = Fixture::start().await;
    let kubeconfig = fixture.kubeconfig.display();
    let manager = fixture
        .manager(&[
            "--plain-http".to_string(),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
        ])
        .await;
    assert!(manager.addr.ip().is_loopback());
    let scraper = bearer(SCRAPER_TOKEN);
    let (code, _) = answer(manager.addr, None, "/metrics", &Credentials::default()).await;
    assert_eq!(code, 403);
    let (code, body) = answer(manager.addr, None, "/metrics", &scraper).await;
    assert_eq!(code, 200, "{body}");

    let open = fixture
        .manager(&[
            "--plain-http".to_string(),
            "--bind-address=0.0.0.0".to_string(),
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics".to_string(),
        ])
        .await;
    assert!(
        open.addr.ip().is_loopback(),
        "--plain-http binds loopback only"
    );
    let (code, _) = answer(open.addr, None, "/metrics", &Credentials::default()).await;
    assert_eq!(code, 200);
}

/// Asserts that `code` and `body` are the 403 upstream answers `user` on `/configz`.
fn assert_configz_forbidden(code: u16, body: &str, user: &str) {
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        status_message(body),
        format!(r#"forbidden: User "{user}" cannot get path "/configz""#)
    );
}

/// What a fresh secure manager answers to `GET /configz` with `credentials`: the status code
/// and body, and the fixture, for the reviews the request cost.
async fn configz_as(credentials: Credentials<'static>) -> (Fixture, u16, String) {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let (code, body) = answer(
        manager.addr,
        Some(&fixture.server_ca),
        "/configz",
        &credentials,
    )
    .await;
    (fixture, code, body)
}

#[tokio::test]
async fn configz_forbids_anonymous_requests() {
    let (fixture, code, body) = configz_as(Credentials::default()).await;
    assert_configz_forbidden(code, &body, "system:anonymous");
    assert_eq!(reviews(fixture.sim()), (0, 1));
}

#[tokio::test]
async fn configz_rejects_a_bad_token() {
    let (fixture, code, body) = configz_as(bearer("garbage")).await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(status_message(&body), "Unauthorized");
    assert_eq!(
        reviews(fixture.sim()),
        (1, 0),
        "no authorization without a user"
    );
}

#[tokio::test]
async fn configz_forbids_a_service_account_without_a_binding() {
    let (_fixture, code, body) = configz_as(bearer(UNBOUND_SA.0)).await;
    assert_configz_forbidden(code, &body, &service_account_user(UNBOUND_SA));
}

#[tokio::test]
async fn configz_is_not_in_the_metrics_reader_role() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let reader = bearer(METRICS_READER_SA.0);
    let (code, body) = answer(manager.addr, ca, "/metrics", &reader).await;
    assert_eq!(code, 200, "the role's own path: {body}");
    let (code, body) = answer(manager.addr, ca, "/configz", &reader).await;
    assert_configz_forbidden(code, &body, &service_account_user(METRICS_READER_SA));
}

#[tokio::test]
async fn configz_serves_a_service_account_allowed_to_get_it() {
    let fixture = Fixture::start().await;
    let mut flags = fixture.secure_flags();
    flags.extend(
        [
            "--concurrent-deployment-syncs=7",
            "--kube-api-qps=12.5",
            "--min-resync-period=90m",
            "--statefulset-recover-grace=45s",
            // The controllers' flags come with their descriptors; none of them runs here (a
            // list without `*` enables only the controllers it names without a dash).
            "--controllers=-replicaset",
        ]
        .map(String::from),
    );
    let registry = manager::default_registry().expect("registry");
    let manager = start_manager(&fixture.kubeconfig, registry, &flags).await;
    let (code, headers, body) = request(
        manager.addr,
        Some(&fixture.server_ca),
        http::Method::GET,
        "/configz",
        &bearer(CONFIGZ_READER_SA.0),
    )
    .await
    .expect("GET /configz");
    assert_eq!(code, 200, "{body}");
    assert_eq!(headers[http::header::CONTENT_TYPE], "application/json");
    assert_eq!(headers[http::header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    let configz: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let upstream = &configz["kubecontrollermanager.config.k8s.io"];
    assert_eq!(
        upstream["DeploymentController"]["ConcurrentDeploymentSyncs"],
        7
    );
    assert_eq!(upstream["ReplicaSetController"]["ConcurrentRSSyncs"], 5);
    let generic = &upstream["Generic"];
    assert_eq!(generic["MinResyncPeriod"], "1h30m0s");
    assert_eq!(generic["ClientConnection"]["QPS"], 12.5);
    assert_eq!(
        generic["ClientConnection"]["Kubeconfig"],
        fixture.kubeconfig.display().to_string()
    );
    assert_eq!(generic["LeaderElection"]["LeaderElect"], false);
    assert_eq!(generic["LeaderElection"]["ResourceName"], "kcm-rs");
    let kcm_rs = &configz["kcm-rs.io/flags"];
    assert_eq!(kcm_rs["statefulset-recover-grace"], "45s");
    assert_eq!(kcm_rs["secure-port"], manager.addr.port());
    assert_eq!(kcm_rs["bind-address"], "127.0.0.1");
    assert_eq!(
        kcm_rs["authorization-kubeconfig"],
        fixture.kubeconfig.display().to_string()
    );
    // The review asked for `get` on `/configz`: the only rule of this account is exactly that.
    assert_eq!(reviews(fixture.sim()), (1, 1));
}

#[tokio::test]
async fn configz_serves_system_masters_whatever_the_method() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let admin = fixture.client_ca.client("admin", &["system:masters"]);
    let masters = Credentials {
        certificate: Some(&admin),
        ..Credentials::default()
    };
    let (code, body) = answer(manager.addr, ca, "/configz", &masters).await;
    assert_eq!(code, 200, "{body}");
    let configz: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        configz["kubecontrollermanager.config.k8s.io"]["Generic"]["Controllers"],
        serde_json::json!(["*"])
    );
    // Upstream's configz handler ignores the method: once authorized, every method gets the
    // configuration (HEAD without the body).
    let (code, headers, posted) =
        request(manager.addr, ca, http::Method::POST, "/configz", &masters)
            .await
            .expect("POST /configz");
    assert_eq!((code, posted.as_str()), (200, body.as_str()));
    assert_eq!(headers[http::header::CONTENT_TYPE], "application/json");
    let (code, headers, head) = request(manager.addr, ca, http::Method::HEAD, "/configz", &masters)
        .await
        .expect("HEAD /configz");
    assert_eq!((code, head.as_str()), (200, ""));
    assert_eq!(headers[http::header::CONTENT_TYPE], "application/json");
    assert_eq!(
        reviews(fixture.sim()),
        (0, 0),
        "system:masters needs no review"
    );
}

/// Upstream authorizes a request to a non-resource path with its method in lower case as the
/// verb (`RequestInfoFactory.NewRequestInfo`): a role granting one verb on `/configz` lets that
/// method through and no other, and the 403 names the verb the request asked for.
#[tokio::test]
async fn each_method_is_authorized_as_its_own_verb() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    for method in CONFIGZ_METHODS {
        let verb = method.as_str().to_lowercase();
        let (token, name) = configz_verb_account(&verb);
        let user = service_account_user(("", "kube-system", &name));
        let (code, _, body) = request(
            manager.addr,
            ca,
            method.clone(),
            "/configz",
            &bearer(&token),
        )
        .await
        .unwrap_or_else(|error| panic!("{method} /configz: {error}"));
        assert_eq!(code, 200, "{method} by {user}, allowed {verb}: {body}");
        let other = if method == http::Method::GET {
            http::Method::POST
        } else {
            http::Method::GET
        };
        let (code, _, body) = request(manager.addr, ca, other.clone(), "/configz", &bearer(&token))
            .await
            .unwrap_or_else(|error| panic!("{other} /configz: {error}"));
        assert_eq!(
            (code, status_message(&body)),
            (
                403,
                format!(
                    r#"forbidden: User "{user}" cannot {} path "/configz""#,
                    other.as_str().to_lowercase()
                )
            ),
            "{other} by {user}, allowed only {verb}"
        );
    }
}

/// The status codes of every endpoint per kind of caller, as upstream's secure port answers
/// them (issue 29: measured against kube-controller-manager v1.28.4 for all but `/livez` and
/// `/readyz`, which upstream only allow-lists and kcm-rs serves).
#[tokio::test]
async fn every_endpoint_answers_each_kind_of_caller_as_upstream() {
    let (fixture, manager) = Fixture::with_secure_manager().await;
    let ca = Some(&fixture.server_ca);
    let admin = fixture.client_ca.client("admin", &["system:masters"]);
    let callers = [
        ("anonymous", Credentials::default()),
        ("a bad token", bearer("garbage")),
        ("a ServiceAccount without a binding", bearer(UNBOUND_SA.0)),
        ("the metrics reader", bearer(METRICS_READER_SA.0)),
        (
            "system:masters",
            Credentials {
                certificate: Some(&admin),
                ..Credentials::default()
            },
        ),
    ];
    // Per path, the code for each caller above, in order. `/shadow` exists only in shadow
    // mode: authorized callers get 404 here.
    let table: [(&str, [u16; 5]); 6] = [
        ("/metrics", [403, 401, 403, 200, 200]),
        ("/configz", [403, 401, 403, 403, 200]),
        ("/healthz", [200, 401, 200, 200, 200]),
        ("/livez", [200, 401, 200, 200, 200]),
        ("/readyz", [200, 401, 200, 200, 200]),
        ("/shadow", [403, 401, 403, 404, 404]),
    ];
    for (path, codes) in table {
        for ((who, credentials), want) in callers.iter().zip(codes) {
            let (code, body) = answer(manager.addr, ca, path, credentials).await;
            assert_eq!(code, want, "{path} for {who}: {body}");
        }
    }
}
