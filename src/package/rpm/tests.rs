//! RPMs made by hand, small: a good one of each payload form, then every
//! kind of lie (bad magic, counts and sizes past the end, a stripped entry
//! naming a file the header does not list), each an error, never a panic.

#![allow(
    clippy::cast_possible_truncation,
    reason = "the headers made here are small: their lengths fit in 32 bits"
)]

use std::io::Write;

use crate::error::Result;
use crate::package::{Contents, Kind, Members, detect, members};

/// Records what the walk hands over: each member's path and bytes.
#[derive(Default)]
struct Record(Vec<(String, Vec<u8>)>);

impl Members for Record {
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()> {
        let mut v = Vec::new();
        if let Ok(Contents::Stream { reader, .. }) = contents {
            let _ = reader.read_to_end(&mut v);
        }
        self.0.push((path.to_string(), v));
        Ok(())
    }
}

/// A header entry's data: its tag, type, count and bytes.
struct Tag(u32, u32, u32, Vec<u8>);

/// A string entry.
fn string(tag: u32, s: &str) -> Tag {
    Tag(tag, 6, 1, [s.as_bytes(), b"\0"].concat())
}

/// A string array entry.
fn strings(tag: u32, v: &[&str]) -> Tag {
    let data = v
        .iter()
        .flat_map(|s| [s.as_bytes(), b"\0"].concat())
        .collect();
    Tag(tag, 8, v.len() as u32, data)
}

/// An array of 32-bit numbers.
fn int32s(tag: u32, v: &[u32]) -> Tag {
    Tag(
        tag,
        4,
        v.len() as u32,
        v.iter().flat_map(|n| n.to_be_bytes()).collect(),
    )
}

/// An array of 16-bit numbers.
fn int16s(tag: u32, v: &[u16]) -> Tag {
    Tag(
        tag,
        3,
        v.len() as u32,
        v.iter().flat_map(|n| n.to_be_bytes()).collect(),
    )
}

/// A header structure holding `tags`, each aligned to four bytes.
fn header(tags: &[Tag]) -> Vec<u8> {
    let (mut index, mut store) = (Vec::new(), Vec::new());
    for Tag(tag, kind, count, data) in tags {
        while !store.len().is_multiple_of(4) {
            store.push(0);
        }
        for n in [*tag, *kind, store.len() as u32, *count] {
            index.extend_from_slice(&n.to_be_bytes());
        }
        store.extend_from_slice(data);
    }
    let mut h = vec![0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0];
    h.extend_from_slice(&(tags.len() as u32).to_be_bytes());
    h.extend_from_slice(&(store.len() as u32).to_be_bytes());
    h.extend(index);
    h.extend(store);
    h
}

/// A `newc` entry of `name`, `mode`, `data`, at the end of `out`.
fn newc(out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]) {
    let fields = [1, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, 0, 0];
    out.extend_from_slice(b"070701");
    for f in fields {
        out.extend(format!("{f:08x}").bytes());
    }
    out.extend(format!("{:08x}{:08x}", name.len() + 1, 0).bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    pad(out);
    out.extend_from_slice(data);
    pad(out);
}

/// A stripped entry for file `fx`, its `data`.
fn stripped(out: &mut Vec<u8>, fx: u32, data: &[u8]) {
    out.extend(format!("07070X{fx:08x}").bytes());
    pad(out);
    out.extend_from_slice(data);
    pad(out);
}

fn pad(v: &mut Vec<u8>) {
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
}

/// An RPM: lead, an empty signature header (padded), the main header of
/// `tags`, then `cpio` compressed by gzip.
fn rpm(tags: &[Tag], cpio: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 96];
    out[..4].copy_from_slice(&[0xed, 0xab, 0xee, 0xdb]);
    out[4] = 3;
    out[78..80].copy_from_slice(&5u16.to_be_bytes());
    out.extend(header(&[string(1000, "sig")]));
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    out.extend(header(tags));
    let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::fast());
    e.write_all(cpio).unwrap();
    e.finish().unwrap()
}

/// A payload in the `newc` form: a directory, a library, a link.
fn newc_payload() -> Vec<u8> {
    let mut c = Vec::new();
    newc(&mut c, "./usr/lib64", 0o040_755, b"");
    newc(&mut c, "./usr/lib64/libk.so", 0o100_755, b"device code!");
    newc(&mut c, "./usr/lib64/libk.so.1", 0o120_777, b"libk.so");
    newc(&mut c, "TRAILER!!!", 0, b"");
    c
}

/// The main header's file list for the stripped payload: a directory and
/// two files of 12 and 5 bytes.
fn file_list() -> Vec<Tag> {
    vec![
        int32s(1028, &[0, 12, 5]),
        int16s(1030, &[0o040_755, 0o100_755, 0o100_644]),
        int32s(1116, &[0, 1, 1]),
        strings(1117, &["usr", "libk.so", "notes"]),
        strings(1118, &["/", "/usr/lib64/"]),
        string(1125, "gzip"),
    ]
}

/// A stripped payload: entries 0, 1 and 2, or `fx` for the second.
fn stripped_payload(fx: u32) -> Vec<u8> {
    let mut c = Vec::new();
    stripped(&mut c, 0, b"");
    stripped(&mut c, fx, b"device code!");
    stripped(&mut c, 2, b"notes");
    newc(&mut c, "TRAILER!!!", 0, b"");
    c
}

fn read(bytes: &[u8]) -> std::result::Result<Vec<(String, Vec<u8>)>, String> {
    let mut r = Record::default();
    members(bytes, Kind::Rpm, &mut r).map_err(|e| e.to_string())?;
    Ok(r.0)
}

#[test]
fn newc_payloads_hand_over_their_regular_files() {
    let p = rpm(&[string(1124, "cpio")], &newc_payload());
    assert_eq!(detect(&p), Some(Kind::Rpm));
    assert_eq!(
        read(&p).unwrap(),
        vec![("usr/lib64/libk.so".to_string(), b"device code!".to_vec())]
    );
}

#[test]
fn stripped_payloads_are_named_by_the_header() {
    let p = rpm(&file_list(), &stripped_payload(1));
    assert_eq!(
        read(&p).unwrap(),
        vec![
            ("usr/lib64/libk.so".to_string(), b"device code!".to_vec()),
            ("usr/lib64/notes".to_string(), b"notes".to_vec())
        ]
    );
}

#[test]
fn a_stripped_entry_past_the_file_list_is_an_error() {
    let p = rpm(&file_list(), &stripped_payload(7));
    let e = read(&p).unwrap_err();
    assert!(
        e.contains("names file 7") && e.contains("lists 3 files"),
        "{e}"
    );
    // A directory index past the directories.
    let mut tags = file_list();
    tags[2] = int32s(1116, &[0, 1, 9]);
    let e = read(&rpm(&tags, &stripped_payload(1))).unwrap_err();
    assert!(e.contains("directory 9 of a list of 2"), "{e}");
    // An array shorter than the file list.
    tags = file_list();
    tags[0] = int32s(1028, &[0, 12]);
    let e = read(&rpm(&tags, &stripped_payload(1))).unwrap_err();
    assert!(e.contains("3 files but 2 FILESIZES"), "{e}");
}

#[test]
fn a_bad_header_magic_is_an_error() {
    let mut p = rpm(&[], &newc_payload());
    // The main header starts after the lead and the padded signature.
    let sig = 16 + 16 + 4;
    let main = (96 + sig as usize).next_multiple_of(8);
    assert_eq!(p[main..main + 4], [0x8e, 0xad, 0xe8, 0x01]);
    p[main] = 0;
    let e = read(&p).unwrap_err();
    assert!(e.contains("the main header") && e.contains("magic"), "{e}");
    p[96] = 0;
    let e = read(&p).unwrap_err();
    assert!(e.contains("the signature header"), "{e}");
}

#[test]
fn counts_and_sizes_past_the_end_are_errors() {
    let good = rpm(&[string(1125, "gzip")], &newc_payload());
    let main = 96 + 40;
    for (at, value) in [
        (12, 1u32 << 20),
        (8, 0xffff),
        (12, 0x0fff_ffff),
        (8, u32::MAX),
    ] {
        let mut p = good.clone();
        p[main + at..main + at + 4].copy_from_slice(&value.to_be_bytes());
        let e = read(&p).unwrap_err();
        assert!(e.contains("the main header claims"), "{at} {value}: {e}");
    }
    // A string array counting more strings than its store holds.
    let e = read(&rpm(
        &[Tag(1117, 8, 1000, b"a\0".to_vec())],
        &stripped_payload(1),
    ));
    assert!(e.unwrap_err().contains("more strings"));
    // An entry whose data starts past the store.
    let mut p = good.clone();
    p[main + 16 + 8..main + 16 + 12].copy_from_slice(&999u32.to_be_bytes());
    assert!(read(&p).unwrap_err().contains("past the header's store"));
    // A file size in the payload past its end.
    let mut c = newc_payload();
    // The library's entry starts at 124 (110 bytes, a 12-byte name).
    let size_at = 124 + 54;
    c[size_at..size_at + 8].copy_from_slice(b"7fffffff");
    let e = read(&rpm(&[], &c)).unwrap_err();
    assert!(e.contains("libk.so"), "{e}");
    // Every cut is an error.
    for cut in (0..good.len()).step_by(7) {
        assert!(read(&good[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn payload_methods_and_formats_not_read_are_errors() {
    let e = read(&rpm(&[string(1125, "lzip")], &newc_payload())).unwrap_err();
    assert!(e.contains("'lzip'"), "{e}");
    let e = read(&rpm(&[string(1124, "drpm")], &newc_payload())).unwrap_err();
    assert!(e.contains("'drpm'"), "{e}");
    // A payload of no cpio, and one with no trailer.
    let e = read(&rpm(&[], b"not a cpio archive at all")).unwrap_err();
    assert!(e.contains("no cpio entry at offset 0"), "{e}");
    let c = newc_payload();
    let e = read(&rpm(&[], &c[..c.len() - 124])).unwrap_err();
    assert!(e.contains("before its trailer"), "{e}");
}

/// An RPM whose signature gives the SHA-256 of its main header, and whose
/// main header (of `tags`) gives the SHA-256 of its gzip payload; and
/// where the payload starts.
#[cfg(feature = "files")]
fn signed(tags: Vec<Tag>, cpio: &[u8]) -> (Vec<u8>, usize) {
    use sha2::{Digest, Sha256};
    let hex = |b: &[u8]| -> String { b.iter().map(|x| format!("{x:02x}")).collect() };
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(cpio).unwrap();
    let payload = e.finish().unwrap();
    let mut tags = tags;
    tags.push(strings(5092, &[&hex(&Sha256::digest(&payload))]));
    tags.push(int32s(5093, &[8]));
    let main = header(&tags);
    let mut out = vec![0u8; 96];
    out[..4].copy_from_slice(&[0xed, 0xab, 0xee, 0xdb]);
    out[78..80].copy_from_slice(&5u16.to_be_bytes());
    out.extend(header(&[string(273, &hex(&Sha256::digest(&main)))]));
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    out.extend(main);
    let at = out.len();
    out.extend(payload);
    (out, at)
}

#[cfg(feature = "files")]
#[test]
fn header_and_payload_digests_are_verified() {
    let (good, payload) = signed(vec![string(1125, "gzip")], &newc_payload());
    assert_eq!(read(&good).unwrap().len(), 1);
    // A byte of the main header's store (its compressor's name), then one
    // of the payload (its gzip header's modification time, which gzip's
    // own CRC does not cover).
    let store = good.windows(4).position(|w| w == b"gzip").unwrap();
    let mut bad = good.clone();
    bad[store] = b'G';
    let e = read(&bad).unwrap_err();
    assert!(e.contains("main header does not match the SHA-256"), "{e}");
    let mut bad = good.clone();
    bad[payload + 4] ^= 1;
    let e = read(&bad).unwrap_err();
    assert!(e.contains("payload does not match the SHA-256"), "{e}");
}

/// Replaces `libk.so` (whose bytes start `device`) with `pruned` and
/// removes the link `libk.so.1` by name.
#[cfg(feature = "files")]
struct Slim;

#[cfg(feature = "files")]
impl crate::package::Decide<super::rewrite::Rpm> for Slim {
    type Bytes = Vec<u8>;
    type Error = String;
    const REACH: usize = 6;
    fn outputs(&self) -> usize {
        1
    }
    fn by_name(
        &mut self,
        m: &super::rewrite::Member<'_>,
    ) -> std::result::Result<Option<Vec<crate::package::Fate>>, String> {
        Ok((m.path == "usr/lib64/libk.so.1").then(|| vec![crate::package::Fate::Removed]))
    }
    fn wants(&self, _: &super::rewrite::Member<'_>, head: &[u8]) -> bool {
        head == b"device"
    }
    fn inflate(
        &mut self,
        _: &super::rewrite::Member<'_>,
        head: &[u8],
        r: &mut dyn std::io::Read,
    ) -> std::result::Result<Vec<u8>, String> {
        let mut v = head.to_vec();
        r.read_to_end(&mut v).map_err(|e| e.to_string())?;
        Ok(v)
    }
    fn decide(
        &mut self,
        _: &super::rewrite::Member<'_>,
        bytes: crate::package::Held<'_, Vec<u8>>,
    ) -> std::result::Result<Option<Vec<crate::package::Fate>>, String> {
        assert_eq!(bytes.bytes(), b"device code!");
        let new = crate::package::New::bytes(b"pruned".to_vec());
        Ok(Some(vec![crate::package::Fate::Replaced(
            std::sync::Arc::new(new),
        )]))
    }
}

/// The main header of [`newc_payload`]'s three entries, with SHA-256
/// file digests (the library's true) and an installed size.
#[cfg(feature = "files")]
fn listed() -> Vec<Tag> {
    use sha2::{Digest, Sha256};
    let sha: String = Sha256::digest(b"device code!")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    listed_with(&sha)
}

/// [`listed`], the library's digest given as `sha`.
#[cfg(feature = "files")]
fn listed_with(sha: &str) -> Vec<Tag> {
    vec![
        int32s(1009, &[4096 + 12 + 7]),
        int32s(1028, &[4096, 12, 7]),
        int16s(1030, &[0o040_755, 0o100_755, 0o120_777]),
        strings(1035, &["", sha, ""]),
        strings(1036, &["", "", "libk.so"]),
        int32s(1116, &[0, 1, 1]),
        strings(1117, &["lib64", "libk.so", "libk.so.1"]),
        strings(1118, &["/usr/", "/usr/lib64/"]),
        string(1125, "gzip"),
        string(1126, "9"),
        int32s(5011, &[8]),
    ]
}

#[cfg(feature = "files")]
#[test]
fn a_rewrite_replaces_and_removes_files_and_keeps_every_digest_true() {
    use sha2::{Digest, Sha256};
    let (old, _) = signed(listed(), &newc_payload());
    let mut scratch = std::io::Cursor::new(Vec::new());
    let new = super::rewrite::rewrite(&old, &mut Slim, Some(&mut scratch), (1, 1 << 20))
        .map_err(|e| format!("{e:?}"))
        .unwrap()
        .unwrap();
    let mut bytes = new.head.clone();
    bytes.extend(scratch.into_inner());
    // Read back, its header and payload digests verified.
    let files = read(&bytes).unwrap();
    assert_eq!(
        files,
        vec![("usr/lib64/libk.so".to_string(), b"pruned".to_vec())]
    );
    let p = super::Package::read(&bytes).unwrap();
    assert_eq!(p.main.int32s(1028).unwrap(), Some(vec![4096, 6]));
    assert_eq!(p.main.int32s(1009).unwrap(), Some(vec![4096 + 6 + 7]));
    let sha: String = Sha256::digest(b"pruned")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let digests = p.main.strings(1035).unwrap().unwrap();
    assert_eq!(digests, vec![&b""[..], sha.as_bytes()]);
    let names = p.main.strings(1117).unwrap().unwrap();
    assert_eq!(names, vec![&b"lib64"[..], b"libk.so"]);
    assert_eq!(p.main.strings(1036).unwrap().unwrap().len(), 2);
    assert!(new.unsigned.is_empty());
    // Nothing to change: no rewrite.
    struct Keep;
    impl crate::package::Decide<super::rewrite::Rpm> for Keep {
        type Bytes = Vec<u8>;
        type Error = String;
        const REACH: usize = 6;
        fn outputs(&self) -> usize {
            1
        }
        fn by_name(
            &mut self,
            _: &super::rewrite::Member<'_>,
        ) -> std::result::Result<Option<Vec<crate::package::Fate>>, String> {
            Ok(None)
        }
        fn wants(&self, _: &super::rewrite::Member<'_>, _: &[u8]) -> bool {
            false
        }
        fn inflate(
            &mut self,
            _: &super::rewrite::Member<'_>,
            _: &[u8],
            _: &mut dyn std::io::Read,
        ) -> std::result::Result<Vec<u8>, String> {
            unreachable!()
        }
        fn decide(
            &mut self,
            _: &super::rewrite::Member<'_>,
            _: crate::package::Held<'_, Vec<u8>>,
        ) -> std::result::Result<Option<Vec<crate::package::Fate>>, String> {
            unreachable!()
        }
    }
    let mut scratch = std::io::Cursor::new(Vec::new());
    let same = super::rewrite::rewrite(&old, &mut Keep, Some(&mut scratch), (1, 1 << 20));
    assert!(matches!(same, Ok(None)));
}

#[cfg(feature = "files")]
#[test]
fn a_file_that_does_not_match_its_digest_is_never_given_a_new_one() {
    // The package's own digests are true (header and payload), but the
    // library's row says other bytes: no rewrite, no new row for it.
    let (old, _) = signed(listed_with(&"ab".repeat(32)), &newc_payload());
    let said = failure(&old);
    assert!(
        said.contains("Damaged")
            && said.contains("usr/lib64/libk.so")
            && said.contains(&"ab".repeat(32)),
        "{said}"
    );
}

/// What rewriting the package `old` as [`Slim`] decides fails with.
#[cfg(feature = "files")]
fn failure(old: &[u8]) -> String {
    let mut scratch = std::io::Cursor::new(Vec::new());
    let e = super::rewrite::rewrite(old, &mut Slim, Some(&mut scratch), (1, 1 << 20))
        .err()
        .unwrap();
    format!("{e:?}")
}

#[cfg(feature = "files")]
#[test]
fn an_unknown_per_file_tag_refuses_a_removal() {
    let mut tags = listed();
    tags.insert(10, int32s(1999, &[1, 2, 3]));
    let (old, _) = signed(tags, &newc_payload());
    let said = failure(&old);
    assert!(
        said.contains("Refused") && said.contains("tag 1999"),
        "{said}"
    );
}

/// [`listed`]'s files in a stripped payload's package (LONGFILESIZES):
/// the directory, the link `libk.so.1` (index 1), the library (2) and a
/// text file (3); the payload holds them in the order `order`.
#[cfg(feature = "files")]
fn stripped_package(order: [u32; 4]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let sha: String = Sha256::digest(b"device code!")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tags = vec![
        int32s(1009, &[4096 + 7 + 12 + 5]),
        int16s(1030, &[0o040_755, 0o120_777, 0o100_755, 0o100_644]),
        strings(1035, &["", "", &sha, ""]),
        strings(1036, &["", "libk.so", "", ""]),
        int32s(1116, &[0, 1, 1, 1]),
        strings(1117, &["lib64", "libk.so.1", "libk.so", "notes"]),
        strings(1118, &["/usr/", "/usr/lib64/"]),
        string(1125, "gzip"),
        string(1126, "9"),
        Tag(
            5008,
            5,
            4,
            [4096u64, 7, 12, 5]
                .iter()
                .flat_map(|n| n.to_be_bytes())
                .collect(),
        ),
        int32s(5011, &[8]),
    ];
    let data: [&[u8]; 4] = [b"", b"libk.so", b"device code!", b"notes"];
    let mut c = Vec::new();
    for fx in order {
        stripped(&mut c, fx, data[fx as usize]);
    }
    newc(&mut c, "TRAILER!!!", 0, b"");
    signed(tags, &c).0
}

#[cfg(feature = "files")]
#[test]
fn a_stripped_payload_is_rewritten_in_its_form_numbered_by_the_new_list() {
    let old = stripped_package([0, 1, 2, 3]);
    let mut scratch = std::io::Cursor::new(Vec::new());
    let new = super::rewrite::rewrite(&old, &mut Slim, Some(&mut scratch), (1, 1 << 20))
        .map_err(|e| format!("{e:?}"))
        .unwrap()
        .unwrap();
    let payload = scratch.into_inner();
    let mut cpio = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&payload[..]), &mut cpio).unwrap();
    // The link (file 1) gone: the library and the text file are files 1
    // and 2 of the new list, in the stripped form still.
    let mut want = Vec::new();
    stripped(&mut want, 0, b"");
    stripped(&mut want, 1, b"pruned");
    stripped(&mut want, 2, b"notes");
    newc(&mut want, "TRAILER!!!", 0, b"");
    assert_eq!(cpio, want);
    // Read back, its header and payload digests verified, its files named
    // by the new list.
    let mut bytes = new.head.clone();
    bytes.extend(payload);
    let files = read(&bytes).unwrap();
    let pruned = ("usr/lib64/libk.so".to_string(), b"pruned".to_vec());
    let notes = ("usr/lib64/notes".to_string(), b"notes".to_vec());
    assert_eq!(files, vec![pruned, notes]);
    let p = super::Package::read(&bytes).unwrap();
    assert_eq!(p.main.int64s(5008).unwrap(), Some(vec![4096, 6, 5]));
    // As for newc: a removed link's size stays counted (only regular files
    // are taken off).
    assert_eq!(p.main.int32s(1009).unwrap(), Some(vec![4096 + 7 + 6 + 5]));
    let names = p.main.strings(1117).unwrap().unwrap();
    assert_eq!(names, vec![&b"lib64"[..], b"libk.so", b"notes"]);
    // The library before the link in the payload: removing the link would
    // renumber the library's entry, already written. Refused by name.
    let old = stripped_package([0, 2, 1, 3]);
    let said = failure(&old);
    assert!(
        said.contains("Refused") && said.contains("holds file 1 after file 2"),
        "{said}"
    );
}

#[cfg(feature = "files")]
#[test]
fn a_stripped_entry_given_twice_is_damage() {
    // File 2 twice (and file 3 never).
    let old = stripped_package([0, 1, 2, 2]);
    let said = failure(&old);
    assert!(
        said.contains("Damaged") && said.contains("holds '/usr/lib64/libk.so' twice"),
        "{said}"
    );
}

/// A signature header of an RSA signature (64 bytes), the size, and
/// `reserved` bytes of reserved space: its bytes.
fn reserving(signed: bool, reserved: usize) -> Vec<u8> {
    let mut tags = Vec::new();
    if signed {
        tags.push(Tag(268, 7, 64, vec![0x89; 64]));
    }
    tags.push(int32s(1000, &[1]));
    tags.push(Tag(1008, 7, reserved as u32, vec![0; reserved]));
    header(&tags)
}

#[test]
fn removed_signatures_grow_the_reserved_space_as_rpmsign_delsign_does() {
    // The signature's 64 bytes and its 16-byte index entry.
    for (signed, grown) in [(true, 100 + 64 + 16), (false, 100)] {
        let bytes = reserving(signed, 100);
        let (sig, _) = super::header::Header::parse(&bytes, 0, "the signature header").unwrap();
        let Ok((o, removed)) = super::retag::signature(&sig, b"main", (10, 20), &[0; 16]) else {
            panic!("not rewritten");
        };
        assert_eq!(removed.len(), usize::from(signed));
        // The header keeps its length: rpmsign can sign it in place again.
        assert_eq!(o.to_bytes().unwrap().len(), bytes.len());
        let space = o.get(1008).unwrap();
        assert_eq!((space.count as usize, space.data.len()), (grown, grown));
        assert!(space.data.iter().all(|b| *b == 0));
    }
}
