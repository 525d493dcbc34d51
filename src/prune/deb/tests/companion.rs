//! A `.deb` holding a library's per-GPU files ([`crate::companion`]):
//! Tensile indexes and code objects, a `library/<arch>/` directory with
//! a subdirectory, MIOpen databases, arch-neutral files, a hard link to a
//! per-GPU file and a conffile that matches the table. Pruned, the files
//! of the GPUs the rules drop leave `data.tar` (with the tar entries of
//! their per-GPU directories and their hard links) and `md5sums` loses
//! exactly their lines; the conffile is refused and left byte for byte;
//! every other entry is copied as it was; `--keep-files` keeps everything
//! and a dry run reports the same removals.

use std::path::Path;

use super::{ar_of, compressed, entries, inflated, md5_of, members, paths, to};
use crate::package::Compression;
use crate::prune::tests::keep;
use crate::prune::{Destination, PathOptions, PathReport, Ptx, prune_path};

/// Where the library's files lie.
const LIB: &str = "usr/lib/rocblas/library/";

/// The entries of `data.tar` in their order, as `md5sums` names them
/// (a directory ends in `/`).
const TREE: &[&str] = &[
    "etc/",
    "etc/miopen/",
    "etc/miopen/db/",
    "etc/miopen/db/gfx906_60.db.txt",
    "usr/",
    "usr/lib/",
    "usr/lib/rocblas/",
    "usr/lib/rocblas/library/",
    "usr/lib/rocblas/library/TensileLibrary.dat",
    "usr/lib/rocblas/library/TensileLibrary_lazy_gfx906.dat",
    "usr/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat",
    "usr/lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco",
    "usr/lib/rocblas/library/Kernels.so-000-gfx90a-xnack-.hsaco",
    "usr/lib/rocblas/library/gfx906/",
    "usr/lib/rocblas/library/gfx906/a.co",
    "usr/lib/rocblas/library/gfx906/sub/",
    "usr/lib/rocblas/library/gfx906/sub/b.dat",
    "usr/lib/rocblas/library/gfx90a/",
    "usr/lib/rocblas/library/gfx90a/a.co",
    "usr/share/",
    "usr/share/miopen/",
    "usr/share/miopen/db/",
    "usr/share/miopen/db/gfx906_60.kdb",
    "usr/share/miopen/db/gfx90a68.kdb",
    "usr/share/doc/",
    "usr/share/doc/k/",
    "usr/share/doc/k/notes",
];

/// The hard link to gfx906's index, and the conffile.
const LINK: &str = "usr/share/doc/k/gfx906-index";
const CONFFILE: &str = "etc/miopen/db/gfx906_60.db.txt";

/// A file's bytes: text (no format prune reads), so only its name can
/// remove it.
fn bytes_of(path: &str) -> Vec<u8> {
    format!("the bytes of {path}\n").repeat(4).into_bytes()
}

fn files() -> impl Iterator<Item = &'static str> {
    TREE.iter().copied().filter(|p| !p.ends_with('/'))
}

/// The package: `data.tar` of [`TREE`] and the hard link, `control.tar`
/// of `control`, `conffiles` and `md5sums`, both compressed by xz.
fn deb() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let head = super::gnu_header;
    let mut h = head(tar::EntryType::Directory, 0o755, 0);
    b.append_data(&mut h, "./", &[][..]).unwrap();
    for p in TREE {
        let (kind, mode, bytes) = match p.ends_with('/') {
            true => (tar::EntryType::Directory, 0o755, Vec::new()),
            false => (tar::EntryType::Regular, 0o644, bytes_of(p)),
        };
        let mut h = head(kind, mode, bytes.len() as u64);
        b.append_data(&mut h, format!("./{p}"), &bytes[..]).unwrap();
    }
    let mut h = head(tar::EntryType::Link, 0o644, 0);
    let target = format!("./{LIB}TensileLibrary_lazy_gfx906.dat");
    b.append_link(&mut h, format!("./{LINK}"), target).unwrap();
    let mut data = b.into_inner().unwrap();
    data.resize(data.len().next_multiple_of(20 * 512), 0);
    let mut c = tar::Builder::new(Vec::new());
    let control = "Package: k\nVersion: 1\nArchitecture: amd64\nDescription: k\n";
    let conffiles = format!("/{CONFFILE}\n");
    let sums = md5sums();
    for (name, text) in [
        ("./control", control),
        ("./conffiles", conffiles.as_str()),
        ("./md5sums", sums.as_str()),
    ] {
        let mut h = head(tar::EntryType::Regular, 0o644, text.len() as u64);
        c.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    let (control, ext) = compressed(Compression::Xz, &c.into_inner().unwrap());
    let (data, _) = compressed(Compression::Xz, &data);
    ar_of(&[
        ("debian-binary", b"2.0\n"),
        (&format!("control.tar{ext}"), &control),
        (&format!("data.tar{ext}"), &data),
    ])
}

/// The lines of `md5sums`: every file, then the hard link.
fn lines() -> Vec<String> {
    let gfx906 = format!("{LIB}TensileLibrary_lazy_gfx906.dat");
    files()
        .map(|p| format!("{}  {p}\n", md5_of(&bytes_of(p))))
        .chain([format!("{}  {LINK}\n", md5_of(&bytes_of(&gfx906)))])
        .collect()
}

fn md5sums() -> String {
    lines().concat()
}

/// Prunes the package, written as `in.deb` in `dir`, keeping `rules`,
/// into `out.deb` (or as `opts` says otherwise).
fn prune(
    dir: &Path,
    rules: &[&str],
    opts: impl FnOnce(&mut PathOptions),
) -> Result<PathReport, crate::prune::PathError> {
    let input = dir.join("in.deb");
    std::fs::write(&input, deb()).unwrap();
    let mut o = to(Destination::File(dir.join("out.deb")));
    opts(&mut o);
    prune_path(&input, &keep(rules, Ptx::Newest), &o)
}

/// The paths removed, below the package.
fn removed(rep: &PathReport) -> Vec<&str> {
    rep.removed
        .iter()
        .map(|f| f.path.split_once("!/").unwrap().1)
        .collect()
}

/// The files `--keep gfx90a` removes, in the order of the archive.
const GONE: [&str; 4] = [
    "usr/lib/rocblas/library/TensileLibrary_lazy_gfx906.dat",
    "usr/lib/rocblas/library/gfx906/a.co",
    "usr/lib/rocblas/library/gfx906/sub/b.dat",
    "usr/share/miopen/db/gfx906_60.kdb",
];

#[test]
fn per_gpu_files_leave_the_package_and_md5sums_and_a_conffile_stays() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let rep = prune(d, &["gfx90a"], |_| {}).unwrap();
    assert_eq!(removed(&rep), GONE);
    for (f, path) in rep.removed.iter().zip(GONE) {
        assert_eq!(f.bytes, bytes_of(path).len() as u64, "{path}");
        assert_eq!(f.gpu.as_deref(), Some("gfx906"), "{path}");
        let library = f.library.as_deref().unwrap();
        let why = f.why.as_deref().unwrap();
        assert!(why.starts_with(&format!("{library} per-GPU file for gfx906 (")));
    }
    assert_eq!(
        rep.removed[0].library.as_deref(),
        Some(crate::companion::TABLE[1].library)
    );
    assert_eq!(rep.removed[3].library.as_deref(), Some("MIOpen"));
    // The conffile: refused (the run exits 1), left as it was.
    assert_eq!(rep.members_refused.len(), 1, "{:?}", rep.members_refused);
    let refusal = &rep.members_refused[0];
    assert!(
        refusal.starts_with(&format!("'{}!/{CONFFILE}': ", rep.path))
            && refusal.contains("conffile"),
        "{refusal}"
    );
    // data.tar: the entries left are the old ones, header and bytes; the
    // files removed, their hard link and the per-GPU directories' entries
    // are gone.
    let (old, new) = (
        members(&deb()),
        members(&std::fs::read(d.join("out.deb")).unwrap()),
    );
    let (old_data, new_data) = (inflated(&old[2].2), inflated(&new[2].2));
    let dirs = [format!("{LIB}gfx906/"), format!("{LIB}gfx906/sub/")];
    let left: Vec<_> = entries(&old_data)
        .into_iter()
        .filter(|(_, p, _)| {
            let p = p.trim_start_matches("./");
            !GONE.contains(&p) && p != LINK && !dirs.iter().any(|d| d == p)
        })
        .collect();
    assert_eq!(left.len(), TREE.len() + 2 - GONE.len() - 1 - dirs.len());
    assert!(entries(&new_data) == left);
    assert_eq!(new_data.len() % (20 * 512), 0);
    assert!(paths(&new_data).contains(&CONFFILE.to_string()));
    // md5sums: exactly their lines gone; control and conffiles as they were.
    let (old_control, new_control) = (entries(&inflated(&old[1].2)), entries(&inflated(&new[1].2)));
    assert_eq!(old_control[..2], new_control[..2]);
    let want: String = lines()
        .into_iter()
        .filter(|l| !GONE.iter().any(|g| l.ends_with(&format!("  {g}\n"))))
        .filter(|l| !l.ends_with(&format!("  {LINK}\n")))
        .collect();
    assert_eq!(String::from_utf8_lossy(&new_control[2].2), want);
    assert_eq!(want.lines().count(), lines().len() - GONE.len() - 1);
    // --strict: the conffile's refusal fails the package; nothing written.
    std::fs::remove_file(d.join("out.deb")).unwrap();
    let e = prune(d, &["gfx90a"], |o| o.strict = true).unwrap_err();
    assert!(e.refused() && e.to_string().contains(CONFFILE), "{e}");
    assert!(!d.join("out.deb").exists());
}

#[test]
fn a_mode_rule_drops_the_other_mode_and_keep_files_keeps_everything() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // gfx90a:xnack- drops the xnack+ code objects, not the others of gfx90a.
    let rep = prune(d, &["gfx90a:xnack-"], |_| {}).unwrap();
    let plus = format!("{LIB}Kernels.so-000-gfx90a-xnack+.hsaco");
    let mut want = GONE.to_vec();
    want.insert(1, &plus);
    assert_eq!(removed(&rep), want);
    assert_eq!(rep.removed[1].gpu.as_deref(), Some("gfx90a:xnack+"));
    let out = members(&std::fs::read(d.join("out.deb")).unwrap());
    let left = paths(&inflated(&out[2].2));
    assert!(!left.contains(&plus));
    assert!(left.contains(&format!("{LIB}Kernels.so-000-gfx90a-xnack-.hsaco")));
    assert!(left.contains(&format!("{LIB}gfx90a/a.co")));
    // --keep-files: nothing removed or refused, the package copied as it is.
    let rep = prune(d, &["gfx90a"], |o| o.keep_files = true).unwrap();
    assert!(rep.removed.is_empty() && rep.members_refused.is_empty());
    assert!(std::fs::read(d.join("out.deb")).unwrap() == deb());
}

#[test]
fn a_dry_run_reports_the_same_removals_and_writes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let real = prune(d, &["gfx90a"], |_| {}).unwrap();
    std::fs::remove_file(d.join("out.deb")).unwrap();
    let dry = prune(d, &["gfx90a"], |o| o.destination = Destination::DryRun).unwrap();
    assert_eq!(dry.removed, real.removed);
    assert_eq!(dry.members_refused, real.members_refused);
    let bytes: u64 = GONE.iter().map(|g| bytes_of(g).len() as u64).sum();
    assert_eq!((dry.freed, dry.output.as_deref()), (bytes, None));
    assert!(!d.join("out.deb").exists());
    // In place, the package is rewritten as with -o.
    let rep = prune(d, &["gfx90a"], |o| o.destination = Destination::InPlace).unwrap();
    assert_eq!(rep.removed, real.removed);
    assert!(
        !paths(&inflated(
            &members(&std::fs::read(d.join("in.deb")).unwrap())[2].2
        ))
        .contains(&GONE[0].to_string())
    );
}
