//! An RPM and a SIF image around real libraries built by others (issue
//! #73): cuRAND from NVIDIA's wheel (CUDA fatbins), librocrand from
//! Debian's librocrand1 (a HIP bundle) and two of rocBLAS's per-GPU
//! kernel files from Debian's librocblas0 (`Kernels.so-000-gfx906.hsaco`
//! and `…-gfx1030.hsaco`, in a `rocblas/library` directory as rocBLAS
//! installs them). The RPM is built by `rpmbuild` (zstd payload), the SIF
//! by `mksquashfs` (xz) and `siftool`.
//!
//! Read: `size` finds in each exactly what it finds in the tree they were
//! made of, target by target, and, for the RPM, what it finds in the cpio
//! archive `rpm2cpio` takes out. Pruned `--keep sm_80,gfx1030 -o`: the RPM
//! passes `rpm -K`, `rpm -qp --dump` gives the sizes and SHA-256 digests
//! of what `rpm -i --root` installs, and that is each library as `prune
//! -o` makes it alone, the gfx1030 kernel file as it was and no gfx906
//! one; the SIF's `siftool list` still shows its partition, whose
//! squashfs `unsquashfs -s` says is xz and `unsquashfs` extracts to the
//! same files.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::real_libs::{DEB, WHEEL, downloads, fetched};
use crate::util::{files, ours, run, run_stdin, same, tempdir, unzip};

const TOOLS: &[&str] = &[
    "bash", "/usr/bin/python3", "dpkg-deb", "tar", "rpmbuild", "rpm", "rpm2cpio", "mksquashfs",
    "unsquashfs", "siftool",
];

pub fn tests() -> Vec<Trial> {
    vec![trial!(real_libraries_in_an_rpm_and_a_sif_read_and_pruned, TOOLS)]
}

/// The GPUs kept.
const KEEP: &str = "sm_80,gfx1030";
/// Where the libraries go, below the root.
const LIB: &str = "usr/lib64";
/// Where the per-GPU kernel files go, below the root.
const KERNELS: &str = "usr/lib64/rocblas/library";
/// The libraries, by the name they are installed under.
const LIBS: [&str; 2] = ["libcurand.so.10", "librocrand.so.1.1"];
/// rocBLAS's per-GPU kernel files taken: the one kept, the one not.
const KEPT: &str = "Kernels.so-000-gfx1030.hsaco";
const GONE: &str = "Kernels.so-000-gfx906.hsaco";

/// Makes `d/root` (the libraries and kernel files where they install) and
/// `d/alone-NAME`, each library pruned alone.
fn root(d: &Path) -> Result<(), Failed> {
    static ROCBLAS: crate::real_libs::Cache = crate::real_libs::Cache::new();
    let cache = downloads()?;
    let lib = d.join("root").join(LIB);
    std::fs::create_dir_all(d.join("root").join(KERNELS))?;
    unzip(&cache.join(WHEEL), "nvidia/curand/lib/libcurand.so.10", &lib, LIBS[0])?;
    let deb = cache.join(DEB);
    run(Path::new("dpkg-deb"), &[Path::new("-x"), &deb, &d.join("deb")], d).ok()?;
    std::fs::rename(d.join("deb/usr/lib/x86_64-linux-gnu").join(LIBS[1]), lib.join(LIBS[1]))?;
    let rocblas = fetched(&ROCBLAS, &["--rocblas"])?.join("librocblas0_5.5.1+dfsg-7_amd64.deb");
    let script = format!(
        "dpkg-deb --fsys-tarfile \"$1\" | tar -x -C \"$2\" --strip-components=7 --wildcards '*/{KEPT}' '*/{GONE}'"
    );
    let kernels = d.join("root").join(KERNELS);
    let args = [Path::new("-c"), Path::new(&script), Path::new("sh"), &rocblas, &kernels];
    run(Path::new("bash"), &args, d).ok()?;
    for f in [KEPT, GONE] {
        if !kernels.join(f).is_file() {
            return Err(format!("{f} was not taken out of librocblas0").into());
        }
    }
    for name in LIBS {
        let (out, input) = (d.join(format!("alone-{name}")), lib.join(name));
        let (out, input) = (out.to_string_lossy(), input.to_string_lossy());
        run(&ours(), &["prune", "--keep", KEEP, "-o", &out, &input], d).ok()?;
        let alone = std::fs::read(&*out)?;
        if alone.len() >= std::fs::metadata(&*input)?.len() as usize {
            return Err(format!("{name} pruned alone did not shrink").into());
        }
    }
    Ok(())
}

/// `size --json`'s images and bytes per target over all of `args` (and
/// `stdin`, given).
fn by_target(d: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Value, Failed> {
    let mut a = vec!["size", "--json"];
    a.extend(args);
    let r = match stdin {
        Some(data) => run_stdin(&ours(), &a, d, data),
        None => run(&ours(), &a, d),
    }
    .ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout)?;
    let t = doc["total"]["by_target"].clone();
    if t.as_object().is_none_or(|o| o.is_empty()) {
        return Err(format!("size {args:?}: no device code").into());
    }
    Ok(t)
}

/// The RPM's spec: every file of `d/root` installed where it is.
fn spec(d: &Path) -> String {
    let src = d.join("root");
    let mut copies = format!("mkdir -p %{{buildroot}}/{KERNELS}\n");
    let mut listed = String::new();
    for name in LIBS {
        copies += &format!("cp {}/{LIB}/{name} %{{buildroot}}/{LIB}/\n", src.display());
        listed += &format!("/{LIB}/{name}\n");
    }
    for name in [KEPT, GONE] {
        copies += &format!("cp {}/{KERNELS}/{name} %{{buildroot}}/{KERNELS}/\n", src.display());
        listed += &format!("/{KERNELS}/{name}\n");
    }
    format!(
        "%define _binary_payload w3.zstdio\n\
         %define debug_package %{{nil}}\n\
         %define __os_install_post %{{nil}}\n\
         %define _build_id_links none\n\
         Name: realgpu\nVersion: 1.0\nRelease: 1\nSummary: device code\nLicense: custom\n\
         AutoReqProv: no\n\
         %description\nReal libraries with device code.\n\
         %install\n{copies}%files\n{listed}"
    )
}

/// What `d/DIR` must hold once pruned: each library as pruned alone, the
/// kept kernel file as it was, nothing else.
fn wanted(d: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut want = BTreeMap::new();
    for name in LIBS {
        want.insert(format!("{LIB}/{name}"), std::fs::read(d.join(format!("alone-{name}")))?);
    }
    let kept = std::fs::read(d.join("root").join(KERNELS).join(KEPT))?;
    want.insert(format!("{KERNELS}/{KEPT}"), kept);
    Ok(want)
}

/// The RPM: read as its tree and its payload, pruned, verified, installed.
fn the_rpm(d: &Path, tree: &Value) -> Result<(), Failed> {
    crate::rpms::rpmbuild(d, &spec(d), "real", "real.rpm")?;
    let cpio = run(Path::new("rpm2cpio"), &["real.rpm"], d).ok()?.stdout;
    same("real.rpm: size, target by target, as its tree", &by_target(d, &["real.rpm"], None)?, tree)?;
    same("real.rpm: size as rpm2cpio's payload", &by_target(d, &["-"], Some(&cpio))?, tree)?;
    let r = run(&ours(), &["prune", "--keep", KEEP, "-o", "pruned.rpm", "real.rpm"], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if !said.contains(GONE) {
        return Err(format!("prune does not name the removed {GONE}:\n{said}").into());
    }
    let db = d.join("rpmdb");
    let db = db.to_string_lossy();
    let rpm = |args: &[&str]| {
        let mut a = vec!["--dbpath", &*db];
        a.extend(args);
        run(Path::new("rpm"), &a, d).ok().map(|r| String::from_utf8_lossy(&r.stdout).into_owned())
    };
    let k = rpm(&["-Kv", "--nosignature", "pruned.rpm"])?;
    if k.contains("NOT OK") || !k.contains("Payload SHA256 digest: OK") {
        return Err(format!("rpm -Kv pruned.rpm:\n{k}").into());
    }
    let installed = d.join("installed");
    std::fs::create_dir_all(&installed)?;
    let at = installed.to_string_lossy();
    let args = ["--root", &at, "--dbpath", "/rpmdb", "--nodeps", "--noscripts", "--nosignature", "-i", "pruned.rpm"];
    run(Path::new("rpm"), &args, d).ok()?;
    let mut got = files(&installed);
    got.retain(|path, _| !path.starts_with("rpmdb/"));
    same("pruned.rpm installed: the files", got.keys().collect::<Vec<_>>(), wanted(d)?.keys().collect())?;
    if got != wanted(d)? {
        return Err("pruned.rpm installed: not the libraries pruned alone and the kept kernel file".into());
    }
    for line in rpm(&["-qp", "--dump", "pruned.rpm"])?.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let (path, size, digest) = (f[0].trim_start_matches('/'), f.get(1), f.get(3));
        let bytes = got.get(path).ok_or_else(|| format!("--dump lists {path}, not installed"))?;
        same(&format!("--dump: {path}: size"), size.copied(), Some(bytes.len().to_string().as_str()))?;
        let sha = format!("{:x}", Sha256::digest(bytes));
        same(&format!("--dump: {path}: digest"), digest.copied(), Some(sha.as_str()))?;
    }
    Ok(())
}

/// The SIF: read as its tree, pruned, listed, its partition extracted.
fn the_sif(d: &Path, tree: &Value) -> Result<(), Failed> {
    let q = ["-comp", "xz", "-noappend", "-quiet", "-no-progress"];
    run(Path::new("mksquashfs"), &[&["root", "real.sqfs"][..], &q].concat(), d).ok()?;
    let siftool = |args: &[&str]| run(Path::new("siftool"), args, d).ok();
    siftool(&["new", "real.sif"])?;
    let part = ["add", "--datatype", "4", "--parttype", "2", "--partfs", "1", "--partarch", "2"];
    siftool(&[&part[..], &["real.sif", "real.sqfs"]].concat())?;
    same("real.sif: size, target by target, as its tree", &by_target(d, &["real.sif"], None)?, tree)?;
    run(&ours(), &["prune", "--keep", KEEP, "-o", "pruned.sif", "real.sif"], d).ok()?;
    let listed = String::from_utf8_lossy(&siftool(&["list", "pruned.sif"])?.stdout).into_owned();
    if !listed.contains("Squashfs") {
        return Err(format!("siftool list pruned.sif:\n{listed}").into());
    }
    std::fs::write(d.join("pruned.sqfs"), siftool(&["dump", "1", "pruned.sif"])?.stdout)?;
    let s = run(Path::new("unsquashfs"), &["-s", "pruned.sqfs"], d).ok()?;
    if !String::from_utf8_lossy(&s.stdout).contains("Compression xz") {
        return Err(format!("unsquashfs -s: {}", String::from_utf8_lossy(&s.stdout)).into());
    }
    run(Path::new("unsquashfs"), &["-q", "-n", "-d", "unsquashed", "pruned.sqfs"], d).ok()?;
    if files(&d.join("unsquashed")) != wanted(d)? {
        return Err("pruned.sif's partition: not the libraries pruned alone and the kept kernel file".into());
    }
    Ok(())
}

fn real_libraries_in_an_rpm_and_a_sif_read_and_pruned() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    root(d)?;
    let tree = by_target(d, &["root"], None)?;
    the_rpm(d, &tree)?;
    the_sif(d, &tree)
}
