//! The fifth round of hostile inputs (issue #57), paths: names that are not
//! UTF-8 work in every command (opened by their bytes, shown with `\xNN`,
//! their bytes in `--json`); a file deeper than the system's longest path
//! is a problem line and exit 2, never silently left out; a file named
//! inside a directory also given is read once.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use super::*;
use crate::util::{run, run_within};

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(names_not_utf8_work_in_every_command, &[]),
        trial!(a_path_too_long_is_a_problem_in_every_command, &["/usr/bin/python3"]),
        trial!(a_file_named_inside_a_directory_given_is_read_once, &[]),
    ]
}

/// A bare HIP bundle (host, gfx90a and gfx942 entries of `len` bytes)
/// made by our `bundle` at `d/out`.
pub(super) fn hip_bundle(d: &Path, out: &OsStr, len: usize) -> Result<(), Failed> {
    std::fs::write(d.join("host"), b"host code")?;
    std::fs::write(d.join("a90"), crate::util::bytes(90, len))?;
    std::fs::write(d.join("a42"), crate::util::bytes(42, len))?;
    let args = [
        "bundle",
        "--type",
        "o",
        "-o",
        "made.hipfb",
        "host-x86_64-unknown-linux-gnu=host",
        "hipv4-amdgcn-amd-amdhsa--gfx90a=a90",
        "hipv4-amdgcn-amd-amdhsa--gfx942=a42",
    ];
    run_within(LIMIT, &ours(), &args, d)?.ok()?;
    std::fs::rename(d.join("made.hipfb"), d.join(out))?;
    Ok(())
}

/// `b` as an `OsString`, whatever its bytes.
fn os(b: &[u8]) -> OsString {
    OsStr::from_bytes(b).to_owned()
}

/// Runs our binary with `args` (strings, or bytes that are not UTF-8).
fn ours_os(d: &Path, args: &[&[u8]]) -> Result<crate::util::Run, Failed> {
    let args: Vec<OsString> = args.iter().map(|a| os(a)).collect();
    run_within(LIMIT, &ours(), &args, d)
}

/// Fails unless `r` exited `code` and said nothing of a file not found.
fn exited(what: &str, r: &crate::util::Run, code: i32) -> Result<(), Failed> {
    if r.code != code || r.stderr.contains("No such file") {
        return Err(format!("{what}: want exit {code}; exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// Files named `a\xff.hipfb` and `t\xfe/k\xfd.hipfb`: every command reads
/// them, shows them with `\xNN`, and writes outputs under names that are
/// not UTF-8 either; `--json` gives each name's bytes in hex.
fn names_not_utf8_work_in_every_command() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, &os(b"a\xff.hipfb"), 4096)?;
    std::fs::create_dir(d.join(os(b"t\xfe")))?;
    std::fs::copy(d.join(os(b"a\xff.hipfb")), d.join(os(b"t\xfe/k\xfd.hipfb")))?;
    let (file, dir): (&[u8], &[u8]) = (b"a\xff.hipfb", b"t\xfe");
    for args in [
        &[&b"inspect"[..], file][..],
        &[b"inspect", dir],
        &[b"size", dir],
        &[b"check", b"--require", b"gfx90a", file, dir],
        &[b"extract", b"-o", b"x\xfa", file, dir],
        &[b"diff", file, b"t\xfe/k\xfd.hipfb"],
        &[b"diff", dir, dir],
        &[b"prune", b"--dry-run", b"--keep", b"gfx90a", file, dir],
    ] {
        let r = ours_os(d, args)?;
        exited(&format!("{args:?}"), &r, 0)?;
    }
    let r = ours_os(d, &[b"inspect", dir])?;
    if !String::from_utf8_lossy(&r.stdout).contains("t\\xfe/k\\xfd.hipfb") {
        return Err(format!("inspect does not show t\\xfe/k\\xfd.hipfb: {:?}", r.stdout).into());
    }
    if std::fs::read_dir(d.join(os(b"x\xfa")))?.count() < 4 {
        return Err("extract wrote fewer than 4 images into x\\xfa".into());
    }
    json_names(d)?;
    prune_outputs(d)
}

/// `--json` of inspect, size, check, diff and prune: the name shown, and
/// its bytes in hex beside it.
fn json_names(d: &Path) -> Result<(), Failed> {
    let hex = "61ff2e6869706662"; // a\xff.hipfb
    let file: &[u8] = b"a\xff.hipfb";
    for (args, at) in [
        (&[&b"inspect"[..], b"--json", file][..], "/files/0"),
        (&[b"size", b"--json", file], "/files/0"),
        (
            &[b"check", b"--json", b"--require", b"gfx90a", file],
            "/files/0",
        ),
        (
            &[
                b"prune",
                b"--json",
                b"--dry-run",
                b"--keep",
                b"gfx90a",
                file,
            ],
            "/files/0",
        ),
    ] {
        let r = ours_os(d, args)?;
        let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
            .map_err(|e| format!("{args:?}: exit {}: bad JSON: {e}: {}", r.code, r.stderr))?;
        let f = doc.pointer(at).cloned().unwrap_or_default();
        if f["path"] != "a\\xff.hipfb" || f["path_bytes"] != hex {
            return Err(format!("{args:?}: {f}").into());
        }
    }
    let r = ours_os(d, &[b"diff", b"--json", b"--all", b"t\xfe", b"t\xfe"])?;
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("diff --json: bad JSON: {e}: {}", r.stderr))?;
    let f = &doc["files"][0];
    if doc["old_bytes"] != "74fe" || f["path_bytes"] != "6bfd2e6869706662" {
        return Err(format!("diff --json: {doc}").into());
    }
    // A name that is UTF-8 gets no bytes.
    std::fs::copy(d.join(os(file)), d.join("plain.hipfb"))?;
    let r = ours_os(d, &[b"inspect", b"--json", b"plain.hipfb"])?;
    if String::from_utf8_lossy(&r.stdout).contains("_bytes") {
        return Err("inspect --json of plain.hipfb names bytes".into());
    }
    Ok(())
}

/// prune -o, -d and --in-place, inputs and outputs named with bytes that
/// are not UTF-8.
fn prune_outputs(d: &Path) -> Result<(), Failed> {
    let before = std::fs::metadata(d.join(os(b"a\xff.hipfb")))?.len();
    let keep: [&[u8]; 3] = [b"prune", b"--keep", b"gfx90a"];
    let runs: [&[&[u8]]; 3] = [
        &[b"-o", b"p\xf9.hipfb", b"a\xff.hipfb"],
        &[b"-d", b"q\xf8", b"a\xff.hipfb"],
        &[b"--in-place", b"t\xfe"],
    ];
    for extra in runs {
        let args: Vec<&[u8]> = keep.iter().chain(extra).copied().collect();
        let r = ours_os(d, &args)?;
        exited(&format!("{args:?}"), &r, 0)?;
    }
    for out in [
        &b"p\xf9.hipfb"[..],
        b"q\xf8/a\xff.hipfb",
        b"t\xfe/k\xfd.hipfb",
    ] {
        let after = std::fs::metadata(d.join(os(out))).map_or(0, |m| m.len());
        if after == 0 || after >= before {
            return Err(format!("{out:?}: {after} bytes, {before} before").into());
        }
    }
    Ok(())
}

/// A tree whose one file lies deeper than PATH_MAX (4096 bytes): every
/// command that walks it says it cannot open the path, and exits 2.
fn a_path_too_long_is_a_problem_in_every_command() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir(d.join("deep"))?;
    hip_bundle(d, OsStr::new("deep/top.hipfb"), 256)?;
    // 24 directories of 200 bytes, made one below the other by a program
    // that walks down (no path it gives the system is long).
    let script = "import os\n\
        k = open('deep/top.hipfb', 'rb').read()\n\
        os.chdir('deep')\n\
        for i in range(24): os.mkdir('n' * 200); os.chdir('n' * 200)\n\
        open('k.hipfb', 'wb').write(k)\n";
    run(Path::new("/usr/bin/python3"), &["-c", script], d).ok()?;
    for args in [
        &["inspect", "deep"][..],
        &["size", "deep"],
        &["check", "--require", "gfx90a", "deep"],
        &["extract", "-o", "x", "deep"],
        &["diff", "deep", "deep"],
        &["prune", "--dry-run", "--keep", "gfx90a", "deep"],
    ] {
        let r = run_within(LIMIT, &ours(), args, d)?;
        if r.code != 2 || !r.stderr.contains("File name too long") {
            return Err(format!("{args:?}: exit {}: {}", r.code, r.stderr).into());
        }
    }
    Ok(())
}

/// `DIR DIR/k.hipfb`: the file is read once by every command (one row of
/// `--json`, one image set extracted, one file pruned).
fn a_file_named_inside_a_directory_given_is_read_once() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir(d.join("t"))?;
    hip_bundle(d, OsStr::new("t/k.hipfb"), 256)?;
    let count = |args: &[&str], at: &str| -> Result<usize, Failed> {
        let r = run_within(LIMIT, &ours(), args, d)?;
        let doc: serde_json::Value = serde_json::from_slice(&r.stdout)
            .map_err(|e| format!("{args:?}: bad JSON: {e}: {}", r.stderr))?;
        Ok(doc
            .pointer(at)
            .and_then(|v| v.as_array())
            .map_or(0, Vec::len))
    };
    for (args, at) in [
        (&["inspect", "--json", "t", "t/k.hipfb"][..], "/files"),
        (&["size", "--json", "t", "t/k.hipfb"], "/files"),
        (
            &["check", "--json", "--require", "gfx90a", "t", "t/k.hipfb"],
            "/files",
        ),
        (
            &[
                "prune",
                "--json",
                "--dry-run",
                "--keep",
                "gfx90a",
                "t",
                "t/k.hipfb",
            ],
            "/files",
        ),
    ] {
        let n = count(args, at)?;
        if n != 1 {
            return Err(format!("{args:?}: {n} files").into());
        }
    }
    let r = run_within(
        LIMIT,
        &ours(),
        &["prune", "--dry-run", "--keep", "gfx90a", "t", "t/k.hipfb"],
        d,
    )?;
    if !String::from_utf8_lossy(&r.stdout).contains("in 1 file(s)") {
        return Err(format!(
            "prune --dry-run counts k.hipfb twice: {}",
            String::from_utf8_lossy(&r.stdout)
        )
        .into());
    }
    run_within(LIMIT, &ours(), &["extract", "-o", "one", "t"], d)?.ok()?;
    run_within(
        LIMIT,
        &ours(),
        &["extract", "-o", "two", "t", "t/k.hipfb"],
        d,
    )?
    .ok()?;
    let n = |dir: &str| std::fs::read_dir(d.join(dir)).map_or(0, Iterator::count);
    if n("one") != n("two") {
        return Err(format!(
            "extract: {} files from t, {} from t t/k.hipfb",
            n("one"),
            n("two")
        )
        .into());
    }
    Ok(())
}
