//! The answer a shadow write gets instead of the API server's: what the server would most
//! likely have said, so the controller goes on exactly as it would after a successful write.
//!
//! * A create answers the object with a generated name filled in, and without a UID or a
//!   resourceVersion: the controllers' stale-read guards ([`controller_toolkit::stale_reads`])
//!   then wait for nothing that only a real write would bring.
//! * An update answers the object as sent: its resourceVersion is the cached one, so the next
//!   sync does not wait for a newer copy.
//! * A patch answers the patch applied to a skeleton of the object (callers only need it to
//!   decode); a delete answers a success `Status`.

use std::sync::atomic::{AtomicU64, Ordering};

use controller_toolkit::writes::{Write, WriteVerb};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value, json};

/// The characters of generated name suffixes (apimachinery's `rand.String` alphabet).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Numbers the generated names of one process.
static GENERATED: AtomicU64 = AtomicU64::new(0);

/// The five-character suffix of the `n`th generated name.
fn suffix(mut n: u64) -> String {
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize];
            n /= ALPHABET.len() as u64;
            c as char
        })
        .collect()
}

/// What the server would answer `write`.
pub fn answer_for(write: &Write) -> Result<String, kube::Error> {
    let body = || serde_json::from_slice::<Value>(&write.body).map_err(kube::Error::SerdeError);
    let answer = match &write.verb {
        WriteVerb::Create => {
            let mut object = body()?;
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("uid");
                meta.remove("resourceVersion");
                let unnamed = meta
                    .get("name")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                if unnamed && let Some(prefix) = meta.get("generateName").and_then(Value::as_str) {
                    let name = format!(
                        "{prefix}{}",
                        suffix(GENERATED.fetch_add(1, Ordering::Relaxed))
                    );
                    meta.insert("name".into(), Value::from(name));
                }
                meta.entry("creationTimestamp")
                    .or_insert_with(|| Value::from(Timestamp::now().to_string()));
            }
            object
        }
        WriteVerb::Update | WriteVerb::UpdateStatus => {
            return String::from_utf8(write.body.to_vec()).map_err(kube::Error::FromUtf8);
        }
        WriteVerb::StrategicPatch | WriteVerb::MergePatch => {
            let mut object = json!({
                "apiVersion": write.resource.api_version,
                "kind": write.resource.kind,
                "metadata": {"name": write.name, "namespace": write.namespace},
            });
            merge(&mut object, &body()?);
            object
        }
        WriteVerb::Delete { .. } => {
            json!({"apiVersion": "v1", "kind": "Status", "status": "Success"})
        }
    };
    serde_json::to_string(&answer).map_err(kube::Error::SerdeError)
}

/// A JSON merge patch (RFC 7386) of `patch` onto `target`, skipping strategic-merge
/// directives (`$patch`, `$setElementOrder/...`).
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return;
    };
    for (key, value) in patch.iter().filter(|(key, _)| !key.starts_with('$')) {
        match value {
            Value::Null => {
                target.remove(key);
            }
            _ => merge(target.entry(key.clone()).or_insert(Value::Null), value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use controller_toolkit::writes::Propagation;
    use kube::core::ApiResource;

    fn write(verb: WriteVerb, body: Value) -> Write {
        Write {
            verb,
            resource: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "Pod".into(),
                plural: "pods".into(),
            },
            namespace: "ns".into(),
            name: "p".into(),
            uid: None,
            body: serde_json::to_vec(&body).expect("encodes").into(),
            reason: "test",
        }
    }

    fn answer(write: &Write) -> Value {
        serde_json::from_str(&answer_for(write).expect("answers")).expect("JSON")
    }

    #[test]
    fn create_names_a_generated_object_and_drops_uid_and_version() {
        let created = answer(&write(
            WriteVerb::Create,
            json!({"metadata": {"generateName": "rs-", "uid": "u", "resourceVersion": "9"}}),
        ));
        let name = created["metadata"]["name"].as_str().expect("named");
        assert!(name.starts_with("rs-") && name.len() == 8, "{name}");
        assert!(created["metadata"].get("uid").is_none());
        assert!(created["metadata"].get("resourceVersion").is_none());
        assert!(created["metadata"]["creationTimestamp"].is_string());
    }

    #[test]
    fn generated_suffixes_differ() {
        assert_ne!(suffix(0), suffix(1));
        assert_eq!(suffix(0).len(), 5);
    }

    #[test]
    fn update_answers_the_object_as_sent() {
        let body =
            json!({"metadata": {"name": "p", "resourceVersion": "7"}, "spec": {"replicas": 2}});
        assert_eq!(answer(&write(WriteVerb::Update, body.clone())), body);
    }

    #[test]
    fn patch_applies_to_a_skeleton_without_directives() {
        let patched = answer(&write(
            WriteVerb::StrategicPatch,
            json!({"metadata": {"ownerReferences": [{"uid": "o"}], "$setElementOrder/ownerReferences": []}}),
        ));
        assert_eq!(patched["kind"], "Pod");
        assert_eq!(patched["metadata"]["name"], "p");
        assert_eq!(patched["metadata"]["ownerReferences"][0]["uid"], "o");
        assert!(
            patched["metadata"]
                .get("$setElementOrder/ownerReferences")
                .is_none()
        );
    }

    #[test]
    fn delete_answers_success() {
        let status = answer(&write(
            WriteVerb::Delete {
                precondition: false,
                propagation: Propagation::ServerDefault,
            },
            json!({}),
        ));
        assert_eq!(status["kind"], "Status");
    }
}
