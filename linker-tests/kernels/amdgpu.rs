//! AMDGPU code objects built here by clang-22 (HIP for gfx90a, gfx942 and
//! gfx1100 with code object v4, v5 and the default, plain and compressed
//! bundles; OpenMP programs for gfx90a and gfx1100 and for the host CPU):
//! `inspect --kernels` gives each image's kernels with the figures
//! `llvm-readelf --notes` prints from its metadata, and the kernels and
//! exported symbols `llvm-nm` lists. Then `check --require-kernel` /
//! `--forbid-kernel`, damaged metadata, and mutated code objects.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{llvm, ours, ours_json, run, same, tempdir};

const TOOLS: &[&str] = &["clang", "llvm-readelf", "llvm-nm"];

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(hip_kernels_and_figures_match_readelf_and_nm, TOOLS),
        trial!(openmp_images_list_their_target_regions, TOOLS),
        trial!(check_require_and_forbid_kernel, TOOLS),
        trial!(rocrand_from_debian_matches_readelf_and_nm, &[
                "clang",
                "llvm-readelf",
                "llvm-nm",
                "bash",
                "/usr/bin/python3",
                "dpkg-deb",
            ]),
        trial!(damaged_metadata_is_an_error_and_mutations_never_panic, TOOLS),
    ]
}

/// The HIP objects and OpenMP programs, built once.
fn built() -> Result<&'static Path, Failed> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    crate::util::built_once(&DIR, build)
}

fn build() -> Result<PathBuf, String> {
    let dir = tempdir().keep();
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests");
    for (from, to) in [
        ("kernels/k.hip", "k.hip"),
        ("kernels/omp.c", "omp.c"),
        ("prune/hipdecl.h", "hipdecl.h"),
    ] {
        std::fs::copy(here.join(from), dir.join(to)).map_err(|e| format!("{from}: {e}"))?;
    }
    std::fs::create_dir_all(dir.join("lib")).map_err(|e| e.to_string())?;
    let _ = std::os::unix::fs::symlink(
        llvm("../lib/libomptarget.so.22.1"),
        dir.join("lib/libomptarget.so"),
    );
    let clang = llvm("clang");
    let hip = ["-x", "hip", "-nogpulib", "-nogpuinc", "-O2", "-c", "k.hip"];
    let builds: [&[&str]; 6] = [
        &["--offload-arch=gfx90a,gfx942,gfx1100", "-o", "k.o"],
        &[
            "--offload-arch=gfx90a",
            "-mcode-object-version=4",
            "-o",
            "k4.o",
        ],
        &[
            "--offload-arch=gfx90a,gfx1100",
            "-mcode-object-version=5",
            "-o",
            "k5.o",
        ],
        &[
            "--offload-arch=gfx90a,gfx942",
            "--offload-compress",
            "-o",
            "kz.o",
        ],
        &[
            "-fopenmp",
            "--offload-arch=gfx90a,gfx1100",
            "-nogpulib",
            "omp.c",
            "-o",
            "omp_gfx",
            "-Llib",
            "-Xoffload-linker",
            "--unresolved-symbols=ignore-all",
        ],
        &[
            "-fopenmp",
            "-fopenmp-targets=x86_64-unknown-linux-gnu",
            "omp.c",
            "-o",
            "omp_cpu",
            "-Llib",
        ],
    ];
    for (i, b) in builds.iter().enumerate() {
        let args: Vec<&str> = if i < 4 {
            hip.iter().chain(b.iter()).copied().collect()
        } else {
            ["-O2"].iter().chain(b.iter()).copied().collect()
        };
        let r = run(&clang, &args, &dir);
        if r.code != 0 {
            return Err(format!("clang {args:?}: {}", r.stderr));
        }
    }
    Ok(dir)
}

/// Each image's listing in `inspect --kernels --json FILE`, by image id.
fn listings(dir: &Path, file: &str) -> Result<BTreeMap<u64, Value>, Failed> {
    let doc = ours_json(&["inspect", "--kernels", "--json", file], dir)?;
    let ks = doc["files"][0]["kernels"]
        .as_array()
        .ok_or(format!("{file}: no kernels array"))?;
    Ok(ks
        .iter()
        .map(|k| (k["image"].as_u64().unwrap_or(u64::MAX), k.clone()))
        .collect())
}

/// The figures each kernel's metadata holds, as `llvm-readelf --notes`
/// prints them (YAML): kernel name → key (without its dot) → value.
pub(crate) fn readelf_kernels(
    dir: &Path,
    obj: &Path,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, Failed> {
    let r = run(&llvm("llvm-readelf"), &[Path::new("--notes"), obj], dir).ok()?;
    let text = String::from_utf8_lossy(&r.stdout).into_owned();
    let mut kernels = BTreeMap::new();
    let mut in_kernels = false;
    let mut cur: Option<BTreeMap<String, String>> = None;
    let mut flush = |cur: &mut Option<BTreeMap<String, String>>| {
        if let Some(k) = cur.take() {
            let name = k.get("name").cloned().unwrap_or_default();
            kernels.insert(name, k);
        }
    };
    for line in text.lines() {
        if line.starts_with("amdhsa.") {
            flush(&mut cur);
            in_kernels = line.starts_with("amdhsa.kernels:");
            continue;
        }
        if !in_kernels {
            continue;
        }
        // A kernel's own keys sit at column 4 (`  - .key:` opens one).
        let body = if let Some(b) = line.strip_prefix("  - ") {
            flush(&mut cur);
            cur = Some(BTreeMap::new());
            b
        } else if let Some(b) = line.strip_prefix("    ").filter(|b| !b.starts_with(' ')) {
            b
        } else {
            continue;
        };
        if let (Some(k), Some((key, value))) = (cur.as_mut(), body.split_once(':')) {
            let value = value.trim().trim_matches('\'').to_string();
            k.insert(key.trim_start_matches('.').to_string(), value);
        }
    }
    flush(&mut cur);
    Ok(kernels)
}

/// The kernels (`.kd` symbols, without it) and the other defined external
/// symbols (name → `function` or `variable`) `llvm-nm` lists.
pub(crate) fn nm_symbols(
    dir: &Path,
    obj: &Path,
) -> Result<(BTreeSet<String>, BTreeMap<String, String>), Failed> {
    let r = run(
        &llvm("llvm-nm"),
        &[Path::new("--defined-only"), Path::new("--extern-only"), obj],
        dir,
    )
    .ok()?;
    let mut kernels = BTreeSet::new();
    let mut other = BTreeMap::new();
    for line in String::from_utf8_lossy(&r.stdout).lines() {
        let mut f = line.split_whitespace();
        let (Some(_), Some(ty), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if let Some(k) = name.strip_suffix(".kd") {
            kernels.insert(k.to_string());
            continue;
        }
        let kind = match ty {
            "T" | "W" => "function",
            "B" | "D" | "R" | "V" | "G" | "S" => "variable",
            _ => continue,
        };
        other.insert(name.to_string(), kind.to_string());
    }
    for k in &kernels {
        other.remove(k);
    }
    Ok((kernels, other))
}

/// The image files `extract` writes from `file` into `out`, by image id
/// (`FILE.<id>.<bundle id>.o`).
fn extracted(dir: &Path, file: &str, out: &str) -> Result<BTreeMap<u64, PathBuf>, Failed> {
    run(&ours(), &["extract", file, "-o", out], dir).ok()?;
    let mut by_id = BTreeMap::new();
    for e in std::fs::read_dir(dir.join(out)).map_err(|e| e.to_string())? {
        let p = e.map_err(|e| e.to_string())?.path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let id = name
            .strip_prefix(&format!("{file}."))
            .and_then(|r| r.split('.').next())
            .and_then(|n| n.parse().ok())
            .ok_or(format!("unexpected extracted file {name}"))?;
        by_id.insert(id, p);
    }
    Ok(by_id)
}

/// The metadata keys `inspect --kernels` reports, as readelf names them.
pub(crate) const KEYS: &[&str] = &[
    "sgpr_count",
    "vgpr_count",
    "agpr_count",
    "sgpr_spill_count",
    "vgpr_spill_count",
    "group_segment_fixed_size",
    "private_segment_fixed_size",
    "kernarg_segment_size",
    "wavefront_size",
    "max_flat_workgroup_size",
    "uses_dynamic_stack",
];

/// Holds every image of `file` to readelf and nm; the number of kernels
/// compared.
fn compare_file(dir: &Path, file: &str, version: Option<&str>) -> Result<usize, Failed> {
    let ours = listings(dir, file)?;
    let objs = extracted(dir, file, &format!("{file}.x"))?;
    same(
        &format!("{file}: images listed"),
        ours.keys().collect::<Vec<_>>(),
        objs.keys().collect(),
    )?;
    let mut compared = 0;
    for (id, obj) in &objs {
        let l = &ours[id];
        same(
            &format!("{file} #{id}: format"),
            l["format"].as_str(),
            Some("amdgpu"),
        )?;
        if let Some(v) = version {
            same(
                &format!("{file} #{id}: version"),
                l["version"].as_str(),
                Some(v),
            )?;
        }
        let theirs = readelf_kernels(dir, obj)?;
        let (nm_kernels, nm_other) = nm_symbols(dir, obj)?;
        let names: BTreeSet<String> = l["kernels"]
            .as_array()
            .ok_or("no kernels")?
            .iter()
            .map(|k| k["name"].as_str().unwrap_or_default().to_string())
            .collect();
        same(
            &format!("{file} #{id}: kernels (metadata)"),
            &names,
            &theirs.keys().cloned().collect(),
        )?;
        same(
            &format!("{file} #{id}: kernels (.kd symbols)"),
            &names,
            &nm_kernels,
        )?;
        if names.len() < 5 && !file.starts_with("omp") {
            return Err(format!("{file} #{id}: only {} kernels", names.len()).into());
        }
        for k in l["kernels"].as_array().ok_or("no kernels")? {
            let name = k["name"].as_str().unwrap_or_default();
            let md = &theirs[name];
            for key in KEYS {
                let ours = match &k["resources"][key] {
                    Value::Null => None,
                    v => Some(v.to_string()),
                };
                same(
                    &format!("{file} #{id} {name}: .{key}"),
                    ours.as_deref(),
                    md.get(*key).map(String::as_str),
                )?;
            }
            compared += 1;
        }
        let other: BTreeMap<String, String> = l["symbols"]
            .as_array()
            .ok_or("no symbols")?
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap_or_default().to_string(),
                    s["kind"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        same(&format!("{file} #{id}: other symbols"), &other, &nm_other)?;
    }
    Ok(compared)
}

fn hip_kernels_and_figures_match_readelf_and_nm() -> Result<(), Failed> {
    let dir = built()?;
    let mut n = 0;
    for (file, version) in [
        ("k.o", None),
        ("k4.o", Some("v4")),
        ("k5.o", Some("v5")),
        ("kz.o", None),
    ] {
        n += compare_file(dir, file, version)?;
    }
    // 3 + 1 + 2 + 2 images of 5 kernels each.
    same("kernels compared", n, 40)?;
    // The compressed bundle's images lie in compressed data: read all the same.
    let doc = ours_json(&["inspect", "--kernels", "--json", "kz.o"], dir)?;
    let compressed = doc["files"][0]["containers"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["kind"] == "ccob"));
    same("kz.o holds a CCOB", compressed, true)?;
    // Demangled names on request, in the JSON and the table.
    let doc = ours_json(
        &["inspect", "--kernels", "--demangle", "--json", "k.o"],
        dir,
    )?;
    let demangled: BTreeSet<&str> = doc["files"][0]["kernels"][0]["kernels"]
        .as_array()
        .ok_or("no kernels")?
        .iter()
        .filter_map(|k| k["demangled"].as_str())
        .collect();
    same(
        "demangled",
        demangled,
        BTreeSet::from([
            "add(float*, float const*, int)",
            "reduce(float*, float const*)",
            "spill(float*, int)",
            "void scale<double>(double*, double)",
            "void scale<float>(float*, float)",
        ]),
    )?;
    let table = run(&ours(), &["inspect", "--kernels", "--demangle", "k.o"], dir).ok()?;
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    if !table.contains("kernel reduce(float*, float const*)  sgpr=") || !table.contains("lds=1024")
    {
        return Err(format!("table:\n{table}").into());
    }
    Ok(())
}

/// An image's format, kernel names and other symbols' names.
type Names = (String, Vec<String>, Vec<String>);

fn openmp_images_list_their_target_regions() -> Result<(), Failed> {
    let dir = built()?;
    compare_file(dir, "omp_gfx", None)?;
    let kernels = |file: &str| -> Result<Vec<Names>, Failed> {
        Ok(listings(dir, file)?
            .values()
            .map(|l| {
                let names = |key: &str| -> Vec<String> {
                    l[key]
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .map(|k| k["name"].as_str().unwrap_or_default().to_string())
                                .collect()
                        })
                        .unwrap_or_default()
                };
                (
                    l["format"].as_str().unwrap_or_default().to_string(),
                    names("kernels"),
                    names("symbols"),
                )
            })
            .collect())
    };
    let regions = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .map(|n| {
                n.rsplit_once("_").map_or(n.clone(), |(a, l)| {
                    format!("{}_{l}", a.rsplit('_').next().unwrap_or(a))
                })
            })
            .collect()
    };
    for (file, format, n) in [("omp_gfx", "amdgpu", 2), ("omp_cpu", "elf", 1)] {
        let ls = kernels(file)?;
        same(&format!("{file}: images"), ls.len(), n)?;
        for (f, ks, syms) in &ls {
            same(&format!("{file}: format"), f.as_str(), format)?;
            same(
                &format!("{file}: target regions"),
                regions(ks),
                vec!["count_l13".to_string(), "saxpy_l8".into()],
            )?;
            for g in ["dev_counter", "dev_table"] {
                if !syms.iter().any(|s| s == g) {
                    return Err(
                        format!("{file}: declare-target global {g} missing: {syms:?}").into(),
                    );
                }
            }
            if syms.iter().any(|s| s.starts_with(".offloading.entry.")) {
                return Err(format!("{file}: offload entries listed as symbols: {syms:?}").into());
            }
        }
    }
    Ok(())
}

/// A real library: Debian's librocrand (code object v4, seven targets,
/// xnack+ and xnack- for gfx90a), every image held to readelf and nm.
fn rocrand_from_debian_matches_readelf_and_nm() -> Result<(), Failed> {
    let deb = crate::real_libs::downloads()?.join(crate::real_libs::DEB);
    let t = tempdir();
    let d = t.path();
    run(
        Path::new("/usr/bin/dpkg-deb"),
        &["-x", &*deb.to_string_lossy(), "root"],
        d,
    )
    .ok()?;
    std::fs::copy(
        d.join("root/usr/lib/x86_64-linux-gnu/librocrand.so.1.1"),
        d.join("rocrand.so"),
    )
    .map_err(|e| e.to_string())?;
    let n = compare_file(d, "rocrand.so", Some("v4"))?;
    if n < 100 {
        return Err(format!("only {n} kernels compared").into());
    }
    Ok(())
}

/// `check` with kernel rules: exit code, and what the line says.
fn check(dir: &Path, args: &[&str]) -> (i32, String) {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let r = run(&ours(), &all, dir);
    (
        r.code,
        format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr),
    )
}

fn check_require_and_forbid_kernel() -> Result<(), Failed> {
    let dir = built()?;
    let expect = |args: &[&str], code: i32, says: &str| -> Result<(), Failed> {
        let (c, out) = check(dir, args);
        if c != code || !out.contains(says) {
            return Err(format!(
                "check {args:?}: exit {c} (want {code}), output lacks {says:?}:\n{out}"
            )
            .into());
        }
        Ok(())
    };
    // Mangled, demangled, and demangled without parameters.
    expect(
        &["k.o", "--require-kernel", "_Z6reducePfPKf@gfx942"],
        0,
        "found in image(s)",
    )?;
    expect(
        &["k.o", "--require-kernel", "reduce(float*, float const*)"],
        0,
        "ok   k.o",
    )?;
    expect(
        &["k.o", "--require-kernel", "scale<double>@gfx1100"],
        1,
        "not found",
    )?;
    expect(
        &["k.o", "--require-kernel", "void scale<double>@gfx1100"],
        0,
        "ok",
    )?;
    expect(
        &["k.o", "--require-kernel", "*scale<*>@gfx90a:xnack+"],
        0,
        "ok",
    )?;
    // No image for gfx1030: a required kernel is missing there.
    expect(
        &["k.o", "--require-kernel", "spill*@gfx1030"],
        1,
        "FAIL k.o: kernel spill*@gfx1030",
    )?;
    expect(
        &["k.o", "--forbid-kernel", "spill*@gfx942"],
        1,
        "forbidden kernel spill*@gfx942 present",
    )?;
    expect(&["k.o", "--forbid-kernel", "spill*@gfx1030"], 0, "ok")?;
    expect(
        &["k.o", "k4.o", "--require-kernel", "*@gfx942"],
        1,
        "FAIL k4.o",
    )?;
    expect(
        &["k.o", "k4.o", "--any", "--require-kernel", "*@gfx942"],
        0,
        "ok",
    )?;
    // Kernel rules along with the architecture rules.
    expect(
        &["k.o", "--require", "gfx90a", "--require-kernel", "add*"],
        0,
        "ok",
    )?;
    expect(
        &["k.o", "--require-kernel", "x@nonsense"],
        2,
        "--require-kernel 'x@nonsense'",
    )?;
    // Bitcode images (an OpenMP object before its device link): their
    // kernels cannot be listed, so nothing is ruled out.
    run(
        &llvm("clang"),
        &[
            "-fopenmp",
            "--offload-arch=gfx90a",
            "-nogpulib",
            "-c",
            "omp.c",
            "-o",
            "omp_gfx.o",
        ],
        dir,
    )
    .ok()?;
    expect(
        &["omp_gfx.o", "--forbid-kernel", "nothing*"],
        1,
        "could not be listed",
    )?;
    check_json(dir)
}

/// `check --json` with kernel rules.
fn check_json(dir: &Path) -> Result<(), Failed> {
    let (code, out) = check(
        dir,
        &[
            "k.o",
            "--json",
            "--require-kernel",
            "add*@gfx90a",
            "--forbid-kernel",
            "spill*",
        ],
    );
    same("json exit", code, 1)?;
    let doc: Value = serde_json::from_str(&out[..out.rfind('}').map_or(0, |e| e + 1)])
        .map_err(|e| e.to_string())?;
    same("json exit_code", doc["exit_code"].as_u64(), Some(1))?;
    let rules = doc["files"][0]["kernel_rules"]
        .as_array()
        .ok_or("no kernel_rules")?;
    same("json kernel rules", rules.len(), 2)?;
    same(
        "add found",
        rules[0]["found"][0]["name"].as_str(),
        Some("_Z3addPfPKfi"),
    )?;
    same("spill forbidden", rules[1]["passed"].as_bool(), Some(false))?;
    same(
        "spill found in 3 images",
        rules[1]["found"].as_array().map(Vec::len),
        Some(3),
    )?;
    Ok(())
}

/// Where the metadata note's descriptor size lies in an extracted code
/// object: found by its owner name.
fn note_descsz_at(obj: &[u8]) -> Option<usize> {
    let at = obj.windows(8).position(|w| w == b"AMDGPU\0\0")?;
    // namesz, descsz, type, then the name.
    at.checked_sub(8)
}

fn damaged_metadata_is_an_error_and_mutations_never_panic() -> Result<(), Failed> {
    let dir = built()?;
    let objs = extracted(dir, "k.o", "k.o.d")?;
    let obj = std::fs::read(&objs[&1]).map_err(|e| e.to_string())?;
    // A descriptor size past the note section: an error naming the
    // file and image, exit 2; with --allow-corrupt the listing is left out.
    let mut bad = obj.clone();
    let at = note_descsz_at(&bad).ok_or("no AMDGPU note")?;
    bad[at..at + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    std::fs::write(dir.join("bad.o"), &bad).map_err(|e| e.to_string())?;
    run(
        &ours(),
        &[
            "pack",
            "-o",
            "bad.bin",
            "--image",
            "file=bad.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip",
        ],
        dir,
    )
    .ok()?;
    let r = run(&ours(), &["inspect", "--kernels", "bad.bin"], dir);
    same("damaged note: exit", r.code, 2)?;
    if !r
        .stderr
        .contains("'bad.bin': image 0: cannot read its symbols")
    {
        return Err(format!("stderr: {}", r.stderr).into());
    }
    let r = run(
        &ours(),
        &["inspect", "--kernels", "--allow-corrupt", "bad.bin"],
        dir,
    );
    same("damaged note, --allow-corrupt: exit", r.code, 0)?;
    let (code, out) = check(dir, &["bad.bin", "--require-kernel", "*"]);
    if code != 2 || !out.contains("ERROR bad.bin: image 0: cannot read its symbols") {
        return Err(format!("check on damaged symbols: exit {code}:\n{out}").into());
    }
    // Mutations of every kind: no panic (a panic would fail the test),
    // and the same answer every time.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut errors = 0;
    for i in 0..2000 {
        let mut m = obj.clone();
        for _ in 0..1 + i % 8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x % m.len() as u64) as usize;
            m[at] = (x >> 32) as u8;
        }
        if i % 5 == 0 {
            m.truncate((x >> 40) as usize % m.len());
        }
        let a = offload_kit::kernels::read(&m);
        same(
            "mutation read twice",
            format!("{a:?}"),
            format!("{:?}", offload_kit::kernels::read(&m)),
        )?;
        errors += usize::from(a.is_err());
    }
    if errors == 0 {
        return Err("no mutation was an error".into());
    }
    Ok(())
}
