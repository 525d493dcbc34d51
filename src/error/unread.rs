//! Why an image's bytes, or an input, could not be read ([`Unread`]):
//! the words a report shows, carried from the scan (and the listing of
//! an image's kernels, and the inputs of a command) to the output as
//! they are. Here, in `error`, because `kernel_listing` (below `scan`)
//! carries it in its listings; `scan` re-exports it.

use std::fmt;

/// Why an image's bytes, its kernels, or an input could not be read:
/// compressed data that does not decompress, a scan stopped at a limit,
/// an image whose symbols are damaged, a file that cannot be opened. Its
/// `Display` is the message reports show.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unread(String);

impl Unread {
    /// Why, in the words a report shows (for an input a caller could not
    /// open: `cannot open: No such file or directory`).
    pub fn new(why: impl Into<String>) -> Unread {
        Unread(why.into())
    }

    /// The message, as [`Display`](fmt::Display) writes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unread {}

/// An image whose contents fail to read for the library's reasons (its
/// compressed data is damaged, its symbols cannot be read): the error's
/// message.
impl From<super::Error> for Unread {
    fn from(e: super::Error) -> Unread {
        Unread(e.to_string())
    }
}
