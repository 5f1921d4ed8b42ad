//! A bounded map that forgets its least recently used entry, like the `golang/groupcache` LRU
//! that client-go's event correlator uses for each of its caches.
//!
//! Keys are [`KeyDigest`]s of upstream's string keys rather than the strings: a key joins the
//! source, the involved object's kind, namespace, name, UID and API version, the reason and the
//! message, a few hundred bytes, and each of the correlator's three caches holds 4,096 of them
//! per controller (10 MB of the manager's heap on the 1,000-Deployment bench). A 128-bit digest
//! keeps the same equality for all practical purposes in 16 bytes.

use std::{
    collections::{BTreeMap, HashMap},
    hash::{DefaultHasher, Hasher},
};

/// A 128-bit digest of the concatenation of some strings: stands in for upstream's
/// `strings.Join(parts, "")` cache keys (so, as there, only the concatenation matters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct KeyDigest(u128);

impl KeyDigest {
    /// The digest of `parts` joined with no separator.
    pub(crate) fn of(parts: &[&str]) -> Self {
        // Two SipHash streams over the same bytes, the second behind a one-byte prefix.
        let mut low = DefaultHasher::new();
        let mut high = DefaultHasher::new();
        high.write_u8(0x5a);
        for part in parts {
            low.write(part.as_bytes());
            high.write(part.as_bytes());
        }
        KeyDigest(u128::from(high.finish()) << 64 | u128::from(low.finish()))
    }
}

/// Digest-keyed cache holding at most `capacity` entries; reads and writes refresh recency.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<KeyDigest, (V, u64)>,
    by_recency: BTreeMap<u64, KeyDigest>,
}

impl<V> Lru<V> {
    pub(crate) fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            by_recency: BTreeMap::new(),
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// The entry for `key`, marked as most recently used.
    pub(crate) fn get_mut(&mut self, key: KeyDigest) -> Option<&mut V> {
        let tick = self.next_tick();
        let (value, used) = self.entries.get_mut(&key)?;
        self.by_recency.remove(used);
        *used = tick;
        self.by_recency.insert(tick, key);
        Some(value)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    pub(crate) fn insert(&mut self, key: KeyDigest, value: V) {
        let tick = self.next_tick();
        if let Some((_, used)) = self.entries.remove(&key) {
            self.by_recency.remove(&used);
        } else if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.by_recency.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.by_recency.insert(tick, key);
        self.entries.insert(key, (value, tick));
    }

    /// Number of entries held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> KeyDigest {
        KeyDigest::of(&[name])
    }

    #[test]
    fn evicts_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert(key("a"), 1);
        lru.insert(key("b"), 2);
        assert_eq!(lru.get_mut(key("a")).copied(), Some(1));
        lru.insert(key("c"), 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut(key("b")).is_none(), "b was least recently used");
        assert_eq!(lru.get_mut(key("a")).copied(), Some(1));
        assert_eq!(lru.get_mut(key("c")).copied(), Some(3));
    }

    #[test]
    fn replacing_does_not_evict() {
        let mut lru = Lru::new(2);
        lru.insert(key("a"), 1);
        lru.insert(key("b"), 2);
        lru.insert(key("a"), 10);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get_mut(key("a")).copied(), Some(10));
        assert_eq!(lru.get_mut(key("b")).copied(), Some(2));
    }

    #[test]
    fn digest_depends_on_the_concatenation_only() {
        let cases = [
            (&["ab", "c"][..], &["a", "bc"][..], true),
            (&["abc"][..], &["a", "b", "c"][..], true),
            (&["abc"][..], &["abd"][..], false),
            (&["", "x"][..], &["x"][..], true),
            (&["web-1"][..], &["web-2"][..], false),
        ];
        for (left, right, equal) in cases {
            assert_eq!(
                KeyDigest::of(left) == KeyDigest::of(right),
                equal,
                "{left:?} vs {right:?}"
            );
        }
    }
}
