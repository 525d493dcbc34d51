//! What can be wrong with a CCOB ([`Fault`], carried by
//! [`crate::ErrorKind::Ccob`]), with the compression [`Method`] its faults
//! name, LLVM's default levels and its text for a hash. Here rather than in
//! `bundle::ccob` (which re-exports them) so that `error` imports nothing.

use std::fmt;

/// LLVM 22's zstd level (with long-distance matching on).
pub const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// LLVM's zlib level (`llvm::compression::zlib::DefaultCompression`).
pub const ZLIB_DEFAULT_LEVEL: i32 = 6;

/// The compression method field.
///
/// A newtype rather than an enum, so unknown values can be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Method(pub u16);

impl Method {
    /// zlib (`compress2` output: a zlib stream with its 2-byte header).
    pub const ZLIB: Method = Method(0);
    /// zstd (one plain frame).
    pub const ZSTD: Method = Method(1);

    /// `"zlib"` or `"zstd"`, as verbose mode prints them; `None` if unknown.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Method::ZLIB => Some("zlib"),
            Method::ZSTD => Some("zstd"),
            _ => None,
        }
    }

    /// The level LLVM uses for this method by default.
    pub fn default_level(self) -> i32 {
        if self == Method::ZLIB {
            ZLIB_DEFAULT_LEVEL
        } else {
            ZSTD_DEFAULT_LEVEL
        }
    }

    /// The largest factor by which this method can expand data (a bound
    /// used to reject impossible sizes before allocating).
    pub(crate) fn max_expansion(self) -> u64 {
        if self == Method::ZLIB {
            // Deflate: a 258-byte match costs at least 2 bits.
            1032
        } else {
            // zstd: a block makes at most 128 KiB and costs at least 4 bytes
            // (3-byte block header and one RLE byte).
            32768
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "method {}", self.0),
        }
    }
}

/// A hash as LLVM's `format_hex(h, 16)`: `0x` and at least 14 lowercase
/// digits.
pub fn hex_hash(h: u64) -> String {
    format!("{h:#016x}")
}

/// What is wrong with a CCOB (or with a request to write one).
///
/// Carried by [`ErrorKind::Ccob`](crate::ErrorKind::Ccob); `Display` is our message,
/// [`Fault::llvm_message`] LLVM 22's.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The data does not start with `"CCOB"`.
    NotCompressed,
    /// The data ends inside the header.
    TruncatedHeader {
        /// The version, if the data reaches that far.
        version: Option<u16>,
        /// Bytes the header needs.
        need: u64,
        /// Bytes there are.
        have: u64,
    },
    /// A version other than 1, 2 or 3.
    UnknownVersion(u16),
    /// A method other than 0 (zlib) or 1 (zstd).
    UnknownMethod(u16),
    /// The v2/v3 total size is smaller than the header.
    TotalSizeTooSmall {
        /// The total size field.
        total: u64,
        /// The header size.
        header: u64,
    },
    /// The v2/v3 total size goes past the end of the data.
    TotalSizePastEnd {
        /// The total size field.
        total: u64,
        /// Bytes there are from the start of the CCOB.
        available: u64,
    },
    /// The declared uncompressed size exceeds the caller's limit.
    TooLarge {
        /// The uncompressed size field (or, for [`decompress_all`](crate::bundle::ccob::decompress_all), the sum).
        declared: u64,
        /// The limit.
        limit: u64,
    },
    /// The compressed data is too small to produce the declared size.
    ImpossibleSize {
        /// The uncompressed size field.
        declared: u64,
        /// Size of the compressed data.
        compressed: u64,
        /// The method.
        method: Method,
    },
    /// The memory for the uncompressed data cannot be allocated.
    OutOfMemory {
        /// Bytes asked for.
        bytes: u64,
    },
    /// The decompressor failed.
    Decompress {
        /// The method.
        method: Method,
        /// What happened.
        detail: String,
        /// The decompressor's message as LLVM 22 prints it (a zstd error name,
        /// or `zlib error: Z_…`).
        llvm: String,
    },
    /// The data decompresses to fewer bytes than the header declares.
    SizeMismatch {
        /// The uncompressed size field.
        declared: u64,
        /// What the data decompressed to.
        actual: u64,
    },
    /// Bytes follow the compressed data where none may: after the total
    /// size of the one CCOB expected, or after the end of a zlib stream.
    TrailingBytes {
        /// The CCOB's method (LLVM hands the bytes to zstd, but zlib
        /// ignores them).
        method: Method,
        /// Offset of the first such byte, from the start of the CCOB.
        at: u64,
        /// How many.
        count: u64,
    },
    /// The stored hash is not the MD5 of the decompressed data.
    HashMismatch {
        /// The stored hash.
        stored: u64,
        /// The hash of the decompressed data.
        computed: u64,
    },
    /// The uncompressed size does not fit the version's field (v1/v2: 32 bits).
    UncompressedSizeLimit(u16),
    /// The total size does not fit the version's field (v2: 32 bits).
    TotalSizeLimit(u16),
    /// Writing was asked for a version other than 2 or 3.
    UnsupportedWriteVersion(u16),
    /// Writing was asked for a method other than zlib or zstd.
    UnsupportedWriteMethod(u16),
    /// A zlib level outside -1..=9.
    InvalidLevel(i32),
    /// The compressor failed.
    Compress {
        /// The method.
        method: Method,
        /// The compressor's message.
        detail: String,
    },
}

impl Fault {
    /// The message LLVM 22's `clang-offload-bundler` prints for this fault
    /// (after `error: Failed to decompress input: ` when reading). Faults
    /// LLVM does not detect get our own text.
    pub fn llvm_message(&self) -> String {
        match self {
            Fault::TruncatedHeader { .. } | Fault::UnknownVersion(_) => {
                "Compressed bundle header size too small".into()
            }
            Fault::UnknownMethod(_) => "Unknown compressing method".into(),
            Fault::Decompress { llvm, .. } => {
                format!("Could not decompress embedded file contents: {llvm}")
            }
            // After a complete frame, zstd calls any further bytes a wrong
            // source size.
            Fault::TrailingBytes {
                method: Method::ZSTD,
                ..
            } => "Could not decompress embedded file contents: Src size is incorrect".into(),
            Fault::UncompressedSizeLimit(2) => "Uncompressed size exceeds version 2 limit".into(),
            Fault::TotalSizeLimit(2) => "Total file size exceeds version 2 limit".into(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::NotCompressed => write!(f, "does not start with \"CCOB\""),
            Fault::TruncatedHeader {
                version: Some(v),
                need,
                have,
            } => write!(
                f,
                "truncated: a version {v} header needs {need} bytes, only {have} remain"
            ),
            Fault::TruncatedHeader {
                version: None,
                need,
                have,
            } => write!(
                f,
                "truncated: the header needs {need} bytes, only {have} remain"
            ),
            Fault::UnknownVersion(v) => write!(f, "unknown version {v} (1, 2 and 3 exist)"),
            Fault::UnknownMethod(m) => {
                write!(f, "unknown compression method {m} (0 is zlib, 1 zstd)")
            }
            Fault::TotalSizeTooSmall { total, header } => write!(
                f,
                "the total size {total} is smaller than the {header}-byte header"
            ),
            Fault::TotalSizePastEnd { total, available } => write!(
                f,
                "truncated: the total size is {total} bytes, only {available} remain"
            ),
            Fault::TooLarge { declared, limit } => write!(
                f,
                "the uncompressed size {declared} exceeds the limit of {limit} bytes"
            ),
            Fault::ImpossibleSize {
                declared,
                compressed,
                method,
            } => write!(
                f,
                "the header declares {declared} uncompressed bytes, which {compressed} bytes \
                 of {method} data cannot hold"
            ),
            Fault::OutOfMemory { bytes } => {
                write!(f, "cannot allocate {bytes} bytes for the uncompressed data")
            }
            Fault::Decompress { method, detail, .. } => {
                write!(f, "the {method} data does not decompress: {detail}")
            }
            Fault::SizeMismatch { declared, actual } => write!(
                f,
                "the data decompresses to {actual} bytes, the header declares {declared}"
            ),
            Fault::TrailingBytes { at, count, .. } => write!(
                f,
                "{count} unexpected byte(s) at offset {at:#x} after the compressed data"
            ),
            Fault::HashMismatch { stored, computed } => write!(
                f,
                "hash mismatch: stored {}, the decompressed data has {}",
                hex_hash(*stored),
                hex_hash(*computed)
            ),
            Fault::UncompressedSizeLimit(v) => {
                write!(
                    f,
                    "the uncompressed size exceeds the version {v} limit (4 GiB)"
                )
            }
            Fault::TotalSizeLimit(v) => {
                write!(
                    f,
                    "the total file size exceeds the version {v} limit (4 GiB)"
                )
            }
            Fault::UnsupportedWriteVersion(v) => {
                write!(f, "cannot write version {v} (2 and 3 can be written)")
            }
            Fault::UnsupportedWriteMethod(m) => {
                write!(f, "cannot write compression method {m} (0 is zlib, 1 zstd)")
            }
            Fault::InvalidLevel(l) => write!(f, "invalid zlib level {l} (-1 to 9)"),
            Fault::Compress { method, detail } => {
                write!(f, "{method} compression failed: {detail}")
            }
        }
    }
}
