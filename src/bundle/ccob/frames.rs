//! zstd on worker threads: the input is cut into frames compressed
//! independently, one per worker at a time, and written in order.
//!
//! A CCOB's payload may be several zstd frames back to back: LLVM 22
//! decompresses it with `ZSTD_decompressDCtx`, which decodes every frame
//! in turn into the one output buffer, and so do we. zstd's own workers
//! (`ZSTD_c_nbWorkers`) make a single frame instead, but they run
//! long-distance matching serially, so two of them gain only about a third
//! over one; independent frames keep every worker busy with the same level
//! and long-distance matching as LLVM's single call, at the price of matches
//! that would reach back across a frame boundary (about 3 % larger output
//! with 32 MiB frames on device code).
//!
//! A frame that lies within one piece of the input (typically a mapped
//! file) is compressed in one call straight from it; a frame that spans
//! pieces is streamed in, which makes zstd copy it into a window buffer of
//! the frame's size. Each worker keeps one context, and the compressed
//! frames wait for their turn in buffers that are reused, at most
//! `2 × threads` of them at a time, so memory does not grow with the input;
//! the caller hears of each part of the input once its frame is compressed,
//! so that it can give back the pages of a mapped file.

use std::io::Write;

use zstd::zstd_safe::{self, InBuffer, OutBuffer, zstd_sys::ZSTD_EndDirective};

use super::Fault;
use super::options::{CompressOptions, zstd_context, zstd_error};
use super::pool::{Missing, Pool};
use super::raw::Method;
use crate::error::Result;
use crate::num::{len64, usize_from};

/// The largest frame. zstd's long-distance window at level 3 is 128 MiB,
/// but a frame's window is only the frame: bigger frames find more
/// matches, smaller ones are faster (zstd's tables stay smaller). On 1 GiB
/// of device code on two workers, against LLVM's single frame: 32 MiB
/// frames 3.3 % larger output and 3.5 s; 64 MiB 2.5 % and 3.7 s; 128 MiB
/// 1.6 % and 3.9 s (LLVM: 9.5 s).
const FRAME_SIZE: u64 = 32 << 20;

/// Inputs up to this size are one frame: splitting them gains nothing.
const MIN_SPLIT: u64 = 1 << 20;

/// The frames for `pieces` on `threads` workers, each a list of
/// consecutive non-empty slices of the pieces (an empty input is one empty
/// frame). A piece of at least `group` bytes (about a twice-the-workers'th
/// of the input, between [`MIN_SPLIT`] and [`FRAME_SIZE`]) is cut into
/// equal frames of at most [`FRAME_SIZE`], their number a multiple of
/// `threads` so that the workers finish together; shorter pieces are
/// grouped, up to `group` bytes, into frames of their own. Most frames are
/// then a single slice of one mapped file, which zstd compresses in place.
fn plan<'a>(pieces: &[&'a [u8]], threads: u32) -> Vec<Vec<&'a [u8]>> {
    let threads = u64::from(threads.max(1));
    let total: u64 = pieces.iter().map(|p| len64(p)).sum();
    let group_size = total.div_ceil(2 * threads).clamp(MIN_SPLIT, FRAME_SIZE);
    let mut frames = Vec::new();
    let mut group: Vec<&[u8]> = Vec::new();
    if total <= MIN_SPLIT {
        frames.push(pieces.iter().copied().filter(|p| !p.is_empty()).collect());
        return frames;
    }
    let mut grouped = 0u64;
    for &piece in pieces.iter().filter(|p| !p.is_empty()) {
        let len = len64(piece);
        if len < group_size {
            group.push(piece);
            grouped += len;
            if grouped >= group_size {
                frames.push(std::mem::take(&mut group));
                grouped = 0;
            }
            continue;
        }
        if !group.is_empty() {
            frames.push(std::mem::take(&mut group));
            grouped = 0;
        }
        let count = len
            .div_ceil(FRAME_SIZE)
            .div_ceil(threads)
            .saturating_mul(threads)
            .min(len / (MIN_SPLIT / 2))
            .max(1);
        let size = usize_from(len.div_ceil(count));
        frames.extend(piece.chunks(size).map(|c| vec![c]));
    }
    if !group.is_empty() || frames.is_empty() {
        frames.push(group);
    }
    frames
}

fn worker_failed() -> crate::error::Error {
    Fault::Compress {
        method: Method::ZSTD,
        detail: "a compression thread failed".into(),
    }
    .at(0)
}

/// Compresses `pieces` (in order) as the frames of [`plan`] on
/// `opts.threads` workers and writes them to `out` in order; `release`
/// gets each part of a frame once the frame is compressed.
pub(super) fn compress<W: Write>(
    pieces: &[&[u8]],
    opts: &CompressOptions,
    out: &mut W,
    release: &(dyn Fn(&[u8]) + Sync),
) -> Result<()> {
    let frames = plan(pieces, opts.threads);
    let count = len64(&frames);
    let workers = u32::try_from(count)
        .unwrap_or(u32::MAX)
        .min(opts.threads.max(1));
    let pool = Pool::new(count, workers, 2 * u64::from(workers));
    std::thread::scope(|scope| {
        for n in 0..workers {
            let (pool, frames) = (&pool, &frames);
            let spawned = std::thread::Builder::new()
                .name(format!("ccob-zstd-{n}"))
                .spawn_scoped(scope, move || work(pool, frames, opts, release));
            if spawned.is_err() {
                pool.not_started();
            }
        }
        let _writing = pool.writing();
        write_in_order(&pool, count, out)
    })
}

/// The writer's side: frames in order as they come, buffers back to the
/// workers.
fn write_in_order<W: Write>(
    pool: &Pool<crate::error::Error>,
    count: u64,
    out: &mut W,
) -> Result<()> {
    for i in 0..count {
        let buf = pool.frame(i).map_err(|m| match m {
            Missing::Failed(e) => e,
            Missing::Stopped => worker_failed(),
        })?;
        out.write_all(&buf)?;
        pool.release(buf);
    }
    Ok(())
}

/// One worker: takes the next frame when it may run ahead of the writer,
/// compresses it into a spare buffer, releases its parts and hands it
/// over.
fn work(
    pool: &Pool<crate::error::Error>,
    frames: &[Vec<&[u8]>],
    opts: &CompressOptions,
    release: &(dyn Fn(&[u8]) + Sync),
) {
    let _stopping = pool.stopping(worker_failed);
    let mut cctx = match zstd_context(opts) {
        Ok(c) => c,
        Err(e) => return pool.fail(e),
    };
    while let Some((i, mut buf)) = pool.take() {
        let parts = &frames[usize_from(i)];
        let res = compress_frame(&mut cctx, parts, &mut buf);
        for part in parts {
            release(part);
        }
        pool.finish(i, res.map(|()| buf));
    }
}

/// One frame of `parts` into `buf` (empty, with whatever capacity it has).
fn compress_frame(
    cctx: &mut zstd_safe::CCtx<'static>,
    parts: &[&[u8]],
    buf: &mut Vec<u8>,
) -> Result<()> {
    let size: u64 = parts.iter().map(|p| len64(p)).sum();
    let bound = zstd_safe::compress_bound(usize_from(size));
    buf.try_reserve_exact(bound.saturating_sub(buf.len()))
        .map_err(|_| {
            Fault::OutOfMemory {
                bytes: bound as u64,
            }
            .at(0)
        })?;
    if let [one] = parts {
        cctx.compress2(buf, one).map_err(zstd_error)?;
        return Ok(());
    }
    cctx.reset(zstd_safe::ResetDirective::SessionOnly)
        .map_err(zstd_error)?;
    cctx.set_pledged_src_size(Some(size)).map_err(zstd_error)?;
    let empty: &[u8] = &[];
    let feed = parts.iter().map(|p| (*p, false)).chain([(empty, true)]);
    for (part, last) in feed {
        let mode = if last {
            ZSTD_EndDirective::ZSTD_e_end
        } else {
            ZSTD_EndDirective::ZSTD_e_continue
        };
        let mut input = InBuffer::around(part);
        loop {
            // The buffer holds the bound, so zstd never runs out of room.
            let mut output = OutBuffer::around_pos(buf, buf.len());
            let remaining = cctx
                .compress_stream2(&mut output, &mut input, mode)
                .map_err(zstd_error)?;
            if (last && remaining == 0) || (!last && input.pos() == part.len()) {
                break;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// The frames' sizes, after checking that they are non-empty slices
    /// (bar the one frame of an empty input) and add up to the input.
    fn sizes(pieces: &[&[u8]], threads: u32) -> Vec<usize> {
        let frames = plan(pieces, threads);
        // The slices tile the pieces in order (compared by address: the
        // pieces are large).
        let mut flat = frames.iter().flatten();
        for piece in pieces.iter().filter(|p| !p.is_empty()) {
            let (mut at, end) = (
                piece.as_ptr() as usize,
                piece.as_ptr() as usize + piece.len(),
            );
            while at < end {
                let part = flat.next().expect("a slice for every byte");
                assert!(!part.is_empty());
                assert_eq!(part.as_ptr() as usize, at);
                at += part.len();
            }
            assert_eq!(at, end);
        }
        assert!(flat.next().is_none());
        assert!(frames.len() == 1 || frames.iter().all(|f| !f.is_empty()));
        frames
            .iter()
            .map(|f| f.iter().map(|p| p.len()).sum())
            .collect()
    }

    #[test]
    fn plans() {
        let big = vec![0u8; 256 * MIB]; // calloc: never touched
        let (head, pad) = (vec![2u8; 300], vec![0u8; 4000]);
        assert_eq!(sizes(&[], 2), [0]);
        assert_eq!(sizes(&[&head, &[], &pad], 2), [4300]);
        // A HIP-style bundle: every image is cut into eight 32 MiB frames,
        // the small pieces between them are frames of their own.
        let mut pieces: Vec<&[u8]> = vec![&head, &pad];
        for _ in 0..4 {
            pieces.extend([&big[..], &pad[..]]);
        }
        let s = sizes(&pieces, 2);
        assert_eq!(s.len(), 4 * 9 + 1);
        assert_eq!(s.iter().filter(|&&n| n == 32 * MIB).count(), 32);
        // 100 MiB on two workers: four equal frames, not three of 32 MiB
        // and one of 4 MiB.
        assert_eq!(sizes(&[&big[..100 * MIB]], 2), [25 * MIB; 4]);
        // On three: six.
        let sixth = (100 * MIB).div_ceil(6);
        let s = sizes(&[&big[..100 * MIB]], 3);
        assert_eq!(s[..5], [sixth; 5]);
        assert_eq!(s[5], 100 * MIB - 5 * sixth);
        // One worker: frames only to stay within FRAME_SIZE.
        assert_eq!(sizes(&[&big[..100 * MIB]], 1), [25 * MIB; 4]);
        assert_eq!(sizes(&[&big[..20 * MIB]], 1), [20 * MIB]);
        assert_eq!(sizes(&[&big[..MIB]], 1), [MIB]);
        // Small inputs stay whole; a few MiB are split for the workers.
        assert_eq!(sizes(&[&big[..MIB]], 2), [MIB]);
        assert_eq!(sizes(&[&big[..6 * MIB]], 2), [3 * MIB; 2]);
        assert_eq!(sizes(&[&big[..2 * MIB]], 8), [MIB / 2; 4]);
        // Many small pieces are grouped into frames of about a quarter of
        // the input on two workers.
        let small: Vec<&[u8]> = (0..100).map(|_| &big[..MIB / 2]).collect();
        let s = sizes(&small, 2);
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|&n| n <= 13 * MIB));
    }
}
