//! Why a conda package could not be read or written.

use std::fmt;
use std::io;

use crate::package::tar::Fault;
use crate::package::zipfile;

/// Why a conda package could not be read or written.
#[derive(Debug)]
pub(crate) enum Error {
    /// The package is damaged, or its records lie: what, in words
    /// (`member 'pkg-….tar.zst': …`, `info/paths.json: …`).
    Damaged(String),
    /// The package would change where it cannot (no `info/paths.json`
    /// to keep true): why, in words.
    Refused(String),
    /// The file `path` of the payload would change where it cannot (its
    /// prefix placeholder would move): why, in words.
    Member {
        /// The file's path in the payload.
        path: String,
        /// Why.
        why: String,
    },
    /// The archive `place` names (`member '…'`, `its tar archive`)
    /// inflates to more than the `limit` bytes left of the decompression
    /// budget.
    Budget {
        /// Where, in words.
        place: String,
        /// The bytes that were left.
        limit: u64,
    },
    /// The `.conda`'s zip could not be read or written.
    Zip(zipfile::Error),
    /// An output (or the scratch file it is spooled to) could not be
    /// written.
    Write(io::Error),
    /// A scratch file could not be made or finished.
    Scratch(io::Error),
}

impl Error {
    /// The error for `fault`, met where `place` says.
    pub(crate) fn fault(place: &str, fault: Fault) -> Error {
        match fault {
            Fault::Write(e) => Error::Write(e),
            Fault::Read(e) => Error::Damaged(format!("{place}: cannot be read: {e}")),
            Fault::Damaged(why) => Error::Damaged(format!("{place}: {why}")),
            Fault::Budget(limit) => Error::Budget {
                place: place.to_string(),
                limit,
            },
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Damaged(why) | Error::Refused(why) => f.write_str(why),
            Error::Member { path, why } => write!(f, "'{path}': {why}"),
            Error::Budget { place, limit } => write!(
                f,
                "{place} inflates to more than the {limit} bytes left of the decompression budget"
            ),
            Error::Zip(e) => e.fmt(f),
            Error::Write(e) | Error::Scratch(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}
