//! Libraries laid out as Intel's SYCL compiler lays them out (bitsandbytes'
//! XPU builds), made here: each device image in a section
//! `__CLANG_OFFLOAD_BUNDLE__sycl-<target>`, most of them compressed to one
//! zstd frame; `.tgtimg`, a table of each image's address and its size
//! (decompressed); a device image descriptor per image naming its target.
//! The images: SPIR-V that clang makes for `spirv64` (one compressed, one
//! as it is) and an `llvm-ar` archive standing in for the native code
//! of `spir64_gen` (compressed). The same C source is built into an ELF
//! library by `cc` (the table's addresses left to relative relocations)
//! and into a DLL by clang and lld-link, which cut the section names to
//! `__CLANG_` and merge them: there the descriptors name the targets.
//!
//! Both list the three images with their targets, kinds and sizes,
//! `check` and `prune`'s report name the targets they hold, rules name
//! them by target (`spir64`), `extract` writes the original bytes, and
//! table rows that lie about their image, or share bytes with another
//! row's, are damage (exit 2), never another image.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::damaged::damage_failure;
use crate::util::{files, llvm, md5_hex, ours, ours_json, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(
            image_tables_in_elf_and_pe,
            &["clang", "llvm-ar", "lld-link", "llvm-readobj", "cc", "zstd"],
        ),
        trial!(table_rows_that_lie_are_damage, &["clang", "llvm-ar", "lld-link", "cc", "zstd"]),
        trial!(overlapping_table_rows_are_damage_and_nothing_is_extracted, &["cc"]),
    ]
}

/// The images, in the order the C source puts them: (section's target,
/// file, compressed).
const IMAGES: &[(&str, &str, bool)] = &[
    ("spir64", "a.spv", true),
    ("spir64", "b.spv", false),
    ("spir64_gen", "gen.a", true),
];

/// Makes the images in `d`: two SPIR-V modules from OpenCL C, an archive
/// of an object, and the zstd frame of each one [`IMAGES`] compresses.
fn images(d: &Path) -> Result<(), Failed> {
    for (name, body) in [("a", "*p = 1;"), ("b", "p[1] = 2;")] {
        std::fs::write(
            d.join(format!("{name}.cl")),
            format!("void k_{name}(global int *p) {{ {body} }}\n"),
        )?;
        run(
            &llvm("clang"),
            &[
                "--target=spirv64",
                "-cl-std=CL2.0",
                "-c",
                &format!("{name}.cl"),
                "-o",
                &format!("{name}.spv"),
            ],
            d,
        )
        .ok()?;
    }
    std::fs::write(d.join("g.c"), "int g(void) { return 7; }\n")?;
    run(&llvm("clang"), &["-c", "g.c", "-o", "g.o"], d).ok()?;
    run(&llvm("llvm-ar"), &["rc", "gen.a", "g.o"], d).ok()?;
    for (_, file, compressed) in IMAGES {
        if *compressed {
            run(
                Path::new("zstd"),
                &["-q", "-f", "-19", file, "-o", &format!("{file}.zst")],
                d,
            )
            .ok()?;
        }
    }
    Ok(())
}

/// The C source of the library: the images, the table (with `sizes`, the
/// sizes its rows give, in [`IMAGES`]' order) and the descriptors.
fn source(d: &Path, sizes: &[u64]) -> Result<String, Failed> {
    let mut c = String::from(
        "#include <stdint.h>\n\
         struct desc { uint16_t version; uint8_t kind, format; const char *target, \
         *compile, *link; const unsigned char *start, *end; const void *eb, *ee, *pb, *pe; };\n\
         static const char none[] = \"\";\n",
    );
    for (i, (target, file, compressed)) in IMAGES.iter().enumerate() {
        let stored = if *compressed {
            format!("{file}.zst")
        } else {
            file.to_string()
        };
        let bytes: Vec<String> = std::fs::read(d.join(&stored))?
            .iter()
            .map(u8::to_string)
            .collect();
        c.push_str(&format!(
            "__attribute__((section(\"__CLANG_OFFLOAD_BUNDLE__sycl-{target}\"), aligned(16), used)) \
             const unsigned char img{i}[] = {{{}}};\n\
             __attribute__((section(\".tgtimg\"), aligned(16), used)) \
             const uintptr_t info{i}[2] = {{(uintptr_t)img{i}, {}}};\n\
             static const char target{i}[] = \"{target}\";\n",
            bytes.join(","),
            sizes[i]
        ));
    }
    c.push_str("__attribute__((used)) const struct desc descs[] = {\n");
    for (i, (_, _, compressed)) in IMAGES.iter().enumerate() {
        let format = if *compressed { 4 } else { 2 };
        c.push_str(&format!(
            "  {{3, 4, {format}, target{i}, none, none, img{i}, img{i} + sizeof img{i}, 0, 0, 0, 0}},\n"
        ));
    }
    c.push_str("};\n#ifdef _WIN32\n__declspec(dllexport)\n#endif\nint f(void) { return 0; }\n");
    Ok(c)
}

/// Builds `lib.so` (cc) and `lib.dll` (clang and lld-link) from `src`.
fn build(d: &Path, src: &str) -> Result<(), Failed> {
    std::fs::write(d.join("lib.c"), src)?;
    run(
        Path::new("cc"),
        &["-shared", "-fPIC", "-o", "lib.so", "lib.c"],
        d,
    )
    .ok()?;
    run(
        &llvm("clang"),
        &[
            "--target=x86_64-pc-windows-msvc",
            "-c",
            "lib.c",
            "-o",
            "lib.obj",
        ],
        d,
    )
    .ok()?;
    run(
        &llvm("lld-link"),
        &[
            "/dll",
            "/noentry",
            "/nodefaultlib",
            "/out:lib.dll",
            "lib.obj",
        ],
        d,
    )
    .ok()?;
    Ok(())
}

/// The sizes of the images, as they are (decompressed).
fn sizes(d: &Path) -> Result<Vec<u64>, Failed> {
    IMAGES
        .iter()
        .map(|(_, file, _)| Ok(std::fs::metadata(d.join(file))?.len()))
        .collect()
}

/// What `inspect --json --hash` says of each image of `file`: target,
/// kind, compression, size decompressed and hash, sorted.
fn listed(d: &Path, file: &str) -> Result<Vec<String>, Failed> {
    let doc = ours_json(&["inspect", "--json", "--hash", file], d)?;
    let f = &doc["files"][0];
    same(
        &format!("{file}: problems"),
        f["problems"].clone(),
        serde_json::json!([]),
    )?;
    let mut out: Vec<String> = f["images"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i: &Value| {
            format!(
                "{} {} {} {} {}",
                i["offload_kind"], i["triple"], i["image_kind"], i["uncompressed_size"], i["hash"]
            )
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Both libraries list the three images alike (the DLL's targets from
/// the descriptors), and `extract` writes each image's own bytes.
fn image_tables_in_elf_and_pe() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    images(d)?;
    let sizes = sizes(d)?;
    build(d, &source(d, &sizes)?)?;
    // The DLL's sections of images are all named `__CLANG_`.
    let sections = run(&llvm("llvm-readobj"), &["--sections", "lib.dll"], d).ok()?;
    let text = String::from_utf8_lossy(&sections.stdout);
    same(
        "sections of the DLL named __CLANG_ and __CLANG_OFFLOAD…",
        (
            text.matches("Name: __CLANG_ ").count() > 0,
            text.contains("__CLANG_OFFLOAD"),
        ),
        (true, false),
    )?;
    let elf = listed(d, "lib.so")?;
    same("images of the DLL", listed(d, "lib.dll")?, elf.clone())?;
    let kinds: Vec<String> = elf
        .iter()
        .map(|l| l.split(' ').take(4).collect::<Vec<_>>().join(" "))
        .collect();
    let mut expected: Vec<String> = IMAGES
        .iter()
        .zip(&sizes)
        .map(|((target, file, compressed), size)| {
            let kind = if file.ends_with(".a") {
                "archive"
            } else {
                "spirv"
            };
            let size = if *compressed {
                size.to_string()
            } else {
                "null".into()
            };
            format!(r#""sycl" "{target}" "{kind}" {size}"#)
        })
        .collect();
    expected.sort();
    same("images of the library", kinds, expected)?;
    // check names what they hold by their triples (they have no target ID).
    let c = run(&ours(), &["check", "--require", "sm_90", "lib.dll"], d);
    same("check --require sm_90 lib.dll", c.code, 1)?;
    if !String::from_utf8_lossy(&c.stdout).contains("(has: spir64 spir64_gen)") {
        let out = String::from_utf8_lossy(&c.stdout);
        return Err(format!("check does not name the SYCL targets: {out}").into());
    }
    let c = run(&ours(), &["check", "--require-kind", "sycl", "lib.so"], d);
    same("check --require-kind sycl lib.so", c.code, 0)?;
    if !String::from_utf8_lossy(&c.stdout).contains("(*:sycl: spir64 spir64_gen)") {
        let out = String::from_utf8_lossy(&c.stdout);
        return Err(format!("check does not say what serves the rule: {out}").into());
    }
    // prune's report names the groups it keeps by triple too.
    let p = ours_json(
        &["prune", "--drop", "sm_90", "--dry-run", "--json", "lib.dll"],
        d,
    )?;
    let kept: Vec<String> = p["files"][0]["kept"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| format!("{} {} {}", g["target"], g["kind"], g["images"]))
        .collect();
    same(
        "prune --drop sm_90: kept",
        kept,
        vec![
            r#""spir64" "spirv" 2"#.to_string(),
            r#""spir64_gen" "archive" 1"#.to_string(),
        ],
    )?;
    sycl_rules(d)?;
    let want: BTreeMap<String, usize> = IMAGES
        .iter()
        .map(|(_, file, _)| Ok((md5_hex(&std::fs::read(d.join(file))?), 1)))
        .collect::<Result<_, Failed>>()?;
    for lib in ["lib.so", "lib.dll"] {
        let out = format!("x-{lib}");
        run(&ours(), &["extract", "-o", &out, lib], d).ok()?;
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        for e in std::fs::read_dir(d.join(&out))? {
            *got.entry(md5_hex(&std::fs::read(e?.path())?)).or_default() += 1;
        }
        same(&format!("extract {lib}: the images' bytes"), &got, &want)?;
    }
    Ok(())
}

/// Issue #57: the SYCL targets are rules. `check --forbid spir64` fails
/// on the SPIR-V, `--require` of both targets passes, a target the
/// library lacks is missing, a GPU triple's architecture is a usage
/// error; `extract --arch` takes one target's images; `prune` of the
/// linked library refuses a rule that would drop images (its sections are
/// pruned only in a relocatable object) instead of removing nothing.
fn sycl_rules(d: &Path) -> Result<(), Failed> {
    for (args, code) in [
        (&["check", "--forbid", "spir64", "lib.so"][..], 1),
        (&["check", "--forbid", "spir64_gen:archive", "lib.dll"], 1),
        (&["check", "--forbid", "spir64_x86_64", "lib.so"], 0),
        (
            &[
                "check",
                "--require",
                "spir64",
                "--require",
                "spir64_gen",
                "lib.dll",
            ],
            0,
        ),
        (&["check", "--require", "spirv64", "lib.so"], 1),
        (&["check", "--forbid", "nvptx64", "lib.so"], 2),
        (&["check", "--require", "SPIR64", "lib.so"], 2),
        (
            &["prune", "--drop", "spir64_x86_64", "--dry-run", "lib.so"],
            0,
        ),
    ] {
        let r = run(&ours(), args, d);
        same(&format!("{args:?}: exit code ({})", r.stderr), r.code, code)?;
    }
    for args in [
        &["prune", "--drop", "spir64", "--dry-run", "lib.so"][..],
        &["prune", "--keep", "spir64", "--dry-run", "lib.dll"],
    ] {
        let r = run(&ours(), args, d);
        if r.code == 0 || !r.stderr.contains("pruned only in a relocatable object") {
            return Err(format!("{args:?}: exit {}, not refused: {}", r.code, r.stderr).into());
        }
    }
    run(
        &ours(),
        &["extract", "--arch", "spir64_gen", "-o", "gen", "lib.so"],
        d,
    )
    .ok()?;
    same(
        "extract --arch spir64_gen: files",
        files(&d.join("gen")).len(),
        1,
    )?;
    Ok(())
}

/// A row that says a compressed image decompresses to a byte more, and
/// one whose address is not in the file: `inspect --hash`, `extract` and
/// `check` exit 2 naming the file, and the images stay three. Without the
/// second, `check` still finds the first (it decompresses every image).
fn table_rows_that_lie_are_damage() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    images(d)?;
    let mut sizes = sizes(d)?;
    sizes[0] += 1;
    let mut src = source(d, &sizes)?;
    src.push_str(
        "__attribute__((section(\".tgtimg\"), aligned(16), used)) \
         const uintptr_t stray[2] = {0x7f0000000000, 64};\n",
    );
    build(d, &source(d, &sizes)?)?;
    for lib in ["lib.so", "lib.dll"] {
        let r = run(&ours(), &["check", "--forbid", "sm_90", lib], d);
        same(
            &format!("check of {lib} with a row one byte long"),
            r.code,
            2,
        )?;
    }
    build(d, &src)?;
    for lib in ["lib.so", "lib.dll"] {
        let doc = ours_json(&["inspect", "--json", "--hash", lib], d);
        let doc = match doc {
            Ok(v) => v,
            Err(_) => {
                let r = run(&ours(), &["inspect", "--json", "--hash", lib], d);
                same(&format!("inspect {lib}: exit code"), r.code, 2)?;
                serde_json::from_slice(&r.stdout)?
            }
        };
        let f = &doc["files"][0];
        same(
            &format!("{lib}: images"),
            f["images"].as_array().map(Vec::len),
            Some(3),
        )?;
        let problems = f["problems"].to_string();
        for want in [
            &format!(
                "decompresses to {} bytes where the image table says {}",
                sizes[0] - 1,
                sizes[0]
            ) as &str,
            "gives the address 0x7f0000000000, which no section's bytes hold",
        ] {
            if !problems.contains(want) {
                return Err(format!("{lib}: no problem saying '{want}': {problems}").into());
            }
        }
        for args in [
            &["extract", "-o", "x", lib][..],
            &["check", "--require", "sm_90", lib][..],
            &["inspect", lib][..],
        ] {
            let r = run(&ours(), args, d);
            same(&format!("{args:?}: exit code"), r.code, 2)?;
            if !r.stderr.contains(lib) {
                return Err(format!("{args:?}: stderr does not name {lib}: {}", r.stderr).into());
            }
        }
    }
    Ok(())
}

/// Issue #57: a library whose image table has 2,000 rows over one 64 KiB
/// image, each 16 bytes further in and running to the image's end (a
/// file of 157 KB), made `extract` write 94 MB and `size` claim 62,778 %
/// of the file. Rows that share bytes are damage, as a bundle's entries
/// are: every scanner command exits 2 naming the file, `extract` leaves
/// nothing, and `size` counts the image once.
fn overlapping_table_rows_are_damage_and_nothing_is_extracted() -> Result<(), Failed> {
    const ROWS: usize = 2_000;
    const IMAGE: usize = 64 << 10;
    let t = tempdir();
    let d = t.path();
    let mut c = format!(
        "#include <stdint.h>\n\
         __attribute__((section(\"__CLANG_OFFLOAD_BUNDLE__sycl-spir64\"), aligned(16), used)) \
         const unsigned char img[{IMAGE}] = {{3, 2, 35, 7}};\n\
         __attribute__((section(\".tgtimg\"), aligned(16), used)) \
         const uintptr_t table[{ROWS}][2] = {{\n"
    );
    for i in 0..ROWS {
        c.push_str(&format!(
            "{{(uintptr_t)(img + {}), {}}},\n",
            16 * i,
            IMAGE - 16 * i
        ));
    }
    c.push_str("};\nint f(void) { return 0; }\n");
    std::fs::write(d.join("lib.c"), c)?;
    run(
        Path::new("cc"),
        &["-shared", "-fPIC", "-o", "lib.so", "lib.c"],
        d,
    )
    .ok()?;
    let len = std::fs::metadata(d.join("lib.so"))?.len();
    if !(150_000..170_000).contains(&len) {
        return Err(format!("lib.so is {len} bytes, not about 157 KB").into());
    }
    for args in [
        &["inspect", "lib.so"][..],
        &["inspect", "--json", "--hash", "lib.so"],
        &["size", "lib.so"],
        &["check", "--require-kind", "sycl", "lib.so"],
        &["check", "--forbid", "sm_90", "lib.so"],
        &["extract", "-o", "out", "lib.so"],
        &["diff", "lib.so", "lib.so"],
    ] {
        let r = run(&ours(), args, d);
        damage_failure(&format!("{args:?}"), &r, "lib.so")?;
        let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if args[0] != "extract" && !said.contains("overlaps entry 0") {
            return Err(format!("{args:?}: the overlap is not named: {said:.2000}").into());
        }
    }
    let left = files(&d.join("out"));
    if !left.is_empty() {
        return Err(format!("extract left {} files", left.len()).into());
    }
    let r = run(&ours(), &["size", "--json", "lib.so"], d);
    let doc: Value = serde_json::from_slice(&r.stdout)?;
    let total = doc["files"][0]["total"]["bytes"].as_u64();
    same("size --json: the bytes counted", total, Some(IMAGE as u64))?;
    Ok(())
}
