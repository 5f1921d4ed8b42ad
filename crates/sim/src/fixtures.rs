//! The recorded v1.28 API server responses in `shared/fixtures`, for unit tests that check
//! the sim's bodies against upstream's.

use serde_json::Value;

/// The fixture file `name`, parsed (panics with the path if it is missing or not JSON).
pub(crate) fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/../../../shared/fixtures/apiserver-v1.28/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}
