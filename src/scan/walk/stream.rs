//! Streaming a compressed container's contents: one pass through taps
//! (each image's first bytes, hash or sink), the budget charged, and what
//! the taps got handed to the visitor.

use super::walker::{SNIFF_HEAD, Walker, over_budget};
use crate::bundle::ccob::{self as ccob, Ccob, HashCheck, ReadOptions};
use crate::error::{ErrorKind, Result};
use crate::scan::tap::{self, Tap, TapOut, ZeroTail};
use crate::scan::{SinkError, Unread};

/// Where the bytes [`Walker::tap`] streams come from.
pub(super) enum Source<'s> {
    /// A CCOB's contents, its stored hash checked as asked.
    Ccob(&'s Ccob<'s>, HashCheck),
    /// Decompressed data that is exactly this many bytes or fails the
    /// read (a compressed OffloadBinary, a compressed CUDA fatbin entry).
    Decoded(Box<dyn std::io::Read + 's>, u64),
}

impl Source<'_> {
    /// The bytes the stream declares.
    fn declared(&self) -> u64 {
        match self {
            Source::Ccob(c, _) => c.header.uncompressed_size,
            Source::Decoded(_, n) => *n,
        }
    }
}

/// What a [`Walker::tap`] found.
pub(super) struct Tapped {
    /// Bytes decompressed.
    pub(super) decompressed: u64,
    /// A CCOB's truncated MD5, when its hash was asked for.
    pub(super) computed_hash: Option<u64>,
    /// The first non-zero byte after the tail (a bundle's end).
    pub(super) first_non_zero: Option<u64>,
}

impl Walker<'_> {
    /// Streams `source` once into `taps` (each its range), producing at
    /// most `limit` bytes, and checks the bytes from `tail` on for zeros.
    /// The one way every compressed container's images are streamed.
    pub(super) fn tap(
        &mut self,
        source: Source<'_>,
        taps: &mut [Tap],
        tail: u64,
        limit: u64,
    ) -> Result<Tapped> {
        let declared = source.declared();
        // Counted before it runs: a stream that fails counts whole.
        self.report.decompressed = self.report.decompressed.saturating_add(declared);
        let mut zeros = ZeroTail::new(tail.min(declared));
        let mut wanted: Vec<ccob::Wanted<'_>> = taps
            .iter_mut()
            .map(|t| ccob::Wanted {
                range: t.range.clone(),
                out: t,
            })
            .collect();
        if tail < declared {
            wanted.push(ccob::Wanted {
                range: tail..declared,
                out: &mut zeros,
            });
        }
        let (decompressed, computed_hash) = match source {
            Source::Ccob(c, hash) => {
                let opts = ReadOptions {
                    limits: crate::Limits::uncompressed(limit),
                    hash,
                };
                // Two threads: the MD5 apart from the decoding, or our
                // multi-frame CCOBs decoded a frame per thread.
                let streamed = c.stream_parallel(
                    std::io::Cursor::new(c.payload),
                    &mut wanted,
                    &opts,
                    ccob::StreamEnd::Whole,
                    2,
                )?;
                (streamed.decompressed, streamed.computed_hash)
            }
            Source::Decoded(mut r, n) => {
                if n > limit {
                    return Err(ErrorKind::LimitExceeded {
                        what: format!("decompressed data of {n} bytes"),
                        limit,
                    }
                    .into());
                }
                (tap::pump(&mut *r, n, &mut wanted, &mut Vec::new())?, None)
            }
        };
        drop(wanted);
        Ok(Tapped {
            decompressed,
            computed_hash,
            first_non_zero: zeros.first_non_zero,
        })
    }

    /// [`Walker::tap`] for a container's first stream, charging the budget
    /// with the declared size when the stream fails after it was let start
    /// (within the budget): its decoding was done, and without the charge
    /// many containers each failing at their last byte could decode the
    /// budget over and over. A success is charged by the caller.
    pub(super) fn tap_charged(
        &mut self,
        source: Source<'_>,
        taps: &mut [Tap],
        tail: u64,
        limit: u64,
    ) -> Result<Tapped> {
        let declared = source.declared();
        if !self.fits(declared) {
            return Err(over_budget(declared, self.budget));
        }
        let run = self.tap(source, taps, tail, limit);
        if run.is_err() && declared <= self.budget {
            self.budget -= declared;
        }
        run
    }

    /// The images among `ids` the visitor wants (never one left unread).
    pub(super) fn wanted(&mut self, ids: Vec<usize>) -> Vec<usize> {
        ids.into_iter()
            .filter(|&i| {
                self.report.images[i].is_read() && self.visit.wants(&self.report.images[i])
            })
            .collect()
    }

    /// A tap for each of `images` (bundle entries inside a CCOB, images of
    /// a compressed OffloadBinary: their bytes in the decompressed data),
    /// to the visitor's sink where it gives one, else into memory.
    pub(super) fn visitor_taps(&mut self, images: &[usize]) -> Vec<Tap> {
        images
            .iter()
            .map(|&i| {
                let img = &self.report.images[i];
                let range = img.relative_offset..img.relative_offset + img.size;
                self.visitor_tap(i, range)
            })
            .collect()
    }

    /// A tap for the first pass over a compressed container's data, on the
    /// `size` bytes of an image at `start`: its first bytes (for its kind)
    /// and its hash, when asked for.
    pub(super) fn first_pass_tap(&self, start: u64, size: u64) -> Tap {
        let mut t = Tap::new(start..start + size, SNIFF_HEAD);
        t.hasher = self.opts.hash.map(|h| h.hasher());
        t
    }

    /// A tap on `range` of a stream for image `i`, to the visitor's sink
    /// where it gives one, else into memory.
    pub(super) fn visitor_tap(&mut self, i: usize, range: std::ops::Range<u64>) -> Tap {
        let mut t = Tap::new(range.clone(), 0);
        let img = &self.report.images[i];
        t.out = match self.visit.reader(img) {
            Some(r) => TapOut::Reader(r, reserved(range.end - range.start)),
            None => match self.visit.sink(img) {
                Some(s) => TapOut::Sink(s, None),
                None => TapOut::Buffer(Vec::new()),
            },
        };
        if matches!(t.out, TapOut::Buffer(_)) {
            t.spare = take_spare(&mut self.spare, range.end - range.start);
        }
        t
    }

    /// Hands what `taps` (one per image of `images`) got to the visitor:
    /// each sink back with how its stream ended, bytes in memory to
    /// [`Visit::image`](crate::scan::Visit::image) or to the image's
    /// reader (which is then handed back), a reader that has read them
    /// back; when the stream failed (`why`), every image is unavailable.
    pub(super) fn hand_over(
        &mut self,
        images: &[usize],
        taps: Vec<Tap>,
        why: std::result::Result<(), Unread>,
    ) {
        // Past a limit nothing more is handed over: each sink comes back
        // failed, each image is unavailable.
        let why = match self.report.stopped {
            Some(limit) => Err(Unread::from(limit)),
            None => why,
        };
        for (&i, t) in images.iter().zip(taps) {
            let img = &self.report.images[i];
            match (t.out, &why) {
                (TapOut::Sink(sink, error), Ok(())) => {
                    let end = error.map_or(Ok(()), |e| Err(SinkError::Write(e)));
                    self.visit.streamed(img, sink, end);
                }
                (TapOut::Sink(sink, _), Err(w)) => {
                    self.visit
                        .streamed(img, sink, Err(SinkError::Data(w.clone())));
                }
                (TapOut::Buffer(bytes), Ok(())) => {
                    self.visit.image(img, &bytes);
                    keep_spare(&mut self.spare, bytes);
                }
                (TapOut::Buffer(bytes), Err(w)) => {
                    self.visit.unavailable(img, w);
                    keep_spare(&mut self.spare, bytes);
                }
                (TapOut::Reader(mut r, bytes), Ok(())) => {
                    r.read(&bytes);
                    self.visit.read(img, r, Ok(()));
                    keep_spare(&mut self.spare, bytes);
                }
                (TapOut::Read(r), Ok(())) => self.visit.read(img, r, Ok(())),
                (TapOut::Reader(r, bytes), Err(w)) => {
                    self.visit.read(img, r, Err(w.clone()));
                    keep_spare(&mut self.spare, bytes);
                }
                (TapOut::Read(r), Err(w)) => self.visit.read(img, r, Err(w.clone())),
                (TapOut::Nowhere, _) => {}
            }
        }
    }
}

/// An empty buffer with room for `size` bytes (at most [`MAX_WHOLE`]; none
/// when the memory cannot be had): an image collected in memory is then
/// never copied to a larger buffer as it grows, which for a moment held
/// it one and a half times. Pages are taken only as bytes arrive.
///
/// [`MAX_WHOLE`]: crate::scan::MAX_WHOLE
fn reserved(size: u64) -> Vec<u8> {
    let mut v = Vec::new();
    let want = usize::try_from(size.min(crate::scan::MAX_WHOLE)).unwrap_or(0);
    let _ = v.try_reserve_exact(want);
    v
}

/// Buffers kept for images to come, at most: enough for a batch of
/// compressed fatbin entries decoded at once.
const SPARE_BUFFERS: usize = 32;
/// The largest buffer kept (here, and by each thread that decodes CUDA
/// fatbin entries for the visitor's readers).
pub(super) const SPARE_MAX: usize = 64 << 20;
/// The most bytes all kept buffers may hold together: memory a scan
/// keeps for speed stays small whatever the images' sizes.
const SPARE_TOTAL: usize = 256 << 20;

/// Keeps `bytes`, a buffer whose image the visitor is done with, for the
/// next image taken into memory (its bytes stay, to be overwritten): a
/// fresh buffer for each image would cost the kernel fresh pages, and
/// their zeroing, every time.
fn keep_spare(spare: &mut Vec<Vec<u8>>, bytes: Vec<u8>) {
    let kept: usize = spare.iter().map(Vec::capacity).sum();
    if spare.len() < SPARE_BUFFERS
        && bytes.capacity() <= SPARE_MAX
        && kept.saturating_add(bytes.capacity()) <= SPARE_TOTAL
        && !bytes.is_empty()
    {
        spare.push(bytes);
    }
}

/// The kept buffer best for an image of `size` bytes: the shortest that
/// holds it, else the longest (which then grows).
fn take_spare(spare: &mut Vec<Vec<u8>>, size: u64) -> Vec<u8> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    let fits = spare
        .iter()
        .enumerate()
        .filter(|(_, b)| b.len() >= size)
        .min_by_key(|(_, b)| b.len())
        .map(|(i, _)| i);
    let pick = fits.or_else(|| {
        spare
            .iter()
            .enumerate()
            .max_by_key(|(_, b)| b.len())
            .map(|(i, _)| i)
    });
    pick.map(|i| spare.swap_remove(i)).unwrap_or_default()
}
