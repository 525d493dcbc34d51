//! Files that are themselves one device image (issue #45), built here by
//! clang-22 and NVIDIA's `ptxas`, twice (the second build adds a kernel,
//! `extra`): PTX from clang's NVPTX back end, the cubin `ptxas` makes of
//! it, a HIP code object for `gfx90a:xnack-`, HIP device bitcode for
//! gfx942 and NVPTX bitcode for sm_80, and OpenCL compiled to SPIR-V.
//!
//! Each is one image of its kind and target, which the reference tools
//! confirm: the cubin's `sm=` (`cuobjdump -elf`), the code object's
//! `amdhsa.target` (`llvm-readelf --notes`), the bitcode's triple and
//! `"target-cpu"` (`llvm-dis`). `inspect --kernels` of the cubin equals
//! `cuobjdump -res-usage` and `-symbols`, of the code object `llvm-readelf
//! --notes` and `llvm-nm`, of the PTX its `.entry` lines; `check`,
//! `extract` (the bytes of the file), `size`, `list`, `diff` (the kernel
//! added) and `prune` work on each as on an image in a container. The
//! same files cut short or with a section table outside them are damaged
//! data: exit 2, the file named, nothing extracted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::damaged::damage_failure;
use crate::kernels::{amdgpu, cuda};
use crate::util::{files, llvm, ours, ours_json, run, same, tempdir};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";
const TOOLS: &[&str] = &[
    "clang",
    "clang++",
    "llvm-readelf",
    "llvm-nm",
    "llvm-dis",
    PTXAS,
    CUOBJDUMP,
];

/// C for NVPTX and OpenCL for SPIR-V (`KERNEL` says how a kernel is
/// marked), and HIP.
const C_SRC: &str = "KERNEL void scale(GLOBAL float *p, float f) { p[0] *= f; }\n\
                     #ifdef EXTRA\n\
                     KERNEL void extra(GLOBAL float *p) { p[1] = 0; }\n\
                     #endif\n";
const HIP_SRC: &str = "#define __global__ __attribute__((global))\n\
                       __global__ void scale(float *p, float f) { p[0] *= f; }\n\
                       #ifdef EXTRA\n\
                       __global__ void extra(float *p) { p[1] = 0; }\n\
                       #endif\n";

/// The files of each build, with their kind, triple and target as the
/// scanner should report them (targets the reference tools confirm too).
const FILES: &[(&str, &str, &str, &str)] = &[
    ("k.ptx", "ptx", "nvptx64-nvidia-cuda", "sm_80"),
    ("k.cubin", "cubin", "nvptx64-nvidia-cuda", "sm_80"),
    ("k.hsaco", "object", "amdgcn-amd-amdhsa", "gfx90a:xnack-"),
    ("k.bc", "bitcode", "amdgcn-amd-amdhsa", "gfx942"),
    ("nv.bc", "bitcode", "nvptx64-nvidia-cuda", "sm_80"),
    ("k.spv", "spirv", "spirv64", ""),
];

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(each_file_is_one_image_of_its_kind_and_target, TOOLS),
        trial!(kernels_match_cuobjdump_and_readelf, TOOLS),
        trial!(check_extract_size_list_and_prune, TOOLS),
        trial!(diff_of_two_builds_shows_the_added_kernel, TOOLS),
        trial!(damaged_image_files_are_errors_naming_the_file, TOOLS),
    ]
}

/// The two builds, `a/` and `b/` (with `extra`), made once.
fn built() -> Result<&'static Path, Failed> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    crate::util::built_once(&DIR, build)
}

fn build() -> Result<PathBuf, String> {
    let dir = tempdir().keep();
    let w =
        |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| e.to_string());
    w("k.c", C_SRC)?;
    w("k.cl", C_SRC)?;
    w("k.hip", HIP_SRC)?;
    let nvptx = [
        "--target=nvptx64-nvidia-cuda",
        "-march=sm_80",
        "-Xclang",
        "-target-feature",
        "-Xclang",
        "+ptx78",
        "-DKERNEL=__attribute__((nvptx_kernel))",
        "-DGLOBAL=",
    ];
    let hip = [
        "-x",
        "hip",
        "--cuda-device-only",
        "--no-gpu-bundle-output",
        "-nogpulib",
        "-nogpuinc",
        "-O2",
    ];
    for v in ["a", "b"] {
        std::fs::create_dir_all(dir.join(v)).map_err(|e| e.to_string())?;
        let extra: &[&str] = if v == "b" { &["-DEXTRA"] } else { &[] };
        let out = |f: &str| format!("{v}/{f}");
        let builds: Vec<(PathBuf, Vec<String>)> = vec![
            (
                llvm("clang"),
                args(&[&nvptx, extra, &["-S", "k.c", "-o", &out("k.ptx")]]),
            ),
            (
                PathBuf::from(PTXAS),
                args(&[&["-arch=sm_80", &out("k.ptx"), "-o", &out("k.cubin")]]),
            ),
            (
                llvm("clang++"),
                args(&[
                    &hip,
                    extra,
                    &["--offload-arch=gfx90a:xnack-", "-c", "k.hip"],
                    &["-o", &out("k.hsaco")],
                ]),
            ),
            (
                llvm("clang++"),
                args(&[
                    &hip,
                    extra,
                    &["--offload-arch=gfx942", "-emit-llvm", "-c", "k.hip"],
                    &["-o", &out("k.bc")],
                ]),
            ),
            (
                llvm("clang"),
                args(&[
                    &nvptx,
                    extra,
                    &["-emit-llvm", "-c", "k.c", "-o", &out("nv.bc")],
                ]),
            ),
            (
                llvm("clang"),
                args(&[
                    &[
                        "--target=spirv64",
                        "-cl-std=CL2.0",
                        "-DKERNEL=__kernel",
                        "-DGLOBAL=__global",
                    ],
                    extra,
                    &["-c", "k.cl", "-o", &out("k.spv")],
                ]),
            ),
        ];
        for (prog, a) in builds {
            let r = run(&prog, &a, &dir);
            if r.code != 0 {
                return Err(format!("{} {a:?}: {}", prog.display(), r.stderr));
            }
        }
    }
    Ok(dir)
}

fn args(parts: &[&[&str]]) -> Vec<String> {
    parts
        .iter()
        .flat_map(|p| p.iter().map(|s| s.to_string()))
        .collect()
}

/// The one file of `inspect --json` of `file`.
fn inspected(dir: &Path, extra: &[&str], file: &str) -> Result<Value, Failed> {
    let mut a = vec!["inspect", "--json"];
    a.extend(extra);
    a.push(file);
    let doc = ours_json(&a, dir)?;
    Ok(doc["files"][0].clone())
}

/// What the reference tools say a file is built for: `cuobjdump -elf`'s
/// `sm=`, `llvm-readelf --notes`' `amdhsa.target` (after the triple),
/// `llvm-dis`' `target triple` and `"target-cpu"`, PTX's `.target`.
fn reference_target(dir: &Path, file: &str) -> Result<(String, String), Failed> {
    let text = |prog: &Path, a: &[&str]| -> Result<String, Failed> {
        let r = run(prog, a, dir).ok()?;
        Ok(String::from_utf8_lossy(&r.stdout).into_owned())
    };
    let quoted = |line: &str| line.split('"').nth(1).unwrap_or_default().to_string();
    Ok(match file.rsplit_once('.').map_or("", |(_, e)| e) {
        "cubin" => (
            "nvptx64-nvidia-cuda".into(),
            cuda::expected(dir, file)?.target,
        ),
        "hsaco" => {
            let notes = text(&llvm("llvm-readelf"), &["--notes", file])?;
            let t = notes
                .lines()
                .find_map(|l| l.strip_prefix("amdhsa.target:"))
                .ok_or("no amdhsa.target")?
                .trim()
                .trim_matches('\'');
            let (triple, target) = t.split_once("--").ok_or("a target with no triple")?;
            (triple.into(), target.into())
        }
        "bc" => {
            let ir = text(&llvm("llvm-dis"), &["-o", "-", file])?;
            let triple = ir
                .lines()
                .find(|l| l.starts_with("target triple"))
                .map(quoted)
                .ok_or("no triple")?;
            let cpu = ir
                .split("\"target-cpu\"=")
                .nth(1)
                .map(|r| quoted(&format!(" {r}")))
                .unwrap_or_default();
            (triple, cpu)
        }
        "ptx" => {
            let ptx = std::fs::read_to_string(dir.join(file))?;
            let target = ptx
                .lines()
                .find_map(|l| l.strip_prefix(".target "))
                .ok_or("no .target")?;
            let wide = ptx.contains(".address_size 64");
            let triple = if wide {
                "nvptx64-nvidia-cuda"
            } else {
                "nvptx-nvidia-cuda"
            };
            (triple.into(), target.trim().into())
        }
        _ => ("spirv64".into(), String::new()),
    })
}

fn each_file_is_one_image_of_its_kind_and_target() -> Result<(), Failed> {
    let d = built()?;
    for (name, kind, triple, target) in FILES {
        let file = format!("a/{name}");
        let f = inspected(d, &[], &file)?;
        let size = std::fs::metadata(d.join(&file))?.len();
        let c = &f["containers"];
        same(
            &format!("{file}: containers"),
            c.as_array().map(Vec::len),
            Some(1),
        )?;
        same(
            &format!("{file}: container kind"),
            c[0]["kind"].as_str(),
            Some("image-file"),
        )?;
        same(
            &format!("{file}: container size"),
            c[0]["size"].as_u64(),
            Some(size),
        )?;
        let i = &f["images"];
        same(
            &format!("{file}: images"),
            i.as_array().map(Vec::len),
            Some(1),
        )?;
        let got = (
            i[0]["image_kind"].as_str().unwrap_or_default(),
            i[0]["triple"].as_str().unwrap_or_default(),
            i[0]["target_id"].as_str().unwrap_or_default(),
            i[0]["size"].as_u64(),
            i[0]["offset"].as_u64(),
        );
        same(
            &format!("{file}: image"),
            got,
            (*kind, *triple, *target, Some(size), Some(0)),
        )?;
        let (rt, rtarget) = reference_target(d, &file)?;
        same(
            &format!("{file}: triple and target (reference tool)"),
            (rt.as_str(), rtarget.as_str()),
            (*triple, *target),
        )?;
        same(
            &format!("{file}: problems"),
            f["problems"].as_array().map(Vec::len),
            Some(0),
        )?;
    }
    Ok(())
}

/// Our listing of the one image of `file`.
fn listing(d: &Path, file: &str) -> Result<Value, Failed> {
    let f = inspected(d, &["--kernels"], file)?;
    let ks = f["kernels"].as_array().cloned().unwrap_or_default();
    same(&format!("{file}: listings"), ks.len(), 1)?;
    Ok(ks[0].clone())
}

fn names(listing: &Value) -> BTreeSet<String> {
    listing["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["name"].as_str().map(str::to_string))
        .collect()
}

fn kernels_match_cuobjdump_and_readelf() -> Result<(), Failed> {
    let d = built()?;
    for v in ["a", "b"] {
        // The cubin: cuobjdump's entries and -res-usage figures.
        let cubin = format!("{v}/k.cubin");
        let e = cuda::expected(d, &cubin)?;
        cuda::check_listing(&cubin, &listing(d, &cubin)?, &e)?;
        // The code object: readelf's metadata and nm's kernels.
        let hsaco = format!("{v}/k.hsaco");
        let l = listing(d, &hsaco)?;
        let theirs = amdgpu::readelf_kernels(d, Path::new(&hsaco))?;
        let (nm, _) = amdgpu::nm_symbols(d, Path::new(&hsaco))?;
        same(
            &format!("{hsaco}: kernels (metadata)"),
            names(&l),
            theirs.keys().cloned().collect(),
        )?;
        same(&format!("{hsaco}: kernels (.kd symbols)"), names(&l), nm)?;
        for k in l["kernels"].as_array().into_iter().flatten() {
            let name = k["name"].as_str().unwrap_or_default();
            let ours: BTreeMap<&str, Option<String>> = amdgpu::KEYS
                .iter()
                .map(|key| {
                    (
                        *key,
                        Some(&k["resources"][key])
                            .filter(|v| !v.is_null())
                            .map(Value::to_string),
                    )
                })
                .collect();
            let md: BTreeMap<&str, Option<String>> = amdgpu::KEYS
                .iter()
                .map(|key| (*key, theirs[name].get(*key).cloned()))
                .collect();
            same(&format!("{hsaco} {name}: figures"), ours, md)?;
        }
        // PTX: its `.entry` lines.
        let ptx = format!("{v}/k.ptx");
        let text = std::fs::read_to_string(d.join(&ptx))?;
        let entries: BTreeSet<String> = text
            .lines()
            .filter_map(|l| l.split(".entry ").nth(1))
            .map(|r| r.trim_end_matches('(').trim().to_string())
            .collect();
        same(
            &format!("{ptx}: kernels"),
            names(&listing(d, &ptx)?),
            entries,
        )?;
        let want = if v == "a" { 1 } else { 2 };
        same(
            &format!("{cubin}: kernels"),
            names(&listing(d, &cubin)?).len(),
            want,
        )?;
    }
    // Bitcode and SPIR-V are listed as images, their kernels not read.
    for f in ["a/k.bc", "a/k.spv"] {
        let got = inspected(d, &["--kernels"], f)?;
        same(
            &format!("{f}: listings"),
            got["kernels"].as_array().map(Vec::len),
            Some(0),
        )?;
    }
    Ok(())
}

fn check_extract_size_list_and_prune() -> Result<(), Failed> {
    let d = built()?;
    let code = |a: &[&str]| run(&ours(), a, d).code;
    // check: the target the file is built for, and no other.
    for (a, want) in [
        (&["check", "--require", "sm_80:cubin", "a/k.cubin"][..], 0),
        (&["check", "--require", "sm_90", "a/k.cubin"], 1),
        (
            &[
                "check",
                "--require",
                "sm_80",
                "--require-kernel",
                "scale",
                "a/k.ptx",
            ],
            0,
        ),
        (&["check", "--require", "gfx90a:xnack-", "a/k.hsaco"], 0),
        // xnack- code does not serve a gfx90a with xnack on.
        (&["check", "--require", "gfx90a", "a/k.hsaco"], 1),
        (
            &["check", "--require-kernel", "_Z5scale*@gfx90a", "a/k.hsaco"],
            0,
        ),
        (&["check", "--require-kernel", "extra", "a/k.cubin"], 1),
        (&["check", "--require-kernel", "extra", "b/k.cubin"], 0),
        (&["check", "--forbid", "gfx942", "a/k.bc"], 1),
        (&["check", "--require", "*:spirv", "a/k.spv"], 0),
    ] {
        same(&format!("{a:?}: exit code"), code(a), want)?;
    }
    for (name, kind, _, _) in FILES {
        let file = format!("a/{name}");
        let input = std::fs::read(d.join(&file))?;
        // extract writes the file's bytes.
        let out = format!("x-{name}");
        run(&ours(), &["extract", &file, "-o", &out], d).ok()?;
        let written: Vec<Vec<u8>> = files(&d.join(&out)).into_values().collect();
        same(&format!("{file}: extracted"), written.len(), 1)?;
        crate::util::same_bytes(&format!("{file}: extracted bytes"), &written[0], &input)?;
        // size counts it whole.
        let s = ours_json(&["size", "--json", &file], d)?;
        let text = s.to_string();
        if !text.contains(&format!("\"bytes\":{}", input.len())) || !text.contains(kind) {
            return Err(format!("{file}: size --json: {text}").into());
        }
        // list shows it, as the scanner finds it.
        let r = run(&ours(), &["list", &file], d).ok()?;
        let table = String::from_utf8_lossy(&r.stdout);
        if !table.contains("image-file")
            || !r.stderr.contains("the file is itself one device image")
        {
            return Err(format!("{file}: list: {table}{}", r.stderr).into());
        }
    }
    // prune: kept as it is when its target stays, refused (and nothing
    // written) when it would go.
    run(
        &ours(),
        &["prune", "--keep", "sm_80", "-o", "kept.cubin", "a/k.cubin"],
        d,
    )
    .ok()?;
    let (kept, input) = (
        std::fs::read(d.join("kept.cubin"))?,
        std::fs::read(d.join("a/k.cubin"))?,
    );
    crate::util::same_bytes("prune --keep sm_80: output", &kept, &input)?;
    let r = run(
        &ours(),
        &[
            "prune",
            "--drop",
            "gfx90a",
            "--allow-empty",
            "-o",
            "gone.hsaco",
            "a/k.hsaco",
        ],
        d,
    );
    crate::util::clean_failure_code("prune --drop gfx90a", &r, "a/k.hsaco", 2)?;
    if !r.stderr.contains("itself one device image") || d.join("gone.hsaco").exists() {
        return Err(format!("prune --drop gfx90a: {}", r.stderr).into());
    }
    Ok(())
}

fn diff_of_two_builds_shows_the_added_kernel() -> Result<(), Failed> {
    let d = built()?;
    // Exit 1: the builds differ.
    let r = run(&ours(), &["diff", "--kernels", "--json", "a", "b"], d);
    same("diff: exit code", r.code, 1)?;
    let doc: Value = serde_json::from_slice(&r.stdout)?;
    let mut added = BTreeMap::new();
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = f["path"].as_str().unwrap_or_default().to_string();
        same(
            &format!("{path}: status"),
            f["status"].as_str(),
            Some("changed"),
        )?;
        let ts = f["targets"].as_array().cloned().unwrap_or_default();
        same(&format!("{path}: targets"), ts.len(), 1)?;
        let names: Vec<String> = ts[0]["kernels"]["added"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k["name"].as_str().map(str::to_string))
            .collect();
        added.insert(path, names);
    }
    let want: BTreeMap<String, Vec<String>> = FILES
        .iter()
        .map(|(n, ..)| {
            let listed = matches!(*n, "k.ptx" | "k.cubin" | "k.hsaco");
            let names = if !listed {
                vec![]
            } else if *n == "k.hsaco" {
                vec!["_Z5extraPf".to_string()]
            } else {
                vec!["extra".to_string()]
            };
            (n.to_string(), names)
        })
        .collect();
    same("kernels added per file", added, want)
}

fn damaged_image_files_are_errors_naming_the_file() -> Result<(), Failed> {
    let d = built()?;
    for name in ["k.cubin", "k.hsaco", "k.spv", "k.bc"] {
        let input = std::fs::read(d.join("a").join(name))?;
        // Cut in the middle (at an odd size: SPIR-V cut between two
        // instructions is whole words that look like a module); and (ELF)
        // a section table past the end.
        let mut cuts = vec![(
            format!("cut-{name}"),
            input[..(input.len() / 2) | 1].to_vec(),
        )];
        if name.ends_with("cubin") || name.ends_with("hsaco") {
            let mut m = input.clone();
            m[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
            cuts.push((format!("shoff-{name}"), m));
        }
        for (file, bytes) in cuts {
            std::fs::write(d.join(&file), bytes)?;
            for a in [
                &["inspect", &file][..],
                &["inspect", "--kernels", &file],
                &["check", "--require", "*", &file],
                &["size", &file],
                &["extract", &file, "-o", "damaged-out"],
            ] {
                let r = run(&ours(), a, d);
                damage_failure(&format!("{a:?}"), &r, &file)?;
                if !r.stderr.lines().any(|l| l.contains(&file)) {
                    return Err(
                        format!("{a:?}: no line on stderr names {file}: {}", r.stderr).into(),
                    );
                }
            }
            if !files(&d.join("damaged-out")).is_empty() {
                return Err(format!("{file}: extract wrote a damaged image").into());
            }
        }
    }
    Ok(())
}
