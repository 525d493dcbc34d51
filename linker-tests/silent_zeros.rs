//! No silent zeros (issue #57): NVIDIA's libnvjpeg packed every way a
//! user meets it — a conda package in both formats (`.conda`, `.tar.bz2`),
//! the library compressed alone (`.so.gz`, `.xz`, `.zst`, `.bz2`,
//! `.lzma`), a `.tar.lzma`, cpio archives (`newc`, and `odc` gzipped), a
//! wheel inside a wheel, wheels whose member is bzip2- or LZMA-compressed
//! — by the system's own tools (tar, gzip, xz, zstd, bzip2, lzma, cpio,
//! Info-ZIP's zip, Python's zipfile). Each must list
//! the images the library lists alone, fail a gate that forbids one of its
//! archs, and be pruned or refused by name: never "nothing to remove".
//! Before this, each read as holding no device code, or prune said
//! "nothing to remove" over it.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{clean_failure_code, ours, run, same, tempdir};

/// The library, as `scripts/cuda-tools.sh` unpacks it.
const NVJPEG: &str = "/opt/offload-kit/cuda-tools/lib/libnvjpeg.so.12";

/// The tools the trials run.
const TOOLS: &[&str] = &[
    NVJPEG,
    "tar",
    "gzip",
    "xz",
    "zstd",
    "bzip2",
    "lzma",
    "zip",
    "cpio",
    "/usr/bin/python3",
];

pub fn tests() -> Vec<Trial> {
        vec![
        trial!(every_package_lists_the_library_s_images, TOOLS),
        trial!(every_package_fails_a_forbidding_gate, TOOLS),
        trial!(prune_refuses_each_by_name, TOOLS),
        trial!(prune_in_a_tree_refuses_and_counts, TOOLS),
        trial!(a_package_without_dropped_code_is_read_through, TOOLS),
    ]
}

/// Every package made, and the path of the library inside it as the
/// scanners name it.
const PACKAGES: &[(&str, &str)] = &[
    (
        "cuda-1.0-0.conda",
        "cuda-1.0-0.conda!/pkg-cuda-1.0-0.tar.zst!/lib/libnvjpeg.so.12",
    ),
    (
        "cuda-1.0-0.tar.bz2",
        "cuda-1.0-0.tar.bz2!/lib/libnvjpeg.so.12",
    ),
    ("libnvjpeg.so.12.gz", "libnvjpeg.so.12.gz!/libnvjpeg.so.12"),
    ("libnvjpeg.so.12.xz", "libnvjpeg.so.12.xz!/libnvjpeg.so.12"),
    (
        "libnvjpeg.so.12.zst",
        "libnvjpeg.so.12.zst!/libnvjpeg.so.12",
    ),
    (
        "libnvjpeg.so.12.bz2",
        "libnvjpeg.so.12.bz2!/libnvjpeg.so.12",
    ),
    (
        "libnvjpeg.so.12.lzma",
        "libnvjpeg.so.12.lzma!/libnvjpeg.so.12",
    ),
    ("pkg.tar.lzma", "pkg.tar.lzma!/lib/libnvjpeg.so.12"),
    ("newc.cpio", "newc.cpio!/lib/libnvjpeg.so.12"),
    ("odc.cpio.gz", "odc.cpio.gz!/odc.cpio!/lib/libnvjpeg.so.12"),
    (
        "outer-1.0-py3-none-any.whl",
        "outer-1.0-py3-none-any.whl!/inner-1.0-py3-none-any.whl!/lib/libnvjpeg.so.12",
    ),
    (
        "bzip2-1.0-py3-none-any.whl",
        "bzip2-1.0-py3-none-any.whl!/lib/libnvjpeg.so.12",
    ),
    (
        "lzma-1.0-py3-none-any.whl",
        "lzma-1.0-py3-none-any.whl!/lib/libnvjpeg.so.12",
    ),
];

/// Makes every package of [`PACKAGES`] in `dir`, from `root/lib/`.
fn make(dir: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(dir.join("root/lib"))?;
    std::fs::create_dir_all(dir.join("root/info"))?;
    std::fs::copy(NVJPEG, dir.join("root/lib/libnvjpeg.so.12"))?;
    std::fs::write(dir.join("root/info/index.json"), "{\"name\": \"cuda\"}\n")?;
    std::fs::write(dir.join("root/info/files"), "lib/libnvjpeg.so.12\n")?;
    let script = r#"
set -e
L=root/lib/libnvjpeg.so.12
# conda, format 1: a bzip2-compressed tar of info/ and the files.
tar -C root -cjf cuda-1.0-0.tar.bz2 info lib
# conda, format 2: a stored zip of metadata.json and two zstd tars.
mkdir conda
echo '{"conda_pkg_format_version": 2}' > conda/metadata.json
tar -C root --zstd -cf conda/info-cuda-1.0-0.tar.zst info
tar -C root --zstd -cf conda/pkg-cuda-1.0-0.tar.zst lib
(cd conda && zip -q -0 ../cuda-1.0-0.conda metadata.json info-cuda-1.0-0.tar.zst pkg-cuda-1.0-0.tar.zst)
# The library compressed alone.
gzip -c $L > libnvjpeg.so.12.gz
xz -T1 -c $L > libnvjpeg.so.12.xz
zstd -q -c $L > libnvjpeg.so.12.zst
bzip2 -c $L > libnvjpeg.so.12.bz2
lzma -c $L > libnvjpeg.so.12.lzma
tar -C root -cf - lib | lzma -c > pkg.tar.lzma
# cpio, as RPM payloads and initramfs images hold files.
(cd root && find lib | cpio --quiet -o -H newc) > newc.cpio
(cd root && find lib | cpio --quiet -o -H odc) | gzip -c > odc.cpio.gz
# A wheel inside a wheel, each deflated.
(cd root && zip -q -r ../inner-1.0-py3-none-any.whl lib)
zip -q outer-1.0-py3-none-any.whl inner-1.0-py3-none-any.whl
rm inner-1.0-py3-none-any.whl
# A wheel whose member is bzip2-compressed (Info-ZIP), one LZMA (Python).
(cd root && zip -q -Z bzip2 -r ../bzip2-1.0-py3-none-any.whl lib)
python3 -c '
import zipfile
with zipfile.ZipFile("lzma-1.0-py3-none-any.whl", "w", zipfile.ZIP_LZMA) as z:
    z.write("root/lib/libnvjpeg.so.12", "lib/libnvjpeg.so.12")
'
"#;
    crate::util::run(Path::new("/bin/sh"), &["-c", script], dir).ok()?;
    Ok(())
}

/// The packages, made once for all trials (in a directory kept until the
/// process ends).
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(make))
}

/// `size --json` of `path` (in `dir`): each file's path, and its images
/// by target and kind with their count and bytes.
fn sizes(dir: &Path, path: &str) -> Result<Vec<(String, String)>, Failed> {
    let r = run(&ours(), &["size", "--json", path], dir).ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    let mut out = Vec::new();
    for f in doc["files"].as_array().into_iter().flatten() {
        let name = f["path"].as_str().unwrap_or_default().to_string();
        let rows = serde_json::to_string(&f["by_target"]).unwrap_or_default();
        out.push((name, rows));
    }
    Ok(out)
}

/// `size` of each package lists the library, under its name inside, with
/// the figures of the library named alone.
fn every_package_lists_the_library_s_images() -> Result<(), Failed> {
    let d = fixture()?;
    let alone = sizes(d, "root/lib/libnvjpeg.so.12")?;
    let [(_, want)] = &alone[..] else {
        return Err(format!("the library alone: {alone:?}").into());
    };
    if !want.contains("sm_50") || !want.contains("sm_121") {
        return Err(format!("the library alone lists {want}").into());
    }
    for (p, inside) in PACKAGES {
        let got = sizes(d, p)?;
        let rows: Vec<&(String, String)> = got.iter().filter(|(_, t)| t != "{}").collect();
        same(
            &format!("{p}: size --json"),
            rows,
            vec![&(inside.to_string(), want.clone())],
        )?;
    }
    Ok(())
}

/// `check --forbid sm_50` fails on each package, naming the library in it.
fn every_package_fails_a_forbidding_gate() -> Result<(), Failed> {
    let d = fixture()?;
    for (p, inside) in PACKAGES {
        let r = run(&ours(), &["check", "--forbid", "sm_50", p], d);
        let out = String::from_utf8_lossy(&r.stdout);
        same(&format!("{p}: check exit ({})", r.stderr), r.code, 1)?;
        if !out
            .lines()
            .any(|l| l.starts_with("FAIL") && l.contains(inside))
        {
            return Err(format!("{p}: no FAIL line names {inside}:\n{out}").into());
        }
    }
    Ok(())
}

/// What prune says of each package, in words, as the refusal starts.
fn what(p: &str) -> &'static str {
    match p {
        // Pruned when they list their files' hashes; these do not.
        _ if p.ends_with(".conda") || p.ends_with(".tar.bz2") => {
            "a conda package with no info/paths.json"
        }
        "pkg.tar.lzma" => "a tar archive (LZMA-compressed)",
        "newc.cpio" => "a cpio archive",
        _ if p.ends_with(".gz") => "a gzip-compressed file",
        _ if p.ends_with(".xz") => "an xz-compressed file",
        _ if p.ends_with(".zst") => "a zstd-compressed file",
        _ if p.ends_with(".bz2") => "a bzip2-compressed file",
        _ if p.ends_with(".lzma") => "an LZMA-compressed file",
        _ => "",
    }
}

/// `prune --keep sm_80` of each package named: refused (exit 2), one
/// error line naming the package and what it is, nothing written —
/// except the wheels whose members are bzip2 and LZMA, which are pruned
/// (their library shrinks), and the wheel holding a wheel, written with
/// the wheel inside left as it was and named (exit 1) — never "nothing
/// to remove".
fn prune_refuses_each_by_name() -> Result<(), Failed> {
    let d = fixture()?;
    for (p, inside) in PACKAGES {
        let out = d.join("out");
        let _ = std::fs::remove_file(&out);
        let r = run(&ours(), &["prune", "--keep", "sm_80", "-o", "out", p], d);
        let stdout = String::from_utf8_lossy(&r.stdout);
        if stdout.contains("nothing to remove") {
            return Err(format!("{p}: prune says nothing to remove:\n{stdout}").into());
        }
        if p.starts_with("bzip2-") || p.starts_with("lzma-") {
            r.ok()?;
            let before = sizes(d, p)?;
            let after = sizes(d, "out")?;
            let inside_out = inside.replacen(p, "out", 1);
            let kept: Vec<&(String, String)> =
                after.iter().filter(|(n, _)| *n == inside_out).collect();
            if kept.len() != 1 || kept[0].1.contains("sm_50") || !kept[0].1.contains("sm_80") {
                return Err(format!("{p}: pruned, out holds {after:?} (before {before:?})").into());
            }
            continue;
        }
        if p.starts_with("outer-") {
            // The wheel inside is left as it was, named; the rest written.
            same(&format!("{p}: prune exit"), r.code, 1)?;
            let says = format!(
                "not pruned: '{p}!/inner-1.0-py3-none-any.whl': it is a zip archive inside a \
                 package holding 164 device image(s) the rules drop"
            );
            if !stdout.contains(&says) || !stdout.contains("nothing pruned: 1 file(s) in it") {
                return Err(format!("{p}: prune says {stdout:?}, want {says:?}").into());
            }
            let (before, after) = (sizes(d, p)?, sizes(d, "out")?);
            let renamed: Vec<(String, String)> = before
                .into_iter()
                .map(|(n, s)| (n.replacen(p, "out", 1), s))
                .collect();
            same(&format!("{p}: what out holds"), after, renamed)?;
            continue;
        }
        clean_failure_code(&format!("{p}: prune"), &r, p, 2)?;
        let says = if *p == "odc.cpio.gz" {
            // The cpio archive inside is what holds the images.
            format!("'{p}': it is a gzip-compressed file holding 164 device image(s)")
        } else {
            format!("'{p}': it is {}", what(p))
        };
        if !r.stderr.contains(&says) || !r.stderr.contains("device image(s) the rules drop") {
            return Err(format!("{p}: prune says {:?}, want {says:?}", r.stderr).into());
        }
        if out.exists() {
            return Err(format!("{p}: prune wrote out").into());
        }
    }
    Ok(())
}

/// In a directory, a dry run refuses each package (exit 1, as for any
/// file refused in a tree) and counts none of them "without device code".
fn prune_in_a_tree_refuses_and_counts() -> Result<(), Failed> {
    let d = fixture()?;
    let tree = tempdir();
    for (p, _) in PACKAGES {
        std::fs::copy(d.join(p), tree.path().join(p))?;
    }
    let r = run(
        &ours(),
        &["prune", "--keep", "sm_80", "--dry-run", "."],
        tree.path(),
    );
    let out = String::from_utf8_lossy(&r.stdout);
    same(&format!("tree exit ({})", r.stderr), r.code, 1)?;
    let total = out.lines().find(|l| l.starts_with("total:")).unwrap_or("");
    // The two wheels pruned; the others refused.
    let want = format!(
        "{} file(s) found in the directories, 0 without device code",
        PACKAGES.len()
    );
    let refused = format!("({} refused)", PACKAGES.len() - 2);
    if !total.contains(&want) || !total.contains(&refused) {
        return Err(format!("tree: {total:?}, want {want:?} and {refused}\n{out}").into());
    }
    Ok(())
}

/// A package holding only what the rules keep is read to its end and
/// left as it is: `--drop sm_20` removes nothing from the `.tar.bz2`, and
/// the report lists what it keeps.
fn a_package_without_dropped_code_is_read_through() -> Result<(), Failed> {
    let d = fixture()?;
    let r = run(
        &ours(),
        &[
            "prune",
            "--drop",
            "sm_20",
            "--dry-run",
            "--json",
            "cuda-1.0-0.tar.bz2",
        ],
        d,
    )
    .ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    let kept = serde_json::to_string(&doc["files"][0]["kept"]).unwrap_or_default();
    if !kept.contains("sm_50") || !kept.contains("sm_121") {
        return Err(format!("kept: {kept}").into());
    }
    Ok(())
}
