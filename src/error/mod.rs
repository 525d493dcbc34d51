//! The library's one error type.
//!
//! Every failure to read a file names what was wrong and, where it applies,
//! where (a byte offset from the start of the buffer being parsed). The CLI
//! adds the file name. [`Error::llvm_message`] gives the text LLVM 22 prints
//! for the same class of failure, for the drop-in front ends.

use std::fmt;
use std::io;

pub(crate) mod ccob;
pub(crate) mod spent;
pub(crate) mod target;
pub(crate) mod unread;

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, by class, for callers that branch on it:
///
/// - not this format: [`ErrorKind::BadMagic`];
/// - damaged data: [`ErrorKind::Truncated`], [`ErrorKind::OutOfBounds`],
///   [`ErrorKind::Misaligned`], [`ErrorKind::Overlap`],
///   [`ErrorKind::Invalid`], [`ErrorKind::Decompress`], [`ErrorKind::Ccob`];
/// - a format version this library does not read:
///   [`ErrorKind::UnsupportedVersion`];
/// - a limit reached: [`ErrorKind::LimitExceeded`],
///   [`ErrorKind::DepthExceeded`], [`ErrorKind::BudgetExceeded`],
///   [`ErrorKind::CountExceeded`];
/// - input this library does not handle, which LLVM's tools may:
///   [`ErrorKind::Unsupported`], [`ErrorKind::UnsupportedTriple`];
/// - a bad request: [`ErrorKind::Usage`], [`ErrorKind::Target`]; an output
///   too large to write: [`ErrorKind::TooLarge`], [`ErrorKind::Write`];
/// - [`ErrorKind::Io`].
///
/// The messages (`Display`) are the command line's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The data ends before a structure that must be there.
    #[error("truncated: {what} needs {need} bytes at offset {offset:#x}, but only {have} remain")]
    Truncated {
        /// The structure.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// How many bytes it needs.
        need: u64,
        /// How many bytes there are from `offset` to the end.
        have: u64,
    },
    /// The data does not start with the format's magic bytes.
    #[error("bad magic: {what} at offset {offset:#x} does not start with {expected}")]
    BadMagic {
        /// The structure.
        what: &'static str,
        /// Where it should start.
        offset: u64,
        /// The expected magic, for the message.
        expected: &'static str,
    },
    /// The format version is not one this library reads.
    #[error("unsupported {what} version {version} at offset {offset:#x}")]
    UnsupportedVersion {
        /// The format.
        what: &'static str,
        /// The version found.
        version: u64,
        /// Where the header starts.
        offset: u64,
    },
    /// A structure is not at the alignment the format requires.
    #[error("misaligned: {what} at offset {offset:#x} is not {align}-byte aligned")]
    Misaligned {
        /// The structure.
        what: &'static str,
        /// Its offset.
        offset: u64,
        /// The required alignment.
        align: u64,
    },
    /// A field points outside the data it must lie in.
    #[error(
        "{what} (offset {offset:#x}, size {size:#x}) lies outside the {within} (size {limit:#x})"
    )]
    OutOfBounds {
        /// The region described by the field.
        what: String,
        /// Its offset.
        offset: u64,
        /// Its size.
        size: u64,
        /// What it should lie within.
        within: &'static str,
        /// The size of that.
        limit: u64,
    },
    /// A field holds a value that cannot be right.
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// The field or structure.
        what: String,
        /// Why it is wrong.
        detail: String,
    },
    /// Two regions that must be disjoint overlap.
    #[error("{first} overlaps {second}")]
    Overlap {
        /// One region, with its offsets.
        first: String,
        /// The other.
        second: String,
    },
    /// A nesting limit (containers in containers) was exceeded.
    #[error("{what} exceeds the limit of {limit} levels")]
    DepthExceeded {
        /// What nests too deeply.
        what: String,
        /// The limit, in levels.
        limit: u64,
    },
    /// A size limit (decompression bound, count) was exceeded.
    #[error("{what} exceeds the limit of {limit} bytes")]
    LimitExceeded {
        /// What grew too large.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// A count limit was passed: kernels and symbols listed
    /// ([`crate::kernels::Allowance`]).
    #[error("more than {limit} {what}")]
    CountExceeded {
        /// What is counted, with the option that raises the limit.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// One of a command's budgets ([`crate::offload_binary::Budget`]:
    /// bytes decompressed, images read, files written, levels of nesting),
    /// shared by every read the command makes, is spent.
    #[error("{detail}: over this command's limit of {limit} {what}")]
    BudgetExceeded {
        /// What is counted ([`crate::offload_binary::Spent::unit`]).
        what: spent::Spent,
        /// The limit.
        limit: u64,
        /// What would have gone past it.
        detail: String,
    },
    /// Decompression failed.
    #[error("cannot decompress {what}: {detail}")]
    Decompress {
        /// What was being decompressed.
        what: &'static str,
        /// The decompressor's message.
        detail: String,
    },
    /// A compressed offload bundle (CCOB) is malformed or fails a check, or
    /// cannot be written. [`crate::bundle::ccob::Fault::llvm_message`]
    /// gives LLVM 22's text for it.
    #[error("compressed bundle at offset {offset:#x}: {fault}")]
    Ccob {
        /// Where the CCOB starts in the buffer being read (0 when writing).
        offset: u64,
        /// What is wrong.
        fault: ccob::Fault,
    },
    /// A bundle-entry ID or a list of targets fails LLVM's checks (its
    /// message).
    #[error(transparent)]
    Target(#[from] target::TargetError),
    /// Input that its format allows but this library does not handle: an
    /// object file other than ELF to edit, a compressed OffloadBinary to
    /// wrap. LLVM's tools may take it.
    #[error("{0}")]
    Unsupported(String),
    /// A host triple the wrapper has no code for (not an ELF target, or a
    /// CPU it does not know).
    #[error("unsupported triple '{triple}': {detail}")]
    UnsupportedTriple {
        /// The triple as given.
        triple: String,
        /// Why it is not supported.
        detail: String,
    },
    /// An output would be larger than its format's fields (or the address
    /// space) can hold.
    #[error("{what} would be larger than {limit}")]
    TooLarge {
        /// The output.
        what: &'static str,
        /// The most it can be (`2^64 bytes`).
        limit: &'static str,
    },
    /// A request that cannot be carried out (bad arguments).
    #[error("{0}")]
    Usage(String),
    /// An output structure could not be encoded (an object file section,
    /// unwind tables).
    #[error("cannot write {what}: {detail}")]
    Write {
        /// What was being written.
        what: &'static str,
        /// The encoder's message.
        detail: String,
    },
    /// An I/O error.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The library's error: boxed, so a `Result` stays small.
pub struct Error(Box<ErrorKind>);

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// The message LLVM 22 prints for this class of failure when it reads an
    /// OffloadBinary: truncation and out-of-range offsets are "unexpected end
    /// of file"; everything else is "invalid data".
    pub fn llvm_message(&self) -> &'static str {
        match *self.0 {
            // LLVM checks that a buffer can hold a header and an entry before
            // anything else, and calls a short one invalid.
            ErrorKind::Truncated {
                what: "OffloadBinary header",
                ..
            } => "Invalid data was encountered while parsing the file",
            ErrorKind::Truncated { .. } | ErrorKind::OutOfBounds { .. } => {
                "The end of the file was unexpectedly encountered"
            }
            _ => "Invalid data was encountered while parsing the file",
        }
    }

    /// The same error with its "at offset" moved on by `base`: for an
    /// error found in a buffer that starts at `base` of a larger one (a
    /// raw-scan candidate in its file), so that the offset is the larger
    /// buffer's. Offsets that are relative to a container by definition
    /// ([`ErrorKind::OutOfBounds`]) stay.
    pub fn rebased(mut self, base: u64) -> Error {
        match &mut *self.0 {
            ErrorKind::Truncated { offset, .. }
            | ErrorKind::BadMagic { offset, .. }
            | ErrorKind::UnsupportedVersion { offset, .. }
            | ErrorKind::Misaligned { offset, .. }
            | ErrorKind::Ccob { offset, .. } => *offset = offset.saturating_add(base),
            _ => {}
        }
        self
    }

    pub(crate) fn invalid(what: impl Into<String>, detail: impl Into<String>) -> Error {
        ErrorKind::Invalid {
            what: what.into(),
            detail: detail.into(),
        }
        .into()
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Error {
        ErrorKind::Usage(msg.into()).into()
    }

    /// [`ErrorKind::Unsupported`].
    pub(crate) fn unsupported(msg: impl Into<String>) -> Error {
        ErrorKind::Unsupported(msg.into()).into()
    }

    /// [`ErrorKind::TooLarge`]: `what` would be larger than 2^64 bytes.
    pub(crate) fn too_large(what: &'static str) -> Error {
        ErrorKind::TooLarge {
            what,
            limit: "2^64 bytes",
        }
        .into()
    }

    /// This error inside an `io::Error`, for a [`Read`](io::Read) of
    /// decompressed bytes whose failures are ours; [`Error::from_io`] takes
    /// it out again.
    pub(crate) fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }

    /// The error an `io::Error` carries: ours when [`Error::into_io`] put
    /// it there, else [`ErrorKind::Io`].
    pub(crate) fn from_io(e: io::Error) -> Error {
        if !e.get_ref().is_some_and(|r| r.is::<Error>()) {
            return e.into();
        }
        match e.into_inner().map(|b| b.downcast::<Error>()) {
            Some(Ok(ours)) => *ours,
            Some(Err(other)) => io::Error::new(io::ErrorKind::InvalidData, other).into(),
            None => io::Error::from(io::ErrorKind::InvalidData).into(),
        }
    }

    /// [`ErrorKind::Write`]: `what` could not be encoded, for `detail`.
    pub(crate) fn write(what: &'static str, detail: impl fmt::Display) -> Error {
        ErrorKind::Write {
            what,
            detail: detail.to_string(),
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    #[cold]
    fn from(k: ErrorKind) -> Error {
        Error(Box::new(k))
    }
}

impl From<io::Error> for Error {
    #[cold]
    fn from(e: io::Error) -> Error {
        Error(Box::new(ErrorKind::Io(e)))
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.0 {
            ErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// The C library's text for an I/O error (what LLVM prints), without Rust's
/// " (os error N)" suffix or any path a library added.
pub(crate) fn strerror(e: &io::Error) -> String {
    let s = match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code).to_string(),
        None => e.to_string(),
    };
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
