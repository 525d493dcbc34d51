//! LLVM's `hash_value(StringRef)`: the CityHash-derived `hash_short` and
//! 64-byte `hash_state` of `llvm/ADT/Hashing.h`, with the fixed seed that
//! release builds (no ABI-breaking checks) use.
//!
//! Written from the algorithm description; checked against the installed
//! LLVM 22 tools by the interop tests (string-entry order depends on it).

use crate::bytes::le;

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;
const K3: u64 = 0xc949_d7c7_509e_6557;

/// The execution seed of a release build of LLVM (`get_execution_seed`).
pub const RELEASE_SEED: u64 = 0xff51_afd7_ed55_8ccd;

fn fetch64(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[at..at + 8]);
    le::<u64>(b)
}

fn fetch32(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[at..at + 4]);
    u64::from(le::<u32>(b))
}

/// A length known to be at most 64 (the short-hash paths), as `u32`.
fn small(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_16_bytes(low: u64, high: u64) -> u64 {
    const MUL: u64 = 0x9ddf_ea08_eb38_2d69;
    let mut a = (low ^ high).wrapping_mul(MUL);
    a ^= a >> 47;
    let mut b = (high ^ a).wrapping_mul(MUL);
    b ^= b >> 47;
    b.wrapping_mul(MUL)
}

fn hash_1to3(s: &[u8], seed: u64) -> u64 {
    let len = s.len();
    let a = u32::from(s[0]);
    let b = u32::from(s[len >> 1]);
    let c = u32::from(s[len - 1]);
    let y = a.wrapping_add(b << 8);
    // `len` is at most 3 here.
    let z = small(len).wrapping_add(c << 2);
    shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K3) ^ seed).wrapping_mul(K2)
}

fn hash_4to8(s: &[u8], seed: u64) -> u64 {
    let len = s.len() as u64;
    let a = fetch32(s, 0);
    hash_16_bytes(len.wrapping_add(a << 3), seed ^ fetch32(s, s.len() - 4))
}

fn hash_9to16(s: &[u8], seed: u64) -> u64 {
    let len = s.len();
    let a = fetch64(s, 0);
    let b = fetch64(s, len - 8);
    hash_16_bytes(
        seed ^ a,
        b.wrapping_add(len as u64).rotate_right(small(len)),
    ) ^ b
}

fn hash_17to32(s: &[u8], seed: u64) -> u64 {
    let len = s.len();
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(K2);
    let d = fetch64(s, len - 16).wrapping_mul(K0);
    hash_16_bytes(
        a.wrapping_sub(b)
            .rotate_right(43)
            .wrapping_add((c ^ seed).rotate_right(30))
            .wrapping_add(d),
        a.wrapping_add((b ^ K3).rotate_right(20))
            .wrapping_sub(c)
            .wrapping_add(len as u64)
            .wrapping_add(seed),
    )
}

fn hash_33to64(s: &[u8], seed: u64) -> u64 {
    let len = s.len();
    let mut z = fetch64(s, 24);
    let mut a = fetch64(s, 0).wrapping_add(
        (len as u64)
            .wrapping_add(fetch64(s, len - 16))
            .wrapping_mul(K0),
    );
    let mut b = a.wrapping_add(z).rotate_right(52);
    let mut c = a.rotate_right(37);
    a = a.wrapping_add(fetch64(s, 8));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(fetch64(s, 16));
    let vf = a.wrapping_add(z);
    let vs = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    a = fetch64(s, 16).wrapping_add(fetch64(s, len - 32));
    z = fetch64(s, len - 8);
    b = a.wrapping_add(z).rotate_right(52);
    c = a.rotate_right(37);
    a = a.wrapping_add(fetch64(s, len - 24));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(fetch64(s, len - 16));
    let wf = a.wrapping_add(z);
    let ws = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);
    let r = shift_mix(
        vf.wrapping_add(ws)
            .wrapping_mul(K2)
            .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
    );
    shift_mix((seed ^ r.wrapping_mul(K0)).wrapping_add(vs)).wrapping_mul(K2)
}

fn hash_short(s: &[u8], seed: u64) -> u64 {
    match s.len() {
        0 => K2 ^ seed,
        1..=3 => hash_1to3(s, seed),
        4..=8 => hash_4to8(s, seed),
        9..=16 => hash_9to16(s, seed),
        17..=32 => hash_17to32(s, seed),
        _ => hash_33to64(s, seed),
    }
}

/// The seven-word running state used for inputs longer than 64 bytes.
struct State {
    h: [u64; 7],
}

impl State {
    fn new(chunk: &[u8], seed: u64) -> State {
        let h4 = seed.wrapping_mul(K1);
        let h5 = shift_mix(seed);
        let mut st = State {
            h: [
                0,
                seed,
                hash_16_bytes(seed, K1),
                (seed ^ K1).rotate_right(49),
                h4,
                h5,
                hash_16_bytes(h4, h5),
            ],
        };
        st.mix(chunk);
        st
    }

    fn mix_32(s: &[u8], at: usize, a: &mut u64, b: &mut u64) {
        *a = a.wrapping_add(fetch64(s, at));
        let c = fetch64(s, at + 24);
        *b = b.wrapping_add(*a).wrapping_add(c).rotate_right(21);
        let d = *a;
        *a = a
            .wrapping_add(fetch64(s, at + 8))
            .wrapping_add(fetch64(s, at + 16));
        *b = b.wrapping_add(a.rotate_right(44)).wrapping_add(d);
        *a = a.wrapping_add(c);
    }

    fn mix(&mut self, s: &[u8]) {
        let [mut h0, mut h1, mut h2, mut h3, mut h4, mut h5, mut h6] = self.h;
        h0 = h0
            .wrapping_add(h1)
            .wrapping_add(h3)
            .wrapping_add(fetch64(s, 8))
            .rotate_right(37)
            .wrapping_mul(K1);
        h1 = h1
            .wrapping_add(h4)
            .wrapping_add(fetch64(s, 48))
            .rotate_right(42)
            .wrapping_mul(K1);
        h0 ^= h6;
        h1 = h1.wrapping_add(h3).wrapping_add(fetch64(s, 40));
        h2 = h2.wrapping_add(h5).rotate_right(33).wrapping_mul(K1);
        h3 = h4.wrapping_mul(K1);
        h4 = h0.wrapping_add(h5);
        Self::mix_32(s, 0, &mut h3, &mut h4);
        h5 = h2.wrapping_add(h6);
        h6 = h1.wrapping_add(fetch64(s, 16));
        Self::mix_32(s, 32, &mut h5, &mut h6);
        std::mem::swap(&mut h2, &mut h0);
        self.h = [h0, h1, h2, h3, h4, h5, h6];
    }

    fn finish(&self, len: u64) -> u64 {
        let [h0, h1, h2, h3, h4, h5, h6] = self.h;
        hash_16_bytes(
            hash_16_bytes(h3, h5)
                .wrapping_add(shift_mix(h1).wrapping_mul(K1))
                .wrapping_add(h2),
            hash_16_bytes(h4, h6)
                .wrapping_add(shift_mix(len).wrapping_mul(K1))
                .wrapping_add(h0),
        )
    }
}

/// LLVM's `hash_value(StringRef)` for a release build: a 64-bit hash of `s`.
pub fn hash_bytes(s: &[u8]) -> u64 {
    hash_bytes_seeded(s, RELEASE_SEED)
}

/// `hash_value(StringRef)` with an explicit execution seed.
pub fn hash_bytes_seeded(s: &[u8], seed: u64) -> u64 {
    if s.len() <= 64 {
        return hash_short(s, seed);
    }
    let mut st = State::new(&s[..64], seed);
    let aligned_end = s.len() & !63;
    let mut at = 64;
    while at != aligned_end {
        st.mix(&s[at..at + 64]);
        at += 64;
    }
    if s.len() & 63 != 0 {
        st.mix(&s[s.len() - 64..]);
    }
    st.finish(s.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_length_class_is_stable_and_distinct() {
        // Each length class takes its own path; all must give distinct values
        // and never panic at the class boundaries.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3).to_le_bytes()[0]).collect();
        let mut seen = std::collections::HashSet::new();
        for len in [0, 1, 3, 4, 8, 9, 16, 17, 32, 33, 64, 65, 127, 128, 129, 300] {
            let h = hash_bytes(&data[..len]);
            assert_eq!(h, hash_bytes(&data[..len]));
            assert!(seen.insert(h), "collision at length {len}");
        }
    }

    #[test]
    fn seed_changes_the_hash() {
        assert_ne!(hash_bytes_seeded(b"arch", 1), hash_bytes_seeded(b"arch", 2));
    }
}
