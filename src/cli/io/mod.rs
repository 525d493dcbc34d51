//! What the command line reads and writes: the library's [`crate::files`]
//! (mapped inputs, atomic outputs, file-to-file copies) under the names the
//! commands use, the text of names and errors (`text.rs`), and standard
//! output for reports, buffered (`report.rs`).

use std::io;

use anyhow::{Context, Result};

mod report;
mod text;

pub use crate::files::{
    Input, Noting, Output, clean_up_on_signals, copy_file_range_all, write_bytes, write_layout,
};
pub(crate) use crate::files::{safe_component, strerror};
pub use report::Report;
pub use text::{error_text, print_line, printable};

pub use crate::container::ar::thin_member_path;

/// Opens an input, with the file name in the error.
pub fn open_input(name: &str) -> Result<Input> {
    Input::open(name).with_context(|| format!("'{name}': cannot open"))
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
