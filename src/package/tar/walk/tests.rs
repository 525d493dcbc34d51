//! The tar rewriter on archives built by the tar crate: copies byte for
//! byte, replaced members, pax headers, damage and the budget.

use super::*;
use crate::package::tar::tests::archive;
use crate::package::tar::{CHECKSUM, RECORD, SIZE, digits};

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
fn a_header_that_does_not_match_its_checksum_is_damage() {
    let t = archive(&[("x", b"1")]);
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
