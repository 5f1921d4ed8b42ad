//! Configuration of a simulated cluster: the nodes, kubelet timings, fault injection, the watch
//! window, the garbage collector's delay and the token and permission tables behind TokenReview
//! and SubjectAccessReview.
//!
//! Kept separate from the server so tests and the `kube-sim` binary can build a configuration
//! without touching any server internals.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

/// Everything that shapes how a [`crate::SimCluster`] behaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The simulated kubelet: whether pods become Running/Ready and how fast.
    pub kubelet: KubeletConfig,
    /// The nodes the cluster starts with, their heartbeats and the pod GC of deleted nodes.
    pub nodes: NodesConfig,
    /// Injected failures, for chaos tests of controllers.
    pub faults: FaultConfig,
    /// Events retained per resource for watch resumption; a watch from an older
    /// resourceVersion gets a 410 Expired error, as from a real API server.
    pub watch_window: usize,
    /// How long the garbage collector takes to delete the dependents of a removed owner
    /// (background propagation), per level of ownership. Zero deletes them within the owner's
    /// delete request; upstream's collector works from its own watch, so its clients see the
    /// owner go before its dependents, which a delay reproduces.
    pub gc_delay: Duration,
    /// Who the bearer tokens sent in TokenReviews are, and what SubjectAccessReviews allow.
    pub auth: AuthConfig,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            kubelet: KubeletConfig::default(),
            nodes: NodesConfig::default(),
            faults: FaultConfig::default(),
            watch_window: 10_000,
            gc_delay: Duration::ZERO,
            auth: AuthConfig::default(),
        }
    }
}

/// Timings of the simulated kubelet, which plays every node of the cluster (and the scheduler).
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// When false, pods stay unscheduled and Pending (and are deleted at once, as upstream
    /// deletes unscheduled pods without grace), and nodes send no heartbeats.
    pub enabled: bool,
    /// Time from a pod starting to it becoming Ready (unless an annotation says otherwise).
    pub ready_delay: Duration,
    /// Time a gracefully deleted pod lingers (with a deletionTimestamp) before it is gone.
    pub deletion_delay: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ready_delay: Duration::ZERO,
            deletion_delay: Duration::ZERO,
        }
    }
}

/// The node set: `count` nodes created as `v1` Node objects when the cluster starts, each
/// run by the simulated kubelet. The default is one node named `sim-node`, labelled and
/// untainted, renewing its Lease every 10 s.
#[derive(Debug, Clone)]
pub struct NodesConfig {
    /// How many nodes the cluster starts with.
    pub count: usize,
    /// A single node is named after the prefix alone; several are `PREFIX-0`, `PREFIX-1`, ...
    /// (see [`NodesConfig::names`]).
    pub name_prefix: String,
    /// Labels of every node, beside `kubernetes.io/hostname`, `kubernetes.io/os=linux` and
    /// `kubernetes.io/arch=amd64`.
    pub labels: BTreeMap<String, String>,
    /// Taints of every node.
    pub taints: Vec<NodeTaint>,
    /// Labels and taints of single nodes, by index (0 is the first node), added to the shared
    /// ones (a label key given here wins).
    pub per_node: BTreeMap<usize, NodeOverrides>,
    /// How often each node renews its Lease in `kube-node-lease` and posts its status
    /// heartbeat (`lastHeartbeatTime` of its conditions). The nodes' heartbeats are spread
    /// over the period. Zero turns heartbeats off.
    pub heartbeat: Duration,
    /// How long after a node is gone its pods are force-deleted (upstream's pod garbage
    /// collector deletes pods bound to a node that no longer exists). Pods created bound to a
    /// node that does not exist are collected the same way.
    pub pod_gc_delay: Duration,
}

impl Default for NodesConfig {
    fn default() -> Self {
        Self {
            count: 1,
            name_prefix: "sim-node".to_string(),
            labels: BTreeMap::new(),
            taints: Vec::new(),
            per_node: BTreeMap::new(),
            heartbeat: Duration::from_secs(10),
            pod_gc_delay: Duration::ZERO,
        }
    }
}

impl NodesConfig {
    /// `count` nodes named after `name_prefix`, otherwise the defaults.
    pub fn with_count(count: usize) -> Self {
        Self {
            count,
            ..Self::default()
        }
    }

    /// The name of node `index`: the prefix alone for a single node, else `PREFIX-INDEX`.
    pub fn name(&self, index: usize) -> String {
        if self.count == 1 {
            self.name_prefix.clone()
        } else {
            format!("{}-{index}", self.name_prefix)
        }
    }

    /// The names of the nodes the cluster starts with, in creation order.
    pub fn names(&self) -> Vec<String> {
        (0..self.count).map(|i| self.name(i)).collect()
    }

    /// The configured labels of node `index` (shared, then its own).
    pub fn labels_of(&self, index: usize) -> BTreeMap<String, String> {
        let mut labels = self.labels.clone();
        if let Some(own) = self.per_node.get(&index) {
            labels.extend(own.labels.clone());
        }
        labels
    }

    /// The configured taints of node `index` (shared, then its own).
    pub fn taints_of(&self, index: usize) -> Vec<NodeTaint> {
        let mut taints = self.taints.clone();
        if let Some(own) = self.per_node.get(&index) {
            taints.extend(own.taints.iter().cloned());
        }
        taints
    }
}

/// What one node has beside the labels and taints every node has.
#[derive(Debug, Clone, Default)]
pub struct NodeOverrides {
    /// Extra labels.
    pub labels: BTreeMap<String, String>,
    /// Extra taints.
    pub taints: Vec<NodeTaint>,
}

/// A node taint, as `kubectl taint` writes it: `key=value:Effect` or `key:Effect`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeTaint {
    /// The taint key.
    pub key: String,
    /// The value ("" when none).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
}

/// The effects a taint may have.
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

impl NodeTaint {
    /// A taint of `key`, `value` and `effect`.
    pub fn new(key: &str, value: &str, effect: &str) -> Self {
        Self {
            key: key.to_string(),
            value: value.to_string(),
            effect: effect.to_string(),
        }
    }
}

impl FromStr for NodeTaint {
    type Err = NodeConfigError;

    /// `key=value:Effect` or `key:Effect`.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let invalid = || NodeConfigError::Taint(spec.to_string());
        let (key_value, effect) = spec.rsplit_once(':').ok_or_else(invalid)?;
        let (key, value) = key_value.split_once('=').unwrap_or((key_value, ""));
        if key.is_empty() || !TAINT_EFFECTS.contains(&effect) {
            return Err(invalid());
        }
        Ok(NodeTaint::new(key, value, effect))
    }
}

/// A malformed `--node-labels` or `--node-taints` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeConfigError {
    /// A label is not `key=value`.
    #[error("node label {0:?}: want key=value")]
    Label(String),
    /// A taint is not `key=value:Effect` or `key:Effect` with a known effect.
    #[error(
        "node taint {0:?}: want key=value:Effect or key:Effect (Effect NoSchedule, PreferNoSchedule or NoExecute)"
    )]
    Taint(String),
}

/// Parses `k1=v1,k2=v2` (the `kube-sim --node-labels` form; empty parts are skipped).
pub fn parse_labels(spec: &str) -> Result<BTreeMap<String, String>, NodeConfigError> {
    spec.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => Err(NodeConfigError::Label(part.to_string())),
        })
        .collect()
}

/// Parses `key=value:Effect,key:Effect` (the `kube-sim --node-taints` form).
pub fn parse_taints(spec: &str) -> Result<Vec<NodeTaint>, NodeConfigError> {
    spec.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(str::parse)
        .collect()
}

/// Seeded, reproducible fault injection. The default injects nothing.
#[derive(Debug, Clone, Default)]
pub struct FaultConfig {
    /// Seed of the random generator that decides which writes fail.
    pub seed: u64,
    /// Probability that a write answers 500 InternalError.
    pub write_500: f64,
    /// Probability that a write answers 429 TooManyRequests (with `Retry-After: 1`).
    pub write_429: f64,
    /// Probability that a write answers 409 Conflict.
    pub write_409: f64,
    /// Latency added to every request.
    pub latency: Duration,
    /// Close every watch stream after this long (the client must resume it).
    pub watch_disconnect_every: Option<Duration>,
    /// Watch streams started while this is set leave out every event of an object carrying
    /// this label key, as if the events were lost on their way to the watcher; lists, and the
    /// initial events of a watch from resourceVersion 0, still show the object.
    pub unwatched_label: Option<String>,
    /// Watch streams started while this is set deliver the events of objects carrying a label
    /// key late (see [`WatchLag`]); lists, and other streams, are on time.
    pub watch_lag: Option<WatchLag>,
}

/// A watch that lags behind for chosen objects, as a watcher on a slow link or behind an
/// overloaded API server's watch cache does: each event of an object carrying `label` (a
/// label key) reaches the watcher `delay` after it happened. A watch is delivered in order, so
/// the events and bookmarks that follow such an event on the same stream wait behind it; an
/// object without the label that changes alone arrives on time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchLag {
    /// The label key of the objects whose events lag.
    pub label: String,
    /// How late they arrive.
    pub delay: Duration,
}

impl FaultConfig {
    /// Only a watch lag: the events of objects labelled `label` reach watches `delay` late.
    pub fn watch_lag(label: &str, delay: Duration) -> Self {
        Self {
            watch_lag: Some(WatchLag {
                label: label.to_owned(),
                delay,
            }),
            ..Self::default()
        }
    }
}

/// The sim's answers to delegated authentication and authorization: a token table for
/// `authentication.k8s.io/v1` TokenReviews and allow rules for `authorization.k8s.io/v1`
/// SubjectAccessReviews. The default knows no token and allows nothing.
#[derive(Debug, Clone, Default)]
pub struct AuthConfig {
    /// Bearer token -> the user it authenticates as.
    pub tokens: BTreeMap<String, SimUser>,
    /// A SubjectAccessReview is allowed when any rule matches it.
    pub allow: Vec<AllowRule>,
}

/// A user a token authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimUser {
    /// User name.
    pub name: String,
    /// Groups, in order.
    pub groups: Vec<String>,
}

/// A malformed `--token` or `--allow` value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthRuleError {
    /// `--token` is not `TOKEN=user[:group,...]`.
    #[error("token entry {0:?}: want TOKEN=user[:group1,group2]")]
    Token(String),
    /// `--allow` is not `subject:verb:path`.
    #[error(
        "allow rule {0:?}: want subject:verb:path (subject a user or group:NAME, verb or path may be *)"
    )]
    Allow(String),
}

impl FromStr for SimUser {
    type Err = AuthRuleError;

    /// `user` or `user:group1,group2`.
    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (name, groups) = spec.split_once(':').unwrap_or((spec, ""));
        if name.is_empty() {
            return Err(AuthRuleError::Token(spec.to_string()));
        }
        Ok(SimUser {
            name: name.to_string(),
            groups: groups
                .split(',')
                .filter(|group| !group.is_empty())
                .map(str::to_string)
                .collect(),
        })
    }
}

impl AuthConfig {
    /// Adds a `TOKEN=user[:group1,group2]` entry (the `kube-sim --token` form).
    pub fn add_token(&mut self, entry: &str) -> Result<(), AuthRuleError> {
        let (token, user) = entry
            .split_once('=')
            .filter(|(token, _)| !token.is_empty())
            .ok_or_else(|| AuthRuleError::Token(entry.to_string()))?;
        let user = user
            .parse()
            .map_err(|_| AuthRuleError::Token(entry.to_string()))?;
        self.tokens.insert(token.to_string(), user);
        Ok(())
    }
}

/// Allows a non-resource request: `subject:verb:path`, where subject is a user name or
/// `group:NAME`, verb is a verb or `*`, and path is a path, `*`, or a prefix ending in `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowRule {
    /// The user (or group, see `group`) the rule applies to.
    pub subject: String,
    /// True when `subject` names a group.
    pub group: bool,
    /// The non-resource verb (the request's method in lower case: `get`, `post`, ...) or `*`.
    pub verb: String,
    /// `/metrics`, `/debug/*` or `*`.
    pub path: String,
}

impl FromStr for AllowRule {
    type Err = AuthRuleError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let invalid = || AuthRuleError::Allow(spec.to_string());
        let (subject, group, rest) = match spec.strip_prefix("group:") {
            Some(rest) => {
                let (name, rest) = rest.split_once(':').ok_or_else(invalid)?;
                (name, true, rest)
            }
            None => {
                let (name, rest) = spec.split_once(':').ok_or_else(invalid)?;
                (name, false, rest)
            }
        };
        let (verb, path) = rest.split_once(':').ok_or_else(invalid)?;
        if subject.is_empty() || verb.is_empty() || path.is_empty() {
            return Err(invalid());
        }
        Ok(AllowRule {
            subject: subject.to_string(),
            group,
            verb: verb.to_string(),
            path: path.to_string(),
        })
    }
}

impl AllowRule {
    /// Whether the rule allows `user` (with `groups`) to `verb` the non-resource `path`.
    pub fn allows(&self, user: &str, groups: &[String], verb: &str, path: &str) -> bool {
        let subject = if self.group {
            groups.contains(&self.subject)
        } else {
            self.subject == user
        };
        let verb_ok = self.verb == "*" || self.verb == verb;
        let path_ok = match self.path.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => self.path == path,
        };
        subject && verb_ok && path_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tokens_and_rules() {
        let mut auth = AuthConfig::default();
        auth.add_token("T=alice:ops,dev").unwrap();
        auth.add_token("U=bob").unwrap();
        assert_eq!(
            auth.tokens["T"],
            SimUser {
                name: "alice".into(),
                groups: vec!["ops".into(), "dev".into()]
            }
        );
        assert!(auth.tokens["U"].groups.is_empty());
        assert!(auth.add_token("=alice").is_err());
        assert!(auth.add_token("T").is_err());
        assert!(auth.add_token("T=").is_err());

        let rule: AllowRule = "alice:get:/metrics".parse().unwrap();
        assert!(rule.allows("alice", &[], "get", "/metrics"));
        assert!(!rule.allows("alice", &[], "post", "/metrics"));
        assert!(!rule.allows("bob", &[], "get", "/metrics"));
        let rule: AllowRule = "group:ops:*:/debug/*".parse().unwrap();
        assert!(rule.allows("bob", &["ops".into()], "patch", "/debug/pprof"));
        assert!(!rule.allows("ops", &[], "get", "/debug/pprof"));
        assert!(!rule.allows("bob", &["ops".into()], "get", "/metrics"));
        assert!("alice:get".parse::<AllowRule>().is_err());
        assert!(":get:/metrics".parse::<AllowRule>().is_err());
    }

    #[test]
    fn node_names_labels_and_taints() {
        assert_eq!(NodesConfig::default().names(), vec!["sim-node"]);
        let mut nodes = NodesConfig::with_count(3);
        assert_eq!(
            nodes.names(),
            vec!["sim-node-0", "sim-node-1", "sim-node-2"]
        );
        nodes.labels = parse_labels("zone=a, tier=web").unwrap();
        nodes.taints = parse_taints("dedicated=infra:NoSchedule").unwrap();
        nodes.per_node.insert(
            1,
            NodeOverrides {
                labels: parse_labels("zone=b").unwrap(),
                taints: parse_taints("gpu:NoExecute").unwrap(),
            },
        );
        assert_eq!(nodes.labels_of(0)["zone"], "a");
        assert_eq!(nodes.labels_of(1)["zone"], "b");
        assert_eq!(nodes.labels_of(1)["tier"], "web");
        assert_eq!(nodes.taints_of(0).len(), 1);
        assert_eq!(
            nodes.taints_of(1),
            vec![
                NodeTaint::new("dedicated", "infra", "NoSchedule"),
                NodeTaint::new("gpu", "", "NoExecute")
            ]
        );
    }

    #[test]
    fn parses_label_and_taint_specs() {
        let cases = [
            (
                "a=b:NoSchedule",
                Some(NodeTaint::new("a", "b", "NoSchedule")),
            ),
            ("a:NoExecute", Some(NodeTaint::new("a", "", "NoExecute"))),
            (
                "a=:PreferNoSchedule",
                Some(NodeTaint::new("a", "", "PreferNoSchedule")),
            ),
            (
                "example.com/k=v:NoSchedule",
                Some(NodeTaint::new("example.com/k", "v", "NoSchedule")),
            ),
            ("a=b", None),
            ("a=b:Sometimes", None),
            ("=b:NoSchedule", None),
        ];
        for (spec, expected) in cases {
            assert_eq!(spec.parse::<NodeTaint>().ok(), expected, "{spec}");
        }
        assert_eq!(parse_taints("").unwrap(), vec![]);
        assert!(parse_taints("a:NoSchedule,b").is_err());
        assert_eq!(parse_labels("").unwrap().len(), 0);
        assert_eq!(parse_labels("a=").unwrap()["a"], "");
        assert_eq!(
            parse_labels("a"),
            Err(NodeConfigError::Label("a".to_string()))
        );
        assert!(parse_labels("=x").is_err());
    }
}
