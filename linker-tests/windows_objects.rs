//! `prune` on COFF objects that LLVM makes for `x86_64-pc-windows-msvc`
//! (issue #43), each checked against LLVM's own tools:
//! - the object of a C file holding a HIP fat binary in `.hip_fatbin` and
//!   a wrapper pointing at it: the pruned object keeps its kept image byte
//!   for byte, and lld-link still links it into a DLL whose wrapper leads
//!   to the pruned bundle;
//! - `llvm-offload-wrapper --kind=hip` compiled by llc: the pruned object
//!   is what `llvm-objcopy --update-section` writes for the new contents,
//!   but for the section definition's length and checksum, which follow the
//!   new contents (the JamCRC LLVM writes);
//! - `clang-offload-bundler -type=o` with a COFF host: byte for byte what
//!   `llvm-objcopy --remove-section` writes for the dropped entries;
//! - a host object with an OffloadBinary embedded in `.llvm.offloading`;
//! - a COFF archive (`llvm-ar --format=coff`) of such objects, linked by
//!   lld-link after pruning (its second linker member follows the members);
//! - the OpenMP wrapper's object, whose image table points into the
//!   OffloadBinaries: refused, naming the relocation, exit 2.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{llvm, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![trial!(coff_objects_as_llvm_makes_them, &[
            "clang",
            "clang++",
            "clang-offload-bundler",
            "lld-link",
            "llvm-offload-wrapper",
            "llvm-offload-binary",
            "llc",
            "llvm-objcopy",
            "llvm-readobj",
            "llvm-ar",
        ])]
}

/// The `(target, hash)` of each image `offload-kit inspect --json --hash`
/// finds in `file`, with the number of problems.
fn hashes(d: &Path, file: &str) -> Result<(Vec<(String, String)>, usize), Failed> {
    let doc = crate::util::ours_json(&["inspect", "--json", "--hash", file], d)?;
    let f = &doc["files"][0];
    let images = f["images"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    (
                        i["arch"].as_str().unwrap_or("").to_string(),
                        i["hash"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let problems = f["problems"].as_array().map_or(0, Vec::len);
    Ok((images, problems))
}

/// Prunes `input` to gfx90a into `output`; checks that its gfx90a images
/// are kept byte for byte, the others gone, and nothing is damaged.
fn pruned(d: &Path, input: &str, output: &str) -> Result<(), Failed> {
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", output, input],
        d,
    )
    .ok()?;
    let (before, _) = hashes(d, input)?;
    let (after, problems) = hashes(d, output)?;
    let kept: Vec<_> = before.into_iter().filter(|(a, _)| a == "gfx90a").collect();
    if kept.is_empty() {
        return Err(format!("{input}: no gfx90a image").into());
    }
    same(&format!("{output}: problems"), problems, 0)?;
    same(&format!("{output}: images"), after, kept)?;
    // LLVM reads it whole.
    run(
        &llvm("llvm-readobj"),
        &["--sections", "--relocs", "--symbols", output],
        d,
    )
    .ok()?;
    Ok(())
}

/// The JamCRC LLVM writes in a section definition.
fn jam_crc(data: &[u8]) -> u32 {
    let mut c = 0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    c
}

/// The `Length` and `Checksum` llvm-readobj shows for section `name`'s
/// definition in `file`.
fn definition(d: &Path, file: &str, name: &str) -> Result<(u64, u64), Failed> {
    let r = run(&llvm("llvm-readobj"), &["--symbols", file], d).ok()?;
    let text = String::from_utf8_lossy(&r.stdout).to_string();
    let at = text
        .find(&format!("Name: {name}\n"))
        .ok_or_else(|| format!("{file}: no symbol {name}"))?;
    let field = |key: &str| -> Result<u64, Failed> {
        let rest = &text[at..];
        let line = rest[rest.find(key).ok_or("no field")?..]
            .lines()
            .next()
            .unwrap_or("");
        let v = line.trim_start_matches(key).trim();
        let v = v.trim_start_matches("0x");
        let radix = if key == "Checksum:" { 16 } else { 10 };
        Ok(u64::from_str_radix(v, radix)?)
    };
    Ok((field("Length:")?, field("Checksum:")?))
}

fn coff_objects_as_llvm_makes_them() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    crate::windows_hostile::build(d)?;
    c_object(d)?;
    wrapper_object(d)?;
    bundler_object(d)?;
    embedded_and_archive(d)?;
    openmp_refused(d)
}

/// The bytes of section `name` of `file` in `d`, dumped by llvm-objcopy
/// to `out`.
fn section(d: &Path, file: &str, name: &str, out: &str) -> Result<Vec<u8>, Failed> {
    let arg = format!("--dump-section={name}={out}");
    run(&llvm("llvm-objcopy"), &[arg.as_str(), file], d).ok()?;
    Ok(std::fs::read(d.join(out))?)
}

/// The C-built object, pruned, still links; its wrapper still leads to
/// the bundle.
fn c_object(d: &Path) -> Result<(), Failed> {
    pruned(d, "dll.obj", "p.obj")?;
    run(
        &llvm("lld-link"),
        &[
            "/nologo",
            "/dll",
            "/noentry",
            "/nodefaultlib",
            "p.obj",
            "/out:p.dll",
        ],
        d,
    )
    .ok()?;
    pruned(d, "dll.dll", "pp.dll")?;
    let (dll, problems) = hashes(d, "p.dll")?;
    same("p.dll: problems", problems, 0)?;
    same("p.dll: images", dll, hashes(d, "p.obj")?.0)?;
    Ok(())
}

/// The wrapper object: llvm-objcopy --update-section's file, but for the
/// definition record, which follows the new contents.
fn wrapper_object(d: &Path) -> Result<(), Failed> {
    // the definition record, which follows the new contents.
    run(
        &llvm("llvm-offload-wrapper"),
        &[
            "--triple=x86_64-pc-windows-msvc",
            "--kind=hip",
            "hip.fatbin",
            "-o",
            "w.bc",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("llc"),
        &[
            "-filetype=obj",
            "-mtriple=x86_64-pc-windows-msvc",
            "w.bc",
            "-o",
            "w.obj",
        ],
        d,
    )
    .ok()?;
    pruned(d, "w.obj", "wp.obj")?;
    let new = section(d, "wp.obj", ".hip_fatbin", "new.bin")?;
    run(
        &llvm("llvm-objcopy"),
        &["--update-section=.hip_fatbin=new.bin", "w.obj", "ref.obj"],
        d,
    )
    .ok()?;
    let (ours_obj, llvm_obj) = (
        std::fs::read(d.join("wp.obj"))?,
        std::fs::read(d.join("ref.obj"))?,
    );
    same("wp.obj: size", ours_obj.len(), llvm_obj.len())?;
    let differ = ours_obj
        .iter()
        .zip(&llvm_obj)
        .filter(|(a, b)| a != b)
        .count();
    if differ > 8 {
        return Err(format!("wp.obj: {differ} bytes differ from llvm-objcopy's").into());
    }
    same(
        "wp.obj: .hip_fatbin definition",
        definition(d, "wp.obj", ".hip_fatbin")?,
        (new.len() as u64, u64::from(jam_crc(&new))),
    )?;
    Ok(())
}

/// The bundler's object: llvm-objcopy --remove-section's file.
fn bundler_object(d: &Path) -> Result<(), Failed> {
    std::fs::write(d.join("host.c"), "int host_fn(void) { return 7; }\n")?;
    run(
        &llvm("clang"),
        &[
            "-target",
            "x86_64-pc-windows-msvc",
            "-c",
            "host.c",
            "-o",
            "host.obj",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("clang-offload-bundler"),
        &[
            "-type=o",
            "-targets=host-x86_64-pc-windows-msvc,hip-amdgcn-amd-amdhsa--gfx906,\
             hip-amdgcn-amd-amdhsa--gfx90a",
            "-input=host.obj",
            "-input=gfx906.o",
            "-input=gfx90a.o",
            "-output=b.obj",
        ],
        d,
    )
    .ok()?;
    pruned(d, "b.obj", "bp.obj")?;
    run(
        &llvm("llvm-objcopy"),
        &[
            "--remove-section=__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906",
            "b.obj",
            "bref.obj",
        ],
        d,
    )
    .ok()?;
    if std::fs::read(d.join("bp.obj"))? != std::fs::read(d.join("bref.obj"))? {
        return Err("bp.obj differs from llvm-objcopy --remove-section's file".into());
    }
    Ok(())
}

/// An OffloadBinary embedded in a host object; a COFF archive of such
/// objects, pruned member by member, still links.
fn embedded_and_archive(d: &Path) -> Result<(), Failed> {
    run(
        &llvm("llvm-offload-binary"),
        &[
            "-o",
            "omp.bin",
            "--image=file=gfx906.o,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=openmp",
            "--image=file=gfx90a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("clang"),
        &[
            "-target",
            "x86_64-pc-windows-msvc",
            "-c",
            "host.c",
            "-Xclang",
            "-fembed-offload-object=omp.bin",
            "-o",
            "e.obj",
        ],
        d,
    )
    .ok()?;
    pruned(d, "e.obj", "ep.obj")?;
    let new = section(d, "ep.obj", ".llvm.offloading", "lo.bin")?;
    same(
        "ep.obj: .llvm.offloading definition",
        definition(d, "ep.obj", ".llvm.offloading")?,
        (new.len() as u64, u64::from(jam_crc(&new))),
    )?;

    // A COFF archive of them, pruned member by member, still links.
    run(
        &llvm("llvm-ar"),
        &[
            "--format=coff",
            "rc",
            "k.lib",
            "dll.obj",
            "host.obj",
            "e.obj",
        ],
        d,
    )
    .ok()?;
    pruned(d, "k.lib", "kp.lib")?;
    run(
        &llvm("lld-link"),
        &[
            "/nologo",
            "/dll",
            "/noentry",
            "/nodefaultlib",
            "/include:get",
            "kp.lib",
            "/out:k.dll",
        ],
        d,
    )
    .ok()?;
    same(
        "k.dll: images",
        hashes(d, "k.dll")?.0,
        hashes(d, "p.dll")?.0,
    )?;
    Ok(())
}

/// The OpenMP wrapper's image table points into the OffloadBinaries.
fn openmp_refused(d: &Path) -> Result<(), Failed> {
    run(
        &llvm("llvm-offload-wrapper"),
        &[
            "--triple=x86_64-pc-windows-msvc",
            "--kind=openmp",
            "omp.bin",
            "-o",
            "o.bc",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("llc"),
        &[
            "-filetype=obj",
            "-mtriple=x86_64-pc-windows-msvc",
            "o.bc",
            "-o",
            "o.obj",
        ],
        d,
    )
    .ok()?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "op.obj", "o.obj"],
        d,
    );
    crate::util::clean_failure_code("prune o.obj", &r, "o.obj", 2)?;
    if !r.stderr.contains("relocation") || d.join("op.obj").exists() {
        return Err(format!("prune o.obj: {}", r.stderr).into());
    }
    Ok(())
}
