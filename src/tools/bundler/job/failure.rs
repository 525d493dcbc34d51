//! What a bundler job says on the way ([`Note`]s) and how it fails
//! ([`Failure`], with LLVM's lines), and the inputs opened with LLVM's
//! message on failure.

use std::io;

use crate::bundle::ccob;
use crate::bundle::id::BundleId;
use crate::bundle::select;
use crate::files::Input;
use crate::tools::bundler::compressed;

/// What a job says on the way, in order: LLVM prints it on stderr as it
/// comes, before any failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A warning: `<argv0>: warning: <text>`.
    Warning(String),
    /// Text printed as it is, each line ending in `\n` (reports, command
    /// lines, the environment's warnings).
    Text(String),
}

/// Why a job failed.
#[derive(Debug)]
pub enum Failure {
    /// LLVM 22's line for the case (or ours where LLVM has none), and what
    /// we know more.
    Said {
        /// The line, printed after `<argv0>: error: `.
        llvm: String,
        /// Our detail, if any.
        note: Option<String>,
    },
    /// A file could not be opened, read or written: LLVM's
    /// `'<path>': <the C library's text for error>`.
    File {
        /// The file, as named on the command line.
        path: String,
        /// What went wrong.
        error: io::Error,
    },
}

impl Failure {
    /// A failure LLVM reports with this text, with nothing to add.
    pub fn new(llvm: impl Into<String>) -> Failure {
        Failure::Said {
            llvm: llvm.into(),
            note: None,
        }
    }

    /// A failure LLVM reports with this text, followed by our detail.
    pub fn with_note(llvm: impl Into<String>, note: impl Into<String>) -> Failure {
        Failure::Said {
            llvm: llvm.into(),
            note: Some(note.into()),
        }
    }

    /// A failure on the file `path`.
    pub fn file(path: impl Into<String>, error: io::Error) -> Failure {
        Failure::File {
            path: path.into(),
            error,
        }
    }
}

impl From<compressed::Failure> for Failure {
    /// LLVM's line for a compressor that refused or failed (ours where it
    /// has none), or the file that could not be written.
    fn from(f: compressed::Failure) -> Failure {
        match f {
            compressed::Failure::Ccob(e) => {
                Failure::new(ccob::llvm_message(&e).unwrap_or_else(|| e.to_string()))
            }
            compressed::Failure::File(path, error) => Failure::File { path, error },
        }
    }
}

/// Where a job's [`Note`]s go.
pub type Say<'a> = dyn FnMut(Note) + 'a;

/// LLVM's line for a CCOB that fails to decompress, then ours where it says
/// more; for faults LLVM does not detect (it goes on with garbage), ours
/// alone, naming the file.
pub(super) fn decompress_fail(name: &str, e: &crate::Error) -> Failure {
    let own = ccob::fault(e).map(ToString::to_string);
    match ccob::llvm_message(e) {
        Some(llvm) if own.as_ref() == Some(&llvm) => Failure::with_note(
            format!("Failed to decompress input: {llvm}"),
            format!("'{name}'"),
        ),
        Some(llvm) => Failure::with_note(
            format!("Failed to decompress input: {llvm}"),
            format!("'{name}': {e}"),
        ),
        None => Failure::new(format!("'{name}': Failed to decompress input: {e}")),
    }
}

/// LLVM's error for the requested targets `missing` (indices into
/// `requests`) that the bundle does not hold.
pub(super) fn missing_bundles(requests: &[BundleId], missing: &[usize]) -> Failure {
    let ids = missing.iter().map(|&i| requests[i].normalized()).collect();
    Failure::new(format!(
        "Can't find bundles for {}",
        select::missing_list(ids)
    ))
}

/// Opens an input, with LLVM's message (`'<file>': <strerror>`) on failure.
pub(super) fn open(name: &str) -> Result<Input, Failure> {
    Input::open(name).map_err(|e| Failure::file(name, e))
}
