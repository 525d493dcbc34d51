//! Compressed bundles (CCOB) against the real clang-offload-bundler 22: our
//! compressor's bytes equal LLVM's `-compress` output (sizes × levels, v3
//! and v2), LLVM reads what we write (including multithreaded frames), we
//! read what LLVM writes, our drop-in's `-verbose` reports and environment
//! warnings agree with LLVM's line for line (but the speed), and LLVM's
//! error messages are the ones our faults name.
//!
//! LLVM's own uncompressed bundle (the same inputs without `-compress`) is
//! what both sides compress.
//!
//! The trials are in `bytes.rs` (our bytes against LLVM's), `reads.rs`
//! (each side reading the other's, reports and messages) and `streams.rs`
//! (streamed unbundling).

use std::path::Path;
use std::process::{Command, Stdio};

use libtest_mimic::{Failed, Trial};
use offload_kit::bundle::ccob::{
    self as ccob, CompressOptions, Decompressed, HashCheck, Method, ReadOptions,
};

use crate::util::{Run, llvm, ours, ours_as, run, same, same_bytes, same_messages, tempdir};

test_files! {
    bytes,
    reads,
    streams,
}

const TOOL: &str = "clang-offload-bundler";
const TARGETS: &str = "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a";

/// Every variable the bundler reads, cleared so the caller's environment
/// cannot change a trial.
const ENV_VARS: [&str; 5] = [
    "OFFLOAD_BUNDLER_IGNORE_ENV_VAR",
    "OFFLOAD_BUNDLER_COMPRESS",
    "OFFLOAD_BUNDLER_VERBOSE",
    "OFFLOAD_BUNDLER_COMPRESSION_LEVEL",
    "COMPRESSED_BUNDLE_FORMAT_VERSION",
];

/// Runs LLVM's bundler in `cwd` with exactly the variables in `env` set.
fn bundler(args: &[String], env: &[(&str, &str)], cwd: &Path) -> Run {
    bundler_at(&llvm(TOOL), args, env, cwd)
}

/// Runs our drop-in bundler as [`bundler`] runs LLVM's.
fn our_bundler(args: &[String], env: &[(&str, &str)], cwd: &Path) -> Run {
    bundler_at(&ours_as(TOOL), args, env, cwd)
}

fn bundler_at(prog: &Path, args: &[String], env: &[(&str, &str)], cwd: &Path) -> Run {
    let mut cmd = Command::new(prog);
    cmd.args(args).current_dir(cwd).stdin(Stdio::null());
    for v in ENV_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()));
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Compressible pseudo-random bytes: words of a small random vocabulary,
/// with some long-distance repeats (what long-distance matching is for).
fn filler(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let vocab: Vec<Vec<u8>> = (0..200)
        .map(|_| {
            let n = 1 + next() as usize % 12;
            (0..n).map(|_| next() as u8).collect()
        })
        .collect();
    let mut out = Vec::with_capacity(len + 4096);
    while out.len() < len {
        if out.len() > 8192 && next() % 50 == 0 {
            let from = next() as usize % (out.len() - 4096);
            out.extend_from_within(from..from + 4096);
        } else {
            for _ in 0..64 {
                out.extend_from_slice(&vocab[next() as usize % vocab.len()]);
            }
        }
    }
    out.truncate(len);
    out
}

/// Writes the two inputs and returns LLVM's uncompressed bundle of them.
fn make_inputs(dir: &Path, size: usize, seed: u64) -> Result<Vec<u8>, Failed> {
    std::fs::write(dir.join("host.bc"), b"host code\n")?;
    std::fs::write(dir.join("dev.bc"), filler(seed, size))?;
    bundler(&bundle_args("u.bundle", &[]), &[], dir).ok()?;
    Ok(std::fs::read(dir.join("u.bundle"))?)
}

fn bundle_args(output: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-type=bc".into(),
        TARGETS.into(),
        "-input=host.bc".into(),
        "-input=dev.bc".into(),
        format!("-output={output}"),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The report lines without the one that depends on time.
fn timeless(report: &str) -> Vec<&str> {
    report.lines().filter(|l| !l.contains(" speed: ")).collect()
}

/// The `-verbose` lines on stderr (LLVM's or our drop-in's) that belong
/// to a CCOB report.
fn llvm_report(stderr: &str) -> Vec<&str> {
    const KEYS: [&str; 17] = [
        "Compressed bundle format version: ",
        "Total file size (including headers): ",
        "Total file size (from header): ",
        "Compression method used: ",
        "Compression level: ",
        "Binary size before compression: ",
        "Binary size after compression: ",
        "Decompression method: ",
        "Size before decompression: ",
        "Size after decompression: ",
        "Compression rate: ",
        "Compression ratio: ",
        "Truncated MD5 hash: ",
        "Stored hash: ",
        "Recalculated hash: ",
        "Hashes match: ",
        "Uncompressed bundle.",
    ];
    stderr
        .lines()
        .filter(|l| KEYS.iter().any(|k| l.starts_with(k)))
        .collect()
}

/// The trials.
pub fn tests() -> Vec<Trial> {
    file_trials()
}
