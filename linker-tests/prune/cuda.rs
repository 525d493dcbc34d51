//! `offload-kit prune` on CUDA fat binaries built here: cubins for sm_75,
//! sm_80, sm_86 and sm_90 compiled by NVIDIA's `ptxas` and PTX for sm_80
//! and sm_90, put in fatbins by NVIDIA's `fatbinary` (one with every entry
//! LZ4-compressed, one plain), registered by `offload-kit wrap
//! --kind=cuda` objects, and linked by GNU ld, lld and mold into shared
//! libraries and PIE and non-PIE programs. Pruned to sm_86 (an 8.6 device
//! runs the sm_80 and sm_86 cubins and compiles the sm_80 PTX, the newest
//! it can), objects and archives shrink, linked programs and libraries
//! shrink by over 95 % of the dropped bytes (each kernel carries a 240 KB
//! table, so whole pages go), `cuobjdump` lists exactly the kept entries,
//! and every program registers exactly the kept entries, stored as they
//! were, with a recording stand-in for the CUDA runtime
//! (`prune/cuda_stub.c`).
//!
//! A third fatbin holds an sm_75 cubin alone (`old.o`), as a library built
//! per translation unit has fatbins for old GPUs only: pruned with the
//! others it is emptied (registered still, with no entry, and counted in
//! the report); pruned on its own it is refused, the object keeping no
//! device code, unless `--allow-empty`.

use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::{dropped_bytes, output, readelf_clean, src};
use crate::util::{llvm, ours, ours_json, run, same, tempdir};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";

pub fn tests() -> Vec<Trial> {
    vec![trial!(fatbins_keep_what_an_sm_86_device_loads, &[
            PTXAS,
            FATBINARY,
            CUOBJDUMP,
            "clang",
            "cc",
            "ar",
            "ld.bfd",
            "ld.lld",
            "ld.mold",
            "llvm-readelf",
        ])]
}

/// A PTX kernel for `sm`, with a 240 KB table of pseudo-random words (so
/// that its cubin is large and hardly compresses, and pruning frees whole
/// pages of a linked file).
fn kernel_ptx(sm: u32) -> String {
    let mut x = u64::from(sm).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let words: Vec<String> = (0..60_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 33).to_string()
        })
        .collect();
    format!(
        ".version 8.0\n.target sm_{sm}\n.address_size 64\n\n\
         .visible .global .align 4 .u32 table[60000] = {{{}}};\n\n\
         .visible .entry add_sm{sm}(.param .u64 p, .param .u32 n)\n{{\n\
         \t.reg .b32 %r<6>;\n\t.reg .b64 %rd<5>;\n\t.reg .pred %p1;\n\
         \tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, %tid.x;\n\
         \tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra DONE;\n\tcvta.to.global.u64 %rd2, %rd1;\n\
         \tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r3, [table];\n\
         \tadd.s32 %r4, %r3, {sm};\n\tst.global.u32 [%rd4], %r4;\nDONE:\n\tret;\n}}\n",
        words.join(",")
    )
}

/// Whether a line of the stand-in's log or of `cuobjdump -lelf -lptx`
/// names an entry an sm_86 device does not load.
fn dropped(line: &str) -> bool {
    ["sm_75", "sm_90"].iter().any(|s| line.contains(s))
}

fn without_dropped(text: &str) -> String {
    text.lines()
        .filter(|l| !dropped(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `cuobjdump -lelf -lptx FILE`, file names made comparable (the file's
/// stem is part of each name) and an archive's member lines (which name
/// the archive's path) left out.
fn listing(d: &Path, file: &str) -> Result<String, Failed> {
    let r = run(Path::new(CUOBJDUMP), &["-lelf", "-lptx", file], d).ok()?;
    let stem = Path::new(file)
        .file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("member "))
        .map(|l| format!("{}\n", l.replace(&stem, "F")))
        .collect())
}

fn fatbins_keep_what_an_sm_86_device_loads() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    build(d)?;
    objects_and_archive(d)?;
    for ld in ["bfd", "lld", "mold"] {
        programs(d, ld)?;
    }
    Ok(())
}

/// The cubins, PTX and fatbins, the wrapper objects `lz4.o`, `plain.o` and
/// `old.o` (an sm_75 cubin alone), the archive `libfat.a` of the three,
/// the stand-in runtime, and `pruned/`.
fn build(d: &Path) -> Result<(), Failed> {
    for sm in [75, 80, 86, 90] {
        std::fs::write(d.join(format!("k{sm}.ptx")), kernel_ptx(sm))?;
        let (arch, ptx, cubin) = (
            format!("-arch=sm_{sm}"),
            format!("k{sm}.ptx"),
            format!("k{sm}.cubin"),
        );
        run(Path::new(PTXAS), &[arch.as_str(), &ptx, "-o", &cubin], d).ok()?;
    }
    for (fb, compress) in [("lz4.fatbin", true), ("plain.fatbin", false)] {
        let mut args = vec!["-64".to_string(), format!("--create={fb}")];
        if compress {
            args.extend(["--compress-all".into(), "--compress-mode=speed".into()]);
        } else {
            args.push("--compress=false".into());
        }
        for sm in [75, 80, 86, 90] {
            args.push(format!("--image3=kind=elf,sm={sm},file=k{sm}.cubin"));
        }
        for sm in [80, 90] {
            args.push(format!("--image3=kind=ptx,sm={sm},file=k{sm}.ptx"));
        }
        run(Path::new(FATBINARY), &args, d).ok()?;
        let obj = fb.replace(".fatbin", ".o");
        run(&ours(), &["wrap", "--kind=cuda", "-o", &obj, fb], d).ok()?;
    }
    let old = [
        "-64",
        "--create=old.fatbin",
        "--image3=kind=elf,sm=75,file=k75.cubin",
    ];
    run(Path::new(FATBINARY), &old, d).ok()?;
    run(
        &ours(),
        &["wrap", "--kind=cuda", "-o", "old.o", "old.fatbin"],
        d,
    )
    .ok()?;
    let cc = Path::new("/usr/bin/cc");
    run(
        cc,
        &[
            "-shared",
            "-fPIC",
            &src("cuda_stub.c"),
            "-o",
            "libcudastub.so",
        ],
        d,
    )
    .ok()?;
    std::fs::write(d.join("main.c"), "int main(void) { return 0; }\n")?;
    run(
        Path::new("/usr/bin/ar"),
        &["rcs", "libfat.a", "lz4.o", "plain.o", "old.o"],
        d,
    )
    .ok()?;
    std::fs::create_dir(d.join("pruned"))?;
    std::fs::copy(d.join("libcudastub.so"), d.join("pruned/libcudastub.so"))?;
    Ok(())
}

/// Objects and the archive: smaller, and cuobjdump lists the kept entries;
/// `old.o`, which keeps no device code, only with `--allow-empty`.
fn objects_and_archive(d: &Path) -> Result<(), Failed> {
    let refused = run(
        &ours(),
        &["prune", "--keep", "sm_86", "-d", "pruned", "old.o"],
        d,
    );
    same("old.o pruned to sm_86: exit code", refused.code, 2)?;
    let said = &refused.stderr;
    if !said.contains("old.o") || !said.contains("--allow-empty") {
        return Err(format!("old.o refused with: {said}").into());
    }
    if d.join("pruned/old.o").exists() {
        return Err("old.o refused, and yet written".into());
    }
    let doc = ours_json(
        &[
            "prune",
            "--keep",
            "sm_86",
            "--allow-empty",
            "--json",
            "-d",
            "pruned",
            "old.o",
        ],
        d,
    )?;
    same(
        "old.o: containers emptied",
        &doc["files"][0]["emptied"],
        &1.into(),
    )?;
    same(
        "old.o pruned: cuobjdump -lelf -lptx",
        listing(d, "pruned/old.o")?,
        String::new(),
    )?;
    readelf_clean(d, "pruned/old.o")?;
    for f in ["lz4.o", "plain.o", "libfat.a"] {
        // The archive keeps device code, though its member old.o keeps none.
        run(&ours(), &["prune", "--keep", "sm_86", "-d", "pruned", f], d).ok()?;
        let p = format!("pruned/{f}");
        let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
        if size(&p)? >= size(f)? {
            return Err(format!("{f}: did not shrink").into());
        }
        let before = listing(d, f)?;
        if before.lines().filter(|l| dropped(l)).count() < 3 {
            return Err(format!("{f}: cuobjdump listed:\n{before}").into());
        }
        same(
            &format!("{f}: cuobjdump -lelf -lptx"),
            listing(d, &p)?,
            renumbered(&without_dropped(&before)),
        )?;
        if f.ends_with(".o") {
            readelf_clean(d, &p)?;
        }
    }
    Ok(())
}

/// Programs linked by `ld`: from the objects, then pruned; and from the
/// pruned archive.
fn programs(d: &Path, ld: &str) -> Result<(), Failed> {
    let fuse = format!("-fuse-ld={ld}");
    let link = |args: &[&str], out: &str| -> Result<(), Failed> {
        let mut all = vec![fuse.as_str()];
        all.extend(args);
        all.extend(["-L.", "-lcudastub", "-Wl,-rpath,$ORIGIN", "-o", out]);
        run(&llvm("clang"), &all, d).ok()?;
        Ok(())
    };
    let lib = format!("libfat-{ld}.so");
    link(&["-shared", "lz4.o", "plain.o", "old.o"], &lib)?;
    let shared = format!("shared-{ld}");
    link(&["main.c", &format!("-lfat-{ld}")], &shared)?;
    let pie = format!("pie-{ld}");
    link(&["main.c", "lz4.o", "plain.o", "old.o"], &pie)?;
    let nopie = format!("nopie-{ld}");
    link(&["-no-pie", "main.c", "lz4.o", "plain.o", "old.o"], &nopie)?;
    std::fs::copy(d.join(&shared), d.join("pruned").join(&shared))?;
    for f in [&lib, &pie, &nopie] {
        // Shrunk (issue #29): smaller by 95 % of the dropped entries.
        let doc = ours_json(
            &[
                "prune",
                "--keep",
                "sm_86",
                "--json",
                "-d",
                "pruned",
                f.as_str(),
            ],
            d,
        )?;
        let file = &doc["files"][0];
        if let Some(why) = file["not_shrunk"].as_str() {
            return Err(format!("{f} ({ld}) was not shrunk: {why}").into());
        }
        same(
            &format!("{f} ({ld}): containers emptied"),
            &file["emptied"],
            &1.into(),
        )?;
        let dropped = dropped_bytes(&doc);
        let size = |p: &str| std::fs::metadata(d.join(p)).map(|m| m.len());
        let freed = size(f)?.saturating_sub(size(&format!("pruned/{f}"))?);
        if freed * 100 < dropped * 95 {
            return Err(
                format!("{f} ({ld}): {freed} bytes smaller, under 95 % of {dropped}").into(),
            );
        }
        readelf_clean(d, &format!("pruned/{f}"))?;
    }
    let from_archive = format!("pruned/archive-{ld}");
    // Nothing in main.c calls into the members: all of them are linked.
    link(
        &[
            "main.c",
            "-Wl,--whole-archive",
            "pruned/libfat.a",
            "-Wl,--no-whole-archive",
        ],
        &from_archive,
    )?;
    for prog in [&shared, &pie, &nopie] {
        let before = output(d, prog, &[])?;
        if before.matches("entry kind").count() != 13 || !before.contains("flags 0x2000") {
            return Err(format!("{prog} printed:\n{before}").into());
        }
        // old.o's fatbin is registered still, with no entry left.
        let want = without_dropped(&before);
        if want.matches("fatbin ").count() != 3 {
            return Err(format!("{prog} printed:\n{before}").into());
        }
        same(
            &format!("{prog} pruned"),
            output(d, &format!("pruned/{prog}"), &[])?,
            want.clone(),
        )?;
        if prog == &pie {
            same(&from_archive, output(d, &from_archive, &[])?, want)?;
        }
    }
    Ok(())
}

/// cuobjdump's listing with each kind's files numbered from 1 again, as it
/// numbers the entries that are left.
fn renumbered(listing: &str) -> String {
    let mut counts = std::collections::BTreeMap::new();
    let mut out = String::new();
    for line in listing.lines() {
        let kind = line
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let n = counts.entry(kind).or_insert(0);
        *n += 1;
        // "ELF file    3: F.3.sm_86.cubin" → the number after "file".
        let mut fields: Vec<String> = line.splitn(3, ':').map(str::to_string).collect();
        if let Some(head) = fields.first_mut() {
            let cut = head
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .to_string();
            *head = format!("{cut}{n}");
        }
        if let Some(name) = fields.get_mut(1) {
            let parts: Vec<&str> = name.splitn(3, '.').collect();
            if let [stem, _, rest] = parts[..] {
                *name = format!("{stem}.{n}.{rest}");
            }
        }
        out.push_str(&fields.join(":"));
        out.push('\n');
    }
    out
}
