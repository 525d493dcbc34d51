//! Each side reads the other's bundles; the drop-in's `-verbose` reports,
//! environment warnings and error messages against LLVM's.

use super::*;
use offload_kit::{Error, ErrorKind};

/// LLVM 22's message for a CCOB error (see [`ccob::Fault::llvm_message`]).
fn llvm_message(e: &Error) -> Option<String> {
    match e.kind() {
        ErrorKind::Ccob { fault, .. } => Some(fault.llvm_message()),
        _ => None,
    }
}

/// A hash as LLVM's `-verbose` prints it (`format_hex(h, 16)`).
fn hex_hash(h: u64) -> String {
    format!("{h:#016x}")
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
                level: Method::ZLIB.default_level(),
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
        .and_then(|e| llvm_message(&e))
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
            .and_then(|e| llvm_message(&e))
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
                &format!("Stored hash: {}", hex_hash(ours.header.hash))[..],
                &format!("Recalculated hash: {}", hex_hash(computed)),
                "Hashes match: No",
            ],
        )?;
        let mine = our_bundler(&args, &verbose, d);
        same(&format!("{name}: our exit code"), mine.code, 1)?;
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

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(llvm_reads_ours, &[TOOL]),
        trial!(back_to_back, &[TOOL]),
        trial!(error_messages, &[TOOL]),
        trial!(v1_and_bad_hash_reports, &[TOOL]),
        trial!(environment, &[TOOL]),
    ]
}
