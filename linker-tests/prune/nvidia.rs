//! `offload-kit prune` on NVIDIA's own libraries from its PyPI wheels
//! (issue #44; downloaded and cached by `scripts/real-libs.sh --prune`):
//!
//! - libcusparse 12.5 holds, besides 113 fatbins of every SM from sm_50
//!   to sm_121, 23 fatbins of one sm_70, sm_75, sm_80 or sm_86 cubin each
//!   (one per translation unit built for fewer GPUs). `--keep sm_90`
//!   empties those 23 and `--keep sm_80` 15 of them: each becomes a fatbin
//!   with no entry, counted in the report, and the library still loads
//!   (the CUDA runtime linked into it registers every fatbin as it
//!   starts) and answers `cusparseGetProperty` as before. The cubins kept
//!   are, byte for byte, what `cuobjdump -xelf all` extracts of the
//!   original for that SM.
//! - nvJPEG 12.4 and cuRAND for CUDA 13, linked with 2 MiB `p_align`,
//!   shrink by at least 97 % of the bytes dropped (freed bytes go in 4 KiB
//!   pages, not 2 MiB units), `llvm-readelf -a` and `eu-elflint --gnu-ld`
//!   say nothing of them they did not say of the originals, the loader's
//!   view of them is sane (`prune/load_check.c`), and nvJPEG answers
//!   `nvjpegGetProperty`, cuRAND's host generator the same numbers.
//! - NVSHMEM 3.4.5's wheel (torch 2.10 depends on it), pruned to sm_90 as
//!   a wheel: its static archive libnvshmem_device.a is pruned as it is
//!   when named alone, byte for byte, and keeps the original's sm_90
//!   cubins; libnvshmem_host.so.3, whose fatbins lie in `.nv_fatbin` and
//!   `__nv_relfatbin`, is rewritten in place, which the report says, and
//!   keeps its sm_90 cubins too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use super::shrink::elflint;
use super::{dropped_bytes, src};
use crate::real_libs::{CUOBJDUMP, Cache, fetched};
use crate::util::{llvm, md5_hex, ours, ours_json, run, same, tempdir, unzip};

const CUSPARSE: &str =
    "nvidia_cusparse_cu12-12.5.10.65-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
const NVJITLINK: &str =
    "nvidia_nvjitlink_cu12-12.9.86-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl";
const CURAND13: &str = "nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl";
const CUDART13: &str =
    "nvidia_cuda_runtime-13.5.37-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
const NVJPEG: &str =
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
const NVSHMEM: &str =
    "nvidia_nvshmem_cu12-3.4.5-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
const PYTHON: &str = "/usr/bin/python3";

pub fn tests() -> Vec<Trial> {
    let shrink = ["bash", PYTHON, "cc", "llvm-readelf", "eu-elflint"];
    vec![
        trial!(
            cusparse_fatbins_no_kept_gpu_loads_are_emptied,
            &["bash", PYTHON, "cc", CUOBJDUMP, "llvm-readelf"],
        ),
        trial!(cusparse_raw_scan_reads_nvvm_entries, &["bash", PYTHON, CUOBJDUMP]),
        trial!(nvjpeg_to_sm_90_shrinks_by_pages, &shrink),
        trial!(curand_cu13_to_sm_80_shrinks_by_pages, &shrink),
        trial!(
            nvshmem_wheel_prunes_its_archive_and_says_what_did_not_shrink,
            &["bash", PYTHON, CUOBJDUMP],
        ),
    ]
}

/// The cache `scripts/real-libs.sh --prune` fills.
fn downloads() -> Result<PathBuf, Failed> {
    static DIR: Cache = Cache::new();
    fetched(&DIR, &["--prune"])
}

/// `load_check` built in `d`.
fn build_loader(d: &Path) -> Result<(), Failed> {
    run(
        Path::new("/usr/bin/cc"),
        &["-O1", &src("load_check.c"), "-o", "load_check", "-ldl"],
        d,
    )
    .ok()?;
    Ok(())
}

/// `load_check` on `lib` (in `d`): the loader maps it sanely.
fn loads(d: &Path, lib: &str) -> Result<(), Failed> {
    let path = d.join(lib).to_string_lossy().into_owned();
    let r = run(&d.join("load_check"), &[path], d);
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if r.code != 0 || said.lines().last() != Some("ok") {
        return Err(format!("{lib}, loaded: {said}{}", r.stderr).into());
    }
    Ok(())
}

/// What the Python `script` prints of `lib` (its path in `argv[1]`).
fn python(d: &Path, script: &str, lib: &str) -> Result<String, Failed> {
    let path = d.join(lib).to_string_lossy().into_owned();
    let r = run(Path::new(PYTHON), &["-c", script, &path], d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// The md5 of every cubin `cuobjdump -xelf all` extracts of `lib` (in
/// `d`, into the new directory `d/into`), by SM (`sm_90`), sorted.
fn extracted(d: &Path, lib: &str, into: &str) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    extracted_with(d, lib, into, &[])
}

/// [`extracted`], with cuobjdump given `extra` options too (`-all`: every
/// fatbin section, not only the executable one).
fn extracted_with(
    d: &Path,
    lib: &str,
    into: &str,
    extra: &[&str],
) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    let dir = d.join(into);
    std::fs::create_dir(&dir)?;
    let path = d.join(lib).to_string_lossy().into_owned();
    let mut args = extra.to_vec();
    args.extend(["-xelf", "all", &path]);
    run(Path::new(CUOBJDUMP), &args, &dir).ok()?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in std::fs::read_dir(&dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        // NAME.N.sm_XY.cubin
        let sm = name.rsplit('.').nth(1).unwrap_or_default().to_string();
        out.entry(sm)
            .or_default()
            .push(md5_hex(&std::fs::read(e.path())?));
        std::fs::remove_file(e.path())?;
    }
    for v in out.values_mut() {
        v.sort();
    }
    Ok(out)
}

fn cusparse_fatbins_no_kept_gpu_loads_are_emptied() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    build_loader(d)?;
    // The library finds libnvJitLink.so.12 beside it ($ORIGIN).
    let lib = "libcusparse.so.12";
    unzip(
        &cache.join(CUSPARSE),
        "nvidia/cusparse/lib/libcusparse.so.12",
        d,
        lib,
    )?;
    unzip(
        &cache.join(NVJITLINK),
        "nvidia/nvjitlink/lib/libnvJitLink.so.12",
        d,
        "libnvJitLink.so.12",
    )?;
    let original = extracted(d, lib, "x-original")?;
    let props = "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nfor t in range(3):\n    \
                 v = ctypes.c_int(-1)\n    print(l.cusparseGetProperty(t, ctypes.byref(v)), v.value)\n";
    let answers = python(d, props, lib)?;
    same(
        "cusparseGetProperty of the original",
        answers.lines().count(),
        3,
    )?;
    loads(d, lib)?;
    for (sm, emptied) in [("sm_90", 23), ("sm_80", 15)] {
        let out = format!("out-{sm}.so");
        let doc = ours_json(&["prune", "--keep", sm, "--json", "-o", &out, lib], d)?;
        let file = &doc["files"][0];
        same(
            &format!("{sm}: containers emptied"),
            &file["emptied"],
            &emptied.into(),
        )?;
        if let Some(why) = file["not_shrunk"].as_str() {
            return Err(format!("{sm}: not shrunk: {why}").into());
        }
        // The kept cubins are the original's for that SM, byte for byte.
        let kept = extracted(d, &out, &format!("x-{sm}"))?;
        let want: BTreeMap<String, Vec<String>> = original
            .iter()
            .filter(|(k, _)| *k == sm)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        same(&format!("{sm}: cuobjdump -xelf all"), kept, want)?;
        // cuobjdump reads the emptied fatbins without a word.
        let list = run(Path::new(CUOBJDUMP), &["-lelf", "-lptx", &out], d).ok()?;
        same(
            &format!("{sm}: cuobjdump -lelf -lptx says"),
            list.stderr.as_str(),
            "",
        )?;
        let r = run(&llvm("llvm-readelf"), &["-a", &out], d);
        same(
            &format!("{sm}: llvm-readelf warnings"),
            r.stderr.as_str(),
            "",
        )?;
        // Pruned again, nothing changes: the emptied fatbins scan clean.
        let again = ours_json(&["prune", "--keep", sm, "--json", "--dry-run", &out], d)?;
        same(
            &format!("{sm}: pruned again"),
            &again["files"][0]["containers_rewritten"],
            &0.into(),
        )?;
        loads(d, &out)?;
        same(
            &format!("{sm}: cusparseGetProperty"),
            python(d, props, &out)?,
            answers.clone(),
        )?;
    }
    Ok(())
}

/// `lib` (in `d`) pruned to `rule` as `out`: not refused, smaller by at
/// least 97 % of the dropped bytes, nothing new from `llvm-readelf -a` or
/// `eu-elflint --gnu-ld`, and both load sanely.
fn shrinks_by_pages(d: &Path, lib: &str, rule: &str, out: &str) -> Result<(), Failed> {
    let doc = ours_json(&["prune", "--keep", rule, "--json", "-o", out, lib], d)?;
    if let Some(why) = doc["files"][0]["not_shrunk"].as_str() {
        return Err(format!("{lib}: not shrunk: {why}").into());
    }
    let dropped = dropped_bytes(&doc);
    let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
    let freed = size(lib)?.saturating_sub(size(out)?);
    if dropped == 0 || freed * 100 < dropped * 97 {
        return Err(format!("{lib}: {freed} bytes smaller, under 97 % of {dropped}").into());
    }
    let readelf = |f: &str| run(&llvm("llvm-readelf"), &["-a", f], d);
    let (a, b) = (readelf(lib), readelf(out));
    same(&format!("{out}: llvm-readelf exit code"), b.code, a.code)?;
    same(&format!("{out}: llvm-readelf warnings"), b.stderr, a.stderr)?;
    same(
        &format!("{out}: eu-elflint"),
        elflint(d, out),
        elflint(d, lib),
    )?;
    loads(d, lib)?;
    loads(d, out)
}

fn nvjpeg_to_sm_90_shrinks_by_pages() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    build_loader(d)?;
    let lib = "libnvjpeg.so.12";
    unzip(
        &cache.join(NVJPEG),
        "nvidia/nvjpeg/lib/libnvjpeg.so.12",
        d,
        lib,
    )?;
    shrinks_by_pages(d, lib, "sm_90", "out.so")?;
    let props = "import ctypes, sys\nl = ctypes.CDLL(sys.argv[1])\nfor t in range(3):\n    \
                 v = ctypes.c_int(-1)\n    print(l.nvjpegGetProperty(t, ctypes.byref(v)), v.value)\n";
    let answers = python(d, props, lib)?;
    same(
        "nvjpegGetProperty of the original",
        answers.lines().count(),
        3,
    )?;
    same(
        "nvjpegGetProperty of the pruned library",
        python(d, props, "out.so")?,
        answers,
    )
}

/// A Python script printing what cuRAND's host generator (the default
/// pseudo-random one, seeded 1234) makes: 8 words, then 4 floats, after
/// each call's status.
pub(super) const HOST_GENERATOR: &str = "import ctypes, sys
l = ctypes.CDLL(sys.argv[1])
g = ctypes.c_void_p()
print(l.curandCreateGeneratorHost(ctypes.byref(g), 100))
print(l.curandSetPseudoRandomGeneratorSeed(g, ctypes.c_ulonglong(1234)))
words = (ctypes.c_uint * 8)()
print(l.curandGenerate(g, words, ctypes.c_size_t(8)), list(words))
floats = (ctypes.c_float * 4)()
print(l.curandGenerateUniform(g, floats, ctypes.c_size_t(4)), list(floats))
print(l.curandDestroyGenerator(g))
";

fn curand_cu13_to_sm_80_shrinks_by_pages() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    build_loader(d)?;
    // The library finds libcudart.so.13 beside it ($ORIGIN).
    let lib = "libcurand.so.10";
    unzip(
        &cache.join(CURAND13),
        "nvidia/cu13/lib/libcurand.so.10",
        d,
        lib,
    )?;
    unzip(
        &cache.join(CUDART13),
        "nvidia/cu13/lib/libcudart.so.13",
        d,
        "libcudart.so.13",
    )?;
    shrinks_by_pages(d, lib, "sm_80", "out.so")?;
    let numbers = python(d, HOST_GENERATOR, lib)?;
    if !numbers.starts_with("0\n0\n0 [") {
        return Err(format!("cuRAND's host generator said: {numbers}").into());
    }
    same(
        "cuRAND's host generator in the pruned library",
        python(d, HOST_GENERATOR, "out.so")?,
        numbers,
    )
}

/// libcusparse's `.rodata` holds fatbins whose entries of kind 8 are NVVM
/// IR (`cuobjdump` lists them as "nvvm code" and will not dump them). The
/// raw scan reads the whole library with no problem, lists those entries
/// as `nvvm`, with the archs `cuobjdump` gives each fatbin's nvvm entries,
/// in order, and `extract` writes their stored bytes.
fn cusparse_raw_scan_reads_nvvm_entries() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let lib = "libcusparse.so.12";
    unzip(
        &cache.join(CUSPARSE),
        "nvidia/cusparse/lib/libcusparse.so.12",
        d,
        lib,
    )?;
    let doc = ours_json(&["inspect", "--raw", "--json", lib], d)?;
    let file = &doc["files"][0];
    same(
        "problems of the raw scan",
        &file["problems"],
        &serde_json::json!([]),
    )?;
    let images = file["images"].as_array().ok_or("no images")?;
    let nvvm: Vec<&serde_json::Value> = images
        .iter()
        .filter(|i| i["image_kind"] == "nvvm")
        .collect();
    same("nvvm entries", nvvm.len(), 204)?;
    let data = std::fs::read(d.join(lib))?;
    let mut fatbins: Vec<u64> = nvvm
        .iter()
        .filter_map(|i| i["container"].as_u64())
        .collect();
    fatbins.dedup();
    for (k, c) in fatbins.iter().enumerate() {
        let c = &file["containers"][usize::try_from(*c)?];
        let (at, size) = (
            usize::try_from(c["offset"].as_u64().ok_or("no offset")?)?,
            usize::try_from(c["size"].as_u64().ok_or("no size")?)?,
        );
        let name = format!("f{k}.fatbin");
        std::fs::write(d.join(&name), &data[at..at + size])?;
        let listed = run(Path::new(CUOBJDUMP), &[name.as_str()], d).ok()?;
        let text = String::from_utf8_lossy(&listed.stdout).into_owned();
        // The arch line after each "Fatbin nvvm code" heading.
        let theirs: Vec<String> = text
            .split("Fatbin ")
            .filter(|b| b.starts_with("nvvm code"))
            .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("arch = ")))
            .map(str::to_string)
            .collect();
        let listed: Vec<String> = nvvm
            .iter()
            .filter(|i| i["container"] == c["id"])
            .map(|i| i["arch"].as_str().unwrap_or_default().to_string())
            .collect();
        same(&format!("{name}: nvvm entries' archs"), listed, theirs)?;
        if k == 0 {
            let r = run(&ours(), &["extract", "--kind", "nvvm", "-o", "x", &name], d).ok()?;
            same("extract says", r.stderr.as_str(), "")?;
            let first = nvvm[0];
            let (o, n) = (
                usize::try_from(first["offset"].as_u64().ok_or("no offset")?)?,
                usize::try_from(first["size"].as_u64().ok_or("no size")?)?,
            );
            let written: Vec<_> = std::fs::read_dir(d.join("x"))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.to_string_lossy().contains(".0.")
                        && p.extension().is_some_and(|e| e == "nvvm")
                })
                .collect();
            same("extracted nvvm files named .0.", written.len(), 1)?;
            same(
                "the first nvvm entry's extracted bytes",
                md5_hex(&std::fs::read(&written[0])?),
                md5_hex(&data[o..o + n]),
            )?;
        }
    }
    Ok(())
}

/// `extracted` of `lib` (in `d`), the SM `sm` alone.
fn extracted_of(
    d: &Path,
    lib: &str,
    into: &str,
    sm: &str,
) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    let mut all = extracted(d, lib, into)?;
    all.retain(|k, _| k == sm);
    Ok(all)
}

fn nvshmem_wheel_prunes_its_archive_and_says_what_did_not_shrink() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let wheel = cache.join(NVSHMEM);
    let (archive, host) = (
        "nvidia/nvshmem/lib/libnvshmem_device.a",
        "nvidia/nvshmem/lib/libnvshmem_host.so.3",
    );
    let doc = ours_json(
        &[
            "prune",
            "--keep",
            "sm_90",
            "--json",
            "-o",
            "slim.whl",
            &wheel.to_string_lossy(),
        ],
        d,
    )?;
    same(
        "the members not shrunk",
        doc["files"][0]["not_shrunk"].as_str(),
        Some(format!("'{host}': the containers lie in more than one section").as_str()),
    )?;
    unzip(&wheel, archive, d, "original.a")?;
    unzip(&d.join("slim.whl"), archive, d, "in-wheel.a")?;
    unzip(&wheel, host, d, "original.so")?;
    unzip(&d.join("slim.whl"), host, d, "in-wheel.so")?;
    // The archive, pruned inside the wheel and named alone.
    run(
        &crate::util::ours(),
        &["prune", "--keep", "sm_90", "-o", "alone.a", "original.a"],
        d,
    )
    .ok()?;
    let read = |f: &str| std::fs::read(d.join(f));
    if read("in-wheel.a")? != read("alone.a")? {
        return Err("the archive pruned in the wheel differs from the archive pruned alone".into());
    }
    if read("in-wheel.a")?.len() >= read("original.a")?.len() {
        return Err("the archive did not get smaller".into());
    }
    // What cuobjdump extracts of each: the original's sm_90 cubins alone.
    for (original, pruned) in [("original.a", "in-wheel.a"), ("original.so", "in-wheel.so")] {
        let want = extracted_of(d, original, &format!("x-{original}"), "sm_90")?;
        if want.is_empty() {
            return Err(format!("cuobjdump extracts no sm_90 cubin of {original}").into());
        }
        let got = extracted(d, pruned, &format!("x-{pruned}"))?;
        same(&format!("cuobjdump -xelf all of {pruned}"), got, want)?;
    }
    every_fatbin_section(d, "original.so", "in-wheel.so")
}

/// libnvshmem_host.so.3 keeps 6 cubins in `.nv_fatbin` and 185 images
/// more (relocatable code, `-rdc`) in `__nv_relfatbin`. cuobjdump reads
/// only the first unless told `-all`; the scanners read both, as
/// `cuobjdump -all` does: the same count of images, and `extract` the
/// same bytes. The library pruned to sm_90 holds, in both sections, just
/// the original's sm_90 cubins.
fn every_fatbin_section(d: &Path, original: &str, pruned: &str) -> Result<(), Failed> {
    let listed = |args: &[&str]| -> Result<usize, Failed> {
        let r = run(Path::new(CUOBJDUMP), args, d).ok()?;
        Ok(String::from_utf8_lossy(&r.stdout)
            .lines()
            .filter(|l| l.starts_with("ELF file") || l.starts_with("PTX file"))
            .count())
    };
    let executable_only = listed(&["-lelf", "-lptx", original])?;
    let all = listed(&["-all", "-lelf", "-lptx", original])?;
    let doc = ours_json(&["inspect", "--json", original], d)?;
    let ours_count = doc["files"][0]["images"].as_array().map_or(0, Vec::len);
    same(
        "images in every fatbin section (cuobjdump -all -lelf -lptx)",
        ours_count,
        all,
    )?;
    if executable_only >= all {
        return Err(format!(
            "cuobjdump lists {executable_only} images without -all and {all} with it: \
             the library no longer has a relocatable fatbin section"
        )
        .into());
    }
    // Every image's bytes, as cuobjdump -all extracts them.
    std::fs::create_dir(d.join("ours-all"))?;
    run(&ours(), &["extract", "-o", "ours-all", original], d).ok()?;
    let dir = d.join("cuobjdump-all");
    std::fs::create_dir(&dir)?;
    let path = d.join(original).to_string_lossy().into_owned();
    run(
        Path::new(CUOBJDUMP),
        &["-all", "-xelf", "all", "-xptx", "all", &path],
        &dir,
    )
    .ok()?;
    let theirs = crate::util::md5s_in(&dir)?;
    same("files extracted", theirs.len(), all)?;
    same(
        "extracted bytes, every fatbin section (md5 of every file)",
        crate::util::md5s_in(&d.join("ours-all"))?,
        theirs,
    )?;
    // Pruned: both sections hold the original's sm_90 cubins and nothing else.
    let want = extracted_with(d, original, "all-original", &["-all"])?;
    let want: BTreeMap<_, _> = want.into_iter().filter(|(k, _)| k == "sm_90").collect();
    let got = extracted_with(d, pruned, "all-pruned", &["-all"])?;
    same(&format!("cuobjdump -all -xelf all of {pruned}"), got, want)
}
