//! CUDA fatbin containers: their entries as images, and compressed entries
//! decoded on [`Options::threads`](crate::scan::Options::threads) threads.
//!
//! A compressed entry is decoded only when its bytes are asked for (a
//! hash, a visitor, [`Options::verify`](crate::scan::Options::verify), or
//! PTX, whose size is its text's). Such entries are taken in batches: the
//! walker records each image, asks the visitor for its sink and reserves
//! its declared size in the budget, all in entry order on its own thread;
//! the batch is decoded on the threads (each entry streamed once, through
//! its hasher and into its sink); then, in entry order again, each outcome
//! is recorded and handed to the visitor. The report is the same whatever
//! the number of threads: its problems are put back in entry order (an
//! entry's failure comes back after later entries were looked at), and a
//! limit met while an entry was being decoded does not drop its failure.
//! With more than one thread, the visitor may get an uncompressed entry's
//! bytes before the compressed entries ahead of it.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, mpsc};

use super::stream::SPARE_MAX;
use super::walker::{Buffers, Loc, Walker, lossy};
use crate::error::Result;
use crate::fatbin;
use crate::num::len64;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::tap::{self, Tap};
use crate::scan::{ContainerKind, Content, Image, Offload, Problem, ProblemKind, Unread};

/// Compressed entries decoded together, per thread: enough to keep every
/// thread busy when entry sizes differ, few enough that the sinks open at
/// once (temporary files, for `extract`) stay well under a process's file
/// limit.
const BATCH_PER_THREAD: usize = 8;

/// A compressed entry whose decoding has been set up and not yet run.
struct Pending {
    /// The entry's index in its fatbin.
    entry: usize,
    /// Its image.
    img: usize,
    /// Where its bytes lie.
    at: Loc,
    /// Its declared decompressed size (reserved in the budget).
    size: u64,
    /// Whether the visitor wanted its bytes.
    wanted: bool,
    /// Where the decoded bytes go (one tap).
    taps: Vec<Tap>,
    /// How the decoding went: `None` until it ran.
    outcome: Option<Result<u64>>,
    /// Whether it was set up before the scan stopped at a limit: its
    /// failure is then a problem even if the limit was met while it was
    /// being decoded (as when one thread decodes each entry at once).
    before_stop: bool,
}

impl Walker<'_> {
    /// A CUDA fatbin container at `sub`, its entries as images.
    pub(super) fn fatbin(&mut self, sub: &[u8], loc: &Loc, rel: u64) -> Result<u64> {
        let f = fatbin::read(sub)?;
        let id = self.new_container(
            ContainerKind::CudaFatbin,
            Some(u32::from(f.version)),
            loc,
            rel,
            f.size,
        );
        let inner = Loc {
            depth: loc.depth + 1,
            ..loc.clone()
        };
        let threads = self.opts.threads.max(1);
        // Each thread keeps its buffers from fatbin to fatbin.
        let mut bufs = std::mem::take(&mut self.decoding);
        if bufs.len() < threads {
            bufs.resize_with(threads, Buffers::default);
        }
        let panicked = Mutex::new(None);
        let mut found = EntryProblems::new(self.report.problems.len());
        std::thread::scope(|scope| {
            let mut flight = Flight::start(scope, &f.entries, &mut bufs[..threads], &panicked);
            for (i, e) in f.entries.iter().enumerate() {
                if self.stopped() {
                    break;
                }
                let image = entry_image(e, i, id, loc);
                let at = inner.at(e.payload_offset);
                if !e.compressed() || e.is_opaque() {
                    // PTX is its text, as cuobjdump writes it: not the NUL
                    // that ends it nor the padding after it.
                    let bytes = match e.kind {
                        fatbin::KIND_PTX => fatbin::ptx_text(e.payload),
                        _ => e.payload,
                    };
                    let image = Image {
                        size: len64(bytes),
                        ..image
                    };
                    self.push_image(image, Some(bytes), &at);
                    found.mark(&self.report.problems, i);
                    continue;
                }
                let img = self.push_image(image, None, &at);
                if let Some(p) = self.entry_pending(e, i, img, id, at) {
                    flight.send(p);
                }
                found.mark(&self.report.problems, i);
                // Those decoded so far, in order; the oldest waited for
                // while as many as the threads may hold are under way.
                while let Some(p) = flight.next(flight.full()) {
                    self.entry_decoded(&f.entries, id, p, &mut found);
                }
            }
            flight.close();
            while let Some(p) = flight.next(true) {
                self.entry_decoded(&f.entries, id, p, &mut found);
            }
        });
        found.put_in_order(&mut self.report.problems);
        self.decoding = bufs;
        // A reader or sink of the visitor's that panicked on a decoding
        // thread panics here, as it would have on this one.
        if let Some(payload) = panicked.into_inner().unwrap_or_else(|e| e.into_inner()) {
            std::panic::resume_unwind(payload);
        }
        Ok(f.size)
    }

    /// Sets up the decoding of compressed entry `e` (entry `i` of fatbin
    /// container `id`, image `img`, at `at`) when its bytes are asked for
    /// and its declared size fits the budget (which it then reserves). An
    /// entry whose size its data cannot hold is a problem at once.
    fn entry_pending(
        &mut self,
        e: &fatbin::Entry<'_>,
        i: usize,
        img: usize,
        id: usize,
        at: Loc,
    ) -> Option<Pending> {
        let wanted = self.visit.wants(&self.report.images[img]);
        let ptx = e.kind == fatbin::KIND_PTX;
        // Read when asked for, or to measure a PTX text.
        let read =
            self.opts.hash.is_some() || self.opts.verify || wanted || ptx && self.opts.ptx_text;
        if !read {
            return None;
        }
        let size = e.decompressed_size.unwrap_or(0);
        if let Err(err) = e.reader(u64::MAX) {
            // A size its data cannot hold is damage, told apart before the
            // budget is asked.
            let why = entry_damage(e, i, &err);
            self.problem(&at, Some(id), why.clone());
            if wanted {
                let taps = vec![self.visitor_tap(img, 0..size)];
                self.hand_over(&[img], taps, Err(Unread::new(why)));
            }
            return None;
        }
        if !self.fits(size) || !self.setup(size) {
            return None;
        }
        // Counted before it runs: a stream that fails counts whole.
        self.budget -= size;
        self.report.decompressed = self.report.decompressed.saturating_add(size);
        let mut tap = if wanted {
            self.visitor_tap(img, 0..size)
        } else {
            Tap::new(0..size, 0)
        };
        if ptx {
            tap = tap.text();
        }
        tap.hasher = self.opts.hash.map(|h| h.hasher());
        Some(Pending {
            entry: i,
            img,
            at,
            size,
            wanted,
            taps: vec![tap],
            outcome: None,
            before_stop: !self.stopped(),
        })
    }

    /// Records how the decoding of `p` (an entry of `entries`, fatbin
    /// container `id`) went, its problem marked as its entry's in `found`,
    /// and hands its image to the visitor.
    fn entry_decoded(
        &mut self,
        entries: &[fatbin::Entry<'_>],
        id: usize,
        p: Pending,
        found: &mut EntryProblems,
    ) {
        let e = &entries[p.entry];
        let mut taps = p.taps;
        let why = match p.outcome.unwrap_or(Ok(p.size)) {
            Ok(n) => {
                // The reservation was the declared size; what was decoded
                // is exactly that (else the read failed).
                self.budget = self.budget.saturating_add(p.size.saturating_sub(n));
                self.report.images[p.img].hash =
                    taps[0].hasher.take().map(crate::scan::Hasher::finish);
                if e.kind == fatbin::KIND_PTX {
                    self.report.images[p.img].uncompressed_size = Some(taps[0].taken);
                }
                Ok(())
            }
            Err(err) => Err(entry_damage(e, p.entry, &err)),
        };
        // Damage is a problem of the fatbin whether or not the visitor
        // wanted the entry (it also gets the failure).
        if let Err(why) = &why
            && p.before_stop
        {
            self.record_problem(ProblemKind::Damage, &p.at, Some(id), why.clone());
        }
        found.mark(&self.report.problems, p.entry);
        if p.wanted {
            self.hand_over(&[p.img], taps, why.map_err(Unread::new));
        }
    }
}

/// The problems a fatbin's walk finds, each with the entry it belongs to:
/// with threads, an entry's outcome comes back after later entries were
/// looked at, and the problems are then put back in entry order, as one
/// thread finds them.
struct EntryProblems {
    /// The report's first problem found in this fatbin.
    first: usize,
    /// The entry of each problem from `first` on, as far as marked.
    entries: Vec<usize>,
}

impl EntryProblems {
    /// The problems of a fatbin whose first would be the report's
    /// `first`.
    fn new(first: usize) -> EntryProblems {
        EntryProblems {
            first,
            entries: Vec::new(),
        }
    }

    /// Marks the problems found since the last mark (the last ones of
    /// `problems`) as entry `entry`'s.
    fn mark(&mut self, problems: &[Problem], entry: usize) {
        let n = problems.len().saturating_sub(self.first);
        self.entries.resize(n, entry);
    }

    /// Puts `problems` from the first on in the order of the entries they
    /// belong to, keeping the order of each entry's own.
    fn put_in_order(mut self, problems: &mut Vec<Problem>) {
        self.mark(problems, usize::MAX);
        if self.entries.is_sorted() {
            return;
        }
        let mut found: Vec<_> = self
            .entries
            .into_iter()
            .zip(problems.drain(self.first..))
            .collect();
        found.sort_by_key(|&(entry, _)| entry);
        problems.extend(found.into_iter().map(|(_, p)| p));
    }
}

/// The image of fatbin entry `e` (entry `i` of container `id`, whose
/// container lies at `loc`), before its bytes are known: named as
/// `cuobjdump` names it ([`fatbin::Entry::arch_name`]), with the
/// architecture its code is for ([`fatbin::Entry::code_arch`]).
fn entry_image(e: &fatbin::Entry<'_>, i: usize, id: usize, loc: &Loc) -> Image {
    let arch = e.arch_name();
    let mut strings = Vec::new();
    if let Some(n) = e.name {
        strings.push(("name".to_string(), lossy(n)));
    }
    strings.push((
        "code_version".to_string(),
        format!("{}.{}", e.version.0, e.version.1),
    ));
    if let Some(m) = e.compression() {
        strings.push(("compression".to_string(), m.to_string()));
    }
    // An opaque entry is its stored bytes; the size it says it decodes to
    // is kept as what it says.
    let (uncompressed_size, declared) = match e.is_opaque() {
        true => (None, e.decompressed_size),
        false => (e.decompressed_size, None),
    };
    if let Some(n) = declared {
        strings.push(("uncompressed_size".to_string(), n.to_string()));
    }
    Image {
        id: 0,
        container: id,
        index: i,
        bundle_id: None,
        offload_kind: if e.is_opencl() {
            Offload::OpenCl
        } else {
            Offload::Kind(OffloadKind::OFK_Cuda)
        },
        image_kind: Some(match e.kind {
            fatbin::KIND_PTX => Content::Image(ImageKind::IMG_PTX),
            fatbin::KIND_ELF => Content::Image(ImageKind::IMG_Cubin),
            k => Content::FatbinEntry(k),
        }),
        triple: e.triple().into(),
        arch: arch.clone(),
        target_id: arch,
        features: Vec::new(),
        cuda_arch: Some(e.code_arch()),
        strings,
        section: loc.section.clone(),
        member: loc.member.clone(),
        offset: loc.abs.and_then(|a| a.checked_add(e.payload_offset)),
        relative_offset: e.payload_offset,
        size: len64(e.payload),
        uncompressed_size,
        in_compressed: loc.in_compressed,
        hash: None,
        nested: None,
        overlaps: None,
    }
}

/// The problem of entry `i` (`e`) that does not decode.
fn entry_damage(e: &fatbin::Entry<'_>, i: usize, err: &crate::error::Error) -> String {
    format!(
        "CUDA fatbin entry {i} ({} {}): {err}",
        e.arch_name(),
        entry_kind(e.kind)
    )
}

/// Decodes entry `p` of `entries` into its tap (or taps), with `b`.
fn decode(entries: &[fatbin::Entry<'_>], p: &mut Pending, b: &mut Buffers) {
    let size = p.size;
    let outcome = entries[p.entry].reader(u64::MAX).and_then(|mut r| {
        if let [tap] = &mut p.taps[..]
            && tap.takes_whole(size)
        {
            let n = tap::pump_whole(&mut *r, size, tap, &mut b.whole);
            // The buffer is kept for the next entry, unless it grew past
            // what the scan keeps for speed.
            if b.whole.capacity() > SPARE_MAX {
                b.whole = Vec::new();
            }
            return n;
        }
        let mut wanted: Vec<_> = p
            .taps
            .iter_mut()
            .map(|t| crate::bundle::ccob::Wanted {
                range: t.range.clone(),
                out: t,
            })
            .collect();
        tap::pump(&mut *r, size, &mut wanted, &mut b.chunk)
    });
    p.outcome = Some(outcome);
}

/// What a decoding thread's panic left: its payload, for the walk's
/// thread to panic with.
type Panicked = Mutex<Option<Box<dyn std::any::Any + Send>>>;

/// Compressed entries on their way through the decoding: sent in entry
/// order, decoded on the threads (or at once, with one), and given back
/// in entry order again.
struct Flight<'scope, 'env> {
    scope: &'scope std::thread::Scope<'scope, 'env>,
    entries: &'scope [fatbin::Entry<'scope>],
    panicked: &'scope Panicked,
    /// Who decodes the entries sent.
    run: Run<'scope>,
    /// The entries decoded, as they come.
    done: mpsc::Receiver<Pending>,
    /// The entries sent and not yet given back, in order.
    order: VecDeque<usize>,
    /// The entries decoded before their turn.
    ahead: BTreeMap<usize, Pending>,
    /// The most under way at once.
    cap: usize,
}

/// Who decodes a [`Flight`]'s entries.
enum Run<'scope> {
    /// The walk's own thread, as each is sent, with these buffers.
    Inline(&'scope mut Buffers),
    /// Threads, one per buffer, not started yet (they start at the first
    /// entry sent: a fatbin with nothing to decode starts none); where
    /// they will give entries back.
    Idle(&'scope mut [Buffers], mpsc::Sender<Pending>),
    /// The threads, and where entries go to them.
    Threads(mpsc::Sender<Pending>),
    /// No more entries will be sent.
    Closed,
}

impl<'scope, 'env> Flight<'scope, 'env> {
    /// Entries of `entries` decoded on one thread per buffer of `bufs` in
    /// `scope`; with one buffer, on the walk's thread as each is sent (as
    /// it does everything else).
    fn start(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        entries: &'scope [fatbin::Entry<'scope>],
        bufs: &'scope mut [Buffers],
        panicked: &'scope Panicked,
    ) -> Flight<'scope, 'env> {
        let (done_tx, done) = mpsc::channel::<Pending>();
        let (run, cap) = match bufs {
            [b] => (Run::Inline(b), 1),
            bufs => {
                let cap = bufs.len().saturating_mul(BATCH_PER_THREAD);
                (Run::Idle(bufs, done_tx), cap)
            }
        };
        Flight {
            scope,
            entries,
            panicked,
            run,
            done,
            order: VecDeque::new(),
            ahead: BTreeMap::new(),
            cap,
        }
    }

    /// Starts a decoding thread per buffer of `bufs`, each giving entries
    /// back through `done_tx`; returns where to send them.
    fn spawn(
        &self,
        bufs: &'scope mut [Buffers],
        done_tx: &mpsc::Sender<Pending>,
    ) -> mpsc::Sender<Pending> {
        let (entries, panicked) = (self.entries, self.panicked);
        let (work, work_rx) = mpsc::channel::<Pending>();
        let work_rx = std::sync::Arc::new(Mutex::new(work_rx));
        for b in bufs {
            let (rx, tx) = (work_rx.clone(), done_tx.clone());
            self.scope.spawn(move || {
                loop {
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(mut p) = next else { break };
                    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        decode(entries, &mut p, b);
                    }));
                    if let Err(payload) = run {
                        // Given back failed, so that the walk goes on to
                        // its end, where it panics with this.
                        p.outcome = Some(Err(crate::error::Error::invalid(
                            "a decoding thread",
                            "it panicked",
                        )));
                        let mut slot = panicked.lock().unwrap_or_else(|e| e.into_inner());
                        slot.get_or_insert(payload);
                    }
                    if tx.send(p).is_err() {
                        break;
                    }
                }
            });
        }
        work
    }

    /// Sends `p` to be decoded.
    fn send(&mut self, mut p: Pending) {
        self.order.push_back(p.entry);
        if let Run::Idle(..) = self.run
            && let Run::Idle(bufs, done_tx) = std::mem::replace(&mut self.run, Run::Closed)
        {
            self.run = Run::Threads(self.spawn(bufs, &done_tx));
        }
        match &mut self.run {
            Run::Inline(b) => {
                decode(self.entries, &mut p, b);
                self.ahead.insert(p.entry, p);
            }
            Run::Threads(w) => {
                if let Err(mpsc::SendError(p)) = w.send(p) {
                    // No thread is left to decode it (each gives back what
                    // it took before it ends): decoded here.
                    self.decode_here(p);
                }
            }
            // Never: nothing is sent after `close`.
            Run::Idle(..) | Run::Closed => self.decode_here(p),
        }
    }

    /// Decodes `p` on the walk's thread, with buffers of its own.
    fn decode_here(&mut self, mut p: Pending) {
        decode(self.entries, &mut p, &mut Buffers::default());
        self.ahead.insert(p.entry, p);
    }

    /// Whether as many entries are under way as may be.
    fn full(&self) -> bool {
        self.order.len() >= self.cap
    }

    /// No more entries will be sent: the threads end once they have
    /// decoded those sent.
    fn close(&mut self) {
        self.run = Run::Closed;
    }

    /// The oldest entry sent, once decoded (waiting for it with `wait`):
    /// `None` when it is not decoded yet, or none is under way.
    fn next(&mut self, wait: bool) -> Option<Pending> {
        let &first = self.order.front()?;
        loop {
            if let Some(p) = self.ahead.remove(&first) {
                self.order.pop_front();
                return Some(p);
            }
            let got = match wait {
                true => self.done.recv().ok(),
                false => self.done.try_recv().ok(),
            };
            match got {
                Some(p) => {
                    self.ahead.insert(p.entry, p);
                }
                // Every thread has ended, and this entry never came back:
                // not possible (a thread gives back all it takes), but
                // the walk must not wait for it forever.
                None if wait => {
                    self.order.pop_front();
                    return None;
                }
                None => return None,
            }
        }
    }
}

/// A fatbin entry's kind, as messages name it.
fn entry_kind(kind: u16) -> String {
    match kind {
        fatbin::KIND_PTX => "ptx".into(),
        fatbin::KIND_ELF => "cubin".into(),
        fatbin::KIND_NVVM => "nvvm".into(),
        k => format!("kind {k}"),
    }
}
