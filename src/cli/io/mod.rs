//! File input and output at the binary's edge: mapped inputs
//! (`input.rs`, the one `unsafe`: mapping files and giving back their
//! pages), atomic outputs
//! (`output.rs`) and their clean-up on signals (`cleanup.rs`), file-to-file
//! copies of image ranges, the text of names and errors (`text.rs`), and
//! standard output for reports, buffered (`report.rs`).

use std::io;
use std::path::Path;

use anyhow::{Context, Result};

mod cleanup;
mod input;
mod output;
mod report;
mod text;

pub use cleanup::clean_up_on_signals;
pub use input::{Input, SPOOL_IN_MEMORY, Sink, copy_file_range_all, copy_in_pieces};
pub use output::{Noting, Output};
pub use report::Report;
pub use text::{error_text, print_line, printable, safe_component, strerror};

pub use crate::container::ar::thin_member_path;

/// Opens an input, with the file name in the error.
pub fn open_input(name: &str) -> Result<Input> {
    Input::open(name).with_context(|| format!("'{name}': cannot open"))
}

/// Writes `layout` atomically to `path`, taking payload `i` from
/// `payload(i)`: the input it lies in and the bytes (copied file to file
/// when they are a slice of that input's mapping).
pub fn write_layout<'a>(
    path: &str,
    layout: &crate::layout::Layout,
    payload: impl Fn(usize) -> (&'a Input, &'a [u8]),
) -> io::Result<()> {
    let mut out = Output::create(Path::new(path))?;
    write_pieces(layout, |i| Some(payload(i)), &mut out)?;
    out.commit()
}

/// Writes `layout` to `out` at its position, taking payload `i` from
/// `payload(i)` as [`write_layout`] does (an error if it gives none).
pub fn write_pieces<'a, S: Sink>(
    layout: &crate::layout::Layout,
    payload: impl Fn(usize) -> Option<(&'a Input, &'a [u8])>,
    out: &mut S,
) -> io::Result<()> {
    use crate::layout::{Piece, write_zeros};
    for piece in &layout.pieces {
        match piece {
            Piece::Bytes(b) => out.write_all(b)?,
            Piece::Zeros(n) => write_zeros(out, *n)?,
            Piece::Image(i) => {
                let (input, bytes) = payload(*i)
                    .ok_or_else(|| io::Error::other("internal error: no such payload"))?;
                input.copy_to(bytes, out)?;
            }
        }
    }
    Ok(())
}

/// Writes an object made by `crate::bundle::object` to `path`:
/// `sources[k]` is span source `k` and the input its bytes lie in, so the
/// spans are copied file to file.
pub fn write_object(
    path: &str,
    w: &crate::bundle::object::Written,
    sources: &[(&Input, &[u8])],
) -> io::Result<()> {
    let views: Vec<&[u8]> = sources.iter().map(|s| s.1).collect();
    let images: Vec<(&Input, &[u8])> = w
        .spans
        .iter()
        .enumerate()
        .map(|(k, s)| Some((sources.get(s.source)?.0, w.image(k, &views)?)))
        .collect::<Option<_>>()
        .ok_or_else(|| io::Error::other("internal error: object layout out of range"))?;
    write_layout(path, &w.layout, |k| images[k])
}

/// Writes `bytes` (a slice of `input`, or any bytes) atomically to `path`.
pub fn write_bytes(path: &str, input: &Input, bytes: &[u8]) -> io::Result<()> {
    let mut out = Output::create(Path::new(path))?;
    input.copy_to(bytes, &mut out)?;
    out.commit()
}
