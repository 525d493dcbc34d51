//! Compressed bundles (CCOB) against the real clang-offload-bundler 22: our
//! compressor's bytes equal LLVM's `-compress` output (sizes × levels, v3
//! and v2), LLVM reads what we write (including multithreaded frames), we
//! read what LLVM writes, our drop-in's `-verbose` reports and environment
//! warnings agree with LLVM's line for line (but the speed), and LLVM's
//! error messages are the ones our faults name.
//!
//! LLVM's own uncompressed bundle (the same inputs without `-compress`) is
//! what both sides compress.

use std::path::Path;
use std::process::{Command, Stdio};

use libtest_mimic::{Failed, Trial};
use offload_kit::bundle::ccob::{
    self as ccob, CompressOptions, Decompressed, HashCheck, Method, ReadOptions,
};

use crate::util::{Run, llvm, ours, ours_as, run, same, same_bytes, same_messages, tempdir, trial};

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

/// One byte-identity case: LLVM compresses, we compress LLVM's
/// uncompressed bundle, the bytes must match; our drop-in run as LLVM was
/// writes the same bytes and the same report; then each side reads the
/// other's file.
fn identity(size: usize, level: Option<i32>, version: u16) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let u = make_inputs(d, size, size as u64 + 7)?;
    let level_flag = level.map(|l| format!("-compression-level={l}"));
    let mut extra = vec!["-compress", "-verbose"];
    extra.extend(level_flag.as_deref());
    let version_env = version.to_string();
    let env: Vec<(&str, &str)> = if version == 3 {
        vec![]
    } else {
        vec![("COMPRESSED_BUNDLE_FORMAT_VERSION", &version_env)]
    };
    let r = bundler(&bundle_args("llvm.ccob", &extra), &env, d).ok()?;
    let theirs = std::fs::read(d.join("llvm.ccob"))?;

    let opts = CompressOptions {
        version,
        level: level.unwrap_or(ccob::ZSTD_DEFAULT_LEVEL),
        ..CompressOptions::default()
    };
    let (ours, report) = ccob::compress_to_vec(&u, &opts)?;
    same_bytes("compressed bundles", &ours, &theirs)?;
    same(
        "compressed size",
        report.header.total_size,
        Some(theirs.len() as u64),
    )?;
    let mine = our_bundler(&bundle_args("ours.ccob", &extra), &env, d).ok()?;
    same_bytes(
        "our drop-in's compressed bundle",
        &std::fs::read(d.join("ours.ccob"))?,
        &theirs,
    )?;
    same(
        "compression reports",
        timeless(&llvm_report(&mine.stderr).join("\n")),
        timeless(&llvm_report(&r.stderr).join("\n")),
    )?;

    // We read LLVM's file back to its uncompressed bundle, and LLVM's
    // `-list -verbose` report on it matches our drop-in's.
    let back = ccob::decompress(&theirs, &ReadOptions::default())?;
    same_bytes("decompressed bundle", &back.data, &u)?;
    let list_args: [String; 4] = [
        "-list".into(),
        "-type=bc".into(),
        "-input=llvm.ccob".into(),
        "-verbose".into(),
    ];
    let listed = bundler(&list_args, &[], d).ok()?;
    let mine = our_bundler(&list_args, &[], d).ok()?;
    same(
        "decompression reports",
        timeless(&llvm_report(&mine.stderr).join("\n")),
        timeless(&llvm_report(&listed.stderr).join("\n")),
    )?;
    Ok(())
}

/// One case of the bundling matrix: LLVM's `-compress` against our
/// drop-in and `offload-kit bundle --compress`, from the files.
struct Case {
    /// File type: `bc` (binary bundle) or `ll` (text).
    file_type: &'static str,
    /// Bytes of each entry's file, the host's first.
    sizes: &'static [usize],
    /// `-compression-level`, when given.
    level: Option<i32>,
    /// CCOB version (2 through `COMPRESSED_BUNDLE_FORMAT_VERSION`).
    version: u16,
    /// `-bundle-align`, when given.
    align: Option<u64>,
}

/// Entry IDs for up to five entries, the host's first.
const MATRIX_TARGETS: [&str; 5] = [
    "host-x86_64-unknown-linux-gnu",
    "hip-amdgcn-amd-amdhsa--gfx90a",
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hipv4-amdgcn-amd-amdhsa--gfx1100",
    "openmp-amdgcn-amd-amdhsa--gfx1030",
];

/// Every byte of LLVM's CCOB, for the case's entries: our drop-in's and
/// our native command's, to a file and to standard output (written
/// through a spool file), must be the same. Entry `i` holds filler of
/// seed `i % 3`, so that later entries repeat earlier ones (from afar in
/// the large cases, past zstd's window).
fn matrix(case: &Case) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let targets = &MATRIX_TARGETS[..case.sizes.len()];
    for (i, &size) in case.sizes.iter().enumerate() {
        std::fs::write(d.join(format!("e{i}")), filler(i as u64 % 3, size))?;
    }
    let mut flags = vec![
        format!("-type={}", case.file_type),
        format!("-targets={}", targets.join(",")),
        "-compress".into(),
    ];
    flags.extend((0..targets.len()).map(|i| format!("-input=e{i}")));
    flags.extend(case.level.map(|l| format!("-compression-level={l}")));
    flags.extend(case.align.map(|a| format!("-bundle-align={a}")));
    let version = case.version.to_string();
    let env: Vec<(&str, &str)> = if case.version == 3 {
        vec![]
    } else {
        vec![("COMPRESSED_BUNDLE_FORMAT_VERSION", &version)]
    };
    let with_output = |out: &str| {
        let mut a = flags.clone();
        a.push(format!("-output={out}"));
        a
    };
    bundler(&with_output("llvm.ccob"), &env, d).ok()?;
    let theirs = std::fs::read(d.join("llvm.ccob"))?;
    if ccob::Header::parse(&theirs)?.version != case.version {
        return Err("LLVM wrote another version than the case's".into());
    }
    our_bundler(&with_output("ours.ccob"), &env, d).ok()?;
    same_bytes(
        "our drop-in's CCOB",
        &std::fs::read(d.join("ours.ccob"))?,
        &theirs,
    )?;
    let native = |out: &str| {
        let mut a: Vec<String> = vec![
            "bundle".into(),
            "--type".into(),
            case.file_type.into(),
            "-o".into(),
            out.into(),
            "--compress".into(),
            "--format-version".into(),
            version.clone(),
        ];
        if let Some(l) = case.level {
            a.extend(["--level".into(), l.to_string()]);
        }
        if let Some(al) = case.align {
            a.extend(["--align".into(), al.to_string()]);
        }
        a.extend(targets.iter().enumerate().map(|(i, t)| format!("{t}=e{i}")));
        a
    };
    run(&ours(), &native("native.ccob"), d).ok()?;
    same_bytes(
        "offload-kit bundle --compress",
        &std::fs::read(d.join("native.ccob"))?,
        &theirs,
    )?;
    let piped = run(&ours(), &native("-"), d).ok()?;
    same_bytes("offload-kit bundle --compress -o -", &piped.stdout, &theirs)?;
    Ok(())
}

/// LLVM unbundles `file` in `dir`; the outputs must be the inputs.
fn llvm_unbundles(dir: &Path, file: &str) -> Result<(), Failed> {
    let list = bundler(
        &["-list".into(), "-type=bc".into(), format!("-input={file}")],
        &[],
        dir,
    )
    .ok()?;
    same(
        "listed IDs",
        String::from_utf8_lossy(&list.stdout).into_owned(),
        "hip-amdgcn-amd-amdhsa--gfx90a\nhost-x86_64-unknown-linux-gnu-\n".into(),
    )?;
    let args: Vec<String> = vec![
        "-unbundle".into(),
        "-type=bc".into(),
        TARGETS.into(),
        format!("-input={file}"),
        "-output=out-host.bc".into(),
        "-output=out-dev.bc".into(),
    ];
    bundler(&args, &[], dir).ok()?;
    for (out, input) in [("out-host.bc", "host.bc"), ("out-dev.bc", "dev.bc")] {
        same_bytes(
            &format!("{out} unbundled from {file}"),
            &std::fs::read(dir.join(out))?,
            &std::fs::read(dir.join(input))?,
        )?;
    }
    Ok(())
}

/// LLVM reads what we write: v3 and v2, zstd (one thread and two) and
/// zlib.
fn llvm_reads_ours() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let u = make_inputs(d, 6 << 20, 99)?;
    let single = ccob::compress_to_vec(&u, &CompressOptions::default())?.0;
    let cases = [
        ("v3", CompressOptions::default()),
        (
            "v2",
            CompressOptions {
                version: 2,
                ..CompressOptions::default()
            },
        ),
        (
            "threads",
            CompressOptions {
                threads: 2,
                ..CompressOptions::default()
            },
        ),
        (
            "zlib",
            CompressOptions {
                method: Method::ZLIB,
                level: ccob::ZLIB_DEFAULT_LEVEL,
                ..CompressOptions::default()
            },
        ),
    ];
    for (name, opts) in cases {
        let (c, _) = ccob::compress_to_vec(&u, &opts)?;
        if name == "threads" {
            // Independent frames, one per worker: LLVM must read them all.
            let first = zstd::zstd_safe::find_frame_compressed_size(&c[32..])
                .map_err(|e| format!("threads: no zstd frame ({e})"))?;
            if c == single || first + 32 >= c.len() {
                return Err("6 MiB on two threads gave a single frame".into());
            }
        }
        let file = format!("ours-{name}.ccob");
        std::fs::write(d.join(&file), &c)?;
        llvm_unbundles(d, &file).map_err(|e| format!("{name}: {}", e.message().unwrap_or("")))?;
    }
    Ok(())
}

/// Two CCOBs back to back (as in a linked `.hip_fatbin`): LLVM 22 fails,
/// we read both, and our fault for a single read names LLVM's message.
fn back_to_back() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let u = make_inputs(d, 50_000, 5)?;
    bundler(&bundle_args("a.ccob", &["-compress"]), &[], d).ok()?;
    let a = std::fs::read(d.join("a.ccob"))?;
    let mut two = a.clone();
    two.extend(&a);
    std::fs::write(d.join("two.ccob"), &two)?;
    let r = run(&llvm(TOOL), &["-list", "-type=bc", "-input=two.ccob"], d);
    let fault = ccob::decompress(&two, &ReadOptions::default())
        .err()
        .and_then(|e| ccob::llvm_message(&e))
        .ok_or("a single read of two CCOBs must fail")?;
    same(
        "LLVM's error",
        r.stderr.trim_end().to_string(),
        format!(
            "{}: error: Failed to decompress input: {fault}",
            llvm(TOOL).display()
        ),
    )?;
    let all = ccob::decompress_all(&two, &ReadOptions::default())?;
    same("CCOBs read", all.len(), 2)?;
    same("second offset", all[1].offset, a.len() as u64)?;
    for x in &all {
        same_bytes("each bundle", &x.data, &u)?;
    }
    Ok(())
}

/// Damaged files: LLVM's message is the one [`ccob::Fault::llvm_message`]
/// gives, wherever LLVM fails.
fn error_messages() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let u = make_inputs(d, 20_000, 3)?;
    let zstd = ccob::compress_to_vec(&u, &CompressOptions::default())?.0;
    let zlib = ccob::compress_to_vec(
        &u,
        &CompressOptions {
            method: Method::ZLIB,
            level: 6,
            ..CompressOptions::default()
        },
    )?
    .0;
    let with = |base: &[u8], at: usize, bytes: &[u8]| {
        let mut v = base.to_vec();
        v[at..at + bytes.len()].copy_from_slice(bytes);
        v
    };
    let n = u.len() as u64;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("header cut", zstd[..20].to_vec()),
        ("version 4", with(&zstd, 4, &[4, 0])),
        ("version 0", with(&zstd, 4, &[0, 0])),
        ("method 7", with(&zstd, 6, &[7, 0])),
        ("zstd size short", with(&zstd, 16, &(n - 1).to_le_bytes())),
        ("zlib size short", with(&zlib, 16, &(n - 1).to_le_bytes())),
        ("zlib size zero", with(&zlib, 16, &0u64.to_le_bytes())),
        (
            "zstd frame cut",
            with(
                &zstd[..zstd.len() - 3],
                8,
                &(zstd.len() as u64 - 3).to_le_bytes(),
            ),
        ),
        (
            "zlib stream cut",
            with(
                &zlib[..zlib.len() - 5],
                8,
                &(zlib.len() as u64 - 5).to_le_bytes(),
            ),
        ),
        (
            "zstd garbage",
            with(
                &[&zstd[..32], &[0u8; 40][..]].concat(),
                8,
                &72u64.to_le_bytes(),
            ),
        ),
    ];
    let lenient = ReadOptions {
        hash: HashCheck::Skip,
        ..ReadOptions::default()
    };
    for (name, data) in cases {
        let file = format!("{}.ccob", name.replace(' ', "-"));
        std::fs::write(d.join(&file), &data)?;
        let r = run(
            &llvm(TOOL),
            &["-list", "-type=bc", &format!("-input={file}")],
            d,
        );
        let ours = ccob::decompress(&data, &lenient)
            .err()
            .and_then(|e| ccob::llvm_message(&e))
            .ok_or_else(|| format!("{name}: we read it"))?;
        same(
            &format!("{name}: message"),
            r.stderr.trim_end().to_string(),
            format!(
                "{}: error: Failed to decompress input: {ours}",
                llvm(TOOL).display()
            ),
        )?;
        // Our drop-in: LLVM's line first, then a note naming the file.
        let mine = run(
            &ours_as(TOOL),
            &["-list", "-type=bc", &format!("-input={file}")],
            d,
        );
        let mask = |s: &str, p: &std::path::Path| s.replace(&p.display().to_string(), "TOOL");
        same_messages(
            &mask(&mine.stderr, &ours_as(TOOL)),
            &mask(&r.stderr, &llvm(TOOL)),
            Some(&file),
        )
        .map_err(|e| format!("{name}: {}", e.message().unwrap_or("")))?;
    }
    Ok(())
}

/// A v1 file (LLVM no longer writes them but reads them): both sides'
/// reports agree. A hash mismatch: LLVM reports it and goes on, our drop-in
/// refuses the file; the hashes LLVM prints are the ones we read and
/// compute.
fn v1_and_bad_hash_reports() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let u = make_inputs(d, 30_000, 11)?;
    let (c3, r) = ccob::compress_to_vec(&u, &CompressOptions::default())?;
    let mut v1 = ccob::Header {
        version: 1,
        total_size: None,
        ..r.header
    }
    .to_bytes()?;
    v1.extend(&c3[32..]);
    let mut bad = c3.clone();
    bad[24] ^= 1;
    for (name, data) in [("v1", v1), ("bad-hash", bad)] {
        let file = format!("{name}.ccob");
        std::fs::write(d.join(&file), &data)?;
        let args = ["-list".into(), "-type=bc".into(), format!("-input={file}")];
        let verbose = [("OFFLOAD_BUNDLER_VERBOSE", "1")];
        let listed = bundler(&args, &verbose, d).ok()?;
        let theirs = llvm_report(&listed.stderr);
        let opts = ReadOptions {
            hash: HashCheck::Report,
            ..ReadOptions::default()
        };
        let ours: Decompressed = ccob::decompress(&data, &opts)?;
        same_bytes(name, &ours.data, &u)?;
        if name == "v1" {
            let mine = our_bundler(&args, &verbose, d).ok()?;
            same(
                &format!("{name}: reports"),
                timeless(&llvm_report(&mine.stderr).join("\n")),
                timeless(&theirs.join("\n")),
            )?;
            continue;
        }
        let computed = ours.computed_hash.ok_or("no hash computed")?;
        same(
            &format!("{name}: hash lines"),
            theirs[theirs.len().saturating_sub(3)..].to_vec(),
            vec![
                &format!("Stored hash: {}", ccob::hex_hash(ours.header.hash))[..],
                &format!("Recalculated hash: {}", ccob::hex_hash(computed)),
                "Hashes match: No",
            ],
        )?;
        let mine = our_bundler(&args, &verbose, d);
        same(&format!("{name}: our exit code"), mine.code, 1)?;
    }
    Ok(())
}

/// Unbundling compressed bundles, which our drop-in streams: LLVM's CCOB,
/// ours on two threads (several frames) and a zlib one, each target alone
/// and both, with and without `-verbose`: the same files, exit codes and
/// reports as LLVM's. A hash mismatch passes without `-verbose`, as in
/// LLVM, and fails with it; a CCOB whose sizes lie fails and leaves no
/// output behind.
fn streamed_unbundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    // Large enough (over 1 MiB compressed) to be read through the file.
    let u = make_inputs(d, 6_000_000, 21)?;
    bundler(&bundle_args("z.ccob", &["-compress"]), &[], d).ok()?;
    let threaded = CompressOptions {
        threads: 2,
        ..CompressOptions::default()
    };
    std::fs::write(d.join("mt.ccob"), ccob::compress_to_vec(&u, &threaded)?.0)?;
    let zlib = CompressOptions {
        method: Method::ZLIB,
        level: 6,
        ..CompressOptions::default()
    };
    std::fs::write(d.join("zlib.ccob"), ccob::compress_to_vec(&u, &zlib)?.0)?;
    let z = std::fs::read(d.join("z.ccob"))?;
    if z.len() < 1 << 20 {
        return Err(format!(
            "z.ccob: {} bytes, too few to be read through the file",
            z.len()
        )
        .into());
    }
    let n = u.len() as u64;
    let lie = |at: usize, v: u64| {
        let mut c = z.clone();
        c[at..at + 8].copy_from_slice(&v.to_le_bytes());
        c
    };
    let mut bad_hash = z.clone();
    bad_hash[24] ^= 1;
    std::fs::write(d.join("bad-hash.ccob"), &bad_hash)?;
    let host = "host-x86_64-unknown-linux-gnu";
    let dev = "hip-amdgcn-amd-amdhsa--gfx90a";
    let unbundle = |file: &str, targets: &[&str], tag: &str| -> Vec<String> {
        let mut a = vec![
            "-type=bc".to_string(),
            "-unbundle".into(),
            format!("-targets={}", targets.join(",")),
            format!("-input={file}"),
        ];
        a.extend((0..targets.len()).map(|i| format!("-output={tag}.{i}")));
        a
    };
    let verbose = [("OFFLOAD_BUNDLER_VERBOSE", "1")];
    for file in ["z.ccob", "mt.ccob", "zlib.ccob", "bad-hash.ccob"] {
        for targets in [&[host][..], &[dev], &[dev, host]] {
            for env in [&[][..], &verbose] {
                let what = format!("{file} {targets:?} {env:?}");
                let theirs = bundler(&unbundle(file, targets, "llvm"), env, d);
                let mine = our_bundler(&unbundle(file, targets, "ours"), env, d);
                if file == "bad-hash.ccob" && !env.is_empty() {
                    // LLVM reports the mismatch and goes on; we refuse.
                    same(&format!("{what}: our exit code"), mine.code, 1)?;
                    for i in 0..targets.len() {
                        if d.join(format!("ours.{i}")).exists() {
                            return Err(format!("{what}: ours.{i} written").into());
                        }
                    }
                    continue;
                }
                same(&format!("{what}: exit code"), mine.code, theirs.code)?;
                same(
                    &format!("{what}: reports"),
                    timeless(&llvm_report(&mine.stderr).join("\n")),
                    timeless(&llvm_report(&theirs.stderr).join("\n")),
                )?;
                for i in 0..targets.len() {
                    let ours = std::fs::read(d.join(format!("ours.{i}")))?;
                    let llvm = std::fs::read(d.join(format!("llvm.{i}")))?;
                    same_bytes(&format!("{what}: output {i}"), &ours, &llvm)?;
                    std::fs::remove_file(d.join(format!("ours.{i}")))?;
                    std::fs::remove_file(d.join(format!("llvm.{i}")))?;
                }
            }
        }
    }
    // Declared sizes that lie (and a cut payload): an error, nothing
    // written, whichever target is wanted.
    let mut cut = z[..z.len() - 9].to_vec();
    let len = cut.len() as u64;
    cut[8..16].copy_from_slice(&len.to_le_bytes());
    for (name, data) in [
        ("short", lie(16, n - 1)),
        ("long", lie(16, n + 1)),
        ("cut", cut),
    ] {
        let file = format!("{name}.ccob");
        std::fs::write(d.join(&file), &data)?;
        for targets in [&[host][..], &[dev]] {
            let mine = our_bundler(&unbundle(&file, targets, "ours"), &[], d);
            same(&format!("{name} {targets:?}: our exit code"), mine.code, 1)?;
            if d.join("ours.0").exists() {
                return Err(format!("{name} {targets:?}: output written").into());
            }
        }
    }
    Ok(())
}

/// `offload-kit unbundle --threads N` on a CCOB of several zstd frames
/// (ours, from `bundle --compress --threads 2`): the files are the same on
/// one, two and three threads, and the same as LLVM's unbundling of it;
/// every cut and every lying size is an error on every thread count, with
/// no file (and no temporary) left in the output directory.
fn native_unbundle_threads() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    make_inputs(d, 5_000_000, 33)?;
    let host = "host-x86_64-unknown-linux-gnu";
    let dev = "hip-amdgcn-amd-amdhsa--gfx90a";
    let ours = crate::util::ours();
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    run(
        &ours,
        &args(&[
            "bundle",
            "--type",
            "bc",
            "--compress",
            "--threads",
            "2",
            "-o",
            "mt.ccob",
            &format!("{host}=host.bc"),
            &format!("{dev}=dev.bc"),
        ]),
        d,
    )
    .ok()?;
    let mt = std::fs::read(d.join("mt.ccob"))?;
    let header = ccob::Header::parse(&mt)?;
    let mut frames = 0;
    let mut rest = &mt[usize::try_from(header.size())?..];
    while !rest.is_empty() {
        let n = zstd::zstd_safe::find_frame_compressed_size(rest)
            .map_err(|_| "mt.ccob: a frame that zstd cannot walk")?;
        rest = &rest[n..];
        frames += 1;
    }
    if frames < 2 {
        return Err(format!("mt.ccob holds {frames} zstd frame(s), not several").into());
    }
    bundler(
        &[
            "-type=bc".to_string(),
            "-unbundle".into(),
            TARGETS.into(),
            "-input=mt.ccob".into(),
            "-output=llvm.0".into(),
            "-output=llvm.1".into(),
        ],
        &[],
        d,
    )
    .ok()?;
    let unbundle = |file: &str, out: &str, threads: &str| {
        run(
            &ours,
            &args(&[
                "unbundle",
                file,
                &format!("{host}=h"),
                &format!("{dev}=d"),
                "-o",
                out,
                "--threads",
                threads,
            ]),
            d,
        )
    };
    for threads in ["1", "2", "3"] {
        let out = format!("t{threads}");
        unbundle("mt.ccob", &out, threads).ok()?;
        for (name, llvm_file, input) in [("h", "llvm.0", "host.bc"), ("d", "llvm.1", "dev.bc")] {
            let got = std::fs::read(d.join(&out).join(name))?;
            let what = format!("--threads {threads}: {name}");
            same_bytes(
                &format!("{what} vs LLVM"),
                &got,
                &std::fs::read(d.join(llvm_file))?,
            )?;
            same_bytes(
                &format!("{what} vs the input"),
                &got,
                &std::fs::read(d.join(input))?,
            )?;
        }
    }
    // `extract` streams the entries out of the CCOB: the inputs' bytes.
    let extracted = |file: &str, out: &str| {
        let _ = std::fs::remove_dir_all(d.join(out));
        run(
            &ours,
            &args(&["extract", file, "-o", out, "--include-host"]),
            d,
        )
    };
    extracted("mt.ccob", "x").ok()?;
    for (id, input) in [(host, "host.bc"), (dev, "dev.bc")] {
        let name = std::fs::read_dir(d.join("x"))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| n.contains(id))
            .ok_or_else(|| format!("extract wrote no file for {id}"))?;
        same_bytes(
            &format!("extract: {name}"),
            &std::fs::read(d.join("x").join(&name))?,
            &std::fs::read(d.join(input))?,
        )?;
    }
    // Cuts (the total size fixed up or not, at frame boundaries and
    // inside frames), lying sizes, damage.
    let n = header.uncompressed_size;
    let set = |c: &mut Vec<u8>, at: usize, v: u64| c[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let mut bad: Vec<(String, Vec<u8>)> = Vec::new();
    for k in 1..16 {
        let keep = 32 + (mt.len() - 32) * k / 16;
        let mut cut = mt[..keep].to_vec();
        bad.push((format!("cut at {keep}"), cut.clone()));
        set(&mut cut, 8, keep as u64);
        bad.push((format!("cut at {keep}, total fixed"), cut));
    }
    for (what, v) in [("short", n - 1), ("long", n + 1), ("zero", 0)] {
        let mut c = mt.clone();
        set(&mut c, 16, v);
        bad.push((format!("declares {what}"), c));
    }
    let mut hit = mt.clone();
    let mid = mt.len() / 2;
    hit[mid] ^= 0x40;
    bad.push(("damaged in the middle".into(), hit));
    let mut hash = mt.clone();
    hash[24] ^= 1;
    bad.push(("bad hash".into(), hash));
    for (what, data) in bad {
        std::fs::write(d.join("bad.ccob"), &data)?;
        for threads in ["1", "2"] {
            let out = d.join("bad");
            let _ = std::fs::remove_dir_all(&out);
            let r = unbundle("bad.ccob", "bad", threads);
            if r.code == 0 {
                return Err(format!("{what}, --threads {threads}: unbundled").into());
            }
            if !r.stderr.contains("bad.ccob") {
                return Err(
                    format!("{what}: the error does not name the file: {}", r.stderr).into(),
                );
            }
            let left: Vec<_> = match std::fs::read_dir(&out) {
                Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect(),
                Err(_) => Vec::new(),
            };
            if !left.is_empty() {
                return Err(format!("{what}, --threads {threads}: left {left:?}").into());
            }
        }
        // `extract` either fails for it (exit 2, naming the file, nothing
        // left behind) or, where the damage leaves a valid stream (no zstd
        // checksum; the stored hash is checked only with --verify), writes
        // files; with --verify a damaged stream always fails.
        let r = extracted("bad.ccob", "xb");
        let left = std::fs::read_dir(d.join("xb")).map_or(0, |rd| rd.count());
        if r.code != 0 && r.code != 2 {
            return Err(format!("{what}: extract exit code {}: {}", r.code, r.stderr).into());
        }
        if r.code == 2 && (left != 0 || !r.stderr.contains("bad.ccob")) {
            return Err(format!(
                "{what}: extract failed but left {left} file(s): {}",
                r.stderr
            )
            .into());
        }
        let _ = std::fs::remove_dir_all(d.join("xb"));
        let v = run(
            &ours,
            &args(&[
                "extract",
                "bad.ccob",
                "-o",
                "xb",
                "--include-host",
                "--verify",
            ]),
            d,
        );
        let left = std::fs::read_dir(d.join("xb")).map_or(0, |rd| rd.count());
        // With --verify, a lie is an error with nothing written; damage is
        // that, or (if it still decodes) a warning that the stored hash
        // does not match, as for a wrong hash (the images are extracted,
        // as they always were under --verify).
        let warned = v.stderr.contains("does not match the contents");
        let fine = if what.starts_with("declares") {
            left == 0
        } else {
            left == 0 || warned
        };
        if !fine || (what == "bad hash" && !warned) {
            return Err(
                format!("{what}: extract --verify left {left} file(s): {}", v.stderr).into(),
            );
        }
    }
    Ok(())
}

/// The environment rules: our drop-in's warnings are LLVM's, and it writes
/// the bytes LLVM writes (so the version, level and compression it picks
/// are LLVM's).
fn environment() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    make_inputs(d, 1000, 1)?;
    let cases: [&[(&str, &str)]; 6] = [
        &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "1")],
        &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "abc")],
        &[("COMPRESSED_BUNDLE_FORMAT_VERSION", "2")],
        &[
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "x9"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "65536"),
        ],
        &[
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "2"),
        ],
        &[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "9"),
        ],
    ];
    for (i, env) in cases.iter().enumerate() {
        let extra: &[&str] = if i == 5 { &[] } else { &["-compress"] };
        let out = format!("env{i}.ccob");
        let r = bundler(&bundle_args(&out, extra), env, d).ok()?;
        let mine = our_bundler(&bundle_args(&format!("ours-{out}"), extra), env, d).ok()?;
        let warnings = |r: &Run| -> Vec<String> {
            r.stderr
                .lines()
                .filter(|l| l.starts_with("Warning: "))
                .map(str::to_string)
                .collect()
        };
        same(
            &format!("case {i}: warnings"),
            warnings(&mine),
            warnings(&r),
        )?;
        let written = std::fs::read(d.join(&out))?;
        same(
            &format!("case {i}: version"),
            ccob::Header::parse(&std::fs::read(d.join(format!("ours-{out}")))?)?.version,
            ccob::Header::parse(&written)?.version,
        )?;
        same_bytes(
            &format!("case {i}: bytes"),
            &std::fs::read(d.join(format!("ours-{out}")))?,
            &written,
        )?;
    }
    Ok(())
}

/// The trials.
pub fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    for (size_name, size) in [("tiny", 300usize), ("600k", 600_000), ("3m", 3_500_000)] {
        for level in [None, Some(1), Some(9), Some(19)] {
            let lname = level.map_or("default".to_string(), |l| l.to_string());
            v.push(trial(
                format!("ccob::identity_v3_{size_name}_level_{lname}"),
                &[TOOL],
                move || identity(size, level, 3),
            ));
        }
        v.push(trial(
            format!("ccob::identity_v2_{size_name}_level_default"),
            &[TOOL],
            move || identity(size, None, 2),
        ));
    }
    // Past zstd's 128 MiB window (where a streamed frame would differ from
    // LLVM's one-shot one). Slow and ~1 GB of memory: run with --ignored.
    v.push(
        trial("ccob::identity_v3_200m_level_default", &[TOOL], || {
            identity(200 << 20, None, 3)
        })
        .with_ignored_flag(true),
    );
    // The drop-in and `offload-kit bundle --compress` against LLVM's
    // `-compress`, from the files: entry counts, binary and text bundles,
    // levels (high and out of range), versions, alignment, and bundles
    // past zstd's 128 MiB window, where only LLVM's one call on one buffer
    // gives LLVM's frame. The largest run with --ignored (minutes, GBs).
    const MIB: usize = 1 << 20;
    let case = |file_type, sizes, level, version, align| Case {
        file_type,
        sizes,
        level,
        version,
        align,
    };
    let cases = [
        (
            "2_bc_tiny",
            case("bc", &[10, 300][..], None, 3, None),
            false,
        ),
        (
            "5_bc",
            case(
                "bc",
                &[5000, 2 * MIB, 2 * MIB + 7, MIB, 3 * MIB],
                None,
                3,
                None,
            ),
            false,
        ),
        (
            "5_bc_v2_align4096",
            case(
                "bc",
                &[5000, 2 * MIB, 2 * MIB + 7, MIB, 3 * MIB],
                None,
                2,
                Some(4096),
            ),
            false,
        ),
        (
            "3_ll_level9",
            case("ll", &[100, MIB, 2 * MIB], Some(9), 3, None),
            false,
        ),
        (
            "3_bc_level19",
            case("bc", &[100, MIB, MIB], Some(19), 3, None),
            false,
        ),
        (
            "2_bc_level22",
            case("bc", &[100, 2 * MIB], Some(22), 3, None),
            false,
        ),
        (
            "3_bc_level_-5_v2",
            case("bc", &[100, MIB, MIB], Some(-5), 2, None),
            false,
        ),
        (
            "4_bc_300m_align4096",
            case(
                "bc",
                &[1000, 150 * MIB, 150 * MIB - 3, 5 * MIB],
                None,
                3,
                Some(4096),
            ),
            false,
        ),
        (
            "3_ll_160m_level1_v2",
            case("ll", &[100, 100 * MIB, 60 * MIB], Some(1), 2, None),
            false,
        ),
        (
            "5_bc_600m_level9_v2",
            case(
                "bc",
                &[1000, 200 * MIB, 150 * MIB, 150 * MIB, 100 * MIB],
                Some(9),
                2,
                None,
            ),
            true,
        ),
        (
            "2_bc_200m_level12",
            case("bc", &[1000, 200 * MIB], Some(12), 3, None),
            true,
        ),
    ];
    for (name, c, slow) in cases {
        v.push(
            trial(format!("ccob::matrix_{name}"), &[TOOL], move || matrix(&c))
                .with_ignored_flag(slow),
        );
    }
    v.push(trial("ccob::llvm_reads_ours", &[TOOL], llvm_reads_ours));
    v.push(trial("ccob::back_to_back", &[TOOL], back_to_back));
    v.push(trial("ccob::error_messages", &[TOOL], error_messages));
    v.push(trial(
        "ccob::v1_and_bad_hash_reports",
        &[TOOL],
        v1_and_bad_hash_reports,
    ));
    v.push(trial("ccob::environment", &[TOOL], environment));
    v.push(trial("ccob::streamed_unbundle", &[TOOL], streamed_unbundle));
    v.push(trial(
        "ccob::native_unbundle_threads",
        &[TOOL],
        native_unbundle_threads,
    ));
    v
}
