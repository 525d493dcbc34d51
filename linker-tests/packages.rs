//! The scanners inside packages (issue #15): shared libraries with device
//! code built by clang-22 (HIP with a compressed bundle, OpenMP for two
//! GPUs) are packed by the system's own tools — Info-ZIP's `zip` (a wheel,
//! deflated and stored), GNU tar with gzip, xz and zstd, `dpkg-deb` (a
//! `.deb`), and a conda package (a zip holding a `.tar.zst`) — and
//! `inspect`, `extract`, `check` and `size` must find in each package what
//! they find in the loose files: the same images with the same hashes, and
//! extracted files with the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::scan::built;
use crate::util::{llvm, ours, run, run_stdin, same, tempdir};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "zip", "tar", "gzip", "xz", "zstd", "dpkg-deb"];

pub fn tests() -> Vec<Trial> {
        vec![
        trial!(same_images_as_loose_files, TOOLS),
        trial!(extract_gives_the_same_bytes, TOOLS),
        trial!(standard_input, TOOLS),
        trial!(large_standard_input_is_spooled, TOOLS),
        trial!(corrupt_packages_are_input_errors, TOOLS),
        trial!(member_names_cannot_leave_the_directory, TOOLS),
        trial!(list_and_unpack_point_to_inspect_and_extract, TOOLS),
    ]
}

/// Fails unless `prog args` (in `dir`) exits 0.
fn must(prog: &Path, args: &[&str], dir: &Path) -> Result<(), Failed> {
    crate::scan::sh(dir, prog, args).map_err(Failed::from)
}

/// `sh -c SCRIPT` in `dir`.
fn shell(script: &str, dir: &Path) -> Result<(), Failed> {
    must(Path::new("/bin/sh"), &["-c", script], dir)
}

/// The loose files, below `dir/root`: `usr/lib/libhipk.so` (HIP, a
/// compressed bundle for gfx90a and gfx1030), `usr/lib/libompk.so`
/// (OpenMP for gfx90a and gfx1030) and a text file.
pub(crate) fn loose_files(dir: &Path) -> Result<(), Failed> {
    let b = built()?;
    let lib = dir.join("root/usr/lib");
    std::fs::create_dir_all(&lib)?;
    let clang = llvm("clang");
    let hip = b.dir.join("k.hip");
    let omp = b.dir.join("omp.c");
    // Where scan.rs links libomptarget from.
    let search = format!("-L{}", b.dir.join("lib").display());
    must(
        &clang,
        &[
            "-x",
            "hip",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1030",
            "-nogpulib",
            "-nogpuinc",
            "--offload-compress",
            "--hip-link",
            "-no-hip-rt",
            "-fPIC",
            "-shared",
            "-Wl,--unresolved-symbols=ignore-all",
            &hip.to_string_lossy(),
            "-o",
            "root/usr/lib/libhipk.so",
        ],
        dir,
    )?;
    must(
        &clang,
        &[
            "-O2",
            "-fopenmp",
            "--offload-arch=gfx90a,gfx1030",
            "-nogpulib",
            "-fPIC",
            "-shared",
            "-Xoffload-linker",
            "--unresolved-symbols=ignore-all",
            &search,
            &omp.to_string_lossy(),
            "-o",
            "root/usr/lib/libompk.so",
        ],
        dir,
    )?;
    std::fs::write(lib.join("README.txt"), "no device code here\n")?;
    Ok(())
}

/// The packages made from `dir/root`, by name.
const PACKAGES: &[&str] = &[
    "pkg-1.0-py3-none-any.whl",
    "stored.zip",
    "pkg.tar",
    "pkg.tar.gz",
    "pkg.tar.xz",
    "pkg.tar.zst",
    "pkg.deb",
    "pkg-1.0-0.conda",
];

/// Builds the loose files and every package of [`PACKAGES`] in `dir`.
fn packages(dir: &Path) -> Result<(), Failed> {
    loose_files(dir)?;
    shell(
        "cd root && zip -q -r ../pkg-1.0-py3-none-any.whl usr && zip -q -0 -r ../stored.zip usr \
         && tar -cf ../pkg.tar usr && tar -czf ../pkg.tar.gz usr && tar -cJf ../pkg.tar.xz usr \
         && tar --zstd -cf ../pkg.tar.zst usr",
        dir,
    )?;
    // A Debian package: the files under root, a control file aside.
    std::fs::create_dir_all(dir.join("deb/DEBIAN"))?;
    std::fs::write(
        dir.join("deb/DEBIAN/control"),
        "Package: pkg\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n",
    )?;
    shell(
        "cp -r root/usr deb/ && dpkg-deb -Zxz --root-owner-group --build deb pkg.deb >/dev/null",
        dir,
    )?;
    // A conda package (format 2): a zip holding zstd tar archives.
    shell(
        "mkdir -p conda && cd conda && echo '{\"conda_pkg_format_version\": 2}' > metadata.json \
         && tar -C ../root --zstd -cf pkg-pkg-1.0-0.tar.zst usr \
         && tar --zstd -cf info-pkg-1.0-0.tar.zst metadata.json \
         && zip -q -0 ../pkg-1.0-0.conda metadata.json info-pkg-1.0-0.tar.zst pkg-pkg-1.0-0.tar.zst",
        dir,
    )
}

/// The packages, built once for all trials (in a directory kept until the
/// process ends).
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(packages))
}

/// `inspect --json --hash` of `paths`.
fn inspect(dir: &Path, paths: &[&str]) -> Result<Value, Failed> {
    let mut a = vec!["inspect", "--json", "--hash"];
    a.extend(paths);
    let r = run(&ours(), &a, dir).ok()?;
    serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}").into())
}

/// The images of an inspect document's files, by the file's name after
/// its last `/` (a loose file's, or a package member's): each image's
/// triple, target, kind and hash.
fn images_by_file(doc: &Value) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for f in doc["files"].as_array().into_iter().flatten() {
        let path = f["path"].as_str().unwrap_or_default();
        let name = path.rsplit('/').next().unwrap_or(path).to_string();
        let mut imgs: Vec<String> = f["images"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                format!(
                    "{} {} {} {} {}",
                    i["offload_kind"], i["triple"], i["target_id"], i["image_kind"], i["hash"]
                )
            })
            .collect();
        imgs.sort();
        if !imgs.is_empty() {
            out.insert(name, imgs);
        }
    }
    out
}

/// Every package shows the loose libraries' images, with the same hashes,
/// under `package!/path` names; files without device code are left out.
fn same_images_as_loose_files() -> Result<(), Failed> {
    let d = fixture()?;
    let loose = inspect(d, &["root/usr/lib/libhipk.so", "root/usr/lib/libompk.so"])?;
    let want = images_by_file(&loose);
    if want.len() != 2 || want.values().any(|v| v.len() < 2) {
        return Err(format!("the loose libraries: {want:?}").into());
    }
    for p in PACKAGES {
        let doc = inspect(d, &[p])?;
        same(&format!("{p}: images"), images_by_file(&doc), want.clone())?;
        let paths: Vec<&str> = doc["files"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["path"].as_str())
            .collect();
        let prefix = if *p == "pkg.deb" {
            format!("{p}!/usr/lib/")
        } else if *p == "pkg-1.0-0.conda" {
            format!("{p}!/pkg-pkg-1.0-0.tar.zst!/usr/lib/")
        } else {
            format!("{p}!/usr/lib/")
        };
        same(
            &format!("{p}: paths"),
            paths,
            vec![
                &*format!("{prefix}libhipk.so"),
                &*format!("{prefix}libompk.so"),
            ],
        )?;
        // check and size look inside too.
        let r = run(&ours(), &["check", "--require", "gfx1030:object", p], d);
        same(&format!("{p}: check exit ({})", r.stderr), r.code, 0)?;
        let r = run(&ours(), &["check", "--require", "gfx942", p], d);
        same(&format!("{p}: failed check exit"), r.code, 1)?;
        let r = run(&ours(), &["size", p], d).ok()?;
        let out = String::from_utf8_lossy(&r.stdout);
        if !out.contains("libhipk.so") || out.contains("README.txt") {
            return Err(format!("{p}: size:\n{out}").into());
        }
    }
    // --all shows the member without device code too.
    let r = run(&ours(), &["inspect", "--all", "pkg.tar.xz"], d).ok()?;
    if !String::from_utf8_lossy(&r.stdout).contains("pkg.tar.xz!/usr/lib/README.txt") {
        return Err("inspect --all: no README.txt".into());
    }
    Ok(())
}

/// The files `extract` writes in `out`, by contents (names differ by the
/// input's label).
pub(crate) fn extracted(out: &Path) -> Result<Vec<Vec<u8>>, Failed> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(out)? {
        v.push(std::fs::read(e?.path())?);
    }
    v.sort();
    Ok(v)
}

/// `extract` from every package writes the files it writes from the loose
/// libraries, byte for byte (the compressed bundle's entries decompressed).
fn extract_gives_the_same_bytes() -> Result<(), Failed> {
    let d = fixture()?;
    must(
        &ours(),
        &[
            "extract",
            "root/usr/lib/libhipk.so",
            "root/usr/lib/libompk.so",
            "-o",
            "loose",
        ],
        d,
    )?;
    let want = extracted(&d.join("loose"))?;
    if want.len() < 4 {
        return Err(format!("{} files from the loose libraries", want.len()).into());
    }
    for p in PACKAGES {
        let out = format!("out-{p}");
        must(&ours(), &["extract", p, "-o", &out], d)?;
        let got = extracted(&d.join(&out))?;
        if got != want {
            return Err(format!(
                "{p}: {} files extracted, not the loose ones' {}",
                got.len(),
                want.len()
            )
            .into());
        }
        // Named after the package and the member.
        let names: Vec<String> = std::fs::read_dir(d.join(&out))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if !names.iter().any(|n| n.contains("usr_lib_libhipk.so.")) {
            return Err(format!("{p}: names {names:?}").into());
        }
    }
    Ok(())
}

/// A package through a pipe is read as from its path.
fn standard_input() -> Result<(), Failed> {
    let d = fixture()?;
    for p in ["pkg-1.0-py3-none-any.whl", "pkg.tar.zst", "pkg.deb"] {
        let by_path = images_by_file(&inspect(d, &[p])?);
        let data = std::fs::read(d.join(p))?;
        let r = run_stdin(&ours(), &["inspect", "--json", "--hash", "-"], d, &data).ok()?;
        let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| e.to_string())?;
        same(
            &format!("{p} through a pipe"),
            images_by_file(&doc),
            by_path,
        )?;
    }
    Ok(())
}

/// A large input on standard input (a HIP library given a 200 MiB
/// section) is spooled to a temporary file, not held in memory: through a
/// pipe, `inspect` finds what it finds in the file, at well under the
/// input's size of memory; redirected from the file (`< FILE`), the file
/// is read in place.
fn large_standard_input_is_spooled() -> Result<(), Failed> {
    let d = fixture()?;
    std::fs::write(d.join("zeros.bin"), vec![0u8; 200 << 20])?;
    let objcopy = llvm("llvm-objcopy");
    must(
        &objcopy,
        &[
            "--add-section=.filler=zeros.bin",
            "root/usr/lib/libhipk.so",
            "big.so",
        ],
        d,
    )?;
    std::fs::remove_file(d.join("zeros.bin"))?;
    let by_path = images_by_file(&inspect(d, &["big.so"])?);
    if by_path.values().all(Vec::is_empty) {
        return Err("big.so: no images found".into());
    }
    for (how, script) in [
        ("a pipe", "cat big.so | \"$0\" inspect --json --hash -"),
        ("a redirection", "\"$0\" inspect --json --hash - < big.so"),
    ] {
        let ours = ours();
        let (r, kib) = crate::util::peak_of(
            120,
            Path::new("/bin/sh"),
            &["-c", script, &ours.to_string_lossy()],
            &[],
            d,
        )?;
        let r = r.ok()?;
        let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| e.to_string())?;
        let got: Vec<Vec<String>> = images_by_file(&doc).into_values().collect();
        let want: Vec<Vec<String>> = by_path.values().cloned().collect();
        same(&format!("big.so through {how}"), got, want)?;
        // 64 MiB read before spooling, and the program itself.
        if kib > 120 << 10 {
            return Err(format!("big.so through {how}: {kib} KiB resident").into());
        }
    }
    std::fs::remove_file(d.join("big.so"))?;
    Ok(())
}

/// A truncated or corrupt package is an input error (exit 2, one line
/// naming it), for `check` too; the other inputs are still reported.
fn corrupt_packages_are_input_errors() -> Result<(), Failed> {
    let d = fixture()?;
    for (p, cut) in [
        ("pkg.tar.zst", "cut.tar.zst"),
        ("pkg.tar.xz", "cut.tar.xz"),
        ("pkg.tar.gz", "cut.tar.gz"),
        ("pkg-1.0-py3-none-any.whl", "cut.whl"),
    ] {
        let data = std::fs::read(d.join(p))?;
        std::fs::write(d.join(cut), &data[..data.len() / 2])?;
        let r = run(&ours(), &["inspect", cut, "root/usr/lib/libompk.so"], d);
        same(&format!("{cut}: inspect exit"), r.code, 2)?;
        let errors: Vec<&str> = r
            .stderr
            .lines()
            .filter(|l| l.starts_with("error:"))
            .collect();
        if errors.len() != 1 || !errors[0].contains(cut) {
            return Err(format!("{cut}: want one error line naming it:\n{}", r.stderr).into());
        }
        if !String::from_utf8_lossy(&r.stdout).contains("libompk.so") {
            return Err(format!("{cut}: the good input is not reported").into());
        }
        let r = run(&ours(), &["check", "--require", "gfx90a", cut], d);
        same(&format!("{cut}: check exit"), r.code, 2)?;
    }
    Ok(())
}

/// Members named `../x` or `/abs` are written inside the output directory
/// only, under sanitized names.
fn member_names_cannot_leave_the_directory() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    loose_files(d)?;
    // Member names that climb out or are absolute (tar's --transform and
    // -P keep them as given).
    shell(
        "cd root/usr/lib && tar --transform 's,^,../../,' -P -cf ../../../evil.tar libompk.so \
         && tar --transform 's,^,/etc/,' -P -cf ../../../abs.tar libompk.so",
        d,
    )?;
    for p in ["evil.tar", "abs.tar"] {
        let out = d.join("out").join(p);
        std::fs::create_dir_all(&out)?;
        must(&ours(), &["extract", p, "-o", &out.to_string_lossy()], d)?;
        let n = std::fs::read_dir(&out)?.count();
        if n < 2 {
            return Err(format!("{p}: {n} files written").into());
        }
    }
    // Nothing was written outside out/.
    for e in std::fs::read_dir(d)? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if !["root", "out", "evil.tar", "abs.tar"].contains(&name.as_str()) {
            return Err(format!("written outside the output directory: {name}").into());
        }
    }
    Ok(())
}

/// `list` and `unpack` read one container file; given a package they say
/// which command looks inside it and write nothing (`unpack` exits 1, as
/// for other files it cannot handle; `list` 2, its input error).
fn list_and_unpack_point_to_inspect_and_extract() -> Result<(), Failed> {
    let d = fixture()?;
    for p in ["pkg-1.0-py3-none-any.whl", "pkg.tar.zst", "pkg.deb"] {
        let r = run(&ours(), &["list", p], d);
        same(&format!("{p}: list exit"), r.code, 2)?;
        if !r.stderr.contains("offload-kit inspect") || !r.stdout.is_empty() {
            return Err(format!("{p}: list: {}", r.stderr).into());
        }
        let out = d.join(format!("unpacked-{p}"));
        let r = run(&ours(), &["unpack", p, "-o", &out.to_string_lossy()], d);
        same(&format!("{p}: unpack exit"), r.code, 1)?;
        if !r.stderr.contains("offload-kit extract") || out.exists() {
            return Err(format!("{p}: unpack: {}", r.stderr).into());
        }
    }
    Ok(())
}
