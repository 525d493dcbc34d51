//! [`prune_path`] on files made here, without LLVM: where the pruned file
//! goes (nowhere in a dry run, a new file, a directory, in place with the
//! input's mode and times, through hard links or not), what is refused
//! with the file left as it was (a tar archive, a thin archive but in
//! place, a signed wheel that would change), and the messages, each
//! naming the file and what failed.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Ptx, hip_bundle, keep};
use crate::prune::path::error::tests::chain;
use crate::prune::{Destination, PathErrorKind, PathOptions, PathReport, Selection, prune_path};

/// Keeps what a gfx90a loads.
fn gfx90a() -> Selection {
    keep(&["gfx90a"], Ptx::Newest)
}

/// Options writing to `destination`.
fn to(destination: Destination) -> PathOptions {
    PathOptions {
        destination,
        ..PathOptions::default()
    }
}

/// The names in `dir`.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A directory holding `k.hipfb`, a HIP bundle (gfx90a, gfx1030, gfx942
/// images), dated in 2001 and of mode 0o751.
fn with_bundle() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.hipfb");
    std::fs::write(&path, hip_bundle()).unwrap();
    set_times(&path, 1_000_000_000);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
    (dir, path)
}

fn set_times(path: &Path, secs: u64) {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_times(std::fs::FileTimes::new().set_accessed(t).set_modified(t))
        .unwrap();
}

fn mtime(path: &Path) -> i64 {
    std::fs::metadata(path).unwrap().mtime()
}

/// The report says what the gfx90a selection keeps of [`hip_bundle`].
fn check_groups(r: &PathReport) {
    let kept: Vec<&str> = r.kept.iter().map(|g| g.target.as_str()).collect();
    let dropped: Vec<&str> = r.dropped.iter().map(|g| g.target.as_str()).collect();
    assert_eq!(kept, ["gfx90a:xnack+", "gfx90a:xnack-"]);
    assert_eq!(dropped, ["gfx942", "gfx1030"]);
    assert!(r.kept.iter().all(|g| g.why.is_some()));
    assert!(r.dropped.iter().all(|g| g.why.is_none() && g.images == 1));
    assert_eq!(r.containers_rewritten, 1);
}

#[test]
fn a_dry_run_writes_nothing() {
    let (dir, path) = with_bundle();
    let before = std::fs::read(&path).unwrap();
    let r = prune_path(&path, &gfx90a(), &PathOptions::default()).unwrap();
    check_groups(&r);
    assert!(r.freed > 0);
    assert_eq!((r.output.as_deref(), r.disk_after), (None, None));
    assert_eq!(
        (r.bytes_before, r.bytes_after),
        (before.len() as u64, before.len() as u64)
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(names(dir.path()), BTreeSet::from(["k.hipfb".to_string()]));
}

#[test]
fn a_new_file_replaces_the_old_whole_with_the_input_mode() {
    let (dir, path) = with_bundle();
    let out = dir.path().join("out.hipfb");
    std::fs::write(&out, b"old").unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::File(out.clone()))).unwrap();
    check_groups(&r);
    let pruned = std::fs::read(&out).unwrap();
    assert_eq!(pruned.len() as u64, r.bytes_after);
    assert_eq!(r.bytes_after, r.bytes_before - r.freed);
    assert_eq!(r.output.as_deref(), Some(out.to_str().unwrap()));
    // The same bytes as the library's own pruning of the input.
    let data = std::fs::read(&path).unwrap();
    let f = crate::prune::prune_file(&data, &gfx90a(), &crate::prune::Options::default()).unwrap();
    assert_eq!(pruned, f.output.unwrap().to_vec(&[&data]).unwrap());
    // Nothing else left in the directory; the mode is the input's, the
    // time a new one.
    assert_eq!(
        names(dir.path()),
        BTreeSet::from(["k.hipfb".into(), "out.hipfb".into()])
    );
    let meta = std::fs::metadata(&out).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    assert_ne!(meta.mtime(), 1_000_000_000);

    // Into a directory, under the input's name.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::Directory(sub.clone()))).unwrap();
    assert_eq!(
        r.output.as_deref(),
        Some(sub.join("k.hipfb").to_str().unwrap())
    );
    assert_eq!(std::fs::read(sub.join("k.hipfb")).unwrap(), pruned);
}

#[test]
fn in_place_the_file_keeps_its_mode_and_times() {
    let (dir, path) = with_bundle();
    let before = std::fs::metadata(&path).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    check_groups(&r);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.len(), r.bytes_after);
    assert!(after.len() < before.len());
    assert_eq!(after.permissions().mode(), before.permissions().mode());
    assert_eq!(
        (after.mtime(), after.atime()),
        (1_000_000_000, 1_000_000_000)
    );
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(names(dir.path()), BTreeSet::from(["k.hipfb".to_string()]));
    // Pruned again: nothing to remove, the file as it was.
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!((r.containers_rewritten, r.freed), (0, 0));
    assert_eq!(r.output, None);
    assert_eq!(r.disk_after, Some(r.disk_before));
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), after.ino());
}

#[test]
fn other_hard_links_keep_the_old_file_unless_asked() {
    let (dir, path) = with_bundle();
    let before = std::fs::read(&path).unwrap();
    let link = dir.path().join("link.hipfb");
    std::fs::hard_link(&path, &link).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!(r.hard_links, 2);
    assert_eq!(std::fs::read(&link).unwrap(), before);
    assert_eq!(std::fs::metadata(&link).unwrap().nlink(), 1);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), r.bytes_after);

    // Through the links: one file, pruned, seen by both names.
    let (dir, path) = with_bundle();
    let link = dir.path().join("link.hipfb");
    std::fs::hard_link(&path, &link).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let mut opts = to(Destination::InPlace);
    opts.keep_hard_links = true;
    let r = prune_path(&path, &gfx90a(), &opts).unwrap();
    assert_eq!(r.hard_links, 2);
    let (a, b) = (
        std::fs::metadata(&path).unwrap(),
        std::fs::metadata(&link).unwrap(),
    );
    assert_eq!((a.ino(), b.ino(), a.nlink()), (ino, ino, 2));
    assert_eq!((a.len(), a.mtime()), (r.bytes_after, 1_000_000_000));
    assert_eq!(std::fs::read(&link).unwrap(), std::fs::read(&path).unwrap());
    assert_eq!(names(dir.path()).len(), 2);
}

#[test]
fn what_is_written_counts_against_max_uncompressed() {
    let (dir, path) = with_bundle();
    let before = std::fs::read(&path).unwrap();
    let out = dir.path().join("out.hipfb");
    let r = prune_path(&path, &gfx90a(), &to(Destination::File(out.clone()))).unwrap();
    std::fs::remove_file(&out).unwrap();
    let limited = |destination, limit: u64| {
        let mut opts = to(destination);
        opts.prune.max_uncompressed = Some(limit);
        opts
    };
    // One byte short: refused by name, nothing written.
    let short = limited(Destination::File(out.clone()), r.bytes_after - 1);
    let e = prune_path(&path, &gfx90a(), &short).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Write);
    let said = chain(&e);
    assert!(
        said.contains("out.hipfb") && said.contains("--max-uncompressed"),
        "{said}"
    );
    assert_eq!(names(dir.path()), BTreeSet::from(["k.hipfb".to_string()]));
    // In place, through other hard links too: the old file stays.
    let link = dir.path().join("link.hipfb");
    std::fs::hard_link(&path, &link).unwrap();
    let mut in_place = limited(Destination::InPlace, r.bytes_after - 1);
    for keep_links in [false, true] {
        in_place.keep_hard_links = keep_links;
        let e = prune_path(&path, &gfx90a(), &in_place).unwrap_err();
        assert_eq!(e.kind(), PathErrorKind::Write);
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(std::fs::metadata(&link).unwrap().nlink(), 2);
    }
    // Exactly enough: written.
    let enough = limited(Destination::File(out.clone()), r.bytes_after);
    prune_path(&path, &gfx90a(), &enough).unwrap();
    assert_eq!(std::fs::metadata(&out).unwrap().len(), r.bytes_after);
}

#[test]
fn a_tar_archive_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.tar");
    let mut t = tar::Builder::new(Vec::new());
    let bundle = hip_bundle();
    let mut h = tar::Header::new_gnu();
    h.set_size(bundle.len() as u64);
    h.set_mode(0o644);
    t.append_data(&mut h, "k.hipfb", &bundle[..]).unwrap();
    let tar = t.into_inner().unwrap();
    std::fs::write(&path, &tar).unwrap();
    set_times(&path, 1_000_000_000);
    let e = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert_eq!(e.path(), path);
    assert_eq!(
        chain(&e),
        format!(
            "'{0}': it is a tar archive holding 2 device image(s) the rules drop (the first in \
             '{0}!/k.hipfb'): prune does not rewrite such archives (unpack it, prune its files, \
             pack it again)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), tar);
    assert_eq!(mtime(&path), 1_000_000_000);
    assert_eq!(names(dir.path()).len(), 1);
}

#[test]
fn what_cannot_be_opened_or_written_is_named() {
    let (dir, path) = with_bundle();
    let missing = dir.path().join("missing");
    let e = prune_path(&missing, &gfx90a(), &PathOptions::default()).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Open);
    assert!(
        chain(&e).starts_with(&format!("'{}': cannot open: ", missing.display())),
        "{}",
        chain(&e)
    );
    let e = std::error::Error::source(&e).unwrap();
    assert_eq!(
        e.downcast_ref::<std::io::Error>().map(|e| e.kind()),
        Some(std::io::ErrorKind::NotFound)
    );

    let out = dir.path().join("no/such/dir/out");
    let e = prune_path(&path, &gfx90a(), &to(Destination::File(out.clone()))).unwrap_err();
    assert_eq!((e.kind(), e.path()), (PathErrorKind::Write, out.as_path()));
    assert!(chain(&e).starts_with(&format!("'{}': cannot write: ", out.display())));

    // A file whose bytes cannot be pruned as asked: the library's error
    // follows the file's name.
    let e = prune_path(
        &path,
        &keep(&["sm_80"], Ptx::Newest),
        &to(Destination::InPlace),
    )
    .unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Content);
    assert_eq!(
        chain(&e),
        format!(
            "'{}': no device image of the file would stay (1 container(s) would keep none): \
             --allow-empty allows that",
            path.display()
        )
    );
    let cause = std::error::Error::source(&e).unwrap();
    assert!(cause.downcast_ref::<crate::Error>().is_some());
}

/// A thin archive of the files `members` (in the archive's directory).
pub(super) fn thin_archive(dir: &Path, members: &[&str]) -> Vec<u8> {
    let mut a = crate::host::ar::THIN_MAGIC.to_vec();
    for m in members {
        let size = std::fs::metadata(dir.join(m)).unwrap().len();
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("{m}/"),
            0,
            0,
            0,
            644,
            size
        );
        assert_eq!(header.len(), 60);
        a.extend_from_slice(header.as_bytes());
    }
    a
}

#[test]
fn a_thin_archive_is_pruned_where_its_members_lie_and_only_in_place() {
    let (dir, path) = with_bundle();
    let archive = dir.path().join("k.a");
    std::fs::write(&archive, thin_archive(dir.path(), &["k.hipfb"])).unwrap();
    let before = std::fs::read(&path).unwrap();
    let out = dir.path().join("out.a");
    let e = prune_path(&archive, &gfx90a(), &to(Destination::File(out))).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert_eq!(
        chain(&e),
        format!(
            "'{}': a thin archive's members are files of their own: --in-place prunes them \
             where they lie (and the archive follows their sizes)",
            archive.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let dry = prune_path(&archive, &gfx90a(), &PathOptions::default()).unwrap();
    check_groups(&dry);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    let r = prune_path(&archive, &gfx90a(), &to(Destination::InPlace)).unwrap();
    check_groups(&r);
    assert_eq!(r.freed, dry.freed);
    let pruned = std::fs::metadata(&path).unwrap().len();
    assert_eq!(pruned, before.len() as u64 - r.freed);
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        thin_archive(dir.path(), &["k.hipfb"]),
        "the member's new size in the archive"
    );
}

/// A GNU archive of two members, `a.hipfb` and `b.hipfb`, each `bundle`.
fn archive_of(bundle: &[u8]) -> Vec<u8> {
    let members = [
        crate::archive::Member {
            name: "a.hipfb".into(),
            data: bundle,
        },
        crate::archive::Member {
            name: "b.hipfb".into(),
            data: bundle,
        },
    ];
    let mut data = Vec::new();
    crate::archive::layout_gnu(&members, false)
        .unwrap()
        .write_to(&mut data, &[bundle, bundle])
        .unwrap();
    data
}

#[test]
fn a_static_archive_is_pruned_member_by_member() {
    let dir = tempfile::tempdir().unwrap();
    let data = archive_of(&hip_bundle());
    let path = dir.path().join("k.a");
    std::fs::write(&path, &data).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!(r.containers_rewritten, 2);
    assert!(r.kept.iter().chain(&r.dropped).all(|g| g.images == 2));
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after.len() as u64, r.bytes_after);
    let entries = crate::host::ar::entries(&after).unwrap();
    assert_eq!(entries.len(), 2);
}

/// An archive is one file to `--allow-empty`: a member whose bundle keeps
/// no device code is emptied (its host entry alone) while another member
/// keeps some; an archive none of whose members would keep any is
/// refused, and left as it was, unless empty containers are allowed.
#[test]
fn an_archive_keeps_device_code_when_one_member_does() {
    let dir = tempfile::tempdir().unwrap();
    let (host, old) = (b"host".to_vec(), super::code_object(7));
    let only_gfx1030 = super::bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", &host),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &old),
        ],
        4096,
    );
    let archive = |bundles: &[&[u8]]| {
        let members: Vec<crate::archive::Member<'_>> = bundles
            .iter()
            .enumerate()
            .map(|(i, b)| crate::archive::Member {
                name: format!("{i}.hipfb"),
                data: b,
            })
            .collect();
        let mut data = Vec::new();
        crate::archive::layout_gnu(&members, false)
            .unwrap()
            .write_to(&mut data, bundles)
            .unwrap();
        data
    };
    let both = dir.path().join("both.a");
    let bundle = hip_bundle();
    std::fs::write(&both, archive(&[&bundle, &only_gfx1030])).unwrap();
    let r = prune_path(&both, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!((r.containers_rewritten, r.emptied), (2, 1));

    let old_only = dir.path().join("old.a");
    let data = archive(&[&only_gfx1030, &only_gfx1030]);
    std::fs::write(&old_only, &data).unwrap();
    let e = prune_path(&old_only, &gfx90a(), &to(Destination::InPlace)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert_eq!(
        chain(&e),
        format!(
            "'{}': no device image of it would stay (2 container(s) would keep none): \
             --allow-empty allows that",
            old_only.display()
        )
    );
    assert_eq!(std::fs::read(&old_only).unwrap(), data);
    let mut opts = to(Destination::InPlace);
    opts.prune.allow_empty = true;
    let r = prune_path(&old_only, &gfx90a(), &opts).unwrap();
    assert_eq!(r.emptied, 2);
}

/// A wheel holding `lib` (a shared library) as `pkg/lib.so`, deflated, and
/// a RECORD naming it; with `signed`, a RECORD.jws too.
pub(super) fn wheel(lib: &[u8], signed: bool) -> Vec<u8> {
    wheel_of(&[("pkg/lib.so", lib)], signed)
}

/// A RECORD row for the member `name` holding `bytes`: its SHA-256 and
/// size, as pip writes them.
pub(super) fn record_row(name: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes));
    format!("{name},sha256={sha},{}", bytes.len())
}

/// A wheel holding `members` (name, bytes), deflated, and a RECORD
/// naming them, each with its hash and size; with `signed`, a RECORD.jws
/// too.
pub(super) fn wheel_of(members: &[(&str, &[u8])], signed: bool) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    let mut record = String::new();
    for (name, bytes) in members {
        z.start_file(*name, deflated).unwrap();
        z.write_all(bytes).unwrap();
        record.push_str(&format!("{}\r\n", record_row(name, bytes)));
    }
    z.start_file("pkg-1.0.dist-info/RECORD", deflated).unwrap();
    record.push_str("pkg-1.0.dist-info/RECORD,,\r\n");
    z.write_all(record.as_bytes()).unwrap();
    if signed {
        z.start_file("pkg-1.0.dist-info/RECORD.jws", deflated)
            .unwrap();
        z.write_all(b"{}").unwrap();
    }
    z.finish().unwrap().into_inner()
}

#[test]
fn a_wheel_gets_its_record_rewritten_and_a_signed_one_is_refused() {
    use base64::Engine as _;
    use sha2::Digest as _;
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let lib = super::linked::library(&super::linked::hip_bundle(4096));
    let path = dir.path().join("pkg-1.0-py3-none-any.whl");
    std::fs::write(&path, wheel(&lib, false)).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!(r.containers_rewritten, 1);
    let mut zin = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    let mut new_lib = Vec::new();
    zin.by_name("pkg/lib.so")
        .unwrap()
        .read_to_end(&mut new_lib)
        .unwrap();
    assert!(new_lib.len() < lib.len());
    let mut record = String::new();
    zin.by_name("pkg-1.0.dist-info/RECORD")
        .unwrap()
        .read_to_string(&mut record)
        .unwrap();
    let sha =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(&new_lib));
    assert_eq!(
        record,
        format!(
            "pkg/lib.so,sha256={sha},{}\r\npkg-1.0.dist-info/RECORD,,\r\n",
            new_lib.len()
        )
    );

    let signed = wheel(&lib, true);
    std::fs::write(&path, &signed).unwrap();
    let e = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert_eq!(
        chain(&e),
        format!(
            "'{}': it is signed ('pkg-1.0.dist-info/RECORD.jws'), and a pruned wheel's \
             signature would not verify: remove the signature files from it first",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), signed);
    assert_eq!(names(dir.path()).len(), 1);
}

/// A wheel's linked members are shrunk where they can be; the report names
/// each one rewritten in place instead, with the reason a file of its own
/// would be given (issue #44: torch's libtorch_nvshmem.so, whose fatbins
/// lie in two sections).
#[test]
fn a_wheel_names_the_members_not_shrunk_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkg-1.0-py3-none-any.whl");
    let (shrinks, _) = super::linked::two_bundles(false);
    let (stays, inside) = super::linked::two_bundles(true);
    let alone = super::linked::prune(&stays, false).unwrap().not_shrunk;
    let why = alone.expect("the library with its table inside is not shrunk");

    std::fs::write(&path, wheel_of(&[("pkg/a.so", &shrinks)], false)).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::DryRun)).unwrap();
    assert_eq!(r.containers_rewritten, 1);
    assert_eq!(r.not_shrunk, None);

    let members = [
        ("pkg/a.so", &shrinks[..]),
        ("pkg/b.so", &stays[..]),
        ("pkg/c.so", &stays[..]),
    ];
    std::fs::write(&path, wheel_of(&members, false)).unwrap();
    let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!(r.containers_rewritten, 3);
    assert_eq!(
        r.not_shrunk.as_deref(),
        Some(format!("'pkg/b.so': {why}; 'pkg/c.so': {why}").as_str())
    );
    assert!(why.contains(&format!("({inside:#x}..")), "{why}");
}

/// A static archive in a wheel is pruned as the archive named alone is
/// (issue #44: nvidia-nvshmem-cu12's libnvshmem_device.a, whose sm_70 to
/// sm_89 cubins a wheel's prune used to leave), deflated or stored; a thin
/// archive, which holds no member's bytes, is copied as it is.
#[test]
fn a_static_archive_in_a_wheel_is_pruned_as_named_alone() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let archive = archive_of(&hip_bundle());
    let alone = dir.path().join("k.a");
    std::fs::write(&alone, &archive).unwrap();
    let r = prune_path(&alone, &gfx90a(), &to(Destination::InPlace)).unwrap();
    assert_eq!(r.containers_rewritten, 2);
    let pruned = std::fs::read(&alone).unwrap();
    assert!(pruned.len() < archive.len());
    std::fs::write(dir.path().join("x.hipfb"), hip_bundle()).unwrap();

    for method in [
        zip::CompressionMethod::Deflated,
        zip::CompressionMethod::Stored,
    ] {
        let thin = thin_archive(dir.path(), &["x.hipfb"]);
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(method);
        z.start_file("pkg/lib/libk.a", opts).unwrap();
        z.write_all(&archive).unwrap();
        z.start_file("pkg/lib/libthin.a", opts).unwrap();
        z.write_all(&thin).unwrap();
        let wheel = z.finish().unwrap().into_inner();
        let path = dir.path().join("pkg-1.0-py3-none-any.whl");
        std::fs::write(&path, &wheel).unwrap();
        let r = prune_path(&path, &gfx90a(), &to(Destination::InPlace)).unwrap();
        assert_eq!(r.containers_rewritten, 2, "{method:?}");
        check_groups_of_two(&r);
        let mut zin = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
        let mut member = Vec::new();
        zin.by_name("pkg/lib/libk.a")
            .unwrap()
            .read_to_end(&mut member)
            .unwrap();
        assert!(member == pruned, "{method:?}: the archive as pruned alone");
        let mut same = Vec::new();
        zin.by_name("pkg/lib/libthin.a")
            .unwrap()
            .read_to_end(&mut same)
            .unwrap();
        assert!(same == thin, "{method:?}: the thin archive as it was");
    }
}

/// What the gfx90a selection keeps and drops of two [`hip_bundle`]s.
fn check_groups_of_two(r: &PathReport) {
    let kept: Vec<&str> = r.kept.iter().map(|g| g.target.as_str()).collect();
    let dropped: Vec<&str> = r.dropped.iter().map(|g| g.target.as_str()).collect();
    assert_eq!(kept, ["gfx90a:xnack+", "gfx90a:xnack-"]);
    assert_eq!(dropped, ["gfx942", "gfx1030"]);
    assert!(r.kept.iter().chain(&r.dropped).all(|g| g.images == 2));
}
