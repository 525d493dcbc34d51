//! Compressed (version 3) OffloadBinaries read without inflating them
//! whole: the tables from the first bytes of the inflated binary, the
//! images' bytes as a stream ([`Inflating::reader`]), so that a reader
//! that passes them on (the scanner's hashes and `extract`) holds only the
//! decompressor's window and its own buffers.
//!
//! This works when the tables (entries, string entries, keys and values)
//! lie in the first [`MAX_TABLES`] bytes of the inflated binary, before the
//! images, as every LLVM writes them; the format allows them anywhere,
//! and then [`read_inflating`] gives `None` and the binary is read whole
//! ([`read_binary`](super::read_binary)).

use std::borrow::Cow;
use std::io::Read;

use super::read::{
    Described, Limits, OffloadImage, Tables, body_reader, compressed_body, inflated_head, locate,
    read_tables, whole_header,
};
use crate::error::Result;
use crate::num::len64;

/// The most bytes of a compressed binary inflated to find its tables.
pub const MAX_TABLES: u64 = 16 << 20;

/// Bytes of the inflated binary read first for its tables; more (doubling)
/// when they lie further in.
const FIRST_READ: u64 = 64 << 10;

/// An image of a compressed binary whose bytes were not inflated.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PendingImage {
    /// Its metadata; `image` is empty, and `image_offset` is where its
    /// bytes start in the inflated binary.
    pub meta: OffloadImage<'static>,
    /// Its size in bytes.
    pub size: u64,
}

/// A compressed version 3 OffloadBinary whose tables were read from the
/// first bytes of its inflated form ([`read_inflating`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Inflating<'data> {
    /// Its images, in entry order.
    pub images: Vec<PendingImage>,
    /// Bytes it occupies as stored.
    pub size: u64,
    /// Bytes it inflates to (the header included).
    pub inflated_size: u64,
    /// The inflated binary's first bytes, up to the compressed data.
    head: Vec<u8>,
    /// The compressed data.
    compressed: &'data [u8],
}

impl Inflating<'_> {
    /// The inflated binary as a stream of exactly [`Inflating::inflated_size`]
    /// bytes: its header as the uncompressed binary has it, then the
    /// inflated data. Data that ends early, inflates further or is corrupt
    /// fails the read with the error [`read_binary`](super::read_binary)
    /// gives for it, inside the `io::Error`.
    pub fn reader(&self) -> Result<Box<dyn Read + '_>> {
        let body = body_reader(self.compressed, self.inflated_size - len64(&self.head))?;
        Ok(Box::new(self.head.as_slice().chain(body)))
    }
}

/// Reads the OffloadBinary at `at` in `data` for streaming, when it is a
/// compressed version 3 binary: its tables from the first bytes of the
/// inflated binary (up to [`MAX_TABLES`]). An error is the one
/// [`read_binary`](super::read_binary) gives for the header (its inflated
/// size is checked against `limits`). `None`: the binary is not compressed,
/// or its tables could not be read that way (they lie further in, or they
/// or the data before them are damaged); read it whole, which also names
/// what is wrong.
pub fn read_inflating<'data>(
    data: &'data [u8],
    at: u64,
    limits: &Limits,
) -> Result<Option<Inflating<'data>>> {
    let located = locate(data, at)?;
    let Some(h3) = located.compressed else {
        return Ok(None);
    };
    let bin = located.bin;
    let (body_at, inflated) = compressed_body(bin, &h3, at, limits)?;
    let head = inflated_head(bin, &h3, body_at);
    let compressed = bin.get(head.len()..).unwrap_or_default();
    let hdr = whole_header(&h3);
    let most = inflated.min(MAX_TABLES.max(body_at));
    let mut want = most.min(body_at.saturating_add(FIRST_READ));
    loop {
        let mut prefix = head.clone();
        let Ok(body) = body_reader(compressed, inflated - body_at) else {
            return Ok(None);
        };
        if body.take(want - body_at).read_to_end(&mut prefix).is_err() {
            return Ok(None);
        }
        match read_tables(&prefix, inflated, &hdr, at) {
            Ok(entries) => {
                let images = entries
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| pending(e, i, at, bin));
                return Ok(Some(Inflating {
                    images: images.collect(),
                    size: len64(bin),
                    inflated_size: inflated,
                    head,
                    compressed,
                }));
            }
            Err(Tables::Beyond) if want < most => want = want.saturating_mul(2).min(most),
            Err(_) => return Ok(None),
        }
    }
}

/// Entry `index` of the compressed binary `bin` at `at`, without its bytes.
fn pending(e: Described<'_>, index: usize, at: u64, bin: &[u8]) -> PendingImage {
    let (start, end) = e.image;
    let meta = e.into_image(index, at, len64(bin), true, Cow::Borrowed(&[]));
    PendingImage {
        meta: meta.into_owned(),
        size: end - start,
    }
}
