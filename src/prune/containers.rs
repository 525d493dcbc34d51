//! One container rewritten with only the entries that stay. Every function
//! takes the container's bytes and, per entry in file order, whether it
//! stays, and returns a [`Pruned`]: the new container as a [`Layout`] whose
//! payloads are byte ranges of the input (entries are copied as stored:
//! compressed fatbin entries stay compressed, nothing is decoded).

use std::ops::Range;

use crate::bundle::binary::{self, EntrySpec};
use crate::bundle::ccob;
use crate::error::{Error, Result};
use crate::fatbin;
use crate::layout::{Layout, Piece};
use crate::num::{len64, usize_from};

/// A container with only the entries that stay.
#[derive(Debug, Clone)]
pub struct Pruned {
    /// The new container: payload `i` is `ranges[i]` of the input.
    pub layout: Layout,
    /// The input's byte ranges the layout's payloads refer to.
    pub ranges: Vec<Range<u64>>,
    /// Entries kept.
    pub kept: usize,
    /// Entries dropped.
    pub dropped: usize,
}

impl Pruned {
    /// The new container's bytes, gathered from `data` (the input the
    /// ranges are of): for tests and small containers; files are written
    /// piece by piece.
    pub fn to_vec(&self, data: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut out = Vec::with_capacity(usize_from(self.layout.size));
        // Writes to a `Vec` never fail. A range outside `data` panics, as
        // it always has: the ranges are of the input the container was
        // read from.
        let _ = self.layout.write_each(&mut out, |out, i| {
            let r = &self.ranges[i];
            out.write_all(&data[usize_from(r.start)..usize_from(r.end)])
        });
        out
    }
}

/// Fails unless there is one verdict per entry.
fn check_count(what: &str, entries: usize, stays: &[bool]) -> Result<()> {
    if entries == stays.len() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{what} has {entries} entries, and {} verdicts were given",
        stays.len()
    )))
}

/// The CUDA fatbin container at the start of `data` with only the entries
/// that stay (`stays[i]` for entry `i`): its header as it was, with the
/// size of what follows it set anew, then the kept entries back to back,
/// each exactly as stored (header, payload and padding).
///
/// When no entry stays, the fatbin is emptied: its header alone, saying
/// that nothing follows it. That is the fatbin NVIDIA's `fatbinary`
/// writes when given no image (`fatbinary --create=F` with no `--image3`:
/// 16 bytes, size 0, which `cuobjdump` lists as holding nothing), and the
/// CUDA runtime registers it as it registers any fatbin; a device then
/// finds no code in it, as it found none it could load before.
pub fn fatbin(data: &[u8], stays: &[bool]) -> Result<Pruned> {
    let f = fatbin::read(data)?;
    check_count("the fatbin", f.entries.len(), stays)?;
    // Entries start after the header; each ends where the next starts.
    let first = f.entries.first().map_or(f.size, |e| e.offset);
    let header_len = usize_from(first);
    let mut header = data[..header_len].to_vec();
    let mut layout = Layout::default();
    let mut ranges = Vec::new();
    let mut body = 0u64;
    for (i, e) in f.entries.iter().enumerate() {
        let end = f.entries.get(i + 1).map_or(f.size, |n| n.offset);
        if stays[i] {
            let len = end
                .checked_sub(e.offset)
                .ok_or_else(|| Error::invalid("CUDA fatbin", "its entries are not in order"))?;
            ranges.push(e.offset..end);
            body = body.saturating_add(len);
        }
    }
    // The size after the header, at offset 8.
    header[8..16].copy_from_slice(&body.to_le_bytes());
    layout.push(Piece::Bytes(header), len64(&data[..header_len]));
    for (i, r) in ranges.iter().enumerate() {
        layout.push(Piece::Image(i), r.end - r.start);
    }
    let kept = ranges.len();
    Ok(Pruned {
        layout,
        ranges,
        kept,
        dropped: f.entries.len() - kept,
    })
}

/// The alignment a binary bundle's entry data were laid out at, as far as
/// the offsets tell: the largest power of two up to 4096 that divides the
/// offset of every entry holding data (LLVM's bundler aligns each entry's
/// data to its `-bundle-align`, 4096 for HIP).
fn bundle_alignment(entries: &[binary::Entry<'_>]) -> u64 {
    let mut align = 4096u64;
    for e in entries.iter().filter(|e| !e.data.is_empty()) {
        while align > 1 && e.offset % align != 0 {
            align /= 2;
        }
    }
    align
}

/// The binary clang offload bundle in `data` with only the entries that
/// stay (`stays[i]` for entry `i` in the header's order), laid out as LLVM
/// 22's bundler lays out those entries at the alignment the input's
/// offsets show. The host entry is the caller's to keep.
pub fn bundle(data: &[u8], stays: &[bool]) -> Result<Pruned> {
    let entries = binary::read(data)?;
    check_count("the bundle", entries.len(), stays)?;
    let align = bundle_alignment(&entries);
    let kept: Vec<&binary::Entry<'_>> = entries
        .iter()
        .zip(stays)
        .filter_map(|(e, &s)| s.then_some(e))
        .collect();
    let specs: Vec<EntrySpec> = kept
        .iter()
        .map(|e| EntrySpec {
            id: e.id_str().into_owned(),
            size: len64(e.data),
        })
        .collect();
    let layout = binary::layout(&specs, align)?;
    let ranges = kept
        .iter()
        .map(|e| e.offset..e.offset + len64(e.data))
        .collect();
    Ok(Pruned {
        layout,
        ranges,
        kept: kept.len(),
        dropped: entries.len() - kept.len(),
    })
}

/// The compressed bundle (CCOB) in `data` with only the entries of its
/// bundle that stay (`stays[i]` for entry `i`): decompressed (its stored
/// hash checked), pruned as [`bundle`] prunes, and compressed again with
/// the same method and format version (version 1, which this crate does
/// not write, becomes 2) at LLVM's default level for the method (a CCOB
/// does not record its level), on `threads` threads (0: one, as LLVM).
/// The result is built in memory: one payload, the whole new CCOB.
pub fn ccob(data: &[u8], stays: &[bool], threads: u32) -> Result<(Pruned, Vec<u8>)> {
    let dec = ccob::decompress(data, &ccob::ReadOptions::default())?;
    let inner = bundle(&dec.data, stays)?;
    let plain = inner.to_vec(&dec.data);
    let method = dec.header.method;
    let opts = ccob::CompressOptions {
        version: dec.header.version.max(2),
        method,
        level: if method == ccob::Method::ZSTD {
            ccob::ZSTD_DEFAULT_LEVEL
        } else {
            ccob::ZLIB_DEFAULT_LEVEL
        },
        threads,
    };
    let (bytes, _) = ccob::compress_to_vec(&plain, &opts)?;
    let mut layout = Layout::default();
    layout.push(Piece::Image(0), len64(&bytes));
    let pruned = Pruned {
        layout,
        ranges: std::iter::once(0..len64(&bytes)).collect(),
        kept: inner.kept,
        dropped: inner.dropped,
    };
    Ok((pruned, bytes))
}
