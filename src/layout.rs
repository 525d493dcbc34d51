//! Output described as pieces, so image bytes are never gathered in memory.
//!
//! Writers in this crate build the small parts of a file themselves (headers,
//! tables, padding) and refer to large payloads by index; the caller then
//! writes the pieces in order, copying each payload straight from its source
//! (for files, with `copy_file_range`). [`Layout::write_to`] does the same for
//! payloads already in memory.

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
        self.size += len;
        self.pieces.push(p);
    }

    /// Writes the layout to `out`, taking image `i` from `images[i]`.
    pub fn write_to<W: Write>(&self, out: &mut W, images: &[&[u8]]) -> io::Result<()> {
        for p in &self.pieces {
            match p {
                Piece::Bytes(b) => out.write_all(b)?,
                Piece::Zeros(n) => write_zeros(out, *n)?,
                Piece::Image(i) => out.write_all(images[*i])?,
            }
        }
        Ok(())
    }
}

/// Writes `n` zero bytes.
pub fn write_zeros<W: Write>(out: &mut W, mut n: u64) -> io::Result<()> {
    const Z: [u8; 4096] = [0; 4096];
    while n > 0 {
        let k = usize_from(n.min(Z.len() as u64));
        out.write_all(&Z[..k])?;
        n -= k as u64;
    }
    Ok(())
}
