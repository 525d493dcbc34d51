//! No unread format passes as empty (issue #73), on files the formats'
//! own tools make around the libraries with device code that packages.rs
//! builds with clang-22 (HIP and OpenMP, gfx90a and gfx1030):
//! - a `.tar.lz4` (`lz4`) and a `.tar.lz` (`lzip`) of them, and each
//!   library compressed alone, are read: the same images, target by
//!   target, as the plain tar and the libraries; `check --forbid gfx90a`
//!   fails them (exit 1);
//! - a `.7z` (`7zz`) of them, which offload-kit does not read, is refused
//!   by name by every scanner (exit 2), makes a directory walk's gate fail
//!   naming it, and is refused by name by `prune`, which writes nothing.
//!   (squashfs images, once refused here too, are read: squashfs.rs.)

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{Run, ours, run_within, same, tempdir, trial};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "tar", "lz4", "lzip", "7zz"];

/// How long one tool or command may take.
const LIMIT: u64 = 120;

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| {
        trial(format!("scan::unread_formats::{name}"), TOOLS, f)
    };
    vec![
        t("lz4_and_lzip_read_as_the_plain_files", lz4_and_lzip_read),
        t("seven_zip_is_refused_by_name", refused_by_name),
        t("a_walk_with_an_unread_file_fails_the_gate", walk_fails),
        t("prune_refuses_7z_by_name", prune_refuses),
    ]
}

/// The compressed and packed files, made once: `lib.tar` (the two
/// libraries below `usr/lib`), `lib.tar.lz4`, `lib.tar.lz`,
/// `libhipk.so.lz4`, `libhipk.so.lz` and `lib.7z`.
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(build))
}

fn tool(d: &Path, prog: &str, args: &[&str]) -> Result<Run, Failed> {
    run_within(LIMIT, Path::new(prog), args, d)?.ok()
}

fn build(d: &Path) -> Result<(), Failed> {
    crate::packages::loose_files(d)?;
    let libs = ["usr/lib/libhipk.so", "usr/lib/libompk.so"];
    let mut tar_args = vec!["-cf", "../lib.tar"];
    tar_args.extend(libs);
    tool(&d.join("root"), "tar", &tar_args)?;
    std::fs::copy(d.join("root/usr/lib/libhipk.so"), d.join("libhipk.so"))?;
    for f in ["lib.tar", "libhipk.so"] {
        tool(d, "lz4", &["-q", "-f", f, &format!("{f}.lz4")])?;
        tool(d, "lzip", &["-q", "-k", "-f", f])?;
    }
    tool(d, "7zz", &["a", "-bd", "-bso0", "lib.7z", "root/usr/lib"])?;
    // Each made by its tool, as its format starts.
    for (f, magic) in [
        ("lib.tar.lz4", &[0x04, 0x22, 0x4d, 0x18][..]),
        ("lib.tar.lz", b"LZIP"),
        ("lib.7z", b"7z\xbc\xaf\x27\x1c"),
    ] {
        if !std::fs::read(d.join(f))?.starts_with(magic) {
            return Err(format!("{f}: not made as its format starts").into());
        }
    }
    Ok(())
}

/// Our binary with `args` in `d`, within [`LIMIT`].
fn ours_in(d: &Path, args: &[&str]) -> Result<Run, Failed> {
    run_within(LIMIT, &ours(), args, d)
}

/// `size --json` of `input`: the total's images and bytes by target.
fn by_target(d: &Path, input: &str) -> Result<Value, Failed> {
    let r = ours_in(d, &["size", "--json", input])?.ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    Ok(doc["total"]["by_target"].clone())
}

/// A `.tar.lz4` and a `.tar.lz` hold, target by target, what the plain
/// tar holds (both libraries' gfx90a and gfx1030 images); a library
/// compressed alone holds what the library does; `check --forbid gfx90a`
/// fails each, `--forbid gfx942` passes each; `extract` writes as many
/// files from the `.tar.lz4` as from the tar.
fn lz4_and_lzip_read() -> Result<(), Failed> {
    let d = fixture()?;
    let tar = by_target(d, "lib.tar")?;
    let keys: Vec<&String> = tar.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    if keys.len() < 4 || !keys.iter().any(|k| k.contains("gfx90a")) {
        return Err(format!("lib.tar: targets {keys:?}").into());
    }
    let lib = by_target(d, "libhipk.so")?;
    for (input, want) in [
        ("lib.tar.lz4", &tar),
        ("lib.tar.lz", &tar),
        ("libhipk.so.lz4", &lib),
        ("libhipk.so.lz", &lib),
    ] {
        same(&format!("{input}: size by target"), &by_target(d, input)?, want)?;
        let r = ours_in(d, &["check", "--forbid", "gfx90a", input])?;
        same(&format!("{input}: check --forbid gfx90a ({})", r.stderr), r.code, 1)?;
        let r = ours_in(d, &["check", "--forbid", "gfx942", input])?;
        same(&format!("{input}: check --forbid gfx942 ({})", r.stderr), r.code, 0)?;
    }
    for (input, out) in [("lib.tar", "x-tar"), ("lib.tar.lz4", "x-lz4"), ("lib.tar.lz", "x-lz")] {
        let _ = std::fs::remove_dir_all(d.join(out));
        ours_in(d, &["extract", input, "-o", out])?.ok()?;
    }
    let plain = crate::packages::extracted(&d.join("x-tar"))?;
    if plain.len() < 4 {
        return Err(format!("extract of lib.tar wrote {} files", plain.len()).into());
    }
    same("extract of lib.tar.lz4", &crate::packages::extracted(&d.join("x-lz4"))?, &plain)?;
    same("extract of lib.tar.lz", &crate::packages::extracted(&d.join("x-lz"))?, &plain)?;
    // What they decompress to counts against the budget as for the others.
    for input in ["lib.tar.lz4", "lib.tar.lz", "libhipk.so.lz4", "libhipk.so.lz"] {
        let r = ours_in(d, &["size", "--max-uncompressed", "1K", input])?;
        if r.code != 2 || !r.stderr.contains("--max-uncompressed") {
            return Err(format!("size --max-uncompressed 1K {input}: exit {}: {}", r.code, r.stderr).into());
        }
    }
    Ok(())
}

/// The unread files and what their error says they are.
const UNREAD: &[(&str, &str)] = &[("lib.7z", "a 7-Zip archive")];

/// Whether `r` exited 2 with an error naming `name` as `format`, not read.
fn unread(what: &str, r: &Run, name: &str, format: &str) -> Result<(), Failed> {
    let says = format!("'{name}': it is {format}, a format offload-kit does not read");
    if r.code != 2 || !r.stderr.contains(&says) || r.stderr.contains("panicked") {
        let out = String::from_utf8_lossy(&r.stdout);
        return Err(format!("{what}: exit {}, want 2 and {says:?}:\n{out}{}", r.code, r.stderr).into());
    }
    Ok(())
}

/// `check --forbid sm_50` (which nothing here holds: a gate that read
/// nothing would pass), `size`, `inspect` and `extract` of a `.7z`
/// holding the libraries: exit 2, the file and its
/// format named; `extract` writes nothing.
fn refused_by_name() -> Result<(), Failed> {
    let d = fixture()?;
    for (input, format) in UNREAD {
        let what = |cmd: &str| format!("{cmd} {input}");
        let r = ours_in(d, &["check", "--forbid", "sm_50", input])?;
        unread(&what("check --forbid sm_50"), &r, input, format)?;
        unread(&what("size"), &ours_in(d, &["size", input])?, input, format)?;
        unread(&what("inspect"), &ours_in(d, &["inspect", input])?, input, format)?;
        let out = format!("x-{input}");
        unread(&what("extract"), &ours_in(d, &["extract", input, "-o", &out])?, input, format)?;
        let written = std::fs::read_dir(d.join(&out)).map_or(0, Iterator::count);
        same(&format!("{}: files written", what("extract")), written, 0)?;
    }
    Ok(())
}

/// A directory holding a library and one unread file: `check --forbid
/// sm_50` of it fails (exit 2) naming the file, never "ok" for it; `size` of it
/// names the file too; the same directory without it passes.
fn walk_fails() -> Result<(), Failed> {
    let d = fixture()?;
    for (input, format) in UNREAD {
        let t = tempdir();
        std::fs::create_dir_all(t.path().join("tree/sub"))?;
        std::fs::copy(d.join("libhipk.so"), t.path().join("tree/libhipk.so"))?;
        let r = ours_in(t.path(), &["check", "--forbid", "sm_50", "tree"])?;
        same(&format!("tree without {input}: check ({})", r.stderr), r.code, 0)?;
        std::fs::copy(d.join(input), t.path().join("tree/sub").join(input))?;
        let name = format!("tree/sub/{input}");
        let r = ours_in(t.path(), &["check", "--forbid", "sm_50", "tree"])?;
        unread(&format!("check of a tree with {input}"), &r, &name, format)?;
        // The library beside it passes; the unread file never does, and
        // the check as a whole fails.
        let out = String::from_utf8_lossy(&r.stdout);
        let ok_unread = out.lines().any(|l| l.starts_with("ok") && l.contains(input));
        if ok_unread || !out.contains("check failed: 1 input error(s)") {
            return Err(format!("check of a tree with {input}: {out}").into());
        }
        unread(&format!("size of a tree with {input}"), &ours_in(t.path(), &["size", "tree"])?, &name, format)?;
    }
    Ok(())
}

/// `prune --keep gfx90a` of a `.7z`: alone with `-o`
/// refused (exit 2) naming it and its format, never "nothing to remove",
/// nothing written; in a tree (a dry run) named and counted refused
/// (exit 1), never "without device code".
fn prune_refuses() -> Result<(), Failed> {
    let d = fixture()?;
    for (input, format) in UNREAD {
        let t = tempdir();
        std::fs::copy(d.join(input), t.path().join(input))?;
        let r = ours_in(t.path(), &["prune", "--keep", "gfx90a", "-o", "out", input])?;
        let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        let says = format!("'{input}': it is {format}, a format");
        if r.code != 2 || all.contains("nothing to remove") || !r.stderr.contains(&says) {
            let e = format!("prune {input}: exit {}, want 2 and {says:?}:\n{all}", r.code);
            return Err(e.into());
        }
        if t.path().join("out").exists() {
            return Err(format!("prune {input}: wrote out").into());
        }
        std::fs::create_dir_all(t.path().join("tree"))?;
        std::fs::rename(t.path().join(input), t.path().join("tree").join(input))?;
        std::fs::copy(d.join("libhipk.so"), t.path().join("tree/libhipk.so"))?;
        let r = ours_in(t.path(), &["prune", "--keep", "gfx90a", "--dry-run", "tree"])?;
        let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        let total = all.lines().find(|l| l.starts_with("total:")).unwrap_or("");
        let counted = total.contains("0 without device code") && total.contains("(1 refused)");
        if r.code != 1 || !all.contains(&says[1..]) || !counted {
            let e = format!("prune of a tree with {input}: exit {}, {total:?}:\n{all}", r.code);
            return Err(e.into());
        }
    }
    Ok(())
}
