//! Debian trixie's rocBLAS package pruned to one GPU (issue #59): most of
//! its 2.3 GB installed is other GPUs' code, in the fat library and in 18
//! files that each hold one GPU's Tensile kernels. `--keep gfx1100` must
//! take nearly all of it (the library's dropped code objects and the
//! other GPUs' files), `dpkg` must install and verify the package written,
//! and the unpacked tree pruned in place must come out as the package's
//! files.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use super::debs::{dpkg, scratch_root};
use crate::real_libs::{Cache, fetched};
use crate::util::{md5_hex, ours, ours_json, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(trixie_rocblas_to_one_gpu, &["dpkg", "dpkg-deb"]),
        trial!(trixie_rocblas_split_follows_each_gpu, &["dpkg-deb", "ar"]),
    ]
}

/// The package, as `scripts/real-libs.sh --rocblas` fetches it.
const DEB: &str = "librocblas0_5.5.1+dfsg-7_amd64.deb";

/// The Tensile files' directory in it.
const LIBRARY: &str = "usr/lib/x86_64-linux-gnu/rocblas/2.47.0/library";

/// Each regular file below `dir`, by its path there: its MD5 and size.
fn md5s(dir: &Path) -> Result<BTreeMap<String, (String, u64)>, Failed> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            let kind = e.file_type()?;
            if kind.is_dir() {
                stack.push(e.path());
            } else if kind.is_file() {
                let bytes = std::fs::read(e.path())?;
                let rel = e.path().strip_prefix(dir)?.to_string_lossy().into_owned();
                out.insert(rel, (md5_hex(&bytes), bytes.len() as u64));
            }
        }
    }
    Ok(out)
}

/// Bytes of every image `prune --json` says it dropped, and the paths of
/// the files it removed.
fn dropped_and_removed(doc: &Value) -> (u64, Vec<String>) {
    let file = &doc["files"][0];
    let dropped = file["dropped"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| g["bytes"].as_u64().unwrap_or(0))
        .sum();
    let removed = file["removed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str())
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect();
    (dropped, removed)
}

/// `--keep gfx1100` of the package: 95 % or more of the bytes of the
/// images dropped are gone from what it installs; the 18 per-GPU files of
/// other GPUs removed; `dpkg-deb --info` reads it; `dpkg` installs it into
/// a scratch root and `--verify` finds every file as `md5sums` says; every
/// file but the library is the original's, byte for byte. The unpacked
/// tree pruned in place gives the same files, and its dry run the same
/// total. `--keep gfx90a` keeps both xnack variants' files;
/// `gfx90a:xnack-` only its own.
fn trixie_rocblas_to_one_gpu() -> Result<(), Failed> {
    static DIR: Cache = Cache::new();
    let cache = fetched(&DIR, &["--rocblas"])?;
    let t = tempdir();
    let d = t.path();
    let deb = cache.join(DEB);
    let deb = deb.to_string_lossy();
    let dry = ours_json(&["prune", "--keep", "gfx1100", "--dry-run", "--json", &deb], d)?;
    let (dropped, mut removed) = dropped_and_removed(&dry);
    removed.sort();
    same("files removed", removed.len(), 18)?;
    if let Some(f) = removed.iter().find(|f| f.contains("gfx1100")) {
        return Err(format!("a gfx1100 file is removed: {f}").into());
    }
    run(&ours(), &["prune", "--keep", "gfx1100", "-o", "slim.deb", &deb], d).ok()?;
    run(Path::new("/usr/bin/dpkg-deb"), &["--info", "slim.deb"], d).ok()?;
    for (pkg, dir) in [(&*deb, "orig"), ("slim.deb", "slim")] {
        run(Path::new("/usr/bin/dpkg-deb"), &["-x", pkg, dir], d).ok()?;
    }
    let (orig, slim) = (md5s(&d.join("orig"))?, md5s(&d.join("slim"))?);
    let size = |m: &BTreeMap<String, (String, u64)>| m.values().map(|v| v.1).sum::<u64>();
    let gone = size(&orig) - size(&slim);
    if gone * 100 < dropped * 95 {
        return Err(format!("{gone} bytes gone of the {dropped} bytes of images dropped").into());
    }
    let lib = "usr/lib/x86_64-linux-gnu/librocblas.so.0.1";
    for (path, sum) in &slim {
        if path != lib && orig.get(path) != Some(sum) {
            return Err(format!("{path} is not the original's").into());
        }
    }
    let mut missing: Vec<String> = orig
        .keys()
        .filter(|p| !slim.contains_key(*p))
        .map(|p| p.strip_prefix(&format!("{LIBRARY}/")).unwrap_or(p).to_string())
        .collect();
    missing.sort();
    same("the files not in the package written", &missing, &removed)?;
    scratch_root(d, "root")?;
    let install = ["--force-depends", "--force-script-chrootless", "-i", "slim.deb"];
    dpkg(d, "root", &install)?.ok()?;
    let verify = dpkg(d, "root", &["--verify", "librocblas0"])?.ok()?;
    same("dpkg --verify", String::from_utf8_lossy(&verify.stdout), "".into())?;
    // The tree, pruned in place, is the package's files; its dry run
    // frees what the package's did.
    run(Path::new("/bin/cp"), &["-a", "orig", "tree"], d).ok()?;
    let tree_dry = run(&ours(), &["prune", "--keep", "gfx1100", "--dry-run", "tree"], d).ok()?;
    let total = |doc: &Value| doc["files"][0]["freed"].as_u64();
    let said = format!("would free {} bytes", total(&dry).unwrap_or(0));
    if !String::from_utf8_lossy(&tree_dry.stdout).contains(&said) {
        return Err(format!("the tree's dry run does not say '{said}'").into());
    }
    run(&ours(), &["prune", "--keep", "gfx1100", "--in-place", "tree"], d).ok()?;
    same("the tree pruned in place", md5s(&d.join("tree"))?, slim)?;
    // gfx90a: both xnack variants' files stay; gfx90a:xnack- loses xnack+.
    for (rule, gone) in [("gfx90a", None), ("gfx90a:xnack-", Some("xnack+"))] {
        let doc = ours_json(&["prune", "--keep", rule, "--dry-run", "--json", &deb], d)?;
        let (_, removed) = dropped_and_removed(&doc);
        let of_90a: Vec<&String> = removed.iter().filter(|f| f.contains("gfx90a")).collect();
        let want = gone.map(|x| format!("Kernels.so-000-gfx90a-{x}.hsaco"));
        same(&format!("{rule}: gfx90a files removed"), of_90a, want.iter().collect())?;
    }
    installed(d, &deb)
}

/// The original package installed by dpkg into a scratch root, whose
/// library directory is then pruned in place: the report names
/// `librocblas0` (not multi-arch: its list has no `:amd64`) as the owner of exactly the files that `dpkg --verify`
/// then lists (its database is not edited).
fn installed(d: &Path, deb: &str) -> Result<(), Failed> {
    scratch_root(d, "system")?;
    let install = ["--force-depends", "--force-script-chrootless", "-i", deb];
    dpkg(d, "system", &install)?.ok()?;
    let lib = "system/usr/lib/x86_64-linux-gnu";
    let doc = ours_json(&["prune", "--keep", "gfx1100", "--in-place", "--json", lib], d)?;
    let owners = doc["dpkg_packages"].as_array().cloned().unwrap_or_default();
    same("packages named", owners.len(), 1)?;
    same("the owner", owners[0]["package"].as_str(), Some("librocblas0"))?;
    let mut named: Vec<String> = owners[0]["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| Some(f.as_str()?.strip_prefix("system")?.to_string()))
        .collect();
    named.sort();
    same("files named", named.len(), 19)?;
    // `??5??????  /usr/…` for a file changed, `missing  /usr/…` for one
    // removed; dpkg exits 1 when it lists any.
    let verify = dpkg(d, "system", &["--verify", "librocblas0"])?;
    let mut listed: Vec<String> = String::from_utf8_lossy(&verify.stdout)
        .lines()
        .filter_map(|l| Some(l.split_whitespace().last()?.to_string()))
        .collect();
    listed.sort();
    same("the files dpkg --verify lists", named, listed)
}

/// The GPU a Tensile file of the library directory is for (`gfx90a` of
/// `Kernels.so-000-gfx90a-xnack+.hsaco`, `gfx1100` of
/// `TensileLibrary_gfx1100.dat`), if its name says one.
fn gpu_of(file: &str) -> Option<&str> {
    let at = file.find("gfx")?;
    let rest = &file[at..];
    let end = rest[3..].find(|c: char| !c.is_ascii_alphanumeric()).map_or(rest.len(), |e| e + 3);
    Some(&rest[..end])
}

/// The Tensile files `deb` installs in the library directory, by name.
fn tensile_files(d: &Path, deb: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("/usr/bin/dpkg-deb"), &["--contents", deb], d).ok()?;
    let mut out: Vec<String> = String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter_map(|p| p.strip_prefix(&format!("./{LIBRARY}/")))
        .filter(|f| !f.is_empty() && !f.ends_with('/'))
        .map(str::to_string)
        .collect();
    out.sort();
    Ok(out)
}

/// The package split into a gfx1100 and a gfx90a package in one read
/// (issue #74): gfx1100's `data.tar.xz` is, byte for byte, what
/// `prune --keep gfx1100 -o` writes; each holds its GPU's Tensile files (both
/// xnack variants' for gfx90a) and every file that names no GPU, and no
/// other GPU's; `check --any --require` of its GPU passes on it and of
/// the other fails; the report
/// names, for each of the two, the one output (by label) that serves it.
fn trixie_rocblas_split_follows_each_gpu() -> Result<(), Failed> {
    static DIR: Cache = Cache::new();
    let cache = fetched(&DIR, &["--rocblas"])?;
    let t = tempdir();
    let d = t.path();
    let deb = cache.join(DEB);
    let deb = deb.to_string_lossy();
    let args = ["split", "--gpus", "gfx1100", "--gpus", "gfx90a", "--json", "-d", "out", &deb];
    let doc = ours_json(&args, d)?;
    let input = tensile_files(d, &deb)?;
    for gpu in ["gfx1100", "gfx90a"] {
        let split = format!("out/librocblas0-{gpu}_5.5.1+dfsg-7_amd64.deb");
        // One prune (each reads the 2.3 GB archive): gfx1100's.
        if gpu == "gfx1100" {
            run(&ours(), &["prune", "--keep", gpu, "-o", "pruned.deb", &deb], d).ok()?;
            let data = |p: &str| super::debs::member(d, p, "data.tar.xz");
            if data(&split)? != data("pruned.deb")? {
                return Err(format!("{split}: its data.tar.xz is not prune --keep {gpu}'s").into());
            }
        }
        let want: Vec<String> = input
            .iter()
            .filter(|f| gpu_of(f).is_none_or(|g| g == gpu))
            .cloned()
            .collect();
        same(&format!("{split}: its Tensile files"), tensile_files(d, &split)?, want)?;
        // `--any`: the package's files together (each xnack variant's
        // file alone serves half of gfx90a's modes, as in the input).
        run(&ours(), &["check", "--any", "--require", gpu, &split], d).ok()?;
        let other = if gpu == "gfx1100" { "gfx90a" } else { "gfx1100" };
        let code = run(&ours(), &["check", "--any", "--require", other, &split], d).code;
        same(&format!("check --require {other} of {split}"), code, 1)?;
        let served: Vec<&str> = doc["files"][0]["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["what"].as_str() == Some(gpu))
            .flat_map(|s| s["outputs"].as_array().into_iter().flatten())
            .filter_map(|o| o.as_str())
            .collect();
        same(&format!("the outputs serving {gpu}"), served, vec![gpu])?;
    }
    if !input.iter().any(|f| f.contains("gfx90a-xnack+")) || !input.iter().any(|f| f.contains("gfx90a-xnack-")) {
        return Err("the package no longer has both gfx90a xnack variants' files".into());
    }
    Ok(())
}
