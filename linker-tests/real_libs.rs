//! The scanners on real libraries built by others, downloaded at test time
//! from the package registries and cached (`scripts/real-libs.sh`): a HIP
//! library from Debian's ROCm packages (librocrand1, a `.deb`), a CUDA
//! library from NVIDIA's PyPI wheels (libcurand, a `.whl`) and one of
//! CuPy's extension modules from its wheel. Each is read
//! as it ships (the package) and unpacked, and checked against the
//! reference tools: LLVM 22's `clang-offload-bundler` for the HIP bundle,
//! NVIDIA's `cuobjdump` for the CUDA fatbins, image for image and byte for
//! byte. A download that fails fails the trials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{llvm, md5_hex, ours, ours_json, run, same, tempdir, unzip};

pub const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";
pub const DEB: &str = "librocrand1_5.3.3-4_amd64.deb";
pub const WHEEL: &str = "nvidia_curand_cu12-10.3.7.77-py3-none-manylinux2014_x86_64.whl";
pub const CUPY: &str = "cupy_cuda13x-13.6.0-cp312-cp312-manylinux2014_x86_64.whl";
/// A 256 MB wheel built with CUDA 12.8, downloaded apart
/// (`scripts/real-libs.sh --onnxruntime`).
pub const ONNXRUNTIME: &str = "onnxruntime_gpu-1.31.1-cp312-cp312-manylinux_2_28_x86_64.whl";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(rocrand_deb_against_clang_offload_bundler, &[
                "bash",
                "/usr/bin/python3",
                "dpkg-deb",
                "clang-offload-bundler",
                "llvm-objcopy",
            ]),
        trial!(rocrand_deb_renamed_pairs_in_bounded_memory, &["bash", "/usr/bin/python3"]),
        trial!(curand_wheel_against_cuobjdump, &["bash", "/usr/bin/python3", CUOBJDUMP]),
        trial!(cupy_wheel_against_cuobjdump, &["bash", "/usr/bin/python3", CUOBJDUMP]),
        trial!(
            onnxruntime_arch_specific_cubins_against_cuobjdump,
            &["bash", "/usr/bin/python3", CUOBJDUMP],
        ),
    ]
}

pub type Cache = std::sync::OnceLock<Result<PathBuf, String>>;

/// The cache `scripts/real-libs.sh` fills when run with `args`, filled
/// once per run of the tests (in `cell`).
pub fn fetched(cell: &'static Cache, args: &[&str]) -> Result<PathBuf, Failed> {
    cell.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-libs.sh");
        let mut all = vec![script.to_string_lossy().into_owned()];
        all.extend(args.iter().map(|a| a.to_string()));
        let r = run(Path::new("/bin/bash"), &all, Path::new("/"));
        if r.code != 0 {
            return Err(format!(
                "scripts/real-libs.sh {args:?} failed: {}",
                r.stderr
            ));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&r.stdout).trim()))
    })
    .clone()
    .map_err(Failed::from)
}

/// The cache of downloaded libraries, filled by `scripts/real-libs.sh`.
pub fn downloads() -> Result<PathBuf, Failed> {
    static DIR: Cache = Cache::new();
    fetched(&DIR, &[])
}

/// The device images of an `inspect --json --hash=md5` document, per file
/// name (after its last `/`): (bundle ID or target, md5) for each.
pub fn images(doc: &Value) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = f["path"].as_str().unwrap_or_default();
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        let mut v: Vec<(String, String)> = f["images"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["offload_kind"] != "host")
            .map(|i| {
                let what = i["bundle_id"].as_str().map_or_else(
                    || format!("{} {}", i["target_id"], i["image_kind"]),
                    str::to_string,
                );
                let hash = i["hash"].as_str().unwrap_or_default();
                (what, hash.trim_start_matches("md5:").to_string())
            })
            .collect();
        v.sort();
        if !v.is_empty() {
            out.insert(name, v);
        }
    }
    out
}

/// `check ARGS FILE`'s exit code.
fn check(dir: &Path, args: &[&str], file: &str) -> i32 {
    let mut a = vec!["check"];
    a.extend(args);
    a.push(file);
    run(&ours(), &a, dir).code
}

/// `diff --kernels` of librocrand1's .deb against a copy named as a later
/// version, in two directories: the two pair by package name (no file is
/// added or removed, nothing differs), and the peak memory stays under
/// 112 MiB. The .deb's library inflates to 25 MB and one side's scan
/// peaks at about 75 MiB (the xz decoder, the member, its kernels); the
/// code before issue #45 read both sides at once and peaked at 151 MiB
/// (and did not pair the two names).
fn rocrand_deb_renamed_pairs_in_bounded_memory() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("old/pool"))?;
    std::fs::create_dir_all(d.join("new/pool"))?;
    std::fs::copy(cache.join(DEB), d.join("old/pool").join(DEB))?;
    std::fs::copy(
        cache.join(DEB),
        d.join("new/pool/librocrand1_5.3.4-1_amd64.deb"),
    )?;
    let (r, kib) = crate::util::ours_peak(120, &["diff", "--kernels", "--json", "old", "new"], d)?;
    same("exit code", r.code, 0)?;
    let doc: Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("diff: bad JSON: {e}"))?;
    let files = crate::diff::statuses(&doc);
    same(
        "files",
        files,
        vec![(
            "pool/librocrand1_*.deb!/usr/lib/x86_64-linux-gnu/librocrand.so.1.1",
            "same",
        )],
    )?;
    if kib > 112 << 10 {
        return Err(format!("diff of the .deb peaked at {kib} KiB, over 112 MiB").into());
    }
    Ok(())
}

/// librocrand1 from Debian: the `.deb` and its unpacked tree (where
/// `librocrand.so.1` is a symbolic link to `librocrand.so.1.1`) hold the
/// same seven code objects, counted once; each is what
/// `clang-offload-bundler -unbundle` gives for its bundle ID, byte for
/// byte, and the IDs are those `-list` gives; a gfx90a device is served by
/// the xnack+ and xnack- builds together.
fn rocrand_deb_against_clang_offload_bundler() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let deb = cache.join(DEB);
    let deb = deb.to_string_lossy();
    let r = run(Path::new("/usr/bin/dpkg-deb"), &["-x", &deb, "root"], d).ok()?;
    drop(r);
    let so = "root/usr/lib/x86_64-linux-gnu/librocrand.so.1.1";
    let from_deb = images(&ours_json(&["inspect", "--json", "--hash=md5", &deb], d)?);
    let from_tree = images(&ours_json(&["inspect", "--json", "--hash=md5", "root"], d)?);
    same(
        "images of the .deb and of its unpacked tree",
        &from_deb,
        &from_tree,
    )?;
    let ours_images = from_tree
        .get("librocrand.so.1.1")
        .ok_or("no images in librocrand.so.1.1")?
        .clone();
    same("device images", ours_images.len(), 7)?;
    let size = ours_json(&["size", "--json", "root"], d)?;
    same(
        "size: images counted",
        size["total"]["total"]["images"].as_u64(),
        Some(7),
    )?;

    // LLVM's view of the bundle in .hip_fatbin.
    let objcopy = llvm("llvm-objcopy");
    let dump = "--dump-section=.hip_fatbin=fatbin.bin";
    run(&objcopy, &[dump, so, "copy.so"], d).ok()?;
    // clang-offload-bundler 22 refuses ROCm 5's host entry ID, whose triple
    // has three parts ("invalid bundle id read from the bundle"), when it
    // reaches it with a target still to find; the scanners read it. Ours
    // as the bundler does as LLVM's on the bundle as it is; then, for
    // LLVM, the ID is given a fourth part of the same length.
    same_unbundling(d)?;
    let mut fb = std::fs::read(d.join("fatbin.bin"))?;
    let (old, new): (&[u8], &[u8]) = (b"host-x86_64-unknown-linux", b"host-x86_64-unknown-lin-g");
    let at = fb[..fb.len().min(4096)]
        .windows(old.len())
        .position(|w| w == old)
        .ok_or("no ROCm 5 host entry ID in the bundle's header")?;
    fb[at..at + old.len()].copy_from_slice(new);
    std::fs::write(d.join("fatbin.bin"), fb)?;
    let bundler = llvm("clang-offload-bundler");
    let list = run(&bundler, &["-list", "-type=o", "-input=fatbin.bin"], d).ok()?;
    let mut ids: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| !l.starts_with("host-"))
        .map(str::to_string)
        .collect();
    ids.sort();
    let ours_ids: Vec<String> = ours_images.iter().map(|(id, _)| id.clone()).collect();
    same("bundle IDs", ours_ids, ids.clone())?;
    let mut llvm_images = Vec::new();
    for id in &ids {
        let target = format!("-targets={id}");
        let out = format!("-output={id}.o");
        run(
            &bundler,
            &["-unbundle", "-type=o", "-input=fatbin.bin", &target, &out],
            d,
        )
        .ok()?;
        llvm_images.push((
            id.clone(),
            md5_hex(&std::fs::read(d.join(format!("{id}.o")))?),
        ));
    }
    same("code objects (md5)", &ours_images, &llvm_images)?;

    // Coverage as the loader decides it.
    for (args, code) in [
        (&["--require", "gfx90a"][..], 0),
        (&["--require", "gfx90a:xnack+", "--require", "gfx803"], 0),
        (&["--require", "gfx1100"], 1),
        (&["--forbid", "gfx90A"], 2),
        (&["--require", "gfx9999"], 2),
    ] {
        same(&format!("check {args:?}"), check(d, args, &deb), code)?;
    }
    Ok(())
}

/// `clang-offload-bundler -unbundle` of each entry of `fatbin.bin` in `d`
/// (librocrand's bundle with ROCm 5's host ID), by LLVM 22 and by us under
/// its name: the same exit code for each (LLVM serves the entries it
/// reads before the host ID and refuses the others), and the same bytes
/// where it succeeds.
fn same_unbundling(d: &Path) -> Result<(), Failed> {
    let llvm_bundler = llvm("clang-offload-bundler");
    let ours_bundler = crate::util::ours_as("clang-offload-bundler");
    let list = run(&llvm_bundler, &["-list", "-type=o", "-input=fatbin.bin"], d).ok()?;
    let (mut served, mut refused) = (0, 0);
    for id in String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter(|l| !l.starts_with("host-"))
    {
        let target = format!("-targets={id}");
        let unbundle = |tool: &Path, out: &str| {
            let output = format!("-output={out}");
            run(
                tool,
                &[
                    "-unbundle",
                    "-type=o",
                    "-input=fatbin.bin",
                    &target,
                    &output,
                ],
                d,
            )
        };
        let (theirs, ours) = (
            unbundle(&llvm_bundler, "llvm.co"),
            unbundle(&ours_bundler, "ours.co"),
        );
        same(&format!("{id}: exit code"), ours.code, theirs.code)?;
        if theirs.code == 0 {
            served += 1;
            same(
                &format!("{id}: bytes"),
                md5_hex(&std::fs::read(d.join("ours.co"))?),
                md5_hex(&std::fs::read(d.join("llvm.co"))?),
            )?;
        } else {
            refused += 1;
            if d.join("ours.co").exists() {
                return Err(format!("{id}: refused, but ours.co was written").into());
            }
        }
        for f in ["llvm.co", "ours.co"] {
            let _ = std::fs::remove_file(d.join(f));
        }
    }
    // Both outcomes occur: the host ID comes third in LLVM's order.
    if served == 0 || refused == 0 {
        return Err(format!("{served} served and {refused} refused: no case of each").into());
    }
    Ok(())
}

/// libcurand from NVIDIA's wheel: see [`cuda_wheel`]; sm_90 cubins
/// serve `--require sm_90`, not the arch-specific `sm_90a`.
fn curand_wheel_against_cuobjdump() -> Result<(), Failed> {
    cuda_wheel(
        WHEEL,
        "nvidia/curand/lib/libcurand.so.10",
        &[
            (&["--require", "sm_90"][..], 0),
            (&["--require", "sm_90a"], 1),
            (&["--forbid", "sm90"], 2),
        ],
    )
}

/// One of CuPy's extension modules from its wheel (zstd-compressed cubins,
/// sm_120 also as PTX): see [`cuda_wheel`].
fn cupy_wheel_against_cuobjdump() -> Result<(), Failed> {
    cuda_wheel(
        CUPY,
        "cupy/random/_generator_api.cpython-312-x86_64-linux-gnu.so",
        &[
            (&["--require", "sm_89"][..], 0),
            (&["--forbid", "sm_75:cubin"], 1),
            (&["--require", "sm_90a"], 1),
            (&["--require", "sm89"], 2),
        ],
    )
}

/// A library `member` of the wheel `wheel` (from the cache): the wheel
/// and the library hold the same images; cuobjdump lists as many, for the
/// same SM versions; the files `extract` writes are those `cuobjdump
/// -xelf all -xptx all` writes, byte for byte; and `check` with each of
/// `rules` exits as given.
fn cuda_wheel(wheel: &str, member: &str, rules: &[(&[&str], i32)]) -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    let wheel = cache.join(wheel);
    let lib = member.rsplit('/').next().unwrap_or(member);
    unzip(&wheel, member, d, lib)?;
    let wheel = wheel.to_string_lossy();
    let from_wheel = images(&ours_json(&["inspect", "--json", "--hash=md5", &wheel], d)?);
    let from_lib = images(&ours_json(&["inspect", "--json", "--hash=md5", lib], d)?);
    let ours_images = from_lib.get(lib).ok_or("no images")?;
    same(
        "images of the wheel and of the library",
        from_wheel.get(lib),
        Some(ours_images),
    )?;

    // cuobjdump's list: one line per image, with its arch.
    let list = run(Path::new(CUOBJDUMP), &["-lelf", "-lptx", lib], d).ok()?;
    let mut theirs: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| {
            l.split('.')
                .find(|p| p.starts_with("sm_"))
                .map(str::to_string)
        })
        .collect();
    theirs.sort();
    let mut archs: Vec<String> = ours_images
        .iter()
        .map(|(what, _)| what.split('"').nth(1).unwrap_or_default().to_string())
        .collect();
    archs.sort();
    same("images per SM (cuobjdump -lelf -lptx)", archs, theirs)?;

    // The extracted bytes.
    std::fs::create_dir(d.join("cuobjdump"))?;
    let up = format!("../{lib}");
    run(
        Path::new(CUOBJDUMP),
        &["-xelf", "all", "-xptx", "all", &up],
        &d.join("cuobjdump"),
    )
    .ok()?;
    run(&ours(), &["extract", "-o", "ours", lib], d).ok()?;
    let ours_files = crate::util::md5s_in(&d.join("ours"))?;
    same("files extracted", ours_files.len(), ours_images.len())?;
    same(
        "extracted bytes (md5 of every file)",
        ours_files,
        crate::util::md5s_in(&d.join("cuobjdump"))?,
    )?;

    for (args, code) in rules {
        same(&format!("check {args:?}"), check(d, args, &wheel), *code)?;
    }
    Ok(())
}

/// `cuobjdump -lelf FILE`'s cubins, in its order: the arch of each.
pub(crate) fn cuobjdump_cubins(dir: &Path, file: &str) -> Result<Vec<String>, Failed> {
    let list = run(Path::new(CUOBJDUMP), &["-lelf", file], dir).ok()?;
    Ok(String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.rsplit('.').nth(1).map(str::to_string))
        .collect())
}

/// How many of `archs` each arch is.
fn counted(archs: &[String]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for a in archs {
        *m.entry(a.clone()).or_default() += 1;
    }
    m
}

/// onnxruntime-gpu's CUDA provider (CUDA 12.8, 2,058 zstd-compressed
/// cubins of ELF ABI 8, 600 for sm_90a and 317 for sm_120a): every cubin
/// named as `cuobjdump -lelf` names it, in its order (the arch-specific
/// mark read from the entries' flags, cuobjdump's from the decompressed
/// cubins); `size` counts as many per arch; the rules on `sm_90a` hold
/// (an sm_90a cubin serves an sm_90 device, not an sm_100 one, and sm_120a
/// code does not run on 12.1); `prune --keep sm_90` keeps the 600 sm_90a
/// cubins and says why, once --allow-empty lets the 9 fatbins of sm_120a
/// code alone stay whole.
fn onnxruntime_arch_specific_cubins_against_cuobjdump() -> Result<(), Failed> {
    static DIR: Cache = Cache::new();
    let wheel = fetched(&DIR, &["--onnxruntime"])?.join(ONNXRUNTIME);
    let t = tempdir();
    let d = t.path();
    let member = "onnxruntime/capi/libonnxruntime_providers_cuda.so";
    let lib = "libonnxruntime_providers_cuda.so";
    let unzip = "import shutil, sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nshutil.copyfileobj(z.open(sys.argv[2]), open(sys.argv[3], 'wb'), 1 << 20)\n";
    let wheel = wheel.to_string_lossy();
    run(
        Path::new("/usr/bin/python3"),
        &["-c", unzip, &wheel, member, lib],
        d,
    )
    .ok()?;

    let theirs = cuobjdump_cubins(d, lib)?;
    let doc = ours_json(&["inspect", "--json", lib], d)?;
    let ours_archs: Vec<String> = doc["files"][0]["images"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| i["target_id"].as_str().unwrap_or_default().to_string())
        .collect();
    same("cubins in order (cuobjdump -lelf)", &ours_archs, &theirs)?;
    let want: BTreeMap<String, usize> = [
        ("sm_120a", 317),
        ("sm_75", 217),
        ("sm_80", 308),
        ("sm_86", 308),
        ("sm_89", 308),
        ("sm_90a", 600),
    ]
    .map(|(a, n)| (a.to_string(), n))
    .into();
    same("cubins per arch", counted(&theirs), want.clone())?;
    let size = ours_json(&["size", "--json", lib], d)?;
    let by_target: BTreeMap<String, usize> = size["files"][0]["by_target"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            let arch = k.split(' ').nth(2).unwrap_or_default().to_string();
            (
                arch,
                usize::try_from(v["images"].as_u64().unwrap_or(0)).unwrap_or(0),
            )
        })
        .collect();
    same("size: images per arch", by_target, want)?;

    for (args, code) in [
        (&["--require", "sm_90a"][..], 0),
        (&["--forbid", "sm_90a"], 1),
        (&["--require", "sm_90"], 0),
        (&["--forbid", "sm_90"], 1),
        (&["--require", "sm_100"], 1),
        (&["--require", "sm_120"], 0),
        (&["--require", "sm_121"], 1),
        (&["--forbid", "sm_100a"], 0),
        (&["--require-kernel", "*@sm_90a"], 0),
    ] {
        same(&format!("check {args:?}"), check(d, args, lib), code)?;
    }

    onnxruntime_prune(d, lib)
}

/// `prune --keep sm_90` on onnxruntime's `lib` (in `d`): the 9 fatbins
/// of sm_120a code alone are emptied (and counted), and the 600 sm_90a
/// cubins stay, with why; `--keep sm_70`, which no image is for, is
/// refused without `--allow-empty`.
fn onnxruntime_prune(d: &Path, lib: &str) -> Result<(), Failed> {
    let refused = run(
        &ours(),
        &["prune", "--keep", "sm_70", "-o", "none.so", lib],
        d,
    );
    same("prune --keep sm_70 without --allow-empty", refused.code, 2)?;
    if !refused.stderr.contains("--allow-empty") || d.join("none.so").exists() {
        return Err(format!("no word of --allow-empty: {}", refused.stderr).into());
    }
    let doc = ours_json(
        &["prune", "--keep", "sm_90", "--json", "-o", "out.so", lib],
        d,
    )?;
    same("containers emptied", &doc["files"][0]["emptied"], &9.into())?;
    let kept: Vec<(String, u64, String)> = doc["files"][0]["kept"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["target"].as_str().unwrap_or_default().to_string(),
                g["images"].as_u64().unwrap_or(0),
                g["why"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = vec![(
        "sm_90a".to_string(),
        600,
        "sm_90: sm_90 devices load sm_90a code (arch-specific: sm_90 devices only)".to_string(),
    )];
    same("prune --keep sm_90: kept, and why", kept, want)?;
    let left = counted(&cuobjdump_cubins(d, "out.so")?);
    let want: BTreeMap<String, usize> = [("sm_90a", 600)].map(|(a, n)| (a.to_string(), n)).into();
    same("cuobjdump -lelf of the pruned library", left, want)?;

    // diff keys its groups by the same names: the sm_90a group is the same
    // on both sides, the others go.
    let r = run(&ours(), &["diff", "--json", lib, "out.so"], d);
    same("diff exit (files differ)", r.code, 1)?;
    let diff: Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("diff: bad JSON: {e}"))?;
    let groups: Vec<(String, String, u64, u64)> = diff["files"][0]["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["target_id"].as_str().unwrap_or_default().to_string(),
                g["status"].as_str().unwrap_or_default().to_string(),
                g["old"]["images"].as_u64().unwrap_or(0),
                g["new"]["images"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let want: Vec<(String, String, u64, u64)> = [
        ("sm_75", "removed", 217, 0),
        ("sm_80", "removed", 308, 0),
        ("sm_86", "removed", 308, 0),
        ("sm_89", "removed", 308, 0),
        ("sm_90a", "same", 600, 600),
        ("sm_120a", "removed", 317, 0),
    ]
    .map(|(t, s, o, n)| (t.to_string(), s.to_string(), o, n))
    .into();
    same("diff: groups by cuobjdump's names", groups, want)
}
