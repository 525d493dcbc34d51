//! The scanners on real Windows libraries: NVIDIA's, CuPy's and
//! bitsandbytes' `win_amd64` wheels from PyPI (`scripts/real-libs.sh
//! --windows`, cached), each read beside the same version's Linux wheel.
//! NVIDIA's own `cuobjdump` refuses the DLLs, so the references are our
//! raw scan (which reads no section table) and the Linux build: every DLL
//! and `.pyd` must hold as many images of each target and kind as its
//! Linux twin, the default scan must find what the raw scan finds, the
//! kernels of cuRAND must be the Linux ones (up to the width of `long`),
//! and `check` must answer as on Linux.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::prune::{dropped_bytes, hashed, pruned_wheel, shrunk_by};
use crate::util::{Wine, llvm, ours, ours_json, run, same, tempdir, unzip};

pub const CURAND: &str = "nvidia_curand_cu12-10.3.7.77-py3-none-win_amd64.whl";
pub const CUPY: &str = "cupy_cuda12x-14.2.0-cp312-cp312-win_amd64.whl";
pub const CUPY_LINUX: &str = "cupy_cuda12x-14.2.0-cp312-cp312-manylinux2014_x86_64.whl";
pub const NVJPEG: &str = "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-win_amd64.whl";
pub const NVJPEG_LINUX: &str =
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
pub const BNB: &str = "bitsandbytes-0.50.2-py3-none-win_amd64.whl";
pub const BNB_LINUX: &str = "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl";

pub fn tests() -> Vec<Trial> {
    let tools = &["bash", "/usr/bin/python3", "llvm-cxxfilt"];
    vec![
        trial!(curand_dll_against_the_linux_build, tools),
        trial!(cupy_pyds_against_the_linux_wheel, tools),
        trial!(nvjpeg_dll_against_the_linux_build, tools),
        trial!(bitsandbytes_cuda_sycl_and_hip_dlls, tools),
        trial!(curand_dll_shrinks_checks_and_loads_under_wine, &[
                "bash",
                "/usr/bin/python3",
                "clang",
                "lld-link",
                "llvm-dlltool",
                "llvm-readobj",
                "llvm-objdump",
                "/usr/lib/wine/wine64",
            ]),
        trial!(
            cupy_pyds_shrink_and_check,
            &["bash", "/usr/bin/python3", "llvm-readobj", "llvm-objdump"],
        ),
    ]
}

/// The cache `scripts/real-libs.sh --windows` fills (once per run).
pub fn windows_downloads() -> Result<PathBuf, Failed> {
    static DIR: crate::real_libs::Cache = crate::real_libs::Cache::new();
    crate::real_libs::fetched(&DIR, &["--windows"])
}

/// Images of one (target, image kind): how many, and their bytes
/// (uncompressed).
type Inventory = BTreeMap<(String, String), (u64, u64)>;

/// The inventory of each file of an `inspect --json` document that holds
/// images, by its path inside the wheel (after `!/`); a file with problems
/// fails.
fn inventories(doc: &Value) -> Result<BTreeMap<String, Inventory>, Failed> {
    let mut out = BTreeMap::new();
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = f["path"].as_str().unwrap_or_default();
        let member = path.rsplit("!/").next().unwrap_or(path).to_string();
        if f["problems"].as_array().is_some_and(|p| !p.is_empty()) {
            return Err(format!("{path}: problems {}", f["problems"]).into());
        }
        let mut inv = Inventory::new();
        for i in f["images"].as_array().into_iter().flatten() {
            let key = (
                i["target_id"].as_str().unwrap_or_default().to_string(),
                i["image_kind"].as_str().unwrap_or_default().to_string(),
            );
            let bytes = i["uncompressed_size"]
                .as_u64()
                .or_else(|| i["size"].as_u64())
                .unwrap_or_default();
            let e = inv.entry(key).or_insert((0, 0));
            e.0 += 1;
            e.1 += bytes;
        }
        if !inv.is_empty() {
            out.insert(member, inv);
        }
    }
    Ok(out)
}

/// The (target, kind) → count part of an inventory: what a Windows file
/// must share with its Linux twin (the bytes differ: other host
/// compilers, other symbol names).
fn counts(inv: &Inventory) -> BTreeMap<(String, String), u64> {
    inv.iter().map(|(k, (n, _))| (k.clone(), *n)).collect()
}

/// The Windows wheel `win` against the Linux wheel `linux` (both in the
/// cache), `pairs` naming each Windows member with images and its Linux
/// twin: the default scan's inventory is the raw scan's, file for file;
/// every pair holds as many images of each target and kind; nothing else
/// in the Windows wheel holds images; `check` gives the same exit code on
/// both wheels for each of `requires`, and each rule that fails names the
/// target. Returns the cache directory.
fn against_linux(
    win: &str,
    linux: &str,
    pairs: &[(&str, &str)],
    requires: &[&str],
) -> Result<PathBuf, Failed> {
    let cache = windows_downloads()?;
    let w = cache.join(win);
    let w = w.to_string_lossy();
    let l = if linux == crate::real_libs::WHEEL {
        crate::real_libs::downloads()?.join(linux)
    } else {
        cache.join(linux)
    };
    let l = l.to_string_lossy();
    let d = Path::new("/");
    let ours_inv = inventories(&ours_json(&["inspect", "--json", &w], d)?)?;
    let raw_inv = inventories(&ours_json(&["inspect", "--json", "--raw", &w], d)?)?;
    same(
        "inventory of the section scan and the raw scan",
        &ours_inv,
        &raw_inv,
    )?;
    let linux_inv = inventories(&ours_json(&["inspect", "--json", &l], d)?)?;
    let mut members: Vec<&str> = ours_inv.keys().map(String::as_str).collect();
    members.sort_unstable();
    let mut named: Vec<&str> = pairs.iter().map(|(w, _)| *w).collect();
    named.sort_unstable();
    same("the Windows files with device code", members, named)?;
    for (wm, lm) in pairs {
        let wi = ours_inv
            .get(*wm)
            .ok_or_else(|| format!("{wm}: no images"))?;
        let li = linux_inv
            .get(*lm)
            .ok_or_else(|| format!("{lm}: no images"))?;
        same(
            &format!("images per target and kind, {wm} and {lm}"),
            counts(wi),
            counts(li),
        )?;
    }
    for target in requires {
        let args = ["check", "--require", target];
        let on = |wheel: &str| run(&ours(), &[&args[..], &[wheel]].concat(), d);
        let (rw, rl) = (on(&w), on(&l));
        same(&format!("check --require {target}"), rw.code, rl.code)?;
        let out = String::from_utf8_lossy(&rw.stdout);
        if rw.code == 1 && !out.contains(target) {
            return Err(format!("check --require {target} fails without naming it: {out}").into());
        }
    }
    Ok(cache)
}

/// The kernels `inspect --kernels` lists in `file`: (target, image kind,
/// name demangled by `llvm-cxxfilt` with `long long` read as `long`) and
/// how often. Their resources are not compared: NVIDIA's Windows and Linux
/// builds of one version allocate registers differently for some
/// kernels. Windows is LLP64: `size_t` is `unsigned long
/// long` there and `unsigned long` on Linux, the one way the same kernel's
/// mangled name differs.
fn kernels(dir: &Path, file: &str) -> Result<BTreeMap<String, u64>, Failed> {
    let doc = ours_json(&["inspect", "--kernels", "--json", file], dir)?;
    let mut rows = Vec::new();
    for image in doc["files"][0]["kernels"].as_array().into_iter().flatten() {
        for k in image["kernels"].as_array().into_iter().flatten() {
            rows.push((
                format!("{} {}", image["target"], image["format"]),
                k["name"].as_str().unwrap_or_default().to_string(),
            ));
        }
    }
    let names: String = rows.iter().map(|(_, n)| format!("{n}\n")).collect();
    let r = crate::util::run_stdin(&llvm("llvm-cxxfilt"), &[] as &[&str], dir, names.as_bytes())
        .ok()?;
    let demangled = String::from_utf8_lossy(&r.stdout).into_owned();
    let demangled: Vec<&str> = demangled.lines().collect();
    same("names demangled", demangled.len(), rows.len())?;
    let mut out = BTreeMap::new();
    for ((what, _), name) in rows.iter().zip(demangled) {
        let key = format!("{what} {}", name.replace("long long", "long"));
        *out.entry(key).or_default() += 1;
    }
    Ok(out)
}

/// cuRAND's DLL (a PE image: 11 fatbins in `.nv_fatb`, wrappers in
/// `.nvFatBi` holding absolute addresses): the inventory of the Linux
/// build (98 images, eight SM versions, PTX for sm_90); the same kernels,
/// image for image; `check --require
/// sm_80` passes, `--require sm_100` passes through the sm_90 PTX and
/// `--require sm_100:cubin` fails naming it, on both.
fn curand_dll_against_the_linux_build() -> Result<(), Failed> {
    let dll = "nvidia/curand/bin/curand64_10.dll";
    let so = "nvidia/curand/lib/libcurand.so.10";
    let cache = against_linux(
        CURAND,
        crate::real_libs::WHEEL,
        &[(dll, so)],
        &["sm_80", "sm_100", "sm_100:cubin", "sm_90a"],
    )?;
    let wheel = cache.join(CURAND);
    for (target, code) in [("sm_80", 0), ("sm_100", 0), ("sm_100:cubin", 1)] {
        let r = run(
            &ours(),
            &["check", "--require", target, &wheel.to_string_lossy()],
            Path::new("/"),
        );
        same(
            &format!("check --require {target} on the DLL"),
            r.code,
            code,
        )?;
    }
    let t = tempdir();
    unzip(&cache.join(CURAND), dll, t.path(), "curand64_10.dll")?;
    let linux = crate::real_libs::downloads()?.join(crate::real_libs::WHEEL);
    unzip(&linux, so, t.path(), "libcurand.so.10")?;
    let (kw, kl) = (
        kernels(t.path(), "curand64_10.dll")?,
        kernels(t.path(), "libcurand.so.10")?,
    );
    if kw.values().sum::<u64>() < 1000 {
        return Err(format!("only {} kernels in the DLL", kw.values().sum::<u64>()).into());
    }
    let differ = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| -> Vec<String> {
        a.iter()
            .filter(|(k, n)| b.get(*k) != Some(n))
            .map(|(k, n)| format!("{n}× {k}"))
            .take(5)
            .collect()
    };
    let (only_w, only_l) = (differ(&kw, &kl), differ(&kl, &kw));
    if only_w.is_empty() && only_l.is_empty() {
        return Ok(());
    }
    Err(format!("kernels differ: in the DLL {only_w:#?}, in the Linux library {only_l:#?}").into())
}

/// CuPy's three extension modules with device code, `.pyd` on Windows
/// (cub, thrust, the random generator API: 13 images each, sm_50 to
/// sm_120 and sm_100 PTX).
fn cupy_pyds_against_the_linux_wheel() -> Result<(), Failed> {
    let pairs: Vec<(String, String)> = [
        "cupy/cuda/cub",
        "cupy/cuda/thrust",
        "cupy/random/_generator_api",
    ]
    .iter()
    .map(|m| {
        (
            format!("{m}.cp312-win_amd64.pyd"),
            format!("{m}.cpython-312-x86_64-linux-gnu.so"),
        )
    })
    .collect();
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    against_linux(
        CUPY,
        CUPY_LINUX,
        &pairs,
        &["sm_80", "sm_100", "sm_90a", "sm_121"],
    )
    .map(|_| ())
}

/// nvJPEG's DLL: 175 images, sm_50 to sm_121 with sm_121 PTX.
fn nvjpeg_dll_against_the_linux_build() -> Result<(), Failed> {
    against_linux(
        NVJPEG,
        NVJPEG_LINUX,
        &[(
            "nvidia/nvjpeg/bin/nvjpeg64_12.dll",
            "nvidia/nvjpeg/lib/libnvjpeg.so.12",
        )],
        &["sm_80", "sm_100", "sm_90a", "sm_110"],
    )
    .map(|_| ())
}

/// bitsandbytes 0.50.2, whose DLLs nobody here built: seven CUDA DLLs,
/// most of their fatbins in `__nv_rel` (relocatable device code), two
/// SYCL DLLs whose images lie in one `__CLANG_` section, listed by
/// `.tgtimg` and named by their descriptors, and three HIP DLLs. Every
/// CUDA and SYCL DLL holds as many images of each target and kind as its
/// Linux twin; the raw scan finds each CUDA DLL's images too (it cannot
/// find the SYCL ones: nothing marks them but the table); the HIP DLLs
/// hold code objects for AMD GPUs (their Linux twins are built for other
/// ones); no file of either wheel has a problem; `check --require sm_90`
/// passes each CUDA DLL, and exits on the Windows wheel as on the Linux
/// one.
fn bitsandbytes_cuda_sycl_and_hip_dlls() -> Result<(), Failed> {
    let cache = windows_downloads()?;
    let (w, l) = (cache.join(BNB), cache.join(BNB_LINUX));
    let (w, l) = (w.to_string_lossy(), l.to_string_lossy());
    let d = Path::new("/");
    let doc = ours_json(&["inspect", "--json", &w], d)?;
    let win = inventories(&doc)?;
    let raw = inventories(&ours_json(&["inspect", "--json", "--raw", &w], d)?)?;
    let linux = inventories(&ours_json(&["inspect", "--json", &l], d)?)?;
    let dll = |v: &str| format!("bitsandbytes/libbitsandbytes_{v}.dll");
    let cuda = [
        "cuda118", "cuda121", "cuda124", "cuda126", "cuda128", "cuda130", "cuda132",
    ];
    let sycl = ["xpu2025", "xpu2026"];
    let hip = ["rocm714", "rocm715", "rocm72"];
    let mut want: Vec<String> = cuda
        .iter()
        .chain(&sycl)
        .chain(&hip)
        .map(|v| dll(v))
        .collect();
    want.sort();
    same(
        "the Windows files with device code",
        win.keys().cloned().collect::<Vec<_>>(),
        want,
    )?;
    for v in cuda.iter().chain(&sycl) {
        let (wi, li) = (
            &win[&dll(v)],
            linux.get(&format!("bitsandbytes/libbitsandbytes_{v}.so")),
        );
        let li = li.ok_or_else(|| format!("{v}: the Linux library holds no images"))?;
        same(
            &format!("{v}: images per target and kind"),
            counts(wi),
            counts(li),
        )?;
    }
    for v in cuda {
        same(
            &format!("{v}: the raw scan's inventory"),
            raw.get(&dll(v)),
            win.get(&dll(v)),
        )?;
    }
    for v in sycl {
        let mut images: Vec<String> = doc["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["path"].as_str().is_some_and(|p| p.ends_with(&dll(v))))
            .flat_map(|f| f["images"].as_array().into_iter().flatten())
            .map(|i| format!("{} {} {}", i["offload_kind"], i["triple"], i["image_kind"]))
            .collect();
        images.dedup();
        same(
            &format!("{v}: kinds and targets, in file order"),
            images,
            vec![
                r#""sycl" "spir64" "spirv""#.to_string(),
                r#""sycl" "spir64_gen" "archive""#.to_string(),
            ],
        )?;
    }
    for v in hip {
        let inv = &win[&dll(v)];
        if !inv
            .keys()
            .all(|(t, k)| t.starts_with("gfx") && k == "object")
        {
            return Err(format!("{v}: not all AMD GPU code objects: {inv:?}").into());
        }
    }
    let check = |wheel: &str| run(&ours(), &["check", "--require", "sm_90", wheel], d);
    let (rw, rl) = (check(&w), check(&l));
    same("check --require sm_90 of both wheels", rw.code, rl.code)?;
    let out = String::from_utf8_lossy(&rw.stdout);
    for v in cuda {
        if !out
            .lines()
            .any(|line| line.starts_with("ok ") && line.contains(&dll(v)))
        {
            return Err(format!("check --require sm_90 does not pass {v}: {out}").into());
        }
    }
    Ok(())
}

/// `prune --keep sm_80` of `lib` (in `d`) to `out`: the kept images have
/// their bytes, and are the input's sm_80 ones; the file shrinks by 90 %
/// of the bytes dropped; `llvm-readobj --coff-basereloc --file-headers`
/// and `llvm-objdump -p` read it without a word on stderr and say of it
/// what they say of the input, but for `SizeOfInitializedData` (the
/// fat-binary section's raw data is smaller; the base relocations, the
/// addresses and `SizeOfImage` are the same).
fn pruned_pe(d: &Path, lib: &str, out: &str) -> Result<(), Failed> {
    let before = hashed(d, lib)?;
    let doc = ours_json(&["prune", "--keep", "sm_80", "-o", out, "--json", lib], d)?;
    let after = hashed(d, out)?;
    let want: Vec<_> = before
        .iter()
        .filter(|(what, _)| what.contains("\"sm_80\""))
        .cloned()
        .collect();
    if want.is_empty() {
        return Err(format!("{lib}: no sm_80 image").into());
    }
    same(
        &format!("{lib}: images kept, with their bytes"),
        &after,
        &want,
    )?;
    shrunk_by(d, lib, out, dropped_bytes(&doc))?;
    let tools: [(&str, &[&str]); 2] = [
        ("llvm-readobj", &["--coff-basereloc", "--file-headers"]),
        ("llvm-objdump", &["-p"]),
    ];
    for (tool, args) in tools {
        let read = |f: &str| -> Result<Vec<String>, Failed> {
            let r = run(&llvm(tool), &[args, &[f]].concat(), d);
            same(&format!("{tool} {f}: exit code"), r.code, 0)?;
            same(&format!("{tool} {f}: warnings"), r.stderr.as_str(), "")?;
            Ok(String::from_utf8_lossy(&r.stdout)
                .lines()
                .filter(|l| !l.contains(f) && !l.contains("SizeOfInitializedData"))
                .map(str::to_string)
                .collect())
        };
        same(
            &format!("{tool} of {lib} and of {out}"),
            read(out)?,
            read(lib)?,
        )?;
    }
    Ok(())
}

/// cuRAND's DLL pruned to sm_80 (see [`pruned_pe`]) loads under Wine and
/// answers `curandGetVersion` as the original does (`load.exe`, built
/// here with clang and lld-link against an import library of kernel32
/// that llvm-dlltool makes); the Windows wheel pruned the same way keeps
/// a RECORD that checks.
fn curand_dll_shrinks_checks_and_loads_under_wine() -> Result<(), Failed> {
    let cache = windows_downloads()?;
    let t = tempdir();
    let d = t.path();
    unzip(
        &cache.join(CURAND),
        "nvidia/curand/bin/curand64_10.dll",
        d,
        "lib.dll",
    )?;
    pruned_pe(d, "lib.dll", "out.dll")?;

    let wine = Wine::new(d)?;
    let wine = |dll: &str| wine.call(dll, "curandGetVersion");
    let original = wine("lib.dll")?;
    if !original.starts_with("0 1") {
        return Err(format!("curandGetVersion under Wine answered {original:?}").into());
    }
    same(
        "curandGetVersion of the pruned DLL",
        wine("out.dll")?,
        original,
    )?;

    pruned_wheel(d, &cache.join(CURAND), CURAND, "sm_80", 3)
}

/// CuPy's three `.pyd` files with device code, each pruned to sm_80 (see
/// [`pruned_pe`]).
fn cupy_pyds_shrink_and_check() -> Result<(), Failed> {
    let cache = windows_downloads()?;
    let t = tempdir();
    let d = t.path();
    for m in [
        "cupy/cuda/cub",
        "cupy/cuda/thrust",
        "cupy/random/_generator_api",
    ] {
        let name = m.rsplit('/').next().unwrap_or(m);
        let (lib, out) = (format!("{name}.pyd"), format!("{name}-sm_80.pyd"));
        unzip(
            &cache.join(CUPY),
            &format!("{m}.cp312-win_amd64.pyd"),
            d,
            &lib,
        )?;
        pruned_pe(d, &lib, &out)?;
    }
    Ok(())
}
