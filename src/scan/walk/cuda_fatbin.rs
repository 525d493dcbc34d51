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
//! the number of threads; with more than one, the visitor may get an
//! uncompressed entry's bytes before the compressed entries ahead of it.

use std::sync::Mutex;

use super::{Loc, Walker, lossy};
use crate::error::Result;
use crate::fatbin;
use crate::num::len64;
use crate::offload_binary::{ImageKind, OffloadKind};
use crate::scan::tap::{self, Tap};
use crate::scan::{ContainerKind, Content, Image, Offload};

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
        // One thread decodes each entry as it comes, as the walk does
        // everything else.
        let cap = match threads {
            1 => 1,
            n => n.saturating_mul(BATCH_PER_THREAD),
        };
        let mut batch = Vec::new();
        for (i, e) in f.entries.iter().enumerate() {
            if self.stopped() {
                break;
            }
            let image = entry_image(e, i, id, loc);
            let at = inner.at(e.payload_offset);
            if !e.compressed() {
                // PTX is its text, as cuobjdump writes it: not the NUL that
                // ends it nor the padding after it.
                let bytes = match e.kind {
                    fatbin::KIND_PTX => fatbin::ptx_text(e.payload),
                    _ => e.payload,
                };
                let image = Image {
                    size: len64(bytes),
                    ..image
                };
                self.push_image(image, Some(bytes), &at);
                continue;
            }
            let img = self.push_image(image, None, &at);
            if let Some(p) = self.entry_pending(e, i, img, id, at) {
                batch.push(p);
            }
            if batch.len() >= cap {
                self.entries_decoded(&f.entries, id, std::mem::take(&mut batch), threads);
            }
        }
        self.entries_decoded(&f.entries, id, batch, threads);
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
        if self.opts.hash.is_none() && !self.opts.verify && !wanted && !ptx {
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
                self.hand_over(&[img], taps, Err(why));
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
        })
    }

    /// Decodes `batch` (entries of `entries`, fatbin container `id`) on up
    /// to `threads` threads, then records each outcome and hands each
    /// image to the visitor, in entry order.
    fn entries_decoded(
        &mut self,
        entries: &[fatbin::Entry<'_>],
        id: usize,
        mut batch: Vec<Pending>,
        threads: usize,
    ) {
        decode_all(entries, &mut batch, threads);
        for p in batch {
            let e = &entries[p.entry];
            let mut taps = p.taps;
            let why = match p.outcome.unwrap_or(Ok(p.size)) {
                Ok(n) => {
                    // The reservation was the declared size; what was
                    // decoded is exactly that (else the read failed).
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
            if let Err(why) = &why {
                self.problem(&p.at, Some(id), why.clone());
            }
            if p.wanted {
                self.hand_over(&[p.img], taps, why);
            }
        }
    }
}

/// The image of fatbin entry `e` (entry `i` of container `id`, whose
/// container lies at `loc`), before its bytes are known.
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
        strings,
        section: loc.section.clone(),
        member: loc.member.clone(),
        offset: loc.abs.and_then(|a| a.checked_add(e.payload_offset)),
        relative_offset: e.payload_offset,
        size: len64(e.payload),
        uncompressed_size: e.decompressed_size,
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

/// Decodes each entry of `batch` into its tap, on up to `threads` threads
/// taking entries in turn (the calling thread alone for one).
fn decode_all(entries: &[fatbin::Entry<'_>], batch: &mut [Pending], threads: usize) {
    let decode = |p: &mut Pending, buf: &mut Vec<u8>| {
        let size = p.size;
        let outcome = entries[p.entry].reader(u64::MAX).and_then(|mut r| {
            if let [tap] = &mut p.taps[..]
                && tap.takes_whole(size)
            {
                return tap::pump_whole(&mut *r, size, tap);
            }
            let mut wanted: Vec<_> = p
                .taps
                .iter_mut()
                .map(|t| crate::bundle::ccob::Wanted {
                    range: t.range.clone(),
                    out: t,
                })
                .collect();
            tap::pump(&mut *r, size, &mut wanted, buf)
        });
        p.outcome = Some(outcome);
    };
    let threads = threads.min(batch.len());
    if threads <= 1 {
        let mut buf = Vec::new();
        batch.iter_mut().for_each(|p| decode(p, &mut buf));
        return;
    }
    let next = Mutex::new(batch.iter_mut());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut buf = Vec::new();
                loop {
                    let p = next.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(p) = p else { break };
                    decode(p, &mut buf);
                }
            });
        }
    });
}

/// A fatbin entry's kind, as messages name it.
fn entry_kind(kind: u16) -> String {
    match kind {
        fatbin::KIND_PTX => "ptx".into(),
        fatbin::KIND_ELF => "cubin".into(),
        k => format!("kind {k}"),
    }
}
