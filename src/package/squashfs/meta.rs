//! squashfs metadata blocks, read and written: the inode, directory,
//! fragment, export, id and xattr tables are runs of blocks that each
//! decompress to at most 8 KiB, behind a two-byte header (the low 15 bits
//! the stored length, the top bit set when the block is stored as is).
//! A place in a table is a *reference*: the start of its block, counted
//! from the table's start, shifted left 16 bits, or'ed with the offset in
//! the decompressed block.
//!
//! | bytes | field                                       |
//! |-------|---------------------------------------------|
//! | 2     | header: stored length, `0x8000` if as is     |
//! | n     | the block, compressed or as is (n ≤ 8192)    |
//!
//! The fragment, export, id and xattr id tables add an *index* after
//! their blocks: one little-endian u64 per block, its absolute place.

use std::io;

use super::codec::{METADATA_BLOCK, Method, Tuning, compress};
use crate::bytes::le_at;
use crate::num::{u64_from, usize_from};

/// A metadata block's header bit: stored as is.
const AS_IS: u16 = 0x8000;

/// A run of metadata blocks, decompressed, with where each block starts
/// on disk (from the table's start) and in the decompressed bytes.
pub(super) struct Table {
    bytes: Vec<u8>,
    starts: Vec<(u64, usize)>,
}

impl Table {
    /// The blocks from `from` up to `to` of `image`, each decompressed
    /// with `method` into at most 8 KiB.
    pub(super) fn read(image: &[u8], method: Method, from: u64, to: u64) -> Result<Table, String> {
        let mut t = Table {
            bytes: Vec::new(),
            starts: Vec::new(),
        };
        let mut at = from;
        let mut block = Vec::new();
        while at < to {
            t.starts.push((at - from, t.bytes.len()));
            at = one(image, method, at, &mut block)?;
            t.bytes.extend_from_slice(&block);
        }
        Ok(t)
    }

    /// The decompressed bytes.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where the reference `r` points in [`bytes`](Self::bytes).
    pub(super) fn at(&self, r: u64) -> Result<usize, String> {
        let (block, offset) = (r >> 16, usize_from(r & 0xffff));
        let i = self
            .starts
            .binary_search_by_key(&block, |s| s.0)
            .map_err(|_| format!("a reference names no metadata block (block {block})"))?;
        let at = self.starts[i].1 + offset;
        if at >= self.bytes.len() {
            return Err(format!(
                "a reference lies past its table's end (block {block}, offset {offset})"
            ));
        }
        Ok(at)
    }
}

/// Decompresses the metadata block at `at` of `image` into `out`; gives
/// where the next block starts.
pub(super) fn one(image: &[u8], method: Method, at: u64, out: &mut Vec<u8>) -> Result<u64, String> {
    let h = le_at::<u16>(image, usize_from(at))
        .ok_or_else(|| format!("a metadata block's header at {at} is cut short"))?;
    let len = h & !AS_IS;
    let start = usize_from(at) + 2;
    let stored = image
        .get(start..start + usize::from(len))
        .filter(|_| len > 0)
        .ok_or_else(|| format!("the metadata block at {at} is empty or cut short"))?;
    if h & AS_IS != 0 {
        out.clear();
        out.extend_from_slice(stored);
    } else {
        method.decompress(stored, METADATA_BLOCK, out)?;
    }
    Ok(at + 2 + u64::from(len))
}

/// The `n` bytes of an indexed table (fragment, id, xattr id) whose index
/// starts at `index` in `image`: its blocks, decompressed, in order.
pub(super) fn indexed(image: &[u8], method: Method, index: u64, n: u64) -> Result<Vec<u8>, String> {
    let blocks = n.div_ceil(METADATA_BLOCK as u64);
    let mut out = Vec::new();
    let mut block = Vec::new();
    for i in 0..blocks {
        let at = usize_from(index).checked_add(usize_from(i * 8));
        let start = at
            .and_then(|at| le_at::<u64>(image, at))
            .ok_or_else(|| format!("a table's index at {index} is cut short"))?;
        one(image, method, start, &mut block)?;
        out.extend_from_slice(&block);
    }
    if u64_from(out.len()) < n {
        return Err(format!(
            "a table at {index} holds {} of its {n} bytes",
            out.len()
        ));
    }
    out.truncate(usize_from(n));
    Ok(out)
}

/// Writes a table as metadata blocks, compressed as `tuning` says (as
/// is where compressing does not make a block smaller), held in memory.
pub(super) struct Writer<'t> {
    tuning: &'t Tuning,
    pending: Vec<u8>,
    out: Vec<u8>,
    /// Each block's start in `out`.
    blocks: Vec<u64>,
}

impl<'t> Writer<'t> {
    pub(super) fn new(tuning: &'t Tuning) -> Self {
        Writer {
            tuning,
            pending: Vec::new(),
            out: Vec::new(),
            blocks: Vec::new(),
        }
    }

    /// The reference of the next byte written.
    pub(super) fn reference(&self) -> u64 {
        (u64_from(self.out.len()) << 16) | u64_from(self.pending.len())
    }

    /// Appends `bytes`, compressing each block as it fills.
    pub(super) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.pending.extend_from_slice(bytes);
        while self.pending.len() >= METADATA_BLOCK {
            let rest = self.pending.split_off(METADATA_BLOCK);
            let full = std::mem::replace(&mut self.pending, rest);
            self.block(&full)?;
        }
        Ok(())
    }

    /// Compresses one block into `out`.
    fn block(&mut self, raw: &[u8]) -> io::Result<()> {
        self.blocks.push(u64_from(self.out.len()));
        let packed = compress(self.tuning, raw, 8192)?;
        // Both lengths are at most 8 KiB, so the header holds them.
        let len = |n: usize| u16::try_from(n).unwrap_or(AS_IS - 1);
        let (header, body) = match packed.len() < raw.len() {
            true => (len(packed.len()), &packed[..]),
            false => (len(raw.len()) | AS_IS, raw),
        };
        self.out.extend_from_slice(&header.to_le_bytes());
        self.out.extend_from_slice(body);
        Ok(())
    }

    /// The blocks, the last one written out, and each block's start.
    pub(super) fn finish(mut self) -> io::Result<(Vec<u8>, Vec<u64>)> {
        if !self.pending.is_empty() {
            let last = std::mem::take(&mut self.pending);
            self.block(&last)?;
        }
        Ok((self.out, self.blocks))
    }
}

/// `entries` as an indexed table placed at `at`: its blocks then its
/// index; gives those bytes and where the index starts.
pub(super) fn write_indexed(
    tuning: &Tuning,
    entries: &[u8],
    at: u64,
) -> io::Result<(Vec<u8>, u64)> {
    let mut w = Writer::new(tuning);
    w.write(entries)?;
    let (mut out, blocks) = w.finish()?;
    let index = at + u64_from(out.len());
    for b in blocks {
        out.extend_from_slice(&(at + b).to_le_bytes());
    }
    Ok((out, index))
}

#[cfg(test)]
mod tests {
    use super::{Table, Writer, indexed, write_indexed};
    use crate::package::squashfs::codec::{Method, Tuning};

    fn tuning(method: Method) -> Tuning {
        Tuning {
            method,
            block: None,
            first: None,
            bcj: 0,
        }
    }

    #[test]
    fn references_cross_block_boundaries_and_read_back() {
        for m in [Method::Gzip, Method::Xz, Method::Zstd, Method::Lz4] {
            let t = tuning(m);
            let mut w = Writer::new(&t);
            let mut refs = Vec::new();
            // Records of 100 bytes: some straddle the 8 KiB boundaries.
            for i in 0..300u32 {
                refs.push(w.reference());
                let rec: Vec<u8> = (0..100)
                    .map(|k| ((i * 7 + k) % 256).to_le_bytes()[0])
                    .collect();
                w.write(&rec).unwrap();
            }
            let (out, blocks) = w.finish().unwrap();
            assert_eq!(blocks.len(), 4, "{m:?}");
            let back = Table::read(&out, m, 0, out.len() as u64).unwrap();
            assert_eq!(back.bytes().len(), 30_000);
            for (i, r) in refs.iter().enumerate() {
                let at = back.at(*r).unwrap();
                assert_eq!(at, i * 100, "{m:?} record {i}");
                assert!(*r & 0xffff < 8192);
            }
        }
    }

    #[test]
    fn incompressible_blocks_are_stored_as_is() {
        let t = tuning(Method::Gzip);
        let mut w = Writer::new(&t);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..9000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        w.write(&noise).unwrap();
        let (out, _) = w.finish().unwrap();
        let h = u16::from_le_bytes([out[0], out[1]]);
        assert_eq!(h, 8192 | 0x8000);
        let back = Table::read(&out, Method::Gzip, 0, out.len() as u64).unwrap();
        assert_eq!(back.bytes(), &noise[..]);
        assert!(back.at(1 << 40).is_err());
    }

    #[test]
    fn indexed_tables_round_trip() {
        let t = tuning(Method::Zstd);
        let entries: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let mut image = vec![0u8; 50];
        let (bytes, index) = write_indexed(&t, &entries, 50).unwrap();
        image.extend_from_slice(&bytes);
        assert_eq!(
            indexed(&image, Method::Zstd, index, 20_000).unwrap(),
            entries
        );
        assert!(indexed(&image, Method::Zstd, index, 30_000).is_err());
        assert!(indexed(&image, Method::Zstd, index + 100, 10).is_err());
    }
}
