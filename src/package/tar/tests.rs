//! The tar reader on archives built by the tar crate: the size and
//! checksum fields in their forms, the package check, and pax records.

use super::*;

/// A ustar archive (GNU tar's layout, as the tar crate builds it)
/// of `(path, bytes)` regular files.
pub(crate) fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(1_700_000_000);
        b.append_data(&mut h, name, *data).unwrap();
    }
    // Padded to whole records, as GNU tar writes.
    let mut t = b.into_inner().unwrap();
    t.resize(t.len().next_multiple_of(20 * BLOCK), 0);
    t
}

#[test]
fn sizes_in_every_form() {
    let mut block = [0u8; BLOCK];
    block[SIZE].copy_from_slice(b"00000001750\0");
    assert_eq!(field_size(&block), Some(1000));
    set_size(&mut block, 8);
    assert_eq!(&block[SIZE], b"00000000010\0");
    // Seven digits and a space: kept so.
    block[SIZE].copy_from_slice(b"    0001750 ");
    set_size(&mut block, 9);
    assert_eq!(&block[SIZE], b"    0000011 ");
    // Too large for the digits there: GNU's form.
    set_size(&mut block, 1 << 30);
    assert_eq!(&block[SIZE], b"10000000000\0");
    set_size(&mut block, 1 << 40);
    assert_eq!(field_size(&block), Some(1 << 40));
    assert_eq!(block[124], 0x80);
    block[SIZE].copy_from_slice(b"0000000008\0\0");
    assert_eq!(field_size(&block), None);
}

#[test]
fn checksums_are_checked_and_written_in_the_fields_form() {
    let t = archive(&[("x", b"1")]);
    let mut block: [u8; BLOCK] = t[..BLOCK].try_into().unwrap();
    assert!(checksum_matches(&block));
    block[0] = b'z';
    assert!(!checksum_matches(&block));
    set_checksum(&mut block);
    assert!(checksum_matches(&block));
    assert_eq!(
        block[CHECKSUM.end - 1],
        0,
        "the tar crate's form: 7 digits, NUL"
    );
    // GNU tar's form: six digits, a NUL and a space.
    let (n, _) = sum(&block);
    block[CHECKSUM].copy_from_slice(format!("{n:06o}\0 ").as_bytes());
    assert!(checksum_matches(&block));
    block[0] = b'y';
    set_checksum(&mut block);
    assert!(checksum_matches(&block));
    assert_eq!(&block[154..156], b"\0 ");
    let mut bad = t.clone();
    bad[0] = b'z';
    let e = Reader::new(&bad[..], u64::MAX).next().unwrap_err();
    assert!(
        matches!(&e, Fault::Damaged(m) if m.contains("checksum")),
        "{e:?}"
    );
}

#[test]
fn pax_records_are_read_as_gnu_tar_reads_them() {
    let read = |d: &[u8]| {
        let mut p = Pax::default();
        p.read(d)
            .map(|()| (p.path, p.size))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        read(b"14 path=a/b.o\n11 size=42\n\0\0"),
        Ok((Some(b"a/b.o".to_vec()), Some(42)))
    );
    // Blanks before a length, several after it, and NULs to the end.
    assert_eq!(read(b" 12  size=7\n\0"), Ok((None, Some(7))));
    for (bad, why) in [
        (
            &b"30 mtime=1700000000.12345678\n"[..],
            "past the header's data",
        ),
        (b"x mtime=1\n", "has no length"),
        (b"12 mtime1234\n", "has no '='"),
        (b"12 mtime=123x", "does not end in a newline"),
        (b"10size=42\n", "no blank after its length"),
        (b"11 size=4x\n", "not a decimal number"),
        (b"8 size=\n", "not a decimal number"),
        (b"0 a=b\n", "has no '='"),
        (b"99999999999999999999999 a=b\n", "past the header's data"),
        (
            b"11 size=42\nx",
            "record 2 (at byte 11 of 12) has no length",
        ),
    ] {
        let e = read(bad).unwrap_err();
        assert!(e.contains(why), "{:?}: {e}", String::from_utf8_lossy(bad));
    }
}
