//! Libraries' per-GPU files removed by their name (issue #59), through
//! the binary and the real tools. A synthetic ROCm-style install holds
//! hipBLASLt/Tensile indexes (`TensileLibrary_lazy_gfx906.dat`, a
//! `.dat.zlib`), `Kernels.so-000-gfx90a-xnack±.hsaco`, `library/<arch>/`
//! directories, MIOpen databases and models, arch-neutral files that must
//! stay, and two code objects clang-22 builds from `k2.hip` (gfx90a,
//! gfx1030: the second goes for what it holds, not its name).
//! `--keep gfx90a` is checked on it as a tree (`--in-place` and
//! `--dry-run`, the same totals; the text lines and the JSON fields), as
//! a wheel (`-o`: RECORD exact; pip installs it and `pip uninstall`
//! leaves nothing; installed from the original wheel and pruned in the
//! venv, the same) and as a `.deb` built by `dpkg-deb -b` (`-o`: the
//! files gone from `dpkg-deb -c`, `md5sums` exact, a conffile of the
//! table refused and left, installed into a scratch root `dpkg --verify`
//! is silent). `--keep gfx90a` keeps both xnack modes' files, and
//! `--keep gfx90a:xnack-` drops the `xnack+` one.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use sha2::Digest as _;

use super::debs::{dpkg, scratch_root};
use super::src;
use crate::util::{files, llvm, md5_hex, ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(a_tree_in_place_and_in_a_dry_run, &["clang++"]),
        trial!(a_wheel_pip_installs_and_uninstalls, &["clang++", "/usr/bin/python3"]),
        trial!(a_deb_dpkg_installs_and_verifies, &["clang++", "dpkg", "dpkg-deb"]),
    ]
}

/// The files by a library's convention, below the install prefix, with
/// the GPU for which `--keep gfx90a` removes each (`None`: it stays).
const NAMED: &[(&str, Option<&str>)] = &[
    ("lib/hipblaslt/library/TensileLibrary.dat", None),
    ("lib/hipblaslt/library/TensileManifest.txt", None),
    (
        "lib/hipblaslt/library/TensileLibrary_lazy_gfx906.dat",
        Some("gfx906"),
    ),
    ("lib/hipblaslt/library/TensileLibrary_lazy_gfx90a.dat", None),
    (
        "lib/hipblaslt/library/TensileLibrary_Type_SS_Contraction_gfx942.dat.zlib",
        Some("gfx942"),
    ),
    (XNACK_PLUS, None),
    (
        "lib/hipblaslt/library/Kernels.so-000-gfx90a-xnack-.hsaco",
        None,
    ),
    (
        "lib/hipblaslt/library/gfx906/TensileLibrary_lazy.dat",
        Some("gfx906"),
    ),
    ("lib/hipblaslt/library/gfx906/sub/extop.co", Some("gfx906")),
    ("lib/hipblaslt/library/gfx90a/TensileLibrary_lazy.dat", None),
    ("share/miopen/db/gfx90a68.kdb", None),
    ("share/miopen/db/gfx906_60.kdb", Some("gfx906")),
    ("share/miopen/db/gfx1100.tn.model", Some("gfx1100")),
    ("share/miopen/db/readme.txt", None),
];

/// The file `--keep gfx90a:xnack-` removes besides.
const XNACK_PLUS: &str = "lib/hipblaslt/library/Kernels.so-000-gfx90a-xnack+.hsaco";

/// The code objects built, and the one `--keep gfx90a` removes.
const KEPT_OBJECT: &str = "lib/k_gfx90a.hsaco";
const GONE_OBJECT: &str = "lib/k_gfx1030.hsaco";

/// The directories the run empties, deepest first.
const EMPTIED: [&str; 2] = [
    "lib/hipblaslt/library/gfx906/sub",
    "lib/hipblaslt/library/gfx906",
];

/// Builds `k2.hip`'s code object for `arch` (clang-22, device only) into
/// `d/name`; its bytes.
pub(crate) fn code_object(d: &Path, arch: &str, name: &str) -> Result<Vec<u8>, Failed> {
    let include = format!("-I{}", src(""));
    let offload = format!("--offload-arch={arch}");
    let args = [
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        &include,
        &offload,
        "--cuda-device-only",
        "--no-gpu-bundle-output",
        &src("k2.hip"),
        "-o",
        name,
    ];
    run(&llvm("clang++"), &args, d).ok()?;
    Ok(std::fs::read(d.join(name))?)
}

/// Every file of the install, by its path below the prefix.
pub(super) fn build(d: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut out = BTreeMap::new();
    for (arch, path) in [("gfx90a", KEPT_OBJECT), ("gfx1030", GONE_OBJECT)] {
        out.insert(path.to_string(), code_object(d, arch, "k.hsaco")?);
    }
    for (path, _) in NAMED {
        // Text: no format prune reads, so only the name can remove it.
        out.insert(
            path.to_string(),
            format!("{path}\n").repeat(30).into_bytes(),
        );
    }
    Ok(out)
}

/// The files `--keep gfx90a` removes, with the GPU their name says
/// (`None` for the code object, removed for what it holds).
pub(super) fn gone() -> BTreeMap<String, Option<&'static str>> {
    let mut out: BTreeMap<String, Option<&str>> = NAMED
        .iter()
        .filter_map(|(p, g)| g.map(|g| (p.to_string(), Some(g))))
        .collect();
    out.insert(GONE_OBJECT.to_string(), None);
    out
}

/// Writes `files` below `dir`.
fn lay_out(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    for (p, b) in files {
        let at = dir.join(p);
        std::fs::create_dir_all(at.parent().ok_or("a parent")?)?;
        std::fs::write(at, b)?;
    }
    Ok(())
}

/// Each `removed[]` element of the report `doc`: its path, with `prefix`
/// taken off, and its `library`, `gpu` and `why`; checks its bytes.
fn removed_of(
    doc: &Value,
    prefix: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Option<String>>, Failed> {
    let mut out = BTreeMap::new();
    for f in doc["files"].as_array().ok_or("files[]")? {
        for r in f["removed"].as_array().into_iter().flatten() {
            let path = r["path"].as_str().ok_or("a path")?;
            let rel = path
                .strip_prefix(prefix)
                .ok_or(format!("{path}: not below {prefix}"))?;
            let want = files.get(rel).map(|b| b.len() as u64);
            same(&format!("{rel}: bytes"), r["bytes"].as_u64(), want)?;
            let gpu = r["gpu"].as_str().map(str::to_string);
            match (r["library"].as_str(), &gpu, r["why"].as_str()) {
                (Some(library), Some(g), Some(why)) => {
                    let says = format!("{library} per-GPU file for {g} (");
                    if !why.starts_with(&says) || library.is_empty() {
                        return Err(format!("{rel}: why {why:?}, library {library:?}").into());
                    }
                }
                (None, None, None) => {}
                other => return Err(format!("{rel}: library, gpu, why: {other:?}").into()),
            }
            out.insert(rel.to_string(), gpu);
        }
    }
    Ok(out)
}

/// [`gone`] as [`removed_of`] gives it.
fn want_removed() -> BTreeMap<String, Option<String>> {
    gone()
        .into_iter()
        .map(|(p, g)| (p, g.map(str::to_string)))
        .collect()
}

/// Checks that `dir` holds `files` but the ones removed (`gone`), byte
/// for byte, and nothing else.
fn holds(
    what: &str,
    dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
    gone: &[&str],
) -> Result<(), Failed> {
    let want: BTreeMap<String, String> = files
        .iter()
        .filter(|(p, _)| !gone.contains(&p.as_str()))
        .map(|(p, b)| (p.clone(), md5_hex(b)))
        .collect();
    let now: BTreeMap<String, String> = files_md5(dir);
    same(&format!("{what}: the files left (MD5)"), now, want)
}

fn files_md5(dir: &Path) -> BTreeMap<String, String> {
    files(dir)
        .into_iter()
        .map(|(p, b)| (p, md5_hex(&b)))
        .collect()
}

/// Our binary with `args` in `d`, `--json` added: the exit code and the
/// report.
fn json(d: &Path, args: &[&str]) -> Result<(i32, Value), Failed> {
    let r = run(&ours(), &[args, &["--json"]].concat(), d);
    let doc = serde_json::from_slice(&r.stdout)
        .map_err(|e| format!("{args:?}: exit {}, bad JSON ({e}): {}", r.code, r.stderr))?;
    Ok((r.code, doc))
}

fn a_tree_in_place_and_in_a_dry_run() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    for copy in ["a", "b", "c"] {
        lay_out(&d.join(copy).join("opt/rocm"), &files)?;
    }
    let gone: Vec<String> = gone().into_keys().collect();
    let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
    // A dry run and a run in place: the same files, GPUs and libraries,
    // the same totals and the same directories.
    let (code, dry) = json(d, &["prune", "--keep", "gfx90a", "--dry-run", "a"])?;
    same("--dry-run: exit code", code, 0)?;
    holds("--dry-run", &d.join("a/opt/rocm"), &files, &[])?;
    let (code, real) = json(d, &["prune", "--keep", "gfx90a", "--in-place", "a"])?;
    same("--in-place: exit code", code, 0)?;
    for doc in [&dry, &real] {
        same(
            "removed[]",
            removed_of(doc, "a/opt/rocm/", &files)?,
            want_removed(),
        )?;
        let dirs: Vec<String> = EMPTIED.iter().map(|e| format!("a/opt/rocm/{e}")).collect();
        same(
            "directories_removed",
            &doc["directories_removed"],
            &Value::from(dirs),
        )?;
    }
    for key in ["files_removed", "bytes_removed", "freed"] {
        same(key, &dry["total"][key], &real["total"][key])?;
    }
    let bytes: usize = gone.iter().map(|g| files[*g].len()).sum();
    same(
        "bytes_removed",
        real["total"]["bytes_removed"].as_u64(),
        Some(bytes as u64),
    )?;
    same(
        "files_removed",
        real["total"]["files_removed"].as_u64(),
        Some(gone.len() as u64),
    )?;
    holds("--in-place", &d.join("a/opt/rocm"), &files, &gone)?;
    for e in EMPTIED {
        if d.join("a/opt/rocm").join(e).exists() {
            return Err(format!("{e} is still there").into());
        }
    }
    text_lines(d, &files)?;
    // A mode rule drops the other mode's file too.
    run(
        &ours(),
        &["prune", "--keep", "gfx90a:xnack-", "--in-place", "c"],
        d,
    )
    .ok()?;
    let mut also = gone.clone();
    also.push(XNACK_PLUS);
    holds("--keep gfx90a:xnack-", &d.join("c/opt/rocm"), &files, &also)
}

/// The text report of the copy `b`, in a dry run and in place: a line
/// per file removed naming its library and GPU, one per directory.
fn text_lines(d: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    for (flag, removed, freed) in [
        ("--dry-run", "would be removed", "would free"),
        ("--in-place", "removed", "freed"),
    ] {
        let r = run(&ours(), &["prune", "--keep", "gfx90a", flag, "b"], d).ok()?;
        let out = String::from_utf8(r.stdout)?;
        let lines: Vec<&str> = out.lines().collect();
        for (path, gpu) in gone() {
            let bytes = files[&path].len();
            let head = format!("b/opt/rocm/{path}: {removed}: ");
            let tail = format!(", {freed} {bytes} bytes");
            let line = lines
                .iter()
                .find(|l| l.starts_with(&head))
                .ok_or(format!("{flag}: no line for {path}:\n{out}"))?;
            let says = match gpu {
                Some(g) => format!(" per-GPU file for {g} ("),
                None => "device code alone that the rules drop all of".to_string(),
            };
            let library = ["Tensile", "MIOpen"].iter().any(|l| line.contains(l));
            if !line.ends_with(&tail) || !line.contains(&says) || library != gpu.is_some() {
                return Err(format!("{flag}: {line}").into());
            }
        }
        let total = format!("({} file(s) {removed} whole: ", gone().len());
        if !lines
            .iter()
            .any(|l| l.starts_with("total: ") && l.contains(&total))
        {
            return Err(format!("{flag}: no total with {total:?}:\n{out}").into());
        }
        for e in EMPTIED {
            let line = format!("b/opt/rocm/{e}/: directory {removed}: the run emptied it");
            if !lines.contains(&line.as_str()) {
                return Err(format!("{flag}: no line {line:?}:\n{out}").into());
            }
        }
    }
    Ok(())
}

/// The package's own file.
const INIT: &str = "pkg/__init__.py";

/// A RECORD row: `path,sha256=HASH,size`.
fn row(path: &str, bytes: &[u8]) -> String {
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes));
    format!("{path},sha256={sha},{}", bytes.len())
}

/// The wheel's files: the install below `pkg/` with an `__init__.py`
/// (without a file of its own in `pkg/`, `pip uninstall` leaves `pkg/`
/// and the directories between it and the directories holding files,
/// empty, whatever prune did), and its metadata.
fn wheel_files(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    let mut out: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(p, b)| (format!("pkg/{p}"), b.clone()))
        .collect();
    out.insert(INIT.into(), b"# the package\n".to_vec());
    out.insert(
        "pkg-1.0.dist-info/METADATA".into(),
        b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n".to_vec(),
    );
    out.insert(
        "pkg-1.0.dist-info/WHEEL".into(),
        b"Wheel-Version: 1.0\nGenerator: offload-kit-tests\nRoot-Is-Purelib: false\nTag: py3-none-any\n"
            .to_vec(),
    );
    out
}

/// Writes the wheel of `files` (with a directory entry for each
/// directory, per-GPU ones among them) and its RECORD.
fn write_wheel(path: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path)?);
    let o = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut dirs = std::collections::BTreeSet::new();
    let mut record = String::new();
    for (p, b) in files {
        for (i, _) in p.match_indices('/') {
            if dirs.insert(p[..=i].to_string()) {
                z.add_directory(&p[..=i], o)?;
            }
        }
        z.start_file(p.as_str(), o)?;
        z.write_all(b)?;
        record += &(row(p, b) + "\n");
    }
    record += "pkg-1.0.dist-info/RECORD,,\n";
    z.start_file("pkg-1.0.dist-info/RECORD", o)?;
    z.write_all(record.as_bytes())?;
    z.finish()?;
    Ok(())
}

/// The members of a wheel, directories (`…/`) with no bytes.
fn members(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path)?)?;
    let mut out = BTreeMap::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i)?;
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut b)?;
        out.insert(f.name()?.into_owned(), b);
    }
    Ok(out)
}

fn a_wheel_pip_installs_and_uninstalls() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let whl = "pkg-1.0-py3-none-any.whl";
    let all = wheel_files(&files);
    write_wheel(&d.join(whl), &all)?;
    let (code, doc) = json(d, &["prune", "--keep", "gfx90a", "-d", "out", whl])?;
    same("-d: exit code", code, 0)?;
    same(
        "removed[]",
        removed_of(&doc, &format!("{whl}!/pkg/"), &files)?,
        want_removed(),
    )?;
    // The members left: all but the files removed and gfx906's
    // directories; RECORD gives each file its hash and size.
    let before = members(&d.join(whl))?;
    let now = members(&d.join("out").join(whl))?;
    let want: Vec<&String> = before
        .keys()
        .filter(|m| {
            let rel = m.trim_start_matches("pkg/");
            !gone().contains_key(rel) && !m.contains("/gfx906/")
        })
        .collect();
    same("the wheel's members", now.keys().collect::<Vec<_>>(), want)?;
    let mut rows: Vec<String> = now
        .iter()
        .filter(|(m, _)| !m.ends_with('/') && *m != "pkg-1.0.dist-info/RECORD")
        .map(|(m, b)| row(m, b))
        .collect();
    rows.push("pkg-1.0.dist-info/RECORD,,".into());
    let mut record: Vec<String> = String::from_utf8(now["pkg-1.0.dist-info/RECORD"].clone())?
        .lines()
        .map(str::to_string)
        .collect();
    rows.sort();
    record.sort();
    same("RECORD", record, rows)?;
    pip_round_trips(d, whl, &files)
}

/// Into one venv: the pruned wheel installed and uninstalled; the
/// original installed, pruned there in place, and uninstalled. Each
/// `pip uninstall` warns of nothing and leaves no file of the package.
fn pip_round_trips(d: &Path, whl: &str, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    run(Path::new("/usr/bin/python3"), &["-m", "venv", "venv"], d).ok()?;
    let pip = d.join("venv/bin/pip");
    let quiet = [
        "--disable-pip-version-check",
        "-q",
        "install",
        "--no-compile",
        "--no-index",
        "--no-deps",
    ];
    let site = |d: &Path| -> Result<std::path::PathBuf, Failed> {
        let lib = std::fs::read_dir(d.join("venv/lib"))?
            .next()
            .ok_or("venv/lib")??;
        Ok(lib.path().join("site-packages"))
    };
    let gone: Vec<String> = gone().into_keys().collect();
    let gone: Vec<&str> = gone.iter().map(String::as_str).collect();
    for (what, wheel) in [
        ("the pruned wheel", format!("out/{whl}")),
        ("in the venv", whl.to_string()),
    ] {
        run(&pip, &[&quiet[..], &[wheel.as_str()]].concat(), d).ok()?;
        if what == "in the venv" {
            let (code, doc) = json(d, &["prune", "--keep", "gfx90a", "--in-place", "venv"])?;
            same("venv: exit code", code, 0)?;
            same(
                "venv: records",
                doc["records"][0]["rows_removed"].as_u64(),
                Some(gone.len() as u64),
            )?;
            let dirs = doc["directories_removed"].as_array().map_or(0, Vec::len);
            same("venv: directories removed", dirs, EMPTIED.len())?;
        }
        let mut with_init = files.clone();
        with_init.insert("__init__.py".into(), b"# the package\n".to_vec());
        holds(what, &site(d)?.join("pkg"), &with_init, &gone)?;
        let r = run(
            &pip,
            &["--disable-pip-version-check", "uninstall", "-y", "pkg"],
            d,
        )
        .ok()?;
        let out = String::from_utf8_lossy(&r.stdout);
        if !r.stderr.is_empty() || !out.contains("Successfully uninstalled pkg-1.0") {
            return Err(format!("{what}: pip uninstall: {out}{}", r.stderr).into());
        }
        let left: Vec<String> = walkdir::WalkDir::new(site(d)?)
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.path().to_string_lossy().into_owned())
            .filter(|p| p.contains("/pkg/") || p.ends_with("/pkg") || p.contains("pkg-1.0"))
            .collect();
        same(
            &format!("{what}: left after pip uninstall"),
            left,
            Vec::new(),
        )?;
    }
    Ok(())
}

/// The conffile, by MIOpen's convention under `/etc`.
const CONFFILE: &str = "etc/miopen/db/gfx906_60.db.txt";

/// Builds `k.deb` by `dpkg-deb -b` from the install under `opt/rocm`,
/// and the conffile, with `md5sums` and `conffiles`: the files of its
/// tree, by path below the root.
fn build_deb(
    d: &Path,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let mut tree: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(p, b)| (format!("opt/rocm/{p}"), b.clone()))
        .collect();
    tree.insert(CONFFILE.into(), b"# the tuning of gfx906\n".repeat(4));
    lay_out(&d.join("root"), &tree)?;
    let sums: String = tree
        .iter()
        .map(|(p, b)| format!("{}  {p}\n", md5_hex(b)))
        .collect();
    let debian = d.join("root/DEBIAN");
    std::fs::create_dir_all(&debian)?;
    let control =
        "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@k>\nDescription: k\n";
    std::fs::write(debian.join("control"), control)?;
    std::fs::write(debian.join("md5sums"), sums)?;
    std::fs::write(debian.join("conffiles"), format!("/{CONFFILE}\n"))?;
    run(
        Path::new("/usr/bin/dpkg-deb"),
        &["--root-owner-group", "-b", "root", "k.deb"],
        d,
    )
    .ok()?;
    Ok(tree)
}

fn a_deb_dpkg_installs_and_verifies() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let files = build(d)?;
    let tree = build_deb(d, &files)?;
    let deb_gone: Vec<String> = gone()
        .into_keys()
        .map(|p| format!("opt/rocm/{p}"))
        .collect();
    let deb_gone: Vec<&str> = deb_gone.iter().map(String::as_str).collect();
    // The conffile is refused (exit 1) and the package written all the same.
    let (code, dry) = json(d, &["prune", "--keep", "gfx90a", "--dry-run", "k.deb"])?;
    same("--dry-run: exit code", code, 1)?;
    let (code, doc) = json(d, &["prune", "--keep", "gfx90a", "-o", "slim.deb", "k.deb"])?;
    same("-o: exit code", code, 1)?;
    for doc in [&dry, &doc] {
        same(
            "removed[]",
            removed_of(doc, "k.deb!/opt/rocm/", &files)?,
            want_removed(),
        )?;
        let refused = &doc["files"][0]["members_refused"];
        let said = refused[0].as_str().unwrap_or_default();
        if refused.as_array().map(Vec::len) != Some(1)
            || !said.starts_with(&format!("'k.deb!/{CONFFILE}': "))
            || !said.contains("conffile")
        {
            return Err(format!("members_refused: {refused}").into());
        }
    }
    for key in ["files_removed", "bytes_removed"] {
        same(key, &dry["total"][key], &doc["total"][key])?;
    }
    let dpkg_deb = Path::new("/usr/bin/dpkg-deb");
    let listing = String::from_utf8(run(dpkg_deb, &["-c", "slim.deb"], d).ok()?.stdout)?;
    for p in tree.keys() {
        let listed = listing.lines().any(|l| l.ends_with(&format!(" ./{p}")));
        if listed == deb_gone.contains(&p.as_str()) {
            return Err(format!("dpkg-deb -c lists {p}: {listed}\n{listing}").into());
        }
    }
    if listing.contains("/gfx906/") {
        return Err(format!("dpkg-deb -c lists gfx906's directory:\n{listing}").into());
    }
    run(dpkg_deb, &["-x", "slim.deb", "x"], d).ok()?;
    run(dpkg_deb, &["-e", "slim.deb", "x/DEBIAN"], d).ok()?;
    let sums = std::fs::read_to_string(d.join("x/DEBIAN/md5sums"))?;
    same(
        "md5sums lines",
        sums.lines().count(),
        tree.len() - deb_gone.len(),
    )?;
    for line in sums.lines() {
        let (md5, path) = line.split_once("  ").ok_or("a line of md5sums")?;
        let bytes = std::fs::read(d.join("x").join(path))?;
        same(&format!("md5sums: {path}"), md5, md5_hex(&bytes).as_str())?;
    }
    same(
        "conffiles",
        std::fs::read_to_string(d.join("x/DEBIAN/conffiles"))?,
        format!("/{CONFFILE}\n"),
    )?;
    std::fs::remove_dir_all(d.join("x/DEBIAN"))?;
    holds("dpkg-deb -x", &d.join("x"), &tree, &deb_gone)?;
    installs(d, &tree, &deb_gone)?;
    deb_text(d, &files)?;
    // A mode rule drops the xnack+ file, not the xnack- one.
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a:xnack-", "-o", "x.deb", "k.deb"],
        d,
    );
    same("gfx90a:xnack-: exit code", r.code, 1)?;
    let listing = String::from_utf8(run(dpkg_deb, &["-c", "x.deb"], d).ok()?.stdout)?;
    let has = |name: &str| {
        listing
            .lines()
            .any(|l| l.ends_with(&format!(" ./opt/rocm/{name}")))
    };
    same("gfx90a:xnack-: xnack+ listed", has(XNACK_PLUS), false)?;
    same(
        "gfx90a:xnack-: xnack- listed",
        has("lib/hipblaslt/library/Kernels.so-000-gfx90a-xnack-.hsaco"),
        true,
    )
}

/// `slim.deb` installed into a scratch root: the files of `tree` but
/// `gone`, and `dpkg --verify` silent.
fn installs(d: &Path, tree: &BTreeMap<String, Vec<u8>>, gone: &[&str]) -> Result<(), Failed> {
    scratch_root(d, "sys")?;
    dpkg(d, "sys", &["--force-depends", "-i", "slim.deb"])?.ok()?;
    let mut installed = files_md5(&d.join("sys"));
    installed.retain(|p, _| !p.starts_with("var/") && p != "dpkg.log");
    let want: BTreeMap<String, String> = tree
        .iter()
        .filter(|(p, _)| !gone.contains(&p.as_str()))
        .map(|(p, b)| (p.clone(), md5_hex(b)))
        .collect();
    same("the files installed (MD5)", installed, want)?;
    let verify = dpkg(d, "sys", &["--verify", "k"])?.ok()?;
    same(
        "dpkg --verify",
        String::from_utf8_lossy(&verify.stdout).into_owned(),
        String::new(),
    )
}

/// The text report of `k.deb` pruned, in a dry run and with `-o`: the
/// package's line, a line per file removed naming its library and GPU,
/// and the conffile's refusal.
fn deb_text(d: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), Failed> {
    for (flag, removed, freed) in [
        ("--dry-run", "would be removed", "would free"),
        ("-o", "removed", "freed"),
    ] {
        let mut args = vec!["prune", "--keep", "gfx90a", flag];
        if flag == "-o" {
            args.push("t.deb");
        }
        args.push("k.deb");
        let r = run(&ours(), &args, d);
        same(&format!("{flag}: exit code"), r.code, 1)?;
        let out = String::from_utf8(r.stdout)?;
        let lines: Vec<&str> = out.lines().collect();
        let head = format!("k.deb: {} file(s) {removed}, {freed} ", gone().len());
        let refusal = format!("not pruned: 'k.deb!/{CONFFILE}': ");
        if !lines.iter().any(|l| l.starts_with(&head))
            || !lines
                .iter()
                .any(|l| l.starts_with(&refusal) && l.contains("conffile"))
        {
            return Err(format!("{flag}: no {head:?} or {refusal:?}:\n{out}").into());
        }
        for (path, gpu) in gone() {
            let line = format!(
                "  {removed}  k.deb!/opt/rocm/{path} ({} bytes)",
                files[&path].len()
            );
            let says = gpu.map(|g| format!(": {} per-GPU file for {g} (", library(&path)));
            let found = lines.iter().any(|l| match &says {
                Some(says) => l.starts_with(&line) && l[line.len()..].starts_with(says.as_str()),
                None => *l == line,
            });
            if !found {
                return Err(format!("{flag}: no line {line:?} {says:?}:\n{out}").into());
            }
        }
    }
    Ok(())
}

/// The library a file of [`NAMED`] belongs to, as the report names it.
fn library(path: &str) -> &'static str {
    match path {
        p if p.starts_with("share/miopen/") => "MIOpen",
        p if p.contains("/library/gfx") => "hipBLASLt/hipSPARSELt (TensileLite)",
        _ => "rocBLAS/hipBLASLt/hipSPARSELt (Tensile)",
    }
}
