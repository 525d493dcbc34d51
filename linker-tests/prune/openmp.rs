//! OpenMP programs and shared libraries built here by clang-22 with two
//! offload images, gfx90a and the host CPU's (x86_64), each in an
//! OffloadBinary registered by the wrapper's descriptor; linked by GNU ld,
//! lld (RELA, and RELR with `-z pack-relative-relocs`) and mold, as PIE and
//! non-PIE programs and as a shared library. Pruned to the CPU target, each
//! file shrinks, its descriptor registers one image (the CPU's, moved to
//! the front of the image array), `llvm-readelf -a` and `eu-elflint
//! --gnu-ld` say nothing new, and it runs its target region on
//! libomptarget 22's host plugin with the same output; rewritten in place
//! (`--no-shrink`) too. A descriptor whose count does not match its images
//! is not recognised, and the file is refused.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

use super::shrink::elflint;
use super::{hashed, src};
use crate::util::{clean_failure_code, llvm, ours, ours_json, run, same, tempdir};

const LIBOMPTARGET: &str = "/usr/lib/llvm-22/lib/libomptarget.so.22.1";
const LLVM_LIB: &str = "/usr/lib/llvm-22/lib";

pub fn tests() -> Vec<Trial> {
    let tools = [
        "clang",
        "ld.bfd",
        "ld.lld",
        "ld.mold",
        "llvm-readelf",
        "eu-elflint",
        LIBOMPTARGET,
        "/usr/lib/llvm-22/lib/libomp.so",
    ];
    vec![
        trial!(programs_run_their_kept_cpu_image, &tools),
        trial!(a_descriptor_that_does_not_add_up_is_refused, &tools),
    ]
}

/// The offload flags: gfx90a first, then the CPU (whose image the CPU
/// rule keeps, so it moves to the front of the array).
fn omp_flags() -> Vec<&'static str> {
    vec![
        "-O2",
        "-fopenmp",
        "-fopenmp-targets=amdgcn-amd-amdhsa,x86_64-unknown-linux-gnu",
        "-Xopenmp-target=amdgcn-amd-amdhsa",
        "-march=gfx90a",
        "-nogpulib",
    ]
}

/// `k.o` and `main.o`, and `lib/` with the unversioned libomptarget.so
/// that Debian leaves to the -dev package.
fn objects(d: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(d.join("lib"))?;
    std::os::unix::fs::symlink(LIBOMPTARGET, d.join("lib/libomptarget.so"))?;
    let clang = llvm("clang");
    let k = src("omp_k.c");
    let mut args = omp_flags();
    args.extend(["-fPIC", "-c", &k, "-o", "k.o"]);
    run(&clang, &args, d).ok()?;
    let main = src("omp_main.c");
    run(&clang, &["-O2", "-c", &main, "-o", "main.o"], d).ok()?;
    Ok(())
}

/// Links `out` with `ld` and `extra` flags (`-shared` makes the library).
fn link(d: &Path, ld: &str, extra: &[&str], out: &str) -> Result<(), Failed> {
    let fuse = format!("-fuse-ld={ld}");
    let mut args = omp_flags();
    args.push(&fuse);
    args.extend(extra);
    args.push("k.o");
    if !extra.contains(&"-shared") {
        args.push("main.o");
    }
    args.extend([
        "-Llib",
        "-Xoffload-linker",
        "--unresolved-symbols=ignore-all",
        "-o",
        out,
    ]);
    run(&llvm("clang"), &args, d).ok()?;
    Ok(())
}

/// What `prog` (in `d`) prints, run on libomptarget 22.
fn runs(d: &Path, prog: &str) -> Result<String, Failed> {
    let out = std::process::Command::new(d.join(prog))
        .current_dir(d)
        .env("LD_LIBRARY_PATH", format!("{LLVM_LIB}:{}", d.display()))
        .output()?;
    if !out.status.success() {
        return Err(format!("{prog}: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The image count of `file`'s descriptor (its symbol
/// `.omp_offloading.descriptor`, read with `object`).
fn descriptor_count(d: &Path, file: &str) -> Result<(u32, u64), Failed> {
    let data = std::fs::read(d.join(file))?;
    let o = object::File::parse(&*data)?;
    let sym = o
        .symbols()
        .find(|s| s.name() == Ok(".omp_offloading.descriptor"))
        .ok_or(format!("{file}: no descriptor symbol"))?;
    let section = o.section_by_index(sym.section_index().ok_or("no section")?)?;
    let (start, _) = section.file_range().ok_or("no file range")?;
    let at = start + (sym.address() - section.address());
    let at = usize::try_from(at)?;
    let count = u32::from_le_bytes(data[at..at + 4].try_into()?);
    Ok((count, at as u64))
}

/// Every linker and kind of file: pruned to the CPU image, shrunk and in
/// place, runs as before.
fn programs_run_their_kept_cpu_image() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    objects(d)?;
    let mut files = Vec::new();
    for ld in ["bfd", "lld", "mold"] {
        for (kind, extra) in [("pie", &[][..]), ("nopie", &["-no-pie"][..])] {
            let f = format!("{kind}-{ld}");
            link(d, ld, extra, &f)?;
            files.push(f);
        }
        let f = format!("libk{ld}.so");
        link(d, ld, &["-shared"], &f)?;
        files.push(f);
    }
    link(d, "lld", &["-Wl,-z,pack-relative-relocs"], "relr-lld")?;
    files.push("relr-lld".into());
    for f in &files {
        let before = hashed(d, f)?;
        same(&format!("{f}: images before"), before.len(), 2)?;
        same(
            &format!("{f}: descriptor before"),
            descriptor_count(d, f)?.0,
            2,
        )?;
        if f.ends_with(".so") {
            // A program that uses the library (found in `d`).
            let l = format!("-l{}", f.trim_start_matches("lib").trim_end_matches(".so"));
            let args = ["main.o", "-L.", &l, "-Wl,-rpath,$ORIGIN", "-o", "app"];
            run(&llvm("clang"), &args, d).ok()?;
        }
        let want = ran(d, f, f)?;
        if !want.contains("on the offload device") {
            return Err(format!("{f}: the target region did not offload: {want}").into());
        }
        for no_shrink in [false, true] {
            pruned(d, f, &before, no_shrink, &want)?;
        }
    }
    Ok(())
}

/// What `f` prints when run (a library: `app` run with `as_f` in its
/// place).
fn ran(d: &Path, f: &str, as_f: &str) -> Result<String, Failed> {
    if !f.ends_with(".so") {
        return runs(d, as_f);
    }
    if as_f == f {
        return runs(d, "app");
    }
    std::fs::rename(d.join(f), d.join("orig.so"))?;
    std::fs::copy(d.join(as_f), d.join(f))?;
    let got = runs(d, "app");
    std::fs::rename(d.join("orig.so"), d.join(f))?;
    got
}

/// `f` pruned to the CPU (shrunk, or in place with `no_shrink`): smaller
/// (or as large), its CPU image alone as it was (`before` are both), its
/// descriptor counting 1, nothing new from `llvm-readelf -a` and
/// `eu-elflint`, and it prints `want`.
fn pruned(
    d: &Path,
    f: &str,
    before: &[(String, String)],
    no_shrink: bool,
    want: &str,
) -> Result<(), Failed> {
    let how = if no_shrink { "in place" } else { "shrunk" };
    let out = format!("pruned-{f}");
    let mut args = vec!["prune", "--keep", "x86_64", "--json", "-o", &out, f];
    if no_shrink {
        args.push("--no-shrink");
    }
    let doc = ours_json(&args, d)?;
    let file = &doc["files"][0];
    if !no_shrink && file["not_shrunk"].is_string() {
        return Err(format!("{f}: not shrunk: {}", file["not_shrunk"]).into());
    }
    let size = |p: &str| std::fs::metadata(d.join(p)).map(|m| m.len());
    let (old, new) = (size(f)?, size(&out)?);
    match no_shrink {
        false if new + 8192 > old => {
            return Err(format!("{f}: {old} → {new} bytes, not two pages less").into());
        }
        true => same(&format!("{f} {how}: size"), new, old)?,
        false => {}
    }
    let cpu: Vec<_> = before
        .iter()
        .filter(|(t, _)| !t.contains("gfx90a"))
        .cloned()
        .collect();
    same(&format!("{f} {how}: images"), hashed(d, &out)?, cpu)?;
    same(
        &format!("{f} {how}: descriptor count"),
        descriptor_count(d, &out)?.0,
        1,
    )?;
    let readelf = |f: &str| run(&llvm("llvm-readelf"), &["-a", f], d);
    let (a, b) = (readelf(f), readelf(&out));
    same(&format!("{f} {how}: llvm-readelf"), b.code, a.code)?;
    same(
        &format!("{f} {how}: llvm-readelf warnings"),
        b.stderr,
        a.stderr,
    )?;
    same(
        &format!("{f} {how}: eu-elflint"),
        elflint(d, &out),
        elflint(d, f),
    )?;
    let got = ran(d, f, &out)?;
    same(&format!("{f} {how}: output"), got.as_str(), want)
}

/// A descriptor whose count is not its array's: not recognised, so the
/// OffloadBinary it registers cannot go; refused (exit 2, as any file
/// named on the command line that cannot be pruned), naming the file, and
/// nothing written.
fn a_descriptor_that_does_not_add_up_is_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    objects(d)?;
    link(d, "lld", &[], "prog")?;
    let (count, at) = descriptor_count(d, "prog")?;
    same("descriptor count", count, 2)?;
    let mut data = std::fs::read(d.join("prog"))?;
    let at = usize::try_from(at)?;
    data[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(d.join("bad"), &data)?;
    let r = run(
        &ours(),
        &["prune", "--keep", "x86_64", "-o", "out", "bad"],
        d,
    );
    clean_failure_code("prune of a bad descriptor", &r, "bad", 2)?;
    if !r.stderr.contains("OpenMP") {
        return Err(format!("the refusal says nothing of OpenMP: {}", r.stderr).into());
    }
    same("output written", d.join("out").exists(), false)
}
