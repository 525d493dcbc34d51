//! Debian packages built here (HIP bundles under `/usr/lib`, a hard link,
//! a symbolic link, a long name, a refused thin archive, `md5sums`),
//! pruned with [`prune_path`] and read back member by member: the `ar`
//! headers, the tar headers, the compression, the files (each the bytes
//! its pruning alone gives) and `md5sums`.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;

use md5::Digest as _;

use super::method;
use crate::host::ar;
use crate::num::usize_from;
use crate::package::deb::md5sums::hex;
use crate::package::{self, Compression};
use crate::prune::PackageBytes;
use crate::prune::path::error::tests::chain;
use crate::prune::tests::{hip_bundle, keep};
use crate::prune::{Destination, PathErrorKind, PathOptions, PathReport, Ptx, prune_path};

/// The long path of the second bundle (a GNU long-name entry in tar).
fn long_path() -> String {
    format!("usr/lib/{}/k.hipfb", "d".repeat(110))
}

/// The regular files of the package: path (as `md5sums` gives it) and
/// bytes.
fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        ("usr/lib/k.hipfb".into(), hip_bundle()),
        // Refused whatever the rules: its members are files of their own.
        (
            "usr/lib/thin.a".into(),
            b"!<thin>\nk.o/            0           0     0     644     4         `\n".to_vec(),
        ),
        (long_path(), hip_bundle()),
        (
            "usr/share/doc/k/notes".into(),
            b"no device code here\n".repeat(10),
        ),
    ]
}

/// A GNU tar header of `kind`, `mode` and `size`, of a fixed time.
fn gnu_header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(1_685_290_000);
    h
}

/// A tar archive of GNU headers: directories, the [`files`], a hard link
/// to the first and a symbolic link to it, in a fixed order.
fn data_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let head = |kind: tar::EntryType, mode: u32, size: u64| {
        let mut h = gnu_header(kind, mode, size);
        h.set_username("root").unwrap();
        h.set_groupname("root").unwrap();
        h
    };
    for d in ["./", "./usr/", "./usr/lib/", "./usr/share/doc/k/"] {
        let mut h = head(tar::EntryType::Directory, 0o755, 0);
        b.append_data(&mut h, d, &[][..]).unwrap();
    }
    for (path, bytes) in files() {
        let mut h = head(tar::EntryType::Regular, 0o644, bytes.len() as u64);
        b.append_data(&mut h, format!("./{path}"), &bytes[..])
            .unwrap();
    }
    let mut h = head(tar::EntryType::Link, 0o644, 0);
    b.append_link(&mut h, "./usr/lib/k2.hipfb", "./usr/lib/k.hipfb")
        .unwrap();
    let mut h = head(tar::EntryType::Symlink, 0o777, 0);
    b.append_link(&mut h, "./usr/lib/k.link", "k.hipfb")
        .unwrap();
    // Padded to whole records of 20 blocks, as GNU tar writes.
    let mut t = b.into_inner().unwrap();
    t.resize(t.len().next_multiple_of(20 * 512), 0);
    t
}

/// The `md5sums` of [`files`] and the hard link.
fn md5sums() -> String {
    let mut text = String::new();
    for (path, bytes) in files() {
        text += &format!("{}  {path}\n", md5_of(&bytes));
        if path == "usr/lib/k.hipfb" {
            text += &format!("{}  usr/lib/k2.hipfb\n", md5_of(&bytes));
        }
    }
    text
}

fn md5_of(b: &[u8]) -> String {
    hex(&md5::Md5::digest(b).into())
}

/// The control archive: `control` and `md5sums`.
fn control_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let control = "Package: k\nVersion: 1\nArchitecture: amd64\nDescription: k\n";
    let sums = md5sums();
    for (name, text) in [("./control", control), ("./md5sums", sums.as_str())] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(text.len() as u64);
        h.set_mtime(1_685_290_000);
        b.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

/// `data` compressed by `c` at another level than prune's, and the
/// member name's suffix.
fn compressed(c: Compression, data: &[u8]) -> (Vec<u8>, &'static str) {
    match c {
        Compression::None => (data.to_vec(), ""),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            (e.finish().unwrap(), ".gz")
        }
        Compression::Xz => {
            let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
            e.write_all(data).unwrap();
            (e.finish().unwrap(), ".xz")
        }
        Compression::Zstd => (zstd::encode_all(data, 1).unwrap(), ".zst"),
        Compression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(data).unwrap();
            (e.finish().unwrap(), ".bz2")
        }
        Compression::Lzma => {
            let o = liblzma::stream::LzmaOptions::new_preset(1).unwrap();
            let s = liblzma::stream::Stream::new_lzma_encoder(&o).unwrap();
            let mut e = liblzma::write::XzEncoder::new_stream(Vec::new(), s);
            e.write_all(data).unwrap();
            (e.finish().unwrap(), ".lzma")
        }
        Compression::Lz4 | Compression::Lzip => unreachable!("dpkg-deb writes neither"),
    }
}

/// An `ar` archive of `members`, headers as dpkg-deb writes them (with a
/// time, owner and mode of their own, to see them kept).
fn ar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut a = crate::host::ar::MAGIC.to_vec();
    for (i, (name, bytes)) in members.iter().enumerate() {
        let header = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            1_685_290_000 + i,
            i,
            2 * i,
            100_640 + i,
            bytes.len()
        );
        a.extend_from_slice(header.as_bytes());
        a.extend_from_slice(bytes);
        if bytes.len() % 2 == 1 {
            a.push(b'\n');
        }
    }
    a
}

/// A package of [`control_tar`] and [`data_tar`], both compressed by `c`.
fn deb(c: Compression) -> Vec<u8> {
    let (control, ext) = compressed(c, &control_tar());
    let (data, _) = compressed(c, &data_tar());
    ar_of(&[
        ("debian-binary", b"2.0\n"),
        (&format!("control.tar{ext}"), &control),
        (&format!("data.tar{ext}"), &data),
    ])
}

/// The members of the package `deb`: name, header and bytes.
fn members(deb: &[u8]) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    ar::entries(deb)
        .unwrap()
        .iter()
        .map(|e| {
            let (h, d) = (usize_from(e.header), usize_from(e.data));
            (
                String::from_utf8_lossy(e.name).into_owned(),
                deb[h..h + 60].to_vec(),
                deb[d..d + usize_from(e.size)].to_vec(),
            )
        })
        .collect()
}

/// A member's tar archive, inflated.
fn inflated(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    package::decoder(bytes, method(bytes).unwrap())
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The raw entries of a tar archive (GNU long-name entries apart): the
/// header block, the path and the data.
fn entries(tar_bytes: &[u8]) -> Vec<([u8; 512], String, Vec<u8>)> {
    let mut a = tar::Archive::new(tar_bytes);
    a.entries()
        .unwrap()
        .raw(true)
        .map(|e| {
            let mut e = e.unwrap();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            let path = String::from_utf8_lossy(&e.path_bytes()).into_owned();
            (*e.header().as_bytes(), path, data)
        })
        .collect()
}

fn to(destination: Destination) -> PathOptions {
    PathOptions {
        destination,
        ..PathOptions::default()
    }
}

/// `bytes` pruned to gfx90a as a file named alone.
fn pruned_alone(dir: &Path, bytes: &[u8]) -> Vec<u8> {
    let (input, out) = (dir.join("alone.hipfb"), dir.join("alone.out"));
    std::fs::write(&input, bytes).unwrap();
    let sel = keep(&["gfx90a"], Ptx::Newest);
    prune_path(&input, &sel, &to(Destination::File(out.clone()))).unwrap();
    std::fs::read(out).unwrap()
}

/// Prunes the package `bytes` to gfx90a with `opts` made for the paths
/// of `in.deb` and `out.deb` in `dir`.
fn prune_deb(
    dir: &Path,
    bytes: &[u8],
    opts: impl Fn(&Path, &Path) -> PathOptions,
) -> Result<PathReport, crate::prune::PathError> {
    let (input, out) = (dir.join("in.deb"), dir.join("out.deb"));
    std::fs::write(&input, bytes).unwrap();
    prune_path(&input, &keep(&["gfx90a"], Ptx::Newest), &opts(&input, &out))
}

#[test]
fn every_file_is_pruned_as_alone_and_nothing_else_changes() {
    for c in [
        Compression::None,
        Compression::Gzip,
        Compression::Xz,
        Compression::Zstd,
        Compression::Bzip2,
        Compression::Lzma,
    ] {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let input = deb(c);
        let rep = prune_deb(d, &input, |_, o| to(Destination::File(o.to_path_buf()))).unwrap();
        let alone = pruned_alone(d, &hip_bundle());
        assert!(alone.len() < hip_bundle().len());
        // Written, the package says what it lost in size, compressed
        // again; `freed` stays what its files lose (as in a dry run: below).
        let lost = rep.bytes_before.saturating_sub(rep.bytes_after);
        let grew = rep.bytes_after.saturating_sub(rep.bytes_before);
        let said = match grew {
            0 => PackageBytes::Freed(lost),
            n => PackageBytes::Grew(n),
        };
        assert_eq!(rep.package_bytes, Some(said));
        assert_eq!(rep.containers_rewritten, 2);
        assert_eq!(rep.members_refused.len(), 1, "{c:?}");
        assert!(
            rep.members_refused[0].starts_with(&format!("'{}!/usr/lib/thin.a': ", rep.path)),
            "{}",
            rep.members_refused[0]
        );
        let out = std::fs::read(d.join("out.deb")).unwrap();
        assert_eq!(rep.bytes_after, out.len() as u64);
        let (old, new) = (members(&input), members(&out));
        // The members in their order, each header as it was but for the
        // size; each tar compressed again with its own method.
        assert_eq!(old.len(), new.len());
        for ((name, h0, b0), (name1, h1, b1)) in old.iter().zip(&new) {
            assert_eq!(name, name1);
            assert_eq!((&h0[..48], &h0[58..]), (&h1[..48], &h1[58..]), "{name}");
            assert_eq!(method(b0), method(b1), "{name}");
        }
        assert_eq!(old[0], new[0], "debian-binary");
        // data.tar: the bundles' headers changed in size and checksum only
        // and hold the bytes of each pruned alone; the rest as it was.
        let (old_data, new_data) = (inflated(&old[2].2), inflated(&new[2].2));
        assert_eq!(new_data.len() % (20 * 512), 0, "a whole number of records");
        let (old_entries, new_entries) = (entries(&old_data), entries(&new_data));
        assert_eq!(old_entries.len(), new_entries.len());
        assert!(old_entries.iter().any(|(h, _, _)| h[156] == b'L'));
        let mut rewritten = 0;
        for ((h0, p0, d0), (h1, p1, d1)) in old_entries.iter().zip(&new_entries) {
            assert_eq!(p0, p1);
            if *d0 == hip_bundle() {
                let same: Vec<usize> = (0..512).filter(|&i| h0[i] != h1[i]).collect();
                assert!(
                    same.iter()
                        .all(|i| (124..136).contains(i) || (148..156).contains(i))
                );
                assert_eq!(d1, &alone, "{p0}");
                rewritten += 1;
            } else {
                assert_eq!((h0, d0), (h1, d1), "{p0}");
            }
        }
        assert_eq!(rewritten, 2);
        // md5sums: the bundles' lines (and the hard link's) with the
        // pruned bytes' hash; control and the other lines as they were.
        let (old_control, new_control) =
            (entries(&inflated(&old[1].2)), entries(&inflated(&new[1].2)));
        assert_eq!(old_control[0], new_control[0], "control");
        let want = md5sums().replace(&md5_of(&hip_bundle()), &md5_of(&alone));
        assert_eq!(String::from_utf8_lossy(&new_control[1].2), want);
        assert_eq!(want.matches(&md5_of(&alone)).count(), 3);
        // The same input gives the same bytes.
        prune_deb(d, &input, |_, o| to(Destination::File(o.to_path_buf()))).unwrap();
        assert!(std::fs::read(d.join("out.deb")).unwrap() == out, "{c:?}");
        // --strict: the thin archive's refusal fails the package, and
        // nothing is written.
        std::fs::remove_file(d.join("out.deb")).unwrap();
        let e = prune_deb(d, &input, |_, o| {
            let mut s = to(Destination::File(o.to_path_buf()));
            s.strict = true;
            s
        })
        .unwrap_err();
        assert!(e.refused() && e.to_string().contains("thin.a"), "{e}");
        assert!(!d.join("out.deb").exists());
    }
}

#[test]
fn a_dry_run_writes_nothing_and_a_package_with_nothing_to_prune_stays() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let input = deb(Compression::Xz);
    let real = prune_deb(d, &input, |_, o| to(Destination::File(o.to_path_buf()))).unwrap();
    std::fs::remove_file(d.join("out.deb")).unwrap();
    let dry = prune_deb(d, &input, |_, _| to(Destination::DryRun)).unwrap();
    // Dry or written, `freed` is what the files lose before compression;
    // what the package lost in size is known once written.
    let alone = pruned_alone(d, &hip_bundle());
    let files_lose = 2 * (hip_bundle().len() - alone.len()) as u64;
    assert_eq!((dry.freed, dry.output.as_deref()), (files_lose, None));
    assert_eq!(real.freed, files_lose);
    assert_eq!(dry.package_bytes, Some(PackageBytes::Unknown));
    let lost = real.bytes_before.saturating_sub(real.bytes_after);
    assert_eq!(real.package_bytes, Some(PackageBytes::Freed(lost)));
    assert_eq!(dry.members_refused, real.members_refused);
    assert!(!d.join("out.deb").exists());
    // Nothing to prune: copied as it is to another file, untouched in
    // place.
    let all = keep(&["gfx90a", "gfx1030", "gfx942"], Ptx::Newest);
    let (in_deb, out_deb) = (d.join("in.deb"), d.join("out.deb"));
    let rep = prune_path(&in_deb, &all, &to(Destination::File(out_deb.clone()))).unwrap();
    assert_eq!(rep.containers_rewritten, 0);
    assert!(std::fs::read(&out_deb).unwrap() == input);
    let before = std::fs::metadata(&in_deb).unwrap();
    prune_path(&in_deb, &all, &to(Destination::InPlace)).unwrap();
    let after = std::fs::metadata(&in_deb).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
}

#[test]
fn damaged_packages_are_errors_and_nothing_is_written() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let file = |o: &Path| to(Destination::File(o.to_path_buf()));
    // data.tar.xz cut short (its ar header says so).
    let m = members(&deb(Compression::Xz));
    let cut = &m[2].2[..m[2].2.len() / 2];
    let bad = ar_of(&[
        ("debian-binary", &m[0].2),
        ("control.tar.xz", &m[1].2),
        ("data.tar.xz", cut),
    ]);
    let e = prune_deb(d, &bad, |_, o| file(o)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Content, "{}", chain(&e));
    assert!(!e.refused());
    assert!(!d.join("out.deb").exists());
    // A tar header that does not match its checksum.
    let mut data = data_tar();
    data[600] ^= 1;
    let bad = ar_of(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar", &control_tar()),
        ("data.tar", &data),
    ]);
    let e = prune_deb(d, &bad, |_, o| file(o)).unwrap_err();
    assert!(
        chain(&e).ends_with("does not match its checksum"),
        "{}",
        chain(&e)
    );
    // A member running past the end of the package.
    let good = deb(Compression::None);
    let e = prune_deb(d, &good[..good.len() - 100], |_, o| file(o)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Content, "{}", chain(&e));
    // No data.tar.
    let e = prune_deb(d, &ar_of(&[("debian-binary", b"2.0\n")]), |_, o| file(o)).unwrap_err();
    assert!(
        chain(&e).ends_with("it has no data.tar member"),
        "{}",
        chain(&e)
    );
    assert!(!d.join("out.deb").exists());
}

#[test]
fn refusals_of_the_whole_package() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let file = |o: &Path| to(Destination::File(o.to_path_buf()));
    // Signed: its signature would not verify.
    let mut m: Vec<(String, Vec<u8>)> = members(&deb(Compression::Gzip))
        .into_iter()
        .map(|(n, _, b)| (n, b))
        .collect();
    m.push((
        "_gpgorigin".into(),
        b"-----BEGIN PGP SIGNATURE-----".to_vec(),
    ));
    let list: Vec<(&str, &[u8])> = m.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    let e = prune_deb(d, &ar_of(&list), |_, o| file(o)).unwrap_err();
    assert_eq!(e.kind(), PathErrorKind::Refused);
    assert!(
        chain(&e).contains("it is signed ('_gpgorigin')"),
        "{}",
        chain(&e)
    );
    // bzip2 data is read: damaged, it is an error naming the member (it
    // was a refusal while bzip2 was not read).
    let bz = ar_of(&[
        ("debian-binary", b"2.0\n"),
        (
            "control.tar.gz",
            &compressed(Compression::Gzip, &control_tar()).0,
        ),
        ("data.tar.bz2", b"BZh91AY&SY not read here"),
    ]);
    let e = prune_deb(d, &bz, |_, o| file(o)).unwrap_err();
    assert!(!e.refused(), "{}", chain(&e));
    assert!(
        chain(&e).contains("member 'data.tar.bz2' cannot be read: bzip2"),
        "{}",
        chain(&e)
    );
    // No device image would stay, without --allow-empty.
    let input = d.join("in.deb");
    std::fs::write(&input, deb(Compression::Zstd)).unwrap();
    let sm80 = keep(&["sm_80"], Ptx::Newest);
    let e = prune_path(&input, &sm80, &file(&d.join("out.deb"))).unwrap_err();
    assert!(
        e.refused() && chain(&e).contains("no device image of it would stay"),
        "{}",
        chain(&e)
    );
    let mut opts = file(&d.join("out.deb"));
    opts.prune.allow_empty = true;
    assert_eq!(prune_path(&input, &sm80, &opts).unwrap().emptied, 2);
    std::fs::remove_file(d.join("out.deb")).unwrap();
    // Past the decompression budget.
    let mut opts = file(&d.join("out.deb"));
    opts.prune.max_uncompressed = Some(20_000);
    let e = prune_path(&input, &keep(&["gfx90a"], Ptx::Newest), &opts).unwrap_err();
    assert!(
        chain(&e).contains(
            "inflates to more than the 20000 bytes left of the decompression \
                            budget (--max-uncompressed)"
        ),
        "{}",
        chain(&e)
    );
    assert!(!d.join("out.deb").exists());
}

#[test]
fn hard_links_share_the_new_hash() {
    let changed: BTreeMap<Vec<u8>, [u8; 16]> = [(b"usr/lib/a".to_vec(), [7; 16])].into();
    let links = [
        (b"usr/lib/b".to_vec(), b"usr/lib/a".to_vec()),
        (b"usr/lib/c".to_vec(), b"usr/lib/other".to_vec()),
    ];
    let all = super::with_links(changed, &links);
    assert_eq!(all.keys().collect::<Vec<_>>(), [b"usr/lib/a", b"usr/lib/b"]);
}

/// The paths of a tar archive's entries, long names read.
fn paths(tar_bytes: &[u8]) -> Vec<String> {
    let mut a = tar::Archive::new(tar_bytes);
    a.entries()
        .unwrap()
        .map(|e| String::from_utf8_lossy(&e.unwrap().path_bytes()).into_owned())
        .collect()
}

#[test]
fn files_only_other_gpus_load_go_with_their_hard_links_and_md5sums_lines() {
    use crate::prune::tests::removed::hsaco;
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let long = format!("usr/lib/{}/k_gfx1030.hsaco", "d".repeat(110));
    let files = [
        ("usr/lib/k_gfx90a.hsaco".to_string(), hsaco(0x3f, 1)),
        (long.clone(), hsaco(0x36, 2)),
        ("usr/share/doc/k/notes".to_string(), b"notes\n".repeat(20)),
    ];
    let mut b = tar::Builder::new(Vec::new());
    let mut sums = String::new();
    for (path, bytes) in &files {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, format!("./{path}"), &bytes[..])
            .unwrap();
        sums += &format!("{}  {path}\n", md5_of(bytes));
    }
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Link);
    b.append_link(&mut h, "./usr/lib/k_link.hsaco", format!("./{long}"))
        .unwrap();
    sums += &format!("{}  usr/lib/k_link.hsaco\n", md5_of(&files[1].1));
    let data = b.into_inner().unwrap();
    let mut c = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_mode(0o644);
    h.set_size(sums.len() as u64);
    c.append_data(&mut h, "./md5sums", sums.as_bytes()).unwrap();
    let control = c.into_inner().unwrap();
    let (control, ext) = compressed(Compression::Xz, &control);
    let (data, _) = compressed(Compression::Xz, &data);
    let input = ar_of(&[
        ("debian-binary", b"2.0\n"),
        (&format!("control.tar{ext}"), &control),
        (&format!("data.tar{ext}"), &data),
    ]);
    let rep = prune_deb(d, &input, |_, o| to(Destination::File(o.to_path_buf()))).unwrap();
    let gone: Vec<(&str, u64)> = rep
        .removed
        .iter()
        .map(|f| (f.path.as_str(), f.bytes))
        .collect();
    let name = format!("{}!/{long}", d.join("in.deb").display());
    assert_eq!(gone, [(name.as_str(), 400)]);
    let new = members(&std::fs::read(d.join("out.deb")).unwrap());
    assert_eq!(
        paths(&inflated(&new[2].2)),
        ["usr/lib/k_gfx90a.hsaco", "usr/share/doc/k/notes"]
    );
    let control = entries(&inflated(&new[1].2));
    let want = format!(
        "{}  usr/lib/k_gfx90a.hsaco\n{}  usr/share/doc/k/notes\n",
        md5_of(&files[0].1),
        md5_of(&files[2].1)
    );
    assert_eq!(String::from_utf8_lossy(&control[0].2), want);
    // Kept (--keep-files): the file is refused, left as it was, and the
    // package written without change to it.
    let rep = prune_deb(d, &input, |_, o| {
        let mut opts = to(Destination::File(o.to_path_buf()));
        opts.keep_files = true;
        opts
    })
    .unwrap();
    assert!(rep.removed.is_empty());
    assert_eq!(rep.members_refused.len(), 1, "{:?}", rep.members_refused);
}

mod companion;

/// An `md5sums` too large to read refuses the package, in a dry run as
/// when written: its rows would go unchecked (it was skipped as if empty).
#[test]
fn an_md5sums_too_large_to_read_is_refused_not_skipped() {
    let t = tempfile::tempdir().unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let control = b"Package: k\nVersion: 1\nArchitecture: amd64\nDescription: k\n";
    let sums = vec![b'\n'; usize::try_from(crate::files::SPOOL_IN_MEMORY).unwrap() + 1];
    for (name, text) in [("./control", &control[..]), ("./md5sums", &sums[..])] {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(text.len() as u64);
        b.append_data(&mut h, name, text).unwrap();
    }
    let control = compressed(Compression::Zstd, &b.into_inner().unwrap()).0;
    let data = compressed(Compression::Zstd, &data_tar()).0;
    let package = ar_of(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar.zst", &control),
        ("data.tar.zst", &data),
    ]);
    for destination in [Destination::DryRun, Destination::InPlace] {
        let e = prune_deb(t.path(), &package, |_, _| to(destination.clone())).unwrap_err();
        assert!(
            chain(&e).contains("its md5sums holds 67108865 bytes, more than the"),
            "{}",
            chain(&e)
        );
        assert_eq!(std::fs::read(t.path().join("in.deb")).unwrap(), package);
    }
}
