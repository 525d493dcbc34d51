//! Our compressor's bytes against LLVM's `-compress` output: one entry over
//! sizes × levels and versions, and the drop-in and `bundle --compress`
//! over a matrix of bundles.

use super::*;

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
        level: level.unwrap_or(Method::ZSTD.default_level()),
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

/// The matrix of bundles: (name, bundle, whether it is slow enough to run
/// only with `--ignored`).
fn matrix_cases() -> Vec<(&'static str, Case, bool)> {
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
    vec![
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
    ]
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    for (size_name, size) in [("tiny", 300usize), ("600k", 600_000), ("3m", 3_500_000)] {
        for level in [None, Some(1), Some(9), Some(19)] {
            let lname = level.map_or("default".to_string(), |l| l.to_string());
            v.push(trial!(
                identity["v3_{size_name}_level_{lname}"],
                &[TOOL],
                move || identity(size, level, 3),
            ));
        }
        v.push(trial!(
            identity["v2_{size_name}_level_default"],
            &[TOOL],
            move || identity(size, None, 2),
        ));
    }
    // Past zstd's 128 MiB window (where a streamed frame would differ from
    // LLVM's one-shot one). Slow and ~1 GB of memory: run with --ignored.
    v.push(
        trial!(identity["v3_200m_level_default"], &[TOOL], || {
            identity(200 << 20, None, 3)
        })
        .with_ignored_flag(true),
    );
    for (name, c, slow) in matrix_cases() {
        v.push(
            trial!(matrix["{name}"], &[TOOL], move || matrix(&c))
                .with_ignored_flag(slow),
        );
    }
    v
}
