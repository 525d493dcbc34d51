//! Why a zip archive could not be read or written.

use std::fmt;
use std::io;

/// Why a zip archive could not be read or written.
#[derive(Debug)]
pub(crate) enum Error {
    /// The zip crate refused the archive.
    Zip(::zip::result::ZipError),
    /// The archive or one of its members is damaged, or more than the
    /// budget allows: what, in words (`member 'x': …`).
    Damaged(String),
    /// A member could not be read (`doing`: "cannot be inflated").
    Member {
        /// The member's name.
        member: String,
        /// What failed.
        doing: &'static str,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The output could not be written.
    Write(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Zip(e) => e.fmt(f),
            Error::Damaged(why) => f.write_str(why),
            Error::Member { member, doing, .. } => write!(f, "member '{member}' {doing}"),
            Error::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Zip(e) => Some(e),
            Error::Member { source, .. } => Some(source.as_ref()),
            Error::Damaged(_) | Error::Write(_) => None,
        }
    }
}

impl From<::zip::result::ZipError> for Error {
    fn from(e: ::zip::result::ZipError) -> Error {
        Error::Zip(e)
    }
}
