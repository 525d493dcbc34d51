//! squashfs filesystems, SIF images and AppImages (issue #73): the
//! libraries with device code that packages.rs builds with clang-22 (HIP
//! with a compressed bundle, OpenMP for two GPUs) are packed by
//! `mksquashfs` with each compressor (gzip, xz, zstd, lz4, lzo), wrapped in
//! a SIF by `siftool` and put after an ELF runtime as an AppImage; the
//! scanners must find in each what they find in the tree `unsquashfs -d`
//! takes out of it: the same images (counts and bytes per target), the
//! same extracted files; `check` fails a target it holds, a directory walk
//! counts it. A damaged image is an input error naming it (exit 2), never 0
//! images and never a crash; `prune` writes an LZO image in LZO (every
//! compressor's prune: squashfs_prune.rs).

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{ours, run, run_within, same, trial, xorshift};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "mksquashfs", "unsquashfs", "siftool"];

/// Each compressor, as `mksquashfs -comp` names it.
const METHODS: &[&str] = &["gzip", "xz", "zstd", "lz4", "lzo"];

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| {
        trial(format!("scan::squashfs::{name}"), TOOLS, f)
    };
    vec![
        t("same_images_as_unsquashfs", same_images),
        t("check_extract_and_walk", check_extract_walk),
        t("sif_and_appimage_hold_the_same", sif_and_appimage),
        t("damaged_images_are_input_errors", damaged),
        t("prune_writes_an_lzo_squashfs_in_lzo", prune_lzo),
    ]
}

/// The image of compressor `method`'s name.
fn image(method: &str) -> String {
    format!("{method}.sqfs")
}

/// Builds, in `dir`, the loose libraries (`root/`) and an image of them in
/// each compressor, with a fragment-sized text file among them.
fn build(dir: &Path) -> Result<(), Failed> {
    crate::packages::loose_files(dir)?;
    for m in METHODS {
        let args = ["root", &image(m), "-comp", m, "-noappend", "-quiet", "-no-progress"];
        run(Path::new("mksquashfs"), &args, dir).ok()?;
        let r = run(Path::new("unsquashfs"), &["-s", &image(m)], dir).ok()?;
        let said = String::from_utf8_lossy(&r.stdout).into_owned();
        if !said.contains(&format!("Compression {m}")) {
            return Err(format!("{m}: unsquashfs -s says {said}").into());
        }
    }
    Ok(())
}

/// The images, built once for all trials.
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(build))
}

/// `size --json` of `args`: the total's counts by target.
fn by_target(dir: &Path, args: &[&str]) -> Result<Value, Failed> {
    let mut a = vec!["size", "--json"];
    a.extend(args);
    let r = run(&ours(), &a, dir).ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    Ok(doc["total"]["by_target"].clone())
}

/// `unsquashfs -d` of `img` into `out` (below `dir`).
fn unsquashed(dir: &Path, img: &str, out: &str) -> Result<(), Failed> {
    let _ = std::fs::remove_dir_all(dir.join(out));
    run(Path::new("unsquashfs"), &["-q", "-n", "-d", out, img], dir).ok()?;
    Ok(())
}

/// The member paths `inspect --json` gives of `file`, sorted.
fn member_paths(dir: &Path, file: &str) -> Result<Vec<String>, Failed> {
    let r = run(&ours(), &["inspect", "--json", file], dir).ok()?;
    let doc: Value = serde_json::from_slice(&r.stdout).map_err(|e| format!("json: {e}"))?;
    let mut paths: Vec<String> = doc["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["path"].as_str().map(str::to_string))
        .collect();
    paths.sort_unstable();
    Ok(paths)
}

/// Each image holds what `unsquashfs` takes out of it, target by target
/// (images and bytes), and it is the libraries' images (HIP and OpenMP,
/// gfx90a and gfx1030); its members are named `x.sqfs!/usr/lib/…`.
fn same_images() -> Result<(), Failed> {
    let d = fixture()?;
    for m in METHODS {
        let img = image(m);
        let ours_count = by_target(d, &[&img])?;
        let out = format!("un-{m}");
        unsquashed(d, &img, &out)?;
        let tree = by_target(d, &[&out])?;
        same(&format!("{img}: size by target, as unsquashfs's tree"), &ours_count, &tree)?;
        let keys: Vec<&String> = ours_count.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        if keys.len() < 4 || !keys.iter().any(|k| k.contains("gfx90a")) {
            return Err(format!("{img}: targets {keys:?}").into());
        }
        let want = [format!("{img}!/usr/lib/libhipk.so"), format!("{img}!/usr/lib/libompk.so")];
        same(&format!("{img}: members"), member_paths(d, &img)?, want.to_vec())?;
    }
    Ok(())
}

/// `check --forbid gfx90a` fails each image (exit 1); `extract` writes
/// from it the files it writes from its `unsquashfs` tree; a directory
/// holding the image counts what the image does.
fn check_extract_walk() -> Result<(), Failed> {
    let d = fixture()?;
    for m in METHODS {
        let img = image(m);
        let r = run(&ours(), &["check", "--forbid", "gfx90a", &img], d);
        same(&format!("{img}: check --forbid gfx90a exit ({})", r.stderr), r.code, 1)?;
        let r = run(&ours(), &["check", "--forbid", "gfx942", &img], d);
        same(&format!("{img}: check --forbid gfx942 exit ({})", r.stderr), r.code, 0)?;
        let (from_img, from_tree) = (format!("x-{m}-img"), format!("x-{m}-tree"));
        let tree = format!("ux-{m}");
        unsquashed(d, &img, &tree)?;
        run(&ours(), &["extract", &img, "-o", &from_img], d).ok()?;
        run(&ours(), &["extract", &tree, "-o", &from_tree], d).ok()?;
        let got = crate::packages::extracted(&d.join(&from_img))?;
        if got.len() < 4 {
            return Err(format!("{img}: extract wrote {} files", got.len()).into());
        }
        same(&format!("{img}: extracted files"), got, crate::packages::extracted(&d.join(&from_tree))?)?;
        let walk = d.join(format!("walk-{m}"));
        std::fs::create_dir_all(walk.join("sub"))?;
        std::fs::copy(d.join(&img), walk.join("sub").join(&img))?;
        let walked = by_target(d, &[&walk.to_string_lossy()])?;
        same(&format!("{img}: a walk's count"), walked, by_target(d, &[&img])?)?;
    }
    Ok(())
}

/// Where the ELF64 file `elf` ends: after its section headers.
fn elf_end(elf: &[u8]) -> usize {
    let at = |i: usize, n: usize| -> u64 {
        elf[i..i + n].iter().rev().fold(0, |v, &b| (v << 8) | u64::from(b))
    };
    (at(0x28, 8) + at(0x3a, 2) * at(0x3c, 2)) as usize
}

/// A SIF built by `siftool` (the zstd image as its system partition, and a
/// definition file) and an AppImage (a copy of `true` marked as a type 2
/// runtime, the xz image after it) hold what the images alone hold; their
/// members are named by the files' paths.
fn sif_and_appimage() -> Result<(), Failed> {
    let d = fixture()?;
    let sif = "img.sif";
    let _ = std::fs::remove_file(d.join(sif));
    std::fs::write(d.join("def"), "Bootstrap: docker\nFrom: debian\n")?;
    run(Path::new("siftool"), &["new", sif], d).ok()?;
    let part = ["add", "--datatype", "4", "--parttype", "2", "--partfs", "1", "--partarch", "2"];
    let args: Vec<&str> = part.iter().copied().chain([sif, "zstd.sqfs"]).collect();
    run(Path::new("siftool"), &args, d).ok()?;
    run(Path::new("siftool"), &["add", "--datatype", "1", sif, "def"], d).ok()?;
    let listed = run(Path::new("siftool"), &["list", sif], d).ok()?;
    if !String::from_utf8_lossy(&listed.stdout).contains("Squashfs") {
        return Err(format!("siftool list: {}", String::from_utf8_lossy(&listed.stdout)).into());
    }
    same("SIF: size by target", by_target(d, &[sif])?, by_target(d, &["zstd.sqfs"])?)?;
    let paths = member_paths(d, sif)?;
    let want = [format!("{sif}!/usr/lib/libhipk.so"), format!("{sif}!/usr/lib/libompk.so")];
    same("SIF: members", paths, want.to_vec())?;
    let r = run(&ours(), &["check", "--forbid", "gfx90a", sif], d);
    same(&format!("SIF: check --forbid gfx90a exit ({})", r.stderr), r.code, 1)?;

    let mut runtime = std::fs::read("/usr/bin/true")?;
    runtime.truncate(elf_end(&runtime));
    runtime[8..11].copy_from_slice(b"AI\x02");
    let app = [runtime, std::fs::read(d.join("xz.sqfs"))?].concat();
    std::fs::write(d.join("x.AppImage"), app)?;
    same("AppImage: size by target", by_target(d, &["x.AppImage"])?, by_target(d, &["xz.sqfs"])?)?;
    let r = run(&ours(), &["check", "--forbid", "gfx1030", "x.AppImage"], d);
    same(&format!("AppImage: check --forbid gfx1030 exit ({})", r.stderr), r.code, 1)
}

/// An image cut in its superblock, in its tables or in its data, a SIF
/// whose partition is cut, and images with bytes changed (any byte, in
/// each compressor): `size`, `inspect` and `check --forbid` fail the cut
/// ones as input errors naming them (exit 2), never 0 images; a changed
/// byte gives exit 0, 1 or 2, never a crash, within seconds.
fn damaged() -> Result<(), Failed> {
    let d = fixture()?;
    for m in METHODS {
        let good = std::fs::read(d.join(image(m)))?;
        // mksquashfs pads to 4 KiB: the tables end where the superblock says.
        let used = good[40..48].iter().rev().fold(0usize, |v, &b| (v << 8) | usize::from(b));
        let cases = [("its superblock", 60), ("its data", used / 3), ("its tables", used - 50)];
        for (what, len) in cases {
            let file = format!("cut-{m}.sqfs");
            std::fs::write(d.join(&file), &good[..len])?;
            for cmd in [&["size", "--json"][..], &["inspect"], &["check", "--forbid", "gfx90a"]] {
                let args: Vec<&str> = cmd.iter().copied().chain([file.as_str()]).collect();
                let r = run(&ours(), &args, d);
                if r.code != 2 || !r.stderr.contains(&file) {
                    return Err(format!("{m} cut in {what}: {args:?} exit {}: {}", r.code, r.stderr).into());
                }
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15 ^ good.len() as u64;
        for round in 0..40 {
            let mut bad = good.clone();
            let at = (xorshift(&mut x) % good.len() as u64) as usize;
            bad[at] ^= (xorshift(&mut x) % 255 + 1) as u8;
            let file = format!("flip-{m}.sqfs");
            std::fs::write(d.join(&file), &bad)?;
            let r = run_within(30, &ours(), &["size", &file], d)?;
            if ![0, 1, 2].contains(&r.code) || r.stderr.contains("panicked") {
                return Err(format!("{m} flip {round} at {at}: exit {}: {}", r.code, r.stderr).into());
            }
        }
    }
    let sif = std::fs::read(d.join("img.sif")).or_else(|_| {
        sif_and_appimage()?;
        std::fs::read(d.join("img.sif")).map_err(Failed::from)
    })?;
    std::fs::write(d.join("cut.sif"), &sif[..sif.len() - 100])?;
    let r = run(&ours(), &["size", "cut.sif"], d);
    if r.code != 2 || !r.stderr.contains("cut.sif") {
        return Err(format!("a cut SIF: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// `prune --keep gfx1030` of the LZO image writes an LZO image
/// (`unsquashfs -s`) that holds gfx1030's images and no more gfx90a ones.
fn prune_lzo() -> Result<(), Failed> {
    let d = fixture()?;
    let out = "pruned-lzo.sqfs";
    let _ = std::fs::remove_file(d.join(out));
    run(&ours(), &["prune", "--keep", "gfx1030", "-o", out, "lzo.sqfs"], d).ok()?;
    let r = run(Path::new("unsquashfs"), &["-s", out], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if !said.contains("Compression lzo") {
        return Err(format!("{out}: unsquashfs -s says {said}").into());
    }
    let keys = |v: &Value| -> Vec<String> { v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default() };
    let (before, after) = (keys(&by_target(d, &["lzo.sqfs"])?), keys(&by_target(d, &[out])?));
    let has = |k: &[String], t: &str| k.iter().any(|x| x.contains(t));
    if !has(&before, "gfx90a") || has(&after, "gfx90a") || !has(&after, "gfx1030") {
        return Err(format!("targets before {before:?}, after {after:?}").into());
    }
    Ok(())
}
