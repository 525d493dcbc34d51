//! Why an RPM could not be rewritten: the package's part ([`Error`]), or
//! the caller's ([`Failed`]).

use std::fmt;
use std::io;

/// Why a rewrite stopped, for the package's part.
#[derive(Debug)]
pub(crate) enum Error {
    /// The package is damaged: what, in words.
    Damaged(String),
    /// The package is sound, but not rewritten: why.
    Refused(String),
    /// The new payload could not be written.
    Write(io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Damaged(why) | Error::Refused(why) => f.write_str(why),
            Error::Write(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// Why a [`rewrite`](super::rewrite::rewrite) stopped: the package, or the
/// caller.
pub(crate) type Failed<E> = crate::package::Failed<Error, E>;
