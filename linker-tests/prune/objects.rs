//! `offload-kit prune` on relocatable objects and static archives built
//! here by clang-22: HIP with the old driver (`.hip_fatbin`, plain and
//! `--offload-compress`ed; `-fgpu-rdc` bundle sections) and the new one
//! (`.hip_fatbin`; `-fgpu-rdc` OffloadBinaries in `.llvm.offloading`),
//! and OpenMP for two GPUs. Each pruned object is byte for byte what
//! llvm-objcopy 22 writes for the same edit (`--update-section` with the
//! section we wrote, or `--remove-section`), lists exactly the kept images
//! with their original bytes, and reads cleanly; archives (GNU ar and
//! llvm-ar) hold the pruned members, keep a valid symbol table and link
//! into programs that register only the kept images; an OpenMP program
//! offloading to the host CPU, pruned of its GPU image at the object,
//! still runs its regions on libomptarget.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::{hashed, output, readelf_clean, src};
use crate::util::{llvm, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(
            hip_and_openmp_objects_are_what_llvm_objcopy_writes,
            &["clang", "clang++", "llvm-objcopy", "llvm-readelf"],
        ),
        trial!(archives_link_and_register_only_the_kept_images, &[
                "clang",
                "clang++",
                "cc",
                "ar",
                "llvm-ar",
                "llvm-nm",
                "ld.bfd",
                "ld.lld",
                "ld.mold",
                "/usr/lib/x86_64-linux-gnu/libzstd.so",
            ]),
        trial!(openmp_cpu_offload_runs_after_its_gpu_image_goes, &[
                "clang",
                "/usr/lib/llvm-22/lib/libomptarget.so.22.1",
                "/usr/lib/llvm-22/lib/libomp.so",
            ]),
        trial!(hard_links_split_unless_kept, &["clang++"]),
        trial!(refusals_leave_no_output, &["clang++", "ld.bfd", "ar"]),
    ]
}

const GPUS: [&str; 3] = [
    "--offload-arch=gfx90a",
    "--offload-arch=gfx1030",
    "--offload-arch=gfx942",
];

/// The clang arguments that compile the HIP file `source` (a path) for
/// [`GPUS`] into `object`, position-independent, with `extra` flags.
pub(super) fn hip_args<'a>(source: &'a str, object: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["-x", "hip", "-nogpulib", "-nogpuinc", "-fPIC", "-c"];
    args.extend(GPUS);
    args.extend(extra);
    args.extend([source, "-o", object]);
    args
}

/// Compiles `linker-tests/prune/<source>` as HIP for [`GPUS`] into `object`
/// in `d`, with `extra` flags.
fn hip(d: &Path, source: &str, object: &str, extra: &[&str]) -> Result<(), Failed> {
    let source = src(source);
    run(&llvm("clang++"), &hip_args(&source, object, extra), d).ok()?;
    Ok(())
}

/// The objects of the HIP kinds, each with the flags that make it.
const HIP_OBJECTS: [(&str, &str, &[&str]); 5] = [
    ("k1.o", "k1.hip", &["--offload-compress"]),
    ("k2.o", "k2.hip", &[]),
    ("rdc.o", "k2.hip", &["-fgpu-rdc"]),
    ("new.o", "k2.hip", &["--offload-new-driver"]),
    ("newrdc.o", "k2.hip", &["--offload-new-driver", "-fgpu-rdc"]),
];

/// `images` less those of the dropped GPUs.
fn kept_of(images: &[(String, String)]) -> Vec<(String, String)> {
    images
        .iter()
        .filter(|(what, _)| !what.contains("gfx1030") && !what.contains("gfx942"))
        .cloned()
        .collect()
}

fn hip_and_openmp_objects_are_what_llvm_objcopy_writes() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    for (object, source, extra) in HIP_OBJECTS {
        hip(d, source, object, extra)?;
    }
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests/wrap/app.c");
    run(
        &llvm("clang"),
        &[
            "-fopenmp",
            "--offload-arch=gfx90a,gfx1030",
            "-nogpulib",
            "-c",
            &app.to_string_lossy(),
            "-o",
            "omp.o",
        ],
        d,
    )
    .ok()?;
    // The section each pruned object's containers lie in; None: bundle
    // sections removed instead.
    let cases = [
        ("k1.o", Some(".hip_fatbin")),
        ("k2.o", Some(".hip_fatbin")),
        ("rdc.o", None),
        ("new.o", Some(".hip_fatbin")),
        ("newrdc.o", Some(".llvm.offloading")),
        ("omp.o", Some(".llvm.offloading")),
    ];
    for (object, section) in cases {
        let before = hashed(d, object)?;
        let pruned = format!("pruned-{object}");
        run(
            &ours(),
            &["prune", "--keep", "gfx90a", "-o", &pruned, object],
            d,
        )
        .ok()?;
        let reference = format!("llvm-{object}");
        match section {
            Some(s) => {
                let dumped = format!("{object}.section");
                run(
                    &llvm("llvm-objcopy"),
                    &["--dump-section", &format!("{s}={dumped}"), &pruned],
                    d,
                )
                .ok()?;
                run(
                    &llvm("llvm-objcopy"),
                    &[
                        "--update-section",
                        &format!("{s}={dumped}"),
                        object,
                        &reference,
                    ],
                    d,
                )
                .ok()?;
            }
            None => {
                let mut args = Vec::new();
                for gpu in ["gfx1030", "gfx942"] {
                    args.push(format!(
                        "--remove-section=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--{gpu}"
                    ));
                }
                args.extend([object.to_string(), reference.clone()]);
                run(&llvm("llvm-objcopy"), &args, d).ok()?;
            }
        }
        let ours_bytes = std::fs::read(d.join(&pruned))?;
        let llvm_bytes = std::fs::read(d.join(&reference))?;
        if ours_bytes != llvm_bytes {
            return Err(
                format!("{object}: the pruned object is not what llvm-objcopy writes").into(),
            );
        }
        let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
        if size(&pruned)? >= size(object)? {
            return Err(format!("{object}: the pruned object did not shrink").into());
        }
        same(
            &format!("{object}: the images left"),
            hashed(d, &pruned)?,
            kept_of(&before),
        )?;
        if kept_of(&before).len() == before.len() || kept_of(&before).is_empty() {
            return Err(format!("{object}: the case prunes nothing: {before:?}").into());
        }
        readelf_clean(d, &pruned)?;
    }
    Ok(())
}

fn archives_link_and_register_only_the_kept_images() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip(d, "k1.hip", "k1.o", &["--offload-compress"])?;
    hip(d, "k2.hip", "k2.o", &[])?;
    run(
        Path::new("/usr/bin/cc"),
        &[
            "-shared",
            "-fPIC",
            &src("hip_stub.c"),
            "-lzstd",
            "-o",
            "libhipstub.so",
        ],
        d,
    )
    .ok()?;
    for o in ["k1.o", "k2.o"] {
        run(
            &ours(),
            &["prune", "--keep", "gfx90a", "-o", &format!("p-{o}"), o],
            d,
        )
        .ok()?;
    }
    run(
        Path::new("/usr/bin/ar"),
        &["rcs", "libgnu.a", "k1.o", "k2.o"],
        d,
    )
    .ok()?;
    run(&llvm("llvm-ar"), &["rcs", "libllvm.a", "k1.o", "k2.o"], d).ok()?;
    std::fs::create_dir(d.join("pruned"))?;
    for lib in ["libgnu.a", "libllvm.a"] {
        run(
            &ours(),
            &["prune", "--keep", "gfx90a", "-d", "pruned", lib],
            d,
        )
        .ok()?;
        let p = format!("pruned/{lib}");
        // Same members, each the object pruned on its own.
        let list = |f: &str| run(Path::new("/usr/bin/ar"), &["t", f], d).ok();
        same(
            &format!("{lib} members"),
            list(&p)?.stdout,
            list(lib)?.stdout,
        )?;
        for o in ["k1.o", "k2.o"] {
            let m = run(Path::new("/usr/bin/ar"), &["p", &p, o], d).ok()?;
            if m.stdout != std::fs::read(d.join(format!("p-{o}")))? {
                return Err(format!("{lib}({o}) is not {o} pruned on its own").into());
            }
        }
        let map = |f: &str| run(&llvm("llvm-nm"), &["--print-armap", f], d).ok();
        same(
            &format!("{lib} symbol map"),
            map(&p)?.stdout,
            map(lib)?.stdout,
        )?;
        for ld in ["bfd", "lld", "mold"] {
            let link = |archive: &str, exe: &str| {
                run(
                    &llvm("clang"),
                    &[
                        &format!("-fuse-ld={ld}"),
                        &src("main.c"),
                        archive,
                        "-L.",
                        "-lhipstub",
                        "-Wl,-rpath,$ORIGIN",
                        "-o",
                        exe,
                    ],
                    d,
                )
                .ok()
            };
            let (exe, pexe) = (format!("{lib}-{ld}"), format!("{lib}-{ld}-pruned"));
            link(lib, &exe)?;
            link(&p, &pexe)?;
            let before = output(d, &exe, &[])?;
            let want: String = before
                .lines()
                .filter(|l| !l.contains("gfx1030") && !l.contains("gfx942"))
                .map(|l| format!("{l}\n"))
                .collect();
            if before.matches("entry hipv4").count() != 6 {
                return Err(format!("{exe} printed:\n{before}").into());
            }
            same(&format!("{pexe} output"), output(d, &pexe, &[])?, want)?;
        }
    }
    thin_archive(d)
}

/// A thin archive pruned in place: its member files are pruned where they
/// lie, the archive records their new sizes, and a program links from it.
fn thin_archive(d: &Path) -> Result<(), Failed> {
    std::fs::create_dir(d.join("thin"))?;
    for o in ["k1.o", "k2.o"] {
        std::fs::copy(d.join(o), d.join("thin").join(o))?;
    }
    let t = d.join("thin");
    run(
        Path::new("/usr/bin/ar"),
        &["rcsT", "libthin.a", "k1.o", "k2.o"],
        &t,
    )
    .ok()?;
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", "libthin.a"],
        &t,
    )
    .ok()?;
    for o in ["k1.o", "k2.o"] {
        if std::fs::read(t.join(o))? != std::fs::read(d.join(format!("p-{o}")))? {
            return Err(format!("thin/{o} is not {o} pruned on its own").into());
        }
    }
    run(
        &llvm("clang"),
        &[
            &src("main.c"),
            "-Wl,--whole-archive",
            "thin/libthin.a",
            "-Wl,--no-whole-archive",
            "-L.",
            "-lhipstub",
            "-Wl,-rpath,$ORIGIN",
            "-o",
            "thin-app",
        ],
        d,
    )
    .ok()?;
    let got = output(d, "thin-app", &[])?;
    if got.matches("entry hipv4").count() != 2 || got.contains("gfx1030") {
        return Err(
            format!("the program linked from the pruned thin archive printed:\n{got}").into(),
        );
    }
    Ok(())
}

fn openmp_cpu_offload_runs_after_its_gpu_image_goes() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let wrap = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests/wrap");
    let targets = "-fopenmp-targets=x86_64-unknown-linux-gnu";
    run(
        &llvm("clang"),
        &[
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu,amdgcn-amd-amdhsa",
            "-Xopenmp-target=amdgcn-amd-amdhsa",
            "-march=gfx90a",
            "-nogpulib",
            "-c",
            &wrap.join("app.c").to_string_lossy(),
            "-o",
            "app.o",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("clang"),
        &[
            "-fopenmp",
            targets,
            "-c",
            &wrap.join("main.c").to_string_lossy(),
            "-o",
            "main.o",
        ],
        d,
    )
    .ok()?;
    run(
        &ours(),
        &["prune", "--drop", "gfx90a", "-o", "app-cpu.o", "app.o"],
        d,
    )
    .ok()?;
    let before = hashed(d, "app.o")?;
    let left = hashed(d, "app-cpu.o")?;
    let cpu: Vec<_> = before
        .iter()
        .filter(|(w, _)| !w.contains("gfx90a"))
        .cloned()
        .collect();
    if before.len() != 2 || left != cpu {
        return Err(format!("before pruning: {before:?}; after: {left:?}").into());
    }
    std::fs::create_dir(d.join("lib"))?;
    std::os::unix::fs::symlink(
        "/usr/lib/llvm-22/lib/libomptarget.so.22.1",
        d.join("lib/libomptarget.so"),
    )?;
    run(
        &llvm("clang"),
        &[
            "-fopenmp",
            targets,
            "app-cpu.o",
            "main.o",
            "-Llib",
            "-o",
            "app",
        ],
        d,
    )
    .ok()?;
    let out = output(
        d,
        "app",
        &[
            ("LD_LIBRARY_PATH", "/usr/lib/llvm-22/lib"),
            ("LIBOMPTARGET_INFO", "16"),
        ],
    )?;
    for k in 1..=4 {
        if !out.contains(&format!("region {k} on_device=1")) {
            return Err(format!("region {k} did not run on the offload device:\n{out}").into());
        }
    }
    Ok(())
}

/// Refused, nothing written: a relocatable object whose second bundle is
/// pointed at past the first (two objects merged by `ld -r`: pruning the
/// first would move the second), and a thin archive without --in-place.
fn refusals_leave_no_output() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip(d, "k1.hip", "k1.o", &[])?;
    hip(d, "k2.hip", "k2.o", &[])?;
    run(
        Path::new("/usr/bin/ld.bfd"),
        &["-r", "k1.o", "k2.o", "-o", "both.o"],
        d,
    )
    .ok()?;
    run(
        Path::new("/usr/bin/ar"),
        &["rcsT", "thin.a", "k1.o", "k2.o"],
        d,
    )
    .ok()?;
    for (input, says) in [
        ("both.o", "the section symbol of '.hip_fatbin'"),
        ("both.o", "pruning would move what it points at"),
        ("thin.a", "thin archive"),
    ] {
        let r = run(
            &ours(),
            &["prune", "--keep", "gfx90a", "-o", "out", input],
            d,
        );
        same(&format!("{input}: exit code"), r.code, 2)?;
        if !r.stderr.contains(says) || !r.stderr.contains(input) {
            return Err(format!("{input}: the error says: {}", r.stderr).into());
        }
        if d.join("out").exists() {
            return Err(format!("{input}: an output was written").into());
        }
    }
    Ok(())
}

/// `--in-place` on a file with another hard link: by default the file
/// becomes a new one and the other link keeps the old bytes; with
/// `--keep-hard-links` both names see the pruned file (one inode), with
/// the old times. The pruned bytes are the same either way.
fn hard_links_split_unless_kept() -> Result<(), Failed> {
    use std::os::unix::fs::MetadataExt;
    let t = tempdir();
    let d = t.path();
    hip(d, "k2.hip", "k2.o", &[])?;
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "want.o", "k2.o"],
        d,
    )
    .ok()?;
    let want = std::fs::read(d.join("want.o"))?;
    let old = std::fs::read(d.join("k2.o"))?;
    for keep in [false, true] {
        std::fs::copy(d.join("k2.o"), d.join("a.o"))?;
        let _ = std::fs::remove_file(d.join("b.o"));
        std::fs::hard_link(d.join("a.o"), d.join("b.o"))?;
        let mtime =
            std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        std::fs::File::options()
            .write(true)
            .open(d.join("a.o"))?
            .set_modified(mtime)?;
        let mut args = vec!["prune", "--keep", "gfx90a", "--in-place", "--json", "a.o"];
        if keep {
            args.push("--keep-hard-links");
        }
        let r = run(&ours(), &args, d).ok()?;
        let doc: serde_json::Value = serde_json::from_slice(&r.stdout)?;
        same(
            "hard_links reported",
            doc["files"][0]["hard_links"].as_u64(),
            Some(2),
        )?;
        same("a.o pruned", std::fs::read(d.join("a.o"))? == want, true)?;
        let (a, b) = (
            std::fs::metadata(d.join("a.o"))?,
            std::fs::metadata(d.join("b.o"))?,
        );
        same("a.o's modification time", a.modified()?, mtime)?;
        if keep {
            same("one inode", a.ino(), b.ino())?;
            same(
                "b.o pruned through the link",
                std::fs::read(d.join("b.o"))? == want,
                true,
            )?;
        } else {
            same("two inodes", a.ino() == b.ino(), false)?;
            same(
                "b.o kept the old bytes",
                std::fs::read(d.join("b.o"))? == old,
                true,
            )?;
        }
    }
    Ok(())
}
