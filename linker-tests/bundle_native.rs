//! `offload-kit bundle | unbundle | list` on bundles: the same bytes as
//! clang-offload-bundler 22, multithreaded compression that LLVM reads back,
//! and listings that agree with LLVM's `-list`.

use libtest_mimic::{Failed, Trial};

use crate::util::{llvm, ours, ours_as, run, same, same_bytes, snapshot, tempdir};

const TOOL: &str = "clang-offload-bundler";
const TARGETS: [&str; 3] = [
    "host-x86_64-unknown-linux-gnu",
    "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
    "openmp-nvptx64-nvidia-cuda--sm_80",
];

/// Compressible pseudo-code: lines of text with varying numbers.
fn content(seed: u64, lines: usize) -> Vec<u8> {
    (0..lines)
        .map(|i| {
            format!(
                "v{seed} line {i} value {}\n",
                (i as u64 * 2654435761 + seed) % 9973
            )
        })
        .collect::<String>()
        .into_bytes()
}

fn setup(d: &std::path::Path, lines: usize) -> std::io::Result<()> {
    for i in 0..3 {
        std::fs::write(d.join(format!("in{i}")), content(i, lines + i as usize * 7))?;
    }
    Ok(())
}

fn native_args(ty: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "bundle".to_string(),
        "--type".into(),
        ty.into(),
        "-o".into(),
        out.into(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend(
        TARGETS
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{t}=in{i}")),
    );
    a
}

fn llvm_args(ty: &str, out: &str, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        format!("-type={ty}"),
        format!("-targets={}", TARGETS.join(",")),
        format!("-output={out}"),
    ];
    a.extend((0..3).map(|i| format!("-input=in{i}")));
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Native `bundle` writes LLVM's bytes, with and without compression.
fn same_bytes_as_llvm() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    setup(d, 300)?;
    for (ty, ours_extra, llvm_extra) in [
        ("bc", vec![], vec![]),
        ("bc", vec!["--align", "4096"], vec!["-bundle-align=4096"]),
        ("ll", vec![], vec![]),
        ("bc", vec!["--compress"], vec!["-compress"]),
        (
            "bc",
            vec!["--compress", "--level", "9", "--format-version", "2"],
            vec!["-compress", "-compression-level=9"],
        ),
    ] {
        let v2 = ours_extra.contains(&"2");
        let mut cmd = std::process::Command::new(llvm(TOOL));
        cmd.args(llvm_args(ty, "llvm.out", &llvm_extra))
            .current_dir(d);
        if v2 {
            cmd.env("COMPRESSED_BUNDLE_FORMAT_VERSION", "2");
        }
        let st = cmd.output()?;
        if !st.status.success() {
            return Err(format!("llvm failed: {}", String::from_utf8_lossy(&st.stderr)).into());
        }
        run(&ours(), &native_args(ty, "ours.out", &ours_extra), d).ok()?;
        same_bytes(
            &format!("{ty} {ours_extra:?}"),
            &std::fs::read(d.join("ours.out"))?,
            &std::fs::read(d.join("llvm.out"))?,
        )?;
    }
    Ok(())
}

/// `--threads 2` output differs from LLVM's bytes, but LLVM unbundles it to
/// the original files.
fn threaded_compression_reads_back_in_llvm() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    setup(d, 200_000)?; // a few MiB each, so zstd really uses its workers
    run(
        &ours(),
        &native_args("bc", "mt.bc", &["--compress", "--threads", "2"]),
        d,
    )
    .ok()?;
    let mut args = vec![
        "-type=bc".to_string(),
        "-unbundle".into(),
        format!("-targets={}", TARGETS.join(",")),
        "-input=mt.bc".into(),
    ];
    args.extend((0..3).map(|i| format!("-output=out{i}")));
    run(&llvm(TOOL), &args, d).ok()?;
    for i in 0..3 {
        same_bytes(
            &format!("entry {i}"),
            &std::fs::read(d.join(format!("out{i}")))?,
            &std::fs::read(d.join(format!("in{i}")))?,
        )?;
    }
    Ok(())
}

/// Native `unbundle` and `list` agree with LLVM on LLVM's bundles.
fn unbundle_and_list_llvm_bundles() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    setup(d, 50)?;
    run(&llvm(TOOL), &llvm_args("bc", "fat.bc", &["-compress"]), d).ok()?;
    let r = run(&ours(), &["list", "--json", "fat.bc"], d).ok()?;
    let j: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    let ids: Vec<String> = j["bundle"]["entries"]
        .as_array()
        .ok_or("no entries")?
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default().to_string())
        .collect();
    let l = run(&llvm(TOOL), &["-type=bc", "-list", "-input=fat.bc"], d).ok()?;
    let want: Vec<String> = String::from_utf8_lossy(&l.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    same("entry IDs in LLVM's order", ids, want)?;
    same(
        "compressed",
        j["bundle"]["compressed"]["version"].as_u64(),
        Some(3),
    )?;
    // Every entry, then chosen targets with target-ID matching.
    run(&ours(), &["unbundle", "fat.bc", "-o", "all"], d).ok()?;
    let all = snapshot(&d.join("all"));
    same("entries written", all.len(), 3)?;
    run(
        &ours(),
        &[
            "unbundle",
            "fat.bc",
            "-o",
            "some",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-=dev.o",
            "host-x86_64-unknown-linux-gnu=host.o",
        ],
        d,
    )
    .ok()?;
    same_bytes(
        "device entry",
        &std::fs::read(d.join("some/dev.o"))?,
        &std::fs::read(d.join("in1"))?,
    )?;
    same_bytes(
        "host entry",
        &std::fs::read(d.join("some/host.o"))?,
        &std::fs::read(d.join("in0"))?,
    )?;
    let r = run(
        &ours(),
        &[
            "unbundle",
            "fat.bc",
            "-o",
            "none",
            "hip-amdgcn-amd-amdhsa--gfx1030",
        ],
        d,
    );
    if r.code != 1 || !r.stderr.contains("gfx1030") {
        return Err(format!("missing target: exit {}, {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A small C host, compiled by clang-22 into `host.o` in `d`.
fn host_object(d: &std::path::Path) -> Result<(), Failed> {
    std::fs::write(
        d.join("host.c"),
        "int g = 3;\nstatic int s;\nint f(int x) { s += x; return g * s; }\n",
    )?;
    run(&llvm("clang"), &["-c", "-O2", "host.c", "-o", "host.o"], d).ok()?;
    Ok(())
}

/// Native `bundle --type o` with an ELF host writes the drop-in's bytes,
/// which are LLVM's, compressed or not.
fn object_host_bundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    setup(d, 40)?;
    host_object(d)?;
    std::fs::copy(d.join("host.o"), d.join("in0"))?;
    run(&ours(), &native_args("o", "native.o", &[]), d).ok()?;
    run(&ours(), &native_args("o", "native_c.o", &["--compress"]), d).ok()?;
    run(&ours_as(TOOL), &llvm_args("o", "compat.o", &[]), d).ok()?;
    run(&llvm(TOOL), &llvm_args("o", "llvm.o", &[]), d).ok()?;
    let native = std::fs::read(d.join("native.o"))?;
    same_bytes(
        "native vs drop-in",
        &native,
        &std::fs::read(d.join("compat.o"))?,
    )?;
    same_bytes("native vs LLVM", &native, &std::fs::read(d.join("llvm.o"))?)?;
    same_bytes(
        "--compress leaves an object bundle as it is",
        &std::fs::read(d.join("native_c.o"))?,
        &native,
    )?;
    Ok(())
}

/// Native `unbundle` extracts the host entry of an object bundle: the
/// stripped host object the drop-in (and LLVM, through llvm-objcopy) writes.
fn object_host_unbundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    setup(d, 40)?;
    host_object(d)?;
    std::fs::copy(d.join("host.o"), d.join("in0"))?;
    run(&llvm(TOOL), &llvm_args("o", "fat.o", &[]), d).ok()?;
    let unbundle = |prog: &std::path::Path, out: &str| {
        run(
            prog,
            &[
                "-type=o",
                "-unbundle",
                "-input=fat.o",
                &format!("-targets={}", TARGETS[0]),
                &format!("-output={out}"),
            ],
            d,
        )
        .ok()
    };
    unbundle(&ours_as(TOOL), "compat_host.o")?;
    unbundle(&llvm(TOOL), "llvm_host.o")?;
    let compat = std::fs::read(d.join("compat_host.o"))?;
    same_bytes(
        "drop-in vs LLVM",
        &compat,
        &std::fs::read(d.join("llvm_host.o"))?,
    )?;
    let dev = format!("{}=dev", TARGETS[2]);
    let host = format!("{}=host.o", TARGETS[0]);
    run(
        &ours(),
        &["unbundle", "fat.o", "-o", "some", &host, &dev],
        d,
    )
    .ok()?;
    same_bytes(
        "native host",
        &std::fs::read(d.join("some/host.o"))?,
        &compat,
    )?;
    same_bytes(
        "native device entry",
        &std::fs::read(d.join("some/dev"))?,
        &std::fs::read(d.join("in2"))?,
    )?;
    // Without targets, every entry: the host's is the stripped object too.
    run(&ours(), &["unbundle", "fat.o", "-o", "all"], d).ok()?;
    let all = snapshot(&d.join("all"));
    same("entries written", all.len(), 3)?;
    let hosts: Vec<&String> = all
        .iter()
        .filter(|(_, b)| *b == compat)
        .map(|(n, _)| n)
        .collect();
    same("stripped host objects among them", hosts.len(), 1)?;
    Ok(())
}

/// The trials.
pub fn tests() -> Vec<Trial> {
    vec![
        trial!(same_bytes_as_llvm, &[TOOL]),
        trial!(threaded_compression_reads_back_in_llvm, &[TOOL]),
        trial!(unbundle_and_list_llvm_bundles, &[TOOL]),
        trial!(object_host_bundle, &[TOOL, "clang"]),
        trial!(object_host_unbundle, &[TOOL, "clang", "llvm-objcopy"]),
    ]
}
