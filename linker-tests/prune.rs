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

use crate::real_libs::{CUOBJDUMP, CUPY, DEB, WHEEL, downloads, images};
use crate::util::{llvm, md5_hex, ours, ours_json, run, same, tempdir, trial, unzip};

mod cuda;
mod debs;
mod nvidia;
mod objects;
mod openmp;
mod removed;
mod shrink;
mod tree;
mod wheels;

pub fn tests() -> Vec<Trial> {
    let mut trials = vec![
        trial(
            "prune::real_libs::rocrand_to_gfx90a",
            &[
                "bash",
                "/usr/bin/python3",
                "dpkg-deb",
                "clang-offload-bundler",
                "llvm-objcopy",
                "llvm-readelf",
            ],
            rocrand,
        ),
        trial(
            "prune::real_libs::curand_to_sm_80",
            &[
                "bash",
                "/usr/bin/python3",
                CUOBJDUMP,
                "llvm-objcopy",
                "llvm-readelf",
            ],
            curand,
        ),
        trial(
            "prune::real_libs::cupy_wheel_to_sm_86",
            &["/usr/bin/python3"],
            cupy_wheel,
        ),
        trial(
            "prune::real_libs::curand_wheel_installs_with_pip",
            &["/usr/bin/python3"],
            curand_wheel,
        ),
        trial(
            "prune::hip_programs_register_only_the_kept_images",
            &[
                "clang",
                "clang++",
                "cc",
                "ld.bfd",
                "ld.lld",
                "ld.mold",
                "/usr/lib/x86_64-linux-gnu/libzstd.so",
                "/usr/include/zstd.h",
            ],
            hip_programs,
        ),
    ];
    trials.extend(objects::tests());
    trials.extend(cuda::tests());
    trials.extend(debs::tests());
    trials.extend(nvidia::tests());
    trials.extend(openmp::tests());
    trials.extend(shrink::tests());
    trials.extend(wheels::tests());
    trials.extend(tree::tests());
    trials.extend(removed::tests());
    trials
}

/// A file of `linker-tests/prune/`.
fn src(name: &str) -> String {
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

/// HIP built here by clang-22 for gfx90a, gfx1030 and gfx942 (two
/// translation units: two bundles, each registered at start-up, the first
/// compressed with `--offload-compress`), linked by
/// GNU ld, lld and mold into a shared library and into PIE and non-PIE
/// executables, run with a stand-in runtime that prints what each
/// registration hands it (every bundle entry's ID, size and a hash of its
/// bytes, a CCOB decompressed first, and the kernels). Pruned to gfx90a, each program prints exactly
/// what it printed before less the gfx1030 and gfx942 entries: the same
/// bundles, at the same addresses, the kept code objects unchanged.
fn hip_programs() -> Result<(), Failed> {
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

/// Links the HIP objects of [`hip_programs`] with `-fuse-ld=ld` into a
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

fn rocrand() -> Result<(), Failed> {
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

fn curand() -> Result<(), Failed> {
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

/// NVIDIA's cuRAND wheel pruned to sm_80: smaller, every RECORD line
/// matches its file (hash and size, checked here), `pip install` takes it
/// into a fresh virtual environment, and the library installed is the
/// pruned one (only sm_80 cubins, the same bytes as before).
/// `wheel` copied to `d/in.whl` and pruned with `--keep rule` to
/// `d/name`: smaller, and its RECORD checks for at least `records` files.
pub(crate) fn pruned_wheel(
    d: &Path,
    wheel: &Path,
    name: &str,
    rule: &str,
    records: u32,
) -> Result<(), Failed> {
    std::fs::copy(wheel, d.join("in.whl"))?;
    run(&ours(), &["prune", "--keep", rule, "-o", name, "in.whl"], d).ok()?;
    let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
    if size(name)? >= size("in.whl")? {
        return Err("the wheel did not shrink".into());
    }
    if record_checks(d, name)? < records {
        return Err("RECORD lists too few files".into());
    }
    Ok(())
}

/// Checks every line of `wheel`'s RECORD as pip does (hash and size of
/// each file); returns how many files it lists with a hash.
pub(crate) fn record_checks(d: &Path, wheel: &str) -> Result<u32, Failed> {
    let verify = "import base64, csv, hashlib, io, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
rec = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')][0]
n = 0
for row in csv.reader(io.StringIO(z.read(rec).decode())):
    if not row or not row[1]:
        continue
    algo, want = row[1].split('=', 1)
    data = z.read(row[0])
    got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b'=').decode()
    assert got == want and int(row[2]) == len(data), row[0]
    n += 1
print(n)
";
    let r = run(Path::new("/usr/bin/python3"), &["-c", verify, wheel], d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .trim()
        .parse()
        .unwrap_or(0))
}

/// CuPy's wheel (CUDA 13; zstd-compressed cubins for sm_75 to sm_120 and
/// PTX, in several extension modules) pruned to sm_86: smaller, its RECORD
/// right, and each module holding its sm_80 and sm_86 cubins with their
/// bytes and no other cubin (no PTX an 8.6 device could compile is left
/// out: the newest such of each fat binary stays).
fn cupy_wheel() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    pruned_wheel(d, &cache.join(CUPY), CUPY, "sm_86", 10)?;
    let before = images(&ours_json(
        &["inspect", "--json", "--hash=md5", "in.whl"],
        d,
    )?);
    let after = images(&ours_json(&["inspect", "--json", "--hash=md5", CUPY], d)?);
    let mut modules = 0;
    for (member, imgs) in &before {
        // `"sm_100" "cubin"` → 100.
        let sm = |what: &str| -> u32 {
            let digits: String = what
                .split("\"sm_")
                .nth(1)
                .unwrap_or_default()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().unwrap_or(0)
        };
        let cubins: Vec<_> = imgs
            .iter()
            .filter(|(w, _)| w.contains("cubin") && [80, 86].contains(&sm(w)))
            .cloned()
            .collect();
        let got = after.get(member).cloned().unwrap_or_default();
        let got_cubins: Vec<_> = got
            .iter()
            .filter(|(w, _)| w.contains("cubin"))
            .cloned()
            .collect();
        same(&format!("{member}: cubins kept"), got_cubins, cubins)?;
        for ptx in got.iter().filter(|(w, _)| w.contains("ptx")) {
            if !imgs.contains(ptx) || sm(&ptx.0) > 86 {
                return Err(format!("{member}: PTX {ptx:?} kept").into());
            }
        }
        modules += 1;
    }
    if modules < 3 {
        return Err(format!("only {modules} modules with device code").into());
    }
    Ok(())
}

fn curand_wheel() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(WHEEL), d.join("in.whl"))?;
    // pip wants a wheel's own name.
    run(
        &ours(),
        &["prune", "--keep", "sm_80", "-o", WHEEL, "in.whl"],
        d,
    )
    .ok()?;
    let (before, after) = (
        std::fs::metadata(d.join("in.whl"))?.len(),
        std::fs::metadata(d.join(WHEEL))?.len(),
    );
    if after >= before {
        return Err(format!("the wheel did not shrink: {before} -> {after} bytes").into());
    }
    if record_checks(d, WHEEL)? < 2 {
        return Err("RECORD lists too few files".into());
    }
    run(Path::new("/usr/bin/python3"), &["-m", "venv", "venv"], d).ok()?;
    run(
        &d.join("venv/bin/pip"),
        &["install", "-q", "--no-index", WHEEL],
        d,
    )
    .ok()?;
    let site = std::fs::read_dir(d.join("venv/lib"))?
        .next()
        .ok_or("no site-packages")??
        .path()
        .join("site-packages/nvidia/curand/lib/libcurand.so.10");
    let installed = site.to_string_lossy();
    unzip(
        &d.join("in.whl"),
        "nvidia/curand/lib/libcurand.so.10",
        d,
        "lib.so",
    )?;
    // Smaller by about the dropped images, compressed: each deflated on its
    // own (zlib level 6), within 10 %.
    run(&ours(), &["extract", "lib.so", "-o", "images"], d).ok()?;
    let deflate = "import os, sys, zlib
print(sum(len(zlib.compress(open(os.path.join(sys.argv[1], f), 'rb').read(), 6))
          for f in os.listdir(sys.argv[1]) if 'sm_80' not in f))
";
    let r = run(Path::new("/usr/bin/python3"), &["-c", deflate, "images"], d).ok()?;
    let dropped: u64 = String::from_utf8_lossy(&r.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let shrank = before - after;
    if dropped == 0 || shrank.abs_diff(dropped) * 10 > dropped {
        return Err(format!(
            "the wheel shrank by {shrank} bytes; the dropped images deflate to {dropped}"
        )
        .into());
    }
    let want: Vec<_> = hashed(d, "lib.so")?
        .into_iter()
        .filter(|(what, _)| what.contains("\"sm_80\""))
        .collect();
    same(
        "images of the installed library",
        hashed(d, &installed)?,
        want,
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
