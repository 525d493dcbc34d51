//! A tar archive rewritten as it streams ([`Walk`]): every block read is
//! written out again as it was, except the header and data of the members
//! the caller replaces, whose header gets the new size and checksum and
//! nothing else. The archive is read by the package layer's tar reader
//! ([`crate::package::tar`]), which checks the headers and applies the
//! extension entries (GNU long names, pax headers) before them; those
//! are written out as they are before the entry's header, so a member
//! whose size a pax header gives keeps that size: [`Header::size_in_pax`]
//! says so, for the caller to leave it alone. An entry the caller leaves
//! out (a file removed) goes with its extension entries.

use std::io::{self, Read, Write};

pub(crate) use super::{BLOCK, Fault, Header};
use super::{Body, RECORD, Reader, padded, set_checksum, set_size};

/// A writer that counts what passes through it.
pub(crate) struct Counted<W> {
    inner: W,
    written: u64,
}

impl<W> Counted<W> {
    /// A counting writer into `inner`, nothing written yet.
    pub(crate) fn new(inner: W) -> Counted<W> {
        Counted { inner, written: 0 }
    }

    /// The writer.
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
/// A tar archive read from `input` and written to `out` entry by entry.
///
/// [`Walk::next`] reads up to the next entry and takes its data's bytes
/// from the budget; the caller then writes it: as it is ([`Walk::copy`]),
/// or its header ([`Walk::copy_header`], or [`Walk::write_header`] with a
/// new size) and then its data: the old data as it is
/// ([`Walk::pass_body`]), or bytes of the caller's to [`Walk::out`] and
/// [`Walk::pad`] after reading the old from [`Walk::body`] and
/// [`Walk::skip_body`]. At the end of the archive `next` writes what
/// follows the entries and returns `None`. Every byte read counts against
/// the budget; past it, [`Fault::Budget`].
pub(crate) struct Walk<R, W> {
    tar: Reader<R>,
    out: Counted<W>,
}

impl<R: Read, W: Write> Walk<R, W> {
    /// A walk of the archive `input` gives, written to `out`, reading no
    /// more than `limit` bytes of it.
    pub(crate) fn new(input: R, out: W, limit: u64) -> Walk<R, W> {
        Walk {
            tar: Reader::new(input, limit),
            out: Counted::new(out),
        }
    }

    /// Bytes read of the archive so far.
    pub(crate) fn read(&self) -> u64 {
        self.tar.read()
    }
    /// Where the rewritten archive goes (to write a replaced member's
    /// data, between [`Walk::write_header`] and [`Walk::pad`]).
    pub(crate) fn out(&mut self) -> &mut Counted<W> {
        &mut self.out
    }

    /// The writer, once the walk is over.
    pub(crate) fn into_inner(self) -> W {
        self.out.inner
    }

    /// Reads up to the next member: the extension entries before it
    /// (GNU long names, pax headers) are applied to it, and written out
    /// with its header. At the end of the archive, writes what follows its
    /// last member (and extension entries that came before none) and
    /// returns `None`.
    pub(crate) fn next(&mut self) -> Result<Option<Header>, Fault> {
        if let Some(h) = self.tar.next()? {
            return Ok(Some(h));
        }
        end(&mut self.tar, &mut [&mut self.out])?;
        Ok(None)
    }

    /// Writes `h` and its data as they are.
    pub(crate) fn copy(&mut self, h: &Header) -> Result<(), Fault> {
        self.copy_header(h)?;
        self.pass_body()
    }

    /// Writes `h`'s header (and sparse map) as it is.
    pub(crate) fn copy_header(&mut self, h: &Header) -> Result<(), Fault> {
        put_header(&mut self.out, h, None)
    }

    /// Writes `h` with its size set to `size` (and its checksum to
    /// match), nothing else changed; its data is for the caller to write,
    /// then [`Walk::pad`].
    pub(crate) fn write_header(&mut self, h: &Header, size: u64) -> Result<(), Fault> {
        put_header(&mut self.out, h, Some(size))
    }

    /// Pads the `size` bytes of data just written to whole blocks.
    pub(crate) fn pad(&mut self, size: u64) -> Result<(), Fault> {
        put_pad(&mut self.out, size)
    }

    /// The current entry's data not read yet, to read.
    pub(crate) fn body(&mut self) -> Body<'_, R> {
        self.tar.body()
    }

    /// Copies the current entry's data not read yet, and its padding, to
    /// the output as they are.
    pub(crate) fn pass_body(&mut self) -> Result<(), Fault> {
        let out = &mut self.out;
        self.tar
            .copy_body(&mut |b| out.write_all(b).map_err(Fault::Write))
    }

    /// Reads the current entry's data not read yet, and its padding,
    /// without writing them.
    pub(crate) fn skip_body(&mut self) -> Result<(), Fault> {
        self.tar.skip_body()
    }
}

/// With the archive `tar` read to its end ([`Reader::next`] gave `None`),
/// writes what follows its last member to each of `outs`: the extension
/// entries that came before no member, then what follows. An archive of
/// a whole number of GNU tar records that ends in zeros ends so again in
/// each output (two zero blocks, then zeros to the end of a record, as
/// far as that output has written); any other end is written as it is.
pub(crate) fn end<R: Read, W: Write>(
    tar: &mut Reader<R>,
    outs: &mut [&mut Counted<W>],
) -> Result<(), Fault> {
    let Some(end) = tar.take_end() else {
        return Ok(());
    };
    put_all(outs, &end.extensions)?;
    if !end.zero_block {
        return Ok(());
    }
    let mut zeros = BLOCK as u64;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = tar.read_some(&mut buf)?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|&b| b != 0) {
            // Not zeros: everything after the members, as it is.
            for out in outs.iter_mut() {
                put_zeros(out, zeros + i as u64)?;
            }
            put_all(outs, &buf[i..n])?;
            loop {
                let n = tar.read_some(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                put_all(outs, &buf[..n])?;
            }
        }
        zeros += n as u64;
    }
    let whole = tar.read().is_multiple_of(RECORD) && zeros >= 2 * BLOCK as u64;
    for out in outs.iter_mut() {
        let mut z = zeros;
        if whole {
            let at = out.written + 2 * BLOCK as u64;
            z = 2 * BLOCK as u64 + (at.next_multiple_of(RECORD) - at);
        }
        put_zeros(out, z)?;
    }
    Ok(())
}

/// Writes the header of `h` to `out`: its extension entries, its block
/// (with its size set to `size`, and its checksum to match, where one is
/// given) and its sparse map, nothing else changed.
pub(crate) fn put_header(out: &mut dyn Write, h: &Header, size: Option<u64>) -> Result<(), Fault> {
    let mut block = h.block;
    if let Some(size) = size {
        set_size(&mut block, size);
        set_checksum(&mut block);
    }
    out.write_all(&h.extensions).map_err(Fault::Write)?;
    out.write_all(&block).map_err(Fault::Write)?;
    for ext in &h.sparse_map {
        out.write_all(ext).map_err(Fault::Write)?;
    }
    Ok(())
}

/// Pads the `size` bytes of data just written to `out` to whole blocks.
pub(crate) fn put_pad(out: &mut dyn Write, size: u64) -> Result<(), Fault> {
    let fill = padded(size).unwrap_or(size) - size;
    out.write_all(&[0u8; BLOCK][..usize::try_from(fill).unwrap_or(0)])
        .map_err(Fault::Write)
}

/// Writes `bytes` to each of `outs`.
fn put_all<W: Write>(outs: &mut [&mut Counted<W>], bytes: &[u8]) -> Result<(), Fault> {
    for out in outs.iter_mut() {
        out.write_all(bytes).map_err(Fault::Write)?;
    }
    Ok(())
}

/// Writes `n` zero bytes to `out`.
fn put_zeros<W: Write>(out: &mut Counted<W>, mut n: u64) -> Result<(), Fault> {
    let zeros = [0u8; 8192];
    while n > 0 {
        let k = usize::try_from(n).unwrap_or(zeros.len()).min(zeros.len());
        out.write_all(&zeros[..k]).map_err(Fault::Write)?;
        n -= k as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
