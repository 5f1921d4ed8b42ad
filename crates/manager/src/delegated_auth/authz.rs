//! Delegated authorization as upstream's `DelegatingAuthorizationOptions` configures it for
//! kube-controller-manager: the `system:masters` group, then `--authorization-always-allow-paths`,
//! then a SubjectAccessReview (`authorization.k8s.io/v1`) with the request's path and verb,
//! answers cached for `--authorization-webhook-cache-{authorized,unauthorized}-ttl`. Without an
//! API server to ask, whatever the first two do not allow is forbidden.

use std::{collections::BTreeMap, time::Duration};

use http::Method;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};

use super::{REVIEW_TIMEOUT, authn::UserInfo, cache::ReviewCache};
use crate::options::OptionsError;

/// Groups whose members may do anything, without a review (upstream's privileged groups).
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &["system:masters"];

/// `--authorization-always-allow-paths`: exact paths and trailing-`*` prefixes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlwaysAllowPaths {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

impl AlwaysAllowPaths {
    /// Parses the flag's entries as upstream's path authorizer does: a leading `/` is optional,
    /// `*` may only be the last character, and an empty entry (or `/`) allows `/`.
    pub fn parse(paths: &[String]) -> Result<Self, OptionsError> {
        let mut parsed = Self::default();
        for raw in paths {
            let path = raw.trim_start_matches('/');
            if path.is_empty() {
                parsed.exact.push(String::new());
                continue;
            }
            if path[..path.len() - 1].contains('*') {
                return Err(OptionsError::AlwaysAllowPath(raw.clone()));
            }
            match path.strip_suffix('*') {
                Some(prefix) => parsed.prefixes.push(prefix.to_string()),
                None => parsed.exact.push(path.to_string()),
            }
        }
        Ok(parsed)
    }

    /// Whether `path` is served without authorization.
    pub fn allows(&self, path: &str) -> bool {
        let path = path.strip_prefix('/').unwrap_or(path);
        self.exact.iter().any(|exact| exact == path)
            || self.prefixes.iter().any(|prefix| path.starts_with(prefix))
    }
}

/// The authorization verb of a non-resource request: the HTTP method in lower case (`get`,
/// `head`, `post`, `put`, `patch`, `delete`, `options`, ...), as upstream's
/// `RequestInfoFactory.NewRequestInfo` sets it before it finds a resource. Only requests under
/// `/api` and `/apis` map methods to resource verbs (`create`, `update`, `list`, ...); the
/// controller-manager's port serves none, so every request it authorizes is a non-resource one,
/// and a role granting `get` on `/configz` does not let a `POST` or `HEAD` through.
pub fn verb_for(method: &Method) -> String {
    method.as_str().to_lowercase()
}

/// What authorization decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Serve the request.
    Allow,
    /// Forbidden, with the reviewer's reason (possibly empty).
    Deny(String),
}

/// A SubjectAccessReview could not be answered.
#[derive(Debug, Clone, thiserror::Error)]
#[error("SubjectAccessReview failed: {0}")]
pub struct AuthzError(String);

/// Cache key: the review's spec, serialized (user, groups, extra, path, verb).
type SarKey = String;

/// Asks the API server with SubjectAccessReviews, caching the answers.
pub struct SubjectAccessReviewer {
    client: kube::Client,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: ReviewCache<SarKey, Decision, AuthzError>,
}

impl SubjectAccessReviewer {
    /// A reviewer using `client`, keeping allowing and denying answers for the given TTLs.
    pub fn new(client: kube::Client, allowed_ttl: Duration, denied_ttl: Duration) -> Self {
        Self {
            client,
            allowed_ttl,
            denied_ttl,
            cache: ReviewCache::default(),
        }
    }

    async fn review(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<Decision, AuthzError> {
        let extra: BTreeMap<String, Vec<String>> = user.extra.clone();
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: user.uid.clone(),
            groups: Some(user.groups.clone()),
            extra: (!extra.is_empty()).then_some(extra),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path.to_string()),
                verb: Some(verb.to_string()),
            }),
            ..SubjectAccessReviewSpec::default()
        };
        let key = serde_json::to_string(&spec).map_err(|error| AuthzError(error.to_string()))?;
        let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let (allowed_ttl, denied_ttl) = (self.allowed_ttl, self.denied_ttl);
        self.cache
            .get_or_review(key, move || async move {
                let request = SubjectAccessReview {
                    spec,
                    ..SubjectAccessReview::default()
                };
                let answer = tokio::time::timeout(
                    REVIEW_TIMEOUT,
                    api.create(&PostParams::default(), &request),
                )
                .await
                .map_err(|_| AuthzError("timed out".to_string()))?
                .map_err(|error| AuthzError(error.to_string()))?;
                let status = answer.status.unwrap_or_default();
                if status.allowed && status.denied != Some(true) {
                    Ok((Decision::Allow, allowed_ttl))
                } else {
                    let reason = match (status.reason, status.evaluation_error) {
                        (Some(reason), _) if !reason.is_empty() => reason,
                        (_, Some(error)) => error,
                        _ => String::new(),
                    };
                    Ok((Decision::Deny(reason), denied_ttl))
                }
            })
            .await
    }
}

/// The authorizer chain of the secure port.
pub struct Authorizer {
    paths: AlwaysAllowPaths,
    reviewer: Option<SubjectAccessReviewer>,
}

impl Authorizer {
    /// The chain: privileged groups, `paths`, then `reviewer` if there is one.
    pub fn new(paths: AlwaysAllowPaths, reviewer: Option<SubjectAccessReviewer>) -> Self {
        Self { paths, reviewer }
    }

    /// Decides whether `user` may `verb` the non-resource `path`.
    pub async fn authorize(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> Result<Decision, AuthzError> {
        if user
            .groups
            .iter()
            .any(|group| ALWAYS_ALLOW_GROUPS.contains(&group.as_str()))
            || self.paths.allows(path)
        {
            return Ok(Decision::Allow);
        }
        match &self.reviewer {
            Some(reviewer) => reviewer.review(user, verb, path).await,
            None => Ok(Decision::Deny(String::new())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(entries: &[&str]) -> AlwaysAllowPaths {
        AlwaysAllowPaths::parse(&entries.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("valid")
    }

    #[test]
    fn always_allow_paths_match_like_upstream() {
        let defaults = paths(&["/healthz", "/readyz", "/livez"]);
        assert!(defaults.allows("/healthz"));
        assert!(defaults.allows("/livez"));
        assert!(!defaults.allows("/healthz/leaderElection"));
        assert!(!defaults.allows("/metrics"));
        assert!(!defaults.allows("/"));

        let prefixed = paths(&["healthz*", "/debug/*", "/"]);
        assert!(prefixed.allows("/healthz"));
        assert!(prefixed.allows("/healthz/leaderElection"));
        assert!(prefixed.allows("/healthzz"));
        assert!(prefixed.allows("/debug/pprof"));
        assert!(!prefixed.allows("/debug"));
        assert!(prefixed.allows("/"));
        assert!(!prefixed.allows("/metrics"));

        assert!(paths(&["/*"]).allows("/anything"));
        assert_eq!(
            AlwaysAllowPaths::parse(&["/a*/b".to_string()]),
            Err(OptionsError::AlwaysAllowPath("/a*/b".to_string()))
        );
    }

    #[test]
    #[rustfmt::skip]
    fn verbs_are_the_lowercased_methods_as_upstreams_request_info() {
        let cases = [
            (Method::GET, "get"),
            (Method::HEAD, "head"),
            (Method::POST, "post"),
            (Method::PUT, "put"),
            (Method::PATCH, "patch"),
            (Method::DELETE, "delete"),
            (Method::OPTIONS, "options"),
            (Method::TRACE, "trace"),
            (Method::CONNECT, "connect"),
            (Method::from_bytes(b"PROPFIND").expect("extension method"), "propfind"),
        ];
        for (method, verb) in cases {
            assert_eq!(verb_for(&method), verb, "{method}");
        }
    }

    #[tokio::test]
    async fn without_a_reviewer_only_groups_and_paths_pass() {
        let authorizer = Authorizer::new(paths(&["/healthz"]), None);
        let anonymous = UserInfo::anonymous();
        assert_eq!(
            authorizer
                .authorize(&anonymous, "get", "/healthz")
                .await
                .ok(),
            Some(Decision::Allow)
        );
        assert_eq!(
            authorizer
                .authorize(&anonymous, "get", "/metrics")
                .await
                .ok(),
            Some(Decision::Deny(String::new()))
        );
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
            ..UserInfo::default()
        };
        assert_eq!(
            authorizer.authorize(&admin, "get", "/metrics").await.ok(),
            Some(Decision::Allow)
        );
    }
}
