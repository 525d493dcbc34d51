//! Windows hosts: our COFF objects against llvm-offload-wrapper + llc 22
//! byte for byte (each kind, x86_64 and aarch64, MSVC and MinGW; OpenMP
//! with one to three raw and OffloadBinary inputs; images of 0 to 100
//! bytes and one over 1 MiB), read clean by llvm-readobj and
//! llvm-objdump, and linked into a DLL by lld-link.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::{same_as_llvm, sh};
use crate::util::{bytes, llvm, ours, tempdir};

/// The Windows triples compared: LLVM's MSVC and MinGW spellings.
const TRIPLES: &[&str] = &[
    "x86_64-pc-windows-msvc",
    "aarch64-pc-windows-msvc",
    "x86_64-w64-windows-gnu",
    "aarch64-w64-windows-gnu",
];

/// Image sizes: empty, tiny (llc's ELF special cases are 4, 8, 16 and 32
/// bytes), the fatbin alignment's edge (16 / 17), and more than 1 MiB
/// (ARM64's `$L` labels, one per MiB).
const SIZES: &[usize] = &[0, 1, 3, 4, 8, 16, 17, 32, 100, (2 << 20) + 5];

const COMPARE_TOOLS: &[&str] = &["llvm-offload-wrapper", "llc", "llvm-offload-binary"];

/// Writes `len` bytes of seed `seed` to `d/name`; returns the name.
fn input(d: &Path, name: &str, seed: u64, len: usize) -> Result<String, Failed> {
    std::fs::write(d.join(name), bytes(seed, len)).map_err(|e| e.to_string())?;
    Ok(name.to_string())
}

/// An OffloadBinary of `len` image bytes made by llvm-offload-binary.
fn offload_binary(d: &Path, name: &str, len: usize) -> Result<String, Failed> {
    let img = input(d, &format!("{name}.img"), 99, len)?;
    sh(
        d,
        llvm("llvm-offload-binary"),
        &[
            "-o",
            name,
            &format!("--image=file={img},triple=nvptx64-nvidia-cuda,arch=sm_70,kind=openmp"),
        ],
    )?;
    Ok(name.to_string())
}

/// Every kind and size for `triple`, then OpenMP with several inputs.
fn same_bytes_as_llc(triple: &'static str) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    for (i, &n) in SIZES.iter().enumerate() {
        let f = input(d, &format!("in{n}.bin"), i as u64, n)?;
        for kind in ["openmp", "cuda", "hip"] {
            same_as_llvm(
                d,
                kind,
                triple,
                &format!("{kind}{n}"),
                &["--llc-layout"],
                &[&f],
            )?;
        }
    }
    let ob = offload_binary(d, "ob.bin", 300)?;
    let a = input(d, "a.bin", 7, 13)?;
    let b = input(d, "b.bin", 8, 70)?;
    for (name, inputs) in [
        ("ob", vec![&ob[..]]),
        ("two", vec![&a[..], &ob]),
        ("three", vec![&ob[..], &b, &a]),
        ("raw3", vec![&a[..], &b, &a]),
    ] {
        same_as_llvm(d, "openmp", triple, name, &["--llc-layout"], &inputs)?;
    }
    Ok(())
}

/// llvm-readobj and llvm-objdump read our objects (each kind and CPU, and
/// a large image placed on a 64 KiB boundary) without a warning.
fn read_clean() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let small = input(d, "small.bin", 1, 100)?;
    let big = input(d, "big.bin", 2, (1 << 20) + 7)?;
    for triple in TRIPLES {
        for kind in ["openmp", "cuda", "hip"] {
            for (f, extra) in [(&small, None), (&big, Some("--llc-layout"))] {
                let out = "w.obj";
                let mut args = vec!["wrap", "--kind", kind, "--triple", triple, "-o", out];
                args.extend(extra);
                args.push(f);
                sh(d, ours(), &args)?;
                for (tool, flags) in [
                    (
                        "llvm-readobj",
                        &["--sections", "--relocs", "--symbols", "--unwind"][..],
                    ),
                    ("llvm-objdump", &["-d", "-r"][..]),
                ] {
                    let o = std::process::Command::new(llvm(tool))
                        .args(flags)
                        .arg(out)
                        .current_dir(d)
                        .output()
                        .map_err(|e| e.to_string())?;
                    let err = String::from_utf8_lossy(&o.stderr);
                    if !o.status.success() || !err.is_empty() {
                        return Err(format!("{tool} on {kind} {triple} ({f}): {err}").into());
                    }
                }
            }
        }
    }
    Ok(())
}

/// The runtime functions the wrapper calls, as empty stand-ins (no C
/// runtime is linked), and the entry bounds. lld-link 22 drops the empty
/// `llvm_offload_entries$OA`/`$OZ` sections that hold the bounds' weak
/// defaults and then refuses the relocations against them ("relocation
/// against symbol in discarded section"), for llc's objects as for ours;
/// a strong definition elsewhere takes the defaults' place.
const STUB: &str = "\
char __start_llvm_offload_entries[1];
char __stop_llvm_offload_entries[1];
void __tgt_register_lib(void *d) {}
void __tgt_unregister_lib(void *d) {}
int atexit(void (*f)(void)) { return 0; }
void *__cudaRegisterFatBinary(void *w) { return w; }
void __cudaRegisterFatBinaryEnd(void *h) {}
void __cudaUnregisterFatBinary(void *h) {}
void __cudaRegisterFunction(void) {}
void __cudaRegisterVar(void) {}
void __cudaRegisterManagedVar(void) {}
void *__hipRegisterFatBinary(void *w) { return w; }
void __hipUnregisterFatBinary(void *h) {}
void __hipRegisterFunction(void) {}
void __hipRegisterVar(void) {}
void __hipRegisterManagedVar(void) {}
void __hipRegisterSurface(void) {}
void __hipRegisterTexture(void) {}
";

/// lld-link links each of our MSVC objects (x64 and ARM64) with the
/// stand-ins into a DLL, without a warning; the image lands in the DLL
/// unchanged.
fn lld_link_dll() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("stub.c"), STUB).map_err(|e| e.to_string())?;
    let fatbin = bytes(3, 4000);
    std::fs::write(d.join("img.bin"), &fatbin).map_err(|e| e.to_string())?;
    for (triple, machine) in [
        ("x86_64-pc-windows-msvc", "/machine:x64"),
        ("aarch64-pc-windows-msvc", "/machine:arm64"),
    ] {
        let target = format!("--target={triple}");
        let stub = [&target[..], "-c", "-O1", "stub.c", "-o", "stub.obj"];
        sh(d, llvm("clang"), &stub)?;
        for kind in ["openmp", "cuda", "hip"] {
            sh(
                d,
                ours(),
                &[
                    "wrap", "--kind", kind, "--triple", triple, "-o", "w.obj", "img.bin",
                ],
            )?;
            let out = std::process::Command::new(llvm("lld-link"))
                .args([
                    "/dll",
                    "/noentry",
                    "/nodefaultlib",
                    machine,
                    "/out:w.dll",
                    "w.obj",
                    "stub.obj",
                ])
                .current_dir(d)
                .output()
                .map_err(|e| e.to_string())?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            if !out.status.success() || !text.is_empty() {
                return Err(format!("lld-link, {kind} for {triple}: {text}").into());
            }
            let dll = std::fs::read(d.join("w.dll")).map_err(|e| e.to_string())?;
            if !dll.windows(fatbin.len()).any(|w| w == &fatbin[..]) {
                return Err(format!("{kind} for {triple}: the image is not in the DLL").into());
            }
        }
    }
    Ok(())
}

/// The trials of this file.
pub fn tests() -> Vec<Trial> {
    let mut v: Vec<Trial> = TRIPLES
        .iter()
        .map(|&t| {
            trial!(
                same_bytes_as_llc["{t}"],
                COMPARE_TOOLS,
                move || same_bytes_as_llc(t),
            )
        })
        .collect();
    v.push(trial!(read_clean, &["llvm-readobj", "llvm-objdump"]));
    v.push(trial!(lld_link_dll, &["clang", "lld-link"]));
    v
}
