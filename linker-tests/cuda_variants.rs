//! Arch-specific (`sm_90a`) and family (`sm_100f`) CUDA code, built here:
//! a kernel assembled by NVIDIA's `ptxas` for every arch of [`ARCHS`] it
//! accepts (CUDA 13.0's: all of them), put with its PTX into fatbins by
//! NVIDIA's `fatbinary`, told the variant (`sm=90a`, `sm=100f`, as nvcc
//! tells it), in each way it stores entries: nothing compressed, its
//! default (PTX compressed), every entry zstd-compressed, every entry
//! LZ4-compressed. In each:
//!
//! - `inspect` names every cubin and PTX entry as `cuobjdump -lelf -lptx`
//!   names it, in the same order (an arch-specific cubin `sm_90a`, a
//!   family cubin `sm_100` as cuobjdump has it, family PTX `sm_100f`), and
//!   says what each is built for (`cuda_arch`: `sm_100f` for the family
//!   cubin);
//! - `extract` writes the files `cuobjdump -xelf all -xptx all` writes,
//!   with the same arch in their names and the same bytes;
//! - `check --require-kernel k@ARCH` finds the kernel in the images of
//!   each arch, by the same names.
//!
//! An arch-specific cubin that `fatbinary` was told is plain (`sm=90`,
//! stored as it is) is still `sm_90a`, as cuobjdump reads the cubin.
//!
//! The rules, on a fatbin holding one arch's cubin alone: `check
//! --require` for the same SM, its `a` form, the family's next member
//! and the next major exits as NVIDIA's loader would run the cubin there
//! (docs/target-rules.md §3: a plain or family cubin on its SM and the
//! family's later ones, an arch-specific one on its SM only), and
//! `--forbid` takes the SM's code whatever its variant, an `a` or `f`
//! rule that variant's alone. `prune --keep sm_90` keeps the sm_90 and
//! sm_90a cubins and says why; `--drop sm_90a` drops only the sm_90a one.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{md5_hex, ours, ours_json, run, same, tempdir};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";

/// The archs tried, plain ones among them: every arch-specific and family
/// arch of the CUDA 13.0 toolkit, and plain ones around them.
const ARCHS: &[&str] = &[
    "sm_75", "sm_80", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a", "sm_100f", "sm_103a",
    "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a", "sm_120f", "sm_121a", "sm_121f",
];

/// How `fatbinary` is asked to store the entries.
const STORAGE: &[(&str, &[&str])] = &[
    ("plain", &["--compress=false"]),
    ("default", &[]),
    ("zstd", &["--compress-all"]),
    ("lz4", &["--compress-all", "--compress-mode=speed"]),
];

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(ptxas_archs_named_as_cuobjdump_names_them, &[PTXAS, FATBINARY, CUOBJDUMP]),
        trial!(rules_follow_the_loader, &[PTXAS, FATBINARY, CUOBJDUMP]),
        trial!(
            fatbins_in_data_sections_are_counted_and_named,
            &[PTXAS, FATBINARY, CUOBJDUMP, "cc"],
        ),
        trial!(
            pe_relocatable_fatbins_in_the_cut_section_name,
            &[PTXAS, FATBINARY, "clang", "lld-link"],
        ),
    ]
}

/// A library that keeps fatbins in its own data, as cuFFT does (thousands
/// in `.data`, loaded by its own code; no CUDA runtime registers them and
/// `cuobjdump` reads none): one in `.rodata` and two in `.data`, made by
/// `fatbinary` from an sm_90 cubin and compiled into a shared library by
/// `cc`. The section scan lists no image but counts them, by section, in
/// `inspect` (a note; `fatbins_elsewhere` in JSON, and in the JSON of
/// `size`, `check` and `diff`), `size`, `diff` and `check` (whose failure
/// says `--raw` reads them); `--raw` lists the three. With
/// the fatbin in `.nv_fatbin` as well, `prune` for a GPU that loads none
/// of it refuses, saying the three others stay as they are.
fn fatbins_in_data_sections_are_counted_and_named() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("k.ptx"), kernel_ptx("sm_90", "8.0"))?;
    run(
        Path::new(PTXAS),
        &["-arch=sm_90", "k.ptx", "-o", "k.cubin"],
        d,
    )
    .ok()?;
    fatbinary(
        d,
        "k.fatbin",
        &[("elf", "90".into(), "k.cubin".into())],
        &[],
    )?;
    let bytes: Vec<String> = std::fs::read(d.join("k.fatbin"))?
        .iter()
        .map(|b| b.to_string())
        .collect();
    let array = bytes.join(",");
    std::fs::write(
        d.join("fb.c"),
        format!(
            "__attribute__((aligned(8))) const unsigned char ro[] = {{{array}}};\n\
             __attribute__((aligned(8))) unsigned char rw1[] = {{{array}}};\n\
             __attribute__((aligned(8))) unsigned char rw2[] = {{{array}}};\n"
        ),
    )?;
    run(
        Path::new("cc"),
        &["-shared", "-fPIC", "-o", "libfb.so", "fb.c"],
        d,
    )
    .ok()?;
    // cuobjdump reads none of them.
    let c = run(Path::new(CUOBJDUMP), &["-all", "-lelf", "libfb.so"], d);
    if String::from_utf8_lossy(&c.stdout).contains("ELF file") {
        return Err("cuobjdump lists a cubin of the library's data sections".into());
    }
    let doc = ours_json(&["inspect", "--json", "libfb.so"], d)?;
    let file = &doc["files"][0];
    same("images", file["images"].as_array().map(Vec::len), Some(0))?;
    same(
        "fatbins_elsewhere",
        file["fatbins_elsewhere"].clone(),
        serde_json::json!([
            {"section": ".rodata", "fatbins": 1},
            {"section": ".data", "fatbins": 2}
        ]),
    )?;
    same_lists_in_json(d, &file["fatbins_elsewhere"])?;
    let text = run(&ours(), &["inspect", "libfb.so"], d).ok()?;
    let want = "note: 3 CUDA fatbin(s) in .rodata (1), .data (2), which the file loads itself, \
                not read (--raw reads them)";
    if !String::from_utf8_lossy(&text.stdout).contains(want) {
        return Err(format!("inspect does not say '{want}'").into());
    }
    let size = run(&ours(), &["size", "libfb.so"], d).ok()?;
    if !String::from_utf8_lossy(&size.stdout).contains(want) {
        return Err(format!("size does not say '{want}'").into());
    }
    // diff of the library with itself: the same, and the note.
    let diff = run(&ours(), &["diff", "libfb.so", "libfb.so"], d);
    same("diff of the library with itself", diff.code, 0)?;
    let said = format!("note: libfb.so: {}", want.trim_start_matches("note: "));
    if !String::from_utf8_lossy(&diff.stdout).contains(&said) {
        return Err(format!("diff does not say '{said}'").into());
    }
    let check = run(&ours(), &["check", "--require", "sm_90", "libfb.so"], d);
    same("check --require sm_90", check.code, 1)?;
    if !String::from_utf8_lossy(&check.stdout).contains("--raw reads them") {
        return Err("check's failure does not say that --raw reads the fatbins".into());
    }
    let raw = run(
        &ours(),
        &["check", "--raw", "--require", "sm_90", "libfb.so"],
        d,
    );
    same("check --raw --require sm_90", raw.code, 0)?;
    let raw = ours_json(&["inspect", "--raw", "--json", "libfb.so"], d)?;
    let targets: Vec<String> = raw["files"][0]["images"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| format!("{} {}", i["target_id"], i["image_kind"]))
        .collect();
    same(
        "inspect --raw",
        targets,
        vec![r#""sm_90" "cubin""#.to_string(); 3],
    )?;
    same(
        "fatbins_elsewhere of a raw scan",
        raw["files"][0].get("fatbins_elsewhere").is_none(),
        true,
    )?;
    prune_leaves_them(d, &array)
}

/// `libfb.so` of [`fatbins_in_data_sections_are_counted_and_named`] (in `d`): the JSON of
/// `size`, `check` and `diff` (each side) has `inspect --json`'s
/// `fatbins_elsewhere`, `want`.
fn same_lists_in_json(d: &Path, want: &Value) -> Result<(), Failed> {
    let size = ours_json(&["size", "--json", "libfb.so"], d)?;
    same(
        "size --json: fatbins_elsewhere",
        &size["files"][0]["fatbins_elsewhere"],
        want,
    )?;
    let check = run(
        &ours(),
        &["check", "--json", "--require", "sm_90", "libfb.so"],
        d,
    );
    let check: Value = serde_json::from_slice(&check.stdout)?;
    same(
        "check --json: fatbins_elsewhere",
        &check["files"][0]["fatbins_elsewhere"],
        want,
    )?;
    let diff = run(&ours(), &["diff", "--json", "libfb.so", "libfb.so"], d);
    let diff: Value = serde_json::from_slice(&diff.stdout)?;
    for side in ["old", "new"] {
        same(
            &format!("diff --json: {side}_fatbins_elsewhere"),
            &diff["files"][0][format!("{side}_fatbins_elsewhere")],
            want,
        )?;
    }
    Ok(())
}

/// [`fatbins_in_data_sections_are_counted_and_named`]'s library with its fatbin (`array`, as C)
/// in `.nv_fatbin` too, pruned for a GPU that loads none of it: the
/// refusal says the other three stay as they are.
fn prune_leaves_them(d: &Path, array: &str) -> Result<(), Failed> {
    let c = std::fs::read_to_string(d.join("fb.c"))?;
    std::fs::write(
        d.join("fb2.c"),
        format!(
            "{c}__attribute__((aligned(8), section(\".nv_fatbin\"))) \
             const unsigned char reg[] = {{{array}}};\n"
        ),
    )?;
    run(
        Path::new("cc"),
        &["-shared", "-fPIC", "-o", "libfb2.so", "fb2.c"],
        d,
    )
    .ok()?;
    let pruned = run(
        &ours(),
        &["prune", "--keep", "sm_80", "-o", "out.so", "libfb2.so"],
        d,
    );
    let err = &pruned.stderr;
    let want = "--allow-empty allows that (the 3 CUDA fatbin(s) in .rodata (1), .data (2), \
                which the file loads itself, are not pruned and stay as they are)";
    if pruned.code == 0 || !err.contains(want) {
        return Err(format!("prune --keep sm_80 exits {}, says: {err}", pruned.code).into());
    }
    Ok(())
}

/// A DLL as nvcc and MSVC make one with relocatable device code
/// (bitsandbytes' CUDA DLLs): a fatbin in `__nv_relfatbin`, which the
/// linker cuts to `__nv_rel` (an image's section names have 8 bytes), one
/// in `.nv_fatbin` (`.nv_fatb`), a wrapper in `.nvFatBinSegment` pointing
/// at each (built here by clang and lld-link, which cut the names as
/// MSVC's linker does). Both fatbins are read, with no problem; the raw
/// scan finds the same; `check` answers for each; `prune` keeps the sm_90
/// one and empties the other, in place (the containers lie in two
/// sections).
fn pe_relocatable_fatbins_in_the_cut_section_name() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let mut arrays = Vec::new();
    for arch in ["sm_80", "sm_90"] {
        std::fs::write(d.join("k.ptx"), kernel_ptx(arch, "8.0"))?;
        let cubin = format!("{arch}.cubin");
        let a = format!("-arch={arch}");
        run(Path::new(PTXAS), &[a.as_str(), "k.ptx", "-o", &cubin], d).ok()?;
        let fb = format!("{arch}.fatbin");
        fatbinary(d, &fb, &[("elf", sm_value(arch), cubin)], &[])?;
        let bytes: Vec<String> = std::fs::read(d.join(&fb))?
            .iter()
            .map(|b| b.to_string())
            .collect();
        arrays.push(bytes.join(","));
    }
    std::fs::write(
        d.join("fb.c"),
        format!(
            "__attribute__((aligned(8), section(\"__nv_relfatbin\"))) \
             const unsigned char rel[] = {{{}}};\n\
             __attribute__((aligned(8), section(\".nv_fatbin\"))) \
             const unsigned char reg[] = {{{}}};\n\
             struct w {{ int magic; int version; const void *data; void *unused; }};\n\
             __attribute__((section(\".nvFatBinSegment\"))) \
             const struct w w1 = {{0x466243b1, 1, rel, 0}};\n\
             __attribute__((section(\".nvFatBinSegment\"))) \
             const struct w w2 = {{0x466243b1, 1, reg, 0}};\n\
             __declspec(dllexport) int f(void) {{ return 0; }}\n",
            arrays[1], arrays[0]
        ),
    )?;
    run(
        &crate::util::llvm("clang"),
        &[
            "--target=x86_64-pc-windows-msvc",
            "-c",
            "fb.c",
            "-o",
            "fb.obj",
        ],
        d,
    )
    .ok()?;
    run(
        &crate::util::llvm("lld-link"),
        &["/dll", "/noentry", "/nodefaultlib", "/out:fb.dll", "fb.obj"],
        d,
    )
    .ok()?;
    let targets = |doc: &Value| -> Vec<String> {
        doc["files"][0]["images"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| format!("{} {}", i["section"], i["target_id"]))
            .collect()
    };
    let doc = ours_json(&["inspect", "--json", "fb.dll"], d)?;
    same(
        "problems",
        doc["files"][0]["problems"].clone(),
        serde_json::json!([]),
    )?;
    same(
        "images by section",
        targets(&doc),
        vec![
            r#"".nv_fatb" "sm_80""#.to_string(),
            r#""__nv_rel" "sm_90""#.to_string(),
        ],
    )?;
    let raw = ours_json(&["inspect", "--raw", "--json", "fb.dll"], d)?;
    let ids = |doc: &Value| -> Vec<String> {
        let mut v: Vec<String> = doc["files"][0]["images"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| i["target_id"].to_string())
            .collect();
        v.sort();
        v
    };
    same("the raw scan's images", ids(&raw), ids(&doc))?;
    for (arch, code) in [("sm_90", 0), ("sm_80", 0), ("sm_100", 1)] {
        let c = run(&ours(), &["check", "--require", arch, "fb.dll"], d);
        same(&format!("check --require {arch}"), c.code, code)?;
    }
    let p = run(
        &ours(),
        &["prune", "--keep", "sm_90", "-o", "out.dll", "fb.dll"],
        d,
    );
    same("prune --keep sm_90", p.code, 0)?;
    let after = ours_json(&["inspect", "--json", "out.dll"], d)?;
    same(
        "images after prune",
        targets(&after),
        vec![r#""__nv_rel" "sm_90""#.to_string()],
    )
}

/// A kernel for `arch` in PTX ISA `version`.
fn kernel_ptx(arch: &str, version: &str) -> String {
    format!(
        ".version {version}\n.target {arch}\n.address_size 64\n\n\
         .visible .entry k(.param .u64 p)\n{{\n\tret;\n}}\n"
    )
}

/// Assembles the kernel in `d` for each arch of [`ARCHS`] `ptxas` accepts
/// (`k_ARCH.ptx`, `k_ARCH.cubin`), trying the newest PTX ISA first; the
/// archs it accepted.
fn assemble(d: &Path) -> Result<Vec<&'static str>, Failed> {
    let mut accepted = Vec::new();
    for arch in ARCHS {
        for version in ["9.0", "8.8", "8.7", "8.0"] {
            let ptx = format!("k_{arch}.ptx");
            std::fs::write(d.join(&ptx), kernel_ptx(arch, version))?;
            let out = format!("k_{arch}.cubin");
            let arg = format!("-arch={arch}");
            if run(Path::new(PTXAS), &[arg.as_str(), &ptx, "-o", &out], d).code == 0 {
                accepted.push(*arch);
                break;
            }
        }
    }
    // CUDA 12.0 and later build sm_90a; 12.8 sm_100a and sm_120a.
    for must in ["sm_90a", "sm_100a", "sm_120a"] {
        if !accepted.contains(&must) {
            return Err(format!("ptxas does not build {must}: {accepted:?}").into());
        }
    }
    Ok(accepted)
}

/// `fatbinary --create=OUT` with `images` (kind, `sm=` value, file) and
/// `extra` options.
fn fatbinary(
    d: &Path,
    out: &str,
    images: &[(&str, String, String)],
    extra: &[&str],
) -> Result<(), Failed> {
    let mut args: Vec<String> = vec![format!("--create={out}")];
    args.extend(extra.iter().map(|s| s.to_string()));
    for (kind, sm, file) in images {
        args.push(format!("--image3=kind={kind},sm={sm},file={file}"));
    }
    run(Path::new(FATBINARY), &args, d).ok()?;
    Ok(())
}

/// `sm_90a` → `90a`, what `fatbinary`'s `sm=` takes.
fn sm_value(arch: &str) -> String {
    arch.trim_start_matches("sm_").to_string()
}

/// The arch `cuobjdump` (and `extract`) put in a file name: the part
/// after the last `-` or `.` before the extension, `sm_…`.
fn arch_in_name(name: &str) -> String {
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    stem.rsplit(['.', '-'])
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `cuobjdump -lelf -lptx FILE`'s names per kind (`cubin`, `ptx`), in its
/// order: the arch of each line.
fn cuobjdump_list(d: &Path, file: &str) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    let r = run(Path::new(CUOBJDUMP), &["-lelf", "-lptx", file], d).ok()?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&r.stdout).lines() {
        let kind = match line {
            l if l.starts_with("ELF file") => "cubin",
            l if l.starts_with("PTX file") => "ptx",
            _ => continue,
        };
        let name = line.rsplit(' ').next().unwrap_or_default();
        out.entry(kind.into()).or_default().push(arch_in_name(name));
    }
    Ok(out)
}

/// The images of an `inspect --json` document (one file), per kind in
/// entry order: (target ID, `cuda_arch`).
fn our_list(doc: &Value) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for i in doc["files"][0]["images"].as_array().into_iter().flatten() {
        let kind = i["image_kind"].as_str().unwrap_or_default().to_string();
        let name = i["target_id"].as_str().unwrap_or_default().to_string();
        let code = i["cuda_arch"].as_str().unwrap_or_default().to_string();
        out.entry(kind).or_default().push((name, code));
    }
    out
}

/// Each file written into `dir`, per kind (by its extension) in the
/// order of its number (cuobjdump's `STEM.N.ARCH.EXT`, ours
/// `FILE.ID.….EXT`): its arch and the md5 of its bytes.
fn written(dir: &Path) -> Result<BTreeMap<String, Vec<(String, String)>>, Failed> {
    let mut files: Vec<(String, u64, String, String)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let kind = name.rsplit('.').next().unwrap_or_default().to_string();
        let number = name
            .split('.')
            .find_map(|p| p.parse::<u64>().ok())
            .ok_or_else(|| format!("no number in {name}"))?;
        let hash = md5_hex(&std::fs::read(e.path())?);
        files.push((kind, number, arch_in_name(&name), hash));
    }
    files.sort();
    let mut out: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (kind, _, arch, hash) in files {
        out.entry(kind).or_default().push((arch, hash));
    }
    Ok(out)
}

/// The names in each fatbin against cuobjdump's, what each is built for,
/// the files extracted, and the kernels found by each name.
fn ptxas_archs_named_as_cuobjdump_names_them() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let archs = assemble(d)?;
    let mut images = Vec::new();
    for arch in &archs {
        images.push(("elf", sm_value(arch), format!("k_{arch}.cubin")));
        images.push(("ptx", sm_value(arch), format!("k_{arch}.ptx")));
    }
    // The built-for arch of each cubin and each PTX, in entry order.
    let code: Vec<String> = archs.iter().map(|a| a.to_string()).collect();
    for (storage, extra) in STORAGE {
        let fb = format!("{storage}.fatbin");
        fatbinary(d, &fb, &images, extra)?;
        let theirs = cuobjdump_list(d, &fb)?;
        let mine = our_list(&ours_json(&["inspect", "--json", &fb], d)?);
        for kind in ["cubin", "ptx"] {
            let names: Vec<String> = mine[kind].iter().map(|(n, _)| n.clone()).collect();
            same(
                &format!("{storage}: {kind} names (cuobjdump -lelf -lptx)"),
                &names,
                &theirs[kind],
            )?;
            let built: Vec<String> = mine[kind].iter().map(|(_, c)| c.clone()).collect();
            same(
                &format!("{storage}: what each {kind} is built for"),
                &built,
                &code,
            )?;
        }
        // A family cubin is named without its `f`, and built for it.
        if archs.contains(&"sm_100f") {
            let i = archs
                .iter()
                .position(|a| *a == "sm_100f")
                .unwrap_or_default();
            same(
                &format!("{storage}: the sm_100f cubin"),
                &mine["cubin"][i],
                &("sm_100".to_string(), "sm_100f".to_string()),
            )?;
        }

        // Extracted: the same arch in each file's name, the same bytes.
        let (cdir, odir) = (format!("{storage}-cuobjdump"), format!("{storage}-ours"));
        std::fs::create_dir(d.join(&cdir))?;
        run(
            Path::new(CUOBJDUMP),
            &["-xelf", "all", "-xptx", "all", &format!("../{fb}")],
            &d.join(&cdir),
        )
        .ok()?;
        run(&ours(), &["extract", "-o", &odir, &fb], d).ok()?;
        same(
            &format!("{storage}: files extracted (arch in the name, md5)"),
            written(&d.join(&odir))?,
            written(&d.join(&cdir))?,
        )?;

        // The kernel, by each name.
        for arch in &archs {
            let name = |kind: &str| {
                let i = archs.iter().position(|a| a == arch).unwrap_or_default();
                mine[kind][i].0.clone()
            };
            for target in [name("cubin"), name("ptx"), arch.to_string()] {
                let rule = format!("k@{target}");
                let r = run(&ours(), &["check", "--require-kernel", &rule, &fb], d);
                same(
                    &format!("{storage}: check --require-kernel {rule}"),
                    r.code,
                    0,
                )?;
            }
        }
    }

    // An arch-specific cubin packed as plain code is still named by the
    // cubin, as cuobjdump names it.
    let plain_sm = vec![("elf", "90".to_string(), "k_sm_90a.cubin".to_string())];
    fatbinary(d, "told-plain.fatbin", &plain_sm, &["--compress=false"])?;
    let mine = our_list(&ours_json(&["inspect", "--json", "told-plain.fatbin"], d)?);
    same(
        "an sm_90a cubin packed with sm=90",
        (
            &mine["cubin"][0].0,
            &cuobjdump_list(d, "told-plain.fatbin")?["cubin"][0],
        ),
        (&"sm_90a".to_string(), &"sm_90a".to_string()),
    )?;
    Ok(())
}

/// Where NVIDIA's loader runs a cubin built for `code` (`sm_100f`):
/// whether a device of compute capability `dev` runs it (asking for
/// arch-specific code with `a`). Written from docs/target-rules.md §3,
/// apart from the crate's own rules.
fn loader_runs(code: &str, dev: u32, a: bool) -> bool {
    let (digits, suffix) = match code.trim_start_matches("sm_") {
        c if c.ends_with(['a', 'f']) => c.split_at(c.len() - 1),
        c => (c, ""),
    };
    let n: u32 = digits.parse().unwrap_or_default();
    match suffix {
        "a" => dev == n,
        _ if a => false,
        _ => dev / 10 == n / 10 && dev % 10 >= n % 10,
    }
}

/// `check` and `prune` on fatbins of the cubins.
fn rules_follow_the_loader() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let archs = assemble(d)?;
    check_rules(d, &archs)?;
    prune_rules(d, &archs)
}

/// `check --require` and `--forbid` on a fatbin of each arch's cubin
/// alone (assembled in `d`).
fn check_rules(d: &Path, archs: &[&str]) -> Result<(), Failed> {
    let check = |args: &[&str], file: &str| {
        let mut a = vec!["check"];
        a.extend(args);
        a.push(file);
        run(&ours(), &a, d).code
    };
    for arch in archs {
        let fb = format!("{arch}.fatbin");
        let image = vec![("elf", sm_value(arch), format!("k_{arch}.cubin"))];
        fatbinary(d, &fb, &image, &["--compress-all"])?;
        let n: u32 = arch
            .trim_start_matches("sm_")
            .trim_end_matches(['a', 'f'])
            .parse()
            .unwrap_or_default();
        // The SM, the family's next member, the next major; each plain
        // and asking for arch-specific code, where that can be named.
        let next = match n {
            100 => 103,
            120 => 121,
            m => m + 1,
        };
        for dev in [n, next, (n / 10 + 1) * 10] {
            for a in [false, true] {
                let rule = format!("sm_{dev}{}", if a { "a" } else { "" });
                if !offload_kit::targets::is_known_arch(&rule) {
                    continue;
                }
                let want = if loader_runs(arch, dev, a) { 0 } else { 1 };
                same(
                    &format!("check --require {rule} on an {arch} cubin"),
                    check(&["--require", &rule], &fb),
                    want,
                )?;
            }
        }
        // --forbid: the SM's code, or that variant's alone.
        for variant in ["", "a", "f"] {
            let rule = format!("sm_{n}{variant}");
            if !offload_kit::targets::is_known_arch(&rule) {
                continue;
            }
            let taken = variant.is_empty() || arch.ends_with(variant);
            same(
                &format!("check --forbid {rule} on an {arch} cubin"),
                check(&["--forbid", &rule], &fb),
                if taken { 1 } else { 0 },
            )?;
        }
    }
    Ok(())
}

/// `prune` on a fatbin of every arch's cubin (assembled in `d`): sm_90
/// keeps the sm_90 and sm_90a cubins, and says why; dropping sm_90a
/// drops that one alone.
fn prune_rules(d: &Path, archs: &[&str]) -> Result<(), Failed> {
    let images: Vec<_> = archs
        .iter()
        .map(|a| ("elf", sm_value(a), format!("k_{a}.cubin")))
        .collect();
    fatbinary(d, "all.fatbin", &images, &["--compress-all"])?;
    let doc = ours_json(
        &[
            "prune",
            "--keep",
            "sm_90",
            "--json",
            "-o",
            "kept.fatbin",
            "all.fatbin",
        ],
        d,
    )?;
    let kept: Vec<(String, String)> = doc["files"][0]["kept"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            (
                g["target"].as_str().unwrap_or_default().to_string(),
                g["why"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let want = [
        ("sm_90", "sm_90: sm_90 code, for sm_90 devices"),
        (
            "sm_90a",
            "sm_90: sm_90 devices load sm_90a code (arch-specific: sm_90 devices only)",
        ),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    same("prune --keep sm_90: kept, and why", kept, want.to_vec())?;
    same(
        "cuobjdump -lelf of what prune --keep sm_90 kept",
        cuobjdump_list(d, "kept.fatbin")?.get("cubin").cloned(),
        Some(vec!["sm_90".to_string(), "sm_90a".to_string()]),
    )?;
    run(
        &ours(),
        &[
            "prune",
            "--drop",
            "sm_90a",
            "-o",
            "dropped.fatbin",
            "all.fatbin",
        ],
        d,
    )
    .ok()?;
    let left = cuobjdump_list(d, "dropped.fatbin")?;
    let want: Vec<String> = archs
        .iter()
        .filter(|a| **a != "sm_90a")
        .map(|a| a.trim_end_matches('f').to_string())
        .collect();
    same(
        "cuobjdump -lelf after prune --drop sm_90a",
        left.get("cubin"),
        Some(&want),
    )
}
