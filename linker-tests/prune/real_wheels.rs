//! Real wheels pruned (CuPy's, NVIDIA's curand): smaller, their RECORDs
//! right as pip checks them, and what pip installs is the pruned library.

use std::path::Path;

use libtest_mimic::Failed;

use super::hashed;
use crate::real_libs::{CUPY, WHEEL, cuobjdump_cubins, downloads, images};
use crate::util::{ours, ours_json, run, same, tempdir, unzip};

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
pub(super) fn cupy_wheel_to_sm_86() -> Result<(), Failed> {
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

/// NVIDIA's cuRAND wheel pruned to sm_80: smaller, every RECORD line
/// matches its file (hash and size, checked here), `pip install` takes it
/// into a fresh virtual environment, and the library installed is the
/// pruned one (only sm_80 cubins, the same bytes as before).
pub(super) fn curand_wheel_installs_with_pip() -> Result<(), Failed> {
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

/// bitsandbytes 0.50.2's Linux wheel (CUDA, ROCm and Intel SYCL libraries
/// in one) pruned to sm_86: the two SYCL libraries, whose bundle sections
/// prune does not take out of a linked file, are named as left and stay
/// byte for byte; the wheel is written anyway (exit 1), its RECORD right,
/// each CUDA library holding what `cuobjdump` lists of the original for
/// sm_80 and sm_86 alone, and pip installs it. With `--strict` the one
/// refusal fails the wheel (exit 2) and nothing is written.
pub(super) fn bitsandbytes_wheel_leaves_its_sycl_libraries() -> Result<(), Failed> {
    let cache = crate::windows_libs::windows_downloads()?;
    let t = tempdir();
    let d = t.path();
    let wheel = crate::windows_libs::BNB_LINUX;
    std::fs::copy(cache.join(wheel), d.join("in.whl"))?;
    std::fs::create_dir(d.join("out"))?;
    let args = [
        "prune",
        "--keep",
        "sm_86",
        "-o",
        &format!("out/{wheel}"),
        "in.whl",
    ];
    let r = run(&ours(), &args, d);
    same("exit code", r.code, 1)?;
    let text = String::from_utf8_lossy(&r.stdout);
    let sycl = ["xpu2025", "xpu2026"];
    let mut left: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("not pruned: "))
        .collect();
    left.sort_unstable();
    same("files left", left.len(), sycl.len())?;
    for (line, v) in left.iter().zip(sycl) {
        let name = format!("in.whl!/bitsandbytes/libbitsandbytes_{v}.so': ");
        if !line.contains(&name) || !line.contains("linked file") {
            return Err(format!("not the {v} library's refusal: {line}").into());
        }
    }
    let out = d.join("out").join(wheel);
    if std::fs::metadata(&out)?.len() * 2 > std::fs::metadata(d.join("in.whl"))?.len() {
        return Err("the wheel did not lose half its size".into());
    }
    if record_checks(d, &format!("out/{wheel}"))? < 10 {
        return Err("RECORD lists too few files".into());
    }
    let lib = |v: &str| format!("bitsandbytes/libbitsandbytes_{v}.so");
    for v in sycl {
        unzip(&d.join("in.whl"), &lib(v), d, "a.so")?;
        unzip(&out, &lib(v), d, "b.so")?;
        if std::fs::read(d.join("a.so"))? != std::fs::read(d.join("b.so"))? {
            return Err(format!("{v}: the library left is not the original").into());
        }
    }
    cuda_libraries_keep_sm_86(d, &out)?;
    let pip = [
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        "--target",
        "site",
    ];
    let mut pip: Vec<String> = pip.iter().map(|s| s.to_string()).collect();
    pip.push(out.to_string_lossy().into_owned());
    run(Path::new("/usr/bin/python3"), &pip, d).ok()?;
    unzip(&out, &lib("cuda126"), d, "b.so")?;
    if std::fs::read(d.join("site").join(lib("cuda126")))? != std::fs::read(d.join("b.so"))? {
        return Err("pip installed another library than the pruned one".into());
    }
    let strict = [
        "prune", "--strict", "--keep", "sm_86", "-d", "strict", "in.whl",
    ];
    let r = run(&ours(), &strict, d);
    same("--strict: exit code", r.code, 2)?;
    if d.join("strict").join("in.whl").exists() {
        return Err("--strict wrote a wheel".into());
    }
    Ok(())
}

/// Each CUDA library of bitsandbytes' wheel `d/in.whl` pruned to sm_86 in
/// `out`: the sm_80 and sm_86 images of the original with their bytes,
/// and what `cuobjdump` lists of the original for those two alone.
fn cuda_libraries_keep_sm_86(d: &Path, out: &Path) -> Result<(), Failed> {
    let lib = |v: &str| format!("bitsandbytes/libbitsandbytes_{v}.so");
    let cuda = [
        "cuda118", "cuda121", "cuda124", "cuda126", "cuda128", "cuda130", "cuda132",
    ];
    for v in cuda {
        unzip(&d.join("in.whl"), &lib(v), d, "a.so")?;
        unzip(out, &lib(v), d, "b.so")?;
        let kept: Vec<_> = hashed(d, "a.so")?
            .into_iter()
            .filter(|(what, _)| what.contains("\"sm_80\"") || what.contains("\"sm_86\""))
            .collect();
        same(
            &format!("{v}: the images kept, with their bytes"),
            hashed(d, "b.so")?,
            kept,
        )?;
        if v == "cuda121" {
            // cuobjdump 13.5 stops on the original with "Invalid ELF" after
            // its first cubin.
            continue;
        }
        let want: Vec<String> = cuobjdump_cubins(d, "a.so")?
            .into_iter()
            .filter(|a| a == "sm_80" || a == "sm_86")
            .collect();
        if want.is_empty() {
            return Err(format!("{v}: no sm_80 or sm_86 cubin to keep").into());
        }
        same(
            &format!("{v}: cuobjdump's cubins"),
            cuobjdump_cubins(d, "b.so")?,
            want,
        )?;
    }
    Ok(())
}
