//! One input to scan: a path, and why it cannot be read when that is
//! known before it is opened.

use std::path::PathBuf;

use crate::files::Input;
use crate::scan::Unread;

/// One input: a path (`-`: standard input), and why it cannot be read
/// when that is known before it is opened (it does not exist, a directory
/// cannot be listed).
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// The path as given or found.
    pub(crate) path: PathBuf,
    /// Why it cannot be read.
    pub(crate) error: Option<Unread>,
    /// Whether it was found walking a directory (not named).
    pub(crate) in_dir: bool,
    /// Whether it is an OCI image layout (a directory), read as the
    /// images it holds.
    pub(crate) layout: bool,
}

impl Source {
    pub(crate) fn new(path: PathBuf) -> Source {
        Source {
            path,
            error: None,
            in_dir: false,
            layout: false,
        }
    }

    pub(super) fn found(path: PathBuf) -> Source {
        Source {
            in_dir: true,
            ..Source::new(path)
        }
    }

    /// The path as shown in reports.
    pub(crate) fn name(&self) -> String {
        crate::files::shown(&self.path).into_owned()
    }

    /// Opens the input, or says why it cannot be read.
    pub(crate) fn open(&self) -> Result<Input, Unread> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        Input::open(&self.path).map_err(|e| cannot_open(&e))
    }
}

/// Why a file could not be opened: `cannot open: ` and the C library's
/// words for `e`.
pub(super) fn cannot_open(e: &std::io::Error) -> Unread {
    Unread::new(format!("cannot open: {}", crate::files::strerror(e)))
}
