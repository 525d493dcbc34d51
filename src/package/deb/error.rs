//! Why a `.deb` could not be read or written.

use std::fmt;
use std::io;

use crate::package::tar::Fault;

/// The most bytes of a control list (`md5sums`, `conffiles`, `control`)
/// read into memory; a larger one is refused, never taken as empty.
pub(crate) const LIST_MAX: u64 = 64 << 20;

/// Why a `.deb` could not be read or written.
#[derive(Debug)]
pub(crate) enum Error {
    /// The package or one of its members is damaged: what, in words
    /// (`member 'x': …`).
    Damaged(String),
    /// The package holds what the rewrite does not write (a data archive
    /// compressed with a method not known): why, in words.
    Refused(String),
    /// A member could not be read (`doing`: "cannot be read").
    Member {
        /// The member's name (or a file's path in the data archive).
        member: String,
        /// What failed.
        doing: &'static str,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A member inflates to more than the `limit` bytes left of the
    /// decompression budget.
    Budget {
        /// The member's name.
        member: String,
        /// The bytes that were left.
        limit: u64,
    },
    /// The output could not be written.
    Write(io::Error),
    /// A scratch file (the data archive compressed again) could not be
    /// made or finished.
    Scratch(io::Error),
}

impl Error {
    /// The error for `fault`, met in the member `member` of the package.
    pub(crate) fn fault(member: &str, fault: Fault) -> Error {
        match fault {
            Fault::Read(e) => Error::Member {
                member: member.to_string(),
                doing: "cannot be read",
                source: e.into(),
            },
            Fault::Write(e) => Error::Write(e),
            Fault::Damaged(why) => Error::Damaged(format!("member '{member}': {why}")),
            Fault::Budget(limit) => Error::Budget {
                member: member.to_string(),
                limit,
            },
        }
    }

    /// The list `which` of the member `member`, of `size` bytes, is more
    /// than [`LIST_MAX`].
    pub(crate) fn too_large(member: &str, which: &str, size: u64) -> Error {
        Error::Damaged(format!(
            "member '{member}': its {which} holds {size} bytes, more than the {LIST_MAX} read"
        ))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Damaged(why) | Error::Refused(why) => f.write_str(why),
            Error::Member { member, doing, .. } => write!(f, "member '{member}' {doing}"),
            Error::Budget { member, limit } => write!(
                f,
                "member '{member}' inflates to more than the {limit} bytes left of the \
                 decompression budget"
            ),
            Error::Write(e) | Error::Scratch(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Member { source, .. } => Some(source.as_ref()),
            Error::Damaged(_) | Error::Refused(_) | Error::Budget { .. } => None,
            Error::Write(_) | Error::Scratch(_) => None,
        }
    }
}
