//! Output described as pieces, so image bytes are never gathered in memory.
//!
//! Writers in this crate build the small parts of a file themselves (headers,
//! tables, padding) and refer to large payloads by index; the caller then
//! writes the pieces in order, copying each payload straight from its source
//! (for files, with `copy_file_range`). [`Layout::write_to`] does the same for
//! payloads already in memory.
//!
//! A [`Written`] is a layout whose payloads are byte ranges ([`Span`]s) of
//! the caller's inputs or of buffers built with it: an edited object, a
//! pruned file.

use std::io::{self, Write};

use crate::num::usize_from;

/// One piece of an output file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes built by the writer.
    Bytes(Vec<u8>),
    /// This many zero bytes.
    Zeros(u64),
    /// The bytes of the caller's payload (image, member) with this index.
    Image(usize),
}

/// What to write, in order.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The pieces.
    pub pieces: Vec<Piece>,
    /// Total size in bytes.
    pub size: u64,
}

impl Layout {
    /// The indices of the payloads the layout refers to, in order (what
    /// tests check: payloads are referred to, never copied in).
    #[cfg(test)]
    pub(crate) fn image_indices(&self) -> Vec<usize> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Image(i) => Some(*i),
                _ => None,
            })
            .collect()
    }

    /// Appends a piece of `len` bytes (empty byte and zero pieces are dropped).
    pub fn push(&mut self, p: Piece, len: u64) {
        if len == 0 && !matches!(p, Piece::Image(_)) {
            return;
        }
        // Saturating: a layout of more than 2^64 bytes cannot be written
        // anyway, and the writer says so at its size check.
        self.size = self.size.saturating_add(len);
        self.pieces.push(p);
    }

    /// How many payload references the layout holds.
    pub fn image_count(&self) -> usize {
        self.pieces
            .iter()
            .filter(|p| matches!(p, Piece::Image(_)))
            .count()
    }

    /// This layout with payload `i` replaced by the pieces of `parts[i]`
    /// (its size is assumed to be `parts[i].size`): a file that embeds
    /// other files which are themselves layouts, written in one pass. The
    /// parts' own payloads are numbered on: those of `parts[0]` first,
    /// then those of `parts[1]`, and so on. `None` if a payload has no
    /// part.
    pub fn splice(&self, parts: &[Layout]) -> Option<Layout> {
        let mut first = Vec::with_capacity(parts.len());
        let mut n = 0;
        for part in parts {
            first.push(n);
            n += part.image_count();
        }
        let mut out = Layout {
            pieces: Vec::with_capacity(self.pieces.len() + 3 * parts.len()),
            size: self.size,
        };
        for piece in &self.pieces {
            let Piece::Image(i) = piece else {
                out.pieces.push(piece.clone());
                continue;
            };
            let part = parts.get(*i)?;
            out.pieces.extend(part.pieces.iter().map(|p| match p {
                Piece::Image(j) => Piece::Image(first[*i] + j),
                other => other.clone(),
            }));
        }
        Some(out)
    }

    /// Writes the layout to `out`, taking image `i` from `images[i]`.
    pub fn write_to<W: Write>(&self, out: &mut W, images: &[&[u8]]) -> io::Result<()> {
        self.write_each(out, |out, i| out.write_all(images[i]))
    }

    /// Writes the layout to `out`: built bytes and zeros as they are, and
    /// image `i` by `image(out, i)` (which may copy it file to file).
    pub(crate) fn write_each<W: Write + ?Sized>(
        &self,
        out: &mut W,
        image: impl FnMut(&mut W, usize) -> io::Result<()>,
    ) -> io::Result<()> {
        self.write_pieces(out, write_zeros, image)
    }

    /// The one loop every writer of a layout goes through: built bytes
    /// written to `out`, each run of `n` zeros given to `zeros(out, n)`
    /// ([`write_zeros`] writes them; a writer by position leaves a hole),
    /// and image `i` to `image(out, i)`.
    pub(crate) fn write_pieces<W: Write + ?Sized>(
        &self,
        out: &mut W,
        mut zeros: impl FnMut(&mut W, u64) -> io::Result<()>,
        mut image: impl FnMut(&mut W, usize) -> io::Result<()>,
    ) -> io::Result<()> {
        for p in &self.pieces {
            match p {
                Piece::Bytes(b) => out.write_all(b)?,
                Piece::Zeros(n) => zeros(out, *n)?,
                Piece::Image(i) => image(out, *i)?,
            }
        }
        Ok(())
    }
}

/// A [`Layout`] being built: its pieces so far, plus built bytes not yet
/// pushed (small writes gather there, and become one piece when an image
/// or a long run of zeros comes).
#[derive(Debug, Default)]
pub(crate) struct Builder {
    /// The pieces pushed so far.
    pub(crate) layout: Layout,
    /// Bytes written after them.
    pub(crate) pending: Vec<u8>,
}

impl Builder {
    /// The offset the next byte lands at.
    pub(crate) fn at(&self) -> u64 {
        self.layout.size + crate::num::len64(&self.pending)
    }

    /// Appends bytes.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.pending.extend_from_slice(b);
    }

    /// Pushes the pending bytes as one piece.
    pub(crate) fn flush(&mut self) {
        let b = std::mem::take(&mut self.pending);
        let len = crate::num::len64(&b);
        self.layout.push(Piece::Bytes(b), len);
    }

    /// Zeros up to `offset` (never backwards): a few bytes inline, long
    /// runs as a zero piece.
    pub(crate) fn pad_to(&mut self, offset: u64) {
        let n = offset.saturating_sub(self.at());
        if n >= 4096 {
            self.flush();
            self.layout.push(Piece::Zeros(n), n);
        } else {
            let n = usize::try_from(n).unwrap_or(0);
            self.pending.resize(self.pending.len() + n, 0);
        }
    }

    /// Appends payload `i`, `len` bytes long.
    pub(crate) fn image(&mut self, i: usize, len: u64) {
        self.flush();
        self.layout.push(Piece::Image(i), len);
    }

    /// The layout, pending bytes included.
    pub(crate) fn finish(mut self) -> Layout {
        self.flush();
        self.layout
    }
}

/// A byte range of one of a [`Written`]'s sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Which source: the caller's inputs first, in the order the maker of
    /// the [`Written`] documents, then the buffers it built
    /// ([`Written::built`]).
    pub source: usize,
    /// Offset in that source.
    pub offset: usize,
    /// Length.
    pub len: usize,
}

/// A file to write: its layout, where `Piece::Image(k)` stands for the
/// bytes of `spans[k]`, each a range of one of the caller's inputs or of a
/// buffer built in memory with it. Given `n` inputs, source `j < n` is
/// input `j` and source `n + i` is `built[i]`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Written {
    /// The pieces, in order.
    pub layout: Layout,
    /// The ranges the layout's image pieces stand for.
    pub spans: Vec<Span>,
    /// Buffers built in memory (a recompressed container): the sources
    /// numbered after the caller's inputs.
    pub built: Vec<Vec<u8>>,
}

impl Written {
    /// The input as it is (`len` bytes of source 0).
    pub fn unchanged(len: u64) -> Written {
        let mut out = Written::default();
        out.span(0, 0, len);
        out
    }

    /// Appends `len` bytes of source `source` from `offset` (nothing for
    /// none).
    pub(crate) fn span(&mut self, source: usize, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.layout.push(Piece::Image(self.spans.len()), len);
        self.spans.push(Span {
            source,
            offset: usize_from(offset),
            len: usize_from(len),
        });
    }

    /// Appends a piece that is not an image.
    pub(crate) fn piece(&mut self, p: Piece) {
        let len = match &p {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Zeros(n) => *n,
            Piece::Image(_) => return,
        };
        self.layout.push(p, len);
    }

    /// Appends `other`, made with one input: the range of this one's
    /// source 0 from `base` (an archive member's bytes); its built buffers
    /// become this one's, numbered after them.
    pub(crate) fn append_at(&mut self, base: u64, other: Written) {
        let shift = self.built.len();
        for p in other.layout.pieces {
            match p {
                Piece::Image(k) => {
                    let s = other.spans[k];
                    // Past 2^64, a span past any input, which writing
                    // refuses.
                    let (source, offset) = match s.source {
                        0 => (0, base.saturating_add(s.offset as u64)),
                        j => (j + shift, s.offset as u64),
                    };
                    self.span(source, offset, s.len as u64);
                }
                p => self.piece(p),
            }
        }
        self.built.extend(other.built);
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.layout.size
    }

    /// The bytes image piece `k` stands for, taken from `inputs` (the
    /// caller's, in the order the maker documents) or a built buffer.
    pub fn image<'a>(&'a self, k: usize, inputs: &[&'a [u8]]) -> Option<&'a [u8]> {
        let s = self.spans.get(k)?;
        let src: &[u8] = match s.source.checked_sub(inputs.len()) {
            None => inputs.get(s.source).copied()?,
            Some(i) => self.built.get(i)?,
        };
        src.get(s.offset..s.offset.checked_add(s.len)?)
    }

    /// Writes the file to `out`, `inputs` being the caller's inputs.
    pub fn write_to<W: Write + ?Sized>(&self, out: &mut W, inputs: &[&[u8]]) -> io::Result<()> {
        self.write_with(out, inputs, |out, bytes| out.write_all(bytes))
    }

    /// Writes the file to `out` as [`Written::write_to`] does, the bytes
    /// of each span given to `copy` (which may, say, give back the pages
    /// it read).
    pub(crate) fn write_with<W: Write + ?Sized>(
        &self,
        out: &mut W,
        inputs: &[&[u8]],
        mut copy: impl FnMut(&mut W, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.layout.write_each(out, |out, k| {
            copy(out, self.image(k, inputs).ok_or_else(outside)?)
        })
    }

    /// The file's bytes.
    pub fn to_vec(&self, inputs: &[&[u8]]) -> crate::error::Result<Vec<u8>> {
        let mut v = Vec::with_capacity(usize::try_from(self.size()).unwrap_or(0));
        self.write_to(&mut v, inputs)?;
        Ok(v)
    }
}

/// The error for a span that lies outside its source.
fn outside() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a piece lies outside its input",
    )
}

/// Writes `n` zero bytes.
pub fn write_zeros<W: Write + ?Sized>(out: &mut W, mut n: u64) -> io::Result<()> {
    const Z: [u8; 4096] = [0; 4096];
    while n > 0 {
        let k = usize_from(n.min(Z.len() as u64));
        out.write_all(&Z[..k])?;
        n -= k as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(l: &Layout, images: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        l.write_to(&mut out, images).unwrap();
        out
    }

    #[test]
    fn splice_numbers_the_parts_payloads_on() {
        let mut outer = Layout::default();
        outer.push(Piece::Bytes(b"<".to_vec()), 1);
        outer.push(Piece::Image(1), 4);
        outer.push(Piece::Zeros(2), 2);
        outer.push(Piece::Image(0), 3);
        let mut a = Layout::default();
        a.push(Piece::Bytes(b"a".to_vec()), 1);
        a.push(Piece::Image(0), 2);
        let mut b = Layout::default();
        b.push(Piece::Image(0), 1);
        b.push(Piece::Bytes(b"b".to_vec()), 1);
        b.push(Piece::Image(1), 2);
        let spliced = outer.splice(&[a, b]).unwrap();
        assert_eq!(spliced.image_count(), 3);
        // a's payload is 0; b's are 1 and 2.
        let got = written(&spliced, &[b"AA", b"B", b"CC"]);
        assert_eq!(got, b"<BbCC\0\0aAA".to_vec());
        assert_eq!(spliced.size, got.len() as u64);
    }

    #[test]
    fn splice_without_a_part_is_none() {
        let mut outer = Layout::default();
        outer.push(Piece::Image(2), 1);
        assert!(outer.splice(&[Layout::default()]).is_none());
    }
}
