//! Request accounting by verb, resource, user agent and response code, so tests and
//! benchmarks can count a controller's API calls; also rendered on the sim's `/metrics`.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// (verb, resource, user agent, code).
type CounterKey = (String, String, String, u16);

/// The live counters of a running sim.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    counts: Mutex<BTreeMap<CounterKey, u64>>,
}

impl Accounting {
    /// Counts one request.
    pub fn record(&self, verb: &str, resource: &str, user_agent: &str, code: u16) {
        let key = (
            verb.to_string(),
            resource.to_string(),
            user_agent.to_string(),
            code,
        );
        *self.counts.lock().entry(key).or_insert(0) += 1;
    }

    /// A snapshot without response codes.
    pub fn snapshot(&self) -> RequestAccounting {
        let mut counts = BTreeMap::new();
        for ((verb, resource, agent, _), n) in self.counts.lock().iter() {
            *counts
                .entry((verb.clone(), resource.clone(), agent.clone()))
                .or_insert(0) += n;
        }
        RequestAccounting { counts }
    }

    /// Prometheus text exposition of `sim_requests_total`.
    pub fn render_prometheus(&self) -> String {
        let mut out = String::from(
            "# HELP sim_requests_total Requests served by the sim API server.\n# TYPE sim_requests_total counter\n",
        );
        for ((verb, resource, agent, code), n) in self.counts.lock().iter() {
            out.push_str(&format!(
                "sim_requests_total{{verb=\"{}\",resource=\"{}\",user_agent=\"{}\",code=\"{code}\"}} {n}\n",
                escape(verb),
                escape(resource),
                escape(agent)
            ));
        }
        out
    }
}

/// Escapes a Prometheus label value.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A snapshot of request counts keyed by (verb, resource, user agent).
///
/// Verbs are `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
/// `deletecollection`; resources are plurals with an optional subresource
/// (`pods`, `pods/status`, `deployments/scale`); TokenReviews and SubjectAccessReviews count
/// as `create` of `tokenreviews` and `subjectaccessreviews`. Discovery and `/metrics` are not
/// counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestAccounting {
    counts: BTreeMap<(String, String, String), u64>,
}

impl RequestAccounting {
    /// Requests of `verb` on `resource` from every user agent.
    pub fn count(&self, verb: &str, resource: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((v, r, _), _)| v == verb && r == resource)
            .map(|(_, n)| n)
            .sum()
    }

    /// Requests of `verb` on `resource` from user agents starting with `user_agent_prefix`.
    pub fn count_for_agent(&self, user_agent_prefix: &str, verb: &str, resource: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((v, r, a), _)| v == verb && r == resource && a.starts_with(user_agent_prefix))
            .map(|(_, n)| n)
            .sum()
    }

    /// All requests from user agents starting with `user_agent_prefix`.
    pub fn total_for_agent(&self, user_agent_prefix: &str) -> u64 {
        self.counts
            .iter()
            .filter(|((_, _, a), _)| a.starts_with(user_agent_prefix))
            .map(|(_, n)| n)
            .sum()
    }

    /// Every counter: ((verb, resource, user agent), count).
    pub fn entries(&self) -> Vec<((String, String, String), u64)> {
        self.counts.iter().map(|(k, n)| (k.clone(), *n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_rendering() {
        let acc = Accounting::default();
        acc.record("create", "pods", "ctrl/replicaset", 201);
        acc.record("create", "pods", "ctrl/replicaset", 409);
        acc.record("create", "pods", "kubectl", 201);
        acc.record("list", "pods", "ctrl/replicaset", 200);
        let snap = acc.snapshot();
        assert_eq!(snap.count("create", "pods"), 3);
        assert_eq!(snap.count_for_agent("ctrl", "create", "pods"), 2);
        assert_eq!(snap.total_for_agent("ctrl/"), 3);
        assert_eq!(snap.total_for_agent("nobody"), 0);
        assert_eq!(snap.entries().len(), 3);
        let text = acc.render_prometheus();
        assert!(text.contains("sim_requests_total{verb=\"create\",resource=\"pods\",user_agent=\"kubectl\",code=\"201\"} 1\n"), "{text}");
        assert!(text.contains("code=\"409\"} 1"));
    }
}
