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
//!
//! This file builds the binaries; `views.rs` compares what each side finds,
//! `others.rs` holds the other trials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{llvm, md5_hex, ours, run, same, tempdir};

test_files! {
    views,
    others,
}

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
    file_trials()
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
    build_openmp(&dir)?;
    build_hip(&dir)?;
    build_cuda(&dir)?;
    build_bare_bundles(&dir)?;
    build_cuda_fatbin(&dir)?;
    Ok(Built { dir })
}

/// The OpenMP executables (host offload, gfx90a and gfx1030) and object.
fn build_openmp(dir: &Path) -> Result<(), String> {
    let clang = llvm("clang");
    let c = |args: &[&str]| sh(dir, &clang, args);
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
    Ok(())
}

/// The HIP objects (plain, compressed, `-fgpu-rdc`), their executables and
/// the archive of mixed objects.
fn build_hip(dir: &Path) -> Result<(), String> {
    let clang = llvm("clang");
    let c = |args: &[&str]| sh(dir, &clang, args);
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
        dir,
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
    Ok(())
}

/// The CUDA new-driver object (sm_50 and sm_52).
fn build_cuda(dir: &Path) -> Result<(), String> {
    let clang = llvm("clang");
    let c = |args: &[&str]| sh(dir, &clang, args);
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
    Ok(())
}

/// Bare bundles: binary, and compressed by the bundler.
fn build_bare_bundles(dir: &Path) -> Result<(), String> {
    let bundler = llvm("clang-offload-bundler");
    let targets = "-targets=host-x86_64-unknown-linux-gnu-,hip-amdgcn-amd-amdhsa--gfx90a:xnack+,hip-amdgcn-amd-amdhsa--gfx1030";
    let inputs = ["-input=main.o", "-input=hip.o", "-input=k.hip"];
    sh(
        dir,
        &bundler,
        &[&["-type=bc", targets, "-output=bare.bundle"][..], &inputs].concat(),
    )?;
    sh(
        dir,
        &bundler,
        &[
            &["-type=bc", targets, "-output=bare.ccob", "-compress"][..],
            &inputs,
        ]
        .concat(),
    )?;
    Ok(())
}

/// CUDA with a `.nv_fatbin`, through the stand-in tools.
fn build_cuda_fatbin(dir: &Path) -> Result<(), String> {
    let clang = llvm("clang");
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
        .current_dir(dir)
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
    Ok(())
}

pub(crate) fn built() -> Result<&'static Built, Failed> {
    static B: OnceLock<Result<Built, String>> = OnceLock::new();
    B.get_or_init(build)
        .as_ref()
        .map_err(|e| Failed::from(e.clone()))
}

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
