//! A bounded map that forgets its least recently used entry, like the `golang/groupcache` LRU
//! that client-go's event correlator uses for each of its caches.

use std::collections::{BTreeMap, HashMap};

/// String-keyed cache holding at most `capacity` entries; reads and writes refresh recency.
#[derive(Debug)]
pub(crate) struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    by_recency: BTreeMap<u64, String>,
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
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let tick = self.next_tick();
        let (_, used) = self.entries.get_mut(key)?;
        self.by_recency.remove(used);
        *used = tick;
        self.by_recency.insert(tick, key.to_owned());
        self.entries.get_mut(key).map(|(value, _)| value)
    }

    /// Inserts or replaces `key`, evicting the least recently used entry when full.
    pub(crate) fn insert(&mut self, key: String, value: V) {
        let tick = self.next_tick();
        if let Some((_, used)) = self.entries.remove(&key) {
            self.by_recency.remove(&used);
        } else if self.entries.len() >= self.capacity
            && let Some((_, oldest)) = self.by_recency.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.by_recency.insert(tick, key.clone());
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

    #[test]
    fn evicts_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.insert("a".to_owned(), 1);
        lru.insert("b".to_owned(), 2);
        assert_eq!(lru.get_mut("a").copied(), Some(1));
        lru.insert("c".to_owned(), 3);
        assert_eq!(lru.len(), 2);
        assert!(lru.get_mut("b").is_none(), "b was least recently used");
        assert_eq!(lru.get_mut("a").copied(), Some(1));
        assert_eq!(lru.get_mut("c").copied(), Some(3));
    }

    #[test]
    fn replacing_does_not_evict() {
        let mut lru = Lru::new(2);
        lru.insert("a".to_owned(), 1);
        lru.insert("b".to_owned(), 2);
        lru.insert("a".to_owned(), 10);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get_mut("a").copied(), Some(10));
        assert_eq!(lru.get_mut("b").copied(), Some(2));
    }
}
