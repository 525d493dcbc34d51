//! Damaged Windows files, every scanner command on each (issue #43): a DLL
//! that lld-link makes (HIP code objects from clang in `.hip_fatbin`, a
//! wrapper in `.hipFatBinSegment` whose pointer a base relocation fixes
//! up) and the COFF object it is linked from, each damaged in one place
//! outside its device code: a table past the end of the file or of the
//! image, a base relocation block whose size lies, a string table whose
//! size lies. `inspect`, `inspect --kernels`, `list`, `size`, `extract`,
//! `check`, `prune` and `diff` all exit 2 naming the file, none panics,
//! `extract` and `prune` leave nothing behind, and the input is untouched.
//! The undamaged files are clean.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::damaged::damage_failure;
use crate::util::{llvm, ours, run, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![trial!(
        damaged_headers_fail_every_command,
        &["clang", "clang++", "clang-offload-bundler", "lld-link"]
    )]
}

/// The little-endian `u32` at `at` of `b`.
fn u32_at(b: &[u8], at: usize) -> usize {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize
}

/// `b` with the `u32` at `at` set to `v`.
fn with(b: &[u8], at: usize, v: u32) -> Vec<u8> {
    let mut c = b.to_vec();
    c[at..at + 4].copy_from_slice(&v.to_le_bytes());
    c
}

/// Builds `dll.dll` and `dll.obj` in `d` (and `gfx906.o`, `gfx90a.o`,
/// `hip.fatbin` on the way): two gfx code objects bundled as
/// clang bundles a HIP fat binary, placed in `.hip_fatbin` by a C file
/// whose wrapper points at it.
pub fn build(d: &Path) -> Result<(), Failed> {
    build_with(d, "", &[])
}

/// [`build`], with `more_c` added to the C file and `link` to lld-link's
/// arguments.
pub fn build_with(d: &Path, more_c: &str, link: &[&str]) -> Result<(), Failed> {
    std::fs::write(
        d.join("k.hip"),
        "#define __global__ __attribute__((global))\n\
         __global__ void kern(int *p) { *p = 7; }\n",
    )?;
    for gpu in ["gfx906", "gfx90a"] {
        let arch = format!("--offload-arch={gpu}");
        let out = format!("{gpu}.o");
        let args = [
            "-x",
            "hip",
            "-nogpulib",
            "-nogpuinc",
            "--cuda-device-only",
            "--no-gpu-bundle-output",
            &arch,
            "-c",
            "k.hip",
            "-o",
            &out,
        ];
        run(&llvm("clang++"), &args, d).ok()?;
    }
    run(
        &llvm("clang-offload-bundler"),
        &[
            "-type=o",
            "-bundle-align=4096",
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906,\
             hip-amdgcn-amd-amdhsa--gfx90a",
            "-input=/dev/null",
            "-input=gfx906.o",
            "-input=gfx90a.o",
            "-output=hip.fatbin",
        ],
        d,
    )
    .ok()?;
    let fatbin = std::fs::read(d.join("hip.fatbin"))?;
    let bytes: Vec<String> = fatbin.iter().map(u8::to_string).collect();
    let c = format!(
        "#pragma section(\".hip_fatbin\", read)\n\
         #pragma section(\".hipFatBinSegment\", read, write)\n\
         __declspec(allocate(\".hip_fatbin\")) __declspec(align(4096))\n\
         const unsigned char fatbin[] = {{{}}};\n\
         struct wrapper {{ int magic; int version; const void *data; void *unused; }};\n\
         __declspec(allocate(\".hipFatBinSegment\"))\n\
         const struct wrapper w = {{0x48495046, 1, fatbin, 0}};\n\
         __declspec(dllexport) const void *get(void) {{ return &w; }}\n{more_c}",
        bytes.join(",")
    );
    std::fs::write(d.join("dll.c"), c)?;
    run(
        &llvm("clang"),
        &[
            "-target",
            "x86_64-pc-windows-msvc",
            "-c",
            "dll.c",
            "-o",
            "dll.obj",
        ],
        d,
    )
    .ok()?;
    let mut args = vec![
        "/nologo",
        "/dll",
        "/noentry",
        "/nodefaultlib",
        "dll.obj",
        "/out:dll.dll",
    ];
    args.extend_from_slice(link);
    run(&llvm("lld-link"), &args, d).ok()?;
    Ok(())
}

/// The damaged forms of the DLL `b`, each with a name.
fn damaged_dlls(b: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let pe = u32_at(b, 0x3c);
    let opt = pe + 24;
    let sections = usize::from(u16::from_le_bytes([b[pe + 6], b[pe + 7]]));
    let table = opt + usize::from(u16::from_le_bytes([b[pe + 20], b[pe + 21]]));
    let header = |name: &[u8]| {
        (0..sections)
            .map(|i| table + 40 * i)
            .find(|&h| b[h..h + 8].starts_with(name))
    };
    let Some(reloc) = header(b".reloc") else {
        return Vec::new();
    };
    let reloc_at = u32_at(b, reloc + 20);
    // PE32+: the data directories start 112 bytes into the optional header.
    let dirs = opt + 112;
    let wrapper = header(b".hipFatB").map_or(0, |h| u32_at(b, h + 20));
    vec![
        ("cut.dll", b[..reloc_at + 6].to_vec()),
        ("reloc-outside.dll", with(b, reloc + 20, 0x7fff_0000)),
        ("block-too-long.dll", with(b, reloc_at + 4, 0x1000)),
        ("block-too-short.dll", with(b, reloc_at + 4, 4)),
        ("fixup-outside.dll", with(b, reloc_at, 0x7fff_0000)),
        (
            "export-outside.dll",
            with(&with(b, dirs, 0x7fff_0000), dirs + 4, 0x100),
        ),
        ("directories.dll", with(b, opt + 108, u32::MAX)),
        ("wrapper-outside.dll", with(b, wrapper + 8, 0x1234)),
    ]
}

/// The damaged forms of the COFF object `b`, each with a name.
fn damaged_objects(b: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let sections = usize::from(u16::from_le_bytes([b[2], b[3]]));
    let header = |relocated: bool| {
        (0..sections).map(|i| 20 + 40 * i).find(|&h| {
            let relocs = u16::from_le_bytes([b[h + 32], b[h + 33]]) != 0;
            relocs == relocated && u32_at(b, h + 16) > 0
        })
    };
    let (Some(data), Some(relocated)) = (header(false), header(true)) else {
        return Vec::new();
    };
    let symtab = u32_at(b, 8);
    let strtab = symtab + 18 * u32_at(b, 12);
    vec![
        ("raw-outside.obj", with(b, data + 20, 0x7fff_0000)),
        ("relocs-outside.obj", with(b, relocated + 24, 0x7fff_0000)),
        ("symbols-outside.obj", with(b, 8, 0x7fff_0000)),
        ("strings-lie.obj", with(b, strtab, 0x7fff_0000)),
    ]
}

fn damaged_headers_fail_every_command() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    for good in ["dll.dll", "dll.obj"] {
        for args in [
            vec!["inspect", "--kernels", good],
            vec!["check", "--require", "gfx90a", good],
        ] {
            let r = run(&ours(), &args, d);
            if r.code != 0 {
                return Err(format!("{args:?}: exit {}: {}", r.code, r.stderr).into());
            }
        }
    }
    let dll = std::fs::read(d.join("dll.dll"))?;
    let obj = std::fs::read(d.join("dll.obj"))?;
    let cases: Vec<_> = damaged_dlls(&dll)
        .into_iter()
        .chain(damaged_objects(&obj))
        .collect();
    if cases.len() != 12 {
        return Err(format!("{} damaged files made, want 12", cases.len()).into());
    }
    for (name, bytes) in cases {
        std::fs::write(d.join(name), &bytes)?;
        let good = if name.ends_with(".dll") {
            "dll.dll"
        } else {
            "dll.obj"
        };
        let commands: [Vec<&str>; 8] = [
            vec!["inspect", name],
            vec!["inspect", "--kernels", name],
            vec!["list", name],
            vec!["size", name],
            vec!["extract", "--output-dir", "out", name],
            vec!["check", "--require", "gfx90a", name],
            vec!["prune", "--keep", "gfx90a", "-o", "pruned", name],
            vec!["diff", good, name],
        ];
        for args in commands {
            let what = args.join(" ");
            let r = run(&ours(), &args, d);
            damage_failure(&what, &r, name)?;
            for left in ["out", "pruned"] {
                let p = d.join(left);
                let empty = std::fs::read_dir(&p).map_or(true, |mut e| e.next().is_none());
                if p.exists() && (p.is_file() || !empty) {
                    return Err(format!("{what}: left '{left}' behind").into());
                }
            }
            if std::fs::read(d.join(name))? != bytes {
                return Err(format!("{what}: changed its input").into());
            }
        }
    }
    Ok(())
}
