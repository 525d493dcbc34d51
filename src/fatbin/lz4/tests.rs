//! Unit tests of the LZ4 block decoders: hand-made blocks, named faults,
//! every read size, random and damaged blocks against lz4_flex, memory.

use super::*;
use crate::tests::Rng;

/// The [`Fault`] an error from a [`BlockDecoder`] carries.
fn fault_of(e: &io::Error) -> Option<Fault> {
    e.get_ref()?.downcast_ref::<Fault>().copied()
}

/// Decodes `block` with ours, reading `chunk` bytes at a time.
fn ours(block: &[u8], declared: u64, chunk: usize) -> Result<Vec<u8>, Fault> {
    let mut d = BlockDecoder::new(block, declared);
    let mut out = Vec::new();
    let mut buf = vec![0u8; chunk];
    loop {
        match d.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err(fault_of(&e).expect("a fault")),
        }
    }
}

/// lz4_flex's whole-block decoder into a buffer of the declared size,
/// and the exact-size rule on top.
fn reference(block: &[u8], declared: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; declared];
    match lz4_flex::block::decompress_into(block, &mut out) {
        Ok(n) if n == declared => Some(out),
        _ => None,
    }
}

/// Ours (at several read sizes) agrees with the reference: the same
/// bytes, or both refuse.
fn agree(block: &[u8], declared: usize) -> Option<Vec<u8>> {
    let want = reference(block, declared);
    // The whole-block path on its own, into a buffer of exactly the
    // declared size and into one with room to spare.
    // It must write nothing past the declared size, where the caller's
    // next bytes may be: 64 bytes of them watched.
    let mut out = vec![0xA5u8; declared + 64];
    let ok = decode_whole(block, &mut out[..declared]);
    assert!(
        out[declared..].iter().all(|&b| b == 0xA5),
        "decode_whole wrote past the output: block {:02x?} declared {declared}",
        &block[..block.len().min(64)]
    );
    out.truncate(declared);
    let whole = ok.then_some(out);
    assert!(
        whole == want,
        "decode_whole differs: block {:02x?} declared {declared}",
        &block[..block.len().min(64)]
    );
    // A good block read into room for all of it comes in one read.
    if let Some(w) = &want
        && !w.is_empty()
    {
        let mut roomy = vec![0u8; declared + 100];
        let n = BlockDecoder::new(block, declared as u64).read(&mut roomy);
        assert_eq!(n.ok(), Some(declared), "not in one read");
        assert!(roomy[..declared] == w[..]);
    }
    for chunk in [1, 7, 4096, 1 << 20] {
        let got = ours(block, declared as u64, chunk).ok();
        assert_eq!(
            got.as_ref().map(Vec::len),
            want.as_ref().map(Vec::len),
            "block {:02x?} declared {declared}, read {chunk} at a time: ours {:?}",
            &block[..block.len().min(64)],
            ours(block, declared as u64, chunk).err()
        );
        assert!(got == want, "different bytes, read {chunk} at a time");
    }
    want
}

/// Data with runs, repeats near and far (up to 70,000 bytes back, past
/// the history) and noise, so that encoders use every kind of match.
fn data(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut v: Vec<u8> = Vec::with_capacity(len);
    while v.len() < len {
        let n = 1 + rng.below(300) as usize;
        match rng.below(4) {
            0 => v.extend((0..n).map(|_| rng.next() as u8)),
            1 => v.extend(std::iter::repeat_n(rng.next() as u8, n)),
            _ if !v.is_empty() => {
                let back = 1 + rng.below((v.len() as u64).min(70_000)) as usize;
                let from = v.len() - back;
                for i in 0..n {
                    v.push(v[from + i % back]);
                }
            }
            _ => {}
        }
    }
    v.truncate(len);
    v
}

#[test]
fn hand_made_blocks() {
    // `abc`, then a 9-byte match 3 back (overlapping), then `xyz`.
    let abc = [0x35, b'a', b'b', b'c', 3, 0, 0x30, b'x', b'y', b'z'];
    assert_eq!(agree(&abc, 15).unwrap(), b"abcabcabcabcxyz");
    assert_eq!(agree(&[0x20, b'h', b'i'], 2).unwrap(), b"hi");
    // A block of one empty sequence is empty output.
    assert_eq!(agree(&[0x00], 0).unwrap(), b"");
    // A literal count continued over three bytes: 15 + 255 + 255 + 2.
    let mut long = vec![0xF0, 255, 255, 2];
    long.extend((0..527u32).map(|i| i as u8));
    assert_eq!(agree(&long, 527).unwrap().len(), 527);
    // A match length continued: 4 + 15 + 255 + 0 = 274 bytes of `a`.
    let run = [0x1F, b'a', 1, 0, 255, 0, 0x00];
    assert_eq!(agree(&run, 275).unwrap(), vec![b'a'; 275]);
    // A match ending exactly where the block does is not a block end
    // (another token must follow), nor is a trailing offset.
    assert_eq!(agree(&[0x10, b'a', 1, 0], 5), None);
    assert_eq!(agree(&[0x10, b'a', 1], 5), None);
    // No token at all.
    assert_eq!(agree(&[], 0), None);
    assert!(matches!(ours(&[], 0, 8), Err(Fault::Truncated { at: 0 })));
}

#[test]
fn faults_are_named() {
    let f = |b: &[u8], d: u64| ours(b, d, 64).unwrap_err();
    assert_eq!(f(&[0x10, b'a', 0, 0, 0x00], 5), Fault::OffsetZero { at: 2 });
    assert_eq!(
        f(&[0x10, b'a', 2, 0, 0x00], 5),
        Fault::OffsetBeforeStart {
            at: 2,
            offset: 2,
            output: 1
        }
    );
    assert_eq!(
        f(&[0x50, b'a'], 5),
        Fault::LiteralsPastEnd { at: 1, count: 5 }
    );
    assert_eq!(f(&[0x10, b'a', 1, 0], 5), Fault::Truncated { at: 4 });
    assert_eq!(f(&[0x1F, b'a', 1, 0], 50), Fault::Truncated { at: 4 });
    assert_eq!(f(&[0x20, b'h', b'i'], 1), Fault::TooLong { declared: 1 });
    assert_eq!(
        f(&[0x20, b'h', b'i'], 3),
        Fault::TooShort {
            got: 2,
            declared: 3
        }
    );
    // A match past the declared size is refused before it is copied:
    // a run of 5 MiB declared as 100.
    let mut bomb = vec![0x1F, 0, 1, 0];
    bomb.extend(std::iter::repeat_n(255u8, 20_000));
    bomb.extend([0, 0x00]);
    assert_eq!(f(&bomb, 100), Fault::TooLong { declared: 100 });
    // The fault is said again by every later read.
    let mut d = BlockDecoder::new(&[0x50, b'a'], 5);
    let mut buf = [0u8; 8];
    for _ in 0..2 {
        let e = d.read(&mut buf).unwrap_err();
        assert!(matches!(fault_of(&e), Some(Fault::LiteralsPastEnd { .. })));
    }
}

#[test]
fn what_an_encoder_writes_decodes_back_at_every_read_size() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for len in [0usize, 1, 4, 15, 16, 300, 65_535, 65_536, 200_000, 700_000] {
        let d = data(&mut rng, len);
        let c = lz4_flex::block::compress(&d);
        assert_eq!(agree(&c, len).as_deref(), Some(&d[..]), "{len} bytes");
    }
    // A long run: one sequence whose match is 16 MiB long.
    let zeros = vec![0u8; 16 << 20];
    let c = lz4_flex::block::compress(&zeros);
    assert!(ours(&c, zeros.len() as u64, 1 << 16).unwrap() == zeros);
}

#[test]
fn random_blocks_and_damaged_blocks_agree_with_lz4_flex() {
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    for round in 0..400 {
        let len = rng.below(if round % 10 == 0 { 150_000 } else { 3000 }) as usize;
        let d = data(&mut rng, len);
        let c = lz4_flex::block::compress(&d);
        // Declared sizes around the truth.
        for declared in [len, len.saturating_sub(1), len + 1] {
            agree(&c, declared);
        }
        // Cuts, and bytes changed (a token, a length, an offset, a
        // literal: wherever the dice fall).
        let cut = rng.below(c.len() as u64 + 1) as usize;
        agree(&c[..cut], len);
        let mut bad = c.clone();
        for _ in 0..1 + rng.below(3) {
            if !bad.is_empty() {
                let i = rng.below(bad.len() as u64) as usize;
                bad[i] ^= 1 << rng.below(8);
            }
        }
        agree(&bad, len);
    }
    // Random bytes, which are seldom a block, and random sequences
    // made by hand: tokens of every nibble, offsets near the output's
    // start, lengths near the declared size.
    for _ in 0..3000 {
        let n = rng.below(40) as usize;
        let junk: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        agree(&junk, rng.below(600) as usize);
        let mut block = Vec::new();
        let mut out = 0u64;
        for _ in 0..1 + rng.below(6) {
            let lit = rng.below(20);
            let mat = rng.below(20);
            block.push((lit.min(15) as u8) << 4 | mat.min(15) as u8);
            if lit >= 15 {
                block.push((lit - 15) as u8);
            }
            block.extend((0..lit).map(|_| rng.next() as u8));
            out += lit;
            let offset = rng.below(out + 3) as u16;
            block.extend(offset.to_le_bytes());
            if mat >= 15 {
                block.push((mat - 15) as u8);
            }
            out += mat + 4;
        }
        block.push(0x10);
        block.push(b'!');
        let declared = (out + 1) as i64 + rng.below(3) as i64 - 1;
        agree(&block, declared.max(0) as usize);
    }
}

#[test]
fn memory_stays_at_the_history_and_a_step() {
    let zeros = vec![0u8; 8 << 20];
    let c = lz4_flex::block::compress(&zeros);
    let mut d = BlockDecoder::new(&c, zeros.len() as u64);
    let mut buf = vec![0u8; 1 << 20];
    let mut most = 0;
    while d.read(&mut buf).unwrap() > 0 {
        most = most.max(d.win.capacity());
    }
    assert!(most <= 2 * (HISTORY + STEP), "{most} bytes held");
}

/// A block of `prefix` as literals, then one sequence of `lit` literals
/// and a match of `len` bytes from `offset` back, then `tail` literals
/// alone: the sequence under test sits where the decoding loop's bounds
/// fall, wherever `tail` puts the block's end.
fn one_sequence(prefix: &[u8], lit: &[u8], offset: u16, len: usize, tail: &[u8]) -> Vec<u8> {
    fn length(b: &mut Vec<u8>, n: usize) -> u8 {
        if n < 15 {
            return n as u8;
        }
        let mut left = n - 15;
        while left >= 255 {
            b.push(255);
            left -= 255;
        }
        b.push(left as u8);
        15
    }
    let mut b = vec![0];
    let nibble = length(&mut b, prefix.len());
    b[0] = nibble << 4;
    b.extend_from_slice(prefix);
    // The prefix's sequence needs a match: 4 bytes from 1 back.
    b.extend([1, 0]);
    let at = b.len();
    b.push(0);
    let lit_nibble = length(&mut b, lit.len());
    b.extend_from_slice(lit);
    b.extend(offset.to_le_bytes());
    let len_nibble = length(&mut b, len - 4);
    b[at] = lit_nibble << 4 | len_nibble;
    let at = b.len();
    b.push(0);
    let tail_nibble = length(&mut b, tail.len());
    b[at] = tail_nibble << 4;
    b.extend_from_slice(tail);
    b
}

#[test]
fn every_copy_of_the_fast_loop_agrees_with_lz4_flex() {
    // Offsets from 1 (a run) to past a copy's pieces, lengths around the
    // pieces' sizes and the long copies', literal runs short and long,
    // and the block's end from right after the sequence to far from it:
    // each copy the loop has (pieces of 8, 16, 32, a 16-byte pattern,
    // memcpy), and the careful code where the loop stops.
    let mut rng = Rng(0x005E_ED0F_1A57);
    let prefix: Vec<u8> = (0..300).map(|_| rng.next() as u8).collect();
    for offset in (1u16..=40).chain([63, 64, 65, 255, 256, 301]) {
        for len in [
            4, 5, 8, 15, 16, 17, 18, 19, 31, 32, 33, 48, 64, 65, 200, 256, 257, 300, 1000,
        ] {
            for lit_n in [0usize, 1, 14, 15, 40, 300] {
                let lit: Vec<u8> = (0..lit_n).map(|_| rng.next() as u8).collect();
                for tail_n in [0usize, 1, 5, 12, 31, 32, 33, 64, 65, 100] {
                    let tail: Vec<u8> = (0..tail_n).map(|_| rng.next() as u8).collect();
                    let block = one_sequence(&prefix, &lit, offset, len, &tail);
                    let declared = prefix.len() + 4 + lit_n + len + tail_n;
                    let got = agree(&block, declared).expect("a good block");
                    // The match, as the format means it: byte by byte.
                    let start = prefix.len() + 4 + lit_n;
                    for k in start..start + len {
                        assert_eq!(
                            got[k],
                            got[k - usize::from(offset)],
                            "offset {offset} len {len}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn where_liblz4_differs() {
    // A match that ends 2 bytes before the output's end: the format's
    // rule for encoders (the last 5 bytes are literals) is broken, and
    // liblz4 refuses it; lz4_flex and ours decode it. The fuzz target
    // `lz4_fast` asserts with liblz4 itself that it refuses only such
    // blocks, and accepts only the offsets of 0 we refuse.
    let block = one_sequence(&[7; 40], b"abc", 3, 20, b"yz");
    let declared = 40 + 4 + 3 + 20 + 2;
    assert!(agree(&block, declared).is_some());
    assert!(crate::fuzz::liblz4_may_differ(&block, declared));
    // With its last 5 bytes literals, the same sequence is every
    // decoder's block.
    let block = one_sequence(&[7; 40], b"abc", 3, 20, b"vwxyz");
    assert!(agree(&block, declared + 3).is_some());
    assert!(!crate::fuzz::liblz4_may_differ(&block, declared + 3));
    // An empty output: the block is one token with no literals, whose
    // match nibble nothing reads; liblz4 takes only `00`.
    assert_eq!(agree(&[0x01], 0).as_deref(), Some(&b""[..]));
    assert!(crate::fuzz::liblz4_may_differ(&[0x01], 0));
    assert!(!crate::fuzz::liblz4_may_differ(&[0x00], 0));
    // An offset of 0 (liblz4 copies whatever its buffer held) is refused.
    let block = one_sequence(&[7; 40], b"abc", 0, 20, b"vwxyz");
    assert!(matches!(
        ours(&block, 72, 64),
        Err(Fault::OffsetZero { at: 48 })
    ));
}
