//! `offload-kit prune` on conda packages (issue #60), both formats, made
//! with `cph create` at test time: NVIDIA's real libcurand pruned to
//! sm_80, and a synthetic ROCm prefix (a HIP bundle, two code objects,
//! per-GPU Tensile/MIOpen files) pruned to gfx90a. Each pruned package
//! is smaller, `cph extract` unpacks it, every `info/paths.json` row
//! matches its file, the files removed are gone from `paths.json` and
//! `info/files`, the library inside is the library pruned alone, byte for
//! byte, and py-rattler installs the package into a scratch prefix with
//! no channel. Hostile packages (rows that lie, no `paths.json`, a tar
//! cut short, a name climbing out, a placeholder that would move) exit 2
//! naming the file and the field, and nothing is written.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::src;
use crate::real_libs::{WHEEL, downloads};
use crate::util::{md5_hex, ours, run, same, tempdir, unzip};

/// The venv of scripts/conda-tools.sh.
const CPH: &str = "/opt/offload-kit/conda-tools/bin/cph";
const PY: &str = "/opt/offload-kit/conda-tools/bin/python";

/// The name `cph create` and py-rattler want (`NAME-VERSION-BUILD`).
const PKG: &str = "gpulib-1.0-h0_0";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(curand_conda_and_tar_bz2_to_sm_80, &[CPH, PY]),
        trial!(rocm_conda_and_tar_bz2_to_gfx90a, &["clang++", CPH, PY]),
        trial!(hostile_packages_exit_2_and_nothing_is_written, &[CPH, PY]),
        trial!(in_place_killed_leaves_the_old_package_or_the_new, &[CPH, PY]),
    ]
}

/// `conda_check.py` with `args`, in `d`: its standard output.
fn check_py(d: &Path, args: &[&str]) -> Result<String, Failed> {
    let mut all = vec![src("conda_check.py")];
    all.extend(args.iter().map(|a| a.to_string()));
    let r = run(Path::new(PY), &all, d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// Writes `files` below `d/prefix`, with conda's `info/` (the paths of
/// `placeholders` given that placeholder), and packs it with `cph create`
/// as `in.conda` and `in.tar.bz2` (below `d/in`, named [`PKG`]).
pub(crate) fn packages(
    d: &Path,
    files: &BTreeMap<String, Vec<u8>>,
    placeholders: &[&str],
) -> Result<(), Failed> {
    let prefix = d.join("prefix");
    for (p, b) in files {
        let path = prefix.join(p);
        std::fs::create_dir_all(path.parent().ok_or("no parent")?)?;
        std::fs::write(path, b)?;
    }
    let mut args = vec!["info", "prefix"];
    args.extend(placeholders);
    check_py(d, &args)?;
    std::fs::create_dir_all(d.join("in"))?;
    for ext in ["conda", "tar.bz2"] {
        let out = format!("{PKG}.{ext}");
        run(Path::new(CPH), &["create", "prefix", &out, "--out-folder", "in"], d).ok()?;
    }
    Ok(())
}

/// Prunes `in/PKG.EXT` (below `d`) with `keep`, the two formats each its
/// way (`-o` and `-d`), into `out/`; the JSON report of each.
fn prune_both(d: &Path, keep: &str) -> Result<Vec<serde_json::Value>, Failed> {
    std::fs::create_dir_all(d.join("out"))?;
    let conda = format!("{PKG}.conda");
    let bz2 = format!("{PKG}.tar.bz2");
    let mut docs = Vec::new();
    for args in [
        vec!["prune", "--json", "--keep", keep, "-o", &format!("out/{conda}"), &format!("in/{conda}")],
        vec!["prune", "--json", "--keep", keep, "-d", "out", &format!("in/{bz2}")],
    ] {
        let r = run(&ours(), &args, d).ok()?;
        docs.push(serde_json::from_slice(&r.stdout)?);
    }
    Ok(docs)
}

/// The checks on `out/PKG.EXT` against `in/PKG.EXT`: smaller, `cph
/// extract` unpacks it and every row matches its file, `gone` is in
/// neither record nor the package, each of `pruned` (path, bytes) is
/// those bytes, and py-rattler installs it.
fn checks(
    d: &Path,
    ext: &str,
    gone: &[&str],
    pruned: &BTreeMap<String, Vec<u8>>,
) -> Result<(), Failed> {
    let name = format!("{PKG}.{ext}");
    let (before, after) = (
        std::fs::metadata(d.join("in").join(&name))?.len(),
        std::fs::metadata(d.join("out").join(&name))?.len(),
    );
    if after >= before {
        return Err(format!("{name} did not shrink: {before} -> {after} bytes").into());
    }
    let x = format!("x-{ext}");
    run(Path::new(CPH), &["extract", &format!("out/{name}"), "--dest", &x], d).ok()?;
    let listed: serde_json::Value = serde_json::from_str(&check_py(d, &["check", &x])?)?;
    for g in gone {
        for field in ["paths", "files"] {
            if listed[field].as_array().into_iter().flatten().any(|p| p == g) {
                return Err(format!("{name}: {field} still lists {g}").into());
            }
        }
        if d.join(&x).join(g).exists() {
            return Err(format!("{name} still holds {g}").into());
        }
    }
    for (p, want) in pruned {
        let got = std::fs::read(d.join(&x).join(p))?;
        same(&format!("{name}!/{p} against it pruned alone"), got == *want, true)?;
    }
    let env = d.join(format!("env-{ext}"));
    let (env_s, cache) = (env.to_string_lossy(), d.join(format!("cache-{ext}")));
    check_py(d, &["install", &format!("out/{name}"), &env_s, &cache.to_string_lossy()])?;
    for (p, want) in pruned {
        let got = std::fs::read(env.join(p))?;
        same(&format!("{p} installed by py-rattler"), got == *want, true)?;
    }
    Ok(())
}

/// `file` (below `d`) pruned alone with `keep`, as `prune -o` writes it.
fn alone(d: &Path, file: &str, keep: &str) -> Result<Vec<u8>, Failed> {
    run(&ours(), &["prune", "--keep", keep, "-o", "alone.out", file], d).ok()?;
    Ok(std::fs::read(d.join("alone.out"))?)
}

/// NVIDIA's libcurand in a conda package, pruned to sm_80.
fn curand_conda_and_tar_bz2_to_sm_80() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let lib = "nvidia/curand/lib/libcurand.so.10";
    unzip(&downloads()?.join(WHEEL), lib, d, "lib.so")?;
    let files = BTreeMap::from([
        ("lib/libcurand.so.10".to_string(), std::fs::read(d.join("lib.so"))?),
        ("share/doc/curand.txt".to_string(), b"cuRAND\n".repeat(20)),
    ]);
    packages(d, &files, &[])?;
    let docs = prune_both(d, "sm_80")?;
    let pruned = BTreeMap::from([("lib/libcurand.so.10".to_string(), alone(d, "lib.so", "sm_80")?)]);
    for (doc, ext) in docs.iter().zip(["conda", "tar.bz2"]) {
        let c = &doc["files"][0]["conda"];
        same(&format!("{ext}: rows rewritten"), c["rows_rewritten"].as_u64(), Some(1))?;
        checks(d, ext, &[], &pruned)?;
    }
    Ok(())
}

/// A ROCm-style prefix: a HIP bundle of gfx90a and gfx942 images, the
/// per-GPU files and code objects of `companion`, pruned to gfx90a.
fn rocm_conda_and_tar_bz2_to_gfx90a() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let mut files = super::companion::build(d)?;
    super::tree::bundle(d, "k.hipfb", &[("gfx90a", 1, 4096), ("gfx942", 2, 8192)])?;
    files.insert("lib/libk.hipfb".into(), std::fs::read(d.join("k.hipfb"))?);
    // A placeholder before what moves stays where it was.
    let mut text = b"/opt/conda_build_placeholder_prefix/lib\n".to_vec();
    text.resize(200, b'\n');
    files.insert("etc/k.conf".into(), text);
    packages(d, &files, &["etc/k.conf=/opt/conda_build_placeholder_prefix"])?;
    let docs = prune_both(d, "gfx90a")?;
    let gone: Vec<String> = super::companion::gone().into_keys().collect();
    let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
    let pruned = BTreeMap::from([("lib/libk.hipfb".to_string(), alone(d, "k.hipfb", "gfx90a")?)]);
    for (doc, ext) in docs.iter().zip(["conda", "tar.bz2"]) {
        let c = &doc["files"][0]["conda"];
        same(&format!("{ext}: rows removed"), c["rows_removed"].as_u64(), Some(gone.len() as u64))?;
        same(&format!("{ext}: files lines removed"), c["files_lines_removed"].as_u64(), Some(gone.len() as u64))?;
        checks(d, ext, &gone, &pruned)?;
    }
    // In place: the same bytes as written elsewhere.
    for ext in ["conda", "tar.bz2"] {
        let name = format!("{PKG}.{ext}");
        run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", &format!("in/{name}")], d).ok()?;
        let (a, b) = (std::fs::read(d.join("in").join(&name))?, std::fs::read(d.join("out").join(&name))?);
        same(&format!("{name} in place against -o"), a == b, true)?;
    }
    Ok(())
}

/// Each hostile package: exit 2, the file and the field named, nothing
/// written.
fn hostile_packages_exit_2_and_nothing_is_written() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let base = |d: &Path| -> Result<(), Failed> {
        super::tree::bundle(d, "k.hipfb", &[("gfx942", 2, 8192), ("gfx90a", 1, 4096)])?;
        let files = BTreeMap::from([("lib/libk.hipfb".to_string(), std::fs::read(d.join("k.hipfb"))?)]);
        packages(d, &files, &[])
    };
    let edit = |d: &Path, f: &dyn Fn(&mut serde_json::Value)| -> Result<(), Failed> {
        let p = d.join("prefix/info/paths.json");
        let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&p)?)?;
        f(&mut doc);
        std::fs::write(&p, serde_json::to_vec_pretty(&doc)?)?;
        for ext in ["conda", "tar.bz2"] {
            let out = format!("{PKG}.{ext}");
            run(Path::new(CPH), &["create", "prefix", &out, "--out-folder", "in"], d).ok()?;
        }
        Ok(())
    };
    let refused = |d: &Path, ext: &str, said: &[&str]| -> Result<(), Failed> {
        let name = format!("{PKG}.{ext}");
        let r = run(&ours(), &["prune", "--keep", "gfx90a", "-o", "bad.out", &format!("in/{name}")], d);
        same(&format!("{name}: exit code ({})", r.stderr), r.code, 2)?;
        for s in said.iter().chain([&name.as_str()]) {
            if !r.stderr.contains(s) {
                return Err(format!("{name}: the error does not say '{s}': {}", r.stderr).into());
            }
        }
        same(&format!("{name}: nothing written"), d.join("bad.out").exists(), false)
    };
    base(d)?;
    edit(d, &|doc| doc["paths"][0]["sha256"] = "00".repeat(32).into())?;
    for ext in ["conda", "tar.bz2"] {
        refused(d, ext, &["sha256", "lib/libk.hipfb"])?;
    }
    edit(d, &|doc| doc["paths"][0]["size_in_bytes"] = 5.into())?;
    for ext in ["conda", "tar.bz2"] {
        refused(d, ext, &["size_in_bytes", "lib/libk.hipfb"])?;
    }
    softlinks(d, &base, &edit, &refused)?;
    // The placeholder lies in the gfx90a image, which moves when the
    // gfx942 image goes.
    let placeholder = "/opt/conda_build_placeholder_prefix";
    let mut image = vec![7u8; 2048];
    image.extend_from_slice(placeholder.as_bytes());
    image.resize(4096, 9);
    std::fs::write(d.join("host.part"), b"host code")?;
    std::fs::write(d.join("a.part"), vec![5u8; 8192])?;
    std::fs::write(d.join("b.part"), image)?;
    let args = [
        "bundle", "--type", "o", "-o", "prefix/lib/libk.hipfb",
        "host-x86_64-unknown-linux-gnu=host.part",
        "hipv4-amdgcn-amd-amdhsa--gfx942=a.part",
        "hipv4-amdgcn-amd-amdhsa--gfx90a=b.part",
    ];
    run(&ours(), &args, d).ok()?;
    check_py(d, &["info", "prefix", &format!("lib/libk.hipfb={placeholder}")])?;
    edit(d, &|_| {})?;
    for ext in ["conda", "tar.bz2"] {
        refused(d, ext, &["prefix placeholder", "lib/libk.hipfb"])?;
    }
    std::fs::remove_file(d.join("prefix/info/paths.json"))?;
    for ext in ["conda", "tar.bz2"] {
        let out = format!("{PKG}.{ext}");
        run(Path::new(CPH), &["create", "prefix", &out, "--out-folder", "in"], d).ok()?;
        refused(d, ext, &["info/paths.json"])?;
    }
    // Made by hand: a tar cut short, a name that climbs out.
    check_py(d, &["info", "prefix"])?;
    let bz2 = format!("in/{PKG}.tar.bz2");
    check_py(d, &["rawtar", &bz2, "prefix", "mid", "="])?;
    refused(d, "tar.bz2", &["fewer than", "lib/libk.hipfb"])?;
    check_py(d, &["rawtar", &bz2, "prefix", "no", "lib/libk.hipfb=../libk.hipfb"])?;
    refused(d, "tar.bz2", &["outside the package's prefix", "../libk.hipfb"])?;
    // Names too long for the header, given by a GNU long name or a pax
    // header: absolute, or climbing out.
    let long = "d".repeat(110);
    for form in ["gnu", "pax"] {
        for to in [format!("/{long}/libk.hipfb"), format!("lib/{long}/../../../libk.hipfb")] {
            let rename = format!("lib/libk.hipfb={to}");
            check_py(d, &["rawtar", &bz2, "prefix", "no", &rename, form])?;
            refused(d, "tar.bz2", &["outside the package's prefix", &format!("{long}/")])?;
        }
    }
    Ok(())
}

type Step<'a> = &'a dyn Fn(&Path) -> Result<(), Failed>;
type Edit<'a> = &'a dyn Fn(&Path, &dyn Fn(&mut serde_json::Value)) -> Result<(), Failed>;
type Refused<'a> = &'a dyn Fn(&Path, &str, &[&str]) -> Result<(), Failed>;

/// `softlink` rows of `paths.json` (the package's `lib/libk.so`, a
/// symbolic link to `libk.hipfb`): a true one prunes, the link kept; one
/// naming a regular file, and one naming no entry, exit 2 naming the
/// row and the field. The link is gone again after.
fn softlinks(d: &Path, base: Step, edit: Edit, refused: Refused) -> Result<(), Failed> {
    std::os::unix::fs::symlink("libk.hipfb", d.join("prefix/lib/libk.so"))?;
    base(d)?;
    let set = |doc: &mut serde_json::Value, path: &str, kind: &str| {
        for row in doc["paths"].as_array_mut().into_iter().flatten() {
            if row["_path"] == path {
                row["path_type"] = kind.into();
            }
        }
    };
    edit(d, &|doc| set(doc, "lib/libk.so", "softlink"))?;
    for ext in ["conda", "tar.bz2"] {
        let name = format!("{PKG}.{ext}");
        let out = format!("good.{ext}");
        run(&ours(), &["prune", "--keep", "gfx90a", "-o", &out, &format!("in/{name}")], d).ok()?;
        std::fs::remove_file(d.join(out))?;
    }
    edit(d, &|doc| set(doc, "lib/libk.hipfb", "softlink"))?;
    for ext in ["conda", "tar.bz2"] {
        refused(d, ext, &["'path_type' of 'lib/libk.hipfb' is softlink", "a regular file"])?;
    }
    edit(d, &|doc| {
        set(doc, "lib/libk.hipfb", "hardlink");
        if let Some(rows) = doc["paths"].as_array_mut() {
            rows.push(serde_json::json!({"_path": "lib/gone.so", "path_type": "softlink"}));
        }
    })?;
    for ext in ["conda", "tar.bz2"] {
        refused(d, ext, &["'softlink' row of 'lib/gone.so'", "no entry"])?;
    }
    std::fs::remove_file(d.join("prefix/lib/libk.so"))?;
    base(d)
}

/// Packages of 32 MiB (a bundle of two 16 MiB images, little of it
/// compressible) pruned `--in-place` and killed with SIGKILL at random
/// points of the run, eight times for each format: each time the file at
/// the path is the old package or the one `prune -o` writes, and any
/// `.offload-kit-*` file left beside it (docs/prune.md: a copy a killed
/// run can leave) is a whole copy of either.
fn in_place_killed_leaves_the_old_package_or_the_new() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    super::tree::bundle(d, "k.hipfb", &[("gfx90a", 1, 16 << 20), ("gfx942", 2, 16 << 20)])?;
    let files = BTreeMap::from([("lib/libk.hipfb".to_string(), std::fs::read(d.join("k.hipfb"))?)]);
    packages(d, &files, &[])?;
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1;
    const ROUNDS: u64 = 8;
    for ext in ["conda", "tar.bz2"] {
        let (orig, work) = (format!("in/{PKG}.{ext}"), format!("work.{ext}"));
        let new_at = format!("new.{ext}");
        run(&ours(), &["prune", "--keep", "gfx90a", "-o", &new_at, &orig], d).ok()?;
        let old = md5_hex(&std::fs::read(d.join(&orig))?);
        let new = md5_hex(&std::fs::read(d.join(&new_at))?);
        if new == old {
            return Err(format!("{ext}: the prune changed nothing").into());
        }
        let args = ["prune", "--keep", "gfx90a", "--in-place", &work];
        std::fs::copy(d.join(&orig), d.join(&work))?;
        let start = std::time::Instant::now();
        run(&ours(), &args, d).ok()?;
        let whole = start.elapsed().as_micros().max(1000) as u64;
        same(&format!("{ext} in place against -o"), md5_hex(&std::fs::read(d.join(&work))?), new.clone())?;
        let names = |d: &Path| -> Result<Vec<std::ffi::OsString>, Failed> {
            let mut v = Vec::new();
            for e in std::fs::read_dir(d)? {
                v.push(e?.file_name());
            }
            v.sort();
            Ok(v)
        };
        let before = names(d)?;
        let (mut olds, mut news) = (0, 0);
        for round in 0..ROUNDS {
            std::fs::copy(d.join(&orig), d.join(&work))?;
            let after = crate::util::kill_point(&mut x, round, ROUNDS, whole);
            crate::util::ours_killed_after(&args, d, after)?;
            let at = format!("{ext} round {round} (seed {x}, killed after {after} µs of {whole})");
            match md5_hex(&std::fs::read(d.join(&work))?) {
                h if h == old => olds += 1,
                h if h == new => news += 1,
                _ => return Err(format!("{at}: {work} is neither the old nor the new package").into()),
            }
            super::temporaries_whole(d, &at, &old, &new)?;
            same(&format!("{at}: the files beside it"), names(d)?, before.clone())?;
        }
        if olds == 0 || news == 0 {
            return Err(format!("{ext}: {olds} old and {news} new packages in {ROUNDS} kills: no spread").into());
        }
    }
    Ok(())
}
