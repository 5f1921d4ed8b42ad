//! The pod-template-hash, which names new ReplicaSets `<deployment>-<hash>`.
//!
//! Upstream hashes a `spew` dump of the Go struct with FNV-1a. That dump depends on Go's exact
//! struct layout of the Kubernetes version (every new PodSpec field changes it) and on
//! `resource.Quantity` internals (whether a cached string is kept depends on how the value
//! was parsed), none of which exists in k8s-openapi. Reproducing it byte-exactly is therefore
//! not attempted: nothing depends on it, because a Deployment recognizes its ReplicaSets by
//! template equality (see `template`), not by hash, so ReplicaSets created by upstream are
//! adopted and reused whatever their hash; only the *name* of a ReplicaSet created here
//! differs from the one upstream would have chosen.
//!
//! What is kept from upstream: 32-bit FNV-1a; the collision count mixed in as 8 bytes
//! (little-endian u32 then 4 zero bytes) only when it is set, so a nil count and 0 differ;
//! the decimal rendering mapped through the safe-encoding alphabet. The input is a canonical
//! serialization that is stable across runs and k8s-openapi field orderings: the template's
//! JSON (without the hash label) with object keys sorted at every level.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

use crate::template::without_hash_label;

const FNV_OFFSET_BASIS: u32 = 2_166_136_261;
const FNV_PRIME: u32 = 16_777_619;

/// Alphabet of `rand.SafeEncodeString`: no vowels (no words) and no easily confused glyphs.
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// 32-bit FNV-1a, continuing from `state`.
fn fnv1a(mut state: u32, bytes: &[u8]) -> u32 {
    for byte in bytes {
        state ^= u32::from(*byte);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// SafeEncodeString: each byte mapped to `alphabet[byte % 27]`.
pub fn safe_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| char::from(SAFE_ALPHABET[usize::from(byte) % SAFE_ALPHABET.len()]))
        .collect()
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

/// The canonical text hashed for `template` (sorted-keys JSON without the hash label).
pub fn canonical_template_text(template: &PodTemplateSpec) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(without_hash_label(template))?;
    let mut out = String::new();
    write_canonical(&value, &mut out);
    Ok(out)
}

/// ComputeHash: the pod-template-hash of `template` with the Deployment's
/// `status.collisionCount` (see module doc). Serializing a k8s-openapi template only fails on
/// a time outside the printable range; such a template is hashed as the empty text.
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
    safe_encode(&state.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::constants::POD_TEMPLATE_HASH_LABEL;
    use crate::replica_set::test_support::template;

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
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
    }

    #[test]
    fn hash_is_stable_and_ignores_the_hash_label() {
        let t = template("nginx:1.27");
        let first = compute_hash(&t, None);
        assert_eq!(first, compute_hash(&t.clone(), None));
        assert!(first.bytes().all(|b| SAFE_ALPHABET.contains(&b)));
        let mut labelled = t.clone();
        if let Some(labels) = labelled.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
            labels.insert(POD_TEMPLATE_HASH_LABEL.to_owned(), "zzz".to_owned());
        }
        assert_eq!(first, compute_hash(&labelled, None));
        assert_ne!(first, compute_hash(&template("nginx:1.28"), None));
    }

    #[test]
    fn collision_count_nil_and_zero_differ() {
        let t = template("nginx:1.27");
        let none = compute_hash(&t, None);
        let zero = compute_hash(&t, Some(0));
        let one = compute_hash(&t, Some(1));
        assert_ne!(none, zero);
        assert_ne!(zero, one);
        assert_ne!(none, one);
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
}
