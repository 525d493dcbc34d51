//! The sixth round (issue #71): no unread package passes as empty. Every
//! format of `offload_kit::scan::UNREAD_FORMATS` (an RPM, a squashfs, a
//! SIF, a `.tar.lz4`, …) holding device code read as 0 images: `check
//! --forbid` passed and prune said "nothing to remove". Each is written
//! here — a real one where a tool here makes it (lz4, frame and legacy,
//! of a tar holding a HIP bundle), else its magic at its place before
//! bytes that look compressed — alone, in a directory, and as a member of
//! a tar and of a zip; no command may read it as holding nothing.

use offload_kit::scan::{UNREAD_FORMATS, UnreadFormat};

use super::*;
use crate::util::{Run, run_within};

pub(super) fn tests() -> Vec<Trial> {
    let tools = &["tar", "zip", "lz4", "makeself"];
    vec![
        trial!(unread_formats_fail_every_scanner_named_and_in_packages, tools),
        trial!(unread_formats_are_refused_by_prune, tools),
        trial!(unread_formats_in_a_tree_are_named_never_empty, tools),
        trial!(
            an_iso_or_run_installer_in_a_deb_conda_or_layer_is_refused,
            &["dpkg-deb", "makeself", CPH, "/opt/offload-kit/conda-tools/bin/python"],
        ),
    ]
}

/// conda's package builder (scripts/conda-tools.sh).
const CPH: &str = "/opt/offload-kit/conda-tools/bin/cph";

/// An ISO 9660 image (its magic 32 KiB in, past the first 512 bytes prune
/// once read of a package's member) and a makeself `.run` installer
/// holding a HIP bundle, each the member of a `.deb` (built by
/// `dpkg-deb`), of conda packages (by `cph`, both formats) and of an OCI
/// image's layer: `prune` refuses the member by name, never "nothing to
/// remove", and `check` fails naming it (exit 2).
fn an_iso_or_run_installer_in_a_deb_conda_or_layer_is_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let iso = UNREAD_FORMATS
        .iter()
        .find(|f| f.magic == b"CD001")
        .ok_or("no ISO row")?;
    let lib = d.join("lib");
    std::fs::create_dir_all(&lib)?;
    super::round5_paths::hip_bundle(&lib, std::ffi::OsStr::new("k.hipfb"), 4096)?;
    let run_bytes = makeself(d, "lib")?;
    for (member, bytes, says) in [
        ("disc.iso", synthetic(iso), "ISO 9660"),
        ("cuda.run", run_bytes, "makeself"),
    ] {
        let what = |p: &str| format!("{member} in {p}");
        // A .deb.
        let pkg = d.join(format!("pkg-{member}"));
        std::fs::create_dir_all(pkg.join("DEBIAN"))?;
        std::fs::create_dir_all(pkg.join("usr/lib"))?;
        std::fs::write(pkg.join("usr/lib").join(member), &bytes)?;
        std::fs::write(
            pkg.join("DEBIAN/control"),
            "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
             Description: an unread member\n",
        )?;
        let deb = format!("{member}.deb");
        let args = ["-Zgzip", "--root-owner-group", "--build", pkg.to_str().ok_or("path")?, &deb];
        crate::util::run(Path::new("/usr/bin/dpkg-deb"), &args, d).ok()?;
        // Conda packages of one file (both formats, in `conda-MEMBER/in`).
        let conda = d.join(format!("conda-{member}"));
        std::fs::create_dir_all(&conda)?;
        let files = std::collections::BTreeMap::from([(format!("lib/{member}"), bytes.clone())]);
        crate::prune::conda::packages(&conda, &files, &[])?;
        // An OCI layout of one layer.
        let layer = crate::images::gzip_tar(&[(&format!("usr/lib/{member}"), &bytes)])?.0;
        let layout = d.join(format!("layout-{member}"));
        crate::images::layout(&layout, &[layer])?;
        let inputs = [
            deb,
            format!("conda-{member}/in/gpulib-1.0-h0_0.conda"),
            format!("conda-{member}/in/gpulib-1.0-h0_0.tar.bz2"),
            format!("layout-{member}"),
        ];
        for input in &inputs {
            let r = ours_in(d, &["prune", "--keep", "sm_80", "-o", "pruned.out", input])?;
            let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
            if r.code == 0 || all.contains("nothing to remove") {
                return Err(format!("{}: prune exit {}:\n{all}", what(input), r.code).into());
            }
            if !all.contains(member) || !all.contains(says) {
                return Err(format!("{}: prune names no {member} ({says}):\n{all}", what(input)).into());
            }
            let _ = std::fs::remove_dir_all(d.join("pruned.out"));
            let _ = std::fs::remove_file(d.join("pruned.out"));
            let r = ours_in(d, &["check", "--forbid", "sm_50", input])?;
            if r.code != 2 || !r.stderr.contains(member) || !r.stderr.contains(says) {
                return Err(format!("{}: check exit {}: {}", what(input), r.code, r.stderr).into());
            }
        }
    }
    Ok(())
}

/// The file of the `i`th format: `u<i>`.
fn file(i: usize) -> String {
    format!("u{i}")
}

/// Writes, in `d`, each format's file (`u<i>`), and its tar (`u<i>.tar`)
/// and zip (`u<i>.zip`) each holding it as `u<i>`. A real LZ4 file (frame,
/// legacy) is `lz4` of a tar holding a HIP bundle; the others are their
/// magic at its offset, then pseudo-random bytes.
fn make(d: &Path) -> Result<(), Failed> {
    let lib = d.join("lib");
    std::fs::create_dir_all(&lib)?;
    super::round5_paths::hip_bundle(&lib, std::ffi::OsStr::new("k.hipfb"), 4096)?;
    run_within(LIMIT, Path::new("tar"), &["-cf", "payload.tar", "lib"], d)?.ok()?;
    for (i, f) in UNREAD_FORMATS.iter().enumerate() {
        let name = file(i);
        let real = match f.magic {
            [0x04, 0x22, 0x4d, 0x18] => Some(&["-q", "-c", "payload.tar"][..]),
            [0x02, 0x21, 0x4c, 0x18] => Some(&["-q", "-l", "-c", "payload.tar"][..]),
            _ => None,
        };
        let bytes = match real {
            Some(args) => {
                let r = run_within(LIMIT, Path::new("lz4"), args, d)?.ok()?;
                r.stdout
            }
            None if f.magic.starts_with(b"#!/bin/sh\n") => makeself(d, "lib")?,
            None => synthetic(f),
        };
        if !bytes[f.offset..].starts_with(f.magic) {
            return Err(format!("{}: made without its magic", f.name).into());
        }
        std::fs::write(d.join(&name), &bytes)?;
        let tar = format!("{name}.tar");
        let zip = format!("{name}.zip");
        run_within(LIMIT, Path::new("tar"), &["-cf", &tar, &name], d)?.ok()?;
        run_within(LIMIT, Path::new("zip"), &["-q", &zip, &name], d)?.ok()?;
    }
    Ok(())
}

/// A `.run` installer that makeself makes of the directory `dir` of `d`
/// (as NVIDIA's CUDA installers are made): its bytes.
fn makeself(d: &Path, dir: &str) -> Result<Vec<u8>, Failed> {
    let args = ["--quiet", "--nox11", "--gzip", dir, "made.run", "k", "true"];
    run_within(LIMIT, Path::new("makeself"), &args, d)?.ok()?;
    let bytes = std::fs::read(d.join("made.run"))?;
    std::fs::remove_file(d.join("made.run"))?;
    Ok(bytes)
}

/// The magic of `f` at its offset (zeros before it), then 16 KiB that
/// look compressed.
fn synthetic(f: &UnreadFormat) -> Vec<u8> {
    let mut b = vec![0u8; f.offset];
    b.extend_from_slice(f.magic);
    b.extend(crate::util::bytes(f.offset as u64 + 7, 16 << 10));
    b
}

/// The files, made once for the trials.
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(make))
}

/// Runs our binary in `d`.
fn ours_in(d: &Path, args: &[&str]) -> Result<Run, Failed> {
    run_within(LIMIT, &ours(), args, d)
}

/// The three ways each format is met: alone, in a tar, in a zip; with
/// the name its error must give.
fn inputs(i: usize) -> [(String, String); 3] {
    let n = file(i);
    [
        (n.clone(), n.clone()),
        (format!("{n}.tar"), format!("{n}.tar!/{n}")),
        (format!("{n}.zip"), format!("{n}.zip!/{n}")),
    ]
}

/// Whether `r` exited 2 with an error line naming `name` as a format
/// not read (`f`).
fn unread(what: &str, r: &Run, name: &str, f: &UnreadFormat) -> Result<(), Failed> {
    if r.code != 2 {
        return Err(format!(
            "{what}: exit {} (want 2)\nstdout: {}\nstderr: {}",
            r.code,
            String::from_utf8_lossy(&r.stdout),
            r.stderr
        )
        .into());
    }
    let says = format!("error: '{name}': it is {}, a format", f.name);
    if !r.stderr.lines().any(|l| l.contains(&says)) {
        return Err(format!("{what}: no line says {says:?}: {}", r.stderr).into());
    }
    if r.stderr.contains("panicked") {
        return Err(format!("{what}: panicked: {}", r.stderr).into());
    }
    Ok(())
}

/// Whether `r` (a `--json` run) exited 2, its document failing and
/// giving `name` the error of a format not read (`f`).
fn json_unread(what: &str, r: &Run, name: &str, f: &UnreadFormat) -> Result<(), Failed> {
    let doc: serde_json::Value =
        serde_json::from_slice(&r.stdout).map_err(|e| format!("{what}: {e}: {}", r.stderr))?;
    let file = doc["files"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|x| x["path"] == name);
    let error = file.and_then(|x| x["error"].as_str()).unwrap_or("");
    if r.code != 2 || doc["passed"] != false || !error.starts_with(&format!("it is {}", f.name)) {
        return Err(format!("{what}: exit {}, {doc}", r.code).into());
    }
    Ok(())
}

/// `check --forbid`, `size`, `inspect`, `extract` and `diff` of each
/// format, alone and in a tar and a zip: exit 2, the file named.
fn unread_formats_fail_every_scanner_named_and_in_packages() -> Result<(), Failed> {
    let d = fixture()?;
    for (i, f) in UNREAD_FORMATS.iter().enumerate() {
        for (input, name) in inputs(i) {
            let what = |cmd: &str| format!("{} ({input}): {cmd}", f.name);
            let r = ours_in(d, &["check", "--forbid", "gfx90a", "--forbid", "sm_50", &input])?;
            unread(&what("check"), &r, &name, f)?;
            let out = String::from_utf8_lossy(&r.stdout);
            if out.lines().any(|l| l.starts_with("ok")) {
                return Err(format!("{}: check says ok: {out}", what("check")).into());
            }
            let r = ours_in(d, &["check", "--json", "--forbid", "sm_50", &input])?;
            json_unread(&what("check --json"), &r, &name, f)?;
            unread(&what("size"), &ours_in(d, &["size", &input])?, &name, f)?;
            unread(&what("inspect"), &ours_in(d, &["inspect", &input])?, &name, f)?;
            let out = format!("x{i}");
            let r = ours_in(d, &["extract", "-o", &out, &input])?;
            unread(&what("extract"), &r, &name, f)?;
            let r = ours_in(d, &["diff", "payload.tar", &input])?;
            unread(&what("diff"), &r, &name, f)?;
        }
    }
    Ok(())
}

/// `prune --keep sm_80` of each format, alone and in a tar: refused
/// (exit 2) naming it, nothing written; in a zip (pruned as a wheel):
/// the member named as not pruned (exit 1); never "nothing to remove".
fn unread_formats_are_refused_by_prune() -> Result<(), Failed> {
    let d = fixture()?;
    for (i, f) in UNREAD_FORMATS.iter().enumerate() {
        for (input, name) in inputs(i) {
            let what = format!("{} ({input}): prune", f.name);
            let _ = std::fs::remove_file(d.join("out"));
            let r = ours_in(d, &["prune", "--keep", "sm_80", "-o", "out", &input])?;
            let stdout = String::from_utf8_lossy(&r.stdout);
            if stdout.contains("nothing to remove") {
                return Err(format!("{what}: says nothing to remove").into());
            }
            let says = format!("'{name}': it is {}, a format", f.name);
            if input.ends_with(".zip") {
                // A wheel is written with the member left as it was,
                // named (exit 1), as for any member refused.
                let not = format!("not pruned: {says}");
                if r.code != 1 || !stdout.contains(&not) {
                    let e = format!("{what}: exit {}, want 1 and {not:?}: {stdout}", r.code);
                    return Err(e.into());
                }
                continue;
            }
            if r.code != 2 {
                return Err(format!("{what}: exit {}: {stdout}{}", r.code, r.stderr).into());
            }
            if !r.stderr.contains(&format!("error: {says}")) {
                return Err(format!("{what}: want {says:?} in {:?}", r.stderr).into());
            }
            if d.join("out").exists() {
                return Err(format!("{what}: wrote out").into());
            }
        }
    }
    Ok(())
}

/// A directory holding every format (and a tar and zip of each):
/// `check` fails (exit 2) naming each file, and so does `size`; a dry
/// run of prune names each, counts them refused and none "without device
/// code".
fn unread_formats_in_a_tree_are_named_never_empty() -> Result<(), Failed> {
    let d = fixture()?;
    let t = tempdir();
    let all: Vec<(String, String)> = (0..UNREAD_FORMATS.len()).flat_map(inputs).collect();
    for (input, _) in &all {
        std::fs::copy(d.join(input), t.path().join(input))?;
    }
    let r = ours_in(t.path(), &["check", "--forbid", "sm_50", "."])?;
    for ((_, name), f) in all.iter().zip(UNREAD_FORMATS.iter().flat_map(|f| [f; 3])) {
        unread("check of the tree", &r, &format!("./{name}"), f)?;
    }
    let r = ours_in(t.path(), &["size", "."])?;
    for ((_, name), f) in all.iter().zip(UNREAD_FORMATS.iter().flat_map(|f| [f; 3])) {
        unread("size of the tree", &r, &format!("./{name}"), f)?;
    }
    let r = ours_in(t.path(), &["prune", "--keep", "sm_80", "--dry-run", "."])?;
    let out = String::from_utf8_lossy(&r.stdout);
    if r.code != 1 {
        return Err(format!("prune of the tree: exit {}: {out}{}", r.code, r.stderr).into());
    }
    for (input, _) in &all {
        if !out.contains(input.as_str()) && !r.stderr.contains(input.as_str()) {
            return Err(format!("prune of the tree does not name {input}: {out}").into());
        }
    }
    let total = out.lines().find(|l| l.starts_with("total:")).unwrap_or("");
    let want = format!("{} file(s) found in the directories, 0 without device code", all.len());
    let refused = format!("({} refused)", all.len());
    if !total.contains(&want) || !total.contains(&refused) {
        return Err(format!("prune of the tree: {total:?}, want {want:?} and {refused}\n{out}").into());
    }
    Ok(())
}
