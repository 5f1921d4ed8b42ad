//! ControllerRevision hashing and naming, as `pkg/controller/history` does it.
//!
//! The hash is FNV-1 (not FNV-1a) 32-bit over the revision's data bytes followed by the decimal
//! collision count, rendered in base 10 and passed through apimachinery's `SafeEncodeString`.
//! The name is `<parent>-<hash>`. Getting any of this wrong renames every revision and, through
//! the pods' `controller-revision-hash` label, restarts every StatefulSet pod on takeover.

const FNV1_32_OFFSET_BASIS: u32 = 2_166_136_261;
const FNV1_32_PRIME: u32 = 16_777_619;

/// The characters `SafeEncodeString` maps to: no vowels, no confusable digits, so generated
/// names never spell words.
const SAFE_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream cuts the parent name to this many bytes before appending `-<hash>`, keeping the
/// revision name within the 253-byte limit for object names.
pub const MAX_NAME_PREFIX_BYTES: usize = 223;

/// Go's `hash/fnv.New32`: FNV-1, multiply then XOR.
#[derive(Debug, Clone, Copy)]
struct Fnv1Hasher32(u32);

impl Fnv1Hasher32 {
    fn new() -> Self {
        Self(FNV1_32_OFFSET_BASIS)
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.wrapping_mul(FNV1_32_PRIME) ^ u32::from(*byte);
        }
    }
}

/// Maps every character to the safe alphabet (`alphabet[code point mod 27]`), as
/// `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`.
pub fn safe_encode_string(text: &str) -> String {
    text.chars()
        .map(|character| char::from(SAFE_ALPHABET[(character as usize) % SAFE_ALPHABET.len()]))
        .collect()
}

/// The raw FNV-1 32-bit value over `data` and then the decimal `collision_count` (nothing for
/// `None`, which therefore differs from `Some(0)`).
pub fn fnv1_32_with_collision_count(data: &[u8], collision_count: Option<i32>) -> u32 {
    let mut hasher = Fnv1Hasher32::new();
    hasher.write(data);
    if let Some(count) = collision_count {
        hasher.write(count.to_string().as_bytes());
    }
    hasher.0
}

/// `HashControllerRevision`: the safe-encoded hash of revision data bytes and collision count,
/// used both as the `controller.kubernetes.io/hash` label and as the name suffix.
pub fn hash_revision_data(data: &[u8], collision_count: Option<i32>) -> String {
    safe_encode_string(&fnv1_32_with_collision_count(data, collision_count).to_string())
}

/// `ControllerRevisionName`: `<prefix>-<hash>` with the prefix cut to
/// [`MAX_NAME_PREFIX_BYTES`]. Object names are ASCII; should a prefix contain multi-byte
/// characters, the cut moves back to a character boundary instead of splitting one.
pub fn controller_revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(MAX_NAME_PREFIX_BYTES);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_reference_values() {
        // Published FNV-1 32-bit test vectors (not FNV-1a).
        let cases: [(&[u8], u32); 3] = [
            (b"", 0x811c_9dc5),
            (b"a", 0x050c_5d7e),
            (b"foobar", 0x31f0_b262),
        ];
        for (input, want) in cases {
            assert_eq!(fnv1_32_with_collision_count(input, None), want, "{input:?}");
        }
    }

    #[test]
    fn collision_count_is_appended_as_decimal_text() {
        let cases = [
            (Some(0), b"data0".as_slice()),
            (Some(12), b"data12"),
            (Some(-3), b"data-3"),
            (None, b"data"),
        ];
        for (count, equivalent_bytes) in cases {
            assert_eq!(
                fnv1_32_with_collision_count(b"data", count),
                fnv1_32_with_collision_count(equivalent_bytes, None),
                "{count:?}"
            );
        }
    }

    #[test]
    fn safe_encoding_of_digits() {
        assert_eq!(safe_encode_string("0123456789"), "456789bcdf");
        assert_eq!(safe_encode_string("3325552446"), "776999688b");
        assert_eq!(safe_encode_string(""), "");
        // Non-digits use the same modulo rule: 'a' is 97, 97 mod 27 = 16 -> 'v'.
        assert_eq!(safe_encode_string("a"), "v");
    }

    #[test]
    fn names() {
        let long = "x".repeat(300);
        let cases = [
            ("test", "c77f6d978", "test-c77f6d978".to_owned()),
            ("", "abc", "-abc".to_owned()),
            (long.as_str(), "h", format!("{}-h", "x".repeat(223))),
            (&long[..223], "h", format!("{}-h", "x".repeat(223))),
            (&long[..224], "h", format!("{}-h", "x".repeat(223))),
        ];
        for (prefix, hash, want) in cases {
            assert_eq!(
                controller_revision_name(prefix, hash),
                want,
                "prefix of {} bytes",
                prefix.len()
            );
        }
        let multibyte = format!("{}é", "x".repeat(222));
        assert_eq!(
            controller_revision_name(&multibyte, "h"),
            format!("{}-h", "x".repeat(222))
        );
    }
}
