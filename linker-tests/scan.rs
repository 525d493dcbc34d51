//! The scanners (`inspect`, `extract`, `check`, `size`) against LLVM 22 on
//! real binaries built here with clang-22: OpenMP offload executables and
//! objects (host-offload and gfx90a/gfx1030), HIP objects and executables
//! (plain, `-fgpu-rdc`, `--offload-compress`, two translation units), a
//! static archive of them, bare and compressed bundles made by
//! clang-offload-bundler, a CUDA new-driver object (sm_50/sm_52), and a CUDA
//! object with a `.nv_fatbin` made through stand-in ptxas/fatbinary tools
//! (no CUDA toolkit here; the stand-in writes the container layout of
//! docs/formats/cuda-fatbin.md).
//!
//! For each file, every image LLVM finds (`llvm-objdump --offloading`, which
//! also writes bundle entries to files; `clang-offload-bundler -list` and
//! `-unbundle` for bundled objects and bare bundles; `llvm-offload-binary`
//! to extract OffloadBinary images) must be found by `inspect` with the same
//! triple, arch and kind, and `extract` must write the same bytes. The
//! executables with their section headers stripped must give the same
//! images through the raw scan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{llvm, md5_hex, ours, run, same, tempdir, trial};

pub(crate) const TOOLS: &[&str] = &[
    "clang",
    "llvm-objdump",
    "llvm-objcopy",
    "llvm-ar",
    "llvm-offload-binary",
    "clang-offload-bundler",
    "/usr/bin/python3",
];

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| trial(format!("scan::{name}"), TOOLS, f);
    vec![
        t("openmp_images_match_llvm", || {
            compare(&["omp_host.exe", "omp_gfx.exe", "omp_gfx.o"])
        }),
        t("hip_bundles_match_llvm", || {
            compare(&["hip.o", "hip.exe", "hip_rdc.o", "hip_rdc.exe"])
        }),
        t("compressed_bundles_match_llvm", || {
            compare(&["hipc.o", "hipc.exe", "bare.bundle", "bare.ccob"])
        }),
        t("archive_members_match_llvm", || compare(&["libmix.a"])),
        t("cuda_offload_binary_matches_llvm", || compare(&["cuda.o"])),
        t("cuda_fatbin_entries", cuda_fatbin),
        t("stripped_section_headers_give_the_same_images", stripped),
        t("check_is_a_ci_gate", check_gate),
        t("size_counts_innermost_images", size),
        t("hostile_files_do_not_fail_the_scan", hostile),
        t("thin_archives_read_their_member_files", thin_archives),
    ]
}

/// A thin archive (`llvm-ar rcT`) gives the images of the regular archive
/// of the same members, read from the member files next to it whatever
/// the working directory; extract writes the same files; a missing member
/// file is a problem that names it, not a failure.
fn thin_archives() -> Result<(), Failed> {
    let b = built()?;
    let t = tempdir();
    let d = t.path();
    let members = ["hip_rdc.o", "hip.o", "hipc.o", "omp_gfx.o"];
    for m in members {
        std::fs::copy(b.dir.join(m), d.join(m)).map_err(|e| e.to_string())?;
    }
    for (flags, name) in [("rc", "full.a"), ("rcT", "thin.a")] {
        let mut args = vec![flags, name];
        args.extend(members);
        run(&llvm("llvm-ar"), &args, d).ok()?;
    }
    // What each image is, and in which member, without file offsets
    // (a thin member has none in the archive).
    let facts = |f: &Value| -> Vec<String> {
        let containers = f["containers"].as_array().cloned().unwrap_or_default();
        let mut v: Vec<String> = f["images"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|i| {
                let c = i["container"].as_u64().unwrap_or(u64::MAX);
                let member = containers
                    .iter()
                    .find(|k| k["id"].as_u64() == Some(c))
                    .map(|k| s(&k["member"]))
                    .unwrap_or_default();
                format!(
                    "{member} {} {} {} {} {} {}",
                    s(&i["size"]),
                    s(&i["offload_kind"]),
                    s(&i["triple"]),
                    s(&i["target_id"]),
                    s(&i["image_kind"]),
                    s(&i["hash"])
                )
            })
            .collect();
        v.sort();
        v
    };
    let full = facts(&inspect(&d.join("full.a"), &["--verify"])?);
    let thin_json = inspect(&d.join("thin.a"), &["--verify"])?;
    if full.len() < 4 || !full.iter().all(|f| !f.starts_with(' ')) {
        return Err(format!("too few images, or without members: {full:?}").into());
    }
    same("thin vs regular archive", facts(&thin_json), full.clone())?;
    if thin_json["problems"]
        .as_array()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(format!("problems: {}", thin_json["problems"]).into());
    }
    // extract: the same files with the same bytes (under the archive's
    // name, so each from its own directory).
    let listing = |dir: &Path| -> Result<Vec<(String, String)>, Failed> {
        let mut v = Vec::new();
        for e in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
            let bytes = std::fs::read(e.path()).map_err(|e| e.to_string())?;
            let name = e
                .file_name()
                .to_string_lossy()
                .replace("thin.a", "X")
                .replace("full.a", "X");
            v.push((name, md5_hex(&bytes)));
        }
        v.sort();
        Ok(v)
    };
    for a in ["full.a", "thin.a"] {
        let out = d.join(format!("x-{a}"));
        run(
            &ours(),
            &[
                "extract",
                "-o",
                &out.to_string_lossy(),
                &d.join(a).to_string_lossy(),
            ],
            Path::new("/"),
        )
        .ok()?;
    }
    let (xf, xt) = (listing(&d.join("x-full.a"))?, listing(&d.join("x-thin.a"))?);
    if xf.len() < 4 {
        return Err(format!("extract wrote too little: {xf:?}").into());
    }
    same("extracted from thin vs regular", xt, xf)?;
    // A member file gone: reported by name; the other members still read.
    std::fs::remove_file(d.join("hipc.o")).map_err(|e| e.to_string())?;
    let gone = inspect(&d.join("thin.a"), &["--allow-corrupt"])?;
    // A member that cannot be read is damage: exit 2 without the option.
    let r = run(
        &ours(),
        &["inspect", &d.join("thin.a").to_string_lossy()],
        d,
    );
    if r.code != 2 {
        return Err(format!("missing member: exit {}", r.code).into());
    }
    let problems = gone["problems"].to_string();
    if !problems.contains("hipc.o") || gone["images"].as_array().is_none_or(|i| i.len() < 3) {
        return Err(format!("missing member: {gone}").into());
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Building the binaries (once per run)

pub(crate) struct Built {
    pub(crate) dir: PathBuf,
}

const OMP_C: &str = "#include <stdio.h>\nint main(void) {\n  int x = 0;\n#pragma omp target map(tofrom : x)\n  { x = 42; }\n  printf(\"%d\\n\", x);\n  return 0;\n}\n";
/// No HIP headers here: declare what clang's kernel launch needs.
const K_HIP: &str = "#define __global__ __attribute__((global))\ntypedef struct { unsigned x, y, z; } dim3x;\nextern \"C\" int hipLaunchKernel(const void *, dim3x, dim3x, void **, unsigned long, void *);\n__global__ void KERNEL(int *p) { *p = 1; }\n";
const K_CU: &str =
    "#define __global__ __attribute__((global))\n__global__ void kern(int *p) { *p = 1; }\n";
const MAIN_C: &str = "int main(void) { return 0; }\n";

/// Stand-in for NVIDIA's ptxas: an "ELF" naming its input.
const FAKE_PTXAS: &str = "#!/bin/sh\nout=\"\"; in=\"\"\nwhile [ $# -gt 0 ]; do case \"$1\" in -o|--output-file) out=$2; shift;; *.s|*.ptx) in=$1;; esac; shift; done\nprintf '\\177ELFcubin-from-%s' \"$(basename \"$in\")\" > \"$out\"\n";
/// Stand-in for NVIDIA's fatbinary: the container layout of docs/formats/cuda-fatbin.md,
/// each input padded to 8 bytes, and a copy of each input for the test.
const FAKE_FATBINARY: &str = r#"#!/usr/bin/python3
import os, shutil, struct, sys
args = sys.argv[1:]
out = args[args.index('--create') + 1]
body = b''
for a in args:
    if not a.startswith('--image3='):
        continue
    kv = dict(p.split('=', 1) for p in a[len('--image3='):].split(','))
    data = open(kv['file'], 'rb').read()
    shutil.copy(kv['file'], os.path.join(os.environ['FAKE_FATBIN_INPUTS'], kv['kind'] + '-sm_' + kv['sm']))
    kind = 1 if kv['kind'] == 'ptx' else 2
    pad = (len(data) + 7) // 8 * 8
    body += struct.pack('<HHIQIIHHIIIQQQ', kind, 0x0101, 64, pad, 0, 0, 0, 1, int(kv['sm']), 0, 0, 0x15, 0, 0)
    body += data + b'\0' * (pad - len(data))
open(out, 'wb').write(struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(body)) + body)
"#;

pub(crate) fn sh(dir: &Path, prog: &Path, args: &[&str]) -> Result<(), String> {
    let r = run(prog, args, dir);
    if r.code != 0 {
        return Err(format!(
            "{} {}: exit {}: {}",
            prog.display(),
            args.join(" "),
            r.code,
            r.stderr
        ));
    }
    Ok(())
}

fn build() -> Result<Built, String> {
    let dir = tempdir().keep();
    let w =
        |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| e.to_string());
    w("omp.c", OMP_C)?;
    w("k.hip", &K_HIP.replace("KERNEL", "kern"))?;
    w("k2.hip", &K_HIP.replace("KERNEL", "kern2"))?;
    w("k.cu", K_CU)?;
    w("main.c", MAIN_C)?;
    // The link needs a libomptarget.so; Debian ships only the versioned one.
    std::fs::create_dir_all(dir.join("lib")).map_err(|e| e.to_string())?;
    let _ = std::os::unix::fs::symlink(
        Path::new(crate::util::LLVM_BIN).join("../lib/libomptarget.so.22.1"),
        dir.join("lib/libomptarget.so"),
    );
    let clang = llvm("clang");
    let c = |args: &[&str]| sh(&dir, &clang, args);
    c(&[
        "-O2",
        "-fopenmp",
        "-fopenmp-targets=x86_64-unknown-linux-gnu",
        "omp.c",
        "-o",
        "omp_host.exe",
        "-Llib",
    ])?;
    let omp_gfx = [
        "-O2",
        "-fopenmp",
        "--offload-arch=gfx90a,gfx1030",
        "-nogpulib",
    ];
    c(&[
        &omp_gfx[..],
        &[
            "omp.c",
            "-o",
            "omp_gfx.exe",
            "-Llib",
            "-Xoffload-linker",
            "--unresolved-symbols=ignore-all",
        ],
    ]
    .concat())?;
    c(&[&omp_gfx[..], &["-c", "omp.c", "-o", "omp_gfx.o"]].concat())?;
    let hip = [
        "-x",
        "hip",
        "--offload-arch=gfx90a",
        "--offload-arch=gfx1030",
        "-nogpulib",
        "-nogpuinc",
    ];
    c(&[&hip[..], &["-c", "k.hip", "-o", "hip.o"]].concat())?;
    c(&[&hip[..], &["-c", "k2.hip", "-o", "hip2.o"]].concat())?;
    c(&[
        &hip[..],
        &["--offload-compress", "-c", "k.hip", "-o", "hipc.o"],
    ]
    .concat())?;
    c(&[
        &hip[..],
        &["--offload-compress", "-c", "k2.hip", "-o", "hipc2.o"],
    ]
    .concat())?;
    c(&[&hip[..], &["-fgpu-rdc", "-c", "k.hip", "-o", "hip_rdc.o"]].concat())?;
    c(&["-c", "main.c", "-o", "main.o"])?;
    let link = [
        "--hip-link",
        "-no-hip-rt",
        "--offload-arch=gfx90a",
        "--offload-arch=gfx1030",
        "-Wl,--unresolved-symbols=ignore-all",
    ];
    c(&[&link[..], &["hip.o", "hip2.o", "main.o", "-o", "hip.exe"]].concat())?;
    c(&[
        &link[..],
        &["hipc.o", "hipc2.o", "main.o", "-o", "hipc.exe"],
    ]
    .concat())?;
    c(&[
        &link[..],
        &["-fgpu-rdc", "hip_rdc.o", "main.o", "-o", "hip_rdc.exe"],
    ]
    .concat())?;
    sh(
        &dir,
        &llvm("llvm-ar"),
        &[
            "rcs",
            "libmix.a",
            "hip_rdc.o",
            "hip.o",
            "hipc.o",
            "omp_gfx.o",
        ],
    )?;
    c(&[
        "-x",
        "cuda",
        "--offload-arch=sm_50",
        "--offload-arch=sm_52",
        "-nocudalib",
        "-nocudainc",
        "--offload-new-driver",
        "-fgpu-rdc",
        "-foffload-lto",
        "-c",
        "k.cu",
        "-o",
        "cuda.o",
    ])?;
    // Bare bundles: binary, and compressed by the bundler.
    let bundler = llvm("clang-offload-bundler");
    let targets = "-targets=host-x86_64-unknown-linux-gnu-,hip-amdgcn-amd-amdhsa--gfx90a:xnack+,hip-amdgcn-amd-amdhsa--gfx1030";
    let inputs = ["-input=main.o", "-input=hip.o", "-input=k.hip"];
    sh(
        &dir,
        &bundler,
        &[&["-type=bc", targets, "-output=bare.bundle"][..], &inputs].concat(),
    )?;
    sh(
        &dir,
        &bundler,
        &[
            &["-type=bc", targets, "-output=bare.ccob", "-compress"][..],
            &inputs,
        ]
        .concat(),
    )?;
    // CUDA with a .nv_fatbin, through the stand-in tools.
    let fake = dir.join("fakebin");
    let inputs_dir = dir.join("fatbin-inputs");
    std::fs::create_dir_all(&fake).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&inputs_dir).map_err(|e| e.to_string())?;
    for (name, text) in [("ptxas", FAKE_PTXAS), ("fatbinary", FAKE_FATBINARY)] {
        use std::os::unix::fs::PermissionsExt;
        let p = fake.join(name);
        std::fs::write(&p, text).map_err(|e| e.to_string())?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
    }
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(&clang)
        .args([
            "-x",
            "cuda",
            "--offload-arch=sm_50",
            "--offload-arch=sm_52",
            "--cuda-include-ptx=all",
            "-nocudalib",
            "-nocudainc",
            "-c",
            "k.cu",
            "-o",
            "cuda_fb.o",
        ])
        .current_dir(&dir)
        .env("PATH", path)
        .env("FAKE_FATBIN_INPUTS", &inputs_dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "cuda with stand-in tools: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(Built { dir })
}

pub(crate) fn built() -> Result<&'static Built, Failed> {
    static B: OnceLock<Result<Built, String>> = OnceLock::new();
    B.get_or_init(build)
        .as_ref()
        .map_err(|e| Failed::from(e.clone()))
}

// ---------------------------------------------------------------------------
// Our side

fn inspect(path: &Path, extra: &[&str]) -> Result<Value, Failed> {
    let mut args = vec!["inspect", "--json", "--hash=md5"];
    args.extend_from_slice(extra);
    let p = path.to_string_lossy();
    args.push(&p);
    let r = run(&ours(), &args, Path::new(".")).ok()?;
    let v: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    Ok(v["files"][0].clone())
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// Our view of `file`: one (key, md5 of the bytes `extract` wrote) per
/// image, keyed as [`llvm_view`] keys LLVM's.
fn our_view(file: &Path) -> Result<Vec<(String, String)>, Failed> {
    let f = inspect(file, &[])?;
    if !f["problems"].as_array().is_none_or(Vec::is_empty) {
        return Err(format!("problems: {}", f["problems"]).into());
    }
    // Extract everything, and index the files by image id.
    let out = tempdir();
    let p = file.to_string_lossy();
    run(
        &ours(),
        &[
            "extract",
            "--include-host",
            "-o",
            &out.path().to_string_lossy(),
            &p,
        ],
        Path::new("."),
    )
    .ok()?;
    let mut bytes = BTreeMap::new();
    for e in std::fs::read_dir(out.path()).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let id: usize = name
            .split('.')
            .find_map(|c| c.parse().ok())
            .ok_or_else(|| format!("no image id in {name}"))?;
        bytes.insert(id, std::fs::read(e.path()).unwrap());
    }
    let containers = f["containers"].as_array().cloned().unwrap_or_default();
    // Device images and host entries (LLVM lists both), in id order: the
    // position in the list is the id.
    let mut images = f["images"].as_array().cloned().unwrap_or_default();
    images.extend(f["host_entries"].as_array().cloned().unwrap_or_default());
    images.sort_by_key(|i| i["id"].as_u64());
    // The outermost container of each container, and the position of each
    // outermost bundle/CCOB in its section (llvm-objdump's file numbering).
    let top = |mut id: usize| loop {
        match &containers[id]["parent"] {
            Value::Object(p) if p.contains_key("container") => {
                id = p["container"].as_u64().unwrap() as usize
            }
            Value::Object(p) => {
                id = images[p["image"].as_u64().unwrap() as usize]["container"]
                    .as_u64()
                    .unwrap() as usize
            }
            _ => return id,
        }
    };
    let mut ordinal = BTreeMap::new();
    let mut counters: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in &containers {
        if c["parent"].is_null() && matches!(c["kind"].as_str(), Some("bundle" | "ccob")) {
            let k = (s(&c["member"]), s(&c["section"]));
            let n = counters.entry(k).or_default();
            ordinal.insert(c["id"].as_u64().unwrap() as usize, *n);
            *n += 1;
        }
    }
    let mut out_view = Vec::new();
    for img in &images {
        let id = img["id"].as_u64().unwrap() as usize;
        let c = img["container"].as_u64().unwrap() as usize;
        let b = bytes
            .get(&id)
            .ok_or_else(|| format!("image {id} was not extracted"))?;
        if img["hash"] != Value::String(format!("md5:{}", md5_hex(b))) {
            return Err(format!("image {id}: --hash does not match the extracted bytes").into());
        }
        let member = s(&img["member"]);
        let key = match containers[c]["kind"].as_str() {
            Some("offload-binary") => format!(
                "ob {member} kind={} arch={} triple={} producer={}",
                objdump_kind(&s(&img["image_kind"])),
                s(&img["target_id"]),
                s(&img["triple"]),
                s(&img["offload_kind"])
            ),
            Some("object-bundle") => format!("objbundle {member} {}", s(&img["bundle_id"])),
            Some("bundle") => {
                let t = top(c);
                format!(
                    "bundle {member} {} {}",
                    ordinal.get(&t).copied().unwrap_or(0),
                    s(&img["bundle_id"])
                )
            }
            k => format!("{k:?} {member} {}", s(&img["target_id"])),
        };
        let hash = if key.starts_with("objbundle") && key.contains(" host-") {
            "-".to_string()
        } else {
            md5_hex(b)
        };
        out_view.push((key, hash));
    }
    out_view.sort();
    Ok(out_view)
}

fn objdump_kind(k: &str) -> &str {
    match k {
        "object" => "elf",
        "bitcode" => "llvm ir",
        "fatbinary" => "fatbinary",
        "none" => "<none>",
        k => k,
    }
}

// ---------------------------------------------------------------------------
// LLVM's side

/// LLVM's view of `file` (a plain file or an archive).
fn llvm_view(file: &Path) -> Result<Vec<(String, String)>, Failed> {
    let work = tempdir();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::copy(file, work.path().join(&name)).unwrap();
    let is_archive = std::fs::read(file).unwrap().starts_with(b"!<arch>\n");
    let mut view = Vec::new();
    if is_archive {
        // Per member: the same view, keyed by member.
        let members = work.path().join("members");
        std::fs::create_dir_all(&members).unwrap();
        crate::util::run(&llvm("llvm-ar"), &["x", &format!("../{name}")], &members).ok()?;
        let mut names: Vec<_> = std::fs::read_dir(&members)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        names.sort();
        for m in names {
            let mname = m.file_name().unwrap().to_string_lossy().into_owned();
            view.extend(plain_view(&m, &mname)?);
        }
    } else {
        view.extend(plain_view(&work.path().join(&name), "")?);
    }
    view.sort();
    Ok(view)
}

fn plain_view(file: &Path, member: &str) -> Result<Vec<(String, String)>, Failed> {
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let mut view = Vec::new();
    let data = std::fs::read(file).unwrap();
    let bare = data.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") || data.starts_with(b"CCOB");
    // llvm-objdump: OffloadBinary images printed, bundles written to files.
    let od = run(&llvm("llvm-objdump"), &["--offloading", &name], dir);
    let text = String::from_utf8_lossy(&od.stdout).into_owned();
    if od.code == 0 {
        let mut fields: BTreeMap<&str, String> = BTreeMap::new();
        let mut images = Vec::new();
        for line in text.lines() {
            if line.starts_with("OFFLOADING IMAGE") {
                fields.clear();
            }
            for k in ["kind", "arch", "triple", "producer"] {
                if let Some(v) = line
                    .strip_prefix(k)
                    .filter(|v| v.is_empty() || v.starts_with(' '))
                {
                    fields.insert(k, v.trim().to_string());
                }
            }
            if line.starts_with("producer") {
                images.push(fields.clone());
            }
            if let Some(path) = line.strip_prefix("Extracting offload bundle: ") {
                let rest = path
                    .strip_prefix(&format!("{name}."))
                    .ok_or_else(|| format!("odd name {path}"))?;
                let (n, id) = rest
                    .split_once('.')
                    .ok_or_else(|| format!("odd name {path}"))?;
                let mut bytes =
                    std::fs::read(dir.join(path)).map_err(|e| format!("{path}: {e}"))?;
                // LLVM 22's llvm-objdump writes wrong bytes (zeros and heap
                // garbage, different at each run) for entries of compressed
                // bundles: take those from clang-offload-bundler instead.
                if let Some(b) = ccob_entry(dir, &name, n.parse().unwrap_or(0), id)? {
                    bytes = b;
                }
                view.push((format!("bundle {member} {n} {id}"), md5_hex(&bytes)));
            }
        }
        for f in images {
            // llvm-offload-binary extracts it (one image per triple+arch here).
            let out = format!("{name}.llvm-image");
            let mut spec = format!("--image=file={out},triple={}", f["triple"]);
            if !f["arch"].is_empty() {
                spec += &format!(",arch={}", f["arch"]);
            }
            run(&llvm("llvm-offload-binary"), &[name.as_str(), &spec], dir).ok()?;
            let bytes = std::fs::read(dir.join(&out)).map_err(|e| format!("{out}: {e}"))?;
            std::fs::remove_file(dir.join(&out)).unwrap();
            view.push((
                format!(
                    "ob {member} kind={} arch={} triple={} producer={}",
                    f["kind"], f["arch"], f["triple"], f["producer"]
                ),
                md5_hex(&bytes),
            ));
        }
    } else if !bare {
        return Err(format!("llvm-objdump --offloading {name}: {}", od.stderr).into());
    }
    // clang-offload-bundler: bundled objects and bare bundles (which
    // llvm-objdump does not read).
    let sections = run(&llvm("llvm-objdump"), &["-h", &name], dir);
    let bundled_object =
        String::from_utf8_lossy(&sections.stdout).contains("__CLANG_OFFLOAD_BUNDLE__");
    if bare || bundled_object {
        let ty = if bare { "-type=bc" } else { "-type=o" };
        let input = format!("-input={name}");
        let list = run(&llvm("clang-offload-bundler"), &["-list", ty, &input], dir).ok()?;
        for id in String::from_utf8_lossy(&list.stdout).lines() {
            let hash = if id.starts_with("host-") && !bare {
                "-".to_string()
            } else {
                let out = format!("{name}.unbundled");
                let targets = format!("-targets={id}");
                let o = format!("-output={out}");
                run(
                    &llvm("clang-offload-bundler"),
                    &["-unbundle", ty, &input, &targets, &o],
                    dir,
                )
                .ok()?;
                let b = std::fs::read(dir.join(&out)).unwrap();
                md5_hex(&b)
            };
            let key = if bare {
                format!("bundle {member} 0 {id}")
            } else {
                format!("objbundle {member} {id}")
            };
            view.push((key, hash));
        }
    }
    Ok(view)
}

/// Entry `id` of the `n`th bundle in `name`'s `.hip_fatbin` if that bundle
/// is compressed, unbundled by clang-offload-bundler. LLVM 22's bundler
/// reads only one CCOB per input, so the section is split at each CCOB's
/// total-size field (v2: u32 at 8; v3: u64 at 8), skipping zero padding.
fn ccob_entry(dir: &Path, name: &str, n: usize, id: &str) -> Result<Option<Vec<u8>>, Failed> {
    let sec = dir.join(format!("{name}.hip_fatbin"));
    let dump = format!("--dump-section=.hip_fatbin={}", sec.display());
    // Not /dev/null as the output: llvm-objcopy writes a temporary file and
    // renames it over the output, so run as root it replaced the device
    // node with a regular file, for every process on the machine.
    let discard = dir.join(format!("{name}.objcopy-out"));
    let discard = discard.to_string_lossy();
    if run(&llvm("llvm-objcopy"), &[dump.as_str(), name, &discard], dir).code != 0 {
        return Ok(None);
    }
    let data = std::fs::read(&sec).unwrap_or_default();
    let mut at = 0usize;
    let mut k = 0usize;
    while at + 24 <= data.len() {
        if data[at] == 0 {
            at += 1;
            continue;
        }
        if &data[at..at + 4] != b"CCOB" {
            return Ok(None);
        }
        let version = u16::from_le_bytes([data[at + 4], data[at + 5]]);
        let total = match version {
            2 => u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize,
            3 => u64::from_le_bytes(data[at + 8..at + 16].try_into().unwrap()) as usize,
            _ => return Ok(None),
        };
        if k == n {
            let one = dir.join(format!("{name}.ccob{n}"));
            std::fs::write(&one, &data[at..at + total]).unwrap();
            let out = dir.join(format!("{name}.ccob{n}.out"));
            let args = [
                "-unbundle".to_string(),
                "-type=o".into(),
                format!("-input={}", one.display()),
                format!("-targets={id}"),
                format!("-output={}", out.display()),
            ];
            run(&llvm("clang-offload-bundler"), &args, dir).ok()?;
            return Ok(Some(std::fs::read(&out).unwrap()));
        }
        k += 1;
        at += total;
    }
    Ok(None)
}

fn compare(files: &[&str]) -> Result<(), Failed> {
    let b = built()?;
    for f in files {
        let path = b.dir.join(f);
        let ours =
            our_view(&path).map_err(|e| format!("{f}: {}", e.message().unwrap_or_default()))?;
        let theirs =
            llvm_view(&path).map_err(|e| format!("{f}: {}", e.message().unwrap_or_default()))?;
        if theirs.is_empty() {
            return Err(format!("{f}: LLVM found no images; the test proves nothing").into());
        }
        same(&format!("images of {f} (key, md5)"), ours, theirs)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Other trials

fn cuda_fatbin() -> Result<(), Failed> {
    let b = built()?;
    let f = inspect(&b.dir.join("cuda_fb.o"), &[])?;
    let images = f["images"].as_array().cloned().unwrap_or_default();
    let containers = f["containers"].as_array().cloned().unwrap_or_default();
    let fatbin = containers
        .iter()
        .find(|c| c["kind"] == "cuda-fatbin")
        .ok_or("no cuda-fatbin container")?;
    same("fatbin section", s(&fatbin["section"]), ".nv_fatbin".into())?;
    let wrapper = containers
        .iter()
        .find(|c| c["kind"] == "fatbin-wrapper")
        .ok_or("no wrapper")?;
    same(
        "wrapper flavor",
        s(&wrapper["wrapper"]["flavor"]),
        "cuda".into(),
    )?;
    same(
        "wrapper target",
        &wrapper["wrapper"]["target_container"],
        &fatbin["id"],
    )?;
    let data = std::fs::read(b.dir.join("cuda_fb.o")).unwrap();
    let mut seen = Vec::new();
    for img in &images {
        let kind = s(&img["image_kind"]);
        let arch = s(&img["arch"]);
        let input = std::fs::read(b.dir.join("fatbin-inputs").join(format!(
            "{}-{arch}",
            if kind == "ptx" { "ptx" } else { "elf" }
        )))
        .map_err(|e| format!("{kind} {arch}: {e}"))?;
        let off = img["offset"].as_u64().ok_or("no offset")? as usize;
        let size = img["size"].as_u64().unwrap() as usize;
        same(
            "payload size (padded to 8)",
            size,
            input.len().div_ceil(8) * 8,
        )?;
        if data[off..off + input.len()] != input[..] {
            return Err(format!("{kind} {arch}: payload differs from fatbinary's input").into());
        }
        seen.push(format!("{kind} {arch} {}", s(&img["triple"])));
    }
    same(
        "fatbin entries",
        seen,
        vec![
            "cubin sm_50 nvptx64-nvidia-cuda".into(),
            "ptx sm_50 nvptx64-nvidia-cuda".into(),
            "cubin sm_52 nvptx64-nvidia-cuda".into(),
            "ptx sm_52 nvptx64-nvidia-cuda".into(),
        ],
    )
}

/// The images, by what identifies them and their bytes (not by section).
fn image_facts(f: &Value) -> Vec<String> {
    f["images"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|i| {
            format!(
                "{} {} {} {} {} {} {} {}",
                s(&i["offset"]),
                s(&i["size"]),
                s(&i["offload_kind"]),
                s(&i["triple"]),
                s(&i["target_id"]),
                s(&i["bundle_id"]),
                s(&i["image_kind"]),
                s(&i["hash"])
            )
        })
        .collect()
}

fn stripped() -> Result<(), Failed> {
    let b = built()?;
    // Stripped copies go elsewhere: other tests scan the built directory
    // as a whole, and llvm-objcopy's temporary files would come and go in
    // it.
    let out = tempdir();
    for f in [
        "omp_host.exe",
        "omp_gfx.exe",
        "hip.exe",
        "hipc.exe",
        "hip_rdc.exe",
    ] {
        let path = b.dir.join(f);
        let strip = out.path().join(format!("{f}.stripped"));
        run(
            &llvm("llvm-objcopy"),
            &[
                "--strip-sections",
                &path.to_string_lossy(),
                &strip.to_string_lossy(),
            ],
            &b.dir,
        )
        .ok()?;
        // --verify makes image kinds and hashes of compressed images known
        // on both sides.
        let with = inspect(&path, &["--verify"])?;
        let without = inspect(&strip, &["--verify"])?;
        same(
            &format!("{f}: scan"),
            s(&without["scan"]),
            "[\"raw\"]".into(),
        )?;
        same(
            &format!("{f}: scan"),
            s(&with["scan"]),
            "[\"sections\"]".into(),
        )?;
        let a = image_facts(&with);
        if a.is_empty() {
            return Err(format!("{f}: no images").into());
        }
        same(
            &format!("{f}: images via sections vs raw scan"),
            image_facts(&without),
            a,
        )?;
        if !without["problems"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("{f}: raw scan problems: {}", without["problems"]).into());
        }
    }
    Ok(())
}

fn check_gate() -> Result<(), Failed> {
    let b = built()?;
    let k = ours();
    let d = b.dir.to_string_lossy().into_owned();
    let hip = b.dir.join("hip.exe").to_string_lossy().into_owned();
    let omp = b.dir.join("omp_host.exe").to_string_lossy().into_owned();
    let code = |args: &[&str]| run(&k, args, &b.dir).code;
    same(
        "gfx90a,gfx1030 present",
        code(&["check", &hip, "--require-arch", "gfx90a,gfx1030"]),
        0,
    )?;
    same(
        "gfx942 missing",
        code(&["check", &hip, "--require-arch", "gfx942"]),
        1,
    )?;
    same(
        "gfx1030 forbidden",
        code(&["check", &hip, "--forbid-arch", "gfx1030"]),
        1,
    )?;
    same(
        "kind hip present",
        code(&["check", &hip, "--require-kind", "hip"]),
        0,
    )?;
    same(
        "kind openmp absent",
        code(&["check", &hip, "--require-kind", "openmp"]),
        1,
    )?;
    // The compressed executable: archs come from inside the CCOBs.
    let hipc = b.dir.join("hipc.exe").to_string_lossy().into_owned();
    same(
        "archs inside CCOBs",
        code(&[
            "check",
            &hipc,
            "--require-arch",
            "gfx90a",
            "--require-arch",
            "gfx1030",
        ]),
        0,
    )?;
    // A file with only a host-offload image has no gfx90a; with --any the
    // whole tree has.
    same(
        "per file",
        code(&["check", &hip, &omp, "--require-arch", "gfx90a"]),
        1,
    )?;
    same(
        "--any",
        code(&["check", &hip, &omp, "--any", "--require-arch", "gfx90a"]),
        0,
    )?;
    // The directory also holds the stand-in tools' fake cubins (ELF magic,
    // no ELF): corrupt inputs, which only --allow-corrupt lets through.
    same(
        "whole directory, --any",
        code(&[
            "check",
            &d,
            "--any",
            "--allow-corrupt",
            "--require-arch",
            "gfx90a,sm_52",
        ]),
        0,
    )?;
    // Nothing with device code at all fails.
    let main = b.dir.join("main.o").to_string_lossy().into_owned();
    same(
        "no device code",
        code(&["check", &main, "--require-arch", "gfx90a"]),
        1,
    )?;
    // Usage errors are not check failures.
    same("no requirement", code(&["check", &hip]), 2)?;
    let r = run(&k, &["check", &hip, "--require-arch", "gfx942"], &b.dir);
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("missing arch gfx942") || !out.contains("gfx90a") {
        return Err(format!("unclear report: {out}").into());
    }
    Ok(())
}

fn size() -> Result<(), Failed> {
    let b = built()?;
    let r = run(
        &ours(),
        &[
            "size",
            "--json",
            &b.dir.join("omp_gfx.exe").to_string_lossy(),
        ],
        &b.dir,
    )
    .ok()?;
    let v: Value = serde_json::from_slice(&r.stdout).map_err(|e| e.to_string())?;
    let f = &v["files"][0];
    let t = &f["by_target"];
    for arch in ["gfx90a", "gfx1030"] {
        // A row per target and image kind: the arch's one object.
        let row = &t[format!("openmp amdgcn-amd-amdhsa {arch} object")];
        same(&format!("{arch} images"), row["images"].as_u64(), Some(1))?;
        if row["bytes"].as_u64().unwrap_or(0) == 0 {
            return Err(format!("{arch}: no bytes").into());
        }
    }
    Ok(())
}

fn hostile() -> Result<(), Failed> {
    let b = built()?;
    let dir = tempdir();
    let hip = std::fs::read(b.dir.join("hipc.exe")).unwrap();
    // Truncated, magic-sprinkled noise, and a file of only magics.
    std::fs::write(dir.path().join("truncated.exe"), &hip[..hip.len() / 2]).unwrap();
    let mut noise: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    for (i, m) in [
        &b"CCOB\x03\x00\x01\x00"[..],
        b"__CLANG_OFFLOAD_BUNDLE__",
        &[0x10, 0xFF, 0x10, 0xAD],
        &[0x50, 0xED, 0x55, 0xBA],
    ]
    .iter()
    .cycle()
    .take(4000)
    .enumerate()
    {
        let at = (i * 49) % (noise.len() - 32);
        noise[at..at + m.len()].copy_from_slice(m);
    }
    std::fs::write(dir.path().join("noise.bin"), &noise).unwrap();
    std::fs::write(dir.path().join("magics.bin"), b"CCOB".repeat(10_000)).unwrap();
    let mut corrupt = hip.clone();
    // Flip bytes inside the section data of the compressed bundles.
    for i in (0x3000..0x3400).step_by(17) {
        if i < corrupt.len() {
            corrupt[i] ^= 0x5A;
        }
    }
    std::fs::write(dir.path().join("corrupt.exe"), &corrupt).unwrap();
    for cmd in [
        vec!["inspect", "--verify"],
        vec!["inspect", "--raw", "--rejects"],
        vec!["size"],
    ] {
        let mut args: Vec<String> = cmd.iter().map(|s| s.to_string()).collect();
        args.push(dir.path().to_string_lossy().into_owned());
        // Damaged data: exit 2, every file still reported. A raw scan
        // only rejects candidates (noise, not damage): exit 0.
        let want = if cmd.contains(&"--raw") { 0 } else { 2 };
        let r = run(&ours(), &args, dir.path());
        if r.code != want || r.stderr.contains("panicked") {
            return Err(format!("{cmd:?}: exit {}: {}", r.code, r.stderr).into());
        }
        args.insert(1, "--allow-corrupt".into());
        let r = run(&ours(), &args, dir.path());
        if r.code != 0 || r.stderr.contains("panicked") {
            return Err(format!("{cmd:?} --allow-corrupt: exit {}: {}", r.code, r.stderr).into());
        }
    }
    // The corrupt file's problems are reported, not fatal.
    let f = inspect(
        &dir.path().join("corrupt.exe"),
        &["--verify", "--allow-corrupt"],
    )?;
    if f["problems"].as_array().is_none_or(Vec::is_empty) {
        return Err("corrupt CCOBs reported no problem".into());
    }
    Ok(())
}
