//! A map with a size cap, for what platforms remember only to render nicer (a status
//! line's message id, the language last seen in a chat, a DM channel): losing an entry
//! costs one extra message or lookup, never correctness, so when the cap is reached the
//! oldest entries go. Without a cap such maps grow with every chat and group ever seen.

use std::collections::HashMap;
use std::hash::Hash;

#[derive(Debug)]
pub struct BoundedMap<K, V> {
    map: HashMap<K, (V, u64)>,
    cap: usize,
    /// Insertion counter: the smallest stamps are the oldest entries.
    clock: u64,
}

impl<K: Eq + Hash + Clone, V> BoundedMap<K, V> {
    /// A map keeping at most `cap` entries (at least 1).
    pub fn new(cap: usize) -> Self {
        Self { map: HashMap::new(), cap: cap.max(1), clock: 0 }
    }

    pub fn get(&self, key: &K) -> Option<&V> {
        self.map.get(key).map(|(v, _)| v)
    }

    /// Inserts or replaces (a replaced entry counts as new). When over the cap, the
    /// oldest tenth goes at once, so eviction work is paid rarely, not per insert.
    pub fn insert(&mut self, key: K, value: V) {
        self.clock += 1;
        self.map.insert(key, (value, self.clock));
        if self.map.len() > self.cap {
            let mut stamps: Vec<u64> = self.map.values().map(|(_, s)| *s).collect();
            stamps.sort_unstable();
            let drop = (self.cap / 10).max(1).min(stamps.len());
            let threshold = stamps[drop - 1];
            self.map.retain(|_, (_, s)| *s > threshold);
        }
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.map.remove(key).map(|(v, _)| v)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        self.map.retain(|k, (v, _)| keep(k, v));
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_exceeds_the_cap_and_drops_the_oldest_first() {
        let mut m = BoundedMap::new(10);
        for n in 0..1000 {
            m.insert(n, n * 2);
            assert!(m.len() <= 10);
        }
        assert_eq!(m.get(&999), Some(&1998));
        assert_eq!(m.get(&0), None);
        // Re-inserting refreshes an entry: it survives the next eviction.
        m.insert(995, 0);
        for n in 1000..1002 {
            m.insert(n, 0);
        }
        assert_eq!(m.get(&995), Some(&0));
        assert_eq!(m.remove(&995), Some(0));
        assert_eq!(m.get(&995), None);
    }
}
