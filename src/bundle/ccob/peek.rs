//! The first bytes of each entry of a compressed bundle, read from the
//! start of the decompressed stream without keeping it: enough to tell each
//! image's kind (ELF, bitcode, …) without decompressing into memory.

use std::io::{self, Read};

use super::raw::Method;
use super::read::Ccob;

/// How far [`Ccob::peek`] decompresses at most, as a multiple of the
/// compressed size (real device code compresses 3 to 20 times; a bomb of
/// zeros thousands of times, and is not followed that far).
pub const PEEK_RATIO: u64 = 64;

/// [`PEEK_RATIO`]'s floor: small bundles are always followed this far.
pub const PEEK_FLOOR: u64 = 64 << 20;

impl Ccob<'_> {
    /// The first `n` bytes of the contents at each of `offsets` (in the
    /// contents, any order), from one pass over the decompressed stream
    /// that keeps only those bytes. An offset the pass does not reach —
    /// past `limit` decompressed bytes, past [`PEEK_RATIO`] times the
    /// compressed size (at least [`PEEK_FLOOR`]), past the end of the
    /// contents, or after a decompression error — gives `None`. Fewer than `n` bytes are given where the
    /// contents end first. The stored hash is not checked.
    pub(crate) fn peek(&self, offsets: &[u64], n: usize, limit: u64) -> Vec<Option<Vec<u8>>> {
        let mut out = vec![None; offsets.len()];
        let cap = (self.payload.len() as u64)
            .saturating_mul(PEEK_RATIO)
            .max(PEEK_FLOOR)
            .min(limit);
        let mut dec: Box<dyn Read + '_> = if self.header.method == Method::ZSTD {
            match zstd::stream::read::Decoder::with_buffer(self.payload) {
                Ok(d) => Box::new(d),
                Err(_) => return out,
            }
        } else {
            Box::new(flate2::read::ZlibDecoder::new(self.payload))
        };
        let mut order: Vec<usize> = (0..offsets.len()).collect();
        order.sort_by_key(|&i| offsets[i]);
        // The bytes read since the last skip, and where they start: an
        // entry that starts inside them (an empty host entry at the next
        // one's offset) is served from them, read further if need be.
        let mut from = 0u64;
        let mut buf: Vec<u8> = Vec::new();
        for i in order {
            let at = offsets[i];
            if at >= cap {
                continue;
            }
            let end = from + buf.len() as u64;
            if at > end {
                // Skip to the entry, keeping nothing.
                let skipped = io::copy(&mut (&mut dec).take(at - end), &mut io::sink());
                if skipped.ok() != Some(at - end) {
                    break;
                }
                from = at;
                buf.clear();
            }
            let want = (at + n as u64).min(cap);
            let have = from + buf.len() as u64;
            if want > have && (&mut dec).take(want - have).read_to_end(&mut buf).is_err() {
                break;
            }
            let skip = usize::try_from(at - from).unwrap_or(usize::MAX);
            let upto = buf.len().min(skip.saturating_add(n));
            out[i] = buf.get(skip..upto).map(<[u8]>::to_vec);
            // Only what a later entry at the same place may need is kept.
            if skip > 0 {
                buf.drain(..skip);
                from = at;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CompressOptions, compress_to_vec};
    use super::*;

    /// Contents of `len` bytes where byte `i` is `i % 251`, compressed as
    /// LLVM does (zstd), and with zlib (version 2).
    fn ccobs(len: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let data: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
        let zstd = compress_to_vec(&data, &CompressOptions::default())
            .unwrap()
            .0;
        let zlib = CompressOptions {
            method: super::super::Method::ZLIB,
            version: 2,
            ..CompressOptions::default()
        };
        let zlib = compress_to_vec(&data, &zlib).unwrap().0;
        (data, vec![zstd, zlib])
    }

    #[test]
    fn heads_at_offsets_in_any_order() {
        let (data, ccobs) = ccobs(300_000);
        for c in &ccobs {
            let c = Ccob::parse(c).unwrap();
            let offsets = [200_000u64, 10, 10, 12, 299_990, 300_000, 5];
            let got = c.peek(&offsets, 24, u64::MAX);
            assert_eq!(got[0].as_deref(), Some(&data[200_000..200_024]));
            // Equal and overlapping offsets: each its n bytes, read once.
            assert_eq!(got[1].as_deref(), Some(&data[10..34]));
            assert_eq!(got[2].as_deref(), Some(&data[10..34]));
            assert_eq!(got[3].as_deref(), Some(&data[12..36]));
            // The contents end first: fewer bytes, then nothing.
            assert_eq!(got[4].as_deref(), Some(&data[299_990..]));
            assert_eq!(got[5].as_deref(), Some(&[][..]));
            assert_eq!(got[6].as_deref(), Some(&data[5..29]));
        }
    }

    #[test]
    fn stops_at_the_limit_and_on_damage() {
        let (data, ccobs) = ccobs(100_000);
        let c = Ccob::parse(&ccobs[0]).unwrap();
        let got = c.peek(&[0, 50_000, 90_000], 8, 60_000);
        assert_eq!(got[0].as_deref(), Some(&data[..8]));
        assert_eq!(got[1].as_deref(), Some(&data[50_000..50_008]));
        assert_eq!(got[2], None);
        // A payload cut short: what lies before the cut, nothing after.
        let mut cut = ccobs[0].clone();
        let keep = cut.len() / 2;
        cut.truncate(keep);
        if let Ok(c) = Ccob::parse(&cut) {
            let got = c.peek(&[0, 99_000], 8, u64::MAX);
            assert_eq!(got[1], None);
        }
    }
}
