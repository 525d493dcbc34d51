//! The tar rewriter on archives built by the tar crate: copies byte for
//! byte, replaced members, the size and checksum fields in their forms,
//! pax headers, damage and the budget.

use super::*;

/// A ustar archive (GNU tar's layout, as the tar crate builds it)
/// of `(path, bytes)` regular files.
fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
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

/// `input` rewritten, each member whose path is in `new` given those
/// bytes, the others copied.
fn rewrite(input: &[u8], new: &[(&str, &[u8])]) -> Result<Vec<u8>, Fault> {
    let mut w = Walk::new(input, Vec::new(), u64::MAX);
    while let Some(h) = w.next()? {
        let Some((_, bytes)) = new.iter().find(|(p, _)| p.as_bytes() == h.path) else {
            w.copy(&h)?;
            continue;
        };
        let mut old = Vec::new();
        w.body().read_to_end(&mut old).map_err(Fault::Read)?;
        w.skip_body()?;
        w.write_header(&h, bytes.len() as u64)?;
        w.out().write_all(bytes).map_err(Fault::Write)?;
        w.pad(bytes.len() as u64)?;
    }
    Ok(w.into_inner())
}

#[test]
fn a_copy_is_byte_for_byte() {
    let long = format!("./usr/{}/lib.so", "d".repeat(120));
    let t = archive(&[("./a", b"one"), (&long, &[7; 700]), ("b", b"")]);
    assert_eq!(rewrite(&t, &[]).unwrap(), t);
    // The long name (a GNU `L` entry) is the member's path.
    let mut w = Walk::new(&t[..], std::io::sink(), u64::MAX);
    let mut paths = Vec::new();
    while let Some(h) = w.next().unwrap() {
        paths.push(h.path_lossy());
        w.copy(&h).unwrap();
    }
    assert_eq!(paths, ["a", long.trim_start_matches("./"), "b"]);
}

#[test]
fn a_replaced_member_changes_only_its_size_and_checksum() {
    let t = archive(&[("x", &[1; 1000]), ("y", b"why")]);
    let out = rewrite(&t, &[("x", &[2; 10])]).unwrap();
    let mut r = tar::Archive::new(&out[..]);
    let mut got = Vec::new();
    for e in r.entries().unwrap() {
        let mut e = e.unwrap();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        got.push((e.path().unwrap().to_string_lossy().into_owned(), data));
    }
    assert_eq!(
        got,
        [("x".into(), vec![2; 10]), ("y".into(), b"why".to_vec())]
    );
    // The header: size and checksum fields changed, in the same form.
    let (a, b) = (&t[..BLOCK], &out[..BLOCK]);
    let changed: Vec<usize> = (0..BLOCK).filter(|&i| a[i] != b[i]).collect();
    assert!(
        changed
            .iter()
            .all(|i| SIZE.contains(i) || CHECKSUM.contains(i))
    );
    assert_eq!(&b[SIZE], b"00000000012\0");
    assert_eq!(digits(&b[CHECKSUM]), digits(&a[CHECKSUM]));
    assert_eq!(b[155], a[155]);
    // A whole number of records, as GNU tar ends an archive.
    assert_eq!((t.len() as u64 % RECORD, out.len() as u64 % RECORD), (0, 0));
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
    let e = rewrite(&bad, &[]).unwrap_err();
    assert!(
        matches!(&e, Fault::Damaged(m) if m.contains("checksum")),
        "{e:?}"
    );
}

#[test]
fn pax_headers_give_path_and_size() {
    let mut b = tar::Builder::new(Vec::new());
    b.append_pax_extensions([("path", &b"./p/long.so"[..]), ("size", &b"3"[..])])
        .unwrap();
    let mut h = tar::Header::new_ustar();
    h.set_size(3);
    h.set_path("short").unwrap();
    h.set_cksum();
    b.append(&h, &b"abc"[..]).unwrap();
    let t = b.into_inner().unwrap();
    let mut w = Walk::new(&t[..], Vec::new(), u64::MAX);
    let h = w.next().unwrap().unwrap();
    assert_eq!(
        (h.path_lossy().as_str(), h.size, h.size_in_pax),
        ("p/long.so", 3, true)
    );
    w.copy(&h).unwrap();
    assert!(w.next().unwrap().is_none());
    assert_eq!(w.into_inner(), t);
}

#[test]
fn damage_and_the_budget() {
    let t = archive(&[("x", &[1; 5000])]);
    let e = rewrite(&t[..2048], &[]).unwrap_err();
    assert!(
        matches!(&e, Fault::Damaged(m) if m.contains("ends inside")),
        "{e:?}"
    );
    let mut w = Walk::new(&t[..], std::io::sink(), 4096);
    assert!(matches!(w.next(), Err(Fault::Budget(4096))));
    // An archive with no end blocks ends after its last member.
    let end = BLOCK + 5120;
    assert!(t[end..].iter().all(|&b| b == 0));
    assert_eq!(rewrite(&t[..end], &[]).unwrap(), &t[..end]);
    // Bytes after the end blocks are kept.
    let mut tail = t.clone();
    tail.extend_from_slice(b"trailing");
    assert_eq!(rewrite(&tail, &[]).unwrap(), tail);
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

#[test]
fn a_malformed_pax_record_is_damage_naming_its_header() {
    let mut t = archive(&[("x", b"abc")]);
    let mut h = [0u8; BLOCK];
    h[..9].copy_from_slice(b"PaxHeader");
    let record = b"12 mtime1234\n";
    set_size(&mut h, record.len() as u64);
    h[156] = b'x';
    h[257..263].copy_from_slice(b"ustar\0");
    set_checksum(&mut h);
    let mut data = [0u8; BLOCK];
    data[..record.len()].copy_from_slice(record);
    t.splice(0..0, h.iter().chain(&data).copied());
    let e = rewrite(&t, &[]).unwrap_err();
    assert!(
        matches!(&e, Fault::Damaged(m) if m.starts_with("the pax header 'PaxHeader' at offset 0x0: record 1")),
        "{e:?}"
    );
}
