//! Parts of cached objects held as compact JSON and decoded on use: pod templates and label
//! selectors.
//!
//! Why: k8s-openapi's decoded types are large before any string (a `PodTemplateSpec`'s
//! `PodSpec` is 1,464 bytes inline, each `Container` 2,144), and every map in them, a
//! selector's `matchLabels` included, is a 544-byte B-tree node whatever its number of
//! entries. The same values as JSON are a few dozen to a few hundred bytes. Controllers read
//! these parts only at some points of a sync (to build a selector, create pods, compare or hash
//! a template), so decoding them there costs little CPU and saves most of each cached object.

use std::{fmt, marker::PhantomData};

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::DeserializeOwned};
use serde_json::value::RawValue;

/// A `T` held as compact JSON (k8s-openapi's serialization of it).
///
/// Invariant: the JSON decodes back into a `T`. [`encode`](Self::encode) checks it once, so
/// [`decode`](Self::decode) cannot fail.
pub struct CompactJson<T> {
    json: Box<RawValue>,
    decodes_to: PhantomData<fn() -> T>,
}

impl<T: Serialize + DeserializeOwned> CompactJson<T> {
    /// Encodes `value`. Fails only where k8s-openapi cannot serialize the value or read its own
    /// output back (a timestamp outside the years it prints), so no value stored here fails to
    /// decode.
    pub fn encode(value: &T) -> Result<Self, serde_json::Error> {
        let json = serde_json::value::to_raw_value(value)?;
        serde_json::from_str::<T>(json.get())?;
        Ok(Self {
            json,
            decodes_to: PhantomData,
        })
    }

    /// The value, decoded.
    pub fn decode(&self) -> T {
        // Cannot fail: `encode`, the only way in, decoded this very text.
        serde_json::from_str(self.json.get()).expect("a CompactJson decodes")
    }
}

impl<T> CompactJson<T> {
    /// The value's JSON text.
    pub fn as_json(&self) -> &str {
        self.json.get()
    }
}

/// The JSON of `T::default()`: Go's zero value of the API type, as k8s-openapi serializes it.
impl<T: Serialize + DeserializeOwned + Default> Default for CompactJson<T> {
    fn default() -> Self {
        // Cannot fail: k8s-openapi serializes and reads back the defaults of its own types.
        Self::encode(&T::default()).expect("a default value encodes")
    }
}

impl<T> Clone for CompactJson<T> {
    fn clone(&self) -> Self {
        Self {
            json: self.json.clone(),
            decodes_to: PhantomData,
        }
    }
}

/// Equal values have equal JSON: k8s-openapi writes fields in a fixed order and maps in key
/// order.
impl<T> PartialEq for CompactJson<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl<T> Eq for CompactJson<T> {}

impl<T> fmt::Debug for CompactJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CompactJson").field(&self.as_json()).finish()
    }
}

/// Decodes a whole `T` (any deserializer, so `serde_json::from_value` works as well as the
/// watch stream) and keeps its compact JSON.
impl<'de, T: Serialize + DeserializeOwned> Deserialize<'de> for CompactJson<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = T::deserialize(deserializer)?;
        Self::encode(&value).map_err(serde::de::Error::custom)
    }
}

/// Writes the JSON as it is (the value is embedded, not quoted).
impl<T> Serialize for CompactJson<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    use crate::{CachedReplicaSet, CompactLabelSelector};

    fn selector() -> LabelSelector {
        LabelSelector {
            match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".to_owned(),
                operator: "In".to_owned(),
                values: Some(vec!["front".to_owned()]),
            }]),
        }
    }

    #[test]
    fn a_selector_round_trips_and_writes_back_as_it_came() {
        let compact = CompactLabelSelector::encode(&selector()).expect("encodes");
        assert_eq!(compact.decode(), selector());
        assert_eq!(
            serde_json::to_value(&compact).expect("serializes"),
            serde_json::to_value(selector()).expect("serializes")
        );
        assert_eq!(CompactLabelSelector::default().as_json(), "{}");
        assert_eq!(
            CompactLabelSelector::default().decode(),
            LabelSelector::default()
        );
    }

    #[test]
    fn a_missing_or_null_selector_is_the_empty_one() {
        for spec in [
            serde_json::json!({"replicas": 1}),
            serde_json::json!({"replicas": 1, "selector": null}),
        ] {
            let rs: CachedReplicaSet = serde_json::from_value(
                serde_json::json!({"metadata": {"name": "web"}, "spec": spec}),
            )
            .expect("decodes");
            let selector = rs.spec.expect("spec").selector;
            assert_eq!(selector, CompactLabelSelector::default(), "{selector:?}");
        }
    }

    #[test]
    fn a_selector_that_does_not_decode_is_refused() {
        let refused = serde_json::from_value::<CompactLabelSelector>(serde_json::json!({
            "matchLabels": "not a map"
        }));
        assert!(refused.is_err());
    }
}
