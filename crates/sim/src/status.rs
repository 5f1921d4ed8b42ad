//! API errors and the `Status` bodies that carry them, shaped exactly like a real API
//! server's (kind, apiVersion, metadata, status, message, reason, details, code), because
//! clients branch on `reason` and `code`.

use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;

/// One failing field of a 422 Invalid answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cause {
    pub reason: &'static str,
    pub message: String,
    pub field: String,
}

impl Cause {
    /// `FieldValueInvalid`: the value is wrong; message as upstream's `field.Invalid`.
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {value}: {detail}"),
            field: field.to_string(),
        }
    }

    /// `FieldValueRequired`: the value is missing.
    pub fn required(field: &str) -> Self {
        Self {
            reason: "FieldValueRequired",
            message: "Required value".to_string(),
            field: field.to_string(),
        }
    }

    /// `FieldValueRequired` with upstream's detail (`Required value: <detail>`).
    pub fn required_because(field: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueRequired",
            message: format!("Required value: {detail}"),
            field: field.to_string(),
        }
    }

    /// `FieldValueInvalid` without the value, as upstream's `field.OmitValueType`.
    pub fn invalid_omitted(field: &str, detail: &str) -> Self {
        Self {
            reason: "FieldValueInvalid",
            message: format!("Invalid value: {detail}"),
            field: field.to_string(),
        }
    }

    /// `FieldValueNotSupported`: `value` (already rendered) is not one of `supported`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {value}: supported values: {}",
                quoted.join(", ")
            ),
            field: field.to_string(),
        }
    }

    /// `FieldValueDuplicate`: `value` (already rendered) appears twice.
    pub fn duplicate(field: &str, value: &str) -> Self {
        Self {
            reason: "FieldValueDuplicate",
            message: format!("Duplicate value: {value}"),
            field: field.to_string(),
        }
    }

    /// `FieldValueTooMany`: a list longer than `max`.
    pub fn too_many(field: &str, actual: usize, max: usize) -> Self {
        Self {
            reason: "FieldValueTooMany",
            message: format!("Too many: {actual}: must have at most {max} items"),
            field: field.to_string(),
        }
    }

    /// `FieldValueTooLong`: a string longer than `max` bytes.
    pub fn too_long(field: &str, max: usize) -> Self {
        Self {
            reason: "FieldValueTooLong",
            message: format!("Too long: may not be more than {max} bytes"),
            field: field.to_string(),
        }
    }
}

/// The `details` of a `Status`: which object, and for 422 which fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
}

/// An error answer of the simulated API server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Box<Details>>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: String) -> Self {
        Self {
            code,
            reason,
            message,
            details: None,
            retry_after: None,
        }
    }

    fn with_resource(mut self, res: &ResourceInfo, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: Some(name.to_string()),
            group: Some(res.group.to_string()).filter(|g| !g.is_empty()),
            kind: Some(res.plural.to_string()),
            causes: Vec::new(),
        }));
        self
    }

    /// 404 NotFound for `name` of `res`.
    pub fn not_found(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", res.qualified_plural()),
        )
        .with_resource(res, name)
    }

    /// 409 AlreadyExists for `name` of `res`.
    pub fn already_exists(res: &ResourceInfo, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", res.qualified_plural()),
        )
        .with_resource(res, name)
    }

    /// 409 Conflict: the write was based on a stale resourceVersion.
    pub fn conflict(res: &ResourceInfo, name: &str) -> Self {
        Self::conflict_because(
            res,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with an explicit cause (failed preconditions, injected faults).
    pub fn conflict_because(res: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                res.qualified_plural()
            ),
        )
        .with_resource(res, name)
    }

    /// 403 Forbidden for `name` of `res` (admission refused it).
    pub fn forbidden(res: &ResourceInfo, name: &str, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {why}", res.qualified_plural()),
        )
        .with_resource(res, name)
    }

    /// 422 Invalid with the failing fields.
    pub fn invalid(res: &ResourceInfo, name: &str, causes: Vec<Cause>) -> Self {
        let summary = if causes.len() == 1 {
            format!("{}: {}", causes[0].field, causes[0].message)
        } else {
            let parts: Vec<String> = causes
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect();
            format!("[{}]", parts.join(", "))
        };
        let mut err = Self::new(
            422,
            "Invalid",
            format!("{} \"{name}\" is invalid: {summary}", res.qualified_kind()),
        )
        .with_resource(res, name);
        if let Some(details) = err.details.as_mut() {
            details.kind = Some(res.kind.to_string());
            details.causes = causes;
        }
        err
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message.into())
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
        )
    }

    /// 404 for a path that names no resource.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 410 Expired: a watch or continue token older than the retained window.
    pub fn expired(asked: u64, current: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {asked} ({current})"),
        )
    }

    /// 415 UnsupportedMediaType (e.g. server-side apply).
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (got {content_type})"
            ),
        )
    }

    /// 500 InternalError (injected fault).
    pub fn internal(message: &str) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
    }

    /// 429 TooManyRequests with a Retry-After hint (injected fault).
    pub fn too_many_requests() -> Self {
        let mut err = Self::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.".into(),
        );
        err.retry_after = Some(1);
        err
    }

    /// The `Status` object, with fields in upstream's order.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        status.insert("reason".into(), json!(self.reason));
        let mut details = Map::new();
        if let Some(d) = &self.details {
            if let Some(name) = &d.name {
                details.insert("name".into(), json!(name));
            }
            if let Some(group) = &d.group {
                details.insert("group".into(), json!(group));
            }
            if let Some(kind) = &d.kind {
                details.insert("kind".into(), json!(kind));
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), Value::Array(causes));
            }
        }
        if let Some(secs) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(secs));
        }
        if !details.is_empty() {
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::fixture;
    use crate::resources::{RESOURCES, find};

    #[test]
    fn status_bodies_match_the_fixtures() {
        let deploy = &RESOURCES[find("apps", "v1", "deployments").unwrap()];
        let pods = &RESOURCES[find("", "v1", "pods").unwrap()];
        let cause = "`selector` does not match template `labels`";
        let cases = [
            (ApiError::not_found(pods, "nope"), "status-404.json"),
            (
                ApiError::conflict(deploy, "web"),
                "status-409-conflict.json",
            ),
            (
                ApiError::already_exists(deploy, "web"),
                "status-409-exists.json",
            ),
            (
                ApiError::invalid(
                    deploy,
                    "bad",
                    vec![Cause::invalid(
                        "spec.template.metadata.labels",
                        "map[string]string{\"app\":\"web\"}",
                        cause,
                    )],
                ),
                "status-422-invalid.json",
            ),
        ];
        for (err, file) in cases {
            let body = err.to_status();
            assert_eq!(body, fixture(file), "{file}");
            let expected = serde_json::to_string(&fixture(file)).unwrap();
            assert_eq!(
                serde_json::to_string(&body).unwrap(),
                expected,
                "{file}: field order"
            );
        }
    }

    #[test]
    fn expired_matches_the_readme() {
        let body = ApiError::expired(5, 42).to_status();
        let expected: Value = serde_json::from_str(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (42)","reason":"Expired","code":410}"#).unwrap();
        assert_eq!(body, expected);
    }
}
