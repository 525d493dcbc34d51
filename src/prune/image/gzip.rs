//! gzip written on several threads, in the way pigz writes it: the input
//! cut into blocks of [`BLOCK`] bytes, each deflated on its own and ended
//! with a sync flush, the raw deflate pieces laid end to end between one
//! gzip header and one trailer (the CRC-32 of the whole input). The
//! result is a single gzip member that any gunzip reads. Unlike pigz, a
//! block is not primed with the 32 KiB before it (flate2's miniz_oxide
//! backend cannot set a dictionary): matches do not reach across a cut,
//! which costs a few hundred bytes a MiB.
//!
//! The bytes depend only on the input and the level: the blocks are fixed
//! by the input, so one thread or sixteen write the same file. No more than two blocks per thread are in flight, so
//! memory stays a few MiB whatever the size of the input.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use flate2::{Compress, Compression, FlushCompress, Status};

/// Bytes of input deflated as one piece.
pub(super) const BLOCK: usize = 1 << 20;

/// The most threads used: each holds up to two blocks in and two out.
const MAX_THREADS: usize = 16;

/// One block to deflate: its bytes, and whether it is the last.
struct Job {
    data: Vec<u8>,
    last: bool,
}

/// A worker's two ends: its blocks to deflate, and what it made of them.
type Lane = (SyncSender<Job>, Receiver<io::Result<Vec<u8>>>);

/// Compresses what `input` gives to `out` as one gzip member at `level`,
/// on `threads` threads (1: on the caller's alone). Returns the bytes
/// read.
pub(super) fn compress(
    input: &mut dyn Read,
    out: &mut dyn Write,
    level: u32,
    threads: u32,
) -> io::Result<u64> {
    out.write_all(&header(level))?;
    let mut crc = crc32fast::Hasher::new();
    let mut total = 0u64;
    let mut next = |crc: &mut crc32fast::Hasher, total: &mut u64| {
        let data = read_block(input)?;
        crc.update(&data);
        *total += data.len() as u64;
        let last = data.len() < BLOCK;
        io::Result::Ok(Job { data, last })
    };
    let workers = usize::try_from(threads).unwrap_or(1).clamp(1, MAX_THREADS);
    if workers == 1 {
        loop {
            let job = next(&mut crc, &mut total)?;
            out.write_all(&deflate(&job, level)?)?;
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
                s.spawn(move || work(&jobs, &to_caller, level));
                lanes.push((to_worker, done));
            }
            in_order(&lanes, out, || next(&mut crc, &mut total))
        })?;
    }
    out.write_all(&crc.finalize().to_le_bytes())?;
    // ISIZE: the input's length modulo 2^32, as RFC 1952 has it.
    let isize = u32::try_from(total & u64::from(u32::MAX)).unwrap_or_default();
    out.write_all(&isize.to_le_bytes())?;
    Ok(total)
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
fn work(jobs: &Receiver<Job>, done: &SyncSender<io::Result<Vec<u8>>>, level: u32) {
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

/// The raw deflate of one block, ended with a sync flush (the stream's
/// final block when it is the last).
fn deflate(job: &Job, level: u32) -> io::Result<Vec<u8>> {
    let mut c = Compress::new(Compression::new(level), false);
    let flush = match job.last {
        true => FlushCompress::Finish,
        false => FlushCompress::Sync,
    };
    let mut out = Vec::with_capacity(job.data.len() + job.data.len() / 8 + 1024);
    loop {
        let used = usize::try_from(c.total_in()).map_err(io::Error::other)?;
        let rest = job.data.get(used..).unwrap_or_default();
        let before = (c.total_in(), c.total_out());
        let status = c
            .compress_vec(rest, &mut out, flush)
            .map_err(io::Error::other)?;
        let all_in = c.total_in() == job.data.len() as u64;
        let room = out.len() < out.capacity();
        match status {
            Status::StreamEnd => return Ok(out),
            // A sync flush is whole once it stops short of the room given.
            Status::Ok | Status::BufError if !job.last && all_in && room => return Ok(out),
            _ if room && before == (c.total_in(), c.total_out()) => {
                return Err(io::Error::other("deflate made no progress"));
            }
            _ => out.reserve(out.capacity().max(4096)),
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
