//! Pruning squashfs filesystems and SIF images (issue #73): the libraries
//! with device code that packages.rs builds with clang-22 (HIP for gfx90a
//! and gfx1030, OpenMP), Tensile per-GPU files, a symlink, a fifo, odd
//! modes, owners and times, packed by `mksquashfs` with gzip, xz, zstd,
//! lz4 and lzo at a 64 KiB block size, pruned `--keep gfx1030 -o`: `unsquashfs -s`
//! gives the same compressor and block size, `unsquashfs -d` gives the
//! input tree with each file pruned alone (same bytes) and `unsquashfs
//! -lln` the same modes, owners, times and links; a SIF made by `siftool`
//! keeps its objects, loses its signature (said), and its partition
//! unsquashes to that tree. LZO images are written in LZO too; AppImages
//! are refused by name (xattrs and hard links are kept:
//! squashfs_links.rs); a damaged image is exit 2 with nothing written; a killed `--in-place` run leaves the old image
//! or the new one; a large image is pruned in bounded memory.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::util::{md5_hex, ours, run, same, trial};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "mksquashfs", "unsquashfs", "siftool", "/usr/bin/python3", "mkfifo"];

/// The compressors prune writes, as `mksquashfs -comp` names them.
const METHODS: &[&str] = &["gzip", "xz", "zstd", "lz4", "lzo"];

/// The per-GPU file `--keep gfx1030` removes by name.
pub(crate) const GONE: &str = "usr/lib/rocblas/library/TensileLibrary_gfx90a.co";

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| trial(format!("prune::squashfs::{name}"), TOOLS, f);
    vec![
        t("each_compressor_gives_the_tree_pruned_file_by_file", pruned_trees),
        t("a_sif_keeps_its_objects_and_loses_its_signature", sif),
        t("appimages_are_refused_by_name", refused),
        t("a_damaged_image_is_exit_2_and_nothing_written", damaged),
        t("a_killed_in_place_run_leaves_the_old_image_or_the_new", killed),
        t("a_large_image_is_pruned_in_bounded_memory", bounded),
    ]
}

/// `mksquashfs SRC IMG -comp METHOD -b 64K` in `dir`.
fn mksquashfs(dir: &Path, src: &str, img: &str, method: &str) -> Result<(), Failed> {
    let args = [src, img, "-comp", method, "-b", "65536", "-noappend", "-quiet", "-no-progress"];
    run(Path::new("mksquashfs"), &args, dir).ok()?;
    Ok(())
}

/// Builds, in `dir`: the tree `root/`, `want/` (the tree with each file
/// pruned alone and the gfx90a Tensile file gone), and an image of `root`
/// in each compressor.
fn build(dir: &Path) -> Result<(), Failed> {
    crate::packages::loose_files(dir)?;
    let root = dir.join("root");
    let lib = root.join("usr/lib/rocblas/library");
    std::fs::create_dir_all(&lib)?;
    std::fs::write(lib.join("TensileLibrary_gfx90a.co"), crate::util::bytes(1, 200_000))?;
    std::fs::write(lib.join("TensileLibrary_gfx1030.co"), crate::util::bytes(2, 3000))?;
    std::fs::create_dir_all(root.join("etc"))?;
    std::fs::write(root.join("etc/app.conf"), "threads = 4\n")?;
    std::os::unix::fs::symlink("libhipk.so", root.join("usr/lib/libhipk.so.1"))?;
    run(Path::new("mkfifo"), &["root/etc/pipe"], dir).ok()?;
    std::os::unix::fs::chown(root.join("etc/app.conf"), Some(1234), Some(5678))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(root.join("etc"), std::fs::Permissions::from_mode(0o750))?;
    std::fs::set_permissions(root.join("etc/app.conf"), std::fs::Permissions::from_mode(0o600))?;
    run(Path::new("touch"), &["-h", "-d", "2021-02-03 04:05:06", "root/etc/app.conf", "root/usr/lib/libhipk.so.1"], dir).ok()?;
    run(Path::new("cp"), &["-a", "root", "want"], dir).ok()?;
    for lib in ["libhipk.so", "libompk.so"] {
        let p = format!("want/usr/lib/{lib}");
        run(&ours(), &["prune", "--keep", "gfx1030", "--in-place", &p], dir).ok()?;
    }
    std::fs::remove_file(dir.join("want").join(GONE))?;
    for m in METHODS {
        mksquashfs(dir, "root", &format!("{m}.sqfs"), m)?;
    }
    Ok(())
}

/// The images, built once for all trials.
pub(crate) fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(build))
}

/// The regular files below `dir` (not following links, never opening a
/// fifo), by relative path.
pub(crate) fn regular(dir: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) -> std::io::Result<()> {
        for e in std::fs::read_dir(d)? {
            let p = e?.path();
            let t = std::fs::symlink_metadata(&p)?.file_type();
            if t.is_dir() {
                walk(base, &p, out)?;
            } else if t.is_file() {
                let rel = p.strip_prefix(base).unwrap_or(&p).to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p)?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// `unsquashfs -lln` of `img`, each line without its size column (a
/// directory's size and a pruned file's change), without `skip`.
pub(crate) fn listing(dir: &Path, img: &str, skip: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("unsquashfs"), &["-lln", img], dir).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter(|l| !l.ends_with(skip))
        .map(|l| {
            let mut w: Vec<&str> = l.split_whitespace().collect();
            if w.len() > 2 {
                w.remove(2);
            }
            w.join(" ")
        })
        .collect())
}

/// `unsquashfs -s` of `img`: its compressor and block size lines.
pub(crate) fn compression(dir: &Path, img: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("unsquashfs"), &["-s", img], dir).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .filter(|l| l.starts_with("Compression ") || l.starts_with("Block size"))
        .map(str::to_string)
        .collect())
}

/// `unsquashfs -d OUT IMG` in `dir`; the regular files it gives.
pub(crate) fn unsquashed(dir: &Path, img: &str, out: &str) -> Result<BTreeMap<String, Vec<u8>>, Failed> {
    let _ = std::fs::remove_dir_all(dir.join(out));
    run(Path::new("unsquashfs"), &["-q", "-n", "-d", out, img], dir).ok()?;
    regular(&dir.join(out))
}

/// Each compressor: the pruned image has the input's compressor and
/// block size, unsquashes to the tree pruned file by file, and lists the
/// same modes, owners, times and links, less the file removed.
fn pruned_trees() -> Result<(), Failed> {
    let d = fixture()?;
    let want = regular(&d.join("want"))?;
    if want.contains_key(GONE) || want.len() < 5 {
        return Err(format!("the reference tree is wrong: {:?}", want.keys()).into());
    }
    for m in METHODS {
        let (img, out) = (format!("{m}.sqfs"), format!("pruned-{m}.sqfs"));
        let _ = std::fs::remove_file(d.join(&out));
        let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out, &img], d).ok()?;
        let said = String::from_utf8_lossy(&r.stdout);
        if !said.contains(GONE) {
            return Err(format!("{m}: the report does not name {GONE}:\n{said}").into());
        }
        let before = compression(d, &img)?;
        same(&format!("{m}: unsquashfs -s"), compression(d, &out)?, before.clone())?;
        same(&format!("{m}: block size"), before.contains(&"Block size 65536".to_string()), true)?;
        same(&format!("{m}: files"), unsquashed(d, &out, &format!("u-{m}"))?, want.clone())?;
        let old: Vec<String> = listing(d, &img, GONE)?;
        same(&format!("{m}: unsquashfs -lln"), listing(d, &out, GONE)?, old)?;
    }
    Ok(())
}

/// A SIF of the gzip image, a definition file and a signature of the
/// partition: the pruned SIF lists the partition and the definition file
/// (the signature gone, and said), each where the file's bytes are, and
/// its partition unsquashes to the pruned tree.
fn sif() -> Result<(), Failed> {
    let d = fixture()?;
    let sif = "img.sif";
    let _ = std::fs::remove_file(d.join(sif));
    std::fs::write(d.join("def"), "Bootstrap: docker\nFrom: debian\n")?;
    std::fs::write(d.join("sig"), crate::util::bytes(3, 600))?;
    let siftool = |args: &[&str]| run(Path::new("siftool"), args, d).ok();
    siftool(&["new", sif])?;
    siftool(&["add", "--datatype", "4", "--parttype", "2", "--partfs", "1", "--partarch", "2", sif, "gzip.sqfs"])?;
    siftool(&["add", "--datatype", "1", sif, "def"])?;
    let entity = "433FE984155206BD962725E20E8713472A879943";
    siftool(&["add", "--datatype", "5", "--signentity", entity, "--signhash", "1", "--link", "1", sif, "sig"])?;
    let listed = String::from_utf8_lossy(&siftool(&["list", sif])?.stdout).into_owned();
    if !listed.contains("Signature") {
        return Err(format!("siftool list of the input: {listed}").into());
    }
    let _ = std::fs::remove_file(d.join("pruned.sif"));
    let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", "pruned.sif", sif], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout);
    if !said.contains("signatures removed") {
        return Err(format!("the report does not say the signature went:\n{said}").into());
    }
    let listed = String::from_utf8_lossy(&siftool(&["list", "pruned.sif"])?.stdout).into_owned();
    if listed.contains("Signature") || !listed.contains("Squashfs") || !listed.contains("Def.FILE") {
        return Err(format!("siftool list of the pruned SIF: {listed}").into());
    }
    let len = std::fs::metadata(d.join("pruned.sif"))?.len();
    let ends: Vec<u64> = listed
        .lines()
        .filter_map(|l| l.split('|').nth(3)?.trim().split('-').nth(1)?.parse().ok())
        .collect();
    same("the last object ends where the file does", ends.iter().max().copied(), Some(len))?;
    let def = siftool(&["dump", "2", "pruned.sif"])?.stdout;
    same("the definition file", &def[..], b"Bootstrap: docker\nFrom: debian\n")?;
    let part = std::process::Command::new("siftool").args(["dump", "1", "pruned.sif"]).current_dir(d).output()?;
    std::fs::write(d.join("part.sqfs"), &part.stdout)?;
    same("the partition's files", unsquashed(d, "part.sqfs", "u-sif")?, regular(&d.join("want"))?)?;
    same("the partition's compression", compression(d, "part.sqfs")?, compression(d, "gzip.sqfs")?)
}

/// `prune --keep gfx1030 -o out FILE` fails with exit 2, naming the file
/// and saying `what`, writing nothing.
fn refuses(d: &Path, file: &str, what: &str) -> Result<(), Failed> {
    let out = d.join("refused.out");
    let _ = std::fs::remove_file(&out);
    let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out.to_string_lossy(), file], d);
    let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    if r.code != 2 || !all.contains(file) || !all.contains(what) || out.exists() {
        return Err(format!("prune {file}: exit {}, wrote {}:\n{all}", r.code, out.exists()).into());
    }
    Ok(())
}

/// An AppImage: refused by name, nothing written.
fn refused() -> Result<(), Failed> {
    let d = fixture()?;
    let mut runtime = std::fs::read("/usr/bin/true")?;
    runtime[8..11].copy_from_slice(b"AI\x02");
    std::fs::write(d.join("x.AppImage"), [runtime, std::fs::read(d.join("xz.sqfs"))?].concat())?;
    refuses(d, "x.AppImage", "AppImage")
}

/// The gzip image cut in its data or in its tables, or with a byte of its
/// inode table changed: exit 2 naming it, nothing written.
fn damaged() -> Result<(), Failed> {
    let d = fixture()?;
    let good = std::fs::read(d.join("gzip.sqfs"))?;
    let used = good[40..48].iter().rev().fold(0usize, |v, &b| (v << 8) | usize::from(b));
    for (what, len) in [("data", used / 3), ("tables", used - 50)] {
        let file = format!("cut-{what}.sqfs");
        std::fs::write(d.join(&file), &good[..len])?;
        refuses(d, &file, &file)?;
    }
    // A byte changed inside the inode table's first block (compressed):
    // the zlib stream's check fails.
    let inodes = good[64..72].iter().rev().fold(0usize, |v, &b| (v << 8) | usize::from(b));
    let mut bad = good.clone();
    bad[inodes + 12] ^= 0x55;
    std::fs::write(d.join("flipped.sqfs"), &bad)?;
    refuses(d, "flipped.sqfs", "flipped.sqfs")
}

/// `--in-place` killed with SIGKILL at ten points of its run: the file is
/// the old image or the new one each time, both seen.
fn killed() -> Result<(), Failed> {
    let d = fixture()?;
    crate::util::old_or_new_when_killed(d, ("xz.sqfs", "work.sqfs"), "gfx1030", 10)
}

/// An lz4 image of 256 MiB of incompressible files and a per-GPU file:
/// pruned with a peak RSS under 128 MiB (the pages of the mapped image
/// are given back as the rewrite reads them; kept whole, they alone were
/// over 256 MiB), the big files still there, byte for byte.
fn bounded() -> Result<(), Failed> {
    let t = crate::util::tempdir();
    let d = t.path();
    let lib = d.join("root/usr/lib/rocblas/library");
    std::fs::create_dir_all(&lib)?;
    std::fs::write(lib.join("TensileLibrary_gfx90a.co"), crate::util::bytes(1, 200_000))?;
    let mut sums = Vec::new();
    for i in 0..4u64 {
        let b = crate::util::bytes(10 + i, 64 << 20);
        sums.push(md5_hex(&b));
        std::fs::write(d.join(format!("root/big{i}.bin")), b)?;
    }
    mksquashfs(d, "root", "big.sqfs", "lz4")?;
    let (r, kib) = crate::util::ours_peak(300, &["prune", "--keep", "gfx1030", "-o", "slim.sqfs", "big.sqfs"], d)?;
    r.ok()?;
    if kib >= 128 << 10 {
        return Err(format!("peak RSS {kib} KiB pruning a 256 MiB image, over 128 MiB").into());
    }
    let listed = run(Path::new("unsquashfs"), &["-l", "slim.sqfs"], d).ok()?;
    if String::from_utf8_lossy(&listed.stdout).contains("gfx90a") {
        return Err("the per-GPU file is still in the pruned image".into());
    }
    for (i, sum) in sums.iter().enumerate() {
        let cat = std::process::Command::new("unsquashfs")
            .args(["-cat", "slim.sqfs", &format!("big{i}.bin")])
            .current_dir(d)
            .output()?;
        same(&format!("big{i}.bin"), &md5_hex(&cat.stdout), sum)?;
    }
    Ok(())
}
