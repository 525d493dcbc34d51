//! What the command line reads and writes: the library's [`crate::files`]
//! (mapped inputs, atomic outputs, file-to-file copies) under the names the
//! commands use, the text of names and errors (`text.rs`), and standard
//! output for reports, buffered (`report.rs`).

use anyhow::{Context, Result};

mod report;
mod text;

pub use crate::files::{
    Input, Output, SPOOL_IN_MEMORY, Sink, clean_up_on_signals, copy_file_range_all, copy_in_pieces,
    write_bytes, write_layout, write_pieces,
};
pub use report::Report;
pub use text::{error_text, print_line, printable, safe_component, strerror};

pub use crate::container::ar::thin_member_path;

/// Opens an input, with the file name in the error.
pub fn open_input(name: &str) -> Result<Input> {
    Input::open(name).with_context(|| format!("'{name}': cannot open"))
}
