//! Pruning squashfs filesystems with extended attributes and hard links
//! (issue #73), which prune writes with its own tables: the tree of
//! squashfs_prune.rs (libraries with device code built by clang-22,
//! Tensile per-GPU files, a symlink, a fifo, odd modes, owners, times)
//! with `user.*` xattrs (`setfattr`) on files, a directory and a library,
//! enough of them for several metadata blocks, and hard links: a config
//! file under two names, a library pruned under two names, the per-GPU
//! file `--keep gfx1030` removes under a second name, and one file under
//! 300 names in one directory (more than a directory header covers),
//! packed by `mksquashfs` in each compressor. Pruned `--keep gfx1030 -o`:
//! `unsquashfs -s` gives the same compressor and block size,
//! `unsquashfs -lln` the same entries, modes, owners and times less the
//! file removed, `unsquashfs -d` the tree pruned file by file, `getfattr
//! -d -m -` on it the same xattrs, and `stat -c %h/%i` the same hard
//! links (the removed name's inode with one link less); the export table
//! names each inode by its number. A SIF made by
//! `siftool` of such an image prunes the same way; the image cut in its
//! tables is exit 2, nothing written; a 256 MiB image with an xattr and a
//! hard link is pruned in bounded memory.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use crate::squashfs_prune::{GONE, compression, listing, regular, unsquashed};
use crate::util::{ours, run, same, trial};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "mksquashfs", "unsquashfs", "siftool", "setfattr", "getfattr", "mkfifo"];

/// The compressors, as `mksquashfs -comp` names them.
const METHODS: &[&str] = &["gzip", "xz", "zstd", "lz4", "lzo"];

/// The second name of the per-GPU file removed.
const OTHER: &str = "usr/share/tensile-gfx90a.co";

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| trial(format!("prune::squashfs::{name}"), TOOLS, f);
    vec![
        t("xattrs_and_hard_links_are_kept_in_each_compressor", kept),
        t("a_sif_with_xattrs_and_hard_links_keeps_them", sif),
        t("tables_stored_uncompressed_are_said_compressed_once_rewritten", flags),
        t("a_damaged_image_with_hard_links_is_exit_2", damaged),
        t("a_large_image_with_xattrs_and_hard_links_in_bounded_memory", bounded),
    ]
}

/// `setfattr -n NAME -v VALUE PATH` in `dir`.
fn setfattr(dir: &Path, path: &str, name: &str, value: &str) -> Result<(), Failed> {
    run(Path::new("setfattr"), &["-n", name, "-v", value, path], dir).ok()?;
    Ok(())
}

/// Builds, in the squashfs_prune fixture's directory: `linked/` (its
/// tree, with xattrs and hard links), `linked-want/` (that tree pruned
/// file by file, the per-GPU file's first name gone), and an image of
/// `linked` in each compressor.
fn build(dir: &Path) -> Result<(), Failed> {
    let d = crate::squashfs_prune::fixture()?;
    for sub in ["linked", "linked-want"] {
        run(Path::new("cp"), &["-a", &d.join("root").to_string_lossy(), sub], dir).ok()?;
    }
    for (tree, pruned) in [("linked", false), ("linked-want", true)] {
        let r = dir.join(tree);
        if pruned {
            for lib in ["libhipk.so", "libompk.so"] {
                std::fs::copy(d.join("want/usr/lib").join(lib), r.join("usr/lib").join(lib))?;
            }
        }
        std::fs::hard_link(r.join("etc/app.conf"), r.join("etc/app2.conf"))?;
        std::fs::hard_link(r.join("usr/lib/libhipk.so"), r.join("usr/lib/libhipk-link.so"))?;
        std::fs::create_dir_all(r.join("usr/share/many"))?;
        std::fs::hard_link(r.join(GONE), r.join(OTHER))?;
        std::fs::write(r.join("usr/share/many/0000"), "one file, 300 names\n")?;
        for i in 1..300 {
            std::fs::hard_link(r.join("usr/share/many/0000"), r.join(format!("usr/share/many/{i:04}")))?;
        }
        let t = |p: &str| format!("{tree}/{p}");
        setfattr(dir, &t("etc/app.conf"), "user.origin", "test")?;
        setfattr(dir, &t("usr/lib"), "user.dir", "libraries")?;
        setfattr(dir, &t("usr/lib/libhipk.so"), "user.checked", "yes")?;
        setfattr(dir, &t(GONE), "user.gpu", "gfx90a")?;
        // 40 files with two 200-byte values each: key/value blocks past 8 KiB.
        for i in 0..40 {
            let f = t(&format!("usr/share/x{i:02}"));
            std::fs::write(dir.join(&f), format!("file {i}\n"))?;
            setfattr(dir, &f, "user.a", &format!("{i:0200}"))?;
            setfattr(dir, &f, "user.b", &format!("{:0200}", i * 7))?;
        }
        if pruned {
            std::fs::remove_file(r.join(GONE))?;
        }
    }
    for m in METHODS {
        let args = ["linked", &format!("{m}.sqfs"), "-comp", m, "-b", "65536", "-noappend", "-quiet", "-no-progress"];
        run(Path::new("mksquashfs"), &args, dir).ok()?;
    }
    Ok(())
}

/// The images, built once for all trials.
fn fixture() -> Result<&'static Path, Failed> {
    static F: std::sync::OnceLock<Result<std::path::PathBuf, String>> = std::sync::OnceLock::new();
    crate::util::built_once(&F, || crate::util::kept(build))
}

/// `getfattr -R -d -m - -h` of the tree `dir/tree`: each path's
/// attribute lines.
fn xattrs(dir: &Path, tree: &str) -> Result<BTreeMap<String, Vec<String>>, Failed> {
    let r = run(Path::new("getfattr"), &["-R", "-d", "-m", "-", "-h", "."], &dir.join(tree)).ok()?;
    let mut out = BTreeMap::new();
    let mut file = String::new();
    for l in String::from_utf8_lossy(&r.stdout).lines() {
        if let Some(f) = l.strip_prefix("# file: ") {
            file = f.trim_start_matches("./").to_string();
        } else if !l.is_empty() {
            out.entry(file.clone()).or_insert_with(Vec::new).push(l.to_string());
        }
    }
    Ok(out)
}

/// `stat -c '%h %i'` of each path under `dir/tree`: link count, inode.
fn links(dir: &Path, tree: &str, paths: &[&str]) -> Result<Vec<(u64, u64)>, Failed> {
    let r = run(Path::new("stat"), &[&["-c", "%h %i"][..], paths].concat(), &dir.join(tree)).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| {
            let mut w = l.split(' ').map(|n| n.parse().unwrap_or(0));
            (w.next().unwrap_or(0), w.next().unwrap_or(0))
        })
        .collect())
}

/// The pruned image `out` of `img`, unsquashed to `tree`, is the input
/// less the per-GPU file's first name: same compression, listing, files,
/// xattrs, hard links.
fn same_as_input(d: &Path, img: &str, out: &str, tree: &str) -> Result<(), Failed> {
    same(&format!("{img}: unsquashfs -s"), compression(d, out)?, compression(d, img)?)?;
    let gone = format!("/{GONE}");
    same(&format!("{img}: unsquashfs -lln"), listing(d, out, &gone)?, listing(d, img, &gone)?)?;
    same(&format!("{img}: files"), unsquashed(d, out, tree)?, regular(&d.join("linked-want"))?)?;
    let input = format!("in-{tree}");
    unsquashed(d, img, &input)?;
    let mut want = xattrs(d, &input)?;
    if want.remove(GONE).is_none() || want.len() < 43 {
        return Err(format!("{img}: getfattr of the input: {want:?}").into());
    }
    same(&format!("{img}: getfattr"), xattrs(d, tree)?, want)?;
    let names = ["etc/app.conf", "etc/app2.conf", "usr/lib/libhipk.so", "usr/lib/libhipk-link.so", OTHER, "usr/share/many/0000", "usr/share/many/0299"];
    let l = links(d, tree, &names)?;
    let counts: Vec<u64> = l.iter().map(|x| x.0).collect();
    same(&format!("{img}: link counts"), counts, vec![2, 2, 2, 2, 1, 300, 300])?;
    let pairs = [(0, 1), (2, 3), (5, 6)];
    if pairs.iter().any(|&(a, b)| l[a].1 != l[b].1) || l[0].1 == l[2].1 {
        return Err(format!("{img}: the hard links' inodes: {l:?}").into());
    }
    let before: Vec<u64> = links(d, &input, &names)?.iter().map(|x| x.0).collect();
    same(&format!("{img}: input link counts"), before, vec![2, 2, 2, 2, 2, 300, 300])
}

/// Each compressor: pruned, the image keeps its xattrs and hard links.
fn kept() -> Result<(), Failed> {
    let d = fixture()?;
    for m in METHODS {
        let (img, out) = (format!("{m}.sqfs"), format!("pruned-{m}.sqfs"));
        let _ = std::fs::remove_file(d.join(&out));
        let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out, &img], d).ok()?;
        let said = String::from_utf8_lossy(&r.stdout);
        if !said.contains(GONE) {
            return Err(format!("{m}: the report does not name {GONE}:\n{said}").into());
        }
        same_as_input(d, &img, &out, &format!("u-{m}"))?;
    }
    exports_name_each_inode(&std::fs::read(d.join("pruned-gzip.sqfs"))?)
}

/// What `unsquashfs -s` of `img` says of how its inodes, ids and data
/// are stored.
fn stored_as(d: &Path, img: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("unsquashfs"), &["-s", img], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    let wanted = ["Inodes are", "Data is", "Uids/Gids (Id table) are"];
    Ok(said.lines().filter(|l| wanted.iter().any(|w| l.starts_with(w))).map(str::to_string).collect())
}

/// An image made with `mksquashfs -noI -noId -noD` (inode, directory and
/// id tables and data blocks stored uncompressed), pruned: prune writes
/// those tables and the pruned libraries' blocks compressed, and the
/// superblock says so (`unsquashfs -s`); the image is otherwise what the
/// other compressors' images give.
fn flags() -> Result<(), Failed> {
    let d = fixture()?;
    let img = "noi.sqfs";
    let args = ["linked", img, "-comp", "gzip", "-b", "65536", "-noI", "-noId", "-noD", "-noappend", "-quiet", "-no-progress"];
    run(Path::new("mksquashfs"), &args, d).ok()?;
    let was = ["Inodes are uncompressed", "Data is uncompressed", "Uids/Gids (Id table) are uncompressed"];
    same("unsquashfs -s of the input", stored_as(d, img)?, was.map(String::from).to_vec())?;
    let out = "pruned-noi.sqfs";
    let _ = std::fs::remove_file(d.join(out));
    run(&ours(), &["prune", "--keep", "gfx1030", "-o", out, img], d).ok()?;
    let now = ["Inodes are compressed", "Data is compressed", "Uids/Gids (Id table) are compressed"];
    same("unsquashfs -s of the pruned image", stored_as(d, out)?, now.map(String::from).to_vec())?;
    same_as_input(d, img, out, "u-noi")
}

/// The export table (NFS file handles) of the gzip image `img` names, for
/// each inode number N, an inode whose number is N (what the kernel's
/// `squashfs_export_iget` reads; unsquashfs never reads the table).
fn exports_name_each_inode(img: &[u8]) -> Result<(), Failed> {
    let u64_at = |o: usize| u64::from_le_bytes(img[o..o + 8].try_into().unwrap()) as usize;
    let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let block = |at: usize| -> (Vec<u8>, usize) {
        let h = usize::from(u16::from_le_bytes([img[at], img[at + 1]]));
        let stored = &img[at + 2..at + 2 + (h & 0x7fff)];
        let mut out = Vec::new();
        if h & 0x8000 != 0 {
            out.extend_from_slice(stored);
        } else {
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(stored), &mut out).unwrap();
        }
        (out, at + 2 + (h & 0x7fff))
    };
    let (count, itable, dtable, exports) = (u32_at(img, 4), u64_at(64), u64_at(72), u64_at(88));
    if exports == usize::MAX || count == 0 {
        return Err("the pruned image has no export table".into());
    }
    let (mut starts, mut inodes, mut at) = (BTreeMap::new(), Vec::new(), itable);
    while at < dtable {
        starts.insert(at - itable, inodes.len());
        let (b, next) = block(at);
        inodes.extend_from_slice(&b);
        at = next;
    }
    let mut refs = Vec::new();
    for i in 0..(count as usize * 8).div_ceil(8192) {
        refs.extend_from_slice(&block(u64_at(exports + 8 * i)).0);
    }
    for n in 1..=count {
        let r = u64::from_le_bytes(refs[(n as usize - 1) * 8..][..8].try_into().unwrap());
        let at = starts[&((r >> 16) as usize)] + (r & 0xffff) as usize;
        same(&format!("the inode export entry {n} names"), u32_at(&inodes, at + 12), n)?;
    }
    Ok(())
}

/// A SIF of the zstd image: its pruned partition keeps the xattrs and
/// hard links.
fn sif() -> Result<(), Failed> {
    let d = fixture()?;
    let _ = std::fs::remove_file(d.join("img.sif"));
    let siftool = |args: &[&str]| run(Path::new("siftool"), args, d).ok();
    siftool(&["new", "img.sif"])?;
    siftool(&["add", "--datatype", "4", "--parttype", "2", "--partfs", "1", "--partarch", "2", "img.sif", "zstd.sqfs"])?;
    let _ = std::fs::remove_file(d.join("pruned.sif"));
    run(&ours(), &["prune", "--keep", "gfx1030", "-o", "pruned.sif", "img.sif"], d).ok()?;
    let part = std::process::Command::new("siftool").args(["dump", "1", "pruned.sif"]).current_dir(d).output()?;
    std::fs::write(d.join("part.sqfs"), &part.stdout)?;
    same_as_input(d, "zstd.sqfs", "part.sqfs", "u-sif")
}

/// The gzip image cut in its tables, or with its root inode's reference
/// pointing past the inode table: exit 2 naming it, nothing written.
fn damaged() -> Result<(), Failed> {
    let d = fixture()?;
    let good = std::fs::read(d.join("gzip.sqfs"))?;
    let at = |o: usize| good[o..o + 8].iter().rev().fold(0usize, |v, &b| (v << 8) | usize::from(b));
    let used = at(40);
    let mut root = good.clone();
    root[32..40].copy_from_slice(&(0x7fff_0000u64).to_le_bytes());
    for (file, bytes) in [("cut-linked.sqfs", good[..used - 50].to_vec()), ("root-linked.sqfs", root)] {
        std::fs::write(d.join(file), &bytes)?;
        let out = d.join("refused.out");
        let _ = std::fs::remove_file(&out);
        let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out.to_string_lossy(), file], d);
        let all = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if r.code != 2 || !all.contains(file) || out.exists() {
            return Err(format!("prune {file}: exit {}, wrote {}:\n{all}", r.code, out.exists()).into());
        }
    }
    Ok(())
}

/// An lz4 image of 256 MiB of incompressible files (one with an xattr,
/// one under two names) and a per-GPU file: pruned with a peak RSS under
/// 128 MiB (the mapped image's pages given back as the data is copied),
/// the big files still there, byte for byte, the hard link kept.
fn bounded() -> Result<(), Failed> {
    let t = crate::util::tempdir();
    let d = t.path();
    let lib = d.join("root/usr/lib/rocblas/library");
    std::fs::create_dir_all(&lib)?;
    std::fs::write(lib.join("TensileLibrary_gfx90a.co"), crate::util::bytes(1, 200_000))?;
    let mut sums = Vec::new();
    for i in 0..4u64 {
        let b = crate::util::bytes(10 + i, 64 << 20);
        sums.push(crate::util::md5_hex(&b));
        std::fs::write(d.join(format!("root/big{i}.bin")), b)?;
    }
    std::fs::hard_link(d.join("root/big0.bin"), d.join("root/big0-link.bin"))?;
    setfattr(d, "root/big1.bin", "user.big", "yes")?;
    let args = ["root", "big.sqfs", "-comp", "lz4", "-noappend", "-quiet", "-no-progress"];
    run(Path::new("mksquashfs"), &args, d).ok()?;
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
        same(&format!("big{i}.bin"), &crate::util::md5_hex(&cat.stdout), sum)?;
    }
    run(Path::new("unsquashfs"), &["-q", "-n", "-d", "out", "slim.sqfs"], d).ok()?;
    let l = links(d, "out", &["big0.bin", "big0-link.bin"])?;
    if l[0].0 != 2 || l[0] != l[1] {
        return Err(format!("the hard link: {l:?}").into());
    }
    let x = xattrs(d, "out")?;
    same("the xattr", x.get("big1.bin").cloned(), Some(vec!["user.big=\"yes\"".to_string()]))
}
