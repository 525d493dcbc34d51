//! `offload-kit prune` on real libraries (the ones `real_libs` downloads and
//! caches): librocrand from Debian (one HIP bundle of 7 code objects in
//! `.hip_fatbin`) pruned to gfx90a, libcurand from NVIDIA's wheel (11 CUDA
//! fatbins in `.nv_fatbin`) pruned to sm_80. After pruning, the kept images
//! are the original bytes, the reference tools read the result
//! (`clang-offload-bundler -list`/`-unbundle`, `cuobjdump`, `llvm-readelf`
//! without a warning), nothing outside the fat-binary section changed, the
//! library still loads, and the disk usage drops by at least 90 % of the
//! dropped bytes. Refusals leave no output.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{CUOBJDUMP, DEB, WHEEL, downloads, images};
use crate::util::{llvm, md5_hex, ours, ours_json, run, same, tempdir, unzip};
pub(crate) use real_wheels::pruned_wheel;

test_files! {
    objects,
    cuda,
    debs,
    nvidia,
    openmp,
    shrink,
    wheels,
    pub(crate) tree,
    removed,
    pub(crate) companion,
    rocblas,
    pub(crate) conda,
    pub(crate) images,
    split,
    split_installers,
    split_deb,
    split_conda,
    split_tree,
    split_oci,
    split_docker,
    real_rpm_sif,
}
mod hip_programs;
mod real_wheels;

pub fn tests() -> Vec<Trial> {
    let mut trials = vec![
        trial!(rocrand_to_gfx90a, &[
                "bash",
                "/usr/bin/python3",
                "dpkg-deb",
                "clang-offload-bundler",
                "llvm-objcopy",
                "llvm-readelf",
            ]),
        trial!(curand_to_sm_80, &[
                "bash",
                "/usr/bin/python3",
                CUOBJDUMP,
                "llvm-objcopy",
                "llvm-readelf",
            ]),
        trial!(real_wheels::cupy_wheel_to_sm_86, &["/usr/bin/python3"]),
        trial!(real_wheels::bitsandbytes_wheel_leaves_its_sycl_libraries, &[
                "/usr/bin/python3",
                "/opt/offload-kit/cuda-tools/bin/cuobjdump",
            ]),
        trial!(real_wheels::curand_wheel_installs_with_pip, &["/usr/bin/python3"]),
        trial!(hip_programs::hip_programs_register_only_the_kept_images, &[
                "clang",
                "clang++",
                "cc",
                "ld.bfd",
                "ld.lld",
                "ld.mold",
                "/usr/lib/x86_64-linux-gnu/libzstd.so",
                "/usr/include/zstd.h",
            ]),
    ];
    trials.extend(file_trials());
    trials
}

/// A file of `linker-tests/prune/`.
pub(crate) fn src(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/prune")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Runs `prog` in `dir`; its standard output, or a failure with what it
/// said.
fn output(dir: &Path, prog: &str, env: &[(&str, &str)]) -> Result<String, Failed> {
    let out = std::process::Command::new(dir.join(prog))
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()?;
    if !out.status.success() {
        return Err(format!("{prog} failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Bytes a file takes on disk.
pub(crate) fn disk(p: &Path) -> Result<u64, Failed> {
    Ok(std::fs::metadata(p)?.blocks() * 512)
}

/// `llvm-readelf -a` reads `file` without a warning.
fn readelf_clean(dir: &Path, file: &str) -> Result<(), Failed> {
    let r = run(&llvm("llvm-readelf"), &["-a", file], dir);
    same("llvm-readelf exit code", r.code, 0)?;
    same("llvm-readelf warnings", r.stderr.as_str(), "")
}

/// `a` and `b` are the same outside `section` (llvm-objcopy removes it
/// from both, and the results are compared).
fn same_outside(dir: &Path, section: &str, a: &str, b: &str) -> Result<(), Failed> {
    for (i, f) in [a, b].iter().enumerate() {
        run(
            &llvm("llvm-objcopy"),
            &["-R", section, f, &format!("without.{i}")],
            dir,
        )
        .ok()?;
    }
    let read = |i: usize| std::fs::read(dir.join(format!("without.{i}")));
    same(
        &format!("the files without {section}"),
        md5_hex(&read(0)?),
        md5_hex(&read(1)?),
    )
}

/// The device images of `file` (target or bundle ID, md5).
pub(crate) fn hashed(dir: &Path, file: &str) -> Result<Vec<(String, String)>, Failed> {
    let doc = ours_json(&["inspect", "--json", "--hash=md5", file], dir)?;
    Ok(images(&doc).into_values().next().unwrap_or_default())
}

/// Bytes of the images `prune --json` says it dropped.
pub(crate) fn dropped_bytes(doc: &serde_json::Value) -> u64 {
    doc["files"][0]["dropped"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| g["bytes"].as_u64().unwrap_or(0))
        .sum()
}

/// `lib.so` (librocrand) and the shrunk `out.so` loaded (`dlopen`, through
/// Python's ctypes) against a stand-in `libamdhip64.so.5`: `hip_stub.c`,
/// which prints every bundle entry registered, plus a function returning 0
/// for each other HIP symbol the library imports, all in the `hip_4.2`
/// version node they are imported from. The pruned library loads and
/// registers what the original does less the entries of other GPUs.
fn loads_with_a_stand_in_hip_runtime(d: &Path) -> Result<(), Failed> {
    let nm = run(&llvm("llvm-nm"), &["-D", "--undefined-only", "lib.so"], d).ok()?;
    let stub = std::fs::read_to_string(src("hip_stub.c"))?;
    let mut extra = String::new();
    for line in String::from_utf8_lossy(&nm.stdout).lines() {
        let Some((name, "hip_4.2")) = line
            .split_whitespace()
            .last()
            .and_then(|s| s.split_once('@'))
        else {
            continue;
        };
        if !stub.contains(&format!("{name}(")) {
            extra.push_str(&format!("int {name}(void) {{ return 0; }}\n"));
        }
    }
    std::fs::write(d.join("hip_rest.c"), extra)?;
    std::fs::write(d.join("hip.map"), "hip_4.2 { global: *; };\n")?;
    std::fs::create_dir_all(d.join("hip"))?;
    run(
        Path::new("/usr/bin/cc"),
        &[
            "-shared",
            "-fPIC",
            &src("hip_stub.c"),
            "hip_rest.c",
            "-lzstd",
            "-Wl,--version-script=hip.map",
            "-Wl,-soname,libamdhip64.so.5",
            "-o",
            "hip/libamdhip64.so.5",
        ],
        d,
    )
    .ok()?;
    let load = |lib: &str| -> Result<String, Failed> {
        let out = std::process::Command::new("/usr/bin/python3")
            .args(["-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", lib])
            .env("LD_LIBRARY_PATH", d.join("hip"))
            .current_dir(d)
            .output()?;
        if !out.status.success() {
            return Err(format!("loading {lib}: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let before = load("./lib.so")?;
    if before.matches("entry hipv4").count() != 7 {
        return Err(format!("librocrand registered:\n{before}").into());
    }
    let want: String = before
        .lines()
        .filter(|l| !l.contains("entry hipv4") || l.contains("gfx90a"))
        .map(|l| format!("{l}\n"))
        .collect();
    same(
        "what the pruned librocrand registers",
        load("./out.so")?,
        want,
    )
}

/// `out` is smaller than `input` by at least 90 % of the `dropped` image
/// bytes, on disk and in its apparent size (the file itself shrank).
pub(crate) fn shrunk_by(d: &Path, input: &str, out: &str, dropped: u64) -> Result<(), Failed> {
    let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
    let apparent = size(input)?.saturating_sub(size(out)?);
    let on_disk = disk(&d.join(input))?.saturating_sub(disk(&d.join(out))?);
    for (what, freed) in [("apparent size", apparent), ("disk usage", on_disk)] {
        if freed * 10 < dropped * 9 {
            return Err(format!("{what} dropped by {freed} bytes, under 90 % of {dropped}").into());
        }
    }
    Ok(())
}

/// `--no-shrink` (`lib.so` to `inplace-keep.so`, keeping `rule`): the file
/// keeps its size and everything outside `section`, and the freed bytes
/// are holes (disk usage drops by 90 % of `dropped`).
fn kept_in_place(d: &Path, rule: &str, section: &str, dropped: u64) -> Result<(), Failed> {
    let r = run(
        &ours(),
        &[
            "prune",
            "--no-shrink",
            "--keep",
            rule,
            "-o",
            "inplace-keep.so",
            "lib.so",
        ],
        d,
    )
    .ok()?;
    same(
        "--no-shrink says nothing of shrinking",
        String::from_utf8_lossy(&r.stdout).contains("not shrunk"),
        false,
    )?;
    same(
        "size with --no-shrink",
        std::fs::metadata(d.join("inplace-keep.so"))?.len(),
        std::fs::metadata(d.join("lib.so"))?.len(),
    )?;
    let freed = disk(&d.join("lib.so"))?.saturating_sub(disk(&d.join("inplace-keep.so"))?);
    if freed * 10 < dropped * 9 {
        return Err(format!("disk usage dropped by {freed} bytes, under 90 % of {dropped}").into());
    }
    readelf_clean(d, "inplace-keep.so")?;
    same_outside(d, section, "lib.so", "inplace-keep.so")
}

fn rocrand_to_gfx90a() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let deb = cache.join(DEB);
    run(
        Path::new("/usr/bin/dpkg-deb"),
        &[&*"-x".to_string(), &*deb.to_string_lossy(), "root"],
        d,
    )
    .ok()?;
    std::fs::copy(
        d.join("root/usr/lib/x86_64-linux-gnu/librocrand.so.1.1"),
        d.join("lib.so"),
    )?;
    let before = hashed(d, "lib.so")?;
    same("device images before", before.len(), 7)?;

    // A dry run says the same and writes nothing.
    let dry = ours_json(
        &["prune", "--keep", "gfx90a", "--dry-run", "--json", "lib.so"],
        d,
    )?;
    let doc = ours_json(
        &[
            "prune", "--keep", "gfx90a", "-o", "out.so", "--json", "lib.so",
        ],
        d,
    )?;
    same(
        "dropped, dry run and real",
        &dry["files"][0]["dropped"],
        &doc["files"][0]["dropped"],
    )?;
    let after = hashed(d, "out.so")?;
    let want: Vec<_> = before
        .iter()
        .filter(|(id, _)| id.contains("gfx90a"))
        .cloned()
        .collect();
    same("images kept, with their original bytes", &after, &want)?;
    same("images kept", after.len(), 2)?;
    let dropped = dropped_bytes(&doc);
    shrunk_by(d, "lib.so", "out.so", dropped)?;
    readelf_clean(d, "out.so")?;
    kept_in_place(d, "gfx90a", ".hip_fatbin", dropped)?;
    llvm_reads_the_pruned_bundle(d, before)?;
    loads_with_a_stand_in_hip_runtime(d)?;
    refusals_and_in_place(d)
}

fn curand_to_sm_80() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let wheel = cache.join(WHEEL);
    unzip(&wheel, "nvidia/curand/lib/libcurand.so.10", d, "lib.so")?;
    let before = hashed(d, "lib.so")?;
    let doc = ours_json(
        &[
            "prune", "--keep", "sm_80", "-o", "out.so", "--json", "lib.so",
        ],
        d,
    )?;
    let after = hashed(d, "out.so")?;
    let want: Vec<_> = before
        .iter()
        .filter(|(what, _)| what.contains("\"sm_80\""))
        .cloned()
        .collect();
    same("images kept, with their original bytes", &after, &want)?;
    if after.is_empty() {
        return Err("no sm_80 image kept".into());
    }
    // cuobjdump lists only the kept cubins (no PTX an 8.0 device could
    // compile: libcurand's is for sm_90).
    let list = run(Path::new(CUOBJDUMP), &["-lelf", "-lptx", "out.so"], d).ok()?;
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("file")).collect();
    same("cuobjdump's list", lines.len(), after.len())?;
    if let Some(l) = lines.iter().find(|l| !l.contains("sm_80")) {
        return Err(format!("cuobjdump lists {l}").into());
    }
    let dropped = dropped_bytes(&doc);
    shrunk_by(d, "lib.so", "out.so", dropped)?;
    readelf_clean(d, "out.so")?;
    kept_in_place(d, "sm_80", ".nv_fatbin", dropped)?;
    // It still loads and answers.
    let load = "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nv = ctypes.c_int()\nprint(l.curandGetVersion(ctypes.byref(v)), v.value)\n";
    let a = run(Path::new("/usr/bin/python3"), &["-c", load, "./lib.so"], d).ok()?;
    let b = run(Path::new("/usr/bin/python3"), &["-c", load, "./out.so"], d).ok()?;
    same(
        "curandGetVersion through the pruned library",
        b.stdout,
        a.stdout,
    )?;
    // Its host generator makes the same numbers.
    let numbers = |lib: &str| {
        run(
            Path::new("/usr/bin/python3"),
            &["-c", nvidia::HOST_GENERATOR, lib],
            d,
        )
        .ok()
        .map(|r| String::from_utf8_lossy(&r.stdout).into_owned())
    };
    let before = numbers("./lib.so")?;
    if !before.starts_with("0\n0\n0 [") {
        return Err(format!("cuRAND's host generator said: {before}").into());
    }
    same(
        "cuRAND's host generator in the pruned library",
        numbers("./out.so")?,
        before,
    )
}

/// LLVM's bundler reads the `.hip_fatbin` of `out.so` as it reads that of
/// `lib.so` (whose images are `before`).
fn llvm_reads_the_pruned_bundle(d: &Path, before: Vec<(String, String)>) -> Result<(), Failed> {
    // LLVM's bundler reads the pruned bundle: the host entry and the two
    // kept IDs, each unbundled to its original bytes.
    run(
        &llvm("llvm-objcopy"),
        &["-O", "binary", "--only-section=.hip_fatbin", "out.so", "fb"],
        d,
    )
    .ok()?;
    let list = run(
        &llvm("clang-offload-bundler"),
        &["-list", "-type=o", "-input=fb"],
        d,
    )
    .ok()?;
    let mut ids: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    ids.sort();
    same(
        "clang-offload-bundler -list",
        ids.iter().map(String::as_str).collect::<Vec<_>>(),
        vec![
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
            "host-x86_64-unknown-linux",
        ],
    )?;
    // Each kept ID unbundles as it did from the original section: LLVM 22
    // stops at this bundle's three-part host ID (`host-x86_64-unknown-linux`)
    // when it meets it before the ID it looks for, in both; what it does
    // unbundle is the original code object.
    run(
        &llvm("llvm-objcopy"),
        &[
            "-O",
            "binary",
            "--only-section=.hip_fatbin",
            "lib.so",
            "fb0",
        ],
        d,
    )
    .ok()?;
    let originals: BTreeMap<_, _> = before.into_iter().collect();
    let mut unbundled = 0;
    for id in ids.iter().filter(|i| i.starts_with("hipv4")) {
        let unbundle = |input: &str, out: &str| {
            run(
                &llvm("clang-offload-bundler"),
                &[
                    "-unbundle",
                    "-type=o",
                    &format!("-input={input}"),
                    &format!("-targets={id}"),
                    &format!("-output={out}"),
                ],
                d,
            )
        };
        let (old, new) = (unbundle("fb0", "one.0"), unbundle("fb", "one.1"));
        same(
            &format!("{id}: LLVM's unbundle exit code"),
            new.code,
            old.code,
        )?;
        same(
            &format!("{id}: LLVM's unbundle messages"),
            &new.stderr,
            &old.stderr,
        )?;
        if new.code == 0 {
            unbundled += 1;
            same(
                &format!("{id} unbundled by LLVM"),
                Some(&md5_hex(&std::fs::read(d.join("one.1"))?)),
                originals.get(id),
            )?;
        }
    }
    same("IDs LLVM unbundles", unbundled, 1)?;

    Ok(())
}

/// `--in-place`, and the cases that write nothing, on `lib.so`.
fn refusals_and_in_place(d: &Path) -> Result<(), Failed> {
    // --in-place keeps the mode and the times; a target no image serves
    // leaves a bundle empty (refused, file untouched); a typo is a usage
    // error; keeping every target leaves nothing to do.
    std::fs::copy(d.join("lib.so"), d.join("inplace.so"))?;
    {
        use std::os::unix::fs::PermissionsExt;
        let p = d.join("inplace.so");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751))?;
        let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_577_934_245);
        std::fs::File::options().write(true).open(&p)?.set_times(
            std::fs::FileTimes::new()
                .set_modified(then)
                .set_accessed(then),
        )?;
    }

    let m0 = std::fs::metadata(d.join("inplace.so"))?;
    run(
        &ours(),
        &["prune", "--keep", "gfx1030", "--in-place", "inplace.so"],
        d,
    )
    .ok()?;
    let m1 = std::fs::metadata(d.join("inplace.so"))?;
    same("mode kept", m1.mode() & 0o7777, 0o751)?;
    same("mtime kept", m1.mtime(), m0.mtime())?;
    same(
        "in place: one image left",
        hashed(d, "inplace.so")?.len(),
        1,
    )?;

    let r = run(
        &ours(),
        &["prune", "--keep", "gfx1100", "-o", "none.so", "lib.so"],
        d,
    );
    same("a bundle left without device images: exit code", r.code, 2)?;
    same("  and no output", d.join("none.so").exists(), false)?;
    if !r.stderr.contains("no device image") {
        return Err(format!("unexpected message: {}", r.stderr).into());
    }
    // Damaged data (the first entry's offset made absurd): an error, and
    // nothing written.
    let inspect = ours_json(&["inspect", "--json", "lib.so"], d)?;
    let at = inspect["files"][0]["containers"][0]["offset"]
        .as_u64()
        .ok_or("no bundle offset")?;
    let mut bad = std::fs::read(d.join("lib.so"))?;
    let field = usize::try_from(at + 32)?;
    bad[field..field + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
    std::fs::write(d.join("bad.so"), &bad)?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "badout.so", "bad.so"],
        d,
    );
    same("damaged data: exit code", r.code, 2)?;
    same("  and no output", d.join("badout.so").exists(), false)?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx9999", "-o", "typo.so", "lib.so"],
        d,
    );
    same("a rule naming nothing known: exit code", r.code, 2)?;
    let r = run(
        &ours(),
        &[
            "prune",
            "--keep",
            "gfx803,gfx900,gfx906,gfx908,gfx90a,gfx1030",
            "--dry-run",
            "lib.so",
        ],
        d,
    )
    .ok()?;
    if !String::from_utf8_lossy(&r.stdout).contains("nothing to remove") {
        return Err("keeping every target should leave nothing to remove".into());
    }
    Ok(())
}

/// After a killed `--in-place` run at `at`: each `.offload-kit-*`
/// temporary file left in `dir` must be a whole copy of the old package
/// or the new one (by MD5, `old` and `new`), never a partial file; they
/// are removed.
pub(crate) fn temporaries_whole(dir: &Path, at: &str, old: &str, new: &str) -> Result<(), Failed> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if !e.file_name().to_string_lossy().starts_with(".offload-kit-") {
            continue;
        }
        let h = md5_hex(&std::fs::read(e.path())?);
        if h != old && h != new {
            return Err(format!("{at}: {:?} is a partial file", e.file_name()).into());
        }
        std::fs::remove_file(e.path())?;
    }
    Ok(())
}
