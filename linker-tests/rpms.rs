//! RPM packages (issue #73): the libraries with device code that
//! packages.rs builds with clang-22 (HIP with a compressed bundle, OpenMP
//! for two GPUs) are packed by `rpmbuild -bb` with gzip, xz and zstd
//! payloads, and the scanners must find in each RPM what they find in the
//! cpio archive `rpm2cpio` takes out of it: the same images (counts and
//! bytes per target), the same extracted files; `check` fails a target the
//! RPM holds, a directory walk counts them. A damaged RPM is an input error
//! naming it (exit 2), never 0 images; `prune` refuses an RPM inside
//! another package by name (rpm_prune.rs prunes RPMs of their own).

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{ours, run, run_stdin, same, trial};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "rpmbuild", "rpm2cpio", "rpm"];

/// Each payload method: `_binary_payload`'s value, what the RPM's
/// `PAYLOADCOMPRESSOR` then says, and the RPM's name here.
pub const METHODS: &[(&str, &str, &str)] = &[
    ("w9.gzdio", "gzip", "gz.rpm"),
    ("w6.xzdio", "xz", "xz.rpm"),
    ("w19.zstdio", "zstd", "zst.rpm"),
];

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| trial(format!("scan::rpms::{name}"), TOOLS, f);
    vec![
        t("same_images_as_rpm2cpio", same_images),
        t("check_extract_and_walk", check_extract_walk),
        t("damaged_rpms_are_input_errors", damaged),
        t("prune_refuses_rpms_inside_packages_by_name", prune_refuses),
    ]
}

/// The spec of a package of `files` (in `src`), its payload written by
/// `payload`; nothing run on the files after install (no strip, no debug
/// package), no dependencies looked for.
pub fn spec(payload: &str, src: &Path, files: &[&str]) -> String {
    let copies: String = files
        .iter()
        .map(|f| format!("cp {}/{f} %{{buildroot}}/usr/lib64/\n", src.display()))
        .collect();
    let listed: String = files.iter().map(|f| format!("/usr/lib64/{f}\n")).collect();
    format!(
        "%define _binary_payload {payload}\n\
         %define debug_package %{{nil}}\n\
         %define __os_install_post %{{nil}}\n\
         %define _build_id_links none\n\
         Name: gpulib\nVersion: 1.0\nRelease: 1\nSummary: device code\nLicense: MIT\n\
         AutoReqProv: no\n\
         %description\nLibraries with device code.\n\
         %install\nmkdir -p %{{buildroot}}/usr/lib64\n{copies}\
         %files\n{listed}"
    )
}

/// Builds in `dir` the RPM of `spec_text` (as `tag.spec`, below
/// `top-TAG`), and moves it to `dir/name`.
pub fn rpmbuild(dir: &Path, spec_text: &str, tag: &str, name: &str) -> Result<(), Failed> {
    let top = dir.join(format!("top-{tag}"));
    let spec_path = dir.join(format!("{tag}.spec"));
    std::fs::write(&spec_path, spec_text)?;
    let topdir = format!("_topdir {}", top.display());
    let dbpath = format!("_dbpath {}", dir.join("rpmdb").display());
    let spec_arg = spec_path.to_string_lossy();
    let args = ["-bb", "--quiet", "--nodeps", "--define", &topdir, "--define", &dbpath, &spec_arg];
    run(Path::new("rpmbuild"), &args, dir).ok()?;
    std::fs::rename(only_rpm(&top.join("RPMS"))?, dir.join(name))?;
    Ok(())
}

/// The three files of the RPMs: the libraries and a text file.
const FILES: &[&str] = &["libhipk.so", "libompk.so", "README.txt"];

/// Builds, in `dir`, the loose libraries and an RPM of each method of
/// [`METHODS`], checking that its payload is compressed as asked.
fn build(dir: &Path) -> Result<(), Failed> {
    crate::packages::loose_files(dir)?;
    let src = dir.join("root/usr/lib");
    for (payload, method, name) in METHODS {
        rpmbuild(dir, &spec(payload, &src, FILES), method, name)?;
        let db = dir.join("rpmdb");
        let db = db.to_string_lossy();
        let args = ["-qp", "--dbpath", &db, "--qf", "%{PAYLOADCOMPRESSOR}", name];
        let r = run(Path::new("rpm"), &args, dir).ok()?;
        let said = String::from_utf8_lossy(&r.stdout).into_owned();
        same(&format!("{name}: payload method"), said, method.to_string())?;
    }
    Ok(())
}

/// The one `.rpm` below `dir` (rpmbuild puts it in a folder of its CPU).
fn only_rpm(dir: &Path) -> Result<PathBuf, Failed> {
    let mut found = Vec::new();
    for arch in std::fs::read_dir(dir)? {
        for f in std::fs::read_dir(arch?.path())? {
            found.push(f?.path());
        }
    }
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("rpmbuild made {found:?}").into()),
    }
}

/// The RPMs, built once for all trials.
pub fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(build))
}

/// The payload of the RPM `name`, as `rpm2cpio` gives it.
fn cpio_of(dir: &Path, name: &str) -> Result<Vec<u8>, Failed> {
    Ok(run(Path::new("rpm2cpio"), &[name], dir).ok()?.stdout)
}

/// `size --json` of `args` (with `stdin` when given): the total's counts
/// by target.
fn by_target(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Value, Failed> {
    let mut a = vec!["size", "--json"];
    a.extend(args);
    let r = match stdin {
        Some(data) => run_stdin(&ours(), &a, dir, data),
        None => run(&ours(), &a, dir),
    }
    .ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    Ok(doc["total"]["by_target"].clone())
}

/// Each RPM holds what its `rpm2cpio` payload holds, target by target
/// (images and bytes), and it is the libraries' images (HIP and OpenMP,
/// gfx90a and gfx1030); its members are named `x.rpm!/usr/lib64/…`.
fn same_images() -> Result<(), Failed> {
    let d = fixture()?;
    for (_, _, name) in METHODS {
        let rpm = by_target(d, &[name], None)?;
        let cpio = by_target(d, &["-"], Some(&cpio_of(d, name)?))?;
        same(&format!("{name}: size by target, as rpm2cpio's"), &rpm, &cpio)?;
        let keys: Vec<&String> = rpm.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        if keys.len() < 4 || !keys.iter().any(|k| k.contains("gfx90a")) {
            return Err(format!("{name}: targets {keys:?}").into());
        }
        let r = run(&ours(), &["inspect", "--json", name], d).ok()?;
        let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
        let mut paths: Vec<&str> = doc["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["path"].as_str())
            .collect();
        paths.sort_unstable();
        let want = [
            format!("{name}!/usr/lib64/libhipk.so"),
            format!("{name}!/usr/lib64/libompk.so"),
        ];
        same(&format!("{name}: members"), paths, want.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

/// `check --forbid gfx90a` fails each RPM (exit 1); `extract` writes from
/// it the files it writes from its `rpm2cpio` payload; a directory holding
/// the RPM counts what the RPM does.
fn check_extract_walk() -> Result<(), Failed> {
    let d = fixture()?;
    for (_, method, name) in METHODS {
        let r = run(&ours(), &["check", "--forbid", "gfx90a", name], d);
        same(&format!("{name}: check --forbid gfx90a exit ({})", r.stderr), r.code, 1)?;
        let r = run(&ours(), &["check", "--forbid", "gfx942", name], d);
        same(&format!("{name}: check --forbid gfx942 exit ({})", r.stderr), r.code, 0)?;
        let (from_rpm, from_cpio) = (format!("x-{method}-rpm"), format!("x-{method}-cpio"));
        run(&ours(), &["extract", name, "-o", &from_rpm], d).ok()?;
        let cpio = cpio_of(d, name)?;
        run_stdin(&ours(), &["extract", "-", "-o", &from_cpio], d, &cpio).ok()?;
        let got = crate::packages::extracted(&d.join(&from_rpm))?;
        if got.len() < 4 {
            return Err(format!("{name}: extract wrote {} files", got.len()).into());
        }
        let want = crate::packages::extracted(&d.join(&from_cpio))?;
        same(&format!("{name}: extracted files"), got, want)?;
        // `list` reads no package; it says what this one is, as it is said.
        let r = run(&ours(), &["list", name], d);
        let said = format!("'{name}': an RPM package;");
        if r.code != 2 || !r.stderr.contains(&said) {
            let why = format!("{name}: list exit {}, not saying {said}: {}", r.code, r.stderr);
            return Err(why.into());
        }
        let tree = d.join(format!("tree-{method}"));
        std::fs::create_dir_all(tree.join("sub"))?;
        std::fs::copy(d.join(name), tree.join("sub").join(name))?;
        let walked = by_target(d, &[&tree.to_string_lossy()], None)?;
        same(&format!("{name}: a walk's count"), walked, by_target(d, &[name], None)?)?;
    }
    Ok(())
}

/// Where the main header starts in an RPM: the second header magic.
pub fn main_header(rpm: &[u8]) -> Result<usize, Failed> {
    let magic = [0x8e, 0xad, 0xe8, 0x01];
    let mut at = rpm.windows(4).enumerate().filter(|(_, w)| *w == magic).map(|(i, _)| i);
    at.next();
    at.next().ok_or_else(|| "no main header".into())
}

/// An RPM cut short, with a bad header magic, a header size or entry count
/// that lies, or a payload byte changed: `size`, `inspect` and `check
/// --forbid` each fail it as an input error naming it (exit 2), never 0
/// images.
fn damaged() -> Result<(), Failed> {
    let d = fixture()?;
    for (_, method, name) in METHODS {
        let good = std::fs::read(d.join(name))?;
        let main = main_header(&good)?;
        let mut cases: Vec<(&str, Vec<u8>)> = vec![
            ("cut in its payload", good[..good.len() * 2 / 3].to_vec()),
            ("cut in its headers", good[..main + 40].to_vec()),
        ];
        let mut bad_magic = good.clone();
        bad_magic[main + 1] ^= 0xff;
        cases.push(("a bad header magic", bad_magic));
        let mut big_store = good.clone();
        big_store[main + 12..main + 16].copy_from_slice(&0x0fff_0000u32.to_be_bytes());
        cases.push(("a store size past the end", big_store));
        let mut many = good.clone();
        many[main + 8..main + 12].copy_from_slice(&0x8000u32.to_be_bytes());
        cases.push(("an entry count past the end", many));
        let mut flipped = good.clone();
        let mid = good.len() - (good.len() - main) / 3;
        flipped[mid] ^= 0x55;
        cases.push(("a payload byte changed", flipped));
        for (what, bytes) in cases {
            let file = format!("bad-{method}.rpm");
            std::fs::write(d.join(&file), &bytes)?;
            for cmd in [&["size", "--json"][..], &["inspect"], &["check", "--forbid", "gfx90a"]] {
                let args: Vec<&str> = cmd.iter().copied().chain([file.as_str()]).collect();
                let r = run(&ours(), &args, d);
                if r.code != 2 || !r.stderr.contains(&file) {
                    return Err(format!("{name} with {what}: {args:?} exit {}: {}", r.code, r.stderr).into());
                }
            }
        }
    }
    Ok(())
}

/// `prune` refuses an RPM inside a tar archive by name, exit 2 and
/// nothing written, whether the rules drop something of it or not:
/// never "nothing to remove". (An RPM of its own is pruned: rpm_prune.rs.)
fn prune_refuses() -> Result<(), Failed> {
    let d = fixture()?;
    run(Path::new("tar"), &["-cf", "in.tar", "gz.rpm"], d).ok()?;
    for keep in ["gfx1030", "gfx90a,gfx1030"] {
        let out = d.join("pruned.out");
        let r = run(&ours(), &["prune", "--keep", keep, "-o", &out.to_string_lossy(), "in.tar"], d);
        let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if r.code != 2 || all.contains("nothing to remove") || !all.contains("gz.rpm") {
            return Err(format!("prune in.tar --keep {keep}: exit {}:\n{all}", r.code).into());
        }
        if !all.contains("RPM package") || out.exists() {
            return Err(format!("prune in.tar --keep {keep}: not refused as an RPM:\n{all}").into());
        }
    }
    Ok(())
}
