//! Archive unbundling (`-unbundle -type=a`) against LLVM 22: archives
//! (made with `llvm-ar rc`) of object bundles, binary bundles and compressed
//! bundles, with host, HIP and OpenMP entries, with and without target-ID
//! features, among members that hold no bundle, and thin archives of them
//! (`llvm-ar rcT`), whose members are read from the files beside them, and
//! archives of object bundles whose hosts clang-22 and gcc compiled in many
//! shapes. Our output archives must be LLVM's bytes, the stripped host
//! objects in them included; our messages must be LLVM's. Hostile archives
//! (truncated, a member whose size runs past the end) must fail cleanly and
//! write nothing.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use super::object_bundles::{
    SHAPES, TOOL, TOOLS, args, compile_shape, make_inputs, run_both, same_outcome, shape_tools,
    shared_dir,
};
use crate::util::{clean_failure, llvm, ours_as, run, same, snapshot, tempdir};

/// Bundles with LLVM's tool: `-type=<ty>`, targets and inputs, into `out`.
fn llvm_bundle(
    dir: &Path,
    ty: &str,
    pairs: &[(&str, &str)],
    out: &str,
    extra: &[&str],
) -> Result<(), Failed> {
    let targets = pairs.iter().map(|p| p.0).collect::<Vec<_>>().join(",");
    let mut a = vec![format!("-type={ty}"), format!("-targets={targets}")];
    a.extend(pairs.iter().map(|p| format!("-input={}", p.1)));
    a.push(format!("-output={out}"));
    a.extend(extra.iter().map(|s| s.to_string()));
    run(&llvm(TOOL), &a, dir).ok()?;
    Ok(())
}

fn llvm_ar(dir: &Path, out: &str, members: &[&str]) -> Result<(), Failed> {
    llvm_ar_with(dir, "rc", out, members)
}

/// `llvm-ar <flags> out members…` (`rcT`: a thin archive).
fn llvm_ar_with(dir: &Path, flags: &str, out: &str, members: &[&str]) -> Result<(), Failed> {
    let mut a = vec![flags, out];
    a.extend_from_slice(members);
    run(&llvm("llvm-ar"), &a, dir).ok()?;
    Ok(())
}

const HOST: &str = "host-x86_64-unknown-linux-gnu";

/// The inputs: [`make_inputs`], bundles made by LLVM, and archives of them.
///
/// - `f1.o`: object bundle, host + hip gfx906 (a real code object) +
///   openmp sm_70.
/// - `f2.bc`: binary bundle, host + hip gfx90a:xnack+ + openmp gfx906.
/// - `f3.bc`: compressed binary bundle, host + hip gfx906 + hipv4 gfx90a.
/// - `f4.o`: object bundle of an i386 host + openmp gfx906:xnack-.
/// - `g.bc`: host + `openmp-amdgcn-amd-amdhsa--` (no target ID).
/// - `conflict.bc` / `cconflict.bc`: hip gfx906 and gfx906:xnack+ (which
///   pass bundling's check, being in different raw-triple groups), plain and
///   compressed.
/// - `f5.o`: f4.o compressed (CCOB v3, zstd).
/// - `lib.a`: f1.o f2.bc f3.bc f4.o f5.o, a source file, a plain object and a
///   copy of f1.o with a long name. `conflict.a`, `cconflict.a`, `g.a`,
///   `empty.a` (magic only).
fn make_archives(dir: &Path) -> Result<(), Failed> {
    make_inputs(dir)?;
    llvm_bundle(
        dir,
        "o",
        &[
            (HOST, "main.o"),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("openmp-nvptx64-nvidia-cuda--sm_70", "d1"),
        ],
        "f1.o",
        &[],
    )?;
    llvm_bundle(
        dir,
        "bc",
        &[
            (HOST, "d2"),
            ("hip-amdgcn-amd-amdhsa--gfx90a:xnack+", "gfx90a.bc"),
            ("openmp-amdgcn-amd-amdhsa--gfx906", "d1"),
        ],
        "f2.bc",
        &[],
    )?;
    llvm_bundle(
        dir,
        "bc",
        &[
            (HOST, "d2"),
            ("hip-amdgcn-amd-amdhsa--gfx906", "gfx906.o"),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", "d3"),
        ],
        "f3.bc",
        &["-compress"],
    )?;
    llvm_bundle(
        dir,
        "o",
        &[
            ("host-i386-unknown-linux-gnu", "k32.o"),
            ("openmp-amdgcn-amd-amdhsa--gfx906:xnack-", "d2"),
        ],
        "f4.o",
        &[],
    )?;
    llvm_bundle(
        dir,
        "bc",
        &[(HOST, "d2"), ("openmp-amdgcn-amd-amdhsa--", "d1")],
        "g.bc",
        &[],
    )?;
    let conflicting = [
        ("hip-amdgcn-amd-amdhsa--gfx906", "d1"),
        ("hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+", "d2"),
    ];
    llvm_bundle(dir, "bc", &conflicting, "conflict.bc", &[])?;
    llvm_bundle(dir, "bc", &conflicting, "cconflict.bc", &["-compress"])?;
    std::fs::copy(dir.join("f1.o"), dir.join("a_member_with_a_long_name.o"))?;
    // An object bundle in a CCOB (LLVM's -compress does not apply to
    // objects, but its archive unbundler decompresses any member).
    let (ccob, _) = offload_kit::bundle::ccob::compress_to_vec(
        &std::fs::read(dir.join("f4.o"))?,
        &offload_kit::bundle::ccob::CompressOptions::default(),
    )?;
    std::fs::write(dir.join("f5.o"), ccob)?;
    llvm_ar(
        dir,
        "lib.a",
        &[
            "f1.o",
            "f2.bc",
            "f3.bc",
            "f4.o",
            "f5.o",
            "k.c",
            "main.o",
            "a_member_with_a_long_name.o",
        ],
    )?;
    llvm_ar(dir, "conflict.a", &["f2.bc", "conflict.bc"])?;
    llvm_ar(dir, "cconflict.a", &["cconflict.bc", "f2.bc"])?;
    llvm_ar(dir, "g.a", &["g.bc", "f2.bc"])?;
    std::fs::write(dir.join("empty.a"), b"!<arch>\n")?;
    std::fs::write(dir.join("empty.file"), b"")?;
    // Thin archives: the members are the files beside them.
    let thin = |out: &str, members: &[&str]| llvm_ar_with(dir, "rcT", out, members);
    thin(
        "thin.a",
        &["f1.o", "f2.bc", "f3.bc", "f4.o", "f5.o", "g.bc"],
    )?;
    thin("thin-conflict.a", &["f2.bc", "conflict.bc"])?;
    std::fs::copy(dir.join("f2.bc"), dir.join("gone.bc"))?;
    thin("thin-missing.a", &["f1.o", "gone.bc"])?;
    std::fs::remove_file(dir.join("gone.bc"))?;
    Ok(())
}

fn inputs() -> Result<&'static Path, Failed> {
    static CELL: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    shared_dir(&CELL, "bundler-archive-inputs", make_archives)
}

/// `-unbundle -type=a` of `input` for `targets` (one output each, `o<i>.a`),
/// plus `extra`.
fn unbundle_args(input: &str, targets: &[&str], extra: &[&str]) -> Vec<String> {
    let mut a = args(&["-unbundle", "-type=a"]);
    a.push(format!("-input={input}"));
    a.push(format!("-targets={}", targets.join(",")));
    a.extend((0..targets.len()).map(|i| format!("-output=o{i}.a")));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

const ALL: &[&str] = &[
    HOST,
    "hip-amdgcn-amd-amdhsa--gfx906",
    "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "hipv4-amdgcn-amd-amdhsa--gfx90a",
    "openmp-nvptx64-nvidia-cuda--sm_70",
    "openmp-amdgcn-amd-amdhsa--gfx906:xnack-",
];

#[allow(
    clippy::too_many_lines,
    reason = "a table of the archive scenarios, one entry each"
)]
fn scenarios() -> Vec<(&'static str, Vec<String>)> {
    let hip_omp = [
        "openmp-amdgcn-amd-amdhsa--gfx906",
        "openmp-amdgcn-amd-amdhsa--gfx90a:xnack+",
    ];
    vec![
        ("all_targets", unbundle_args("lib.a", ALL, &[])),
        ("thin_archive", unbundle_args("thin.a", ALL, &[])),
        (
            "thin_archive_checked",
            unbundle_args("thin.a", &ALL[1..], &["-check-input-archive"]),
        ),
        (
            "thin_archive_conflict",
            unbundle_args(
                "thin-conflict.a",
                &["hip-amdgcn-amd-amdhsa--gfx906"],
                &["-check-input-archive"],
            ),
        ),
        (
            "thin_member_missing",
            unbundle_args("thin-missing.a", &["hip-amdgcn-amd-amdhsa--gfx906"], &[]),
        ),
        (
            "conflicting_requests",
            unbundle_args(
                "lib.a",
                &[
                    "openmp-amdgcn-amd-amdhsa--gfx906",
                    "openmp-amdgcn-amd-amdhsa--gfx906:xnack-",
                ],
                &[],
            ),
        ),
        (
            "device_targets_only",
            unbundle_args(
                "lib.a",
                &[
                    "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
                    "hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-:xnack-",
                ],
                &[],
            ),
        ),
        ("host_only", unbundle_args("lib.a", &[HOST], &[])),
        (
            "elf32_host_and_compressed_object_member",
            unbundle_args(
                "lib.a",
                &[
                    "host-i386-unknown-linux-gnu",
                    "openmp-amdgcn-amd-amdhsa--gfx906:xnack-",
                ],
                &[],
            ),
        ),
        (
            "openmp_without_hip_openmp_compatible",
            unbundle_args("lib.a", &hip_omp, &[]),
        ),
        (
            "hip_openmp_compatible",
            unbundle_args("lib.a", &hip_omp, &["-hip-openmp-compatible"]),
        ),
        (
            "missing_target_is_an_error",
            unbundle_args(
                "lib.a",
                &[
                    "hip-amdgcn-amd-amdhsa--gfx906",
                    "hip-amdgcn-amd-amdhsa--gfx1030",
                    HOST,
                ],
                &[],
            ),
        ),
        (
            "allow_missing_bundles",
            unbundle_args(
                "lib.a",
                &[
                    "hip-amdgcn-amd-amdhsa--gfx906",
                    "hip-amdgcn-amd-amdhsa--gfx1030",
                    HOST,
                ],
                &["-allow-missing-bundles"],
            ),
        ),
        (
            "check_input_archive_passes",
            unbundle_args("lib.a", ALL, &["-check-input-archive"]),
        ),
        (
            "check_input_archive_conflict",
            unbundle_args(
                "conflict.a",
                &["hip-amdgcn-amd-amdhsa--gfx906"],
                &["-check-input-archive"],
            ),
        ),
        (
            "conflict_without_check",
            unbundle_args("conflict.a", &["hip-amdgcn-amd-amdhsa--gfx906:xnack+"], &[]),
        ),
        (
            "check_input_archive_skips_compressed_members",
            unbundle_args(
                "cconflict.a",
                &["hip-amdgcn-amd-amdhsa--gfx906:xnack+"],
                &["-check-input-archive"],
            ),
        ),
        (
            "targets_that_normalize_alike",
            unbundle_args(
                "g.a",
                &[
                    "openmp-amdgcn-amd-amdhsa-gfx906",
                    "openmp-amdgcn-amd-amdhsa-gfx908",
                ],
                &[],
            ),
        ),
        (
            "empty_archive",
            unbundle_args("empty.a", &["hip-amdgcn-amd-amdhsa--gfx906"], &[]),
        ),
        (
            "empty_archive_allow_missing",
            unbundle_args(
                "empty.a",
                &["hip-amdgcn-amd-amdhsa--gfx906", HOST],
                &["-allow-missing-bundles"],
            ),
        ),
        (
            "object_is_not_an_archive",
            unbundle_args("main.o", &[HOST], &[]),
        ),
        (
            "bundle_is_not_an_archive",
            unbundle_args("f2.bc", &[HOST], &[]),
        ),
        ("text_is_not_an_archive", unbundle_args("k.c", &[HOST], &[])),
        (
            "empty_file_is_not_an_archive",
            unbundle_args("empty.file", &[HOST], &["-check-input-archive"]),
        ),
        (
            "missing_input",
            unbundle_args("nonexistent.a", &[HOST], &[]),
        ),
        (
            "verbose",
            unbundle_args("lib.a", &["hip-amdgcn-amd-amdhsa--gfx906"], &["-verbose"]),
        ),
        (
            "to_stdout",
            args(&[
                "-unbundle",
                "-type=a",
                "-input=lib.a",
                "-targets=openmp-amdgcn-amd-amdhsa--gfx906",
                "-output=-",
            ]),
        ),
        (
            "check_input_archive_with_type_o",
            args(&[
                "-unbundle",
                "-type=o",
                "-input=f1.o",
                "-targets=host-x86_64-unknown-linux-gnu",
                "-output=x",
                "-check-input-archive",
            ]),
        ),
        (
            "check_input_archive_while_bundling",
            args(&[
                "-type=a",
                "-input=f1.o",
                "-targets=host-x86_64-unknown-linux-gnu",
                "-output=x",
                "-check-input-archive",
            ]),
        ),
        (
            "two_host_targets",
            unbundle_args("lib.a", &[HOST, "host-i386-unknown-linux-gnu"], &[]),
        ),
    ]
}

/// The scenarios in which LLVM fails (the others must succeed).
const FAILING: &[&str] = &[
    "conflicting_requests",
    "openmp_without_hip_openmp_compatible",
    "missing_target_is_an_error",
    "check_input_archive_conflict",
    "empty_archive",
    "object_is_not_an_archive",
    "bundle_is_not_an_archive",
    "text_is_not_an_archive",
    "empty_file_is_not_an_archive",
    "missing_input",
    "check_input_archive_with_type_o",
    "check_input_archive_while_bundling",
    "two_host_targets",
    "thin_archive_conflict",
    "thin_member_missing",
];

fn run_scenario(name: &str, a: &[String]) -> Result<(), Failed> {
    let work = tempdir();
    let (theirs, ours) = run_both(inputs()?, work.path(), name, a)?;
    same_outcome(name, &theirs, &ours)?;
    same(
        &format!("{name}: success"),
        ours.code == 0,
        !FAILING.contains(&name),
    )
}

/// Both tools' archives for every target hold the same members; for
/// archives without host objects, the same bytes.
fn device_archives_are_llvm_bytes() -> Result<(), Failed> {
    let work = tempdir();
    let targets = &ALL[1..];
    let (theirs, ours) = run_both(
        inputs()?,
        work.path(),
        "dev",
        &unbundle_args("lib.a", targets, &[]),
    )?;
    same_outcome("device archives", &theirs, &ours)?;
    for (i, target) in targets.iter().enumerate() {
        let f = format!("o{i}.a");
        let (a, b) = (
            std::fs::read(ours.dir.join(&f))?,
            std::fs::read(theirs.dir.join(&f))?,
        );
        if a != b {
            return Err(format!("{f} ({target}) is not LLVM's bytes").into());
        }
    }
    Ok(())
}

/// An archive of object bundles, one per host-object shape (clang-22 and
/// gcc, see `object_bundles::SHAPES`), bundled by LLVM with two device
/// entries, plus a plain object: unbundling it for the host and a device
/// target gives LLVM's bytes, every stripped host member included.
fn host_members_are_llvm_bytes() -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let dir = w.join("in");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("d1"), b"DEVICE-ONE")?;
    std::fs::write(dir.join("d2"), b"DEVICE22")?;
    let mut members = Vec::new();
    for shape in SHAPES {
        let host = format!("{}.o", shape.0);
        compile_shape(&dir, shape, &host)?;
        let fat = format!("fat_{}.o", shape.0);
        llvm_bundle(
            &dir,
            "o",
            &[
                (HOST, &host),
                ("hip-amdgcn-amd-amdhsa--gfx906", "d1"),
                ("openmp-nvptx64-nvidia-cuda--sm_70", "d2"),
            ],
            &fat,
            &[],
        )?;
        members.push(fat);
    }
    members.push(format!("{}.o", SHAPES[0].0));
    let refs: Vec<&str> = members.iter().map(String::as_str).collect();
    llvm_ar(&dir, "shapes.a", &refs)?;
    let a = unbundle_args("shapes.a", &[HOST, "hip-amdgcn-amd-amdhsa--gfx906"], &[]);
    let (theirs, ours) = run_both(&dir, w, "shapes", &a)?;
    same_outcome("unbundling", &theirs, &ours)?;
    same("success", ours.code, 0)
}

type Corrupt = fn(&[u8]) -> Vec<u8>;

/// The data range of the archive's last member.
fn last_member(data: &[u8]) -> (usize, usize) {
    let a = object::read::archive::ArchiveFile::parse(data).unwrap();
    let (off, size) = a.members().last().unwrap().unwrap().file_range();
    (off as usize, size as usize)
}

fn hostile_archives() -> Vec<(&'static str, Corrupt)> {
    vec![
        ("truncated_in_first_header", |d| d[..20].to_vec()),
        ("truncated_in_last_member", |d| {
            let (off, size) = last_member(d);
            d[..off + size / 2].to_vec()
        }),
        ("member_size_past_the_end", |d| {
            let (off, _) = last_member(d);
            let mut v = d.to_vec();
            v[off - 12..off - 2].copy_from_slice(b"99999999  ");
            v
        }),
        ("member_size_not_a_number", |d| {
            let (off, _) = last_member(d);
            let mut v = d.to_vec();
            v[off - 12..off - 2].copy_from_slice(b"12x4      ");
            v
        }),
        ("bad_header_terminator", |d| {
            let (off, _) = last_member(d);
            let mut v = d.to_vec();
            v[off - 2..off].copy_from_slice(b"!!");
            v
        }),
        ("bundle_in_member_truncated", |d| {
            // f2.bc's entry count, inflated (it is the second member).
            let a = object::read::archive::ArchiveFile::parse(d).unwrap();
            let (off, _) = a.members().nth(1).unwrap().unwrap().file_range();
            let mut v = d.to_vec();
            let at = off as usize + 24;
            v[at..at + 8].copy_from_slice(&1000u64.to_le_bytes());
            v
        }),
    ]
}

fn run_hostile(corrupt: Corrupt) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let bad = corrupt(&std::fs::read(inputs()?.join("lib.a"))?);
    std::fs::write(d.join("bad.a"), bad)?;
    let before = snapshot(d);
    for extra in [&[][..], &["-allow-missing-bundles", "-check-input-archive"]] {
        let a = unbundle_args("bad.a", &["hip-amdgcn-amd-amdhsa--gfx906", HOST], extra);
        let r = run(&ours_as(TOOL), &a, d);
        clean_failure("unbundling", &r, "bad.a")?;
        same("files after the failure", snapshot(d), before.clone())?;
    }
    Ok(())
}

/// All of the above, as trials.
pub fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for (name, a) in scenarios() {
        t.push(trial!(
            run_scenario["{name}"],
            TOOLS,
            move || run_scenario(name, &a),
        ));
    }
    t.push(trial!(device_archives_are_llvm_bytes, TOOLS));
    let mut tools: Vec<&str> = TOOLS.to_vec();
    for shape in SHAPES {
        tools.extend(
            shape_tools(shape)
                .into_iter()
                .filter(|t| !TOOLS.contains(t)),
        );
    }
    tools.dedup();
    t.push(trial!(host_members_are_llvm_bytes, &tools));
    for (name, corrupt) in hostile_archives() {
        t.push(trial!(
            run_hostile["{name}"],
            TOOLS,
            move || run_hostile(corrupt),
        ));
    }
    t
}
