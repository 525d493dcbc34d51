//! What the command line reads and writes: the library's [`crate::files`]
//! (mapped inputs, atomic outputs, file-to-file copies) under the names the
//! commands use, the text of names and errors (`text.rs`), and standard
//! output for reports, buffered (`report.rs`). What is written there (the
//! problems grouped, the `--json` documents with the bytes of names that
//! are not UTF-8) is `crate::report`'s.

use anyhow::{Context, Result};

mod report;
mod text;

pub(crate) use crate::files::strerror;
pub use crate::files::{Input, Output, clean_up_on_signals, write_layout};
pub(crate) use crate::report::problems;
pub(crate) use crate::report::{RawNames, print_line, write_json};
pub use report::Report;
pub use text::error_text;
pub(crate) use text::printable;

/// Opens an input, with the file name in the error.
pub fn open_input(name: &str) -> Result<Input> {
    Input::open(name).with_context(|| format!("'{name}': cannot open"))
}

/// Writes `doc` to `path` whole or not at all (to a temporary file renamed
/// over it, as every output is written), with the file name in the error:
/// the report files of `check --junit` and `size --html`.
pub fn write_whole(path: &std::path::Path, doc: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let name = crate::files::shown(path);
    let mut out = Output::create(path).with_context(|| format!("'{name}': cannot create"))?;
    out.write_all(doc)
        .and_then(|()| out.commit())
        .with_context(|| format!("'{name}': cannot write"))
}
