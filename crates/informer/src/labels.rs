//! Matching label selectors against cached objects, whatever holds their labels.
//!
//! kube's `Selector` matches only a `BTreeMap<String, String>`, and the cached types keep their
//! labels as [`CompactLabels`] (a map per object costs about 700 bytes). So the controllers match
//! through [`LabelMatcher`]: the same expressions, matched against any [`LabelLookup`]; and
//! generic code reads an object's labels through [`Labeled`], never through
//! `ObjectMeta::labels`, which the cached types leave empty.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{
        apps::v1::{ControllerRevision, Deployment, ReplicaSet, StatefulSet},
        core::v1::{PersistentVolumeClaim, Pod},
    },
    apimachinery::pkg::apis::meta::v1::LabelSelector,
};
use kube::core::{Expression, ParseExpressionError, Selector};

use crate::cached::{CachedDeployment, CachedPod, CachedReplicaSet, CompactLabels};

/// A set of labels that can be looked up by key.
pub trait LabelLookup {
    /// The value of label `key`, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl LabelLookup for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl LabelLookup for CompactLabels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// An object's labels, however the object holds them.
#[derive(Clone, Copy, Debug)]
pub enum Labels<'a> {
    /// `metadata.labels` of an API object (`None` when it has none).
    Map(Option<&'a BTreeMap<String, String>>),
    /// A cached pod's labels.
    Compact(&'a CompactLabels),
}

impl Labels<'_> {
    /// Whether there are no labels.
    pub fn is_empty(&self) -> bool {
        match self {
            Labels::Map(map) => map.is_none_or(BTreeMap::is_empty),
            Labels::Compact(compact) => compact.is_empty(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Labels::Map(map) => map.map_or(0, BTreeMap::len),
            Labels::Compact(compact) => compact.len(),
        }
    }

    /// The labels in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let (map, compact) = match self {
            Labels::Map(map) => (map.map(|map| map.iter()), None),
            Labels::Compact(compact) => (None, Some(compact.iter())),
        };
        map.into_iter()
            .flatten()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .chain(compact.into_iter().flatten())
    }
}

impl LabelLookup for Labels<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        match self {
            Labels::Map(map) => map.and_then(|map| map.label(key)),
            Labels::Compact(compact) => compact.get(key),
        }
    }
}

/// Same keys with the same values (no labels equals an empty map).
impl PartialEq for Labels<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self
                .iter()
                .all(|(key, value)| other.label(key) == Some(value))
    }
}

/// An object whose labels selectors match.
pub trait Labeled {
    /// The object's labels.
    fn labels(&self) -> Labels<'_>;
}

/// `Labeled` for the cached types, which keep their labels compact.
macro_rules! labeled_compact {
    ($($kind:ty),* $(,)?) => {
        $(
            impl Labeled for $kind {
                fn labels(&self) -> Labels<'_> {
                    Labels::Compact(&self.metadata.labels)
                }
            }
        )*
    };
}

labeled_compact!(CachedPod, CachedReplicaSet, CachedDeployment);

/// `Labeled` for types that keep their labels in `metadata.labels`.
macro_rules! labeled_by_object_meta {
    ($($kind:ty),* $(,)?) => {
        $(
            impl Labeled for $kind {
                fn labels(&self) -> Labels<'_> {
                    Labels::Map(self.metadata.labels.as_ref())
                }
            }
        )*
    };
}

labeled_by_object_meta!(
    ControllerRevision,
    Deployment,
    PersistentVolumeClaim,
    Pod,
    ReplicaSet,
    StatefulSet,
);

/// A label selector ready to match any [`LabelLookup`]: kube's `Selector`, whose expressions
/// it keeps. The default selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelMatcher {
    expressions: Box<[Expression]>,
}

impl LabelMatcher {
    /// Whether the selector has no requirement (it selects every object).
    pub fn selects_all(&self) -> bool {
        self.expressions.is_empty()
    }

    /// Whether `labels` meet every requirement, as kube's `Selector::matches`.
    pub fn matches(&self, labels: &impl LabelLookup) -> bool {
        self.expressions.iter().all(|expression| match expression {
            Expression::In(key, values) => labels.label(key).is_some_and(|v| values.contains(v)),
            Expression::NotIn(key, values) => labels.label(key).is_none_or(|v| !values.contains(v)),
            Expression::Exists(key) => labels.label(key).is_some(),
            Expression::DoesNotExist(key) => labels.label(key).is_none(),
            Expression::Equal(key, value) => labels.label(key) == Some(value.as_str()),
            Expression::NotEqual(key, value) => labels.label(key) != Some(value.as_str()),
        })
    }

    /// Whether the object's labels meet every requirement.
    pub fn selects(&self, object: &impl Labeled) -> bool {
        self.selects_all() || self.matches(&object.labels())
    }
}

impl From<Selector> for LabelMatcher {
    fn from(selector: Selector) -> Self {
        Self {
            expressions: selector.into_iter().collect(),
        }
    }
}

impl TryFrom<LabelSelector> for LabelMatcher {
    type Error = ParseExpressionError;

    /// Parses `selector` as kube's `Selector` does (the same errors).
    fn try_from(selector: LabelSelector) -> Result<Self, Self::Error> {
        Selector::try_from(selector).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use kube::core::SelectorExt;

    use super::*;
    use crate::cached::label_map as map;

    /// Every operator, against labels held as a map and as compact labels: the answer is
    /// kube's `Selector::matches` on the map.
    #[test]
    fn matches_as_kube_selector_matches_for_either_kind_of_labels() {
        let selectors = [
            serde_json::json!({}),
            serde_json::json!({"matchLabels": {"app": "web"}}),
            serde_json::json!({"matchLabels": {"app": "web", "tier": "front"}}),
            serde_json::json!({"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["web", "api"]}]}),
            serde_json::json!({"matchExpressions": [
                {"key": "app", "operator": "NotIn", "values": ["web"]}]}),
            serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            serde_json::json!({"matchExpressions": [
                {"key": "tier", "operator": "DoesNotExist"}]}),
            serde_json::json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                {"key": "tier", "operator": "NotIn", "values": ["back"]}]}),
        ];
        let label_sets = [
            map(&[]),
            map(&[("app", "web")]),
            map(&[("app", "api")]),
            map(&[("app", "web"), ("tier", "front")]),
            map(&[("app", "web"), ("tier", "back")]),
            map(&[("tier", "front")]),
        ];
        for selector in selectors {
            let parsed: LabelSelector = serde_json::from_value(selector.clone()).expect("selector");
            let kube = Selector::try_from(parsed.clone()).expect("parses");
            let matcher = LabelMatcher::try_from(parsed).expect("parses");
            for labels in &label_sets {
                let expected = kube.matches(labels);
                let compact = CompactLabels::from(labels);
                assert_eq!(
                    matcher.matches(labels),
                    expected,
                    "{selector} on {labels:?}"
                );
                assert_eq!(
                    matcher.matches(&compact),
                    expected,
                    "{selector} on {labels:?}"
                );
                assert_eq!(
                    matcher.matches(&Labels::Compact(&compact)),
                    expected,
                    "{selector} on {labels:?}"
                );
            }
        }
    }

    #[test]
    fn a_bad_selector_is_refused_as_kube_refuses_it() {
        let bad: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "app", "operator": "Bogus"}]}))
        .expect("decodes");
        assert!(Selector::try_from(bad.clone()).is_err());
        assert!(LabelMatcher::try_from(bad).is_err());
    }

    #[test]
    fn labels_compare_by_content_whoever_holds_them() {
        let two = map(&[("app", "web"), ("tier", "front")]);
        let compact_two = CompactLabels::from(&two);
        let empty = map(&[]);
        let none = CompactLabels::default();
        let cases = [
            (Labels::Map(Some(&two)), Labels::Compact(&compact_two), true),
            (Labels::Map(None), Labels::Map(Some(&empty)), true),
            (Labels::Map(None), Labels::Compact(&none), true),
            (Labels::Map(Some(&two)), Labels::Map(None), false),
            (Labels::Compact(&compact_two), Labels::Compact(&none), false),
        ];
        for (a, b, equal) in cases {
            assert_eq!(a == b, equal, "{a:?} vs {b:?}");
            assert_eq!(b == a, equal, "{b:?} vs {a:?}");
        }
    }

    #[test]
    fn a_cached_pod_is_matched_by_its_own_labels() {
        let pod: CachedPod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "labels": {"app": "web"}}}))
        .expect("decodes");
        let web = LabelMatcher::from(Selector::from_iter([("app", "web")]));
        let api = LabelMatcher::from(Selector::from_iter([("app", "api")]));
        assert!(web.selects(&pod));
        assert!(!api.selects(&pod));
        assert!(LabelMatcher::default().selects(&pod));
    }
}
