//! `/configz`: the manager's effective configuration as JSON, as upstream kube-controller-manager
//! serves it with `k8s.io/component-base/configz`.
//!
//! Upstream registers its component configuration under `ConfigzName`
//! (`kubecontrollermanager.config.k8s.io`) and answers `{"<name>": <config>}`, the config being
//! the internal `KubeControllerManagerConfiguration`. Internal types carry no JSON tags, so the
//! keys are Go's field names (`Generic`, `ClientConnection`, `QPS`, `ConcurrentRSSyncs`, ...)
//! in declaration order, and durations are `metav1.Duration`s, marshalled as Go's
//! `time.Duration.String` (`12h0m0s`, `15s`).
//!
//! kcm-rs serves two keys:
//! * [`UPSTREAM_CONFIGZ_NAME`]: upstream's shape, holding the fields of the flags kcm-rs acts on
//!   (the table [`UPSTREAM_FIELDS`] says which flag lands where), with their effective values:
//!   `Generic.Controllers` with canonical names, `LeaderElection.ResourceName` the Lease kcm-rs
//!   actually leads with, `ClientConnection.ContentType` `application/json` since kcm-rs only
//!   speaks JSON whatever `--kube-api-content-type` says. Fields whose flags kcm-rs accepts
//!   and ignores (`--profiling`, `--use-service-account-credentials`, the other controllers'
//!   settings, ...) are left out: kcm-rs has no such setting, so an upstream default would
//!   contradict the command line and the given value would claim an effect it does not have.
//!   Their names are logged at start-up, one warning each.
//! * [`KCM_RS_CONFIGZ_NAME`] (`kcm-rs.io/flags`): every other flag kcm-rs parses, by flag name:
//!   upstream's flags that upstream keeps outside its component config (serving,
//!   authentication, authorization, logging, feature gates) and the kcm-rs-only ones
//!   (`--plain-http`, `--shadow`, `--statefulset-recover-*`, ...). A second key, rather than
//!   extra fields in upstream's object, keeps upstream's object readable by tools written for
//!   upstream, as configz allows one entry per registered configuration; the `kcm-rs.io/`
//!   prefix marks it as kcm-rs's, as it does kcm-rs's annotations, and upstream never serves it.
//!
//! A controller's flags come from its descriptor: its workers flag lands in its section of
//! upstream's object, its settings under `kcm-rs.io/flags`, with nothing to add here. A new
//! manager flag needs one line in [`Configz::new`]'s `kcm_rs_flags!` list (or a field here and
//! a row in [`UPSTREAM_FIELDS`] if upstream's component config has it); a unit test walks
//! clap's arguments and fails until every flag appears.

use std::{collections::BTreeMap, net::IpAddr, path::PathBuf, time::Duration};

use clap::ValueEnum;
use controller_toolkit::descriptor::SettingValue;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::{
    controller_selection::ControllerSelection,
    go_duration::format_go_duration,
    options::{LoggingFormat, Options},
};

/// The key of upstream's component configuration (upstream's `ConfigzName`, the API group of
/// `KubeControllerManagerConfiguration`).
pub const UPSTREAM_CONFIGZ_NAME: &str = "kubecontrollermanager.config.k8s.io";

/// The key of every flag upstream's component configuration has no field for (kcm-rs only).
pub const KCM_RS_CONFIGZ_NAME: &str = "kcm-rs.io/flags";

/// Where each manager flag with a field in upstream's component configuration shows in
/// `/configz`: the flag's name and a JSON pointer into the answer. The controllers' workers
/// flags are in their descriptors' sections ([`upstream_fields`]); every other flag is under
/// [`KCM_RS_CONFIGZ_NAME`] by its name.
pub const UPSTREAM_FIELDS: &[(&str, &str)] = &[
    (
        "controllers",
        "/kubecontrollermanager.config.k8s.io/Generic/Controllers",
    ),
    (
        "min-resync-period",
        "/kubecontrollermanager.config.k8s.io/Generic/MinResyncPeriod",
    ),
    (
        "kubeconfig",
        "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/Kubeconfig",
    ),
    (
        "kube-api-content-type",
        "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/ContentType",
    ),
    (
        "kube-api-qps",
        "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/QPS",
    ),
    (
        "kube-api-burst",
        "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/Burst",
    ),
    (
        "controller-start-interval",
        "/kubecontrollermanager.config.k8s.io/Generic/ControllerStartInterval",
    ),
    (
        "leader-elect",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/LeaderElect",
    ),
    (
        "leader-elect-lease-duration",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/LeaseDuration",
    ),
    (
        "leader-elect-renew-deadline",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/RenewDeadline",
    ),
    (
        "leader-elect-retry-period",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/RetryPeriod",
    ),
    (
        "leader-elect-resource-lock",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceLock",
    ),
    (
        "leader-elect-resource-name",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceName",
    ),
    (
        "leader-elect-resource-namespace",
        "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceNamespace",
    ),
];

/// The sections of upstream's `KubeControllerManagerConfiguration` after `Generic`, in
/// upstream's declaration order (`pkg/controller/apis/config/types.go`), which Go's
/// `json.Marshal` keeps: a controller's section is placed by it.
const UPSTREAM_SECTION_ORDER: &[&str] = &[
    "KubeCloudShared",
    "ServiceController",
    "AttachDetachController",
    "CSRSigningController",
    "DaemonSetController",
    "DeploymentController",
    "StatefulSetController",
    "DeprecatedController",
    "EndpointController",
    "EndpointSliceController",
    "EndpointSliceMirroringController",
    "EphemeralVolumeController",
    "GarbageCollectorController",
    "HPAController",
    "JobController",
    "CronJobController",
    "LegacySATokenCleaner",
    "NamespaceController",
    "NodeIPAMController",
    "NodeLifecycleController",
    "PersistentVolumeBinderController",
    "PodGCController",
    "ReplicaSetController",
    "ReplicationController",
    "ResourceQuotaController",
    "SAController",
    "TTLAfterFinishedController",
    "ValidatingAdmissionPolicyStatusController",
];

/// [`UPSTREAM_FIELDS`] and, for every registered controller, where its workers flag shows:
/// `/kubecontrollermanager.config.k8s.io/<section>/<field>` of its descriptor.
pub fn upstream_fields(options: &Options) -> Vec<(String, String)> {
    let manager = UPSTREAM_FIELDS
        .iter()
        .map(|(flag, pointer)| ((*flag).to_owned(), (*pointer).to_owned()));
    let controllers = options.controller_flags.all_workers().map(|(workers, _)| {
        (
            workers.flag.to_owned(),
            format!(
                "/{UPSTREAM_CONFIGZ_NAME}/{}/{}",
                workers.config_section, workers.config_field
            ),
        )
    });
    manager.chain(controllers).collect()
}

/// The content type kcm-rs sends and accepts, whatever `--kube-api-content-type` says.
const EFFECTIVE_CONTENT_TYPE: &str = "application/json";

/// What `/configz` answers. Keys in the order Go's `json.Marshal` writes the map of registered
/// configurations: sorted.
#[derive(Debug, Clone, Serialize)]
pub struct Configz {
    #[serde(rename = "kcm-rs.io/flags")]
    flags: BTreeMap<String, Value>,
    #[serde(rename = "kubecontrollermanager.config.k8s.io")]
    component: KubeControllerManagerConfiguration,
}

/// The part of upstream's `KubeControllerManagerConfiguration` kcm-rs has flags for, in
/// upstream's field order: `Generic`, then each registered controller's section (its
/// descriptor's workers field), placed by [`UPSTREAM_SECTION_ORDER`].
#[derive(Debug, Clone, Serialize)]
struct KubeControllerManagerConfiguration {
    #[serde(rename = "Generic")]
    generic: GenericControllerManagerConfiguration,
    #[serde(flatten)]
    controllers: serde_json::Map<String, Value>,
}

/// `k8s.io/controller-manager/config.GenericControllerManagerConfiguration`, without `Port` and
/// `Address` (the removed insecure serving; `--port`/`--address` are accepted and ignored),
/// `Debugging` (`--profiling`, `--contention-profiling`: ignored, kcm-rs has no `/debug/pprof`)
/// and `LeaderMigration*` (`--enable-leader-migration`, `--leader-migration-config`: ignored).
#[derive(Debug, Clone, Serialize)]
struct GenericControllerManagerConfiguration {
    #[serde(rename = "MinResyncPeriod", serialize_with = "go_duration")]
    min_resync_period: Duration,
    #[serde(rename = "ClientConnection")]
    client_connection: ClientConnectionConfiguration,
    #[serde(rename = "ControllerStartInterval", serialize_with = "go_duration")]
    controller_start_interval: Duration,
    #[serde(rename = "LeaderElection")]
    leader_election: LeaderElectionConfiguration,
    #[serde(rename = "Controllers")]
    controllers: Vec<String>,
}

/// `k8s.io/component-base/config.ClientConnectionConfiguration`, without `AcceptContentTypes`,
/// which no kube-controller-manager flag sets.
#[derive(Debug, Clone, Serialize)]
struct ClientConnectionConfiguration {
    #[serde(rename = "Kubeconfig")]
    kubeconfig: String,
    #[serde(rename = "ContentType")]
    content_type: String,
    #[serde(rename = "QPS", serialize_with = "go_float32")]
    qps: f32,
    #[serde(rename = "Burst")]
    burst: u32,
}

/// `k8s.io/component-base/config.LeaderElectionConfiguration`.
#[derive(Debug, Clone, Serialize)]
struct LeaderElectionConfiguration {
    #[serde(rename = "LeaderElect")]
    leader_elect: bool,
    #[serde(rename = "LeaseDuration", serialize_with = "go_duration")]
    lease_duration: Duration,
    #[serde(rename = "RenewDeadline", serialize_with = "go_duration")]
    renew_deadline: Duration,
    #[serde(rename = "RetryPeriod", serialize_with = "go_duration")]
    retry_period: Duration,
    #[serde(rename = "ResourceLock")]
    resource_lock: String,
    #[serde(rename = "ResourceName")]
    resource_name: String,
    #[serde(rename = "ResourceNamespace")]
    resource_namespace: String,
}

/// `kcm-rs.io/flags` entries: each field of [`Options`] named by its flag, which is the field's
/// name in kebab case (as clap derives it) unless given with `=> "name"`.
macro_rules! kcm_rs_flags {
    ($options:expr; $($field:ident $(=> $name:literal)?),* $(,)?) => {{
        let mut flags = BTreeMap::new();
        $(
            flags.insert(
                flag_name(stringify!($field), &[$($name)?]),
                FlagValue::flag_value(&$options.$field),
            );
        )*
        flags
    }};
}

impl Configz {
    /// The effective configuration of a manager run with `options`, whose `--controllers` were
    /// resolved into `selection`.
    pub fn new(options: &Options, selection: &ControllerSelection) -> Self {
        let component = KubeControllerManagerConfiguration {
            generic: GenericControllerManagerConfiguration {
                min_resync_period: options.min_resync_period,
                client_connection: ClientConnectionConfiguration {
                    kubeconfig: path_or_empty(options.kubeconfig.as_ref()),
                    content_type: EFFECTIVE_CONTENT_TYPE.to_string(),
                    qps: options.kube_api_qps,
                    burst: options.kube_api_burst,
                },
                controller_start_interval: options.controller_start_interval,
                leader_election: LeaderElectionConfiguration {
                    leader_elect: options.leader_elect,
                    lease_duration: options.leader_elect_lease_duration,
                    renew_deadline: options.leader_elect_renew_deadline,
                    retry_period: options.leader_elect_retry_period,
                    resource_lock: options.leader_elect_resource_lock.clone(),
                    resource_name: options.lease_name().to_string(),
                    resource_namespace: options.leader_elect_resource_namespace.clone(),
                },
                controllers: selection.canonical_entries(),
            },
            controllers: controller_sections(options),
        };
        // Every flag without a field above, one line each (the unit test
        // `every_flag_is_in_configz` names a missing one), then the controllers' settings.
        let mut flags = kcm_rs_flags!(options;
            // Upstream flags that upstream keeps outside its component configuration.
            master,
            bind_address,
            secure_port,
            tls_cert_file,
            tls_private_key_file,
            authentication_kubeconfig,
            authentication_token_webhook_cache_ttl,
            authentication_skip_lookup,
            authentication_tolerate_lookup_failure,
            client_ca_file,
            requestheader_client_ca_file,
            requestheader_allowed_names,
            requestheader_username_headers,
            requestheader_group_headers,
            requestheader_extra_headers_prefix,
            authorization_kubeconfig,
            authorization_always_allow_paths,
            authorization_webhook_cache_authorized_ttl,
            authorization_webhook_cache_unauthorized_ttl,
            feature_gates,
            verbosity => "v",
            logging_format,
            // kcm-rs only.
            leader_elect_warm_standby,
            plain_http,
            shadow,
            shadow_settle,
        );
        for (setting, value) in options.controller_flags.all_settings() {
            let value = match value {
                SettingValue::Duration(duration) => duration.flag_value(),
                SettingValue::Bool(enabled) => enabled.flag_value(),
            };
            flags.insert(setting.flag.to_owned(), value);
        }
        Self { flags, component }
    }
}

/// Each registered controller's section of upstream's configuration, holding its workers
/// field, in upstream's order of sections (an unknown section last, by name).
fn controller_sections(options: &Options) -> serde_json::Map<String, Value> {
    let mut workers: Vec<_> = options.controller_flags.all_workers().collect();
    workers.sort_by_key(|(flag, _)| {
        let position = UPSTREAM_SECTION_ORDER
            .iter()
            .position(|section| *section == flag.config_section);
        (position.unwrap_or(usize::MAX), flag.config_section)
    });
    let mut sections = serde_json::Map::new();
    for (flag, value) in workers {
        let section = sections
            .entry(flag.config_section)
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(fields) = section {
            fields.insert(flag.config_field.to_owned(), Value::from(*value));
        }
    }
    sections
}

/// The flag of `field`: `explicit` if given, else the field's name in kebab case.
fn flag_name(field: &str, explicit: &[&str]) -> String {
    match explicit.first() {
        Some(name) => (*name).to_string(),
        None => field.replace('_', "-"),
    }
}

/// A flag's value as `kcm-rs.io/flags` shows it: JSON booleans, numbers and lists, durations as
/// Go writes them, unset optional strings and paths as `""` (their flag's default).
trait FlagValue {
    fn flag_value(&self) -> Value;
}

/// Flag types whose JSON is serde_json's own conversion.
macro_rules! flag_value_from {
    ($($ty:ty),*) => {$(
        impl FlagValue for $ty {
            fn flag_value(&self) -> Value {
                Value::from(self.clone())
            }
        }
    )*};
}

flag_value_from!(bool, u8, u16, u32, usize, String, Vec<String>);

impl FlagValue for f32 {
    fn flag_value(&self) -> Value {
        go_float32_value(*self)
    }
}

impl FlagValue for Option<String> {
    fn flag_value(&self) -> Value {
        Value::String(self.clone().unwrap_or_default())
    }
}

impl FlagValue for Option<PathBuf> {
    fn flag_value(&self) -> Value {
        Value::String(path_or_empty(self.as_ref()))
    }
}

impl FlagValue for IpAddr {
    fn flag_value(&self) -> Value {
        Value::String(self.to_string())
    }
}

impl FlagValue for Duration {
    fn flag_value(&self) -> Value {
        Value::String(format_go_duration(*self))
    }
}

impl FlagValue for LoggingFormat {
    fn flag_value(&self) -> Value {
        match self.to_possible_value() {
            Some(value) => Value::String(value.get_name().to_string()),
            None => Value::Null,
        }
    }
}

fn path_or_empty(path: Option<&PathBuf>) -> String {
    path.map(|path| path.display().to_string())
        .unwrap_or_default()
}

/// A `metav1.Duration` field: Go's `time.Duration.String`.
fn go_duration<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format_go_duration(*duration))
}

/// A Go `float32` field.
fn go_float32<S: Serializer>(value: &f32, serializer: S) -> Result<S::Ok, S::Error> {
    go_float32_value(*value).serialize(serializer)
}

/// A `float32` as Go's `encoding/json` writes it: the shortest decimal that reads back as the
/// same `float32` (`20`, `0.1`, not `20.0` or `0.10000000149011612`). Go refuses NaN and
/// infinities; they become `null` here.
fn go_float32_value(value: f32) -> Value {
    let shortest = value.to_string();
    if let Ok(integer) = shortest.parse::<i64>() {
        return Value::from(integer);
    }
    shortest
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use serde_json::json;

    use super::*;
    use crate::{
        controller_flags::ControllerFlags, controllers::default_registry,
        options::strip_ignored_flags,
    };

    /// `/configz` of a manager run with `args`, as JSON.
    fn configz(args: &[&str]) -> Value {
        let mut argv = vec!["kube-controller-manager".to_string()];
        argv.extend(args.iter().map(|arg| arg.to_string()));
        let (kept, _) = strip_ignored_flags(argv);
        let registry = default_registry().expect("registry");
        let options = Options::parse_with(&registry, kept).expect("flags");
        let selection = ControllerSelection::parse(&options.controllers, &registry).expect("list");
        serde_json::to_value(Configz::new(&options, &selection)).expect("json")
    }

    #[test]
    fn defaults_in_upstreams_shape() {
        let answer = configz(&[]);
        let rendered = serde_json::to_string(&answer).expect("json");
        assert!(
            rendered.starts_with(r#"{"kcm-rs.io/flags":{"#),
            "keys sorted as Go sorts its map: {rendered}"
        );
        assert_eq!(
            answer[UPSTREAM_CONFIGZ_NAME]["Generic"],
            json!({
                "MinResyncPeriod": "12h0m0s",
                "ClientConnection": {
                    "Kubeconfig": "",
                    "ContentType": "application/json",
                    "QPS": 20,
                    "Burst": 30
                },
                "ControllerStartInterval": "0s",
                "LeaderElection": {
                    "LeaderElect": true,
                    "LeaseDuration": "15s",
                    "RenewDeadline": "10s",
                    "RetryPeriod": "2s",
                    "ResourceLock": "leases",
                    "ResourceName": "kcm-rs",
                    "ResourceNamespace": "kube-system"
                },
                "Controllers": ["*"]
            })
        );
        // After Generic, each registered controller's section with its workers field at the
        // descriptor's default, in upstream's order of sections.
        let registry = default_registry().expect("registry");
        let mut sections: Vec<_> = registry
            .descriptors()
            .map(|descriptor| descriptor.workers)
            .collect();
        sections.sort_by_key(|workers| {
            UPSTREAM_SECTION_ORDER
                .iter()
                .position(|section| *section == workers.config_section)
        });
        let mut want = vec![("Generic".to_owned(), None)];
        want.extend(sections.iter().map(|workers| {
            (
                workers.config_section.to_owned(),
                Some(json!({ workers.config_field: workers.default })),
            )
        }));
        let got: Vec<(String, Option<Value>)> = answer[UPSTREAM_CONFIGZ_NAME]
            .as_object()
            .expect("object")
            .iter()
            .map(|(key, value)| (key.clone(), (key != "Generic").then(|| value.clone())))
            .collect();
        assert_eq!(got, want);
        let component = serde_json::to_string(&answer[UPSTREAM_CONFIGZ_NAME]).expect("json");
        assert!(
            component.starts_with(r#"{"Generic":{"MinResyncPeriod":"12h0m0s","ClientConnection":{"Kubeconfig":"","ContentType":"application/json","QPS":20,"Burst":30},"ControllerStartInterval""#),
            "Go's field order: {component}"
        );
        assert_eq!(
            answer[KCM_RS_CONFIGZ_NAME],
            json!({
                "authentication-kubeconfig": "",
                "authentication-skip-lookup": false,
                "authentication-token-webhook-cache-ttl": "10s",
                "authentication-tolerate-lookup-failure": false,
                "authorization-always-allow-paths": ["/healthz", "/readyz", "/livez"],
                "authorization-kubeconfig": "",
                "authorization-webhook-cache-authorized-ttl": "10s",
                "authorization-webhook-cache-unauthorized-ttl": "10s",
                "bind-address": "0.0.0.0",
                "client-ca-file": "",
                "feature-gates": "",
                "leader-elect-warm-standby": false,
                "logging-format": "text",
                "master": "",
                "plain-http": false,
                "replicaset-status-hold": "1s",
                "requestheader-allowed-names": [],
                "requestheader-client-ca-file": "",
                "requestheader-extra-headers-prefix": ["x-remote-extra-"],
                "requestheader-group-headers": ["x-remote-group"],
                "requestheader-username-headers": ["x-remote-user"],
                "secure-port": 10257,
                "shadow": false,
                "shadow-settle": "5s",
                "statefulset-recover-broken-rollout": false,
                "statefulset-recover-grace": "30s",
                "tls-cert-file": "",
                "tls-private-key-file": "",
                "v": 0
            })
        );
    }

    #[test]
    fn flags_land_where_upstream_keeps_them() {
        // (flags, JSON pointer, expected value)
        let cases: &[(&[&str], &str, Value)] = &[
            (
                &["--replicaset-status-hold=1m30s"],
                "/kcm-rs.io~1flags/replicaset-status-hold",
                json!("1m30s"),
            ),
            (
                &["--concurrent-deployment-syncs=7"],
                "/kubecontrollermanager.config.k8s.io/DeploymentController/ConcurrentDeploymentSyncs",
                json!(7),
            ),
            (
                &["--concurrent-replicaset-syncs=11"],
                "/kubecontrollermanager.config.k8s.io/ReplicaSetController/ConcurrentRSSyncs",
                json!(11),
            ),
            (
                &["--concurrent-statefulset-syncs=3"],
                "/kubecontrollermanager.config.k8s.io/StatefulSetController/ConcurrentStatefulSetSyncs",
                json!(3),
            ),
            (
                &["--controllers=deployment,-replicaset,*"],
                "/kubecontrollermanager.config.k8s.io/Generic/Controllers",
                json!(["deployment-controller", "-replicaset-controller", "*"]),
            ),
            (
                &["--kube-api-qps=0.1"],
                "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/QPS",
                json!(0.1),
            ),
            (
                &["--kube-api-qps=50"],
                "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/QPS",
                json!(50),
            ),
            (
                &["--kube-api-burst=100"],
                "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/Burst",
                json!(100),
            ),
            (
                &["--kube-api-content-type=application/vnd.kubernetes.protobuf"],
                "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/ContentType",
                json!("application/json"),
            ),
            (
                &["--kubeconfig=/etc/kubernetes/controller-manager.conf"],
                "/kubecontrollermanager.config.k8s.io/Generic/ClientConnection/Kubeconfig",
                json!("/etc/kubernetes/controller-manager.conf"),
            ),
            (
                &["--min-resync-period=90m"],
                "/kubecontrollermanager.config.k8s.io/Generic/MinResyncPeriod",
                json!("1h30m0s"),
            ),
            (
                &["--controller-start-interval=1.5s"],
                "/kubecontrollermanager.config.k8s.io/Generic/ControllerStartInterval",
                json!("1.5s"),
            ),
            (
                &["--leader-elect=false"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/LeaderElect",
                json!(false),
            ),
            (
                &["--leader-elect-lease-duration=1m"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/LeaseDuration",
                json!("1m0s"),
            ),
            (
                &[
                    "--leader-elect-renew-deadline=500ms",
                    "--leader-elect=false",
                ],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/RenewDeadline",
                json!("500ms"),
            ),
            (
                &["--leader-elect-retry-period=3s"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/RetryPeriod",
                json!("3s"),
            ),
            (
                &["--shadow"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceName",
                json!("kcm-rs-shadow"),
            ),
            (
                &["--leader-elect-resource-name=kube-controller-manager"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceName",
                json!("kube-controller-manager"),
            ),
            (
                &["--leader-elect-resource-namespace=ops"],
                "/kubecontrollermanager.config.k8s.io/Generic/LeaderElection/ResourceNamespace",
                json!("ops"),
            ),
            (
                &["--statefulset-recover-grace=2m", "--plain-http"],
                "/kcm-rs.io~1flags/statefulset-recover-grace",
                json!("2m0s"),
            ),
            (
                &["--plain-http"],
                "/kcm-rs.io~1flags/plain-http",
                json!(true),
            ),
            (&["--v=4"], "/kcm-rs.io~1flags/v", json!(4)),
            (
                &["--logging-format=json"],
                "/kcm-rs.io~1flags/logging-format",
                json!("json"),
            ),
            (
                &["--bind-address=::1", "--secure-port=0"],
                "/kcm-rs.io~1flags/bind-address",
                json!("::1"),
            ),
            (
                &["--master=https://10.0.0.1:6443"],
                "/kcm-rs.io~1flags/master",
                json!("https://10.0.0.1:6443"),
            ),
            (
                &["--authorization-always-allow-paths=/healthz,/metrics"],
                "/kcm-rs.io~1flags/authorization-always-allow-paths",
                json!(["/healthz", "/metrics"]),
            ),
        ];
        for (args, pointer, want) in cases {
            let answer = configz(args);
            assert_eq!(answer.pointer(pointer), Some(want), "{args:?} at {pointer}");
        }
    }

    #[test]
    fn ignored_upstream_flags_add_nothing() {
        assert_eq!(
            configz(&[
                "--profiling=true",
                "--use-service-account-credentials=true",
                "--cluster-cidr=10.0.0.0/8",
                "--port=10252"
            ]),
            configz(&[])
        );
    }

    /// clap's own arguments, which configure nothing.
    const NOT_CONFIGURATION: &[&str] = &[
        // --help prints the usage and exits.
        "help", // --version prints the version and exits.
        "version",
    ];

    #[test]
    fn every_flag_is_in_configz() {
        let answer = configz(&[]);
        let flags = answer[KCM_RS_CONFIGZ_NAME]
            .as_object()
            .expect("flags object");
        let registry = default_registry().expect("registry");
        let options = Options::parse_with(&registry, ["kube-controller-manager"]).expect("flags");
        let upstream_fields = upstream_fields(&options);
        let mut command = ControllerFlags::add_to(Options::command(), &registry);
        command.build();
        let mut names = Vec::new();
        for arg in command.get_arguments() {
            if NOT_CONFIGURATION.contains(&arg.get_id().as_str()) {
                continue;
            }
            let name = arg.get_long().expect("every flag has a long name");
            names.push(name.to_string());
            let upstream = upstream_fields.iter().find(|(flag, _)| *flag == name);
            match (upstream, flags.contains_key(name)) {
                (Some((_, pointer)), false) => assert!(
                    answer.pointer(pointer).is_some(),
                    "--{name}: UPSTREAM_FIELDS points at {pointer}, which /configz lacks"
                ),
                (None, true) => {}
                (Some(_), true) => {
                    panic!("--{name} is both in upstream's object and under {KCM_RS_CONFIGZ_NAME}")
                }
                (None, false) => panic!(
                    "--{name} is missing from /configz: add `{},` to the kcm_rs_flags! list in \
                     Configz::new (or a field and an UPSTREAM_FIELDS row if upstream's component \
                     configuration has it)",
                    name.replace('-', "_")
                ),
            }
        }
        for key in flags.keys() {
            assert!(
                names.contains(key),
                "{KCM_RS_CONFIGZ_NAME} has {key}, which is no flag"
            );
        }
        for (flag, _) in &upstream_fields {
            assert!(
                names.iter().any(|name| name == flag),
                "UPSTREAM_FIELDS has --{flag}, which is no flag"
            );
        }
    }

    #[test]
    fn key_constants_match_the_serialized_keys() {
        let answer = configz(&[]);
        let keys: Vec<&String> = answer.as_object().expect("object").keys().collect();
        assert_eq!(keys, vec![KCM_RS_CONFIGZ_NAME, UPSTREAM_CONFIGZ_NAME]);
    }

    #[test]
    fn float32_as_go_writes_it() {
        let cases: &[(f32, &str)] = &[
            (20.0, "20"),
            (0.1, "0.1"),
            (12.5, "12.5"),
            (1e-7, "1e-7"),
            (f32::NAN, "null"),
        ];
        for (value, want) in cases {
            assert_eq!(go_float32_value(*value).to_string(), *want, "{value}");
        }
    }
}
