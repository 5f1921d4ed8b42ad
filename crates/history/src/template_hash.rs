//! upstream `controller.ComputeHash`: the hash of a pod template that names the objects a
//! controller creates from it (a Deployment's ReplicaSets `<deployment>-<hash>`, and the
//! `pod-template-hash` label).
//!
//! Upstream hashes a `spew` dump of the Go struct with FNV-1a. That dump depends on Go's exact
//! struct layout of the Kubernetes version (every new PodSpec field changes it) and on
//! `resource.Quantity` internals (whether a cached string is kept depends on how the value
//! was parsed), none of which exists in k8s-openapi. Reproducing it byte-exactly is therefore
//! not attempted: nothing depends on it, because a controller recognizes what it created by
//! template equality, not by hash, so objects created by upstream are adopted and reused
//! whatever their hash; only the *name* of an object created here differs from the one
//! upstream would have chosen.
//!
//! What is kept from upstream: 32-bit FNV-1a (not the FNV-1 of ControllerRevisions); the
//! collision count mixed in as 8 bytes (little-endian u32 then 4 zero bytes) only when it is
//! set, so a nil count and 0 differ; the decimal rendering mapped through `SafeEncodeString`.
//! The input is a canonical serialization that is stable across runs and k8s-openapi field
//! orderings: the template's JSON with object keys sorted at every level, absent `metadata`
//! and `spec` taken as Go's zero values (they are non-pointer structs there).

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

use crate::hash::safe_encode_string;

const FNV_OFFSET_BASIS: u32 = 2_166_136_261;
const FNV_PRIME: u32 = 16_777_619;

/// 32-bit FNV-1a, continuing from `state`.
fn fnv1a(mut state: u32, bytes: &[u8]) -> u32 {
    for byte in bytes {
        state ^= u32::from(*byte);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// Writes `value` as JSON with object keys sorted at every level.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, member)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(member, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The canonical text hashed for `template` (see the module doc).
pub fn canonical_template_text(template: &PodTemplateSpec) -> Result<String, serde_json::Error> {
    let mut zero_filled = template.clone();
    zero_filled.metadata.get_or_insert_with(Default::default);
    zero_filled.spec.get_or_insert_with(Default::default);
    let value = serde_json::to_value(zero_filled)?;
    let mut out = String::new();
    write_canonical(&value, &mut out);
    Ok(out)
}

/// upstream `ComputeHash`: the hash of `template` with the owner's `status.collisionCount`.
/// Serializing a k8s-openapi template only fails on a time outside the printable range; such
/// a template is hashed as the empty text.
pub fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    let text = canonical_template_text(template).unwrap_or_else(|error| {
        tracing::warn!(%error, "pod template does not serialize; hashing an empty template");
        String::new()
    });
    let mut state = fnv1a(FNV_OFFSET_BASIS, text.as_bytes());
    if let Some(count) = collision_count {
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        state = fnv1a(state, &bytes);
    }
    safe_encode_string(&state.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::{api::core::v1::PodSpec, apimachinery::pkg::apis::meta::v1::ObjectMeta};
    use serde_json::json;

    use super::*;

    /// The template the Deployment controller's tests name ReplicaSets from.
    fn template(image: &str) -> PodTemplateSpec {
        serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": image}]}
        }))
        .expect("a valid template")
    }

    #[test]
    fn fnv1a_reference_vectors() {
        // Published FNV-1a 32-bit test vectors.
        assert_eq!(fnv1a(FNV_OFFSET_BASIS, b""), 0x811c_9dc5);
        assert_eq!(fnv1a(FNV_OFFSET_BASIS, b"a"), 0xe40c_292c);
        assert_eq!(fnv1a(FNV_OFFSET_BASIS, b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn safe_encoding_maps_digits_like_upstream() {
        // '0'=48 -> 48%27=21 -> '4' ... '9'=57 -> 57%27=3 -> 'f'.
        assert_eq!(safe_encode_string("0123456789"), "456789bcdf");
    }

    /// Golden values: the names kcm-rs has given ReplicaSets since the Deployment controller
    /// was written. A change here renames every ReplicaSet it creates from then on.
    #[test]
    fn hashes_are_the_names_kcm_rs_has_always_given() {
        let cases = [
            ("nginx:1.27", None),
            ("nginx:1.27", Some(0)),
            ("nginx:1.27", Some(1)),
            ("nginx:1.28", None),
        ];
        let hashes: Vec<String> = cases
            .iter()
            .map(|(image, count)| compute_hash(&template(image), *count))
            .collect();
        assert_eq!(hashes, GOLDEN_HASHES);
    }

    #[test]
    fn collision_count_nil_and_zero_differ_and_absent_parts_are_zero_values() {
        let t = template("nginx:1.27");
        let none = compute_hash(&t, None);
        assert_ne!(none, compute_hash(&t, Some(0)));
        assert_ne!(compute_hash(&t, Some(0)), compute_hash(&t, Some(1)));
        assert_eq!(
            compute_hash(&PodTemplateSpec::default(), None),
            compute_hash(
                &PodTemplateSpec {
                    metadata: Some(ObjectMeta::default()),
                    spec: Some(PodSpec::default()),
                },
                None
            )
        );
    }

    #[test]
    fn canonical_text_sorts_keys() {
        let mut t = template("nginx:1");
        if let Some(m) = t.metadata.as_mut() {
            m.annotations = Some(BTreeMap::from([("z".to_owned(), "1".to_owned())]));
        }
        let text = canonical_template_text(&t).expect("serializes");
        let annotations = text.find("\"annotations\"").expect("present");
        let labels = text.find("\"labels\"").expect("present");
        assert!(annotations < labels, "{text}");
    }

    const GOLDEN_HASHES: [&str; 4] = ["787cdcbd95", "fb5746ff9", "7bdfb4cd9d", "56c787d798"];
}
