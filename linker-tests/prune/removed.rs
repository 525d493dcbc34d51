//! Files that only other GPUs load go (issue #59). clang-22 builds, from
//! `k2.hip`, a raw code object for gfx90a and one for gfx1030
//! (`--cuda-device-only --no-gpu-bundle-output`), a bundle file for both
//! and one for gfx1030 alone, and a host shared library for both; a
//! venv-like tree lists them in `pkg-1.0.dist-info/RECORD`.
//! `prune --keep gfx90a --in-place` removes the two gfx1030 files, prunes
//! the bundle and the library, and leaves a RECORD that gives every file
//! left its SHA-256 and size and names no file removed; `--keep-files`
//! refuses the gfx1030 files as before. The same files as a wheel give a
//! wheel whose RECORD is exact, and as a `.deb` (`dpkg-deb -b`) one that
//! `dpkg-deb -c` lists without the removed files and whose `md5sums`
//! matches every file `dpkg-deb -x` extracts.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use libtest_mimic::{Failed, Trial};
use sha2::Digest as _;

use super::src;
use crate::util::{llvm, md5_hex, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(per_gpu_files_go_and_the_record_follows, &["clang", "clang++"]),
        trial!(per_gpu_files_leave_a_wheel_and_its_record, &["clang", "clang++"]),
        trial!(pip_uninstalls_a_pruned_venv_cleanly, &["clang", "clang++", "/usr/bin/python3"]),
        trial!(per_gpu_files_go_and_conda_meta_follows, &["clang", "clang++", "/usr/bin/python3"]),
        trial!(per_gpu_files_leave_a_deb_and_its_md5sums, &["clang", "clang++", "dpkg-deb"]),
    ]
}

/// The files made, by their path in the package; the gfx1030 ones go.
const FILES: [&str; 5] = [
    "pkg/k_gfx90a.hsaco",
    "pkg/k_gfx1030.hsaco",
    "pkg/k.hipfb",
    "pkg/old_gfx1030.hipfb",
    "pkg/libk.so",
];

/// The files `--keep gfx90a` removes.
const GONE: [&str; 2] = ["pkg/k_gfx1030.hsaco", "pkg/old_gfx1030.hipfb"];

/// Builds [`FILES`] in `d`: their bytes by path.
fn build(d: &Path) -> Result<BTreeMap<&'static str, Vec<u8>>, Failed> {
    let source = src("k2.hip");
    let include = format!("-I{}", src(""));
    let hip = |arches: &[&str], extra: &[&str], out: &str| -> Result<(), Failed> {
        let mut args = vec!["-x", "hip", "-nogpulib", "-nogpuinc", include.as_str()];
        let archs: Vec<String> = arches
            .iter()
            .map(|a| format!("--offload-arch={a}"))
            .collect();
        args.extend(archs.iter().map(String::as_str));
        args.extend(extra);
        args.extend([source.as_str(), "-o", out]);
        run(&llvm("clang++"), &args, d).ok()?;
        Ok(())
    };
    let device = ["--cuda-device-only", "--no-gpu-bundle-output"];
    hip(&["gfx90a"], &device, "k_gfx90a.hsaco")?;
    hip(&["gfx1030"], &device, "k_gfx1030.hsaco")?;
    hip(&["gfx90a", "gfx1030"], &["--cuda-device-only"], "k.hipfb")?;
    hip(&["gfx1030"], &["--cuda-device-only"], "old_gfx1030.hipfb")?;
    hip(&["gfx90a", "gfx1030"], &["-fPIC", "-c"], "k.o")?;
    run(&llvm("clang"), &["-shared", "k.o", "-o", "libk.so"], d).ok()?;
    let mut out = BTreeMap::new();
    for f in FILES {
        let name = f.trim_start_matches("pkg/");
        out.insert(f, std::fs::read(d.join(name))?);
    }
    Ok(out)
}

/// A RECORD row: `path,sha256=HASH,size`, the hash in unpadded URL-safe
/// base64.
fn row(path: &str, bytes: &[u8]) -> String {
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes));
    format!("{path},sha256={sha},{}", bytes.len())
}

/// The RECORD of `files`, and its own row.
fn record(files: &BTreeMap<&str, Vec<u8>>) -> String {
    let mut text: String = files.iter().map(|(p, b)| row(p, b) + "\n").collect();
    text += "pkg-1.0.dist-info/RECORD,,\n";
    text
}

/// Checks that the RECORD `text` gives every file of `site` it should
/// list (each of [`FILES`] not removed) with its hash and size now, and
/// lists no other.
fn exact(what: &str, text: &str, now: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    let mut want: Vec<String> = FILES
        .iter()
        .filter(|f| !GONE.contains(f))
        .map(|f| {
            now.get(*f)
                .map(|b| row(f, b))
                .ok_or_else(|| format!("{what}: {f} is missing"))
        })
        .collect::<Result<_, _>>()?;
    want.push("pkg-1.0.dist-info/RECORD,,".into());
    want.sort();
    let mut got: Vec<String> = text.lines().map(str::to_string).collect();
    got.sort();
    same(&format!("{what}: RECORD"), got, want)
}

/// The files under `dir`, by their path below it.
fn read_tree(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir) {
        let e = e?;
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(dir)?.to_string_lossy().into_owned();
            out.insert(rel, std::fs::read(e.path())?);
        }
    }
    Ok(out)
}

fn per_gpu_files_go_and_the_record_follows() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let site = d.join("venv/lib/python3/site-packages");
    let keeping = d.join("keeping");
    for s in [&site, &keeping.join("lib/python3/site-packages")] {
        std::fs::create_dir_all(s.join("pkg"))?;
        std::fs::create_dir_all(s.join("pkg-1.0.dist-info"))?;
        for (p, b) in &files {
            std::fs::write(s.join(p), b)?;
        }
        std::fs::write(s.join("pkg-1.0.dist-info/RECORD"), record(&files))?;
    }
    // --keep-files: the gfx1030 files are refused (exit 1), left as they
    // were; the rest is pruned, and the RECORD follows the rewrites.
    let r = run(
        &ours(),
        &[
            "prune",
            "--keep",
            "gfx90a",
            "--in-place",
            "--keep-files",
            "keeping",
        ],
        d,
    );
    same("--keep-files: exit code", r.code, 1)?;
    let kept = read_tree(&keeping.join("lib/python3/site-packages"))?;
    for g in GONE {
        same(&format!("--keep-files: {g}"), kept.get(g), files.get(g))?;
    }
    let out = String::from_utf8_lossy(&r.stdout);
    if out.matches("not pruned: ").count() != 2 || !out.contains("--keep-files keeps such a file") {
        return Err(format!("--keep-files: {out}").into());
    }
    // By default they go.
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", "--json", "venv"],
        d,
    );
    same("prune --in-place: exit code", r.code, 0)?;
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    same(
        "files_removed",
        doc["total"]["files_removed"].as_u64(),
        Some(2),
    )?;
    let removed_bytes: usize = GONE.iter().map(|g| files[g].len()).sum();
    same(
        "bytes_removed",
        doc["total"]["bytes_removed"].as_u64(),
        Some(removed_bytes as u64),
    )?;
    same(
        "records",
        doc["records"][0]["rows_removed"].as_u64(),
        Some(2),
    )?;
    let now = read_tree(&site)?;
    for g in GONE {
        if now.contains_key(g) {
            return Err(format!("{g} is still there").into());
        }
    }
    same(
        "k_gfx90a.hsaco",
        now.get("pkg/k_gfx90a.hsaco"),
        files.get("pkg/k_gfx90a.hsaco"),
    )?;
    for f in ["pkg/k.hipfb", "pkg/libk.so"] {
        if now.get(f).map(Vec::len) >= files.get(f).map(Vec::len) {
            return Err(format!("{f} was not pruned").into());
        }
    }
    let text = String::from_utf8(now["pkg-1.0.dist-info/RECORD"].clone())?;
    exact("tree", &text, &now)
}

/// A wheel at `path` holding `files`, deflated, and their RECORD.
fn write_wheel(path: &Path, files: &BTreeMap<&str, Vec<u8>>) -> Result<(), Failed> {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path)?);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (p, b) in files {
        z.start_file(*p, deflated)?;
        z.write_all(b)?;
    }
    z.start_file("pkg-1.0.dist-info/RECORD", deflated)?;
    z.write_all(record(files).as_bytes())?;
    z.finish()?;
    Ok(())
}

/// The pruned wheel's files, and its RECORD.
fn per_gpu_files_leave_a_wheel_and_its_record() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let path = d.join("pkg-1.0-py3-none-any.whl");
    write_wheel(&path, &files)?;
    let whl = path.to_string_lossy().into_owned();
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", &whl],
        d,
    )
    .ok()?;
    let mut zin = zip::ZipArchive::new(std::fs::File::open(&path)?)?;
    let mut now = BTreeMap::new();
    for i in 0..zin.len() {
        let mut f = zin.by_index(i)?;
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut b)?;
        now.insert(f.name()?.into_owned(), b);
    }
    let text = String::from_utf8(now["pkg-1.0.dist-info/RECORD"].clone())?;
    exact("wheel", &text, &now)?;
    same("wheel members", now.len(), FILES.len() - GONE.len() + 1)
}

/// The pruned `.deb`: its listing, and its md5sums against the files
/// extracted.
fn per_gpu_files_leave_a_deb_and_its_md5sums() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let root = d.join("root");
    let usr = root.join("usr/lib/k");
    std::fs::create_dir_all(&usr)?;
    std::fs::create_dir_all(root.join("DEBIAN"))?;
    let mut sums = String::new();
    for (p, b) in &files {
        std::fs::write(usr.join(p.trim_start_matches("pkg/")), b)?;
        sums += &format!(
            "{}  usr/lib/k/{}\n",
            md5_hex(b),
            p.trim_start_matches("pkg/")
        );
    }
    let control =
        "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@k>\nDescription: k\n";
    std::fs::write(root.join("DEBIAN/control"), control)?;
    std::fs::write(root.join("DEBIAN/md5sums"), &sums)?;
    let dpkg = Path::new("/usr/bin/dpkg-deb");
    run(dpkg, &["--root-owner-group", "-b", "root", "k.deb"], d).ok()?;
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "--in-place", "k.deb"],
        d,
    )
    .ok()?;
    let listing = String::from_utf8(run(dpkg, &["-c", "k.deb"], d).ok()?.stdout)?;
    for f in FILES {
        let name = f.trim_start_matches("pkg/");
        let listed = listing
            .lines()
            .any(|l| l.ends_with(&format!("/usr/lib/k/{name}")));
        if listed == GONE.contains(&f) {
            return Err(format!("dpkg-deb -c lists {name}: {listed}\n{listing}").into());
        }
    }
    run(dpkg, &["-x", "k.deb", "x"], d).ok()?;
    run(dpkg, &["-e", "k.deb", "x/DEBIAN"], d).ok()?;
    let sums = std::fs::read_to_string(d.join("x/DEBIAN/md5sums"))?;
    same(
        "md5sums lines",
        sums.lines().count(),
        FILES.len() - GONE.len(),
    )?;
    for line in sums.lines() {
        let (md5, path) = line.split_once("  ").ok_or("a line of md5sums")?;
        let bytes = std::fs::read(d.join("x").join(path))?;
        same(&format!("md5sums: {path}"), md5, md5_hex(&bytes).as_str())?;
    }
    Ok(())
}

/// The same files in a conda environment (`env/pkg/…`), recorded in
/// `env/conda-meta/pkg-1.0-0.json` as conda writes it (by Python's json,
/// two-space indents, keys sorted): pruned in place, the record's
/// `files` and `paths_data` name no removed file, and every row left
/// gives its file's SHA-256 and size as Python computes them now.
fn per_gpu_files_go_and_conda_meta_follows() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let env = d.join("env");
    std::fs::create_dir_all(env.join("pkg"))?;
    std::fs::create_dir_all(env.join("conda-meta"))?;
    for (p, b) in &files {
        std::fs::write(env.join(p), b)?;
    }
    let python = Path::new("/usr/bin/python3");
    let write = "import hashlib, json, os, sys
env = sys.argv[1]
paths = sorted(sys.argv[2:])
def row(p):
    b = open(os.path.join(env, p), 'rb').read()
    h = hashlib.sha256(b).hexdigest()
    return {'_path': p, 'path_type': 'hardlink', 'sha256': h, 'sha256_in_prefix': h, 'size_in_bytes': len(b)}
doc = {'name': 'pkg', 'version': '1.0', 'build': '0', 'files': paths,
       'paths_data': {'paths': [row(p) for p in paths], 'paths_version': 1}}
json.dump(doc, open(os.path.join(env, 'conda-meta/pkg-1.0-0.json'), 'w'), indent=2, sort_keys=True)
";
    let mut args = vec!["-c".to_string(), write.to_string(), "env".to_string()];
    args.extend(files.keys().map(|p| p.to_string()));
    run(python, &args, d).ok()?;
    let r = run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "env"], d).ok()?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains("conda-meta/pkg-1.0-0.json: conda record updated: 2 row(s) given new hashes and sizes, 2 row(s) of removed files taken out") {
        return Err(format!("the report: {out}").into());
    }
    let check = "import hashlib, json, os, sys
env = sys.argv[1]
doc = json.load(open(os.path.join(env, 'conda-meta/pkg-1.0-0.json')))
rows = doc['paths_data']['paths']
assert [r['_path'] for r in rows] == doc['files'], doc['files']
for r in rows:
    b = open(os.path.join(env, r['_path']), 'rb').read()
    h = hashlib.sha256(b).hexdigest()
    assert (r['sha256'], r['sha256_in_prefix'], r['size_in_bytes']) == (h, h, len(b)), r
print(len(rows))
";
    let r = run(python, &["-c", check, "env"], d).ok()?;
    same(
        "rows left",
        String::from_utf8_lossy(&r.stdout).trim().to_string(),
        (files.len() - GONE.len()).to_string(),
    )?;
    for g in GONE {
        if env.join(g).exists() {
            return Err(format!("{g} is still there").into());
        }
    }
    Ok(())
}

/// The files as a wheel pip installs into a venv: pruned in place there
/// (two files pruned, two removed), `pip uninstall` takes the package
/// away with no warning and leaves no file of it.
fn pip_uninstalls_a_pruned_venv_cleanly() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let mut files: BTreeMap<&str, Vec<u8>> = build(d)?;
    files.insert("pkg-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n".to_vec());
    files.insert(
        "pkg-1.0.dist-info/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: offload-kit-tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n".to_vec(),
    );
    let whl = "pkg-1.0-py3-none-any.whl";
    write_wheel(&d.join(whl), &files)?;
    run(Path::new("/usr/bin/python3"), &["-m", "venv", "venv"], d).ok()?;
    let pip = d.join("venv/bin/pip");
    let quiet = ["--disable-pip-version-check", "-q"];
    let install = [&quiet[..], &["install", "--no-index", "--no-deps", whl]].concat();
    run(&pip, &install, d).ok()?;
    let r = run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "--json", "venv"], d);
    same("prune --in-place: exit code", r.code, 0)?;
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    same("files removed", doc["total"]["files_removed"].as_u64(), Some(2))?;
    let r = run(&pip, &["--disable-pip-version-check", "uninstall", "-y", "pkg"], d).ok()?;
    if !r.stderr.is_empty() || !String::from_utf8_lossy(&r.stdout).contains("Successfully uninstalled pkg-1.0") {
        return Err(format!("pip uninstall: {}{}", String::from_utf8_lossy(&r.stdout), r.stderr).into());
    }
    let left: Vec<String> = walkdir::WalkDir::new(d.join("venv"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_string_lossy().into_owned())
        .filter(|p| p.contains("/pkg/") || p.contains("pkg-1.0"))
        .collect();
    same("files of the package left", left, Vec::<String>::new())
}
