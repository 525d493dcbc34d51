//! `inspect --kernels` on cubins built here, held to `cuobjdump`.
//!
//! `cuda/kernels.ptx` (written by hand: static shared memory, a stack
//! array, a `.const` table and parameters, `.maxntid` with a call to a
//! device function, `.reqntid`, an entry that is not `.visible`, global
//! variables) is assembled by NVIDIA's `ptxas` for sm_75 to sm_120 (sm_90a
//! too), and once relocatable (`-c`) for sm_80; `cuda/texture.ptx`
//! (texture and surface references) relocatable for sm_80. `fatbinary`
//! puts them in a plain fatbin and in one with every entry LZ4-compressed,
//! and `offload-kit wrap --kind=cuda` the compressed one in an object.
//! In each of the three, every cubin's kernels are exactly the entries
//! `cuobjdump -symbols` lists, each with the figures `cuobjdump
//! -res-usage` prints for it; its other functions and variables are the
//! listing's symbols; its target is the `sm=` of `cuobjdump -elf`.
//!
//! A real cubin, cut and changed, is read by `kernels::read` without a
//! panic, and its damaged attribute records are errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{ours, ours_json, run, same, tempdir};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";

/// The cubins: (file stem, `ptxas` arguments, PTX source).
const CUBINS: &[(&str, &[&str], &str)] = &[
    ("k75", &["-arch=sm_75"], "kernels.ptx"),
    ("k80", &["-arch=sm_80"], "kernels.ptx"),
    ("k86", &["-arch=sm_86"], "kernels.ptx"),
    ("k90", &["-arch=sm_90"], "kernels.ptx"),
    ("k90a", &["-arch=sm_90a"], "kernels.ptx"),
    ("k100", &["-arch=sm_100"], "kernels.ptx"),
    ("k120", &["-arch=sm_120"], "kernels.ptx"),
    ("k80c", &["-arch=sm_80", "-c"], "kernels.ptx"),
    ("t80c", &["-arch=sm_80", "-c"], "texture.ptx"),
];

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(cubins_in_fatbins_and_objects_match_cuobjdump, &[PTXAS, FATBINARY, CUOBJDUMP]),
        trial!(damaged_cubins_are_errors_not_panics, &[PTXAS]),
    ]
}

fn src(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linker-tests/kernels/cuda")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Assembles `CUBINS` in `d`.
fn assemble(d: &Path) -> Result<(), Failed> {
    for (stem, args, ptx) in CUBINS {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend([src(ptx), "-o".into(), format!("{stem}.cubin")]);
        run(Path::new(PTXAS), &all, d).ok()?;
    }
    Ok(())
}

/// What `cuobjdump` says of one cubin.
#[derive(Debug, Default)]
pub(crate) struct Expected {
    /// `sm=` of `-elf`'s header line.
    pub(crate) target: String,
    /// Each function's figures from `-res-usage` (`REG` → `28`).
    figures: BTreeMap<String, BTreeMap<String, String>>,
    /// `-symbols`' entries.
    entries: BTreeSet<String>,
    /// Its other global or weak functions (defined).
    functions: BTreeSet<String>,
    /// Its global or weak objects (defined).
    variables: BTreeSet<String>,
}

fn cuobjdump(d: &Path, args: &[&str]) -> Result<String, Failed> {
    let r = run(Path::new(CUOBJDUMP), args, d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

pub(crate) fn expected(d: &Path, cubin: &str) -> Result<Expected, Failed> {
    let mut e = Expected::default();
    let mut function = None;
    for line in cuobjdump(d, &["-res-usage", cubin])?.lines() {
        if let Some(name) = line.strip_prefix(" Function ") {
            function = Some(name.trim_end_matches(':').to_string());
        } else if let (Some(f), true) = (&function, line.starts_with("  REG:")) {
            let figs = line
                .split_whitespace()
                .filter_map(|t| t.split_once(':'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            e.figures.insert(f.clone(), figs);
            function = None;
        }
    }
    // (`-elf` fails at the end on cubins with texture references, after
    // the header line and the symbol table.)
    let elf = run(Path::new(CUOBJDUMP), &["-elf", cubin], d).stdout;
    let elf = String::from_utf8_lossy(&elf);
    e.target = elf
        .split([',', ' '])
        .find_map(|t| t.strip_prefix("sm="))
        .map(|s| format!("sm_{s}"))
        .unwrap_or_default();
    // Undefined symbols (`Ndx` 0 in the symbol table): `-symbols` lists
    // the weak references to the driver's own, which the cubin does not
    // define.
    let undefined: BTreeSet<&str> = elf
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.len() >= 9 && c[0].starts_with("0x") && c[c.len() - 2] == "0")
        .filter_map(|c| c.last().copied())
        .collect();
    for line in cuobjdump(d, &["-symbols", cubin])?.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [kind, bind, _, entry, .., name] = cols[..] else {
            continue;
        };
        let exported = (bind == "GLOBAL" || bind == "WEAK") && !undefined.contains(name);
        let name = name.to_string();
        match kind {
            "FUNC" if entry == "ENTRY" => e.entries.insert(name),
            "FUNC" if exported => e.functions.insert(name),
            "OBJECT" | "CUDA_OBJECT" if exported => e.variables.insert(name),
            _ => false,
        };
    }
    Ok(e)
}

/// Our figures of one kernel under `cuobjdump`'s names; the texture,
/// surface and sampler counts only where we give them.
fn figures(resources: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let num = |k: &str| resources.get(k).map(|v| v.to_string());
    for (ours, theirs) in [
        ("registers", "REG"),
        ("shared", "SHARED"),
        ("local", "LOCAL"),
        ("texture", "TEXTURE"),
        ("surface", "SURFACE"),
        ("sampler", "SAMPLER"),
    ] {
        if let Some(v) = num(ours) {
            out.insert(theirs.to_string(), v);
        }
    }
    out.insert(
        "STACK".into(),
        num("stack").unwrap_or_else(|| "UNKNOWN".into()),
    );
    for c in resources["constant"].as_array().into_iter().flatten() {
        out.insert(format!("CONSTANT[{}]", c["bank"]), c["size"].to_string());
    }
    out
}

/// The names in a listing's `symbols` of kind `kind`.
fn names_of(listing: &Value, kind: &str) -> BTreeSet<String> {
    listing["symbols"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == kind)
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect()
}

/// Checks our listing of one cubin against `cuobjdump`'s.
pub(crate) fn check_listing(what: &str, listing: &Value, e: &Expected) -> Result<(), Failed> {
    same(
        &format!("{what}: format"),
        &listing["format"],
        &Value::from("cubin"),
    )?;
    same(
        &format!("{what}: target"),
        listing["target"].as_str().unwrap_or_default(),
        e.target.as_str(),
    )?;
    let kernels = listing["kernels"].as_array().cloned().unwrap_or_default();
    let names: BTreeSet<String> = kernels
        .iter()
        .filter_map(|k| k["name"].as_str().map(str::to_string))
        .collect();
    same(&format!("{what}: kernels"), &names, &e.entries)?;
    for k in &kernels {
        let name = k["name"].as_str().unwrap_or_default();
        let mut theirs = e.figures.get(name).cloned().unwrap_or_default();
        let ours = figures(&k["resources"]);
        // Texture, surface and sampler counts are left out where the
        // cubin holds references (which kernel uses which is not read).
        theirs.retain(|fig, _| {
            ours.contains_key(fig) || !["TEXTURE", "SURFACE", "SAMPLER"].contains(&fig.as_str())
        });
        same(&format!("{what}: {name}"), &ours, &theirs)?;
    }
    same(
        &format!("{what}: functions"),
        &names_of(listing, "function"),
        &e.functions,
    )?;
    same(
        &format!("{what}: variables"),
        &names_of(listing, "variable"),
        &e.variables,
    )
}

/// Our cubin listings of `file`, in the order of their images.
fn listings(d: &Path, file: &str) -> Result<Vec<Value>, Failed> {
    let doc = ours_json(&["inspect", "--kernels", "--json", file], d)?;
    let mut found: Vec<(u64, Value)> = doc["files"][0]["kernels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["format"] == "cubin")
        .map(|k| (k["image"].as_u64().unwrap_or(u64::MAX), k.clone()))
        .collect();
    found.sort_by_key(|(i, _)| *i);
    Ok(found.into_iter().map(|(_, l)| l).collect())
}

fn cubins_in_fatbins_and_objects_match_cuobjdump() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    assemble(d)?;
    let mut want = Vec::new();
    for (stem, _, _) in CUBINS {
        let e = expected(d, &format!("{stem}.cubin"))?;
        if e.entries.is_empty() || e.figures.is_empty() {
            return Err(format!("{stem}: cuobjdump listed nothing: {e:?}").into());
        }
        want.push(e);
    }
    if !want[0].figures["k_local"]["STACK"].starts_with('2') {
        return Err(format!("k_local has no stack: {:?}", want[0].figures).into());
    }
    for (fb, compress) in [("plain.fatbin", false), ("lz4.fatbin", true)] {
        let mut args = vec!["-64".to_string(), format!("--create={fb}")];
        if compress {
            args.extend(["--compress-all".into(), "--compress-mode=speed".into()]);
        } else {
            args.push("--compress=false".into());
        }
        for (stem, a, _) in CUBINS {
            let sm = a[0].trim_start_matches("-arch=sm_");
            args.push(format!("--image3=kind=elf,sm={sm},file={stem}.cubin"));
        }
        run(Path::new(FATBINARY), &args, d).ok()?;
    }
    run(
        &ours(),
        &["wrap", "--kind=cuda", "-o", "lz4.o", "lz4.fatbin"],
        d,
    )
    .ok()?;
    for file in ["plain.fatbin", "lz4.fatbin", "lz4.o"] {
        let got = listings(d, file)?;
        same(&format!("{file}: cubins read"), got.len(), CUBINS.len())?;
        for ((stem, _, _), (l, e)) in CUBINS.iter().zip(got.iter().zip(&want)) {
            check_listing(&format!("{file}: {stem}"), l, e)?;
        }
        let k80 = &got[1]["kernels"];
        let threads: Vec<&Value> = k80
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k["resources"].get("max_threads"))
            .collect();
        same(
            &format!("{file}: max_threads"),
            threads,
            vec![&Value::from(128); 2],
        )?;
    }
    Ok(())
}

/// The file range of each of `cubin`'s `.nv.info` sections, and of its
/// section header.
fn info_sections(cubin: &[u8]) -> Result<Vec<(std::ops::Range<usize>, usize)>, Failed> {
    use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
    let f = ElfFile64::<object::Endianness>::parse(cubin).map_err(|e| e.to_string())?;
    let endian = f.endian();
    let header = f.elf_header();
    let shoff = header.e_shoff(endian) as usize;
    let table = header.sections(endian, cubin).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (i, s) in table.iter().enumerate() {
        let name = table.section_name(endian, s).map_err(|e| e.to_string())?;
        if name.starts_with(b".nv.info") {
            let start = s.sh_offset(endian) as usize;
            out.push((start..start + s.sh_size(endian) as usize, shoff + i * 64));
        }
    }
    Ok(out)
}

/// The offsets of the records in `data` (format 4 holds a sized value).
fn record_offsets(data: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        out.push(at);
        at += 4;
        if data[at - 4] == 4 {
            at += usize::from(u16::from_le_bytes([data[at - 2], data[at - 1]]));
        }
    }
    out
}

fn damaged_cubins_are_errors_not_panics() -> Result<(), Failed> {
    use offload_kit::kernels::read;
    let t = tempdir();
    let d = t.path();
    run(
        Path::new(PTXAS),
        &["-arch=sm_80", &src("kernels.ptx"), "-o", "k.cubin"],
        d,
    )
    .ok()?;
    let cubin = std::fs::read(d.join("k.cubin"))?;
    if read(&cubin)?.map(|l| l.kernels.len()) != Some(6) {
        return Err("the cubin does not list its 6 kernels".into());
    }
    for n in (0..cubin.len()).step_by(7) {
        let _ = read(&cubin[..n]);
    }
    let sections = info_sections(&cubin)?;
    if sections.len() != 7 {
        return Err(format!("{} .nv.info sections", sections.len()).into());
    }
    let error = |what: &str, bytes: &[u8]| -> Result<(), Failed> {
        match read(bytes) {
            Err(_) => Ok(()),
            Ok(l) => Err(format!("{what}: read as {l:?}").into()),
        }
    };
    for (range, header) in &sections {
        for at in record_offsets(&cubin[range.clone()]) {
            let at = range.start + at;
            for format in [0u8, 5, 0xff] {
                let mut m = cubin.clone();
                m[at] = format;
                error(&format!("format {format} at {at:#x}"), &m)?;
            }
            if cubin[at] == 4 {
                let mut m = cubin.clone();
                m[at + 2..at + 4].copy_from_slice(&0xfff0u16.to_le_bytes());
                error(&format!("size 0xfff0 at {at:#x}"), &m)?;
            }
        }
        for at in range.clone() {
            for v in [0, 0xff, cubin[at] ^ 0x40] {
                let mut m = cubin.clone();
                m[at] = v;
                let _ = read(&m);
            }
        }
        // A section past the end of the file.
        let mut m = cubin.clone();
        m[header + 32..header + 40].copy_from_slice(&(1u64 << 40).to_le_bytes());
        error(&format!("{range:?} 2^40 bytes long"), &m)?;
    }
    Ok(())
}
