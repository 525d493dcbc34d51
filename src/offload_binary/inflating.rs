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
use std::io::{self, Read};

use super::read::{
    Described, OffloadImage, Tables, body_reader, compressed_body, inflated_head, locate,
    read_tables, whole_header,
};
use crate::Limits;
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
/// first bytes of its inflated form ([`find_images_streamed`](super::find_images_streamed)).
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
    /// The compressed data (owned when it was decoded from LLVM bitcode).
    compressed: Cow<'data, [u8]>,
    /// The whole inflated binary, checked, when the first read of its
    /// tables took all of it (a small binary).
    whole: Option<Vec<u8>>,
}

impl Inflating<'_> {
    /// A copy that owns its compressed data.
    pub(crate) fn into_owned(self) -> Inflating<'static> {
        Inflating {
            images: self.images,
            size: self.size,
            inflated_size: self.inflated_size,
            head: self.head,
            compressed: Cow::Owned(self.compressed.into_owned()),
            whole: self.whole,
        }
    }

    /// The inflated binary as a stream of exactly [`Inflating::inflated_size`]
    /// bytes: its header as the uncompressed binary has it, then the
    /// inflated data. Data that ends early, inflates further or is corrupt
    /// fails the read with the error [`read_all`](super::read_all)
    /// gives for it, inside the `io::Error`.
    pub fn reader(&self) -> Result<Box<dyn Read + '_>> {
        if let Some(whole) = &self.whole {
            return Ok(Box::new(whole.as_slice()));
        }
        let body = body_reader(&self.compressed, self.inflated_size - len64(&self.head))?;
        Ok(Box::new(self.head.as_slice().chain(body)))
    }

    /// Streams the inflated binary once, from its first byte to its last,
    /// and hands `visit` a reader of the bytes of each image (by index in
    /// [`Inflating::images`]) that `want` asks for, in the order of their
    /// offsets; what `visit` leaves unread is skipped. The stream must come
    /// to exactly [`Inflating::inflated_size`] bytes: data that ends early,
    /// inflates further, or is corrupt fails with the error
    /// [`read_all`](super::read_all) gives for it, inside the
    /// `io::Error` (as for [`Inflating::reader`]); an error of `visit` is
    /// passed on as it is.
    pub fn stream(
        &self,
        want: &mut dyn FnMut(usize) -> bool,
        visit: &mut dyn FnMut(usize, &mut dyn Read) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut order: Vec<usize> = (0..self.images.len())
            .filter(|&i| self.images[i].size > 0 && want(i))
            .collect();
        order.sort_by_key(|&i| self.images[i].meta.image_offset);
        let mut r = self.reader().map_err(crate::Error::into_io)?;
        // (A small binary gets a small buffer: nested ones are many.)
        let mut buf =
            vec![0u8; usize::try_from(self.inflated_size).map_or(CHUNK, |n| n.clamp(1, CHUNK))];
        let mut at = 0u64;
        for i in order {
            let img = &self.images[i];
            let start = img.meta.image_offset;
            // The images are disjoint, so sorted they follow each other.
            skip(&mut (&mut r).take(start.saturating_sub(at)), &mut buf)?;
            let mut bytes = (&mut r).take(img.size);
            visit(i, &mut bytes)?;
            skip(&mut bytes, &mut buf)?;
            at = at.max(start.saturating_add(img.size));
        }
        // To the end, which checks the size.
        skip(&mut r, &mut buf)
    }
}

/// Bytes read at a time when streaming.
const CHUNK: usize = 256 << 10;

/// Reads `r` to its end, throwing the bytes away.
fn skip(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<()> {
    loop {
        match r.read(buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
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
    Ok(match attempt(data, at, limits)? {
        Attempt::Ready(inflating) => Some(inflating),
        Attempt::Plain | Attempt::Beyond | Attempt::Bad(_) => None,
    })
}

/// What reading a binary's tables from the first bytes of its inflated
/// form gave.
pub(super) enum Attempt<'data> {
    /// The tables, read.
    Ready(Inflating<'data>),
    /// The binary is not compressed.
    Plain,
    /// The tables lie past the first [`MAX_TABLES`] bytes: the binary must
    /// be inflated whole to read them.
    Beyond,
    /// The tables, or the data before them, are damaged: what reading the
    /// binary whole fails with too (every check is made against the whole
    /// binary's size, and the stream fails at the same byte).
    Bad(crate::Error),
}

/// [`read_inflating`], telling why the tables were not read.
pub(super) fn attempt<'data>(
    data: &'data [u8],
    at: u64,
    limits: &Limits,
) -> Result<Attempt<'data>> {
    let located = locate(data, at)?;
    let Some(h3) = located.compressed else {
        return Ok(Attempt::Plain);
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
        let mut body = match body_reader(compressed, inflated - body_at) {
            Ok(body) => body,
            Err(e) => return Ok(Attempt::Bad(e)),
        };
        if let Err(e) = (&mut body).take(want - body_at).read_to_end(&mut prefix) {
            return Ok(Attempt::Bad(crate::Error::from_io(e)));
        }
        // A binary read whole by now (a small one) is kept, when its
        // stream ends right there, so that it is not inflated again.
        let complete = want == inflated && matches!(body.read(&mut [0u8; 1]), Ok(0));
        match read_tables(&prefix, inflated, &hdr, at) {
            Ok(entries) => {
                let images = entries
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| pending(e, i, at, bin))
                    .collect();
                return Ok(Attempt::Ready(Inflating {
                    images,
                    size: len64(bin),
                    inflated_size: inflated,
                    head,
                    compressed: Cow::Borrowed(compressed),
                    whole: complete.then_some(prefix),
                }));
            }
            Err(Tables::Beyond) if want < most => want = want.saturating_mul(2).min(most),
            Err(Tables::Beyond) => return Ok(Attempt::Beyond),
            Err(Tables::Bad(e)) => return Ok(Attempt::Bad(e)),
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
