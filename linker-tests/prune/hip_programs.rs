//! HIP programs built here, linked by three linkers, pruned, and run with
//! a stand-in runtime that prints what each registration hands it.

use std::path::Path;

use libtest_mimic::Failed;

use super::{objects, output, readelf_clean, src};
use crate::util::{llvm, ours, run, same, tempdir};

/// HIP built here by clang-22 for gfx90a, gfx1030 and gfx942 (two
/// translation units: two bundles, each registered at start-up, the first
/// compressed with `--offload-compress`), linked by
/// GNU ld, lld and mold into a shared library and into PIE and non-PIE
/// executables, run with a stand-in runtime that prints what each
/// registration hands it (every bundle entry's ID, size and a hash of its
/// bytes, a CCOB decompressed first, and the kernels). Pruned to gfx90a, each program prints exactly
/// what it printed before less the gfx1030 and gfx942 entries: the same
/// bundles, at the same addresses, the kept code objects unchanged.
pub(super) fn hip_programs_register_only_the_kept_images() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // k1's bundle compressed (a CCOB, rebuilt when pruned), k2's plain.
    for (k, compress) in [("k1", true), ("k2", false)] {
        let source = src(&format!("{k}.hip"));
        let object = format!("{k}.o");
        let extra: &[&str] = if compress {
            &["--offload-compress"]
        } else {
            &[]
        };
        run(
            &llvm("clang++"),
            &objects::hip_args(&source, &object, extra),
            d,
        )
        .ok()?;
    }
    let cc = Path::new("/usr/bin/cc");
    let stub = src("hip_stub.c");
    run(
        cc,
        &["-shared", "-fPIC", &stub, "-lzstd", "-o", "libhipstub.so"],
        d,
    )
    .ok()?;
    std::fs::create_dir(d.join("pruned"))?;
    std::fs::copy(d.join("libhipstub.so"), d.join("pruned/libhipstub.so"))?;
    for ld in ["bfd", "lld", "mold"] {
        let [lib, shared, pie, nopie] = link_programs(d, ld)?;
        // The library is pruned in the copy the program beside it loads;
        // the executables, into the same directory.
        std::fs::copy(d.join(&shared), d.join("pruned").join(&shared))?;
        for f in [&lib, &pie, &nopie] {
            run(
                &ours(),
                &["prune", "--keep", "gfx90a", "-d", "pruned", f.as_str()],
                d,
            )
            .ok()?;
            // Shrunk: whole pages of the section removed, the segment split.
            let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
            let pruned = format!("pruned/{f}");
            if size(&pruned)? + 8192 > size(f)? {
                return Err(format!("{f} ({ld}) did not shrink by two pages").into());
            }
            readelf_clean(d, &pruned)?;
        }
        for prog in [&shared, &pie, &nopie] {
            let before = output(d, prog, &[])?;
            let dropped_gone: String = before
                .lines()
                .filter(|l| !l.contains("gfx1030") && !l.contains("gfx942"))
                .map(|l| format!("{l}\n"))
                .collect();
            if before.matches("entry hipv4").count() != 6
                || !before.contains("ccob v3")
                || !before.contains("run 3")
            {
                return Err(format!("{prog} before pruning printed:\n{before}").into());
            }
            // A pruned program keeps its mode: it runs as it is.
            let exe = format!("pruned/{prog}");
            let after = output(d, &exe, &[])?;
            same(&format!("{prog} ({ld}) after pruning"), after, dropped_gone)?;
        }
    }
    Ok(())
}

/// Links the HIP objects of [`hip_programs_register_only_the_kept_images`] with `-fuse-ld=ld` into a
/// shared library, a program that loads it, and PIE and non-PIE programs
/// holding them; returns their names in that order.
fn link_programs(d: &Path, ld: &str) -> Result<[String; 4], Failed> {
    let rpath = "-Wl,-rpath,$ORIGIN";
    let main = src("main.c");
    let fuse = format!("-fuse-ld={ld}");
    let lib = format!("libk{ld}.so");
    let clang = llvm("clang");
    run(
        &clang,
        &[
            &fuse,
            "-shared",
            "k1.o",
            "k2.o",
            "-L.",
            "-lhipstub",
            "-o",
            &lib,
        ],
        d,
    )
    .ok()?;
    let shared = format!("app-{ld}");
    let link_lib = format!("-lk{ld}");
    run(
        &clang,
        &[
            &fuse,
            &main,
            "-L.",
            &link_lib,
            "-lhipstub",
            rpath,
            "-o",
            &shared,
        ],
        d,
    )
    .ok()?;
    let pie = format!("pie-{ld}");
    run(
        &clang,
        &[
            &fuse,
            &main,
            "k1.o",
            "k2.o",
            "-L.",
            "-lhipstub",
            rpath,
            "-o",
            &pie,
        ],
        d,
    )
    .ok()?;
    let nopie = format!("nopie-{ld}");
    run(
        &clang,
        &[
            &fuse,
            "-no-pie",
            &main,
            "k1.o",
            "k2.o",
            "-L.",
            "-lhipstub",
            rpath,
            "-o",
            &nopie,
        ],
        d,
    )
    .ok()?;
    Ok([lib, shared, pie, nopie])
}
