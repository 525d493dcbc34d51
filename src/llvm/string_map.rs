//! Iteration order of an LLVM `StringMap`.
//!
//! `clang-offload-bundler` keeps a bundle's entries, and the targets it was
//! asked for, in `StringMap`s keyed by entry ID, and lists and matches them in
//! the map's iteration order, not in file order. The map hashes keys with
//! XXH3-64 (seed 0) truncated to 32 bits, starts with 16 buckets, probes
//! triangularly (+1, +2, +3, …) from `hash & (buckets - 1)`, and after an
//! insertion that makes `items * 4 > buckets * 3` doubles, re-placing the old
//! buckets in index order by their stored hashes. Iteration visits occupied
//! buckets in index order.

use xxhash_rust::xxh3::xxh3_64;

/// Records the positions keys take in an LLVM `StringMap`.
#[derive(Debug, Clone, Default)]
pub struct StringMapOrder {
    buckets: Vec<Option<usize>>,
    keys: Vec<(Vec<u8>, u32)>,
}

impl StringMapOrder {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn probe(&self, key: &[u8], hash: u32) -> (usize, bool) {
        let mask = self.buckets.len() - 1;
        let mut b = hash as usize & mask;
        let mut step = 1;
        loop {
            match self.buckets[b] {
                None => return (b, false),
                Some(i) if self.keys[i].1 == hash && self.keys[i].0 == key => return (b, true),
                Some(_) => {
                    b = (b + step) & mask;
                    step += 1;
                }
            }
        }
    }

    /// The first empty bucket on `hash`'s probe sequence (re-placement after
    /// growth looks only for a free bucket).
    fn free_slot(&self, hash: u32) -> usize {
        let mask = self.buckets.len() - 1;
        let mut b = hash as usize & mask;
        let mut step = 1;
        while self.buckets[b].is_some() {
            b = (b + step) & mask;
            step += 1;
        }
        b
    }

    /// Inserts `key` if absent; returns its index in insertion numbering
    /// (an existing key keeps its index and its place, as LLVM's does).
    pub fn insert(&mut self, key: &[u8]) -> usize {
        if self.buckets.is_empty() {
            self.buckets = vec![None; 16];
        }
        #[expect(
            clippy::cast_possible_truncation,
            reason = "LLVM keeps the low 32 bits"
        )]
        let hash = xxh3_64(key) as u32;
        let (b, found) = self.probe(key, hash);
        if found {
            return self.buckets[b].unwrap_or_default();
        }
        let index = self.keys.len();
        self.buckets[b] = Some(index);
        self.keys.push((key.to_vec(), hash));
        if self.keys.len() * 4 > self.buckets.len() * 3 {
            let doubled = vec![None; self.buckets.len() * 2];
            let old = std::mem::replace(&mut self.buckets, doubled);
            for i in old.into_iter().flatten() {
                let nb = self.free_slot(self.keys[i].1);
                self.buckets[nb] = Some(i);
            }
        }
        index
    }

    /// Insertion indices of the keys, in iteration order.
    pub fn iteration_order(&self) -> Vec<usize> {
        self.buckets.iter().flatten().copied().collect()
    }
}

/// The order LLVM's `StringMap` would list `keys` in (duplicates keep their
/// first place): indices into `keys` of each distinct key.
pub fn order_of<K: AsRef<[u8]>>(keys: &[K]) -> Vec<usize> {
    let mut map = StringMapOrder::new();
    let mut first = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        if map.insert(k.as_ref()) == first.len() {
            first.push(i);
        }
    }
    map.iteration_order()
        .into_iter()
        .map(|j| first[j])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_host_hip_openmp() {
        // docs/formats/bundles.md §1: host, hip, openmp lists as hip, openmp, host.
        let ids = [
            "host-x86_64-unknown-linux-gnu-",
            "hip-amdgcn-amd-amdhsa--gfx906",
            "openmp-nvptx64-nvidia-cuda-unknown-",
        ];
        assert_eq!(order_of(&ids), [1, 2, 0]);
    }

    #[test]
    fn growth_keeps_every_key() {
        let keys: Vec<String> = (0..100)
            .map(|i| format!("hip-amdgcn-amd-amdhsa--gfx{i}"))
            .collect();
        let mut o = order_of(&keys);
        o.sort_unstable();
        assert_eq!(o, (0..100).collect::<Vec<_>>());
    }
}
