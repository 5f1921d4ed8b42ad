//! Labels (and a workload's annotations) in one small allocation: what the controllers read,
//! without a map.
//!
//! Why not the `BTreeMap<String, String>` of `ObjectMeta`: a map of even one entry allocates a
//! whole B-tree leaf (544 bytes, 640 in jemalloc's size classes) plus a string per key and per
//! value, about 700 bytes for a pod's usual two labels, 49 MB at 70,000 pods. The controllers
//! only look labels up by key (selector matching, identity checks) and walk them in order, so
//! one string holding the entries back to back does: about 64 bytes for the same two labels.
//!
//! Encoding: for each entry in key order, `<key length>:<key><value length>:<value>`, lengths in
//! decimal bytes. Length prefixes rather than separators, so no key or value, however odd, can be
//! misread.

use std::{
    collections::BTreeMap,
    fmt::{self, Write},
};

use serde::{Deserialize, Deserializer, de};

/// Labels (key to value, keys unique and in order), held as one string. The default has none.
///
/// Like `ObjectMeta`'s `Option<BTreeMap>`, it tells an absent map (`None`) from an empty one
/// (an empty string, which allocates nothing), so an object written back keeps `{}` where it
/// had it; lookups treat both as no labels.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct CompactLabels(Option<Box<str>>);

impl CompactLabels {
    /// The value of label `key`, if the labels have it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter()
            .find(|(entry, _)| *entry == key)
            .map(|(_, value)| value)
    }

    /// Whether label `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        self.0.as_deref().is_none_or(str::is_empty)
    }

    /// The number of labels.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// The labels in key order.
    pub fn iter(&self) -> LabelEntries<'_> {
        LabelEntries {
            rest: self.0.as_deref().unwrap_or_default(),
        }
    }

    /// The labels as the map `ObjectMeta` holds (for code that builds or compares objects).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect()
    }

    /// The labels as `ObjectMeta` holds them: `None` when absent, a map (maybe empty) when
    /// present.
    pub fn to_optional_map(&self) -> Option<BTreeMap<String, String>> {
        self.0.is_some().then(|| self.to_map())
    }

    /// Changes the labels through their map form (writes are rare; reads stay compact).
    pub fn edit<T>(&mut self, change: impl FnOnce(&mut BTreeMap<String, String>) -> T) -> T {
        let mut map = self.to_map();
        let result = change(&mut map);
        *self = Self::from(&map);
        result
    }

    /// The labels of a map of borrowed keys and values (no owned map built on the way).
    pub fn from_entries(entries: BTreeMap<&str, &str>) -> Self {
        Self::encode(entries)
    }

    /// Encodes `entries`, which must be in strictly increasing key order.
    fn encode<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut text = String::new();
        for (key, value) in entries {
            for part in [key, value] {
                // Writing to a `String` cannot fail; no temporary string per length.
                let _ = write!(text, "{}:", part.len());
                text.push_str(part);
            }
        }
        Self(Some(text.into_boxed_str()))
    }
}

impl From<&BTreeMap<String, String>> for CompactLabels {
    fn from(map: &BTreeMap<String, String>) -> Self {
        Self::encode(
            map.iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
        )
    }
}

impl From<BTreeMap<String, String>> for CompactLabels {
    fn from(map: BTreeMap<String, String>) -> Self {
        Self::from(&map)
    }
}

impl<'a> IntoIterator for &'a CompactLabels {
    type Item = (&'a str, &'a str);
    type IntoIter = LabelEntries<'a>;

    fn into_iter(self) -> LabelEntries<'a> {
        self.iter()
    }
}

impl fmt::Debug for CompactLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Decodes a JSON object of strings, or `null`, as `ObjectMeta.labels` decodes: a repeated key
/// keeps its last value.
impl<'de> Deserialize<'de> for CompactLabels {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_option(OptionalLabels)
    }
}

struct OptionalLabels;

impl<'de> de::Visitor<'de> for OptionalLabels {
    type Value = CompactLabels;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of label keys to values, or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<CompactLabels, E> {
        Ok(CompactLabels::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<CompactLabels, E> {
        Ok(CompactLabels::default())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<CompactLabels, D::Error> {
        deserializer.deserialize_map(self)
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<CompactLabels, A::Error> {
        let mut entries: Vec<(String, String)> = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry::<String, String>()? {
            entries.push(entry);
        }
        // A stable sort keeps repeated keys in arrival order; the last of each run wins.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(&str, &str)> = Vec::with_capacity(entries.len());
        for (key, value) in &entries {
            match kept.last_mut() {
                Some(last) if last.0 == key => last.1 = value,
                _ => kept.push((key, value)),
            }
        }
        Ok(CompactLabels::encode(kept))
    }
}

/// The entries of [`CompactLabels`], in key order.
#[derive(Clone, Debug)]
pub struct LabelEntries<'a> {
    rest: &'a str,
}

impl<'a> LabelEntries<'a> {
    /// The next length-prefixed part; `None` at the end (or on text this module did not write).
    fn part(&mut self) -> Option<&'a str> {
        let (length, tail) = self.rest.split_once(':')?;
        let length: usize = length.parse().ok()?;
        let part = tail.get(..length)?;
        self.rest = tail.get(length..)?;
        Some(part)
    }
}

impl<'a> Iterator for LabelEntries<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match (self.part(), self.part()) {
            (Some(key), Some(value)) => Some((key, value)),
            _ => {
                self.rest = "";
                None
            }
        }
    }
}

/// A label map of `entries`, for tests.
#[cfg(test)]
pub(crate) fn label_map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{label_map as map, *};

    #[test]
    fn keeps_every_entry_in_key_order_whatever_it_holds() {
        let cases: Vec<(&str, BTreeMap<String, String>)> = vec![
            ("none", map(&[])),
            ("one", map(&[("app", "web")])),
            (
                "a pod's usual two",
                map(&[("app", "web"), ("pod-template-hash", "5d8f7c9b4")]),
            ),
            ("empty value", map(&[("tier", ""), ("app", "web")])),
            (
                "separators and digits inside",
                map(&[("a:1", "2:b"), ("12", "3:4:"), ("x", "é:ü")]),
            ),
            ("empty key", map(&[("", "v")])),
        ];
        for (name, labels) in cases {
            let compact = CompactLabels::from(&labels);
            assert_eq!(compact.to_map(), labels, "{name}");
            assert_eq!(compact.len(), labels.len(), "{name}");
            assert_eq!(compact.is_empty(), labels.is_empty(), "{name}");
            for (key, value) in &labels {
                assert_eq!(compact.get(key), Some(value.as_str()), "{name}: {key}");
            }
            assert_eq!(compact.get("absent"), None, "{name}");
        }
    }

    #[test]
    fn decodes_as_object_meta_decodes_labels() {
        let cases = [
            (r#"{"b":"2","a":"1"}"#, map(&[("a", "1"), ("b", "2")])),
            (r#"{"a":"1","a":"2"}"#, map(&[("a", "2")])),
            (r#"{}"#, map(&[])),
            (r#"null"#, map(&[])),
        ];
        for (json, expected) in cases {
            let compact: CompactLabels = serde_json::from_str(json).expect(json);
            assert_eq!(compact.to_map(), expected, "{json}");
            let as_map: Option<BTreeMap<String, String>> = serde_json::from_str(json).expect(json);
            assert_eq!(compact.to_map(), as_map.unwrap_or_default(), "{json}");
        }
    }

    #[test]
    fn refuses_what_object_meta_refuses() {
        for json in [r#"{"a":1}"#, r#"["a"]"#, r#""a""#, r#"{"a":null}"#] {
            assert!(
                serde_json::from_str::<CompactLabels>(json).is_err(),
                "{json}"
            );
            assert!(
                serde_json::from_str::<Option<BTreeMap<String, String>>>(json).is_err(),
                "{json}"
            );
        }
    }

    #[test]
    fn an_empty_map_is_present_but_has_no_labels() {
        let empty = CompactLabels::from(&map(&[]));
        assert!(empty.is_empty());
        assert_eq!(empty.to_optional_map(), Some(map(&[])));
        assert!(CompactLabels::default().is_empty());
        assert_eq!(CompactLabels::default().to_optional_map(), None);
        let absent: CompactLabels = serde_json::from_str("null").expect("decodes");
        assert_eq!(absent.to_optional_map(), None);
        let present: CompactLabels = serde_json::from_str("{}").expect("decodes");
        assert_eq!(present.to_optional_map(), Some(map(&[])));
    }
}
