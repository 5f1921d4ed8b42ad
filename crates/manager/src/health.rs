//! Health checks as upstream's healthz package serves them, plus readiness.
//!
//! `/healthz` aggregates named checks (`[+]name ok` / `[-]name failed: reason withheld`),
//! `/healthz/<name>` runs one. kcm-rs adds `/readyz`: ready when this instance is a standby
//! waiting for the lease, or when it leads and its informer caches have synced — so a rollout of
//! the manager's own Deployment is not blocked by the standby, while a leader that has not synced
//! yet is not reported ready.

use std::{collections::BTreeMap, sync::Arc};

use parking_lot::RwLock;

/// A named check: `Ok` when healthy, `Err(reason)` otherwise.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// Where the instance is in its life, for `/readyz`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Not yet campaigning (starting up).
    Starting,
    /// Waiting for the lease held by another instance.
    Standby,
    /// Leading; informers started but caches not synced yet.
    Syncing,
    /// Leading with synced caches: controllers are working.
    Ready,
    /// Shutting down: stop sending traffic here.
    Stopping,
}

/// The set of named checks and the readiness state, shared with the HTTP server.
#[derive(Clone)]
pub struct Health {
    checks: Arc<RwLock<BTreeMap<String, Check>>>,
    readiness: Arc<RwLock<Readiness>>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            checks: Arc::default(),
            readiness: Arc::new(RwLock::new(Readiness::Starting)),
        }
    }
}

/// The outcome of `/healthz`: status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReport {
    /// True when every included check passed.
    pub healthy: bool,
    /// Body as upstream writes it.
    pub body: String,
}

impl Health {
    /// Adds (or replaces) a named check.
    pub fn add_check(&self, name: impl Into<String>, check: Check) {
        self.checks.write().insert(name.into(), check);
    }

    /// Sets the readiness state.
    pub fn set_readiness(&self, readiness: Readiness) {
        *self.readiness.write() = readiness;
    }

    /// Current readiness state.
    pub fn readiness(&self) -> Readiness {
        *self.readiness.read()
    }

    /// True when `/readyz` should answer 200.
    pub fn is_ready(&self) -> bool {
        matches!(self.readiness(), Readiness::Standby | Readiness::Ready)
    }

    /// Runs every check not excluded. With no checks registered upstream installs `ping`.
    pub fn report(&self, verbose: bool, exclude: &[String]) -> HealthReport {
        let checks = self.checks.read();
        let mut lines = Vec::new();
        let mut healthy = true;
        if checks.is_empty() {
            lines.push("[+]ping ok".to_string());
        }
        for (name, check) in checks.iter() {
            if exclude.iter().any(|excluded| excluded == name) {
                lines.push(format!("[+]{name} excluded: ok"));
                continue;
            }
            match check() {
                Ok(()) => lines.push(format!("[+]{name} ok")),
                Err(reason) => {
                    tracing::warn!(check = %name, %reason, "health check failed");
                    healthy = false;
                    lines.push(format!("[-]{name} failed: reason withheld"));
                }
            }
        }
        let body = if healthy && !verbose {
            "ok".to_string()
        } else if healthy {
            format!("{}\nhealthz check passed\n", lines.join("\n"))
        } else {
            format!("{}\nhealthz check failed\n", lines.join("\n"))
        };
        HealthReport { healthy, body }
    }

    /// Runs one named check; `None` when no such check exists.
    pub fn check(&self, name: &str) -> Option<Result<(), String>> {
        let checks = self.checks.read();
        if checks.is_empty() && name == "ping" {
            return Some(Ok(()));
        }
        checks.get(name).map(|check| check())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_like_upstream() {
        let health = Health::default();
        assert_eq!(
            health.report(false, &[]),
            HealthReport {
                healthy: true,
                body: "ok".into()
            }
        );
        health.add_check("a", Arc::new(|| Ok(())));
        health.add_check("b", Arc::new(|| Err("broken".into())));
        let report = health.report(false, &[]);
        assert!(!report.healthy);
        assert_eq!(
            report.body,
            "[+]a ok\n[-]b failed: reason withheld\nhealthz check failed\n"
        );
        let excluded = health.report(true, &["b".to_string()]);
        assert!(excluded.healthy);
        assert_eq!(
            excluded.body,
            "[+]a ok\n[+]b excluded: ok\nhealthz check passed\n"
        );
        assert_eq!(health.check("b"), Some(Err("broken".into())));
        assert_eq!(health.check("c"), None);
    }

    #[test]
    fn ready_only_as_standby_or_synced_leader() {
        let health = Health::default();
        let cases = [
            (Readiness::Starting, false),
            (Readiness::Standby, true),
            (Readiness::Syncing, false),
            (Readiness::Ready, true),
            (Readiness::Stopping, false),
        ];
        for (readiness, want) in cases {
            health.set_readiness(readiness);
            assert_eq!(health.is_ready(), want, "{readiness:?}");
        }
    }
}
