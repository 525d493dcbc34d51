//! The sixth round of hostile inputs (issue #71), members of one path: a
//! tar-based package (a `.deb`'s `data.tar`, a conda `.tar.bz2`) whose
//! archive gives one path to two files is damaged, as a zip whose central
//! directory gives one name twice is. Unpacked, only the later file is
//! left, so pruning or checking each member is not pruning or checking
//! what gets installed. `prune` refuses the package (exit 2, the path
//! named, nothing written) and `check` says the same (exit 2). A
//! directory given twice is no such fault.

use std::ffi::OsStr;

use sha2::{Digest as _, Sha256};

use super::round5_paths::hip_bundle;
use super::*;
use crate::util::run;

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(a_deb_whose_data_tar_gives_one_path_twice_is_refused, &["tar", "xz", "ar"]),
        trial!(a_conda_tar_bz2_giving_one_path_twice_is_refused, &["tar", "bzip2"]),
        trial!(a_conda_whose_info_tar_gives_one_path_twice_is_refused, &["tar", "zstd", "zip"]),
    ]
}

/// Runs `tool` (in /usr/bin) with `args` in `d`; fails unless it exits 0.
fn tool(d: &Path, tool: &str, args: &[&str]) -> Result<(), Failed> {
    run(Path::new(&format!("/usr/bin/{tool}")), args, d).ok()?;
    Ok(())
}

/// `prune --keep gfx90a` of `file` into the empty directory `out`, then
/// `check --require gfx90a`: with `twice` (the path `path` given to two
/// files) both exit 2 naming the path and nothing is written; else prune
/// exits 0 and writes the package.
fn verdicts(d: &Path, file: &str, path: &str, twice: bool) -> Result<(), Failed> {
    let _ = std::fs::remove_dir_all(d.join("out"));
    std::fs::create_dir(d.join("out"))?;
    let r = run_within(LIMIT, &ours(), &["prune", "--keep", "gfx90a", "-d", "out", file], d)?;
    let out = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    let named = format!("two members named '{path}'");
    let written = std::fs::read_dir(d.join("out"))?.next().is_some();
    if !twice {
        if r.code != 0 || !written {
            return Err(format!("{file}: a package of distinct paths: exit {}:\n{out}", r.code).into());
        }
        return Ok(());
    }
    if r.code != 2 || !out.contains(&named) || written {
        let w = if written { "; it wrote an output" } else { "" };
        return Err(format!("{file}: prune: want exit 2 naming '{path}'; exit {}{w}:\n{out}", r.code).into());
    }
    let r = run_within(LIMIT, &ours(), &["check", "--require", "gfx90a", file], d)?;
    let out = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if r.code != 2 || !out.contains(&named) {
        return Err(format!("{file}: check: want exit 2 naming '{path}'; exit {}:\n{out}", r.code).into());
    }
    Ok(())
}

/// A `.deb` put together with `ar` (dpkg-deb builds from a tree, which
/// cannot hold one path twice): its `data.tar.xz` holds a HIP bundle at
/// `./usr/lib/k.hipfb`, then (appended by GNU tar) another at that path.
/// The same package with the directory `./usr/lib/` appended instead is
/// pruned.
fn a_deb_whose_data_tar_gives_one_path_twice_is_refused() -> Result<(), Failed> {
    for twice in [false, true] {
        let t = tempdir();
        let d = t.path();
        std::fs::create_dir_all(d.join("c"))?;
        std::fs::create_dir_all(d.join("d/usr/lib"))?;
        hip_bundle(d, OsStr::new("d/usr/lib/k.hipfb"), 4096)?;
        std::fs::write(d.join("debian-binary"), "2.0\n")?;
        std::fs::write(
            d.join("c/control"),
            "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
             Description: a HIP bundle\n",
        )?;
        tool(d, "tar", &["-C", "c", "-cJf", "control.tar.xz", "./control"])?;
        let files = ["./usr/", "./usr/lib/", "./usr/lib/k.hipfb"];
        let mut args = vec!["-C", "d", "--no-recursion", "-cf", "data.tar"];
        args.extend(files);
        tool(d, "tar", &args)?;
        hip_bundle(d, OsStr::new("d/usr/lib/k.hipfb"), 2048)?;
        let again = if twice { "./usr/lib/k.hipfb" } else { "./usr/lib/" };
        tool(d, "tar", &["-C", "d", "--no-recursion", "-rf", "data.tar", again])?;
        tool(d, "xz", &["data.tar"])?;
        tool(d, "ar", &["rc", "in.deb", "debian-binary", "control.tar.xz", "data.tar.xz"])?;
        verdicts(d, "in.deb", "usr/lib/k.hipfb", twice)?;
    }
    Ok(())
}

/// A conda `.tar.bz2` (`info/index.json`, `info/files`,
/// `info/paths.json`, a HIP bundle at `lib/k.hipfb`) to which GNU tar
/// appends the bundle again as `./lib/k.hipfb`: the same path once its
/// `./` is left out, and the same bytes, so each agrees with its row.
/// Without it, the package is pruned.
fn a_conda_tar_bz2_giving_one_path_twice_is_refused() -> Result<(), Failed> {
    for twice in [false, true] {
        let t = tempdir();
        let d = t.path();
        let files = staged(d, true)?;
        let mut args = vec!["-C", "k", "--no-recursion", "-cf", "k-1-0.tar"];
        args.extend(files);
        tool(d, "tar", &args)?;
        if twice {
            tool(d, "tar", &["-C", "k", "-rf", "k-1-0.tar", "./lib/k.hipfb"])?;
        }
        tool(d, "bzip2", &["k-1-0.tar"])?;
        verdicts(d, "k-1-0.tar.bz2", "lib/k.hipfb", twice)?;
    }
    Ok(())
}

/// A `.conda` of the same files (no device code in its payload) whose
/// info tar is given `info/files` again by GNU tar: prune reads that tar
/// to its end (it stopped once it had the three files it needs, and
/// copied the package) and refuses the package, as `check` does.
fn a_conda_whose_info_tar_gives_one_path_twice_is_refused() -> Result<(), Failed> {
    for twice in [false, true] {
        let t = tempdir();
        let d = t.path();
        // No device code in it: the refusal cannot come from the payload.
        staged(d, false)?;
        let info = ["info/index.json", "info/files", "info/paths.json"];
        let mut args = vec!["-C", "k", "--no-recursion", "-cf", "info-k-1-0.tar"];
        args.extend(info);
        tool(d, "tar", &args)?;
        if twice {
            tool(d, "tar", &["-C", "k", "-rf", "info-k-1-0.tar", "./info/files"])?;
        }
        tool(d, "tar", &["-C", "k", "--no-recursion", "-cf", "pkg-k-1-0.tar", "lib/k.hipfb"])?;
        for t in ["info-k-1-0.tar", "pkg-k-1-0.tar"] {
            tool(d, "zstd", &["-q", "--rm", t])?;
        }
        std::fs::write(d.join("metadata.json"), r#"{"conda_pkg_format_version": 2}"#)?;
        let members = ["metadata.json", "pkg-k-1-0.tar.zst", "info-k-1-0.tar.zst"];
        let mut args = vec!["-q", "-0", "k-1-0.conda"];
        args.extend(members);
        tool(d, "zip", &args)?;
        verdicts(d, "k-1-0.conda", "info/files", twice)?;
    }
    Ok(())
}

/// Stages a conda package's files under `d/k` (`info/index.json`,
/// `info/files`, `info/paths.json`, at `lib/k.hipfb` a HIP bundle if
/// `bundle`, else text; its row true) and returns their paths there.
fn staged(d: &Path, bundle: bool) -> Result<[&'static str; 4], Failed> {
    std::fs::create_dir_all(d.join("k/info"))?;
    std::fs::create_dir_all(d.join("k/lib"))?;
    std::fs::write(d.join("k/info/index.json"), r#"{"name": "k", "version": "1"}"#)?;
    std::fs::write(d.join("k/info/files"), "lib/k.hipfb\n")?;
    match bundle {
        true => hip_bundle(d, OsStr::new("k/lib/k.hipfb"), 4096)?,
        false => std::fs::write(d.join("k/lib/k.hipfb"), "no device code")?,
    }
    let k = std::fs::read(d.join("k/lib/k.hipfb"))?;
    let sha: String = Sha256::digest(&k).iter().map(|b| format!("{b:02x}")).collect();
    let paths = serde_json::json!({"paths": [{"_path": "lib/k.hipfb", "path_type": "hardlink",
        "sha256": sha, "size_in_bytes": k.len()}], "paths_version": 1});
    std::fs::write(d.join("k/info/paths.json"), serde_json::to_string_pretty(&paths)?)?;
    Ok(["info/index.json", "info/files", "info/paths.json", "lib/k.hipfb"])
}
