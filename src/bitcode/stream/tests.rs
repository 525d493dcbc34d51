//! Unit tests of the bitstream reader.

use super::testing::Writer;
use super::*;

#[test]
fn reads_bits_across_bytes_and_words() {
    let mut w = Writer::default();
    let vals: [(u64, u32); 8] = [
        (1, 1),
        (0x5a, 7),
        (u64::MAX, 64),
        (3, 2),
        (0x1234_5678_9abc, 48),
        (0, 0),
        (0x7f, 7),
        (1 << 63 | 5, 64),
    ];
    for (v, n) in vals {
        w.fixed(v, n);
    }
    w.vbr(1_000_000, 6);
    w.vbr(u64::MAX, 8);
    let mut b = Bits::new(&w.bytes);
    for (v, n) in vals {
        assert_eq!(b.read(n).unwrap(), v, "{n} bits");
    }
    assert_eq!(b.vbr(6).unwrap(), 1_000_000);
    assert_eq!(b.vbr(8).unwrap(), u64::MAX);
    assert!(b.read(65).is_err());
    let left = b.left();
    assert!(left < 8);
    assert!(b.read(u32::try_from(left).unwrap() + 1).is_err());
    assert_eq!(b.read(u32::try_from(left).unwrap()).unwrap(), 0);
}

#[test]
fn unterminated_vbr_is_an_error() {
    let data = [0xffu8; 32];
    assert_eq!(Bits::new(&data).vbr(4), Err("unterminated VBR"));
    assert_eq!(Bits::new(&data[..2]).vbr(32), Err(EOF));
}

/// A block (ID 9) holding: an abbreviation from BLOCKINFO, one of its
/// own, and records in both and unabbreviated.
fn sample() -> Vec<u8> {
    let mut w = Writer::default();
    // BLOCKINFO at the top level (width 2): SETBID 9, one abbreviation
    // [literal 7, array of char6].
    w.fixed(1, 2);
    w.vbr(BLOCKINFO_BLOCK, 8);
    w.vbr(3, 4);
    w.align32();
    let len_at = w.bytes.len();
    w.fixed(0, 32);
    w.fixed(3, 3);
    w.vbr(SETBID, 6);
    w.vbr(1, 6);
    w.vbr(9, 6);
    w.fixed(2, 3);
    w.vbr(3, 5);
    w.fixed(1, 1);
    w.vbr(7, 8);
    w.fixed(0, 1);
    w.fixed(3, 3);
    w.fixed(0, 1);
    w.fixed(4, 3);
    w.fixed(0, 3);
    w.align32();
    let words = u32::try_from((w.bytes.len() - len_at - 4) / 4).unwrap();
    w.bytes[len_at..len_at + 4].copy_from_slice(&words.to_le_bytes());
    // Block 9, width 4.
    w.fixed(1, 2);
    w.vbr(9, 8);
    w.vbr(4, 4);
    w.align32();
    w.fixed(0, 32);
    // Own abbreviation 5: [fixed 3, vbr 6, blob].
    w.fixed(2, 4);
    w.vbr(3, 5);
    w.fixed(0, 1);
    w.fixed(1, 3);
    w.vbr(3, 5);
    w.fixed(0, 1);
    w.fixed(2, 3);
    w.vbr(6, 5);
    w.fixed(0, 1);
    w.fixed(5, 3);
    // Record in abbreviation 4: code 7, "a.Z_".
    w.fixed(4, 4);
    w.vbr(4, 6);
    for c in [0, 62, 51, 63] {
        w.fixed(c, 6);
    }
    // Record in abbreviation 5: code 5, 300, blob "xyz".
    w.fixed(5, 4);
    w.fixed(5, 3);
    w.vbr(300, 6);
    w.vbr(3, 6);
    w.align32();
    w.raw(b"xyz\0");
    // Unabbreviated: code 2, [1, 99].
    w.fixed(3, 4);
    w.vbr(2, 6);
    w.vbr(2, 6);
    w.vbr(1, 6);
    w.vbr(99, 6);
    // End of block 9.
    w.fixed(0, 4);
    w.align32();
    w.bytes
}

#[test]
fn reads_records_with_blockinfo_arrays_and_blobs() {
    let data = sample();
    let mut c = Cursor::new(Bits::new(&data));
    assert_eq!(c.next().unwrap(), Entry::Block(BLOCKINFO_BLOCK));
    c.read_block_info().unwrap();
    assert_eq!(c.next().unwrap(), Entry::Block(9));
    c.enter(9).unwrap();
    assert_eq!(c.depth(), 1);
    let mut vals = Vec::new();
    let Entry::Record(id) = c.next().unwrap() else {
        panic!()
    };
    assert_eq!(id, 4);
    let mut r = c.record(id).unwrap();
    assert_eq!(r.code(), 7);
    assert_eq!(r.values(&mut vals, 100).unwrap(), None);
    assert_eq!(vals, b"a.Z_".map(u64::from));
    let Entry::Record(id) = c.next().unwrap() else {
        panic!()
    };
    let at = c.bits.pos();
    let mut r = c.record(id).unwrap();
    assert_eq!(r.code(), 5);
    assert_eq!(r.values(&mut vals, 100).unwrap(), Some(&b"xyz"[..]));
    assert_eq!(vals, [300]);
    let Entry::Record(3) = c.next().unwrap() else {
        panic!()
    };
    let mut r = c.record(3).unwrap();
    assert_eq!(r.code(), 2);
    assert!(r.values(&mut vals, 1).is_err(), "over the limit");
    let end = c.bits.pos();
    // Re-read from the start, skipping.
    c.bits.seek(at - 4).unwrap();
    let Entry::Record(id) = c.next().unwrap() else {
        panic!()
    };
    c.record(id).unwrap().skip_rest().unwrap();
    let Entry::Record(3) = c.next().unwrap() else {
        panic!()
    };
    let mut r = c.record(3).unwrap();
    r.skip_rest().unwrap();
    assert_eq!(c.bits.pos(), end);
    assert_eq!(c.next().unwrap(), Entry::End);
    let abbrevs = c.take_closed();
    assert_eq!(c.depth(), 0);
    // The blob record again, from its saved position.
    let mut r = c.reread(&abbrevs, at, 5).unwrap();
    assert_eq!(r.values(&mut vals, 100).unwrap(), Some(&b"xyz"[..]));
}

#[test]
fn every_truncation_of_the_sample_is_an_error_not_a_panic() {
    let data = sample();
    for n in 0..data.len() {
        let mut c = Cursor::new(Bits::new(&data[..n]));
        let mut vals = Vec::new();
        let mut ok = true;
        for _ in 0..20 {
            let step = match c.next() {
                Ok(Entry::Block(0)) => c.read_block_info(),
                Ok(Entry::Block(id)) => c.enter(id),
                Ok(Entry::Record(id)) => c
                    .record(id)
                    .and_then(|mut r| r.values(&mut vals, 100).map(|_| ())),
                Ok(Entry::End) => break,
                Err(e) => Err(e),
            };
            if step.is_err() {
                ok = false;
                break;
            }
        }
        assert!(!ok, "{n} bytes read without an error");
    }
}

#[test]
fn literal_abbreviations_spend_a_bounded_budget() {
    // An abbreviation of 1000 literals, used over and over.
    let mut w = Writer::default();
    w.fixed(2, 2);
    w.vbr(1000, 5);
    for _ in 0..1000 {
        w.fixed(1, 1);
        w.vbr(1, 8);
    }
    for _ in 0..20_000 {
        w.fixed(0, 2);
    }
    let data = w.bytes;
    let mut c = Cursor::new(Bits::new(&data));
    // Abbreviation ID 4 does not fit width 2: define at top level and
    // read the records through `reread` with its ID.
    assert!(matches!(c.next(), Err("malformed block")));
    let mut b = Bits::new(&data);
    b.read(2).unwrap();
    let abbrev = read_abbrev(&mut b).unwrap();
    let abbrevs = Abbrevs {
        shared: Rc::new([]),
        own: vec![abbrev],
    };
    let mut c = Cursor::new(Bits::new(&data));
    let mut failed = false;
    for _ in 0..10_000 {
        match c.reread(&abbrevs, 0, 4).and_then(|mut r| r.skip_rest()) {
            Ok(()) => {}
            Err(e) => {
                assert!(e.contains("literal"), "{e}");
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "the literal budget was never spent");
}
