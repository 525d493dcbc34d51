//! Iteration order of an LLVM `DenseMap<StringRef, T>`.
//!
//! The map is open addressing over a power-of-two bucket array (64 buckets
//! at the first insertion), with home bucket `hash & (buckets - 1)` and
//! triangular probing (+1, +2, +3, …). Before an insertion that would make
//! `entries * 4 >= buckets * 3`, the table doubles and the old buckets are
//! re-inserted in index order. Iteration visits occupied buckets in index
//! order. The hash is `hash_value(StringRef)` truncated to 32 bits.

use super::hashing::hash_bytes;

/// Records the positions keys would take in an LLVM `DenseMap<StringRef, _>`.
#[derive(Debug, Clone, Default)]
pub struct DenseMapOrder {
    /// Bucket array: index into `keys`, if occupied.
    buckets: Vec<Option<usize>>,
    keys: Vec<(Vec<u8>, u32)>,
}

impl DenseMapOrder {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn probe(
        buckets: &[Option<usize>],
        keys: &[(Vec<u8>, u32)],
        key: &[u8],
        hash: u32,
    ) -> (usize, bool) {
        let mask = buckets.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut step = 1;
        loop {
            match buckets[bucket] {
                None => return (bucket, false),
                Some(i) if keys[i].0 == key => return (bucket, true),
                Some(_) => {
                    bucket = (bucket + step) & mask;
                    step += 1;
                }
            }
        }
    }

    fn grow(&mut self, at_least: usize) {
        let new_len = at_least.next_power_of_two().max(64);
        let old = std::mem::replace(&mut self.buckets, vec![None; new_len]);
        for i in old.into_iter().flatten() {
            let (key, hash) = &self.keys[i];
            let (b, _) = Self::probe(&self.buckets, &self.keys, key, *hash);
            self.buckets[b] = Some(i);
        }
    }

    /// Inserts `key` if absent (like `try_emplace`); returns whether it was new.
    pub fn insert(&mut self, key: &[u8]) -> bool {
        // `DenseMapInfo<StringRef>::getHashValue` returns `unsigned`.
        #[expect(
            clippy::cast_possible_truncation,
            reason = "LLVM keeps the low 32 bits"
        )]
        let hash = hash_bytes(key) as u32;
        if !self.buckets.is_empty() {
            let (_, found) = Self::probe(&self.buckets, &self.keys, key, hash);
            if found {
                return false;
            }
        }
        let n = self.buckets.len();
        if (self.keys.len() + 1) * 4 >= n * 3 {
            self.grow(n * 2);
        }
        let (b, _) = Self::probe(&self.buckets, &self.keys, key, hash);
        self.buckets[b] = Some(self.keys.len());
        self.keys.push((key.to_vec(), hash));
        true
    }

    /// Indices (in insertion order numbering) of the keys, in iteration order.
    pub fn iteration_order(&self) -> Vec<usize> {
        self.buckets.iter().flatten().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_a_permutation_and_survives_growth() {
        let mut m = DenseMapOrder::new();
        let keys: Vec<String> = (0..200).map(|i| format!("key{i}")).collect();
        for k in &keys {
            assert!(m.insert(k.as_bytes()));
        }
        assert!(!m.insert(b"key7"));
        let mut order = m.iteration_order();
        assert_eq!(order.len(), 200);
        order.sort_unstable();
        assert_eq!(order, (0..200).collect::<Vec<_>>());
    }
}
