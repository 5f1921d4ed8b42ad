//! Configuration of a simulated cluster: kubelet timings, fault injection, the watch window,
//! the garbage collector's delay and the token and permission tables behind TokenReview and
//! SubjectAccessReview.
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
            faults: FaultConfig::default(),
            watch_window: 10_000,
            gc_delay: Duration::ZERO,
            auth: AuthConfig::default(),
        }
    }
}

/// Timings of the simulated kubelet, which plays every node of the cluster.
#[derive(Debug, Clone)]
pub struct KubeletConfig {
    /// When false, pods stay unscheduled and Pending (and are deleted at once, as upstream
    /// deletes unscheduled pods without grace).
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
    /// `get`, `create`, ... or `*`.
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
        assert!(!rule.allows("alice", &[], "create", "/metrics"));
        assert!(!rule.allows("bob", &[], "get", "/metrics"));
        let rule: AllowRule = "group:ops:*:/debug/*".parse().unwrap();
        assert!(rule.allows("bob", &["ops".into()], "patch", "/debug/pprof"));
        assert!(!rule.allows("ops", &[], "get", "/debug/pprof"));
        assert!(!rule.allows("bob", &["ops".into()], "get", "/metrics"));
        assert!("alice:get".parse::<AllowRule>().is_err());
        assert!(":get:/metrics".parse::<AllowRule>().is_err());
    }
}
