//! `authentication.k8s.io/v1` TokenReview and `authorization.k8s.io/v1` SubjectAccessReview,
//! answered from the [`AuthConfig`] tables, so a server doing delegated authentication and
//! authorization (the manager's secure port) can be tested against the sim over real HTTP.
//!
//! Reviews are create-only and never stored, as on a real API server.

use serde_json::{Value, json};

use crate::config::AuthConfig;
use crate::status::ApiError;

/// The two review kinds served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    /// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
    Token,
    /// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`.
    SubjectAccess,
}

/// (group, plural, kind) of every review resource.
const REVIEWS: &[(&str, &str, &str, Review)] = &[
    (
        "authentication.k8s.io",
        "tokenreviews",
        "TokenReview",
        Review::Token,
    ),
    (
        "authorization.k8s.io",
        "subjectaccessreviews",
        "SubjectAccessReview",
        Review::SubjectAccess,
    ),
];

impl Review {
    /// The review served at `/apis/{group}/{version}/{plural}`, if any.
    pub fn find(group: &str, version: &str, plural: &str) -> Option<Review> {
        REVIEWS
            .iter()
            .find(|(g, p, _, _)| *g == group && *p == plural && version == "v1")
            .map(|(_, _, _, review)| *review)
    }

    /// The plural, as counted by request accounting.
    pub fn plural(self) -> &'static str {
        REVIEWS
            .iter()
            .find(|(_, _, _, review)| *review == self)
            .map_or("", |(_, plural, _, _)| plural)
    }

    /// Answers a review body: the request with its `status` filled in.
    pub fn answer(self, auth: &AuthConfig, body: &[u8]) -> Result<Value, ApiError> {
        let mut review: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?;
        let status = match self {
            Review::Token => token_status(auth, &review),
            Review::SubjectAccess => access_status(auth, &review)?,
        };
        if let Some(map) = review.as_object_mut() {
            map.insert("status".into(), status);
            map.entry("metadata").or_insert_with(|| json!({}));
        }
        Ok(review)
    }
}

fn token_status(auth: &AuthConfig, review: &Value) -> Value {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("");
    match auth.tokens.get(token) {
        Some(user) => json!({
            "authenticated": true,
            "user": {"username": user.name, "uid": format!("uid-{}", user.name), "groups": user.groups},
        }),
        None => json!({"authenticated": false}),
    }
}

fn access_status(auth: &AuthConfig, review: &Value) -> Result<Value, ApiError> {
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|groups| {
            groups
                .iter()
                .filter_map(|group| group.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let Some(attributes) = spec.get("nonResourceAttributes") else {
        if spec.get("resourceAttributes").is_some() {
            return Ok(
                json!({"allowed": false, "reason": "the sim only authorizes non-resource requests"}),
            );
        }
        return Err(ApiError::bad_request(
            "spec.resourceAttributes or spec.nonResourceAttributes is required",
        ));
    };
    let verb = attributes.get("verb").and_then(Value::as_str).unwrap_or("");
    let path = attributes.get("path").and_then(Value::as_str).unwrap_or("");
    let allowed = auth
        .allow
        .iter()
        .any(|rule| rule.allows(user, &groups, verb, path));
    Ok(if allowed {
        json!({"allowed": true, "reason": "allowed by a sim --allow rule"})
    } else {
        json!({"allowed": false})
    })
}

/// The API groups of the reviews, for `/apis`.
pub(crate) fn groups() -> impl Iterator<Item = &'static str> {
    REVIEWS.iter().map(|(group, _, _, _)| *group)
}

/// `/apis/{group}/v1` of a review group, if `group` is one.
pub(crate) fn resource_list(group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = REVIEWS
        .iter()
        .filter(|(g, _, _, _)| *g == group && version == "v1")
        .map(|(_, plural, kind, _)| {
            json!({"name": plural, "singularName": "", "namespaced": false, "kind": kind, "verbs": ["create"]})
        })
        .collect();
    (!resources.is_empty()).then(|| {
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group}/{version}"), "resources": resources})
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_from_the_tables() {
        let mut auth = AuthConfig::default();
        auth.add_token("T=alice:ops").unwrap();
        auth.allow.push("alice:get:/metrics".parse().unwrap());
        let known = Review::Token
            .answer(&auth, br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"T"}}"#)
            .unwrap();
        assert_eq!(known["status"]["authenticated"], true);
        assert_eq!(known["status"]["user"]["username"], "alice");
        assert_eq!(known["status"]["user"]["groups"], json!(["ops"]));
        let unknown = Review::Token
            .answer(&auth, br#"{"spec":{"token":"X"}}"#)
            .unwrap();
        assert_eq!(unknown["status"]["authenticated"], false);

        let sar = |user: &str, verb: &str| {
            let body = json!({"spec": {"user": user, "groups": ["ops"], "nonResourceAttributes": {"path": "/metrics", "verb": verb}}});
            Review::SubjectAccess
                .answer(&auth, body.to_string().as_bytes())
                .unwrap()["status"]["allowed"]
                .clone()
        };
        assert_eq!(sar("alice", "get"), true);
        assert_eq!(sar("alice", "post"), false);
        assert_eq!(sar("bob", "get"), false);
        assert!(
            Review::SubjectAccess
                .answer(&auth, br#"{"spec":{"user":"alice"}}"#)
                .is_err()
        );
        assert_eq!(
            Review::find("authorization.k8s.io", "v1", "subjectaccessreviews"),
            Some(Review::SubjectAccess)
        );
        assert_eq!(
            Review::find("authorization.k8s.io", "v2", "subjectaccessreviews"),
            None
        );
        assert_eq!(Review::Token.plural(), "tokenreviews");
        assert!(resource_list("authentication.k8s.io", "v1").is_some());
        assert!(resource_list("apps", "v1").is_none());
    }
}
