//! gzip, written with one header and one trailer in two ways: as one
//! deflate stream on the caller's thread ([`Stream`], byte for byte what
//! flate2's `GzEncoder` writes), or on several threads ([`compress`]) in
//! the way pigz writes it: the input
//! cut into blocks of [`BLOCK`] bytes, each deflated on its own (by the
//! `zlib-rs` crate) and ended with a sync flush, the raw deflate pieces
//! laid end to end between one gzip header and one trailer (the CRC-32 of
//! the whole input). The result is a single gzip member that any gunzip
//! reads. As in pigz, each block is primed with the [`DICT`] bytes of input
//! before it, so matches reach back across a cut as they would in one
//! stream; a block still needs nothing but its input and that window, so
//! the blocks deflate in parallel.
//!
//! The bytes depend only on the input and the level: the blocks and their
//! windows are fixed by the input, so one thread or sixteen write the same
//! file. No more than two blocks per thread are in flight, so memory stays
//! a few MiB whatever the size of the input.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use zlib_rs::{Deflate, DeflateFlush, Status};

/// Bytes of input deflated as one piece.
const BLOCK: usize = 1 << 20;

/// Bytes of input before a block that prime its deflate: deflate's whole
/// window (window bits 15).
const DICT: usize = 1 << 15;

/// The most threads used: each holds up to two blocks in and two out.
const MAX_THREADS: usize = 16;

/// One block to deflate: the input before it (up to [`DICT`] bytes), its
/// bytes, and whether it is the last.
struct Job {
    dict: Vec<u8>,
    data: Vec<u8>,
    last: bool,
}

/// A worker's two ends: its blocks to deflate, and what it made of them.
type Lane = (SyncSender<Job>, Receiver<io::Result<Vec<u8>>>);

/// The input cut into [`Job`]s, with the CRC-32 and length of what was read.
struct Blocks<'a> {
    input: &'a mut dyn Read,
    crc: crc32fast::Hasher,
    total: u64,
    /// The last [`DICT`] bytes of the block before the next.
    tail: Vec<u8>,
}

impl Blocks<'_> {
    /// Reads the next block.
    fn next(&mut self) -> io::Result<Job> {
        let data = read_block(self.input)?;
        self.crc.update(&data);
        self.total = self.total.saturating_add(data.len() as u64);
        let last = data.len() < BLOCK;
        let keep = data
            .get(data.len().saturating_sub(DICT)..)
            .unwrap_or_default();
        let dict = std::mem::replace(&mut self.tail, keep.to_vec());
        Ok(Job { dict, data, last })
    }
}

/// Compresses what `input` gives to `out` as one gzip member at `level`
/// (0 to 9), on `threads` threads (1: on the caller's alone). Returns the
/// bytes read.
pub(crate) fn compress(
    input: &mut dyn Read,
    out: &mut dyn Write,
    level: u32,
    threads: u32,
) -> io::Result<u64> {
    let zlevel = i32::try_from(level)
        .ok()
        .filter(|l| *l <= 9)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "gzip level over 9"))?;
    out.write_all(&header(level))?;
    let mut blocks = Blocks {
        input,
        crc: crc32fast::Hasher::new(),
        total: 0,
        tail: Vec::new(),
    };
    let workers = usize::try_from(threads).unwrap_or(1).clamp(1, MAX_THREADS);
    if workers == 1 {
        loop {
            let job = blocks.next()?;
            out.write_all(&deflate(&job, zlevel)?)?;
            if job.last {
                break;
            }
        }
    } else {
        std::thread::scope(|s| {
            let mut lanes = Vec::with_capacity(workers);
            for _ in 0..workers {
                let (to_worker, jobs) = sync_channel::<Job>(1);
                let (to_caller, done) = sync_channel::<io::Result<Vec<u8>>>(1);
                s.spawn(move || work(&jobs, &to_caller, zlevel));
                lanes.push((to_worker, done));
            }
            in_order(&lanes, out, || blocks.next())
        })?;
    }
    out.write_all(&trailer(blocks.crc, blocks.total))?;
    Ok(blocks.total)
}

/// Hands the blocks `next` makes to the workers of `lanes` in turn, and writes what they give
/// back to `out` in the order of the input.
fn in_order(
    lanes: &[Lane],
    out: &mut dyn Write,
    mut next: impl FnMut() -> io::Result<Job>,
) -> io::Result<()> {
    let gone = || io::Error::other("a gzip worker thread stopped");
    let mut pending: VecDeque<usize> = VecDeque::new();
    let mut i = 0usize;
    loop {
        let job = next()?;
        let last = job.last;
        // Two blocks a lane in flight at most: the oldest is written first.
        if pending.len() == 2 * lanes.len()
            && let Some(j) = pending.pop_front()
        {
            out.write_all(&lanes[j].1.recv().map_err(|_| gone())??)?;
        }
        let lane = i % lanes.len();
        lanes[lane].0.send(job).map_err(|_| gone())?;
        pending.push_back(lane);
        i = i.wrapping_add(1);
        if last {
            break;
        }
    }
    while let Some(j) = pending.pop_front() {
        out.write_all(&lanes[j].1.recv().map_err(|_| gone())??)?;
    }
    Ok(())
}

/// A worker: deflates the blocks of `jobs` into `done` until either side
/// hangs up.
fn work(jobs: &Receiver<Job>, done: &SyncSender<io::Result<Vec<u8>>>, level: i32) {
    while let Ok(job) = jobs.recv() {
        if done.send(deflate(&job, level)).is_err() {
            return;
        }
    }
}

/// Reads up to [`BLOCK`] bytes: fewer only at the end of `input`.
fn read_block(input: &mut dyn Read) -> io::Result<Vec<u8>> {
    let mut data = Vec::with_capacity(BLOCK);
    input.take(BLOCK as u64).read_to_end(&mut data)?;
    Ok(data)
}

/// The gzip header flate2's `GzBuilder` writes: no name, no time, the
/// extra flags of the level, the system unknown (255).
fn header(level: u32) -> [u8; 10] {
    let xfl = match level {
        9.. => 2,
        0 | 1 => 4,
        _ => 0,
    };
    [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 255]
}

/// gzip written as one deflate stream on the caller's thread, as
/// flate2's `GzEncoder` writes it: the same [`header`], the deflate of all
/// the input, and the trailer (the CRC-32 and length of the input).
pub(crate) struct Stream<W: Write> {
    inner: flate2::write::DeflateEncoder<W>,
    crc: crc32fast::Hasher,
    total: u64,
}

impl<W: Write> Stream<W> {
    /// A gzip member at `level` (0 to 9) written into `out`, its header
    /// at once.
    pub(crate) fn new(mut out: W, level: u32) -> io::Result<Stream<W>> {
        out.write_all(&header(level))?;
        Ok(Stream {
            inner: flate2::write::DeflateEncoder::new(out, flate2::Compression::new(level)),
            crc: crc32fast::Hasher::new(),
            total: 0,
        })
    }

    /// Ends the deflate stream and writes the trailer; the writer.
    pub(crate) fn finish(self) -> io::Result<W> {
        let mut out = self.inner.finish()?;
        out.write_all(&trailer(self.crc, self.total))?;
        Ok(out)
    }
}

impl<W: Write> Write for Stream<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let taken = buf.get(..n).unwrap_or(buf);
        self.crc.update(taken);
        self.total = self.total.wrapping_add(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The gzip trailer: the CRC-32 of the input and its length modulo 2^32
/// (ISIZE, as RFC 1952 has it), little-endian.
fn trailer(crc: crc32fast::Hasher, total: u64) -> [u8; 8] {
    let isize = u32::try_from(total & u64::from(u32::MAX)).unwrap_or_default();
    let mut t = [0u8; 8];
    t[..4].copy_from_slice(&crc.finalize().to_le_bytes());
    t[4..].copy_from_slice(&isize.to_le_bytes());
    t
}

/// The raw deflate of one block, primed with its window and ended with a
/// sync flush (the stream's final block when it is the last). `level` is
/// 0 to 9.
fn deflate(job: &Job, level: i32) -> io::Result<Vec<u8>> {
    let fail = |e: zlib_rs::DeflateError| io::Error::other(format!("deflate: {}", e.as_str()));
    let mut c = Deflate::new(level, false, 15);
    if !job.dict.is_empty() {
        c.set_dictionary(&job.dict).map_err(fail)?;
    }
    let flush = match job.last {
        true => DeflateFlush::Finish,
        false => DeflateFlush::SyncFlush,
    };
    // Stored blocks at worst, and the flush's few bytes.
    let mut out = vec![0u8; job.data.len() + job.data.len() / 8 + 1024];
    loop {
        let used = usize::try_from(c.total_in()).map_err(io::Error::other)?;
        let made = usize::try_from(c.total_out()).map_err(io::Error::other)?;
        let rest = job.data.get(used..).unwrap_or_default();
        let room = out.get_mut(made..).unwrap_or_default();
        let status = c.compress(rest, room, flush).map_err(fail)?;
        let progress = (c.total_in(), c.total_out()) != (used as u64, made as u64);
        let now = usize::try_from(c.total_out()).map_err(io::Error::other)?;
        let all_in = c.total_in() == job.data.len() as u64;
        match status {
            Status::StreamEnd => {
                out.truncate(now);
                return Ok(out);
            }
            // A sync flush is whole once it stops short of the room given.
            Status::Ok | Status::BufError if !job.last && all_in && now < out.len() => {
                out.truncate(now);
                return Ok(out);
            }
            _ if now < out.len() && !progress => {
                return Err(io::Error::other("deflate made no progress"));
            }
            _ => out.resize(out.len().saturating_mul(2).max(4096), 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that compress somewhat: a counter's text with noise.
    fn sample(n: usize) -> Vec<u8> {
        let mut x = 0x2545_f491_u32;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                match i % 7 {
                    0 => x.to_le_bytes()[0],
                    _ => b"offload"[i % 7],
                }
            })
            .collect()
    }

    fn gz(data: &[u8], threads: u32) -> Vec<u8> {
        let mut out = Vec::new();
        let n = compress(&mut &data[..], &mut out, 6, threads).unwrap();
        assert_eq!(n, data.len() as u64);
        out
    }

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut d = flate2::read::GzDecoder::new(bytes);
        let mut v = Vec::new();
        d.read_to_end(&mut v).unwrap();
        // One member, nothing after it.
        assert!(d.into_inner().is_empty());
        v
    }

    #[test]
    fn round_trips_at_every_cut() {
        for n in [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 77, 4 * BLOCK] {
            let data = sample(n);
            let one = gz(&data, 1);
            assert_eq!(gunzip(&one), data, "{n} bytes");
            for t in [2, 3, 8] {
                assert_eq!(gz(&data, t), one, "{n} bytes on {t} threads");
            }
        }
    }

    /// Bytes that do not compress at all.
    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x.to_le_bytes()[1]
            })
            .collect()
    }

    #[test]
    fn a_block_primed_with_the_one_before_gunzips() {
        // The second block repeats the end of the first: primed with it, it
        // deflates to a few matches; alone it would be stored whole.
        let mut data = noise(BLOCK, 7);
        let end = data[BLOCK - DICT + 300..].to_vec();
        for _ in 0..3 {
            data.extend_from_slice(&end);
        }
        data.extend_from_slice(&noise(1000, 9));
        let one = gz(&data, 1);
        assert_eq!(gunzip(&one), data);
        assert!(
            one.len() < BLOCK + 8 * 1024,
            "{} bytes: the window was not used",
            one.len()
        );
        for t in [2, 5, 16] {
            assert_eq!(gz(&data, t), one, "{t} threads");
        }
    }

    #[test]
    fn every_level_round_trips_the_same_on_any_threads() {
        let data = sample(2 * BLOCK + 4097);
        for level in [0, 1, 4, 9] {
            let mut one = Vec::new();
            compress(&mut &data[..], &mut one, level, 1).unwrap();
            assert_eq!(gunzip(&one), data, "level {level}");
            let mut three = Vec::new();
            compress(&mut &data[..], &mut three, level, 3).unwrap();
            assert_eq!(three, one, "level {level}");
        }
        let e = compress(&mut &data[..], &mut Vec::new(), 10, 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn trailer_holds_crc_and_size() {
        let data = sample(2 * BLOCK + 5);
        let out = gz(&data, 2);
        let end = &out[out.len() - 8..];
        assert_eq!(end[..4], crc32fast::hash(&data).to_le_bytes());
        let n = u32::try_from(data.len()).unwrap();
        assert_eq!(end[4..], n.to_le_bytes());
        assert_eq!(out[..10], header(6));
    }

    #[test]
    fn a_stream_is_what_flate2_writes() {
        let data = sample(3 * BLOCK / 2 + 11);
        for level in [0, 1, 6, 9] {
            for n in [0, 1, 5000, data.len()] {
                let mut ours = Stream::new(Vec::new(), level).unwrap();
                let mut theirs =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
                for piece in data[..n].chunks(70_000) {
                    ours.write_all(piece).unwrap();
                    theirs.write_all(piece).unwrap();
                }
                let ours = ours.finish().unwrap();
                assert_eq!(ours, theirs.finish().unwrap(), "level {level}, {n} bytes");
                assert_eq!(gunzip(&ours), &data[..n]);
            }
        }
    }

    #[test]
    fn read_errors_come_back() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("broken"))
            }
        }
        for t in [1, 2] {
            let e = compress(&mut Broken, &mut Vec::new(), 6, t).unwrap_err();
            assert_eq!(e.to_string(), "broken");
        }
    }
}
