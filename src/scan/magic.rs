//! The raw scan: every place in a byte string where a container's magic
//! starts, found with prebuilt `memchr::memmem::Finder`s.
//!
//! The haystack is searched in chunks of [`CHUNK`] bytes. All four finders
//! run over one chunk before the next, so each chunk is read from memory
//! once and from cache three more times, and the candidates of a chunk come
//! out sorted. A caller that recognises a container at a candidate skips to
//! its end with [`Candidates::skip_to`], so the inside of a large container
//! (whose images are reached by walking the container, not by scanning) is
//! never searched. Each candidate is only a hint: the caller validates it
//! with the format's reader.

use memchr::memmem::Finder;

use crate::bundle::{binary as bundle, compressed as ccob};
use crate::offload_binary::raw::MAGIC as OFFLOAD_BINARY;

use super::fatbin::MAGIC as FATBIN;

/// Bytes searched per step. Small enough that a chunk stays in L2 cache
/// while the four finders pass over it.
pub const CHUNK: usize = 128 << 10;

/// A container format recognised by its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Magic {
    /// `10 FF 10 AD`: an OffloadBinary.
    OffloadBinary,
    /// `__CLANG_OFFLOAD_BUNDLE__`: a binary bundle (also the start of a text
    /// bundle's markers, which the bundle reader rejects).
    Bundle,
    /// `CCOB`: a compressed bundle.
    Ccob,
    /// `50 ED 55 BA`: a CUDA fatbin container.
    Fatbin,
}

impl Magic {
    /// Every magic, in the order of [`Magic::bytes`]' finders.
    pub const ALL: [Magic; 4] = [
        Magic::OffloadBinary,
        Magic::Bundle,
        Magic::Ccob,
        Magic::Fatbin,
    ];

    /// The magic bytes.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Magic::OffloadBinary => &OFFLOAD_BINARY,
            Magic::Bundle => bundle::MAGIC,
            Magic::Ccob => &ccob::MAGIC,
            Magic::Fatbin => &FATBIN,
        }
    }

    /// The magic `data` starts with, if any.
    pub fn at_start(data: &[u8]) -> Option<Magic> {
        Magic::ALL.into_iter().find(|m| data.starts_with(m.bytes()))
    }
}

/// The longest magic, minus one: how far a chunk's window reaches into the
/// next chunk so that a magic crossing the boundary is found.
const OVERLAP: usize = 24 - 1;

/// Prebuilt finders for every magic. Building them costs a little, so one
/// set serves a whole scan.
#[derive(Debug, Clone)]
pub struct Finders {
    finders: [Finder<'static>; 4],
}

impl Default for Finders {
    fn default() -> Self {
        Finders::new()
    }
}

impl Finders {
    /// Builds the finders.
    pub fn new() -> Finders {
        Finders {
            finders: Magic::ALL.map(|m| Finder::new(m.bytes())),
        }
    }

    /// The candidates in `hay`, in increasing offset.
    pub fn candidates<'f, 'h>(&'f self, hay: &'h [u8]) -> Candidates<'f, 'h> {
        Candidates {
            finders: self,
            hay,
            next_chunk: 0,
            pending: Vec::new(),
            taken: 0,
        }
    }
}

/// An iterator over the magic candidates of a haystack, chunk by chunk.
#[derive(Debug)]
pub struct Candidates<'f, 'h> {
    finders: &'f Finders,
    hay: &'h [u8],
    /// Where the next chunk starts.
    next_chunk: usize,
    /// Candidates of the current chunk, sorted; `taken` of them are used.
    pending: Vec<(usize, Magic)>,
    taken: usize,
}

impl Candidates<'_, '_> {
    /// Skips every candidate before `pos`; the search resumes there.
    pub fn skip_to(&mut self, pos: usize) {
        while self.pending.get(self.taken).is_some_and(|&(p, _)| p < pos) {
            self.taken += 1;
        }
        if self.taken == self.pending.len() && pos > self.next_chunk {
            self.next_chunk = pos.min(self.hay.len());
        }
    }

    fn fill(&mut self) -> bool {
        self.pending.clear();
        self.taken = 0;
        while self.pending.is_empty() && self.next_chunk < self.hay.len() {
            let start = self.next_chunk;
            let end = start.saturating_add(CHUNK).min(self.hay.len());
            let window = &self.hay[start..end.saturating_add(OVERLAP).min(self.hay.len())];
            for (f, m) in self.finders.finders.iter().zip(Magic::ALL) {
                // Step one byte past each match, not past the whole magic:
                // the bundle magic ends with the `__` it starts with, so two
                // of them can overlap (`find_iter` would miss the second).
                let mut from = 0;
                while let Some(p) = window.get(from..).and_then(|w| f.find(w)) {
                    let at = start + from + p;
                    if at >= end {
                        break;
                    }
                    self.pending.push((at, m));
                    from += p + 1;
                }
            }
            self.pending.sort_unstable();
            self.next_chunk = end;
        }
        !self.pending.is_empty()
    }
}

impl Iterator for Candidates<'_, '_> {
    type Item = (usize, Magic);

    fn next(&mut self) -> Option<(usize, Magic)> {
        if self.taken == self.pending.len() && !self.fill() {
            return None;
        }
        let c = self.pending[self.taken];
        self.taken += 1;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_magic_across_chunk_boundaries() {
        for m in Magic::ALL {
            for at in [0, 1, CHUNK - 30, CHUNK - 3, CHUNK - 1, CHUNK, 2 * CHUNK + 5] {
                let mut hay = vec![0xAAu8; 3 * CHUNK];
                hay[at..at + m.bytes().len()].copy_from_slice(m.bytes());
                let found: Vec<_> = Finders::new().candidates(&hay).collect();
                assert_eq!(found, vec![(at, m)], "{m:?} at {at}");
            }
        }
    }

    #[test]
    fn skip_to_jumps_over_chunks() {
        let mut hay = vec![0u8; 4 * CHUNK];
        for at in [10, CHUNK + 7, 3 * CHUNK + 1] {
            hay[at..at + 4].copy_from_slice(b"CCOB");
        }
        let f = Finders::new();
        let mut c = f.candidates(&hay);
        assert_eq!(c.next(), Some((10, Magic::Ccob)));
        c.skip_to(2 * CHUNK);
        assert_eq!(c.next(), Some((3 * CHUNK + 1, Magic::Ccob)));
        assert_eq!(c.next(), None);
    }
}
