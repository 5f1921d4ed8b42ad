//! Command-line options: upstream kube-controller-manager's flag names and defaults for what
//! kcm-rs does, plus the upstream flags that mean nothing here, accepted with one warning each
//! so that an upstream manifest runs unchanged.

use std::{net::IpAddr, path::PathBuf, time::Duration};

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};

use crate::controller_flags::ControllerFlags;
use crate::feature_gates::{EnabledGates, FeatureGateError, parse_feature_gates};
use crate::go_duration::parse_go_duration;
use crate::registry::ControllerRegistry;

/// kube-controller-manager for Deployments, ReplicaSets and StatefulSets.
#[derive(Debug, Clone, Parser)]
#[command(name = "kube-controller-manager", version, about)]
pub struct Options {
    /// Controllers to enable: `*` for all on by default, `name` to enable, `-name` to disable;
    /// the first entry naming a controller wins.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// Each registered controller's flags (`--concurrent-<name>-syncs` and its own settings),
    /// added from the descriptors by [`Options::parse_with`].
    #[arg(skip)]
    pub controller_flags: ControllerFlags,

    /// Path to a kubeconfig; empty with no --master means in-cluster configuration.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// API server URL; overrides the kubeconfig's server.
    #[arg(long)]
    pub master: Option<String>,
    /// Client-side queries per second, per client (upstream: per controller).
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Client-side burst, per client.
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Request content type. kcm-rs always speaks JSON; protobuf is accepted and logged.
    #[arg(long, default_value = "application/vnd.kubernetes.protobuf")]
    pub kube_api_content_type: String,
    /// Resync of the shared informers is random in [min, 2*min).
    #[arg(long, default_value = "12h", value_parser = parse_go_duration)]
    pub min_resync_period: Duration,
    /// Delay between starting controllers (jittered by up to 100%).
    #[arg(long, default_value = "0", value_parser = parse_go_duration)]
    pub controller_start_interval: Duration,

    /// Run leader election on a Lease before starting controllers.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// How long non-leaders wait after the last observed renewal before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_go_duration)]
    pub leader_elect_lease_duration: Duration,
    /// The leader gives up if it cannot renew within this.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// Interval between acquire and renew attempts.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration)]
    pub leader_elect_retry_period: Duration,
    /// Lock type; only `leases` is supported, as upstream.
    #[arg(long, default_value = "leases")]
    pub leader_elect_resource_lock: String,
    /// Lease name. kcm-rs defaults to its own name so it can run beside upstream:
    /// `kcm-rs`, or `kcm-rs-shadow` with `--shadow` (see [`Options::lease_name`]).
    #[arg(long)]
    pub leader_elect_resource_name: Option<String>,
    /// Lease namespace.
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    /// kcm-rs only: a standby builds its controllers and keeps their informers synced while it
    /// campaigns (no worker, no write), and on winning the Lease starts its workers once its
    /// caches hold every write made before (the read barrier), instead of listing everything
    /// then. It watches the Lease, so it takes over as soon as it is released or expires.
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub leader_elect_warm_standby: bool,
    /// Whether a warm standby that wins the Lease waits at the read barrier before its
    /// workers start. Always true from the command line; tests turn it off to show what the
    /// barrier prevents.
    #[arg(skip = true)]
    pub leader_elect_read_barrier: bool,

    /// Address the HTTPS endpoints listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Port of the HTTPS endpoints; 0 disables serving.
    #[arg(long, default_value_t = 10257)]
    pub secure_port: u16,
    /// Serving certificate (PEM); without it a self-signed one is generated in memory.
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,
    /// Serving key (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,
    /// kcm-rs only: serve plain HTTP instead of HTTPS on --secure-port, on loopback only
    /// (for local runs). No client certificates; bearer tokens and SubjectAccessReviews still
    /// apply when the delegated kubeconfigs are given.
    #[arg(long, default_value_t = false)]
    pub plain_http: bool,

    /// kubeconfig of the API server that answers TokenReviews; empty means in-cluster
    /// configuration, and without either bearer tokens are not accepted.
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// How long TokenReview answers are cached.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub authentication_token_webhook_cache_ttl: Duration,
    /// Do not look up missing client-CA and front-proxy configuration in the ConfigMap
    /// kube-system/extension-apiserver-authentication.
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub authentication_skip_lookup: bool,
    /// Start even if that ConfigMap cannot be read (requests may then be anonymous).
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub authentication_tolerate_lookup_failure: bool,
    /// CA bundle (PEM) that client certificates are verified against; user = CN, groups = O.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// CA bundle (PEM) of front proxies; a verified front-proxy certificate makes the
    /// request headers below authoritative.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Common names a front-proxy certificate may have; empty allows any.
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Headers carrying the user name, first non-empty wins.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-user")]
    pub requestheader_username_headers: Vec<String>,
    /// Headers carrying the groups.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-group")]
    pub requestheader_group_headers: Vec<String>,
    /// Header prefixes carrying extra user information.
    #[arg(long, value_delimiter = ',', default_value = "x-remote-extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// kubeconfig of the API server that answers SubjectAccessReviews; empty means in-cluster
    /// configuration, and without either only the always-allowed paths and groups pass.
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Paths served without authorization; a trailing `*` matches a prefix.
    #[arg(long, value_delimiter = ',', default_value = "/healthz,/readyz,/livez")]
    pub authorization_always_allow_paths: Vec<String>,
    /// How long an allowing SubjectAccessReview answer is cached.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long a denying SubjectAccessReview answer is cached.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,

    /// Feature gates, `Name=bool,...`: the gates a registered controller follows are acted on
    /// (`MaxUnavailableStatefulSet`); other controllers' gates are accepted with a warning (see
    /// `feature_gates`).
    #[arg(long, default_value = "")]
    pub feature_gates: String,

    /// kcm-rs only: shadow mode. Run the controllers beside upstream's, send no write for the
    /// workloads (the Lease and the authn/authz reviews are the only writes), and report where
    /// the settled cluster differs from what kcm-rs would have written (`/shadow`, the
    /// `shadow_*` metrics, one log line per divergence).
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub shadow: bool,
    /// kcm-rs only: how long an object must stay unchanged before shadow mode compares it.
    #[arg(long, default_value = "5s", value_parser = parse_go_duration)]
    pub shadow_settle: Duration,

    /// Log verbosity (upstream klog levels; 0-2 info, 3-4 debug, 5+ trace).
    #[arg(long = "v", short = 'v', default_value_t = 0)]
    pub verbosity: u8,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LoggingFormat::Text)]
    pub logging_format: LoggingFormat,
}

/// `--logging-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoggingFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Options that fail validation before anything starts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OptionsError {
    /// Lease timings upstream would reject.
    #[error(
        "leader election timings invalid: need lease-duration > renew-deadline > 1.2 x retry-period > 0"
    )]
    LeaderElectionTimings,
    /// A lock type other than leases.
    #[error("--leader-elect-resource-lock={0}: only \"leases\" is supported")]
    ResourceLock(String),
    /// Only one of the certificate and key files was given.
    #[error("--tls-cert-file and --tls-private-key-file must be given together")]
    HalfCertificate,
    /// An always-allowed path with a `*` that is not trailing.
    #[error("--authorization-always-allow-paths: only a trailing * is allowed in {0:?}")]
    AlwaysAllowPath(String),
    /// A `--feature-gates` value upstream would reject too.
    #[error("--feature-gates: {0}")]
    FeatureGates(#[from] FeatureGateError),
    /// A warm standby without leader election: there is no standby.
    #[error("--leader-elect-warm-standby needs --leader-elect")]
    WarmStandbyWithoutLeaderElection,
}

impl Options {
    /// Upstream's checks (leader election timings, lock type) plus ours.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.leader_elect {
            let lease = self.leader_elect_lease_duration;
            let renew = self.leader_elect_renew_deadline;
            let retry = self.leader_elect_retry_period;
            if retry.is_zero() || renew <= retry.mul_f64(1.2) || lease <= renew {
                return Err(OptionsError::LeaderElectionTimings);
            }
            if self.leader_elect_resource_lock != "leases" {
                return Err(OptionsError::ResourceLock(
                    self.leader_elect_resource_lock.clone(),
                ));
            }
        }
        if self.leader_elect_warm_standby && !self.leader_elect {
            return Err(OptionsError::WarmStandbyWithoutLeaderElection);
        }
        if self.tls_cert_file.is_some() != self.tls_private_key_file.is_some() {
            return Err(OptionsError::HalfCertificate);
        }
        crate::delegated_auth::AlwaysAllowPaths::parse(&self.authorization_always_allow_paths)?;
        parse_feature_gates(&self.feature_gates, self.controller_flags.gates())?;
        Ok(())
    }

    /// The Lease to lead with: `--leader-elect-resource-name`, else `kcm-rs`, or
    /// `kcm-rs-shadow` in shadow mode (so a shadow runs beside a normal kcm-rs).
    pub fn lease_name(&self) -> &str {
        match (&self.leader_elect_resource_name, self.shadow) {
            (Some(name), _) => name,
            (None, false) => "kcm-rs",
            (None, true) => "kcm-rs-shadow",
        }
    }

    /// The product in the user agent of every request: `kcm-rs`, or `kcm-rs-shadow` in shadow
    /// mode, so the API server's audit log and request accounting tell the two apart.
    pub fn user_agent_product(&self) -> &'static str {
        if self.shadow {
            "kcm-rs-shadow"
        } else {
            "kcm-rs"
        }
    }

    /// The gates `--feature-gates` sets that a registered controller follows (none when
    /// [`validate`](Self::validate) would reject the flag: every gate at its default).
    pub fn enabled_gates(&self) -> EnabledGates {
        parse_feature_gates(&self.feature_gates, self.controller_flags.gates())
            .map(|(gates, _)| gates)
            .unwrap_or_default()
    }

    /// Parses the command line (`args[0]` is the program) with the flags of every controller
    /// in `registry` added, as clap's `try_parse_from` would without them.
    pub fn parse_with<I, T>(registry: &ControllerRegistry, args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let command = ControllerFlags::add_to(Self::command(), registry);
        let matches = command.try_get_matches_from(args)?;
        let mut options = Self::from_arg_matches(&matches)?;
        options.controller_flags = ControllerFlags::from_matches(&matches, registry);
        Ok(options)
    }
}

/// Upstream flags that take a value and have no meaning for kcm-rs.
pub const IGNORED_VALUE_FLAGS: &[&str] = &[
    "address",
    "allocate-node-cidrs-mask-size",
    "allow-metric-labels",
    "allow-metric-labels-manifest",
    "attach-detach-reconcile-sync-period",
    "cert-dir",
    "cloud-config",
    "cloud-provider",
    "cluster-cidr",
    "cluster-name",
    "cluster-signing-cert-file",
    "cluster-signing-duration",
    "cluster-signing-key-file",
    "concurrent-endpoint-syncs",
    "concurrent-gc-syncs",
    "concurrent-horizontal-pod-autoscaler-syncs",
    "concurrent-namespace-syncs",
    "concurrent-rc-syncs",
    "concurrent-resource-quota-syncs",
    "concurrent-service-endpoint-syncs",
    "concurrent-service-syncs",
    "concurrent-serviceaccount-token-syncs",
    "disabled-metrics",
    "flex-volume-plugin-dir",
    "horizontal-pod-autoscaler-sync-period",
    "http2-max-streams-per-connection",
    "large-cluster-size-threshold",
    "leader-migration-config",
    "log-flush-frequency",
    "logging-format-options",
    "node-cidr-mask-size",
    "node-eviction-rate",
    "node-monitor-grace-period",
    "node-monitor-period",
    "node-startup-grace-period",
    "pod-eviction-timeout",
    "port",
    "pv-recycler-pod-template-filepath-hostpath",
    "root-ca-file",
    "secondary-node-eviction-rate",
    "service-account-private-key-file",
    "service-cluster-ip-range",
    "show-hidden-metrics-for-version",
    "terminated-pod-gc-threshold",
    "tls-cipher-suites",
    "tls-min-version",
    "tls-sni-cert-key",
    "unhealthy-zone-threshold",
];

/// Upstream boolean flags with no meaning for kcm-rs (they only take a value as `--flag=value`).
pub const IGNORED_BOOL_FLAGS: &[&str] = &[
    "allocate-node-cidrs",
    "configure-cloud-routes",
    "contention-profiling",
    "enable-dynamic-provisioning",
    "enable-garbage-collector",
    "enable-hostpath-provisioner",
    "enable-leader-migration",
    "enable-taint-manager",
    "permit-address-sharing",
    "permit-port-sharing",
    "profiling",
    "use-service-account-credentials",
];

/// Splits the command line into what clap parses and the ignored upstream flags found,
/// returned by name so the caller can warn once for each.
pub fn strip_ignored_flags(args: Vec<String>) -> (Vec<String>, Vec<String>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut ignored = Vec::new();
    let mut args = args.into_iter();
    if let Some(program) = args.next() {
        kept.push(program);
    }
    while let Some(arg) = args.next() {
        let Some(flag) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
            kept.push(arg);
            continue;
        };
        let (name, has_inline_value) = match flag.split_once('=') {
            Some((name, _)) => (name, true),
            None => (flag, false),
        };
        if IGNORED_VALUE_FLAGS.contains(&name) {
            if !has_inline_value {
                args.next();
            }
            ignored.push(name.to_string());
        } else if IGNORED_BOOL_FLAGS.contains(&name) {
            ignored.push(name.to_string());
        } else {
            kept.push(arg);
        }
    }
    (kept, ignored)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Options {
        let mut argv = vec!["kube-controller-manager".to_string()];
        argv.extend(args.iter().map(|arg| arg.to_string()));
        let (kept, _) = strip_ignored_flags(argv);
        let registry = crate::controllers::default_registry().expect("registry");
        Options::parse_with(&registry, kept).expect("parse")
    }

    #[test]
    fn defaults_are_upstreams() {
        let options = parse(&[]);
        assert_eq!(options.controllers, vec!["*"]);
        // Each controller's workers flag defaults to its descriptor's (upstream's) default.
        for (workers, value) in options.controller_flags.all_workers() {
            assert_eq!(*value, workers.default, "--{}", workers.flag);
        }
        assert_eq!(options.kube_api_qps, 20.0);
        assert_eq!(options.kube_api_burst, 30);
        assert_eq!(options.min_resync_period, Duration::from_secs(12 * 3600));
        assert!(options.leader_elect);
        assert_eq!(options.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(options.leader_elect_renew_deadline, Duration::from_secs(10));
        assert_eq!(options.leader_elect_retry_period, Duration::from_secs(2));
        assert_eq!(options.lease_name(), "kcm-rs");
        assert_eq!(options.leader_elect_resource_namespace, "kube-system");
        assert_eq!(options.secure_port, 10257);
        assert_eq!(
            options.authorization_always_allow_paths,
            vec!["/healthz", "/readyz", "/livez"]
        );
        assert_eq!(
            options.authentication_token_webhook_cache_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            options.authorization_webhook_cache_authorized_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            options.authorization_webhook_cache_unauthorized_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            options.requestheader_username_headers,
            vec!["x-remote-user"]
        );
        assert_eq!(options.requestheader_group_headers, vec!["x-remote-group"]);
        assert_eq!(
            options.requestheader_extra_headers_prefix,
            vec!["x-remote-extra-"]
        );
        assert!(options.requestheader_allowed_names.is_empty());
        assert!(!options.authentication_skip_lookup);
        assert!(!options.authentication_tolerate_lookup_failure);
        assert!(!options.leader_elect_warm_standby);
        assert!(options.leader_elect_read_barrier);
        assert_eq!(options.validate(), Ok(()));
    }

    #[test]
    fn parses_upstream_forms() {
        let options = parse(&[
            "--controllers=*,-deployment",
            "--leader-elect=false",
            "--kube-api-qps=50",
            "--min-resync-period=1h0m0s",
            "--v=4",
            "--logging-format=json",
        ]);
        assert_eq!(options.controllers, vec!["*", "-deployment"]);
        assert!(!options.leader_elect);
        assert_eq!(options.kube_api_qps, 50.0);
        assert_eq!(options.min_resync_period, Duration::from_secs(3600));
        assert_eq!(options.verbosity, 4);
        assert_eq!(options.logging_format, LoggingFormat::Json);
        assert!(parse(&["--leader-elect"]).leader_elect);
        let auth = parse(&[
            "--authentication-kubeconfig=/authn",
            "--authorization-kubeconfig",
            "/authz",
            "--authorization-always-allow-paths=/healthz,/metrics*",
            "--authentication-token-webhook-cache-ttl=1m30s",
            "--authorization-webhook-cache-unauthorized-ttl=500ms",
            "--requestheader-allowed-names=front-proxy,aggregator",
            "--authentication-skip-lookup",
            "--authentication-tolerate-lookup-failure=true",
        ]);
        assert_eq!(auth.authentication_kubeconfig, Some("/authn".into()));
        assert_eq!(auth.authorization_kubeconfig, Some("/authz".into()));
        assert_eq!(
            auth.authorization_always_allow_paths,
            vec!["/healthz", "/metrics*"]
        );
        assert_eq!(
            auth.authentication_token_webhook_cache_ttl,
            Duration::from_secs(90)
        );
        assert_eq!(
            auth.authorization_webhook_cache_unauthorized_ttl,
            Duration::from_millis(500)
        );
        assert_eq!(
            auth.requestheader_allowed_names,
            vec!["front-proxy", "aggregator"]
        );
        assert!(auth.authentication_skip_lookup);
        assert!(auth.authentication_tolerate_lookup_failure);
    }

    #[test]
    fn strips_ignored_upstream_flags() {
        let argv = [
            "kcm",
            "--use-service-account-credentials=true",
            "--cluster-cidr",
            "10.0.0.0/8",
            "--profiling",
            "--controllers=*",
            "--root-ca-file=/ca.crt",
            "--allocate-node-cidrs=true",
        ]
        .map(String::from)
        .to_vec();
        let (kept, ignored) = strip_ignored_flags(argv);
        assert_eq!(kept, vec!["kcm", "--controllers=*"]);
        assert_eq!(
            ignored,
            vec![
                "use-service-account-credentials",
                "cluster-cidr",
                "profiling",
                "root-ca-file",
                "allocate-node-cidrs"
            ]
        );
    }

    #[test]
    fn validation_matches_upstream() {
        let cases: &[(&[&str], Result<(), OptionsError>)] = &[
            (
                &["--leader-elect-renew-deadline=15s"],
                Err(OptionsError::LeaderElectionTimings),
            ),
            (
                &["--leader-elect-retry-period=9s"],
                Err(OptionsError::LeaderElectionTimings),
            ),
            (
                &["--leader-elect=false", "--leader-elect-renew-deadline=15s"],
                Ok(()),
            ),
            (
                &["--leader-elect-resource-lock=endpoints"],
                Err(OptionsError::ResourceLock("endpoints".into())),
            ),
            (
                &["--tls-cert-file=/c.pem"],
                Err(OptionsError::HalfCertificate),
            ),
            (
                &["--authorization-always-allow-paths=/a*b"],
                Err(OptionsError::AlwaysAllowPath("/a*b".into())),
            ),
            (
                &["--feature-gates=MaxUnavailableStatefulSet=maybe"],
                Err(OptionsError::FeatureGates(
                    crate::feature_gates::FeatureGateError::InvalidValue {
                        name: "MaxUnavailableStatefulSet".into(),
                        value: "maybe".into(),
                    },
                )),
            ),
            (
                &["--feature-gates=JobPodReplacementPolicy=true,MaxUnavailableStatefulSet=true"],
                Ok(()),
            ),
            (&["--leader-elect-warm-standby"], Ok(())),
            (
                &["--leader-elect=false", "--leader-elect-warm-standby=true"],
                Err(OptionsError::WarmStandbyWithoutLeaderElection),
            ),
            (
                &["--leader-elect=false", "--leader-elect-warm-standby=false"],
                Ok(()),
            ),
        ];
        for (args, want) in cases {
            assert_eq!(&parse(args).validate(), want, "{args:?}");
        }
    }

    #[test]
    fn shadow_mode_leads_with_its_own_lease_unless_named() {
        let shadow = parse(&["--shadow"]);
        assert!(shadow.shadow);
        assert_eq!(shadow.lease_name(), "kcm-rs-shadow");
        assert_eq!(shadow.user_agent_product(), "kcm-rs-shadow");
        assert_eq!(shadow.shadow_settle, Duration::from_secs(5));
        let named = parse(&[
            "--shadow",
            "--leader-elect-resource-name=mine",
            "--shadow-settle=2s",
        ]);
        assert_eq!(named.lease_name(), "mine");
        assert_eq!(named.shadow_settle, Duration::from_secs(2));
        assert_eq!(parse(&[]).user_agent_product(), "kcm-rs");
    }

    #[test]
    fn feature_gates_default_to_v1_36_and_reach_the_statefulset_controller() {
        assert_eq!(parse(&[]).enabled_gates(), EnabledGates::new());
        assert_eq!(
            parse(&["--feature-gates=MaxUnavailableStatefulSet=true"]).enabled_gates(),
            EnabledGates::from([("MaxUnavailableStatefulSet", true)])
        );
    }
}
