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
//!
//! [`Finders::search`] hands the caller the same candidates, but for a
//! haystack of [`PARALLEL_FROM`] bytes or more on a machine with two CPUs a
//! helper thread searches 2 MiB blocks ahead of the caller (at most four),
//! and the caller, when it would wait for the helper, searches the next
//! block itself: about 5 GB/s instead of 3 from the page cache here. Heap
//! use stays bounded by the blocks in flight.

use std::fmt;
use std::sync::{MutexGuard, OnceLock};

use memchr::memmem::Finder;

use crate::bundle::{binary as bundle, ccob};
use crate::offload_binary::raw::MAGIC as OFFLOAD_BINARY;
use crate::sync::Monitor;

use crate::fatbin::MAGIC as FATBIN;

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

/// Haystacks at least this large are searched on two threads (see
/// [`Finders::search`]).
pub const PARALLEL_FROM: usize = 16 << 20;

/// What the helper thread and the consumer of [`Finders::search`] take at a
/// time: whole blocks, so that the two threads fault in different parts of
/// the mapping (interleaved 128 KiB chunks contend in the kernel and are
/// slower than one thread).
const BLOCK: usize = 2 << 20;

/// How many blocks the helper thread may search ahead of the consumer:
/// bounds the candidates held.
const AHEAD: usize = 4;

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

    /// The candidates in `hay`, in increasing offset, searched on the
    /// calling thread as they are asked for.
    pub fn candidates<'f, 'h>(&'f self, hay: &'h [u8]) -> Candidates<'f, 'h> {
        Candidates {
            finders: self,
            hay,
            unit: CHUNK,
            next_unit: 0,
            searched: 0,
            from: 0,
            pending: Vec::new(),
            taken: 0,
            ahead: None,
        }
    }

    /// Runs `f` on the candidates of `hay`. A large haystack on a machine
    /// with more than one CPU is searched by a helper thread too: it takes
    /// chunks ahead of the consumer (at most `AHEAD`) while the consumer
    /// validates candidates or searches chunks itself, so the raw scan of a
    /// big file runs at the speed of two cores. The candidates are the
    /// same either way.
    pub fn search<R>(&self, hay: &[u8], f: impl FnOnce(&mut Candidates<'_, '_>) -> R) -> R {
        if hay.len() < PARALLEL_FROM || !two_cpus() {
            return f(&mut self.candidates(hay));
        }
        let ahead = Ahead::new(AheadState {
            consumer: 0,
            claim: 0,
            done: Vec::new(),
            go: false,
            stop: false,
            gone: false,
        });
        std::thread::scope(|scope| {
            let helper = std::thread::Builder::new()
                .name("scan-ahead".into())
                .spawn_scoped(scope, || ahead.help(self, hay));
            let mut cands = self.candidates(hay);
            if helper.is_ok() {
                cands.ahead = Some(&ahead);
            }
            f(&mut cands)
            // Dropping `cands` stops the helper; the scope joins it.
        })
    }

    /// Appends the candidates in unit `k` (of `unit` bytes) of `hay`,
    /// sorted, searching it a chunk at a time.
    fn unit(&self, hay: &[u8], unit: usize, k: usize, out: &mut Vec<(usize, Magic)>) {
        let start = k.saturating_mul(unit).min(hay.len());
        let end = start.saturating_add(unit).min(hay.len());
        let mut at = start;
        while at < end {
            let next = at.saturating_add(CHUNK).min(end);
            self.chunk(hay, at, next, out);
            at = next;
        }
    }

    /// Appends the candidates that start in `hay[start..end]`, sorted.
    fn chunk(&self, hay: &[u8], start: usize, end: usize, out: &mut Vec<(usize, Magic)>) {
        let first = out.len();
        let window = &hay[start..end.saturating_add(OVERLAP).min(hay.len())];
        for (f, m) in self.finders.iter().zip(Magic::ALL) {
            // Step one byte past each match, not past the whole magic: the
            // bundle magic ends with the `__` it starts with, so two of them
            // can overlap (`find_iter` would miss the second).
            let mut from = 0;
            while let Some(p) = window.get(from..).and_then(|w| f.find(w)) {
                let at = start + from + p;
                if at >= end {
                    break;
                }
                out.push((at, m));
                from += p + 1;
            }
        }
        out[first..].sort_unstable();
    }
}

/// Whether this machine has a second CPU for the helper thread.
fn two_cpus() -> bool {
    static TWO: OnceLock<bool> = OnceLock::new();
    *TWO.get_or_init(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2))
}

/// What the consumer and the helper thread of [`Finders::search`] share.
type Ahead = Monitor<AheadState>;

struct AheadState {
    /// The block the consumer needs next; blocks before it are not needed.
    consumer: usize,
    /// The first block nobody has taken yet.
    claim: usize,
    /// Blocks searched ahead, with their candidates.
    done: Vec<(usize, Vec<(usize, Magic)>)>,
    /// Set when the consumer switches to blocks: until then the helper
    /// waits.
    go: bool,
    /// Set when the consumer is finished.
    stop: bool,
    /// Set when the helper has ended (having handed over every block it
    /// took, unless it panicked).
    gone: bool,
}

impl Ahead {
    /// Takes the next untaken block, searches it with the lock released
    /// and keeps its candidates if the consumer still needs them.
    fn search_next<'a>(
        &'a self,
        mut s: MutexGuard<'a, AheadState>,
        finders: &Finders,
        hay: &[u8],
    ) -> MutexGuard<'a, AheadState> {
        let k = s.claim;
        s.claim += 1;
        drop(s);
        let mut found = Vec::new();
        finders.unit(hay, BLOCK, k, &mut found);
        let mut s = self.lock();
        if k >= s.consumer {
            s.done.push((k, found));
        }
        s
    }

    /// The helper thread: searches the next untaken block while it is
    /// within [`AHEAD`] of the consumer.
    fn help(&self, finders: &Finders, hay: &[u8]) {
        /// Tells the consumer when the helper ends, even by a panic, so it
        /// never waits for a block the helper took and will not deliver.
        struct Gone<'a>(&'a Ahead);
        impl Drop for Gone<'_> {
            fn drop(&mut self) {
                self.0.lock().gone = true;
                self.0.notify();
            }
        }
        let _gone = Gone(self);
        let blocks = hay.len().div_ceil(BLOCK);
        let mut s = self.lock();
        loop {
            while !s.stop && (!s.go || (s.claim < blocks && s.claim >= s.consumer + AHEAD)) {
                s = self.wait(s);
            }
            if s.stop || s.claim >= blocks {
                return;
            }
            s = self.search_next(s, finders, hay);
            self.notify();
        }
    }

    /// Block `k`'s candidates for the consumer, or `None` if `k` is the
    /// consumer's to search (it is then taken). While the helper is at work
    /// on `k`, the consumer does not wait idle but searches the next
    /// untaken block, as the helper would.
    fn take(&self, finders: &Finders, hay: &[u8], k: usize) -> Option<Vec<(usize, Magic)>> {
        let blocks = hay.len().div_ceil(BLOCK);
        let mut s = self.lock();
        // While `k` is awaited, the helper keeps what it finds for it.
        s.consumer = s.consumer.max(k);
        s.done.retain(|(c, _)| *c >= k);
        let found = loop {
            if let Some(i) = s.done.iter().position(|(c, _)| *c == k) {
                break Some(s.done.swap_remove(i).1);
            }
            if s.claim <= k || s.gone {
                s.claim = s.claim.max(k + 1);
                break None;
            }
            if s.claim < blocks && s.claim < k + AHEAD {
                s = self.search_next(s, finders, hay);
                continue;
            }
            s = self.wait(s);
        };
        s.consumer = k + 1;
        drop(s);
        self.notify();
        found
    }

    /// The consumer switches to blocks at block `k`: the helper starts
    /// (again) there.
    fn start(&self, k: usize) {
        let mut s = self.lock();
        s.go = true;
        s.consumer = k;
        s.claim = k;
        s.done.retain(|(c, _)| *c >= k);
        drop(s);
        self.notify();
    }

    /// The consumer skipped and goes back to chunks: the helper waits.
    fn pause(&self) {
        self.lock().go = false;
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.notify();
    }
}

/// An iterator over the magic candidates of a haystack, chunk by chunk
/// (block by block when a helper thread searches too).
pub struct Candidates<'f, 'h> {
    finders: &'f Finders,
    hay: &'h [u8],
    /// Bytes searched at a time: [`CHUNK`], or [`BLOCK`] once a helper
    /// works too.
    unit: usize,
    /// The next unit to search.
    next_unit: usize,
    /// Bytes searched chunk by chunk since the last skip.
    searched: usize,
    /// Candidates before this offset are skipped.
    from: usize,
    /// Candidates of the current chunk, sorted; `taken` of them are used.
    pending: Vec<(usize, Magic)>,
    taken: usize,
    /// The helper thread, if any; it searches ahead once `unit` is
    /// [`BLOCK`].
    ahead: Option<&'h Ahead>,
}

impl fmt::Debug for Candidates<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Candidates")
            .field("len", &self.hay.len())
            .field("next_unit", &self.next_unit)
            .field("from", &self.from)
            .field("helped", &self.ahead.is_some())
            .finish()
    }
}

impl Candidates<'_, '_> {
    /// Skips every candidate before `pos`; the search resumes there.
    pub fn skip_to(&mut self, pos: usize) {
        self.from = self.from.max(pos);
        if pos / self.unit < self.next_unit {
            return; // within the unit at hand
        }
        // A real skip (past a container): back to chunks, as at the start.
        if let Some(a) = self.ahead.filter(|_| self.unit == BLOCK) {
            a.pause();
        }
        self.unit = CHUNK;
        self.next_unit = pos / CHUNK;
        self.searched = 0;
        self.pending.clear();
        self.taken = 0;
    }

    fn fill(&mut self) -> bool {
        let units = self.hay.len().div_ceil(self.unit);
        while self.next_unit < units {
            // The haystack is searched alone, chunk by chunk, at first and
            // after every skip: a walker that finds containers one after
            // another (a section of OffloadBinaries) never needs the
            // helper. After a block's worth of bytes without one, the
            // helper joins in at the next block.
            if let Some(a) = self.ahead
                && self.unit == CHUNK
                && self.searched >= BLOCK
                && (self.next_unit * CHUNK).is_multiple_of(BLOCK)
            {
                self.unit = BLOCK;
                self.next_unit = self.next_unit * CHUNK / BLOCK;
                a.start(self.next_unit);
                continue;
            }
            let k = self.next_unit;
            self.next_unit += 1;
            self.pending.clear();
            self.taken = 0;
            let helped = self.ahead.filter(|_| self.unit == BLOCK);
            match helped.and_then(|a| a.take(self.finders, self.hay, k)) {
                Some(found) => self.pending = found,
                None => self.finders.unit(self.hay, self.unit, k, &mut self.pending),
            }
            if self.unit == CHUNK {
                self.searched += CHUNK;
            }
            let from = self.from;
            self.pending.retain(|&(p, _)| p >= from);
            if !self.pending.is_empty() {
                return true;
            }
        }
        false
    }
}

impl Drop for Candidates<'_, '_> {
    fn drop(&mut self) {
        if let Some(a) = self.ahead {
            a.stop();
        }
    }
}

impl Iterator for Candidates<'_, '_> {
    type Item = (usize, Magic);

    fn next(&mut self) -> Option<(usize, Magic)> {
        loop {
            if self.taken == self.pending.len() && !self.fill() {
                return None;
            }
            let c = self.pending[self.taken];
            self.taken += 1;
            if c.0 >= self.from {
                return Some(c);
            }
        }
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

    /// Candidates as a walker takes them: skipping past a made-up
    /// container at every third one.
    fn with_skips(c: &mut Candidates<'_, '_>) -> Vec<(usize, Magic)> {
        let mut out = Vec::new();
        while let Some((p, m)) = c.next() {
            out.push((p, m));
            if out.len() % 3 == 0 {
                c.skip_to(p + BLOCK / 3 * (out.len() % 7));
            }
        }
        out
    }

    #[test]
    fn two_threads_find_what_one_does() {
        let mut hay = vec![0x11u8; PARALLEL_FROM + 5 * BLOCK + 77];
        let mut put =
            |at: usize, m: Magic| hay[at..at + m.bytes().len()].copy_from_slice(m.bytes());
        for (i, m) in Magic::ALL.into_iter().enumerate() {
            for b in (0..12).map(|b| b * BLOCK) {
                for at in [
                    b,
                    b + 1,
                    b + CHUNK - 2,
                    b + BLOCK - 3 - i,
                    b + BLOCK / 2 + 40 * i,
                ] {
                    put(at, m);
                }
            }
        }
        // Overlapping bundle magics, and a stretch where every fourth byte
        // starts a CCOB magic.
        put(7 * BLOCK + 1000, Magic::Bundle);
        put(7 * BLOCK + 1022, Magic::Bundle);
        for at in (9 * BLOCK - 4096..9 * BLOCK + 300_000).step_by(4) {
            put(at, Magic::Ccob);
        }
        let last = PARALLEL_FROM + 5 * BLOCK + 77 - 4;
        put(last, Magic::Ccob);
        let hay = hay;
        let f = Finders::new();
        let one: Vec<_> = f.candidates(&hay).collect();
        assert!(one.len() > 75_000 && one.last() == Some(&(last, Magic::Ccob)));
        assert!(one.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(f.search(&hay, |c| c.ahead.is_some()), two_cpus());
        // After a block searched chunk by chunk, blocks are searched by two
        // threads; after a skip, chunks again.
        let units = f.search(&hay, |c| {
            let mut units = Vec::new();
            while c.next_unit * c.unit < 3 * BLOCK {
                units.push(c.unit);
                c.next();
            }
            c.skip_to(10 * BLOCK + 5);
            c.next();
            units.push(c.unit);
            units
        });
        let two = if two_cpus() { BLOCK } else { CHUNK };
        assert_eq!(units.first(), Some(&CHUNK));
        assert!(units.contains(&two));
        assert_eq!(units.last(), Some(&CHUNK));
        for _ in 0..3 {
            assert_eq!(f.search(&hay, |c| c.collect::<Vec<_>>()), one);
        }
        let skipped = with_skips(&mut f.candidates(&hay));
        assert!(skipped.len() < one.len() / 2);
        assert_eq!(f.search(&hay, with_skips), skipped);
        // The consumer may stop early; the helper then stops too.
        assert_eq!(f.search(&hay, |c| c.nth(10)), one.get(10).copied());
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
