//! Memo of positive semantic comparisons (upstream's revision equality cache, an LRU of 10,000
//! entries keyed by set UID, set generation and the latest revision's resourceVersion).
//!
//! After a takeover the stored revision keeps its old serialization until the template changes,
//! so every sync of such a set would repeat the comparison; the key changes whenever the answer
//! could (a new generation or a new latest revision), so remembering "same" is safe.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::Value;

use crate::semantic::latest_revision_is_semantically_current;

/// Upstream's capacity for the revision equality cache.
pub const DEFAULT_SEMANTIC_CACHE_CAPACITY: usize = 10_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    set_uid: String,
    set_generation: i64,
    revision_resource_version: String,
}

#[derive(Debug, Default)]
struct Lru {
    last_use: HashMap<CacheKey, u64>,
    by_age: BTreeMap<u64, CacheKey>,
    tick: u64,
}

impl Lru {
    fn touch(&mut self, key: &CacheKey) -> bool {
        let Some(previous) = self.last_use.get(key).copied() else {
            return false;
        };
        self.tick += 1;
        self.by_age.remove(&previous);
        self.by_age.insert(self.tick, key.clone());
        self.last_use.insert(key.clone(), self.tick);
        true
    }

    fn insert(&mut self, key: CacheKey, capacity: usize) {
        if self.touch(&key) {
            return;
        }
        while self.last_use.len() >= capacity {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&oldest);
        }
        self.tick += 1;
        self.by_age.insert(self.tick, key.clone());
        self.last_use.insert(key, self.tick);
    }
}

/// [`latest_revision_is_semantically_current`] with upstream's memo of positive answers; shared
/// by all workers of a controller.
#[derive(Debug)]
pub struct SemanticComparisonCache {
    capacity: usize,
    entries: Mutex<Lru>,
}

impl Default for SemanticComparisonCache {
    fn default() -> Self {
        Self::new(DEFAULT_SEMANTIC_CACHE_CAPACITY)
    }
}

impl SemanticComparisonCache {
    /// A cache remembering at most `capacity` (at least 1) positive answers.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: Mutex::new(Lru::default()),
        }
    }

    /// Like [`latest_revision_is_semantically_current`], answering from the memo when the set
    /// (UID, generation) and the latest revision (resourceVersion) were already found equal.
    /// Objects lacking any key field are compared without caching.
    pub fn latest_revision_is_semantically_current(
        &self,
        set: &Value,
        latest: &ControllerRevision,
        proposal: &ControllerRevision,
    ) -> bool {
        let key = cache_key(set, latest);
        if let Some(key) = &key
            && self.lock().touch(key)
        {
            return true;
        }
        let same = latest_revision_is_semantically_current(set, latest, proposal);
        if same && let Some(key) = key {
            self.lock().insert(key, self.capacity);
        }
        same
    }

    /// Number of remembered answers.
    pub fn len(&self) -> usize {
        self.lock().last_use.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        // A panic while holding the lock can at worst lose an entry; the memo stays usable.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn cache_key(set: &Value, latest: &ControllerRevision) -> Option<CacheKey> {
    Some(CacheKey {
        set_uid: set.pointer("/metadata/uid")?.as_str()?.to_owned(),
        set_generation: set.pointer("/metadata/generation")?.as_i64()?,
        revision_resource_version: latest.metadata.resource_version.clone()?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::statefulset::new_statefulset_revision;

    fn set(uid: &str, generation: i64, image: &str) -> Value {
        json!({
            "metadata": {"name": "web", "uid": uid, "generation": generation},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}}
        })
    }

    /// The revision an older controller stored for `image`: same template plus
    /// `"creationTimestamp":null`, so only the semantic comparison finds it equal.
    fn stored(image: &str, resource_version: &str) -> ControllerRevision {
        let mut old_set = set("u", 1, image);
        old_set["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
        let mut revision = new_statefulset_revision(&old_set, 1, 0).expect("valid");
        revision.metadata.resource_version = Some(resource_version.to_owned());
        revision
    }

    fn proposal(set: &Value) -> ControllerRevision {
        new_statefulset_revision(set, 2, 0).expect("valid")
    }

    /// Asks `cache` whether the stored revision of `image` at `resource_version` is current
    /// for `set`.
    fn is_current(
        cache: &SemanticComparisonCache,
        set: &Value,
        image: &str,
        resource_version: &str,
    ) -> bool {
        cache.latest_revision_is_semantically_current(
            set,
            &stored(image, resource_version),
            &proposal(set),
        )
    }

    #[test]
    fn remembers_only_positive_answers() {
        let cache = SemanticComparisonCache::default();
        let current = set("u", 1, "a");
        assert!(is_current(&cache, &current, "a", "10"));
        assert_eq!(cache.len(), 1);

        let changed = set("u", 2, "b");
        assert!(!is_current(&cache, &changed, "a", "10"));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_hit_answers_without_comparing() {
        let cache = SemanticComparisonCache::default();
        let current = set("u", 1, "a");
        assert!(is_current(&cache, &current, "a", "10"));
        // Same key, different content: the memo answers (upstream trusts the key the same way).
        assert!(is_current(&cache, &current, "z", "10"));
        // Another resourceVersion is another key: compared again, and different.
        assert!(!is_current(&cache, &current, "z", "11"));
    }

    #[test]
    fn objects_without_key_fields_are_not_cached() {
        let cache = SemanticComparisonCache::default();
        let mut current = set("u", 1, "a");
        current["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("generation");
        assert!(is_current(&cache, &current, "a", "10"));
        assert!(cache.is_empty());
    }

    #[test]
    fn least_recently_used_entry_is_evicted() {
        let cache = SemanticComparisonCache::new(2);
        let sets: Vec<Value> = ["u1", "u2", "u3"]
            .into_iter()
            .map(|uid| set(uid, 1, "a"))
            .collect();
        let same = |set: &Value| is_current(&cache, set, "a", "10");
        assert!(same(&sets[0]));
        assert!(same(&sets[1]));
        assert!(same(&sets[0])); // u1 is now the most recently used
        assert!(same(&sets[2])); // evicts u2
        assert_eq!(cache.len(), 2);
        // u2 was evicted: with different stored content it is compared again and found changed.
        assert!(!is_current(&cache, &sets[1], "z", "10"));
        // u1 is still remembered.
        assert!(is_current(&cache, &sets[0], "z", "10"));
    }
}
