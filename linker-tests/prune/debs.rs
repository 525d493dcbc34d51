//! `offload-kit prune` on Debian packages (issue #44): Debian's
//! librocrand1 pruned to gfx90a is smaller, `dpkg-deb` reads it, `ar`
//! lists the same members with the same fields, `dpkg` installs it into a
//! scratch root and `dpkg --verify` finds every file as its `md5sums`
//! says; the library installed is, byte for byte, the library of the
//! original package pruned alone, and every other file is the original's.
//! And `--in-place` of a package killed with SIGKILL at random points
//! leaves the old package or the new one.

use std::collections::BTreeMap;
use std::path::Path;

use libtest_mimic::{Failed, Trial};

use super::tree::bundle;
use crate::real_libs::{DEB, downloads};
use crate::util::{files, md5_hex, ours, ours_json, run, run_stdin, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(rocrand_installs_and_verifies_with_dpkg, &["dpkg", "dpkg-deb", "ar", "xz"]),
        trial!(killed_in_place_the_package_is_old_or_new, &["dpkg-deb"]),
        trial!(refused_files_exit_1_damaged_data_exit_2, &["dpkg-deb"]),
    ]
}

/// The library in librocrand1's package.
const LIB: &str = "usr/lib/x86_64-linux-gnu/librocrand.so.1.1";

/// The symbolic link to it.
const LINK: &str = "usr/lib/x86_64-linux-gnu/librocrand.so.1";

/// `dpkg` with `args` on the scratch root `root` (below `d`).
///
/// `--root` makes `dpkg` take its instdir and admindir (`root/var/lib/dpkg`,
/// initialised empty by [`scratch_root`]) there, so the machine's own
/// database is never read or written; `--log` keeps its log there too (it
/// is not under `--root`). `--force-depends`: the package's dependencies
/// (libamdhip64-5, libc6, …) are not installed in that root, and without
/// it `dpkg` unpacks the package but leaves it unconfigured. Neither
/// `--force-not-root` nor a chroot is needed when run as root; as another
/// user, `--force-not-root` lets it install files it cannot give to root
/// (librocrand1 has no maintainer scripts, which would need a chroot).
pub(super) fn dpkg(d: &Path, root: &str, args: &[&str]) -> Result<crate::util::Run, Failed> {
    let root_dir = d.join(root);
    let mut all = vec![
        format!("--root={}", root_dir.display()),
        format!("--log={}", root_dir.join("dpkg.log").display()),
        "--force-not-root".to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    Ok(run(Path::new("/usr/bin/dpkg"), &all, d))
}

/// An empty dpkg admin directory under `d/root`.
pub(super) fn scratch_root(d: &Path, root: &str) -> Result<(), Failed> {
    let admin = d.join(root).join("var/lib/dpkg");
    for sub in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(sub))?;
    }
    std::fs::write(admin.join("status"), "")?;
    std::fs::write(admin.join("available"), "")?;
    Ok(())
}

/// `ar tv`'s listing of `deb`, each line without its size.
fn ar_listing(d: &Path, deb: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("/usr/bin/ar"), &["tv", deb], d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| {
            // `rw-r--r-- 0/0 8232764 May 28 16:25 2023 data.tar.xz`
            let f: Vec<&str> = l.split_whitespace().collect();
            [&f[..2], &f[3..]].concat().join(" ")
        })
        .collect())
}

/// The `data.tar.xz` of `deb` is, byte for byte, what Debian's `xz -6
/// -T2` (xz-utils, liblzma's multi-threaded encoder: what dpkg-deb
/// compresses with) writes for the same `data.tar`. It also holds our
/// bundled liblzma's build to the bytes whatever defines it is built with
/// (`.cargo/config.toml`).
fn xz_is_xz_utils(d: &Path, deb: &str) -> Result<(), Failed> {
    let xz = Path::new("/usr/bin/xz");
    let ours = member(d, deb, "data.tar.xz")?;
    let tar = run_stdin(xz, &["-dc"], d, &ours).ok()?.stdout;
    let theirs = run_stdin(xz, &["-6", "-T2", "-c"], d, &tar).ok()?.stdout;
    crate::util::same_bytes("data.tar.xz, ours and xz -6 -T2's", &ours, &theirs)
}

/// The bytes of the `ar` member `member` of `deb`.
pub(super) fn member(d: &Path, deb: &str, member: &str) -> Result<Vec<u8>, Failed> {
    Ok(run(Path::new("/usr/bin/ar"), &["p", deb, member], d).ok()?.stdout)
}

/// `dpkg-deb --contents` of `deb`: each line, the size of `LIB` left out.
fn contents(d: &Path, deb: &str) -> Result<Vec<String>, Failed> {
    let r = run(Path::new("/usr/bin/dpkg-deb"), &["--contents", deb], d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| match l.ends_with(LIB) {
            true => format!("{} {LIB}", l.split_whitespace().next().unwrap_or("")),
            false => l.to_string(),
        })
        .collect())
}

fn rocrand_installs_and_verifies_with_dpkg() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(DEB), d.join("in.deb"))?;
    let doc = ours_json(
        &[
            "prune", "--keep", "gfx90a", "-o", "out.deb", "--json", "in.deb",
        ],
        d,
    )?;
    let file = &doc["files"][0];
    same(
        "containers rewritten",
        file["containers_rewritten"].as_u64(),
        Some(1),
    )?;
    same(
        "targets dropped",
        file["dropped"].as_array().map(Vec::len),
        Some(5),
    )?;
    let size = |f: &str| std::fs::metadata(d.join(f)).map(|m| m.len());
    if size("out.deb")? >= size("in.deb")? {
        return Err("the package did not shrink".into());
    }
    // `freed` is what the files lose before compression, in a dry run
    // and written alike; written, the package's own loss is said apart.
    // The same input gives the same bytes.
    same(
        "package_bytes, the bytes the package lost",
        file["package_bytes"]["freed"].as_u64(),
        Some(size("in.deb")? - size("out.deb")?),
    )?;
    let dry = ours_json(
        &["prune", "--keep", "gfx90a", "--dry-run", "--json", "in.deb"],
        d,
    )?;
    let (would, did) = (dry["files"][0]["freed"].as_u64(), file["freed"].as_u64());
    if would != did || did <= file["package_bytes"]["freed"].as_u64() {
        return Err(format!("freed: dry run {would:?}, written {did:?}").into());
    }
    same(
        "package_bytes in a dry run",
        dry["files"][0]["package_bytes"].as_str(),
        Some("unknown"),
    )?;
    run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "again.deb", "in.deb"],
        d,
    )
    .ok()?;
    same(
        "the package pruned twice",
        md5_hex(&std::fs::read(d.join("again.deb"))?),
        md5_hex(&std::fs::read(d.join("out.deb"))?),
    )?;
    xz_is_xz_utils(d, "out.deb")?;
    // The members, their order and header fields, as binutils lists them.
    same(
        "ar tv, sizes aside",
        ar_listing(d, "out.deb")?,
        ar_listing(d, "in.deb")?,
    )?;
    // dpkg-deb reads both archives of the package.
    let info = run(Path::new("/usr/bin/dpkg-deb"), &["--info", "out.deb"], d).ok()?;
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    if !info.contains("Package: librocrand1") || !info.contains(" md5sums ") {
        return Err(format!("dpkg-deb --info says:\n{info}").into());
    }
    same(
        "dpkg-deb --contents, the library's size aside",
        contents(d, "out.deb")?,
        contents(d, "in.deb")?,
    )?;
    // The original's library pruned alone.
    run(Path::new("/usr/bin/dpkg-deb"), &["-x", "in.deb", "orig"], d).ok()?;
    let orig_lib = format!("orig/{LIB}");
    run(
        &ours(),
        &[
            "prune",
            "--keep",
            "gfx90a",
            "-o",
            "alone.so",
            orig_lib.as_str(),
        ],
        d,
    )
    .ok()?;
    installs_and_verifies(d)
}

/// Installs `out.deb` into a scratch root: every file there is the
/// original package's (`orig/`), the library pruned alone (`alone.so`)
/// in place of its own, and `dpkg --verify` is silent (it is not when a
/// byte of the library changes).
fn installs_and_verifies(d: &Path) -> Result<(), Failed> {
    scratch_root(d, "root")?;
    dpkg(d, "root", &["--force-depends", "-i", "out.deb"])?.ok()?;
    let status = dpkg(d, "root", &["--status", "librocrand1"])?.ok()?;
    let status = String::from_utf8_lossy(&status.stdout).into_owned();
    if !status.contains("Status: install ok installed") {
        return Err(format!("dpkg --status says:\n{status}").into());
    }
    let installed = files(&d.join("root/usr"));
    let mut want: BTreeMap<String, Vec<u8>> = files(&d.join("orig/usr"));
    // The library, and the symbolic link to it (read through).
    let alone = std::fs::read(d.join("alone.so"))?;
    for name in [LIB, LINK] {
        want.insert(name.trim_start_matches("usr/").to_string(), alone.clone());
    }
    same(
        "the symbolic link installed",
        std::fs::read_link(d.join("root").join(LINK))?,
        "librocrand.so.1.1".into(),
    )?;
    same(
        "the files installed (MD5)",
        installed
            .iter()
            .map(|(k, v)| (k.clone(), md5_hex(v)))
            .collect::<Vec<_>>(),
        want.iter()
            .map(|(k, v)| (k.clone(), md5_hex(v)))
            .collect::<Vec<_>>(),
    )?;
    // dpkg --verify exits 0 either way; what it prints is the verdict.
    let verify = dpkg(d, "root", &["--verify", "librocrand1"])?.ok()?;
    same(
        "dpkg --verify",
        String::from_utf8_lossy(&verify.stdout).into_owned(),
        String::new(),
    )?;
    let lib = d.join("root").join(LIB);
    let mut bytes = std::fs::read(&lib)?;
    bytes[100] ^= 1;
    std::fs::write(&lib, &bytes)?;
    let verify = dpkg(d, "root", &["--verify", "librocrand1"])?.ok()?;
    let said = String::from_utf8_lossy(&verify.stdout).into_owned();
    if !said
        .lines()
        .any(|l| l.starts_with("??5") && l.ends_with(&format!(" /{LIB}")))
    {
        return Err(format!("dpkg --verify of a changed library said: {said:?}").into());
    }
    Ok(())
}

/// A seed for the kill points: the time, printed on failure so that a
/// run can be replayed.
fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1
}

/// Builds `orig.deb` in `d` with `dpkg-deb` (gzip): two HIP bundles
/// (gfx90a and gfx942 images of `len` bytes each), the files `extra`
/// (path below the root, bytes), and their `md5sums`.
fn package(d: &Path, len: usize, extra: &[(&str, &[u8])]) -> Result<(), Failed> {
    std::fs::create_dir_all(d.join("pkg/DEBIAN"))?;
    std::fs::create_dir_all(d.join("pkg/usr/lib"))?;
    let mut sums = String::new();
    for (i, name) in ["k1.hipfb", "k2.hipfb"].iter().enumerate() {
        let s = 10 * i as u64;
        let path = format!("pkg/usr/lib/{name}");
        bundle(d, &path, &[("gfx90a", s + 1, len), ("gfx942", s + 2, len)])?;
        let md5 = md5_hex(&std::fs::read(d.join(&path))?);
        sums += &format!("{md5}  usr/lib/{name}\n");
    }
    for (path, bytes) in extra {
        std::fs::write(d.join("pkg").join(path), bytes)?;
        sums += &format!("{}  {path}\n", md5_hex(bytes));
    }
    std::fs::write(d.join("pkg/DEBIAN/md5sums"), sums)?;
    std::fs::write(
        d.join("pkg/DEBIAN/control"),
        "Package: k\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@example.com>\n\
         Description: two HIP bundles\n",
    )?;
    run(
        Path::new("/usr/bin/dpkg-deb"),
        &["-Zgzip", "--root-owner-group", "--build", "pkg", "orig.deb"],
        d,
    )
    .ok()?;
    Ok(())
}

/// A package of [`package`] (images of 3 MiB) pruned `--in-place` and
/// killed with SIGKILL 20 times at random points of its run: each time
/// the file at the path is the old package or the new one, and any
/// `.offload-kit-*` file left beside it is a whole copy of either.
fn killed_in_place_the_package_is_old_or_new() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    package(d, 3 << 20, &[])?;
    let args = ["prune", "--keep", "gfx90a", "--in-place", "work.deb"];
    std::fs::copy(d.join("orig.deb"), d.join("work.deb"))?;
    let old = md5_hex(&std::fs::read(d.join("work.deb"))?);
    let start = std::time::Instant::now();
    run(&ours(), &args, d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    let new = md5_hex(&std::fs::read(d.join("work.deb"))?);
    if new == old {
        return Err("the prune changed nothing".into());
    }
    let mut x = seed();
    let (mut olds, mut news) = (0, 0);
    for round in 0..20 {
        std::fs::copy(d.join("orig.deb"), d.join("work.deb"))?;
        let after = crate::util::kill_point(&mut x, round, 20, whole);
        crate::util::ours_killed_after(&args, d, after)?;
        let at = format!("round {round} (seed {x}, killed after {after} µs of {whole})");
        match md5_hex(&std::fs::read(d.join("work.deb"))?) {
            h if h == old => olds += 1,
            h if h == new => news += 1,
            _ => {
                return Err(
                    format!("{at}: work.deb is neither the old nor the new package").into(),
                );
            }
        }
        super::temporaries_whole(d, &at, &old, &new)?;
    }
    if olds == 0 || news == 0 {
        return Err(format!("{olds} old and {news} new packages in 20 kills: no spread").into());
    }
    Ok(())
}

/// A package holding a thin archive (refused: its members are files of
/// their own) besides two bundles: pruned, the bundles are and the
/// archive is listed (`not pruned: 'in.deb!/usr/lib/k.a': …`), exit 1,
/// the package written with the archive as it was. Cut short, the package
/// is damaged data: exit 2, nothing written.
fn refused_files_exit_1_damaged_data_exit_2() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let thin = b"!<thin>\nk1.hipfb/       0           0     0     644     64        `\n";
    package(d, 5000, &[("usr/lib/k.a", thin)])?;
    std::fs::rename(d.join("orig.deb"), d.join("in.deb"))?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "out.deb", "in.deb"],
        d,
    );
    same("exit code with a refused file", r.code, 1)?;
    let out = String::from_utf8_lossy(&r.stdout).into_owned();
    if !out.contains("not pruned: 'in.deb!/usr/lib/k.a': ") || !r.stderr.is_empty() {
        return Err(format!("prune said:\n{out}\n{}", r.stderr).into());
    }
    run(Path::new("/usr/bin/dpkg-deb"), &["-x", "out.deb", "x"], d).ok()?;
    same(
        "the thin archive",
        std::fs::read(d.join("x/usr/lib/k.a"))?,
        thin.to_vec(),
    )?;
    if std::fs::metadata(d.join("x/usr/lib/k1.hipfb"))?.len() >= 10_000 {
        return Err("k1.hipfb was not pruned".into());
    }
    let doc: serde_json::Value = serde_json::from_slice(
        &run(
            &ours(),
            &["prune", "--keep", "gfx90a", "--dry-run", "--json", "in.deb"],
            d,
        )
        .stdout,
    )?;
    same("refused in JSON", doc["total"]["refused"].as_u64(), Some(1))?;
    same(
        "members_refused",
        doc["files"][0]["members_refused"].as_array().map(Vec::len),
        Some(1),
    )?;
    let whole = std::fs::read(d.join("in.deb"))?;
    std::fs::write(d.join("cut.deb"), &whole[..whole.len() - 300])?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "cut-out.deb", "cut.deb"],
        d,
    );
    same("exit code of a damaged package", r.code, 2)?;
    if !r.stderr.starts_with("error: 'cut.deb': ") || d.join("cut-out.deb").exists() {
        return Err(format!("prune of a damaged package said: {}", r.stderr).into());
    }
    Ok(())
}
