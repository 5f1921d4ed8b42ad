//! Reading API server failures the way client-go's `apierrors` helpers do.
//!
//! Upstream's controllers branch on the *kind* of failure (NotFound is success for a release,
//! Invalid is ignored, a create refused because the namespace is terminating is not an error)
//! and print a failure as the server's Status message. `kube::Error` renders differently
//! (`ApiError: ... (Status {...})`), so this module gives the upstream view of an error.

/// The `StatusCause` type the API server sets when a create is refused because the namespace is
/// being deleted (upstream `v1.NamespaceTerminatingCause`).
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// The `StatusReason`s apimachinery knows (its `knownReasons`); for any other reason,
/// including none, the HTTP code decides.
const KNOWN_REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StorageReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// apimachinery's `reasonAndCodeForError` test: the reason matches, or the error's reason is not
/// a known one and the code matches. (kube's `Status::is_*` helpers look at whether the
/// *expected* reason is known, so they never fall back to the code.)
fn reason_or_code(err: &kube::Error, reason: &str, code: u16) -> bool {
    match err {
        kube::Error::Api(status) => {
            status.reason == reason
                || (!KNOWN_REASONS.contains(&status.reason.as_str()) && status.code == code)
        }
        _ => false,
    }
}

/// Whether the server answered NotFound (reason `NotFound`, or code 404 without a known reason).
pub fn is_not_found(err: &kube::Error) -> bool {
    reason_or_code(err, "NotFound", 404)
}

/// Whether the server answered Invalid (reason `Invalid`, or code 422 without a known reason).
pub fn is_invalid(err: &kube::Error) -> bool {
    reason_or_code(err, "Invalid", 422)
}

/// Whether the server answered Conflict: the object changed since it was read (reason
/// `Conflict`, or code 409 without a known reason).
pub fn is_conflict(err: &kube::Error) -> bool {
    reason_or_code(err, "Conflict", 409)
}

/// Whether the server answered AlreadyExists (by reason only, as apimachinery).
pub fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.reason == "AlreadyExists")
}

/// Whether the Status details carry a cause of the given type (upstream `HasStatusCause`).
pub fn has_status_cause(err: &kube::Error, cause_type: &str) -> bool {
    match err {
        kube::Error::Api(status) => status
            .details
            .as_ref()
            .is_some_and(|details| details.causes.iter().any(|c| c.reason == cause_type)),
        _ => false,
    }
}

/// The error as upstream prints it: the server's Status message for API failures, the
/// transport error otherwise.
pub fn error_message(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;
    use kube::core::response::{StatusCause, StatusDetails};

    fn api(status: Status) -> kube::Error {
        kube::Error::Api(Box::new(status))
    }

    fn fixture(json: &str) -> kube::Error {
        api(serde_json::from_str(json).expect("fixture parses as Status"))
    }

    const NOT_FOUND: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"pods"},"code":404}"#;
    const INVALID: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Deployment.apps \"bad\" is invalid","reason":"Invalid","details":{"name":"bad","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueInvalid","message":"m","field":"f"}]},"code":422}"#;

    #[test]
    fn classifies_captured_statuses() {
        let not_found = fixture(NOT_FOUND);
        let invalid = fixture(INVALID);
        assert!(is_not_found(&not_found));
        assert!(!is_invalid(&not_found));
        assert!(is_invalid(&invalid));
        assert!(!is_not_found(&invalid));
        assert_eq!(error_message(&not_found), "pods \"nope\" not found");
        assert!(has_status_cause(&invalid, "FieldValueInvalid"));
        assert!(!has_status_cause(&invalid, NAMESPACE_TERMINATING_CAUSE));
    }

    #[test]
    fn detects_namespace_terminating_cause() {
        let err = api(
            Status::failure("pods \"p\" is forbidden: unable to create new content in namespace gone because it is being terminated", "Forbidden")
                .with_code(403)
                .with_details(StatusDetails {
                    name: String::new(),
                    group: String::new(),
                    kind: String::new(),
                    uid: String::new(),
                    causes: vec![StatusCause {
                        reason: NAMESPACE_TERMINATING_CAUSE.to_owned(),
                        message: "namespace gone is being terminated".to_owned(),
                        field: "metadata.namespace".to_owned(),
                    }],
                    retry_after_seconds: 0,
                }),
        );
        assert!(has_status_cause(&err, NAMESPACE_TERMINATING_CAUSE));
        assert!(!is_not_found(&err));
    }

    #[test]
    fn code_decides_only_when_the_reason_is_unknown() {
        // (reason, code, not found, invalid)
        let cases = [
            ("NotFound", 404, true, false),
            ("", 404, true, false),
            ("SomethingNew", 404, true, false),
            ("Conflict", 404, false, false),
            ("NotFound", 500, true, false),
            ("Invalid", 422, false, true),
            ("", 422, false, true),
            ("BadRequest", 422, false, false),
            ("", 409, false, false),
        ];
        for (reason, code, not_found, invalid) in cases {
            let err = api(Status::failure("m", reason).with_code(code));
            assert_eq!(is_not_found(&err), not_found, "{reason} {code}");
            assert_eq!(is_invalid(&err), invalid, "{reason} {code}");
        }
    }

    #[test]
    fn already_exists_is_by_reason() {
        let err = api(Status::failure("exists", "AlreadyExists").with_code(409));
        assert!(is_already_exists(&err));
        assert!(!is_already_exists(&fixture(NOT_FOUND)));
    }
}
