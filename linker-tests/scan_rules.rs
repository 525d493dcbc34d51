//! The scanners on inputs made here, with no compiler (issue #26): how
//! directory walks treat symbolic and hard links, which rules `check`
//! refuses as naming nothing known, how `--require` counts coverage, and
//! our AMDGPU processor table against what LLVM 22's `llc` lists.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{files, ours, run, same, tempdir, trial};
use offload_kit::offload_binary::{self, ImageKind, ImageSpec, OffloadKind};

pub fn tests() -> Vec<Trial> {
    vec![
        trial(
            "scan_rules::walks_skip_links_and_scan_each_file_once",
            &[],
            walks,
        ),
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
    offload_binary::layout_v1(&specs)
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

fn json(args: &[&str], cwd: &Path) -> Result<Value, Failed> {
    let r = run(&ours(), args, cwd).ok()?;
    serde_json::from_slice(&r.stdout).map_err(|e| format!("{args:?}: bad JSON: {e}").into())
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
fn walks() -> Result<(), Failed> {
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
