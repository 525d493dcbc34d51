//! A squashfs file's data, read from the filesystem's bytes: its blocks
//! (each compressed, stored, or sparse: all zeros) and the tail of it kept
//! in a fragment block (shared by several small files). Each block is
//! decompressed into at most the filesystem's block size and must give
//! exactly the bytes the file's size asks of it. Only the last fragment
//! block read is kept, so memory stays at two blocks whatever the image.

use std::io::{self, Read};

use super::codec::Method;
use crate::num::{u64_from, usize_from};

/// The bit of a block's size that says it is stored as is.
const STORED: u32 = 1 << 24;

/// A regular file, as its inode describes it.
#[derive(Debug)]
pub(super) struct File {
    /// Its path inside the filesystem, without a leading `/`.
    pub(super) path: String,
    /// Where its first block starts.
    pub(super) start: u64,
    /// Each block's stored size (with the [`STORED`] bit).
    pub(super) blocks: Vec<u32>,
    /// Its tail: the fragment's index and where in it the tail starts.
    pub(super) fragment: Option<(usize, u32)>,
    pub(super) size: u64,
}

/// What reading a filesystem's data needs.
pub(super) struct Data<'a> {
    pub(super) image: &'a [u8],
    pub(super) method: Method,
    pub(super) block_size: u32,
    /// Each fragment block's start and stored size.
    pub(super) fragments: Vec<(u64, u32)>,
    /// The last fragment block read, by index.
    cached: Option<(usize, Vec<u8>)>,
}

impl<'a> Data<'a> {
    pub(super) fn new(
        image: &'a [u8],
        method: Method,
        block_size: u32,
        fragments: Vec<(u64, u32)>,
    ) -> Self {
        Data {
            image,
            method,
            block_size,
            fragments,
            cached: None,
        }
    }

    /// The bytes of the block at `at` of stored size `raw`, decompressed
    /// into `out`: `want` bytes exactly, or any up to the block size when
    /// `want` is `None` (a fragment block).
    fn block(
        &self,
        at: u64,
        raw: u32,
        want: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let len = raw & !STORED;
        let bs = usize_from(u64::from(self.block_size));
        if len == 0 {
            out.clear();
            out.resize(want.unwrap_or(bs), 0);
            return Ok(());
        }
        let end = at.saturating_add(u64::from(len));
        let bytes = self
            .image
            .get(usize_from(at)..usize_from(end))
            .ok_or_else(|| format!("its block at {at} ({len} bytes) ends past the filesystem"))?;
        if raw & STORED != 0 {
            if bytes.len() > bs {
                return Err(format!("its stored block at {at} is larger than a block"));
            }
            out.clear();
            out.extend_from_slice(bytes);
        } else {
            self.method.decompress(bytes, bs, out)?;
        }
        match want {
            Some(w) if out.len() != w => Err(format!(
                "its block at {at} gives {} bytes, not the {w} its size asks",
                out.len()
            )),
            _ => Ok(()),
        }
    }

    /// The file's bytes as one slice of the image, when every block is
    /// stored as is, one after the other, and it has no tail in a fragment.
    pub(super) fn stored(&self, f: &File) -> Option<&'a [u8]> {
        if f.fragment.is_some() || f.blocks.iter().any(|&b| b & STORED == 0 || b == STORED) {
            return None;
        }
        let total: u64 = f.blocks.iter().map(|&b| u64::from(b & !STORED)).sum();
        let whole = f
            .blocks
            .iter()
            .rev()
            .skip(1)
            .all(|&b| b & !STORED == self.block_size);
        if total != f.size || !whole {
            return None;
        }
        let end = f.start.checked_add(total)?;
        self.image.get(usize_from(f.start)..usize_from(end))
    }

    /// Checks that `f`'s blocks and tail add up to its size, and where its
    /// fragment is.
    pub(super) fn check(&self, f: &File) -> Result<(), String> {
        let bs = u64::from(self.block_size);
        let whole = u64_from(f.blocks.len()).saturating_mul(bs);
        let fits = match f.fragment {
            Some((i, offset)) => {
                self.fragments
                    .get(i)
                    .ok_or_else(|| format!("its fragment {i} is not in the fragment table"))?;
                let tail = f.size.checked_sub(whole).filter(|&t| t > 0 && t < bs);
                tail.is_some_and(|t| u64::from(offset) + t <= bs)
            }
            None => whole >= f.size && whole < f.size + bs,
        };
        if !fits {
            return Err(format!(
                "its {} blocks and tail do not make its {} bytes",
                f.blocks.len(),
                f.size
            ));
        }
        Ok(())
    }

    /// A reader of `f`'s bytes ([`check`](Self::check)ed first).
    pub(super) fn reader<'d>(&'d mut self, f: &'d File) -> FileReader<'d, 'a> {
        FileReader {
            at: f.start,
            data: self,
            file: f,
            next: 0,
            buf: Vec::new(),
            pos: 0,
            tail: f.fragment.is_some(),
        }
    }
}

/// Reads one file's bytes, a block at a time.
pub(super) struct FileReader<'d, 'a> {
    data: &'d mut Data<'a>,
    file: &'d File,
    /// The next block, and where it starts.
    next: usize,
    at: u64,
    buf: Vec<u8>,
    pos: usize,
    /// Whether its tail is still to be read.
    tail: bool,
}

impl FileReader<'_, '_> {
    /// Puts the next block's bytes (or the tail's) in `buf`; empty at the end.
    fn fill(&mut self) -> Result<(), String> {
        let (f, bs) = (self.file, u64::from(self.data.block_size));
        self.pos = 0;
        if let Some(&raw) = f.blocks.get(self.next) {
            let done = u64_from(self.next) * bs;
            let want = usize_from((f.size - done).min(bs));
            self.data.block(self.at, raw, Some(want), &mut self.buf)?;
            self.at += u64::from(raw & !STORED);
            self.next += 1;
            return Ok(());
        }
        self.buf.clear();
        if let (true, Some((i, offset))) = (self.tail, f.fragment) {
            self.tail = false;
            if self.data.cached.as_ref().is_none_or(|(c, _)| *c != i) {
                let (start, raw) = self.data.fragments[i];
                let mut block = Vec::new();
                self.data.block(start, raw, None, &mut block)?;
                self.data.cached = Some((i, block));
            }
            let block = self.data.cached.as_ref().map_or(&[][..], |(_, b)| b);
            let tail = usize_from(f.size - u64_from(f.blocks.len()) * bs);
            let from = usize_from(u64::from(offset));
            let bytes = block
                .get(from..from + tail)
                .ok_or_else(|| format!("its tail lies past the end of fragment block {i}"))?;
            self.buf.extend_from_slice(bytes);
        }
        Ok(())
    }
}

impl Read for FileReader<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            self.fill()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
