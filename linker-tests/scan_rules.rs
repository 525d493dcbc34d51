//! The scanners on inputs made here, with no compiler (issue #26): how
//! directory walks treat symbolic and hard links, which rules `check`
//! refuses as naming nothing known, how `--require` counts coverage, and
//! our AMDGPU processor table against what LLVM 22's `llc` lists.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{files, llvm, ours, ours_json as json, run, same, tempdir};
use offload_kit::offload_binary::{self, ImageKind, ImageSpec, OffloadKind};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(walks_skip_links_and_scan_each_file_once, &[]),
        trial!(rules_naming_nothing_known_are_usage_errors, &[]),
        trial!(require_counts_coverage_as_loaders_do, &[]),
        trial!(reports_count_device_images_in_arch_order, &[]),
        trial!(amdgpu_processors_are_llc_s, &["llc"]),
    ]
}

/// An OffloadBinary (version 1) holding one image per `(offload kind,
/// triple, arch, image kind)`, each a few bytes naming itself.
pub(crate) fn offload_binary(images: &[(OffloadKind, &str, &str, ImageKind)]) -> Vec<u8> {
    let bodies: Vec<Vec<u8>> = images
        .iter()
        .map(|(_, t, a, _)| format!("device code for {t} {a}").into_bytes())
        .collect();
    let specs: Vec<ImageSpec> = images
        .iter()
        .zip(&bodies)
        .map(|(&(offload, triple, arch, kind), body)| ImageSpec {
            image_kind: kind,
            offload_kind: offload,
            strings: vec![
                (b"triple".to_vec(), triple.as_bytes().to_vec()),
                (b"arch".to_vec(), arch.as_bytes().to_vec()),
            ],
            size: body.len() as u64,
            ..ImageSpec::default()
        })
        .collect();
    let refs: Vec<&[u8]> = bodies.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    offload_binary::layout(&specs, offload_binary::Version::V1)
        .unwrap()
        .write_to(&mut out, &refs)
        .unwrap();
    out
}

/// An OffloadBinary with one HIP object for `arch` (an AMDGPU target ID).
fn hip(arch: &str) -> Vec<u8> {
    offload_binary(&[(
        OffloadKind::OFK_HIP,
        "amdgcn-amd-amdhsa",
        arch,
        ImageKind::IMG_Object,
    )])
}

/// The `path` of each file of an `inspect --json` or `size --json`
/// document.
fn paths(v: &Value) -> Vec<String> {
    v["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["path"].as_str().unwrap_or("?").to_string())
        .collect()
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A tree with a versioned symlink chain (`libfoo.so` → `libfoo.so.1` →
/// `libfoo.so.1.2`), a hard link to the same file, a link to a directory
/// outside the tree and a link back to the tree's root: each scanner reads
/// every file once, skips links unless `--follow`, walks a linked
/// directory once under `--follow`, and reads a link named on the command
/// line.
fn walks_skip_links_and_scan_each_file_once() -> Result<(), Failed> {
    use std::os::unix::fs::symlink;
    let d = tempdir();
    let dir = d.path();
    let lib = dir.join("lib");
    let outside = dir.join("outside");
    std::fs::create_dir_all(&lib)?;
    std::fs::create_dir_all(&outside)?;
    std::fs::write(lib.join("libfoo.so.1.2"), hip("gfx90a"))?;
    symlink("libfoo.so.1.2", lib.join("libfoo.so.1"))?;
    symlink("libfoo.so.1", lib.join("libfoo.so"))?;
    std::fs::hard_link(lib.join("libfoo.so.1.2"), lib.join("zz-hard.so"))?;
    std::fs::write(lib.join("other.so"), hip("gfx942"))?;
    std::fs::write(outside.join("ext.so"), hip("gfx1100"))?;
    symlink("../outside", lib.join("ext"))?;
    symlink(".", lib.join("loop"))?;
    symlink("missing", lib.join("dangling.so"))?;

    let plain = ["lib/libfoo.so.1.2", "lib/other.so"];
    let followed = ["lib/ext/ext.so", "lib/libfoo.so.1.2", "lib/other.so"];
    for (follow, want) in [(false, &plain[..]), (true, &followed[..])] {
        let mut extra: Vec<&str> = Vec::new();
        if follow {
            extra.push("--follow");
        }
        let with = |args: &[&str]| -> Vec<String> {
            args.iter()
                .chain(&extra)
                .chain(&["lib"])
                .map(|s| s.to_string())
                .collect()
        };
        let what = if follow { "--follow" } else { "default" };
        let args = with(&["inspect", "--json"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        same(
            &format!("inspect {what}"),
            paths(&json(&args, dir)?),
            owned(want),
        )?;
        let args = with(&["size", "--json"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let v = json(&args, dir)?;
        same(&format!("size {what}"), paths(&v), owned(want))?;
        same(
            &format!("size {what}: images in all"),
            v["total"]["total"]["images"].as_u64(),
            Some(want.len() as u64),
        )?;
        let args = with(&["check", "--json", "--forbid", "gfx803"]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        same(
            &format!("check {what}"),
            paths(&json(&args, dir)?),
            owned(want),
        )?;
        let out = dir.join(format!("out-{follow}"));
        let o = out.to_string_lossy().into_owned();
        let args = with(&["extract", "-o", &o]);
        let r = run(&ours(), &args, dir).ok()?;
        same(
            &format!("extract {what}: files written"),
            files(&out).len(),
            want.len(),
        )?;
        if !r.stderr.is_empty() {
            return Err(format!("extract {what}: {}", r.stderr).into());
        }
    }
    // A link named on the command line is read; so is a hard link named
    // beside its twin (named files are always read).
    let v = json(&["inspect", "--json", "lib/libfoo.so"], dir)?;
    same("named link", paths(&v), owned(&["lib/libfoo.so"]))?;
    same(
        "named link: images",
        v["files"][0]["images"].as_array().map(Vec::len),
        Some(1),
    )?;
    let v = json(
        &["inspect", "--json", "lib/libfoo.so.1.2", "lib/zz-hard.so"],
        dir,
    )?;
    same(
        "named twins",
        paths(&v),
        owned(&["lib/libfoo.so.1.2", "lib/zz-hard.so"]),
    )?;
    // A file named and then met again in a walk is scanned once.
    let v = json(&["inspect", "--json", "lib/zz-hard.so", "lib"], dir)?;
    same(
        "named, then walked",
        paths(&v),
        owned(&["lib/zz-hard.so", "lib/other.so"]),
    )?;
    Ok(())
}

/// A rule (or `extract` filter) naming no known arch or kind: exit 2 and
/// one line on standard error naming the option, the rule and the closest
/// known names; nothing on standard output. Known names and wildcards
/// still work.
fn rules_naming_nothing_known_are_usage_errors() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    std::fs::write(dir.join("f.ob"), hip("gfx90a:xnack+"))?;
    let cases: &[(&[&str], &str)] = &[
        (&["check", "--forbid", "sm90"], "--forbid 'sm90'"),
        (&["check", "--forbid", "sm_90:cubn"], "did you mean cubin?"),
        (&["check", "--forbid", "gfx90A"], "did you mean gfx90a?"),
        (&["check", "--require", "sm90"], "did you mean sm_90?"),
        (&["check", "--require", "gfx9999"], "--require 'gfx9999'"),
        (
            &["check", "--require", "gfx90a,gfx90A"],
            "did you mean gfx90a?",
        ),
        (
            &["check", "--require-arch", "GFX90A"],
            "did you mean gfx90a?",
        ),
        (&["check", "--forbid-kind", "cubn"], "did you mean cubin?"),
        (
            &["extract", "-o", "out", "--arch", "gfx90A"],
            "did you mean gfx90a?",
        ),
        (
            &["extract", "-o", "out", "--kind", "objekt"],
            "did you mean object?",
        ),
    ];
    for (args, says) in cases {
        let mut all = args.to_vec();
        all.push("f.ob");
        let r = run(&ours(), &all, dir);
        same(&format!("{args:?}: exit"), r.code, 2)?;
        if r.stderr.lines().count() != 1 || !r.stderr.contains(says) || !r.stdout.is_empty() {
            return Err(format!("{args:?}: stderr {:?}, stdout {:?}", r.stderr, r.stdout).into());
        }
    }
    if dir.join("out").exists() {
        return Err("extract wrote a directory for a bad --arch".into());
    }
    for args in [
        &["check", "--require", "gfx90a:xnack+", "--forbid", "*:ptx"][..],
        &[
            "check",
            "--require",
            "*:object",
            "--forbid",
            "gfx9-4-generic,sm_100f",
        ],
        &["check", "--forbid", "tahiti,x86_64,gfx940"],
    ] {
        let mut all = args.to_vec();
        all.push("f.ob");
        run(&ours(), &all, dir).ok()?;
    }
    Ok(())
}

/// `--require` is met when the images together serve every device
/// configuration the rule names, and the report says which images serve
/// it, or which configurations nothing serves.
fn require_counts_coverage_as_loaders_do() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    coverage_inputs(dir)?;
    for (args, code, says) in COVERAGE {
        let mut all = vec!["check"];
        all.extend_from_slice(args);
        let r = run(&ours(), &all, dir);
        let out = String::from_utf8_lossy(&r.stdout);
        if r.code != *code || !out.contains(says) {
            return Err(format!(
                "{args:?}: exit {}, want {code} and {says:?}:\n{out}{}",
                r.code, r.stderr
            )
            .into());
        }
        if out.contains("missing arch gfx90a (has: gfx90a") {
            return Err(format!("{args:?}: contradictory report:\n{out}").into());
        }
    }
    // JSON: what serves the rule, and what nothing serves.
    let v = json(&["check", "--json", "--require", "gfx90a", "plus.ob"], dir).or_else(|_| {
        // Exit 1 is a failed check, not a failed run: read it anyway.
        let r = run(
            &ours(),
            &["check", "--json", "--require", "gfx90a", "plus.ob"],
            dir,
        );
        serde_json::from_slice(&r.stdout).map_err(|e| Failed::from(e.to_string()))
    })?;
    let rule = &v["files"][0]["rules"][0];
    same(
        "json serving",
        rule["serving"].clone(),
        serde_json::json!(["gfx90a:xnack+"]),
    )?;
    same(
        "json unserved",
        rule["unserved"].clone(),
        serde_json::json!(["gfx90a:sramecc+:xnack-", "gfx90a:sramecc-:xnack-"]),
    )?;
    Ok(())
}

/// The binaries [`COVERAGE`] checks, written in `dir`: gfx90a with xnack
/// on and off, on only, a generic target, and CUDA cubins and PTX.
fn coverage_inputs(dir: &Path) -> Result<(), Failed> {
    let amd = |arch| {
        (
            OffloadKind::OFK_HIP,
            "amdgcn-amd-amdhsa",
            arch,
            ImageKind::IMG_Object,
        )
    };
    let cuda = |arch, kind| (OffloadKind::OFK_Cuda, "nvptx64-nvidia-cuda", arch, kind);
    std::fs::write(
        dir.join("both.ob"),
        offload_binary(&[amd("gfx90a:xnack+"), amd("gfx90a:xnack-")]),
    )?;
    std::fs::write(dir.join("plus.ob"), offload_binary(&[amd("gfx90a:xnack+")]))?;
    std::fs::write(
        dir.join("generic.ob"),
        offload_binary(&[amd("gfx9-4-generic")]),
    )?;
    std::fs::write(
        dir.join("cuda.ob"),
        offload_binary(&[
            cuda("sm_90", ImageKind::IMG_Cubin),
            cuda("sm_100a", ImageKind::IMG_Cubin),
            cuda("sm_103a", ImageKind::IMG_Cubin),
            cuda("sm_100f", ImageKind::IMG_PTX),
        ]),
    )?;
    Ok(())
}

/// `check`'s arguments, its exit code, and what its standard output says.
const COVERAGE: &[(&[&str], i32, &str)] = &[
    (
        &["--require", "gfx90a", "both.ob"],
        0,
        "(gfx90a: gfx90a:xnack+ gfx90a:xnack-)",
    ),
    (
        &["--require", "gfx90a", "plus.ob"],
        1,
        "missing arch gfx90a for gfx90a:sramecc+:xnack- gfx90a:sramecc-:xnack- \
         (the rest served by gfx90a:xnack+)",
    ),
    (&["--require", "gfx90a:xnack+", "plus.ob"], 0, "ok"),
    (
        &["--require", "gfx942,gfx950", "generic.ob"],
        0,
        "gfx942: gfx9-4-generic; gfx950: gfx9-4-generic",
    ),
    (
        &["--require", "gfx90a", "generic.ob"],
        1,
        "missing arch gfx90a",
    ),
    (
        &["--require", "sm_90a", "cuda.ob"],
        1,
        "missing arch sm_90a",
    ),
    (
        &["--require", "sm_100f:cubin", "cuda.ob"],
        0,
        "sm_100f:cubin: sm_100a:cubin sm_103a:cubin",
    ),
    (
        &["--require", "sm_103", "cuda.ob"],
        0,
        "sm_103: sm_100f:ptx sm_103a:cubin",
    ),
    // sm_100f PTX is for the sm_10x family only.
    (
        &["--require", "sm_120:ptx", "cuda.ob"],
        1,
        "missing sm_120:ptx",
    ),
    (
        &["--require", "sm_100:ptx", "cuda.ob"],
        0,
        "sm_100:ptx: sm_100f:ptx",
    ),
];

/// A binary bundle of `(entry ID, bytes)`, entries 8-aligned.
fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
    use offload_kit::bundle::{self, Format};
    let specs: Vec<(String, u64)> = entries
        .iter()
        .map(|(id, d)| (id.to_string(), d.len() as u64))
        .collect();
    let bytes: Vec<&[u8]> = entries.iter().map(|e| e.1).collect();
    let mut out = Vec::new();
    bundle::layout(Format::Binary, &specs, 8)
        .unwrap()
        .write_to(&mut out, &bytes)
        .unwrap();
    out
}

/// Reports count device images only (a bundle's host entry apart), give
/// `size` a row per arch and kind, in arch order, list the same files in
/// text and JSON, and `--raw` names an ELF file's format.
fn reports_count_device_images_in_arch_order() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    report_inputs(dir)?;
    bundle_reports(dir)?;
    // Cubins and PTX of one arch are separate rows.
    let r = run(&ours(), &["size", "d/c.ob"], dir).ok()?;
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    let rows: Vec<String> = out
        .lines()
        .filter(|l| l.contains("nvptx64"))
        .map(|l| l.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
        .collect();
    same(
        "size rows per arch and kind",
        rows,
        owned(&[
            "cuda nvptx64-nvidia-cuda sm_50 cubin",
            "cuda nvptx64-nvidia-cuda sm_90 cubin",
            "cuda nvptx64-nvidia-cuda sm_90 ptx",
            "cuda nvptx64-nvidia-cuda sm_100 cubin",
        ]),
    )?;
    // size DIR: the same files in text and JSON.
    let r = run(&ours(), &["size", "d"], dir).ok()?;
    let text: Vec<String> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter(|l| l.starts_with("d/"))
        .filter_map(|l| l.split(':').next())
        .map(str::to_string)
        .collect();
    let v = json(&["size", "--json", "d"], dir)?;
    same("size DIR: text vs JSON files", paths(&v), text.clone())?;
    same("size DIR: files", text, owned(&["d/b.hipfb", "d/c.ob"]))?;
    // --raw: an ELF file is named as such.
    let r = run(
        &ours(),
        &["inspect", "--raw", "--json", &ours().to_string_lossy()],
        dir,
    )
    .ok()?;
    let v: Value = serde_json::from_slice(&r.stdout)?;
    same(
        "--raw format",
        v["files"][0]["format"].as_str().map(str::to_string),
        Some("ELF64".to_string()),
    )?;
    Ok(())
}

/// The inputs of [`reports_count_device_images_in_arch_order`], written in `dir`: `d/b.hipfb`, a bundle of
/// 7 device images and the host entry; `d/c.ob`, CUDA cubins and PTX;
/// `d/none/empty.txt`, no device code.
fn report_inputs(dir: &Path) -> Result<(), Failed> {
    // 7 device images and the host entry.
    let archs = [
        "gfx1030",
        "gfx90a",
        "gfx803",
        "gfx900",
        "gfx942",
        "gfx1100",
        "gfx9-generic",
    ];
    let ids: Vec<String> = archs
        .iter()
        .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}"))
        .collect();
    let code = b"\x7fELF device code".to_vec();
    let mut entries: Vec<(&str, &[u8])> = vec![("host-x86_64-unknown-linux-gnu-", b"")];
    entries.extend(ids.iter().map(|i| (i.as_str(), &code[..])));
    std::fs::create_dir_all(dir.join("d/none"))?;
    std::fs::write(dir.join("d/b.hipfb"), bundle(&entries))?;
    std::fs::write(dir.join("d/none/empty.txt"), b"no device code here")?;
    let cuda = |arch, kind| (OffloadKind::OFK_Cuda, "nvptx64-nvidia-cuda", arch, kind);
    std::fs::write(
        dir.join("d/c.ob"),
        offload_binary(&[
            cuda("sm_90", ImageKind::IMG_PTX),
            cuda("sm_100", ImageKind::IMG_Cubin),
            cuda("sm_90", ImageKind::IMG_Cubin),
            cuda("sm_50", ImageKind::IMG_Cubin),
        ]),
    )?;
    Ok(())
}

/// `size` and `inspect` of the bundle: 7 images and the host entry apart,
/// `size`'s rows in arch order.
fn bundle_reports(dir: &Path) -> Result<(), Failed> {
    let r = run(&ours(), &["size", "d/b.hipfb"], dir).ok()?;
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    if !out.contains("in 7 image(s)") || !out.contains("1 bundle host entry") {
        return Err(format!("size counts the host entry as an image:\n{out}").into());
    }
    let rows: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|a| a.starts_with("gfx"))
        .collect();
    same(
        "size rows in arch order",
        rows,
        vec![
            "gfx803",
            "gfx9-generic",
            "gfx900",
            "gfx90a",
            "gfx942",
            "gfx1030",
            "gfx1100",
        ],
    )?;
    let r = run(&ours(), &["inspect", "d/b.hipfb"], dir).ok()?;
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    if !out.contains("1 container(s), 7 device image(s), 1 bundle host entry")
        || !out.contains("host entry (#0)")
    {
        return Err(format!("inspect's header or host entry:\n{out}").into());
    }
    Ok(())
}

/// Our table of AMDGCN processors (canonical names, aliases and generic
/// targets) is exactly what LLVM 22's `llc` offers for amdgcn, but for
/// llc's own `generic` and `generic-hsa`, which are no target IDs.
fn amdgpu_processors_are_llc_s() -> Result<(), Failed> {
    let r = run(
        &llvm("llc"),
        &["-march=amdgcn", "-mcpu=help"],
        Path::new("/"),
    );
    // llc prints the list on standard error or output, by version.
    let text = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    let mut theirs: Vec<String> = text
        .lines()
        .filter(|l| l.contains(" - Select the "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "generic" && *n != "generic-hsa")
        .map(str::to_string)
        .collect();
    theirs.sort();
    if theirs.len() < 50 {
        return Err(format!("llc listed {} processors:\n{text}", theirs.len()).into());
    }
    let mut ours: Vec<String> = offload_kit::targets::AMDGCN
        .iter()
        .map(|g| g.name.to_string())
        .collect();
    ours.sort();
    same("AMDGCN processors: ours vs llc", ours, theirs)?;
    Ok(())
}
