//! `offload-kit-lz4-bench [--rounds N] [--only ours|liblz4] FILE…`: the LZ4 block decoder of
//! offload-kit (src/fatbin/lz4/, compiled here as a module) against C
//! liblz4's `LZ4_decompress_safe`, on the LZ4-compressed entries of the CUDA
//! fatbins in each FILE (an executable or a shared library).
//!
//! Every block is first decoded by both and the outputs compared (a
//! difference is exit 1). Then each round decodes every block once with
//! each decoder, the order alternating from round to round, and times each
//! pass by the CPU time of this thread (`CLOCK_THREAD_CPUTIME_ID`: time
//! another process takes from the CPU is not counted).
//! Both decode into a buffer of exactly the declared size, reused.
//!
//! Output: a table per file, and one line per file for scripts/bench.sh:
//! `ROW<TAB>file<TAB>blocks<TAB>bytes in<TAB>bytes out<TAB>liblz4 median s
//! <TAB>ours median s<TAB>liblz4 min<TAB>liblz4 max<TAB>ours min<TAB>ours
//! max<TAB>median of the rounds' ratios<TAB>ours streamed, median s`.
//!
//! "Streamed" is ours as `offload-kit extract` runs it: a `BlockDecoder`
//! read 256 KiB at a time, which decodes a block that fits whole and a
//! longer one in steps through its window; it is timed in the same rounds.

use std::process::ExitCode;
use std::time::Duration;

#[path = "../../../src/fatbin/lz4/mod.rs"]
#[allow(
    dead_code,
    unused_imports,
    reason = "the library's module, of which the bench calls one function"
)]
mod lz4_ours;

// The library's byte readers, which the decoder reads its numbers through,
// and the checked conversions they use.
#[path = "../../../src/bytes.rs"]
#[allow(dead_code, reason = "the decoder calls `le` alone")]
mod bytes;
#[path = "../../../src/num.rs"]
#[allow(dead_code, reason = "what bytes.rs calls")]
mod num;

/// The magic that starts a fatbin container, little-endian 0xBA55ED50.
const MAGIC: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];
/// An entry's flag for an LZ4 block payload (other kinds than PTX and
/// cubin, such as 8, set it on data that is not a plain block: left out).
const FLAG_LZ4: u64 = 0x2000;

/// One LZ4 entry: its block and declared size.
struct Block<'a> {
    data: &'a [u8],
    size: usize,
}

fn u16_at(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        d.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}
fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        d.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}
fn u64_at(d: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        d.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// The LZ4 entries of PTX (kind 1) and cubins (kind 2) of the fatbin
/// container at `at`, if it is one (see
/// src/fatbin.rs for the layout); where the search goes on.
fn container<'a>(file: &'a [u8], at: usize, out: &mut Vec<Block<'a>>) -> Option<usize> {
    if u16_at(file, at + 4)? != 1 || u16_at(file, at + 6)? != 16 {
        return None;
    }
    let body = usize::try_from(u64_at(file, at + 8)?).ok()?;
    let end = (at + 16).checked_add(body)?;
    let mut e = at + 16;
    let mut found = Vec::new();
    while e < end {
        let kind = u16_at(file, e)?;
        let header = usize::try_from(u32_at(file, e + 4)?).ok()?;
        let payload = usize::try_from(u64_at(file, e + 8)?).ok()?;
        let compressed = usize::try_from(u32_at(file, e + 16)?).ok()?;
        let flags = u64_at(file, e + 40)?;
        let size = usize::try_from(u64_at(file, e + 56)?).ok()?;
        let start = e.checked_add(header)?;
        if (kind == 1 || kind == 2) && flags & FLAG_LZ4 != 0 && compressed <= payload {
            found.push(Block {
                data: file.get(start..start + compressed)?,
                size,
            });
        }
        e = start.checked_add(payload)?;
    }
    out.extend(found);
    Some(end)
}

fn blocks(file: &[u8]) -> Vec<Block<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = file[at..].windows(4).position(|w| w == MAGIC) {
        at += i;
        at = container(file, at, &mut out).unwrap_or(at + 4);
    }
    out
}

/// This thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`).
fn cpu() -> Duration {
    cpu_time::ThreadTime::now().as_duration()
}

fn ours(b: &Block, out: &mut [u8]) -> bool {
    lz4_ours::decode_whole(b.data, &mut out[..b.size])
}

fn liblz4(b: &Block, out: &mut [u8]) -> bool {
    let size = i32::try_from(b.size).expect("an entry under 2 GiB");
    matches!(lz4::block::decompress_to_buffer(b.data, Some(size), &mut out[..b.size]), Ok(n) if n == b.size)
}

/// Ours as `offload-kit extract` decodes (`BlockDecoder` read 256 KiB at a
/// time): a block that fits is decoded whole into the reader's buffer, a
/// longer one in steps through the decoder's window.
fn streamed(b: &Block, out: &mut [u8]) -> bool {
    use std::io::Read;
    let buf = &mut out[..b.size.clamp(1, 256 << 10)];
    let mut d = lz4_ours::BlockDecoder::new(b.data, b.size as u64);
    let mut total = 0;
    loop {
        match d.read(buf) {
            Ok(0) => return total == b.size,
            Ok(n) => total += n,
            Err(_) => return false,
        }
    }
}

/// One pass of `decode` over every block; its CPU seconds.
fn pass(blocks: &[Block], out: &mut [u8], decode: fn(&Block, &mut [u8]) -> bool) -> f64 {
    let t = cpu();
    for b in blocks {
        let ok = decode(b, out);
        std::hint::black_box((ok, &out[..b.size.min(1)]));
    }
    (cpu() - t).as_secs_f64()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn bench(path: &str, rounds: usize) -> Result<(), String> {
    let file = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let blocks = blocks(&file);
    if blocks.is_empty() {
        return Err(format!("{path}: no LZ4 fatbin entries"));
    }
    let max = blocks.iter().map(|b| b.size).max().unwrap_or(0);
    let (mut a, mut b, mut c) = (vec![0u8; max], vec![0u8; max], vec![0u8; max]);
    for (i, blk) in blocks.iter().enumerate() {
        let (x, y) = (ours(blk, &mut a), liblz4(blk, &mut b));
        if !x || !y || a[..blk.size] != b[..blk.size] || !streamed(blk, &mut c) {
            return Err(format!(
                "{path}: block {i} ({} bytes): ours {x}, liblz4 {y}, or different bytes",
                blk.size
            ));
        }
    }
    let bytes_in: usize = blocks.iter().map(|b| b.data.len()).sum();
    let bytes_out: usize = blocks.iter().map(|b| b.size).sum();
    let (mut tc, mut to, mut ts, mut ratio) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // `--only` (for a profiler): one decoder's passes alone.
    match ONLY.get().map(String::as_str) {
        Some("ours") => {
            let t: Vec<f64> = (0..rounds).map(|_| pass(&blocks, &mut a, ours)).collect();
            println!("{path}: ours alone, median {:.4} s", median(&t));
            return Ok(());
        }
        Some(_) => {
            let t: Vec<f64> = (0..rounds).map(|_| pass(&blocks, &mut b, liblz4)).collect();
            println!("{path}: liblz4 alone, median {:.4} s", median(&t));
            return Ok(());
        }
        None => {}
    }
    for r in 0..rounds {
        let (cl, o, st) = if r % 2 == 0 {
            let o = pass(&blocks, &mut a, ours);
            let cl = pass(&blocks, &mut b, liblz4);
            (cl, o, pass(&blocks, &mut c, streamed))
        } else {
            let st = pass(&blocks, &mut c, streamed);
            let cl = pass(&blocks, &mut b, liblz4);
            (cl, pass(&blocks, &mut a, ours), st)
        };
        tc.push(cl);
        to.push(o);
        ts.push(st);
        ratio.push(cl / o);
    }
    let (mc, mo) = (median(&tc), median(&to));
    let mb = |t: f64| bytes_out as f64 / 1e6 / t;
    let minmax = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        )
    };
    let ((cmin, cmax), (omin, omax)) = (minmax(&tc), minmax(&to));
    let (ms, (smin, smax)) = (median(&ts), minmax(&ts));
    println!(
        "{path}: {} LZ4 blocks, {bytes_in} bytes -> {bytes_out}, {rounds} rounds (CPU s per pass)",
        blocks.len()
    );
    println!(
        "  liblz4 LZ4_decompress_safe  median {mc:.4}  min {cmin:.4}  max {cmax:.4}  {:.0} MB/s",
        mb(mc)
    );
    println!(
        "  offload-kit decode_whole    median {mo:.4}  min {omin:.4}  max {omax:.4}  {:.0} MB/s",
        mb(mo)
    );
    println!(
        "  offload-kit, streamed        median {ms:.4}  min {smin:.4}  max {smax:.4}  {:.0} MB/s",
        mb(ms)
    );
    println!(
        "  ours is {:.3}x liblz4's speed (medians); median of the rounds' ratios {:.3}x",
        mc / mo,
        median(&ratio)
    );
    println!(
        "ROW\t{path}\t{}\t{bytes_in}\t{bytes_out}\t{mc:.5}\t{mo:.5}\t{cmin:.5}\t{cmax:.5}\t{omin:.5}\t{omax:.5}\t{:.4}\t{ms:.5}",
        blocks.len(),
        median(&ratio)
    );
    Ok(())
}

/// `--only ours` or `--only liblz4`.
static ONLY: std::sync::OnceLock<String> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 11;
    if args.first().map(String::as_str) == Some("--rounds") && args.len() >= 2 {
        let Ok(n) = args[1].parse() else {
            eprintln!("--rounds takes a number");
            return ExitCode::FAILURE;
        };
        rounds = n;
        args.drain(..2);
    }
    if args.first().map(String::as_str) == Some("--only") && args.len() >= 2 {
        let _ = ONLY.set(args[1].clone());
        args.drain(..2);
    }
    if args.is_empty() || rounds == 0 {
        eprintln!("usage: offload-kit-lz4-bench [--rounds N] [--only ours|liblz4] FILE...");
        return ExitCode::FAILURE;
    }
    for path in &args {
        if let Err(e) = bench(path, rounds) {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
