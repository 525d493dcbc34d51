//! Streaming a CCOB's contents on several threads ([`Ccob::stream_parallel`]).
//!
//! A payload of several zstd frames (`bundle --compress --threads N`
//! writes independent frames of at most 32 MiB) can be decoded a frame per
//! worker: each frame header declares the frame's content size, so where
//! each frame's bytes land in the contents is known before decoding. The
//! workers decode frames ahead of the writer, each in one call into a
//! buffer of exactly its content size; this thread writes the frames in
//! order to the wanted ranges, and another thread computes the MD5 over
//! them, so that the hash (which no one can split: MD5 is one chain) runs
//! on a core of its own while decoding and writing share the others. The
//! hasher follows the writer 1 MiB at a time, so it reads what the writer
//! has just read from the processor's cache rather than from memory (on
//! 256 MiB, about 15 % less CPU time in all than handing it whole frames).
//!
//! Memory is the frames in flight, at most the workers plus two of them
//! (one being written, one being hashed; see `ahead`), each no larger
//! than [`MAX_FRAME`]: 128 MiB on two threads without the hash, 160 MiB on
//! three with it, for 32 MiB frames. No zstd window is kept: a frame
//! decoded in one call refers to its own output only.
//!
//! Frames are decoded apart only when at least two threads are left for
//! decoding (two threads without the hash, three with it). Anything else
//! streams on one decoder as [`Ccob::stream_from`] does (the MD5 on a
//! second thread when there are two): one decoder thread, a single frame
//! (LLVM's CCOBs), zlib, frames without a content size, frames larger than
//! [`MAX_FRAME`], more than [`MAX_FRAMES`] of them, or content sizes that
//! do not add up to the declared size (that stream then names the fault).

use std::io::{Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex, mpsc};

use md5::{Digest, Md5};
use zstd::zstd_safe;

use super::header::truncated;
use super::pool::{Missing, Pool};
use super::raw::Method;
use super::read::{Ccob, HashCheck, ReadOptions};
use super::stream::{FrameSpan, Irregular, StreamEnd, Streamed, Wanted, last_wanted, write_wanted};
use crate::error::Result;
use crate::num::{len64, usize_from};

/// The largest frame decoded in one call; a payload with a larger frame
/// streams through one decoder (its window is then the frame's).
pub const MAX_FRAME: u64 = 64 << 20;

/// The most frames a payload may have to be decoded in parallel (their
/// list is kept; our writer makes one per 32 MiB).
pub const MAX_FRAMES: usize = 1 << 16;

/// The threads streaming uses by default: the CPUs this process may run
/// on, at most 4 (each more thread holds another frame in memory, and
/// the writer and the MD5 stay one thread each).
pub fn default_threads() -> u32 {
    std::thread::available_parallelism()
        .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        .clamp(1, 4)
}

/// Frames decoded ahead of the one being hashed, for `decoders` workers.
fn ahead(decoders: u32) -> u64 {
    u64::from(decoders) + 2
}

impl Ccob<'_> {
    /// [`Ccob::stream_from`] on `threads` threads: a payload of several
    /// zstd frames that each declare their content size is decoded a frame
    /// per worker when two or more threads are left for decoding (see the
    /// module docs); anything else is streamed by one decoder, the MD5 on a
    /// second thread when `threads` > 1 and on this one when it is 1. The outputs, errors and messages are those of
    /// [`Ccob::stream_from`]; with [`StreamEnd::LastWanted`] and no hash,
    /// decoding stops after the frame holding the last wanted byte.
    pub fn stream_parallel<R: Read + Seek + Send>(
        &self,
        mut payload: R,
        wanted: &mut [Wanted<'_>],
        opts: &ReadOptions,
        end: StreamEnd,
        threads: u32,
    ) -> Result<Streamed> {
        self.check_stream(wanted, opts)?;
        if threads <= 1 {
            return self.stream_serial(payload, wanted, opts, end, false);
        }
        // With the hash, one thread hashes and the others decode. One
        // decoder gains nothing from frames: the serial stream, whose
        // 2 MiB chunks are written and hashed while still in cache, is
        // faster (on 4 × 64 MiB: 0.46 s against 0.53 s on two threads).
        let hashing = opts.hash != HashCheck::Skip;
        let decoders = if hashing { threads - 1 } else { threads };
        if decoders < 2 {
            return self.stream_serial(payload, wanted, opts, end, true);
        }
        let Some(frames) = self.parallel_frames(&mut payload) else {
            return self.stream_serial(payload, wanted, opts, end, true);
        };
        let frames = if !hashing && end == StreamEnd::LastWanted {
            let last = last_wanted(wanted);
            let mut start = 0u64;
            let needed = frames
                .iter()
                .take_while(|f| {
                    let s = start;
                    start += f.size;
                    s < last
                })
                .count();
            &frames[..needed]
        } else {
            &frames[..]
        };
        let run = run_frames(payload, frames, wanted, hashing, decoders);
        self.end_stream(opts, run)
    }

    /// The payload's zstd frames when they can be decoded in parallel:
    /// zstd, at least two frames, at most [`MAX_FRAMES`], each declaring a
    /// content size of at most [`MAX_FRAME`], together the declared size.
    pub(super) fn parallel_frames<R: Read + Seek>(
        &self,
        payload: &mut R,
    ) -> Option<Vec<FrameSpan>> {
        if self.header.method != Method::ZSTD {
            return None;
        }
        let mut frames = Vec::new();
        let mut sum = 0u64;
        super::stream::walk_zstd_frames(payload, len64(self.payload), &mut |f| {
            if frames.len() >= MAX_FRAMES || f.size > MAX_FRAME {
                return None;
            }
            sum = sum.checked_add(f.size)?;
            frames.push(f);
            Some(())
        })?;
        (frames.len() >= 2 && sum == self.header.uncompressed_size).then_some(frames)
    }
}

type FramePool = Pool<Irregular>;

fn decoder_failed() -> Irregular {
    Irregular::Data("a decompression thread failed".into())
}

/// Decodes `frames` (the payload's, from the first, in order) on
/// `decoders` workers, writes them in order to `wanted`, and hashes them
/// on another thread when `hashing`. Returns the bytes decoded and the
/// hash.
fn run_frames<R: Read + Seek + Send>(
    payload: R,
    frames: &[FrameSpan],
    wanted: &mut [Wanted<'_>],
    hashing: bool,
    decoders: u32,
) -> std::result::Result<(u64, Option<u64>), Irregular> {
    let count = len64(frames);
    let workers = u32::try_from(count)
        .unwrap_or(u32::MAX)
        .min(decoders.max(1));
    let pool = FramePool::new(count, workers, ahead(workers));
    let reader = Mutex::new(payload);
    std::thread::scope(|scope| {
        for n in 0..workers {
            let (pool, reader) = (&pool, &reader);
            let spawned = std::thread::Builder::new()
                .name(format!("ccob-unzstd-{n}"))
                .spawn_scoped(scope, move || decode_frames(pool, reader, frames));
            if spawned.is_err() {
                pool.not_started();
            }
        }
        let (full_tx, full_rx) = mpsc::sync_channel::<Piece>(PIECES_AHEAD);
        let hasher = hashing.then(|| {
            let pool = &pool;
            scope.spawn(move || {
                let mut md5 = Md5::new();
                for piece in full_rx {
                    md5.update(&piece.frame[piece.range]);
                    if piece.last {
                        // The writer has let go of the frame with its last
                        // piece, and earlier pieces are gone: it is ours.
                        pool.release(Arc::try_unwrap(piece.frame).unwrap_or_default());
                    }
                }
                truncated(md5)
            })
        });
        let writing = pool.writing();
        let written = write_frames(&pool, frames, wanted, hashing.then_some(&full_tx));
        drop(full_tx);
        drop(writing);
        let hash = match hasher {
            Some(h) => Some(
                h.join()
                    .map_err(|_| Irregular::Data("the hashing thread failed".into()))?,
            ),
            None => None,
        };
        written.map(|n| (n, hash))
    })
}

/// A piece of a decoded frame for the hasher, just written (so still in
/// the processor's cache when hashed): the frame, shared with the writer
/// until its last piece, which hands it over.
struct Piece {
    frame: Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
    last: bool,
}

/// How much of a frame is written (and then hashed) at a time: small
/// enough to stay in cache between the two, which read the frame from
/// memory once instead of twice.
const PIECE: usize = 1 << 20;

/// Pieces the writer may be ahead of the hasher.
const PIECES_AHEAD: usize = 4;

/// The writer: frames in order as they are decoded, the wanted parts of
/// each written a [`PIECE`] at a time, each piece then to the hasher (the
/// frame released after its last piece, by the hasher or here).
fn write_frames(
    pool: &FramePool,
    frames: &[FrameSpan],
    wanted: &mut [Wanted<'_>],
    hasher: Option<&mpsc::SyncSender<Piece>>,
) -> std::result::Result<u64, Irregular> {
    let mut at = 0u64;
    for (i, span) in (0u64..).zip(frames) {
        let buf = pool.frame(i).map_err(|m| match m {
            Missing::Failed(e) => e,
            Missing::Stopped => Irregular::Data("the decompression threads stopped".into()),
        })?;
        let len = buf.len();
        let mut held = Some(Arc::new(buf));
        let mut from = 0usize;
        // An empty frame is one empty piece, so that it is released.
        while let Some(f) = held.take() {
            let to = (from + PIECE).min(len);
            let start = at + len64(&f[..from]);
            write_wanted(wanted, start, &f[from..to]).map_err(Irregular::Write)?;
            let last = to == len;
            let piece = |frame| Piece {
                frame,
                range: from..to,
                last,
            };
            match hasher {
                Some(tx) => {
                    if !last {
                        held = Some(Arc::clone(&f));
                    }
                    tx.send(piece(f))
                        .map_err(|_| Irregular::Data("the hashing thread failed".into()))?;
                }
                None if last => pool.release(Arc::try_unwrap(f).unwrap_or_default()),
                None => held = Some(f),
            }
            from = to;
        }
        at += span.size;
    }
    Ok(at)
}

/// One worker: takes the next frame while it may run ahead, reads its
/// compressed bytes, decodes it into a buffer of its content size and
/// hands it over.
fn decode_frames<R: Read + Seek>(pool: &FramePool, reader: &Mutex<R>, frames: &[FrameSpan]) {
    let _stopping = pool.stopping(decoder_failed);
    let Some(mut dctx) = zstd_safe::DCtx::try_create() else {
        return pool.fail(Irregular::Data("cannot create a zstd context".into()));
    };
    let mut input = Vec::new();
    while let Some((i, mut out)) = pool.take() {
        let f = &frames[usize_from(i)];
        let res = decode_frame(&mut dctx, reader, f, &mut input, &mut out);
        pool.finish(i, res.map(|()| out));
    }
}

/// Reads frame `f` into `input` and decodes it into `out` (empty), which
/// must then hold exactly its content size.
fn decode_frame<R: Read + Seek>(
    dctx: &mut zstd_safe::DCtx<'_>,
    reader: &Mutex<R>,
    f: &FrameSpan,
    input: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> std::result::Result<(), Irregular> {
    let data = Irregular::Data;
    let len = usize::try_from(f.len).map_err(|_| data("a frame too large for memory".into()))?;
    input.clear();
    input.try_reserve_exact(len).map_err(|_| {
        data(format!(
            "cannot allocate {len} bytes for a compressed frame"
        ))
    })?;
    input.resize(len, 0);
    {
        let mut r = reader.lock().unwrap_or_else(|e| e.into_inner());
        r.seek(SeekFrom::Start(f.at))
            .and_then(|_| r.read_exact(input))
            .map_err(|e| data(format!("cannot read the compressed data: {e}")))?;
    }
    // Room for exactly the content size, and never none (see
    // `read::inflate_zstd`: libzstd 1.5.4 must not get an empty buffer);
    // a byte more than declared is zstd's "buffer too small" or a wrong
    // count below.
    let size = usize_from(f.size).max(1);
    out.clear();
    out.try_reserve_exact(size)
        .map_err(|_| data(format!("cannot allocate {size} bytes for a frame")))?;
    let n = dctx
        .decompress(out, input)
        .map_err(|c| data(zstd_safe::get_error_name(c).to_string()))?;
    if n as u64 != f.size {
        return Err(data(format!(
            "a frame decodes to {n} bytes, its header declares {}",
            f.size
        )));
    }
    Ok(())
}
