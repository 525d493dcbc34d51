//! offload-kit as `clang-linker-wrapper` for Windows hosts: HIP
//! (`--offload-new-driver -fgpu-rdc`) and OpenMP objects that clang-22
//! compiles for `x86_64-pc-windows-msvc` and `aarch64-pc-windows-msvc` are
//! linked into DLLs by clang through our wrapper and through LLVM's, with
//! lld-link (`/Brepro`, so the DLLs hold no time stamp), and the two DLLs
//! must be byte-identical, as must the printed commands (`--dry-run`). Our
//! scanner lists the objects' device images. On
//! x86-64 the DLL then runs under Wine: its entry point runs the C
//! runtime's constructors, among them the wrapper's registration, and a
//! stand-in runtime (windows/stub.c) counts what was registered. Our
//! scanner lists the DLLs' device images, `prune` keeps one GPU of the HIP
//! DLL, which still registers (now one image fewer), and refuses the
//! OpenMP DLL (its descriptor is not read in PE images yet). HIP and OpenMP
//! objects pruned before the link (through the wrappers, and the old HIP
//! driver's self-registering kind without one) give DLLs that register
//! one GPU.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::{exec, mask_dry_run, src};
use crate::util::{Wine, llvm, ours, ours_as, ours_json, run, same, tempdir};

const GPUS: &str = "--offload-arch=gfx90a,gfx1030";

/// The linker flags of both DLLs: no C runtime, our own entry point, and
/// no time stamp.
const DLL: [&str; 5] = [
    "-fuse-ld=lld",
    "-shared",
    "-nostdlib",
    "-Wl,/entry:DllMain",
    "-Wl,/Brepro",
];

/// Compiles the stub runtime, an empty `libomp.lib` (clang names it for
/// every OpenMP link), the HIP kernels (`hip.obj`) and the OpenMP region
/// (`omp.obj`) for `triple` into `d`.
fn compile(triple: &str, d: &Path) -> Result<(), Failed> {
    let clang = llvm("clang");
    let stub = src("windows/stub.c");
    let stub = stub.to_string_lossy();
    run(
        &clang,
        &["-target", triple, "-c", &stub, "-o", "stub.obj"],
        d,
    )
    .ok()?;
    std::fs::write(d.join("empty.c"), "")?;
    run(
        &clang,
        &["-target", triple, "-c", "empty.c", "-o", "empty.obj"],
        d,
    )
    .ok()?;
    run(&llvm("llvm-lib"), &["/out:libomp.lib", "empty.obj"], d).ok()?;
    let hip = src("windows/kern.hip");
    let args = [
        "-target",
        triple,
        "-x",
        "hip",
        "--offload-new-driver",
        "-fgpu-rdc",
        GPUS,
        "-nogpulib",
        "-nogpuinc",
        "-c",
        &hip.to_string_lossy(),
        "-o",
        "hip.obj",
    ];
    run(&llvm("clang++"), &args, d).ok()?;
    let omp = src("windows/omp.c");
    let args = [
        "-target",
        triple,
        "-fopenmp",
        GPUS,
        "-nogpulib",
        "-nogpuinc",
        "-c",
        &omp.to_string_lossy(),
        "-o",
        "omp.obj",
    ];
    run(&clang, &args, d).ok()?;
    Ok(())
}

/// The clang arguments that link `kind`'s DLL (`hip.dll`, `omp.dll`) for
/// `triple` from the objects in `d`, through our wrapper or LLVM's, with
/// `extra` arguments.
fn link_args(triple: &str, kind: &str, d: &Path, ours: bool, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["-target", triple, GPUS, "-nogpulib"]
        .map(String::from)
        .into();
    if ours {
        let links = ours_as("clang-linker-wrapper");
        a.push(format!("-B{}", links.parent().unwrap().display()));
    }
    let obj = |n: &str| d.join(n).to_string_lossy().into_owned();
    match kind {
        "hip" => a.extend(["--offload-new-driver".into(), "-fgpu-rdc".into()]),
        _ => a.extend(
            [
                "-fopenmp",
                "-Xoffload-linker",
                "--unresolved-symbols=ignore-all",
            ]
            .map(String::from),
        ),
    }
    a.extend(DLL.map(String::from));
    a.extend([
        obj(&format!("{kind}.obj")),
        obj("stub.obj"),
        format!("-L{}", d.display()),
        "-o".into(),
        format!("{kind}.dll"),
    ]);
    a.extend(extra.iter().map(|s| (*s).to_string()));
    a
}

/// Links `kind`'s DLL both ways in `d/ours` and `d/llvm`: the same bytes
/// (the DLL and its import library) and, with `-Wl,--dry-run`, the same
/// commands. Returns the path of ours.
fn same_dll(triple: &str, kind: &str, d: &Path) -> Result<String, Failed> {
    let driver = llvm(if kind == "hip" { "clang++" } else { "clang" });
    let mut dlls = Vec::new();
    let mut commands = Vec::new();
    for (ours, dir) in [(true, "ours"), (false, "llvm")] {
        let cwd = d.join(dir);
        std::fs::create_dir_all(&cwd)?;
        let out = exec(&driver, &link_args(triple, kind, d, ours, &[]), &cwd, &[]);
        if out.code != 0 {
            return Err(format!(
                "{dir}: linking {kind}.dll: exit {}: {}",
                out.code, out.stderr
            )
            .into());
        }
        dlls.push((
            std::fs::read(cwd.join(format!("{kind}.dll")))?,
            std::fs::read(cwd.join(format!("{kind}.lib")))?,
        ));
        let dry = exec(
            &driver,
            &link_args(triple, kind, d, ours, &["-Wl,--dry-run"]),
            &cwd,
            &[],
        );
        if dry.code != 0 {
            return Err(format!("{dir}: --dry-run: exit {}: {}", dry.code, dry.stderr).into());
        }
        commands.push(mask_dry_run(&dry.stderr));
    }
    same(
        &format!("{triple} {kind}.dll: bytes"),
        dlls[0].0 == dlls[1].0,
        true,
    )?;
    same(
        &format!("{triple} {kind}.lib: bytes"),
        dlls[0].1 == dlls[1].1,
        true,
    )?;
    same(
        &format!("{triple} {kind}.dll: --dry-run"),
        &commands[0],
        &commands[1],
    )?;
    Ok(format!("ours/{kind}.dll"))
}

/// The GPUs of the device images our scanner lists in `dll`, sorted.
fn gpus_of(dll: &str, d: &Path) -> Result<Vec<String>, Failed> {
    let j = ours_json(&["inspect", "--json", dll], d)?;
    let mut gpus: Vec<String> = j["files"][0]["images"]
        .as_array()
        .ok_or("no images array")?
        .iter()
        .filter_map(|i| i["arch"].as_str())
        .filter(|a| a.starts_with("gfx"))
        .map(String::from)
        .collect();
    gpus.sort();
    Ok(gpus)
}

/// Both DLLs for x86-64, byte for byte LLVM's, registering under Wine;
/// scanned, pruned, and registering again.
fn x86_64_dlls_are_llvms_and_register_under_wine() -> Result<(), Failed> {
    let triple = "x86_64-pc-windows-msvc";
    let t = tempdir();
    let d = t.path();
    compile(triple, d)?;
    let both = ["gfx1030".to_string(), "gfx90a".to_string()];
    for obj in ["hip.obj", "omp.obj"] {
        same(&format!("{obj}'s GPUs"), gpus_of(obj, d)?, both.to_vec())?;
    }
    let hip = same_dll(triple, "hip", d)?;
    let omp = same_dll(triple, "omp", d)?;
    same("the HIP DLL's GPUs", gpus_of(&hip, d)?, both.to_vec())?;
    same("the OpenMP DLL's GPUs", gpus_of(&omp, d)?, both.to_vec())?;

    let wine = Wine::new(d)?;
    // One fat binary of three bundle entries (the host's, two GPUs') and
    // its two kernels; one OpenMP descriptor of two ELF images.
    same(
        "HIP registrations",
        wine.call(&hip, "registered")?,
        "1 3".into(),
    )?;
    same(
        "HIP kernels",
        wine.call(&hip, "kernels_registered")?,
        "1 2".into(),
    )?;
    same(
        "OpenMP registrations",
        wine.call(&omp, "registered")?,
        "1 2".into(),
    )?;

    run(
        &ours(),
        &["prune", "--keep", "gfx90a", &hip, "-o", "hip-gfx90a.dll"],
        d,
    )
    .ok()?;
    same(
        "the pruned DLL's GPUs",
        gpus_of("hip-gfx90a.dll", d)?,
        vec!["gfx90a".to_string()],
    )?;
    same(
        "the pruned DLL's registrations",
        wine.call("hip-gfx90a.dll", "registered")?,
        "1 2".into(),
    )?;
    same(
        "the pruned DLL's kernels",
        wine.call("hip-gfx90a.dll", "kernels_registered")?,
        "1 2".into(),
    )?;

    // The OpenMP DLL: its descriptor is read in ELF files only: refused, and
    // nothing written.
    let r = run(
        &ours(),
        &[
            "prune",
            "--keep",
            "gfx90a",
            "--allow-empty",
            &omp,
            "-o",
            "omp-gfx90a.dll",
        ],
        d,
    );
    same("prune of the OpenMP DLL: exit code", r.code, 2)?;
    if !r
        .stderr
        .contains("OpenMP descriptors are found in ELF files only")
    {
        return Err(format!("prune of the OpenMP DLL said: {}", r.stderr).into());
    }
    same(
        "no pruned OpenMP DLL",
        d.join("omp-gfx90a.dll").exists(),
        false,
    )
}

/// Both DLLs for ARM64 Windows, byte for byte LLVM's.
fn arm64_dlls_are_llvms() -> Result<(), Failed> {
    let triple = "aarch64-pc-windows-msvc";
    let t = tempdir();
    let d = t.path();
    compile(triple, d)?;
    let both = ["gfx1030".to_string(), "gfx90a".to_string()];
    for kind in ["hip", "omp"] {
        let dll = same_dll(triple, kind, d)?;
        same(
            &format!("{kind}.dll's GPUs"),
            gpus_of(&dll, d)?,
            both.to_vec(),
        )?;
    }
    Ok(())
}

pub(super) fn tests() -> Vec<Trial> {
    const TOOLS: &[&str] = &[
        "clang",
        "clang++",
        "clang-linker-wrapper",
        "clang-offload-bundler",
        "lld-link",
        "llvm-lib",
        "llvm-dlltool",
    ];
    let wine: Vec<&str> = TOOLS
        .iter()
        .copied()
        .chain(["/usr/lib/wine/wine64"])
        .collect();
    vec![
        trial!(x86_64_dlls_are_llvms_and_register_under_wine, &wine),
        trial!(arm64_dlls_are_llvms, TOOLS),
    ]
}
