//! The raw scanner against a naive byte-by-byte search, on random and
//! seeded haystacks (the approach of memchr's own tests): every magic at
//! every position, including across chunk boundaries and overlapping one
//! another, must be found, in order, once.

use super::Rng;
use crate::scan::magic::{CHUNK, Finders, Magic};

/// Every (offset, magic) in `hay`, by trying each magic at each offset.
fn naive(hay: &[u8]) -> Vec<(usize, Magic)> {
    let mut out = Vec::new();
    for i in 0..hay.len() {
        for m in Magic::ALL {
            if hay[i..].starts_with(m.bytes()) {
                out.push((i, m));
            }
        }
    }
    out
}

/// A haystack of `len` bytes from a small alphabet (so partial magics occur
/// often), with `seeds` magics planted at random places.
fn haystack(rng: &mut Rng, len: usize, seeds: usize) -> Vec<u8> {
    let alphabet = [
        0x00, 0x10, 0xFF, 0xAD, b'C', b'O', b'B', b'_', 0x50, 0xED, 0x55, 0xBA,
    ];
    let mut hay: Vec<u8> = (0..len)
        .map(|_| alphabet[rng.index(alphabet.len())])
        .collect();
    for _ in 0..seeds {
        let m = Magic::ALL[rng.index(4)].bytes();
        if len > m.len() {
            let at = rng.index(len - m.len());
            hay[at..at + m.len()].copy_from_slice(m);
        }
    }
    hay
}

#[test]
fn random_haystacks_match_the_naive_search() {
    let finders = Finders::new();
    let mut rng = Rng(0x0ff1_0ad5_ca11_ab1e);
    for round in 0..200 {
        let len = rng.index(3000) + usize::from(round % 10 == 0) * 2 * CHUNK;
        let seeds = rng.index(20);
        let hay = haystack(&mut rng, len, seeds);
        let got: Vec<_> = finders.candidates(&hay).collect();
        assert_eq!(got, naive(&hay), "round {round}, len {len}");
    }
}

#[test]
fn magics_straddling_every_chunk_boundary() {
    let finders = Finders::new();
    for m in Magic::ALL {
        let n = m.bytes().len();
        for shift in 0..=n {
            let mut hay = vec![0x11u8; 2 * CHUNK + 64];
            let at = CHUNK - shift;
            hay[at..at + n].copy_from_slice(m.bytes());
            let got: Vec<_> = finders.candidates(&hay).collect();
            assert_eq!(got, naive(&hay), "{m:?} shifted {shift}");
        }
    }
}

#[test]
fn overlapping_and_adjacent_magics() {
    let finders = Finders::new();
    // "CCOBCCOB", a bundle magic right after an OffloadBinary magic, and the
    // text-bundle marker that starts with the bundle magic.
    let mut hay = b"CCOBCCOB".to_vec();
    hay.extend_from_slice(&[0x10, 0xFF, 0x10, 0xAD]);
    hay.extend_from_slice(b"__CLANG_OFFLOAD_BUNDLE____START__ x");
    hay.extend_from_slice(&[0x50, 0xED, 0x55, 0xBA, 0x50, 0xED, 0x55, 0xBA]);
    let got: Vec<_> = finders.candidates(&hay).collect();
    assert_eq!(got, naive(&hay));
    assert_eq!(got.len(), 6);
}

#[test]
fn skip_to_agrees_with_filtering_the_naive_list() {
    let finders = Finders::new();
    let mut rng = Rng(42);
    for _ in 0..50 {
        let len = 2 * CHUNK + rng.index(5000);
        let hay = haystack(&mut rng, len, 40);
        let mut c = finders.candidates(&hay);
        let (mut got, mut cursors) = (Vec::new(), Vec::new());
        while let Some((p, m)) = c.next() {
            got.push((p, m));
            // Skip a random distance, as a container's extent would.
            let cursor = p + 1 + rng.index(CHUNK / 2);
            cursors.push(cursor);
            c.skip_to(cursor);
        }
        // The same skips applied to the naive list.
        let mut want = Vec::new();
        let mut cursor = 0;
        for a in naive(&hay) {
            if a.0 >= cursor {
                want.push(a);
                cursor = cursors.get(want.len() - 1).copied().unwrap_or(usize::MAX);
            }
        }
        assert_eq!(got, want);
    }
}
