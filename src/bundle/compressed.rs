//! Compressed offload bundles (CCOB), as `clang-offload-bundler -compress`
//! writes them and LLVM 22 reads them.
//!
//! A CCOB wraps one whole uncompressed bundle (binary or text layout). All
//! integers are little-endian:
//!
//! | field | v1 (20 B) | v2 (24 B) | v3 (32 B) |
//! |---|---|---|---|
//! | magic `"CCOB"` | 0..4 | 0..4 | 0..4 |
//! | version (u16) | 4 | 4 | 4 |
//! | method (u16): 0 zlib, 1 zstd | 6 | 6 | 6 |
//! | total size, header included | – | u32 @ 8 | u64 @ 8 |
//! | uncompressed size | u32 @ 8 | u32 @ 12 | u64 @ 16 |
//! | hash: first 8 bytes of the MD5 of the uncompressed bundle | u64 @ 12 | u64 @ 16 | u64 @ 24 |
//! | compressed data: one zlib stream, or zstd frames (LLVM writes one) | @ 20 | @ 24 | @ 32 |
//!
//! # Writing
//!
//! [`compress`] writes version 3 (LLVM 22's default) or 2, byte-identical to
//! LLVM 22 when it uses zstd, which is what Debian's LLVM does. LLVM calls
//! `ZSTD_compress2` on a context where it set exactly two parameters,
//! `ZSTD_c_enableLongDistanceMatching = 1` and `ZSTD_c_compressionLevel =
//! level` (3 by default); everything else stays at zstd's defaults: the
//! window log becomes 27 because long-distance matching is on, and is then
//! shrunk to fit the input; the frame carries the content size; no checksum;
//! one thread. This equals `zstd -<level> --long=27 --no-check`. We make the
//! same call with the same libzstd (1.5.4, linked from the system) and write
//! the frame to the caller's `Write`; the output buffer is reserved at
//! `ZSTD_compressBound` but only the compressed size is touched, and the
//! input (typically a mapped file) is never copied. Byte identity depends
//! on the libzstd version: another version may pick different matches, and
//! any version decompresses the result.
//!
//! With [`CompressOptions::threads`] > 0 the input is cut into frames
//! (32 MiB at most, their number a multiple of the workers) that are
//! compressed independently at the same level, with long-distance
//! matching, on that many threads and written one after another. LLVM 22
//! reads such a payload (its zstd call decodes every frame in turn); it
//! is about 3 % larger than LLVM's single frame and, on two cores, about
//! 2.7 times as fast. Inputs of 1 MiB or less stay one frame, identical to
//! LLVM's. See `frames.rs`.
//!
//! zlib (method 0) is only what an LLVM built without zstd writes, at zlib's
//! level 6. We write a valid zlib stream with `flate2`'s Rust backend, which
//! is not byte-identical to zlib's `compress2`.
//!
//! # Reading, and where we are stricter than LLVM 22
//!
//! LLVM 22 hands *everything* after the header to the decompressor, uses the
//! uncompressed-size field only as the output buffer size, and never checks
//! the hash. We read more carefully, and reject files LLVM would accept when
//! they can only be corrupt:
//!
//! | situation | LLVM 22 | here |
//! |---|---|---|
//! | v2/v3 total size smaller than the header, or past the end | ignored | error |
//! | bytes after the total size | decompression error (zstd) | the next CCOB, in [`decompress_all`] (zero padding is skipped); an error in [`decompress`] |
//! | uncompressed size larger than the data | accepted, output truncated | error ([`Fault::SizeMismatch`]) |
//! | uncompressed size smaller than the data | error | error (LLVM's message) |
//! | bytes after the end of a zlib stream | ignored | error |
//! | hash mismatch | only `Hashes match: No` in verbose mode | error by default; [`HashCheck::Report`] only reports it, [`HashCheck::Skip`] does not compute it (LLVM's speed) |
//! | uncompressed size above the caller's limit | allocates it | error before allocating ([`Limits`]) |
//!
//! Decompression never writes more than the declared size: zstd decodes into
//! a buffer of exactly the declared size and fails if it would write one byte
//! more (LLVM's own call, so its error texts are LLVM's); zlib inflates into
//! a buffer of the declared size plus one byte, and filling that last byte is
//! the error. A declared size that the compressed bytes cannot possibly
//! produce (zstd expands at most 32768:1, deflate 1032:1) is rejected before
//! anything is allocated.
//!
//! A v1 CCOB has no total size: it ends where its zstd frame ends (frames are
//! self-delimiting), or, for zlib, at the end of the data.
//!
//! Every error is an [`ErrorKind::Ccob`] carrying a [`Fault`];
//! [`Fault::llvm_message`] gives the text LLVM 22 prints for it (after
//! `error: Failed to decompress input: `).
//!
//! # Verbose reports and environment variables
//!
//! [`CompressReport::verbose_report`] and [`Decompressed::verbose_report`]
//! return LLVM 22's `-verbose` lines exactly (the speed line needs the
//! elapsed time, which the caller measures). [`EnvSettings::from_lookup`]
//! applies LLVM 22's rules for `OFFLOAD_BUNDLER_*` and
//! `COMPRESSED_BUNDLE_FORMAT_VERSION`, with its warning texts.
//!
//! Sources: `llvm/lib/Object/OffloadBundle.cpp`,
//! `clang/lib/Driver/OffloadBundler.cpp`, `llvm/lib/Support/Compression.cpp`
//! (LLVM 22), and experiments with the installed LLVM 22.1.8 tools
//! (../shared/spec/offload-formats.md §4).

use std::fmt;
use std::io::{self, Seek, SeekFrom, Write};
use std::time::Duration;

use md5::{Digest, Md5};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};
use zstd::zstd_safe;

use crate::error::{Error, ErrorKind, Result};
use crate::num::usize_from;

mod frames;

/// The four bytes that start every CCOB.
pub const MAGIC: [u8; 4] = *b"CCOB";

/// The version LLVM 22 writes unless told otherwise.
pub const DEFAULT_VERSION: u16 = 3;

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
    fn max_expansion(self) -> u64 {
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

/// The fields every version shares (8 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct CommonHeader {
    /// `"CCOB"`.
    pub magic: [u8; 4],
    /// 1, 2 or 3.
    pub version: U16,
    /// 0 zlib, 1 zstd.
    pub method: U16,
}
const _: () = assert!(size_of::<CommonHeader>() == 8);

/// Version 1 header (20 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderV1 {
    /// Magic, version, method.
    pub common: CommonHeader,
    /// Size of the uncompressed bundle.
    pub uncompressed_size: U32,
    /// First 8 bytes of the MD5 of the uncompressed bundle.
    pub hash: U64,
}
const _: () = assert!(size_of::<HeaderV1>() == 20);

/// Version 2 header (24 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderV2 {
    /// Magic, version, method.
    pub common: CommonHeader,
    /// Size of the whole CCOB, header included.
    pub total_size: U32,
    /// Size of the uncompressed bundle.
    pub uncompressed_size: U32,
    /// First 8 bytes of the MD5 of the uncompressed bundle.
    pub hash: U64,
}
const _: () = assert!(size_of::<HeaderV2>() == 24);

/// Version 3 header (32 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderV3 {
    /// Magic, version, method.
    pub common: CommonHeader,
    /// Size of the whole CCOB, header included.
    pub total_size: U64,
    /// Size of the uncompressed bundle.
    pub uncompressed_size: U64,
    /// First 8 bytes of the MD5 of the uncompressed bundle.
    pub hash: U64,
}
const _: () = assert!(size_of::<HeaderV3>() == 32);

/// Size of the header of `version`, or `None` for an unknown version.
pub fn header_size(version: u16) -> Option<u64> {
    match version {
        1 => Some(size_of::<HeaderV1>() as u64),
        2 => Some(size_of::<HeaderV2>() as u64),
        3 => Some(size_of::<HeaderV3>() as u64),
        _ => None,
    }
}

/// Whether `data` starts with the CCOB magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Whether LLVM 22 would try to decompress `data`: at least 8 bytes that
/// start with the magic. Shorter data is passed on as an uncompressed bundle
/// (and verbose mode prints nothing); longer data without the magic is also
/// uncompressed, and verbose mode prints [`VERBOSE_UNCOMPRESSED`].
pub fn llvm_treats_as_compressed(data: &[u8]) -> bool {
    data.len() >= size_of::<CommonHeader>() && has_magic(data)
}

/// What LLVM 22's `-verbose` prints when it lists or unbundles input of 8
/// bytes or more that is not compressed.
pub const VERBOSE_UNCOMPRESSED: &str = "Uncompressed bundle.\n";

/// A parsed CCOB header, any version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// 1, 2 or 3.
    pub version: u16,
    /// Compression method (zlib or zstd once parsed).
    pub method: Method,
    /// Size of the whole CCOB, header included (v2 and v3 only).
    pub total_size: Option<u64>,
    /// Size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// The stored hash: the first 8 bytes of the MD5 digest, read as LE64.
    pub hash: u64,
}

impl Header {
    /// The header's size in bytes (20, 24 or 32).
    pub fn size(&self) -> u64 {
        header_size(self.version).unwrap_or(0)
    }

    /// Parses the header at the start of `data`, checking in LLVM's order:
    /// magic, version, length, method.
    pub fn parse(data: &[u8]) -> Result<Header> {
        parse_header(data).map_err(|f| f.at(0))
    }

    /// The header's bytes. Fails for versions other than 1–3, and when a
    /// size does not fit the version's fields.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        header_bytes(self).map_err(|f| f.at(0))
    }
}

fn parse_header(data: &[u8]) -> Result<Header, Fault> {
    if !has_magic(data) {
        return Err(Fault::NotCompressed);
    }
    let Ok((common, _)) = CommonHeader::read_from_prefix(data) else {
        return Err(Fault::TruncatedHeader {
            version: None,
            need: size_of::<CommonHeader>() as u64,
            have: len64(data),
        });
    };
    let version = common.version.get();
    let method = Method(common.method.get());
    let Some(need) = header_size(version) else {
        return Err(Fault::UnknownVersion(version));
    };
    let truncated = || Fault::TruncatedHeader {
        version: Some(version),
        need,
        have: len64(data),
    };
    let header = match version {
        1 => {
            let (h, _) = HeaderV1::read_from_prefix(data).map_err(|_| truncated())?;
            Header {
                version,
                method,
                total_size: None,
                uncompressed_size: u64::from(h.uncompressed_size.get()),
                hash: h.hash.get(),
            }
        }
        2 => {
            let (h, _) = HeaderV2::read_from_prefix(data).map_err(|_| truncated())?;
            Header {
                version,
                method,
                total_size: Some(u64::from(h.total_size.get())),
                uncompressed_size: u64::from(h.uncompressed_size.get()),
                hash: h.hash.get(),
            }
        }
        _ => {
            let (h, _) = HeaderV3::read_from_prefix(data).map_err(|_| truncated())?;
            Header {
                version,
                method,
                total_size: Some(h.total_size.get()),
                uncompressed_size: h.uncompressed_size.get(),
                hash: h.hash.get(),
            }
        }
    };
    if method.name().is_none() {
        return Err(Fault::UnknownMethod(method.0));
    }
    Ok(header)
}

fn header_bytes(h: &Header) -> Result<Vec<u8>, Fault> {
    let common = CommonHeader {
        magic: MAGIC,
        version: U16::new(h.version),
        method: U16::new(h.method.0),
    };
    match h.version {
        1 => {
            let uncompressed =
                u32::try_from(h.uncompressed_size).map_err(|_| Fault::UncompressedSizeLimit(1))?;
            Ok(HeaderV1 {
                common,
                uncompressed_size: U32::new(uncompressed),
                hash: U64::new(h.hash),
            }
            .as_bytes()
            .to_vec())
        }
        2 => {
            let uncompressed =
                u32::try_from(h.uncompressed_size).map_err(|_| Fault::UncompressedSizeLimit(2))?;
            let total =
                u32::try_from(h.total_size.unwrap_or(0)).map_err(|_| Fault::TotalSizeLimit(2))?;
            Ok(HeaderV2 {
                common,
                total_size: U32::new(total),
                uncompressed_size: U32::new(uncompressed),
                hash: U64::new(h.hash),
            }
            .as_bytes()
            .to_vec())
        }
        3 => Ok(HeaderV3 {
            common,
            total_size: U64::new(h.total_size.unwrap_or(0)),
            uncompressed_size: U64::new(h.uncompressed_size),
            hash: U64::new(h.hash),
        }
        .as_bytes()
        .to_vec()),
        v => Err(Fault::UnsupportedWriteVersion(v)),
    }
}

/// The truncated hash LLVM stores: the first 8 bytes of the MD5 digest of
/// `data`, read as a little-endian integer.
pub fn truncated_md5(data: &[u8]) -> u64 {
    truncated(Md5::new_with_prefix(data))
}

/// The first 8 bytes of an MD5 digest, read little-endian: the CCOB hash.
fn truncated(md5: Md5) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&md5.finalize()[..8]);
    u64::from_le_bytes(first)
}

// ---------------------------------------------------------------------------
// Errors

/// What is wrong with a CCOB (or with a request to write one).
///
/// Carried by [`ErrorKind::Ccob`]; `Display` is our message,
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
        /// The uncompressed size field (or, for [`decompress_all`], the sum).
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

    fn at(self, offset: u64) -> Error {
        ErrorKind::Ccob {
            offset,
            fault: self,
        }
        .into()
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

/// The CCOB fault inside `err`, if it is one.
pub fn fault(err: &Error) -> Option<&Fault> {
    match err.kind() {
        ErrorKind::Ccob { fault, .. } => Some(fault),
        _ => None,
    }
}

/// LLVM 22's message for `err` if it is a CCOB error (see
/// [`Fault::llvm_message`]).
pub fn llvm_message(err: &Error) -> Option<String> {
    fault(err).map(Fault::llvm_message)
}

// ---------------------------------------------------------------------------
// Reading

/// Bounds applied while decompressing.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest uncompressed size accepted for one CCOB, and for the sum of
    /// all of them in [`decompress_all`].
    pub max_uncompressed: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // Fat binaries of a few GiB exist (v3 exists for > 4 GiB); beyond
        // this, a declared size is far more likely a bomb.
        Limits {
            max_uncompressed: 16 << 30,
        }
    }
}

/// What to do with the stored hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashCheck {
    /// Compute the MD5 and fail on a mismatch (the default: a mismatch means
    /// a corrupt file, even though LLVM never checks).
    #[default]
    Enforce,
    /// Compute the MD5 and record the result ([`Decompressed::hash_matches`]),
    /// but do not fail: for a caller that warns instead.
    Report,
    /// Do not compute it, as LLVM does unless verbose (saves ~1.4 s/GiB).
    Skip,
}

/// Options for reading.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Size bounds.
    pub limits: Limits,
    /// Hash policy.
    pub hash: HashCheck,
}

/// One CCOB found in a buffer, not yet decompressed.
#[derive(Debug, Clone, Copy)]
pub struct Ccob<'data> {
    /// Its header.
    pub header: Header,
    /// The compressed data (between the header and the end of the CCOB).
    pub payload: &'data [u8],
    /// Bytes the CCOB occupies: the header, the payload.
    pub size: u64,
}

impl<'data> Ccob<'data> {
    /// Parses the CCOB at the start of `data`: the header, then its extent
    /// (the total size for v2 and v3; for v1 the zstd frame's own size, or
    /// all of `data` for zlib). Bytes after it are not looked at.
    pub fn parse(data: &'data [u8]) -> Result<Ccob<'data>> {
        parse_ccob(data).map_err(|f| f.at(0))
    }

    /// Decompresses the payload, within `opts`' limits and hash policy.
    /// The result's `offset` is 0.
    pub fn decompress(&self, opts: &ReadOptions) -> Result<Decompressed> {
        decompress_ccob(self, opts, opts.limits.max_uncompressed).map_err(|f| f.at(0))
    }

    /// Fails with [`Fault::ImpossibleSize`] when the header declares more
    /// uncompressed bytes than the payload can possibly produce (zstd
    /// expands at most 32768:1, deflate 1032:1): a lie, found without
    /// decompressing anything. [`Ccob::decompress`] checks it too.
    pub fn check_declared_size(&self) -> Result<()> {
        self.possible().map_err(|f| f.at(0))
    }

    /// The first `n` bytes of the contents (fewer if the header declares
    /// fewer), decoded by a streaming decoder that stops there: memory and
    /// time stay proportional to `n` whatever the declared size. Errors are
    /// the decoder's (a payload that ends early gives fewer bytes).
    pub fn decompress_prefix(&self, n: u64) -> Result<Vec<u8>> {
        use std::io::Read;
        let want = n.min(self.header.uncompressed_size);
        let fail = |e: std::io::Error| {
            Fault::Decompress {
                method: self.header.method,
                detail: e.to_string(),
                llvm: e.to_string(),
            }
            .at(0)
        };
        let mut out = Vec::new();
        if self.header.method == Method::ZSTD {
            zstd::stream::read::Decoder::with_buffer(self.payload)
                .map_err(fail)?
                .take(want)
                .read_to_end(&mut out)
                .map_err(fail)?;
        } else {
            flate2::read::ZlibDecoder::new(self.payload)
                .take(want)
                .read_to_end(&mut out)
                .map_err(fail)?;
        }
        Ok(out)
    }

    fn possible(&self) -> Result<(), Fault> {
        let declared = self.header.uncompressed_size;
        let compressed = len64(self.payload);
        // Headroom for frame/stream headers; the bound itself is generous.
        if declared > compressed.saturating_mul(self.header.method.max_expansion()) {
            return Err(Fault::ImpossibleSize {
                declared,
                compressed,
                method: self.header.method,
            });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Reading only the bundle header (listing without decompressing it all)
// ---------------------------------------------------------------------------

/// The largest bundle header [`Ccob::bundle_records`] decompresses.
pub const MAX_BUNDLE_HEADER: u64 = 1 << 20;

fn stream_error(what: &'static str, e: &std::io::Error) -> Error {
    ErrorKind::Decompress {
        what,
        detail: e.to_string(),
    }
    .into()
}

impl Ccob<'_> {
    /// The records of the binary bundle this CCOB holds, in file order,
    /// decompressing only as far as the bundle header (at most
    /// [`MAX_BUNDLE_HEADER`] bytes of it); `None` when the contents are not
    /// a binary bundle. The stored hash is not checked.
    pub fn bundle_records(&self) -> Result<Option<Vec<super::binary::Record>>> {
        use super::binary::{Prefix, read_prefix};
        use std::io::Read;
        let total = self.header.uncompressed_size;
        let (what, mut dec): (&'static str, Box<dyn Read + '_>) =
            if self.header.method == Method::ZSTD {
                let d = zstd::stream::read::Decoder::with_buffer(self.payload)
                    .map_err(|e| stream_error("zstd data", &e))?;
                ("zstd data", Box::new(d))
            } else {
                (
                    "zlib data",
                    Box::new(flate2::read::ZlibDecoder::new(self.payload)),
                )
            };
        let mut buf = Vec::new();
        let mut want = 32u64.min(total);
        loop {
            let have = len64(&buf);
            if want > have {
                (&mut dec)
                    .take(want - have)
                    .read_to_end(&mut buf)
                    .map_err(|e| stream_error(what, &e))?;
            }
            match read_prefix(&buf, total)? {
                Prefix::Records(r) => return Ok(Some(r)),
                Prefix::NotBinary => return Ok(None),
                Prefix::Need(n) => {
                    if len64(&buf) < want || n > total {
                        return Err(Error::invalid(
                            "compressed bundle",
                            format!(
                                "the contents end after {} bytes, inside the bundle header",
                                buf.len()
                            ),
                        ));
                    }
                    if n > MAX_BUNDLE_HEADER {
                        return Err(ErrorKind::LimitExceeded {
                            what: "bundle header in a compressed bundle".into(),
                            limit: MAX_BUNDLE_HEADER,
                        }
                        .into());
                    }
                    want = n
                        .max(want.saturating_mul(2))
                        .min(total)
                        .min(MAX_BUNDLE_HEADER);
                }
            }
        }
    }

    /// For a version 1 zlib CCOB, which has no total size: ends the payload
    /// (and the CCOB) where its zlib stream ends, inflating into a scratch
    /// buffer and producing at most `limit` bytes. Other CCOBs are left as
    /// they are.
    pub fn end_v1_zlib_stream(&mut self, limit: u64) -> Result<()> {
        if self.header.version != 1 || self.header.method != Method::ZLIB {
            return Ok(());
        }
        let mut z = flate2::Decompress::new(true);
        let mut scratch = vec![0u8; 64 << 10];
        loop {
            let rest = self
                .payload
                .get(usize_from(z.total_in())..)
                .unwrap_or_default();
            let before = (z.total_in(), z.total_out());
            let status = z
                .decompress(rest, &mut scratch, flate2::FlushDecompress::None)
                .map_err(|e| ErrorKind::Decompress {
                    what: "zlib data",
                    detail: e.to_string(),
                })?;
            if status == flate2::Status::StreamEnd {
                let n = z.total_in();
                self.payload = &self.payload[..usize_from(n)];
                self.size = self.header.size() + n;
                return Ok(());
            }
            if z.total_out() > limit {
                return Err(ErrorKind::LimitExceeded {
                    what: "zlib data".into(),
                    limit,
                }
                .into());
            }
            if (z.total_in(), z.total_out()) == before {
                return Err(ErrorKind::Decompress {
                    what: "zlib data",
                    detail: "the stream ends early".into(),
                }
                .into());
            }
        }
    }
}

fn parse_ccob(data: &[u8]) -> Result<Ccob<'_>, Fault> {
    let header = parse_header(data)?;
    let hsize = header.size();
    // The header was read from `data`, so `hsize <= data.len()`.
    let after = data.get(usize_from(hsize)..).unwrap_or_default();
    let size = match header.total_size {
        Some(total) => {
            if total < hsize {
                return Err(Fault::TotalSizeTooSmall {
                    total,
                    header: hsize,
                });
            }
            if total > len64(data) {
                return Err(Fault::TotalSizePastEnd {
                    total,
                    available: len64(data),
                });
            }
            total
        }
        None if header.method == Method::ZSTD => {
            // A frame's blocks say where it ends; if they cannot be walked,
            // take everything and let decompression report the problem.
            match zstd_safe::find_frame_compressed_size(after) {
                Ok(n) if n <= after.len() => hsize + n as u64,
                _ => len64(data),
            }
        }
        None => len64(data),
    };
    let payload = data
        .get(usize_from(hsize)..usize_from(size))
        .unwrap_or_default();
    Ok(Ccob {
        header,
        payload,
        size,
    })
}

/// A decompressed CCOB.
#[derive(Debug, Clone)]
pub struct Decompressed {
    /// Offset of the CCOB in the buffer that was read.
    pub offset: u64,
    /// Its header.
    pub header: Header,
    /// Bytes the CCOB occupies (header and compressed data).
    pub size: u64,
    /// Size of the compressed data alone.
    pub compressed_size: u64,
    /// The uncompressed bundle.
    pub data: Vec<u8>,
    /// The truncated MD5 of `data`, unless [`HashCheck::Skip`].
    pub computed_hash: Option<u64>,
}

impl Decompressed {
    /// Whether the stored hash matches, if it was computed.
    pub fn hash_matches(&self) -> Option<bool> {
        self.computed_hash.map(|h| h == self.header.hash)
    }

    /// The lines LLVM 22 prints with `-verbose` after decompressing this
    /// CCOB, each ending in `\n`. `elapsed` is the decompression time (for
    /// the speed line). Computes the hash if it was skipped.
    pub fn verbose_report(&self, elapsed: Duration) -> String {
        let computed = self
            .computed_hash
            .unwrap_or_else(|| truncated_md5(&self.data));
        let h = &self.header;
        let mut s = format!("Compressed bundle format version: {}\n", h.version);
        if let Some(total) = h.total_size {
            s += &format!(
                "Total file size (from header): {} bytes\n",
                with_commas(total)
            );
        }
        let rate = h.uncompressed_size as f64 / self.compressed_size as f64;
        s += &format!(
            "Decompression method: {}\n\
             Size before decompression: {} bytes\n\
             Size after decompression: {} bytes\n\
             Compression rate: {}\n\
             Compression ratio: {}%\n\
             Decompression speed: {} MB/s\n\
             Stored hash: {}\n\
             Recalculated hash: {}\n\
             Hashes match: {}\n",
            if h.method == Method::ZLIB {
                "zlib"
            } else {
                "zstd"
            },
            with_commas(self.compressed_size),
            with_commas(h.uncompressed_size),
            printf_2f(rate),
            printf_2f(100.0 / rate),
            printf_2f(speed(h.uncompressed_size, elapsed)),
            hex_hash(h.hash),
            hex_hash(computed),
            if computed == h.hash { "Yes" } else { "No" },
        );
        s
    }
}

/// Decompresses the one CCOB that `data` holds. Bytes after its end (by its
/// total size) are an error, as they are for LLVM.
pub fn decompress(data: &[u8], opts: &ReadOptions) -> Result<Decompressed> {
    let ccob = parse_ccob(data).map_err(|f| f.at(0))?;
    if ccob.size < len64(data) {
        return Err(Fault::TrailingBytes {
            method: ccob.header.method,
            at: ccob.size,
            count: len64(data) - ccob.size,
        }
        .at(0));
    }
    decompress_ccob(&ccob, opts, opts.limits.max_uncompressed).map_err(|f| f.at(0))
}

/// Decompresses every CCOB in `data`: they follow each other, each ending
/// at its total size (v2/v3) or where its zstd frame ends (v1), and zero
/// bytes between them (section alignment) are skipped. Anything else is an
/// error, with its offset. `opts.limits` bounds the sum of the uncompressed
/// sizes. A `"CCOB"` inside compressed data is never mistaken for a start.
pub fn decompress_all(data: &[u8], opts: &ReadOptions) -> Result<Vec<Decompressed>> {
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut budget = opts.limits.max_uncompressed;
    loop {
        let rest = data.get(usize_from(at)..).unwrap_or_default();
        let Some(skip) = rest.iter().position(|&b| b != 0) else {
            break;
        };
        at += skip as u64;
        let rest = &rest[skip..];
        let ccob = parse_ccob(rest).map_err(|f| f.at(at))?;
        let mut d = decompress_ccob(&ccob, opts, budget).map_err(|f| {
            match f {
                // Report the sum against the caller's limit.
                Fault::TooLarge { declared, .. } if budget < opts.limits.max_uncompressed => {
                    Fault::TooLarge {
                        declared: declared.saturating_add(opts.limits.max_uncompressed - budget),
                        limit: opts.limits.max_uncompressed,
                    }
                }
                f => f,
            }
            .at(at)
        })?;
        budget -= len64(&d.data);
        d.offset = at;
        // The CCOB lies within `rest`, so this stays within `data`.
        at += ccob.size;
        out.push(d);
    }
    Ok(out)
}

fn decompress_ccob(ccob: &Ccob<'_>, opts: &ReadOptions, limit: u64) -> Result<Decompressed, Fault> {
    let h = ccob.header;
    let declared = h.uncompressed_size;
    let compressed = len64(ccob.payload);
    if declared > limit {
        return Err(Fault::TooLarge { declared, limit });
    }
    ccob.possible()?;
    let (data, computed_hash) = match (h.method == Method::ZLIB, opts.hash) {
        (true, HashCheck::Skip) => (inflate_zlib(ccob.payload, declared)?, None),
        (true, _) => {
            let data = inflate_zlib(ccob.payload, declared)?;
            let hash = truncated_md5(&data);
            (data, Some(hash))
        }
        (false, HashCheck::Skip) => (inflate_zstd(ccob.payload, declared)?, None),
        (false, _) => match inflate_zstd_hashing(ccob.payload, declared) {
            Some((data, hash)) => (data, Some(hash)),
            // Anything irregular: LLVM's one-shot call, for its exact error.
            None => {
                let data = inflate_zstd(ccob.payload, declared)?;
                let hash = truncated_md5(&data);
                (data, Some(hash))
            }
        },
    };
    if opts.hash == HashCheck::Enforce && computed_hash != Some(h.hash) {
        return Err(Fault::HashMismatch {
            stored: h.hash,
            computed: computed_hash.unwrap_or_default(),
        });
    }
    Ok(Decompressed {
        offset: 0,
        header: h,
        size: ccob.size,
        compressed_size: compressed,
        data,
        computed_hash,
    })
}

/// An empty vector with room for exactly `n` bytes.
fn buffer(n: u64) -> Result<Vec<u8>, Fault> {
    let oom = || Fault::OutOfMemory { bytes: n };
    let cap = usize::try_from(n).map_err(|_| oom())?;
    let mut v = Vec::new();
    v.try_reserve_exact(cap).map_err(|_| oom())?;
    Ok(v)
}

/// zstd: LLVM's own call (`ZSTD_decompressDCtx` into a buffer of the
/// declared size), so the error names are LLVM's.
///
/// libzstd is never handed an output buffer of capacity 0 (a dangling
/// pointer): 1.5.4 writes through it when a block holds sequences but no
/// literals (zstd issue 3507, fixed in 1.5.5). A declared size of 0 gets a
/// 1-byte buffer instead, and a byte landing there is zstd's "buffer too
/// small".
fn inflate_zstd(payload: &[u8], declared: u64) -> Result<Vec<u8>, Fault> {
    const TOO_SMALL: &str = "Destination buffer is too small";
    let mut out = buffer(declared.max(1))?;
    let mut dctx = zstd_safe::DCtx::try_create().ok_or(Fault::OutOfMemory { bytes: 0 })?;
    let result = dctx
        .decompress(&mut out, payload)
        .map_err(zstd_safe::get_error_name);
    let n = match result {
        Ok(n) if n as u64 > declared => Err(TOO_SMALL),
        other => other,
    }
    .map_err(|name| {
        let detail = if name == TOO_SMALL {
            format!("it inflates to more than the {declared} bytes the header declares ({name})")
        } else {
            name.to_string()
        };
        Fault::Decompress {
            method: Method::ZSTD,
            detail,
            llvm: name.to_string(),
        }
    })?;
    if n as u64 != declared {
        return Err(Fault::SizeMismatch {
            declared,
            actual: n as u64,
        });
    }
    Ok(out)
}

/// zstd, hashing as it goes: the payload's frames (one from LLVM, several
/// from our worker threads) are decoded chunk by chunk into a buffer of the
/// declared size while another thread computes the MD5 of the chunks
/// already decoded, so the hash costs almost no extra time on two cores.
/// Returns `None` unless the frames decode to exactly the declared size and
/// end exactly at the end of the payload (the caller then repeats the
/// decoding with LLVM's call, for LLVM's error).
fn inflate_zstd_hashing(payload: &[u8], declared: u64) -> Option<(Vec<u8>, u64)> {
    use std::sync::mpsc;
    use zstd_safe::{InBuffer, OutBuffer};

    const CHUNK: usize = 8 << 20;
    let len = usize::try_from(declared).ok()?;
    if len == 0 {
        // Nothing to hash; zstd must not get an empty output buffer.
        return None;
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).ok()?;
    out.resize(len, 0);
    let mut dctx = zstd_safe::DCtx::try_create()?;
    let ok = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<&[u8]>(8);
        let hasher = scope.spawn(move || {
            let mut md5 = Md5::new();
            for chunk in rx {
                md5.update(chunk);
            }
            truncated(md5)
        });
        let mut input = InBuffer::around(payload);
        let mut rest: &mut [u8] = &mut out[..];
        // Whether the last call finished a frame (all of it decoded and
        // flushed): the payload may only end there.
        let mut at_frame_end = false;
        loop {
            let room = rest.len().min(CHUNK);
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(room);
            rest = tail;
            let mut ob = OutBuffer::around(&mut chunk[..]);
            while ob.pos() < room && !(input.pos() == payload.len() && at_frame_end) {
                let before = (input.pos(), ob.pos());
                match dctx.decompress_stream(&mut ob, &mut input) {
                    Err(_) => return None,
                    Ok(hint) => at_frame_end = hint == 0,
                }
                if (input.pos(), ob.pos()) == before {
                    return None; // truncated: zstd wants more input
                }
            }
            let n = ob.pos();
            let done: &[u8] = chunk;
            if tx.send(&done[..n]).is_err() {
                return None;
            }
            if input.pos() == payload.len() && at_frame_end {
                // All decoded: it must fill the declared size exactly.
                if n < room || !rest.is_empty() {
                    return None;
                }
                break;
            }
            if room == 0 {
                // The declared size is filled: only the end of this frame
                // and empty frames may follow.
                // A 1-byte scratch buffer, never an empty one (see
                // `inflate_zstd`); a byte written there is one too many.
                let mut scratch = [0u8; 1];
                while !(input.pos() == payload.len() && at_frame_end) {
                    let before = input.pos();
                    let mut none = OutBuffer::around(&mut scratch[..]);
                    match dctx.decompress_stream(&mut none, &mut input) {
                        Err(_) => return None,
                        Ok(hint) => at_frame_end = hint == 0,
                    }
                    if none.pos() > 0 || input.pos() == before {
                        return None;
                    }
                }
                break;
            }
        }
        drop(tx);
        let hash = hasher.join().ok()?;
        Some(hash)
    });
    ok.map(|hash| (out, hash))
}

/// zlib: inflate into room for the declared size plus one byte; reaching
/// that byte means the data inflates further than declared. LLVM calls
/// zlib's `uncompress`, whose results are mapped to its messages here.
fn inflate_zlib(payload: &[u8], declared: u64) -> Result<Vec<u8>, Fault> {
    let room = declared
        .checked_add(1)
        .ok_or(Fault::OutOfMemory { bytes: declared })?;
    let mut out = buffer(room)?;
    let fail = |detail: String, code: &str| Fault::Decompress {
        method: Method::ZLIB,
        detail,
        llvm: format!("zlib error: {code}"),
    };
    let mut z = flate2::Decompress::new(true);
    let ended = loop {
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let rest = payload.get(usize_from(before_in)..).unwrap_or_default();
        let status = z
            .decompress_vec(rest, &mut out, flate2::FlushDecompress::Finish)
            .map_err(|e| fail(format!("corrupt data ({e})"), "Z_DATA_ERROR"))?;
        if status == flate2::Status::StreamEnd {
            break true;
        }
        if len64(&out) >= room || (z.total_in(), z.total_out()) == (before_in, before_out) {
            break false;
        }
    };
    let produced = len64(&out);
    if produced > declared {
        // `uncompress` with a zero-size buffer inflates into a 1-byte
        // scratch buffer and reports Z_DATA_ERROR instead.
        return Err(fail(
            format!("it inflates to more than the {declared} bytes the header declares"),
            if declared == 0 {
                "Z_DATA_ERROR"
            } else {
                "Z_BUF_ERROR"
            },
        ));
    }
    if !ended {
        // zlib's `uncompress` says Z_BUF_ERROR when the input ends with the
        // output buffer full, Z_DATA_ERROR when it ends with room left (and
        // always with a zero-size buffer).
        let code = if produced == declared && declared > 0 {
            "Z_BUF_ERROR"
        } else {
            "Z_DATA_ERROR"
        };
        return Err(fail(
            format!("the data ends after {produced} of the {declared} declared bytes"),
            code,
        ));
    }
    if z.total_in() < len64(payload) {
        return Err(Fault::TrailingBytes {
            method: Method::ZLIB,
            at: z.total_in(),
            count: len64(payload) - z.total_in(),
        });
    }
    if produced != declared {
        return Err(Fault::SizeMismatch {
            declared,
            actual: produced,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Writing

/// How to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressOptions {
    /// Format version: 3 (LLVM 22's default) or 2.
    pub version: u16,
    /// zstd (LLVM's choice when built with it) or zlib.
    pub method: Method,
    /// Compression level, passed on as given: zstd clamps out-of-range values
    /// itself (0 means its default, 3); zlib takes -1 (6) to 9.
    pub level: i32,
    /// zstd worker threads; 0 compresses on the calling thread as LLVM does
    /// (byte-identical output), more compress independent frames in
    /// parallel (see the module docs). Ignored for zlib.
    pub threads: u32,
}

impl Default for CompressOptions {
    /// LLVM 22's defaults: version 3, zstd level 3, one thread.
    fn default() -> Self {
        CompressOptions {
            version: DEFAULT_VERSION,
            method: Method::ZSTD,
            level: ZSTD_DEFAULT_LEVEL,
            threads: 0,
        }
    }
}

/// What [`compress`] wrote: the facts LLVM's verbose mode prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressReport {
    /// The header that was written (with the total size).
    pub header: Header,
    /// The level asked for (as given, before any clamping by zstd).
    pub level: i32,
    /// Size of the compressed data, without the header.
    pub compressed_size: u64,
}

impl CompressReport {
    /// The lines LLVM 22 prints with `-verbose` after compressing, each
    /// ending in `\n`. `elapsed` is the time spent compressing (LLVM times
    /// the compressor alone, not the hash).
    pub fn verbose_report(&self, elapsed: Duration) -> String {
        let h = &self.header;
        let rate = h.uncompressed_size as f64 / self.compressed_size as f64;
        format!(
            "Compressed bundle format version: {}\n\
             Total file size (including headers): {} bytes\n\
             Compression method used: {}\n\
             Compression level: {}\n\
             Binary size before compression: {} bytes\n\
             Binary size after compression: {} bytes\n\
             Compression rate: {}\n\
             Compression ratio: {}%\n\
             Compression speed: {} MB/s\n\
             Truncated MD5 hash: {}\n",
            h.version,
            with_commas(h.total_size.unwrap_or_default()),
            if h.method == Method::ZSTD {
                "zstd"
            } else {
                "zlib"
            },
            self.level,
            with_commas(h.uncompressed_size),
            with_commas(self.compressed_size),
            printf_2f(rate),
            printf_2f(100.0 / rate),
            printf_2f(speed(h.uncompressed_size, elapsed)),
            hex_hash(h.hash),
        )
    }
}

/// Compresses the uncompressed bundle `data` into a CCOB written to `out`
/// at its current position. The compressed data goes straight into `out`;
/// the header's total size and hash are patched in afterwards (hence
/// `Seek`; the MD5 runs on a second thread during compression), and `out`
/// is left positioned after the CCOB. On error, `out` may hold a partial
/// CCOB.
pub fn compress<W: Write + Seek>(
    data: &[u8],
    opts: &CompressOptions,
    out: &mut W,
) -> Result<CompressReport> {
    if opts.method == Method::ZLIB && !(-1..=9).contains(&opts.level) {
        return Err(Fault::InvalidLevel(opts.level).at(0));
    }
    write_framed(opts, len64(data), out, |counter| {
        // The hash is patched in with the total size, so it is computed on
        // another thread while the data compresses (MD5 costs ~1.4 s per GiB).
        std::thread::scope(|scope| {
            let hasher = (data.len() >= 1 << 20)
                .then(|| {
                    std::thread::Builder::new()
                        .name("ccob-md5".into())
                        .spawn_scoped(scope, || truncated_md5(data))
                        .ok()
                })
                .flatten();
            let res = if opts.method == Method::ZSTD {
                zstd_compress(data, opts, counter)
            } else {
                zlib_stream(data, opts.level, counter)
            };
            let hash = match hasher {
                Some(h) => h.join().unwrap_or_else(|_| truncated_md5(data)),
                None => truncated_md5(data),
            };
            res.map(|()| hash)
        })
    })
}

/// Writes a CCOB at `out`'s position: a header with the sizes left blank,
/// the compressed data from `body` (which returns the hash of the
/// uncompressed data), then the header again with the total size and the
/// hash. `out` is left after the CCOB; on error it may hold a partial CCOB.
fn write_framed<W: Write + Seek>(
    opts: &CompressOptions,
    uncompressed_size: u64,
    out: &mut W,
    body: impl FnOnce(&mut Counter<'_, W>) -> Result<u64>,
) -> Result<CompressReport> {
    let version = opts.version;
    if version != 2 && version != 3 {
        return Err(Fault::UnsupportedWriteVersion(version).at(0));
    }
    if opts.method.name().is_none() {
        return Err(Fault::UnsupportedWriteMethod(opts.method.0).at(0));
    }
    if version == 2 && u32::try_from(uncompressed_size).is_err() {
        return Err(Fault::UncompressedSizeLimit(2).at(0));
    }
    let mut header = Header {
        version,
        method: opts.method,
        total_size: Some(0),
        uncompressed_size,
        hash: 0,
    };
    let hsize = header.size();
    let start = out.stream_position()?;
    out.write_all(&header_bytes(&header).map_err(|f| f.at(0))?)?;
    // The v2 limit is checked as the data streams out, so a hopeless
    // compression stops early.
    let limit = if version == 2 {
        u64::from(u32::MAX) - hsize
    } else {
        u64::MAX - hsize
    };
    let mut counter = Counter {
        inner: &mut *out,
        count: 0,
        limit,
        over: false,
    };
    let res = body(&mut counter);
    let (compressed_size, over) = (counter.count, counter.over);
    header.hash = match res {
        Err(_) if over => return Err(Fault::TotalSizeLimit(version).at(0)),
        Err(e) => return Err(e),
        Ok(hash) => hash,
    };
    header.total_size = Some(hsize + compressed_size);
    let end = out.stream_position()?;
    out.seek(SeekFrom::Start(start))?;
    out.write_all(&header_bytes(&header).map_err(|f| f.at(0))?)?;
    out.seek(SeekFrom::Start(end))?;
    Ok(CompressReport {
        header,
        level: opts.level,
        compressed_size,
    })
}

/// [`compress`] into a new vector.
pub fn compress_to_vec(data: &[u8], opts: &CompressOptions) -> Result<(Vec<u8>, CompressReport)> {
    let mut cur = io::Cursor::new(Vec::new());
    let report = compress(data, opts, &mut cur)?;
    Ok((cur.into_inner(), report))
}

/// Compresses a bundle given as consecutive pieces (headers made in memory
/// and entry data mapped from their files) with zstd on `opts.threads`
/// workers, without ever holding the whole bundle: the workers compress
/// frames straight from the pieces while another thread hashes the same
/// pieces. The payload is not byte-identical to LLVM's single frame; LLVM
/// reads it to the same bundle. Writes the CCOB at `out`'s position, like
/// [`compress`].
pub fn compress_pieces<W: Write + Seek>(
    pieces: &[&[u8]],
    opts: &CompressOptions,
    out: &mut W,
) -> Result<CompressReport> {
    if opts.method != Method::ZSTD || opts.threads == 0 {
        return Err(Fault::Compress {
            method: opts.method,
            detail: "streaming compression is for zstd with worker threads".into(),
        }
        .at(0));
    }
    let uncompressed_size: u64 = pieces.iter().map(|p| len64(p)).sum();
    write_framed(opts, uncompressed_size, out, |counter| {
        std::thread::scope(|scope| {
            let hasher = scope.spawn(|| {
                let mut md5 = Md5::new();
                for p in pieces {
                    md5.update(p);
                }
                truncated(md5)
            });
            frames::compress(pieces, opts, counter)?;
            hasher.join().map_err(|_| {
                Fault::Compress {
                    method: Method::ZSTD,
                    detail: "the hashing thread failed".into(),
                }
                .at(0)
            })
        })
    })
}

/// Counts bytes on their way out, failing past `limit`.
struct Counter<'a, W: Write> {
    inner: &'a mut W,
    count: u64,
    limit: u64,
    over: bool,
}

impl<W: Write> Write for Counter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.count.saturating_add(len64(buf)) > self.limit {
            self.over = true;
            return Err(io::Error::other(
                "compressed data exceeds the format's limit",
            ));
        }
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn zstd_error(code: usize) -> Error {
    Fault::Compress {
        method: Method::ZSTD,
        detail: zstd_safe::get_error_name(code).to_string(),
    }
    .at(0)
}

/// One zstd frame. On one thread, exactly LLVM's call: `ZSTD_compress2` on
/// a context with long-distance matching and the level set, all else
/// default. Its output buffer is reserved at `ZSTD_compressBound` but only
/// the compressed size is ever touched. (Streaming it instead, with the
/// whole input and `ZSTD_e_end`, gives the same bytes up to 128 MiB of
/// input, but zstd then copies the input into its own window buffer, which
/// costs more memory than the output does, and past 128 MiB that buffer
/// wraps and the frame differs.) With workers, zstd streams the frame out
/// in chunks.
fn zstd_compress<W: Write>(data: &[u8], opts: &CompressOptions, out: &mut W) -> Result<()> {
    if opts.threads > 0 {
        return frames::compress(&[data], opts, out);
    }
    let mut cctx = zstd_context(opts)?;
    let bound = zstd_safe::compress_bound(data.len());
    let mut buf = buffer(bound as u64).map_err(|f| f.at(0))?;
    cctx.compress2(&mut buf, data).map_err(zstd_error)?;
    out.write_all(&buf)?;
    Ok(())
}

/// A compression context with LLVM's two settings: long-distance matching
/// and the level.
fn zstd_context(opts: &CompressOptions) -> Result<zstd_safe::CCtx<'static>> {
    use zstd_safe::CParameter;
    let mut cctx = zstd_safe::CCtx::try_create().ok_or_else(|| {
        Fault::Compress {
            method: Method::ZSTD,
            detail: "cannot create a compression context".into(),
        }
        .at(0)
    })?;
    cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
        .map_err(zstd_error)?;
    cctx.set_parameter(CParameter::CompressionLevel(opts.level))
        .map_err(zstd_error)?;
    Ok(cctx)
}

fn zlib_stream<W: Write>(data: &[u8], level: i32, out: &mut W) -> Result<()> {
    let level = u32::try_from(level).unwrap_or(6);
    let mut enc = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(level));
    enc.write_all(data)?;
    enc.finish()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Environment variables

/// What LLVM 22's bundler takes from its environment (read when its
/// configuration is built, before the command line is applied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSettings {
    /// `OFFLOAD_BUNDLER_COMPRESS`: set means on if `"1"`, off otherwise.
    pub compress: Option<bool>,
    /// `OFFLOAD_BUNDLER_VERBOSE`: set means on if `"1"`, off otherwise.
    pub verbose: Option<bool>,
    /// `OFFLOAD_BUNDLER_COMPRESSION_LEVEL`, if it is a decimal `int`.
    pub level: Option<i32>,
    /// `COMPRESSED_BUNDLE_FORMAT_VERSION`, if it is 2 or 3.
    pub version: Option<u16>,
    /// Warnings LLVM prints on stderr, in its order, each to be followed by
    /// a newline.
    pub warnings: Vec<String>,
}

impl EnvSettings {
    /// Applies LLVM 22's rules to the variables `lookup` returns (`None`
    /// when unset): nothing at all if `OFFLOAD_BUNDLER_IGNORE_ENV_VAR` is
    /// `"1"`; numbers are parsed as LLVM's `getAsInteger(10, …)` does (the
    /// whole string, optional `-` for the level, no `+`, no spaces).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> EnvSettings {
        let mut s = EnvSettings::default();
        if lookup("OFFLOAD_BUNDLER_IGNORE_ENV_VAR").as_deref() == Some("1") {
            return s;
        }
        s.verbose = lookup("OFFLOAD_BUNDLER_VERBOSE").map(|v| v == "1");
        s.compress = lookup("OFFLOAD_BUNDLER_COMPRESS").map(|v| v == "1");
        if let Some(v) = lookup("OFFLOAD_BUNDLER_COMPRESSION_LEVEL") {
            match llvm_parse_signed(&v).and_then(|n| i32::try_from(n).ok()) {
                Some(level) => s.level = Some(level),
                None => s.warnings.push(format!(
                    "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: {v}. Ignoring it."
                )),
            }
        }
        if let Some(v) = lookup("COMPRESSED_BUNDLE_FORMAT_VERSION") {
            match llvm_parse_unsigned(&v).and_then(|n| u16::try_from(n).ok()) {
                Some(n @ 2..=3) => s.version = Some(n),
                Some(_) => s.warnings.push(format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {v}. \
                     Valid values are 2 or 3. Using default version {DEFAULT_VERSION}."
                )),
                None => s.warnings.push(format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {v}. \
                     Using default version {DEFAULT_VERSION}."
                )),
            }
        }
        s
    }

    /// The settings after the command line: each flag wins when given
    /// (`-compress=false` beats `OFFLOAD_BUNDLER_COMPRESS=1`); the level
    /// does not turn compression on by itself. `method` is the one LLVM
    /// would use (zstd for Debian's LLVM 22) and picks the default level.
    pub fn resolve(
        &self,
        compress_flag: Option<bool>,
        verbose_flag: Option<bool>,
        level_flag: Option<i32>,
        method: Method,
    ) -> BundlerCompression {
        BundlerCompression {
            compress: compress_flag.or(self.compress).unwrap_or(false),
            verbose: verbose_flag.or(self.verbose).unwrap_or(false),
            options: CompressOptions {
                version: self.version.unwrap_or(DEFAULT_VERSION),
                method,
                level: level_flag
                    .or(self.level)
                    .unwrap_or_else(|| method.default_level()),
                threads: 0,
            },
        }
    }
}

/// The compression settings of one bundler run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundlerCompression {
    /// Whether to compress the bundle.
    pub compress: bool,
    /// Whether to print the verbose reports.
    pub verbose: bool,
    /// Version, method and level for [`compress`].
    pub options: CompressOptions,
}

/// LLVM's `consumeUnsignedInteger` in radix 10 over the whole string.
fn llvm_parse_unsigned(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        let d = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(d)
    })
}

/// LLVM's `getAsSignedInteger` in radix 10 over the whole string.
fn llvm_parse_signed(s: &str) -> Option<i64> {
    match s.strip_prefix('-') {
        Some(digits) => {
            let n = llvm_parse_unsigned(digits)?;
            if n > i64::MIN.unsigned_abs() {
                return None;
            }
            Some(0i64.wrapping_sub_unsigned(n))
        }
        None => i64::try_from(llvm_parse_unsigned(s)?).ok(),
    }
}

// ---------------------------------------------------------------------------
// Number formatting, as LLVM prints it

/// `1234567` → `"1,234,567"`, as LLVM's `formatWithCommas`.
pub fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A hash as LLVM's `format_hex(h, 16)`: `0x` and at least 14 lowercase
/// digits.
pub fn hex_hash(h: u64) -> String {
    format!("{h:#016x}")
}

/// A double as glibc's `printf("%.2lf")`. Rust rounds ties to even like
/// glibc; NaN differs: on x86-64 every NaN reaching LLVM's lines (0/0,
/// then propagated) has its sign set, which glibc prints `-nan`.
fn printf_2f(x: f64) -> String {
    if x.is_nan() {
        "-nan".into()
    } else {
        format!("{x:.2}")
    }
}

/// MB/s as LLVM computes it: MiB over seconds.
fn speed(bytes: u64, elapsed: Duration) -> f64 {
    (bytes as f64 / (1024.0 * 1024.0)) / elapsed.as_secs_f64()
}

fn len64(s: &[u8]) -> u64 {
    s.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The uncompressed bundle `clang-offload-bundler` 22 makes from
    /// `h.bc` = `host` and `d.bc` = 6 × `kernel void f() {}\n` with
    /// `-type=bc -targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx90a`.
    fn llvm_bundle() -> Vec<u8> {
        let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
        b.extend(2u64.to_le_bytes());
        for (off, size, id) in [
            (0x8bu64, 4u64, &b"host-x86_64-unknown-linux-gnu-"[..]),
            (0x8f, 0x72, &b"hip-amdgcn-amd-amdhsa--gfx90a"[..]),
        ] {
            b.extend(off.to_le_bytes());
            b.extend(size.to_le_bytes());
            b.extend((id.len() as u64).to_le_bytes());
            b.extend(id);
        }
        b.extend(b"host");
        b.extend(b"kernel void f() {}\n".repeat(6));
        assert_eq!(b.len(), 257);
        b
    }

    /// Its `-compress` output (version 3), and with
    /// `COMPRESSED_BUNDLE_FORMAT_VERSION=2`.
    const LLVM_V3: &str = "43434f4203000100b2000000000000000101000000000000b89eff1d3c7527b3\
        28b52ffd600100450400c4065f5f434c414e475f4f46464c4f41445f42554e444c455f5f02008b00\
        04001e00686f73742d7838365f36342d756e6b6e6f776e2d6c696e75782d676e752d8f0072001d00\
        6869702d616d6467636e6873612d2d6766783930616b65726e656c20766f696420662829207b7d0a\
        0b00d96682856d76b6546c0703838101c603038381c1c00e600c";
    const LLVM_V2_HEADER: &str = "43434f4202000100aa00000001010000b89eff1d3c7527b3";

    fn unhex(s: &str) -> Vec<u8> {
        let s: Vec<u8> = s.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
        s.chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
            .collect()
    }

    fn llvm_v3() -> Vec<u8> {
        unhex(LLVM_V3)
    }

    fn llvm_v2() -> Vec<u8> {
        let mut v = unhex(LLVM_V2_HEADER);
        v.extend(&llvm_v3()[32..]);
        v
    }

    /// Deterministic pseudo-random bytes (xorshift).
    fn noise(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24).to_le_bytes()[0]
            })
            .collect()
    }

    /// Compressible bytes: words from a small random vocabulary.
    fn text(seed: u64, len: usize) -> Vec<u8> {
        let vocab: Vec<Vec<u8>> = (0..64)
            .map(|i| noise(seed + i, 1 + usize::try_from(i % 9).unwrap()))
            .collect();
        let picks = noise(seed ^ 0xabc, len);
        let mut out = Vec::with_capacity(len + 16);
        let mut i = 0;
        while out.len() < len {
            out.extend(&vocab[picks[i % picks.len()] as usize % vocab.len()]);
            i += 1;
        }
        out.truncate(len);
        out
    }

    fn fault_of(r: Result<impl fmt::Debug>) -> Fault {
        match r {
            Ok(v) => panic!("expected an error, got {v:?}"),
            Err(e) => fault(&e)
                .cloned()
                .unwrap_or_else(|| panic!("not a CCOB error: {e}")),
        }
    }

    fn opts(hash: HashCheck) -> ReadOptions {
        ReadOptions {
            limits: Limits::default(),
            hash,
        }
    }

    fn zlib_opts(version: u16) -> CompressOptions {
        CompressOptions {
            version,
            method: Method::ZLIB,
            level: ZLIB_DEFAULT_LEVEL,
            threads: 0,
        }
    }

    fn v3(version: u16) -> CompressOptions {
        CompressOptions {
            version,
            ..CompressOptions::default()
        }
    }

    /// Sets the header's uncompressed size (v2/v3).
    /// A v3 zstd CCOB around `payload`, declaring `declared` bytes.
    fn zstd_ccob(payload: &[u8], declared: u64, hash: u64) -> Vec<u8> {
        let mut c = Header {
            version: 3,
            method: Method::ZSTD,
            total_size: Some(32 + payload.len() as u64),
            uncompressed_size: declared,
            hash,
        }
        .to_bytes()
        .unwrap();
        c.extend(payload);
        c
    }

    fn set_uncompressed(c: &mut [u8], n: u64) {
        if c[4] == 2 {
            c[12..16].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
        } else {
            c[16..24].copy_from_slice(&n.to_le_bytes());
        }
    }

    fn set_total(c: &mut [u8], n: u64) {
        if c[4] == 2 {
            c[8..12].copy_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
        } else {
            c[8..16].copy_from_slice(&n.to_le_bytes());
        }
    }

    #[test]
    fn links_system_libzstd_1_5_4() {
        // Byte identity with LLVM 22 on Debian 12 needs its libzstd.
        assert_eq!(zstd_safe::version_number(), 10504);
    }

    #[test]
    fn writes_llvm_bytes_v3_and_v2() {
        let u = llvm_bundle();
        let (c3, r3) = compress_to_vec(&u, &CompressOptions::default()).unwrap();
        assert_eq!(c3, llvm_v3());
        assert_eq!(r3.header.total_size, Some(178));
        let (c2, _) = compress_to_vec(&u, &v3(2)).unwrap();
        assert_eq!(c2, llvm_v2());
    }

    #[test]
    fn compression_report_matches_llvm() {
        let (_, r) = compress_to_vec(&llvm_bundle(), &CompressOptions::default()).unwrap();
        // 257 B in 100 µs: 257 / 2^20 / 1e-4 = 2.45 MB/s.
        assert_eq!(
            r.verbose_report(Duration::from_micros(100)),
            "Compressed bundle format version: 3\n\
             Total file size (including headers): 178 bytes\n\
             Compression method used: zstd\n\
             Compression level: 3\n\
             Binary size before compression: 257 bytes\n\
             Binary size after compression: 146 bytes\n\
             Compression rate: 1.76\n\
             Compression ratio: 56.81%\n\
             Compression speed: 2.45 MB/s\n\
             Truncated MD5 hash: 0xb327753c1dff9eb8\n"
        );
    }

    #[test]
    fn reads_llvm_v3_and_v2_with_llvm_report() {
        for (c, v, total) in [(llvm_v3(), 3, 178), (llvm_v2(), 2, 170)] {
            let d = decompress(&c, &ReadOptions::default()).unwrap();
            assert_eq!(d.data, llvm_bundle());
            assert_eq!(d.header.version, v);
            assert_eq!(d.hash_matches(), Some(true));
            assert_eq!(
                d.verbose_report(Duration::from_secs(0)),
                format!(
                    "Compressed bundle format version: {v}\n\
                     Total file size (from header): {total} bytes\n\
                     Decompression method: zstd\n\
                     Size before decompression: 146 bytes\n\
                     Size after decompression: 257 bytes\n\
                     Compression rate: 1.76\n\
                     Compression ratio: 56.81%\n\
                     Decompression speed: inf MB/s\n\
                     Stored hash: 0xb327753c1dff9eb8\n\
                     Recalculated hash: 0xb327753c1dff9eb8\n\
                     Hashes match: Yes\n"
                )
            );
        }
    }

    #[test]
    fn round_trips_versions_methods_sizes() {
        for len in [0usize, 1, 1000, 300_000] {
            let data = text(len as u64, len);
            for o in [v3(3), v3(2), zlib_opts(3), zlib_opts(2)] {
                let (c, r) = compress_to_vec(&data, &o).unwrap();
                assert_eq!(r.header.total_size, Some(c.len() as u64));
                assert_eq!(r.header.uncompressed_size, len as u64);
                assert_eq!(r.compressed_size + r.header.size(), c.len() as u64);
                let h = Header::parse(&c).unwrap();
                assert_eq!(h, r.header);
                let d = decompress(&c, &ReadOptions::default()).unwrap();
                assert_eq!(d.data, data, "{o:?} len {len}");
                assert_eq!(d.size, c.len() as u64);
            }
        }
    }

    #[test]
    fn threaded_output_decompresses() {
        let data = text(7, 3 << 20);
        let o = CompressOptions {
            threads: 2,
            ..CompressOptions::default()
        };
        let (c, _) = compress_to_vec(&data, &o).unwrap();
        assert_eq!(decompress(&c, &ReadOptions::default()).unwrap().data, data);
        // Two frames of 1.5 MiB, one per worker.
        let first = zstd_safe::find_frame_compressed_size(&c[32..]).unwrap();
        assert!(first < c.len() - 32);
        assert_eq!(
            zstd_safe::get_frame_content_size(&c[32..]).unwrap(),
            Some(3 << 19)
        );
        // Too small to split: the same bytes as on one thread.
        let small = text(8, 1000);
        assert_eq!(
            compress_to_vec(&small, &o).unwrap().0,
            compress_to_vec(&small, &CompressOptions::default())
                .unwrap()
                .0
        );
    }

    #[test]
    fn levels_pass_through() {
        let data = text(3, 5000);
        for level in [1, 9, 19, 100, -5, 0] {
            let o = CompressOptions {
                level,
                ..CompressOptions::default()
            };
            let (c, r) = compress_to_vec(&data, &o).unwrap();
            assert!(
                r.verbose_report(Duration::from_secs(1))
                    .contains(&format!("Compression level: {level}\n"))
            );
            assert_eq!(decompress(&c, &ReadOptions::default()).unwrap().data, data);
        }
        assert_eq!(
            fault_of(compress_to_vec(
                &data,
                &CompressOptions {
                    level: 10,
                    ..zlib_opts(3)
                }
            )),
            Fault::InvalidLevel(10)
        );
    }

    #[test]
    fn only_versions_2_and_3_are_written() {
        for v in [0, 1, 4] {
            assert_eq!(
                fault_of(compress_to_vec(b"x", &v3(v))),
                Fault::UnsupportedWriteVersion(v)
            );
        }
        let o = CompressOptions {
            method: Method(2),
            ..CompressOptions::default()
        };
        assert_eq!(
            fault_of(compress_to_vec(b"x", &o)),
            Fault::UnsupportedWriteMethod(2)
        );
    }

    #[test]
    fn compresses_at_the_writer_position() {
        let data = text(5, 10_000);
        let mut cur = io::Cursor::new(b"abc".to_vec());
        cur.set_position(3);
        compress(&data, &CompressOptions::default(), &mut cur).unwrap();
        assert_eq!(cur.position(), cur.get_ref().len() as u64);
        let out = cur.into_inner();
        assert_eq!(&out[..3], b"abc");
        assert_eq!(
            out[3..],
            compress_to_vec(&data, &CompressOptions::default())
                .unwrap()
                .0
        );
    }

    #[test]
    fn v2_limits_have_llvm_messages() {
        let h = Header {
            version: 2,
            method: Method::ZSTD,
            total_size: Some(100),
            uncompressed_size: 1 << 32,
            hash: 0,
        };
        let f = fault_of(h.to_bytes());
        assert_eq!(f, Fault::UncompressedSizeLimit(2));
        assert_eq!(
            f.llvm_message(),
            "Uncompressed size exceeds version 2 limit"
        );
        let h = Header {
            total_size: Some(1 << 32),
            uncompressed_size: 5,
            ..h
        };
        let f = fault_of(h.to_bytes());
        assert_eq!(f.llvm_message(), "Total file size exceeds version 2 limit");
        // The streaming check behind the total-size limit.
        let mut sink = Vec::new();
        let mut c = Counter {
            inner: &mut sink,
            count: 0,
            limit: 10,
            over: false,
        };
        c.write_all(&[0; 10]).unwrap();
        assert!(c.write_all(&[0]).is_err());
        assert!(c.over);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let u = llvm_bundle();
        let mut inputs = vec![llvm_v3(), llvm_v2()];
        inputs.push(compress_to_vec(&u, &zlib_opts(3)).unwrap().0);
        inputs.push(compress_to_vec(&u, &zlib_opts(2)).unwrap().0);
        for c in &inputs {
            for cut in 0..c.len() {
                let part = &c[..cut];
                assert!(
                    decompress(part, &ReadOptions::default()).is_err(),
                    "cut {cut}"
                );
                assert!(decompress_all(part, &ReadOptions::default()).is_err() || cut == 0);
                let f = fault_of(decompress(part, &ReadOptions::default()));
                let hsize = usize::from(c[4] == 3) * 8 + 24;
                if (4..hsize).contains(&cut) {
                    assert!(matches!(f, Fault::TruncatedHeader { .. }), "{f:?}");
                    assert_eq!(f.llvm_message(), "Compressed bundle header size too small");
                } else if cut >= hsize {
                    assert!(matches!(f, Fault::TotalSizePastEnd { .. }), "{f:?}");
                }
            }
        }
    }

    #[test]
    fn unknown_versions_and_methods() {
        for v in [0u16, 4, 5, 255, 65535] {
            let mut c = llvm_v3();
            c[4..6].copy_from_slice(&v.to_le_bytes());
            let f = fault_of(decompress(&c, &ReadOptions::default()));
            assert_eq!(f, Fault::UnknownVersion(v));
            assert_eq!(f.llvm_message(), "Compressed bundle header size too small");
        }
        let mut c = llvm_v3();
        c[6] = 2;
        let f = fault_of(decompress(&c, &ReadOptions::default()));
        assert_eq!(f, Fault::UnknownMethod(2));
        assert_eq!(f.llvm_message(), "Unknown compressing method");
        assert_eq!(
            fault_of(Header::parse(b"BOCC\x03\0\x01\0")),
            Fault::NotCompressed
        );
        assert!(!llvm_treats_as_compressed(b"CCOB\x03\0\x01"));
        assert!(llvm_treats_as_compressed(b"CCOB\x03\0\x01\0"));
    }

    #[test]
    fn lying_uncompressed_sizes() {
        let u = llvm_bundle();
        let n = u.len() as u64;
        for base in [llvm_v3(), compress_to_vec(&u, &zlib_opts(2)).unwrap().0] {
            let zlib = base[6] == 0;
            // Too large: LLVM accepts and truncates; a corrupt file here.
            let mut c = base.clone();
            set_uncompressed(&mut c, n + 1);
            assert_eq!(
                fault_of(decompress(&c, &ReadOptions::default())),
                Fault::SizeMismatch {
                    declared: n + 1,
                    actual: n
                }
            );
            // Too small: LLVM's error.
            for small in [n - 1, 0] {
                let mut c = base.clone();
                set_uncompressed(&mut c, small);
                let f = fault_of(decompress(&c, &ReadOptions::default()));
                let want = match (zlib, small) {
                    (false, _) => "Destination buffer is too small",
                    (true, 0) => "zlib error: Z_DATA_ERROR",
                    (true, _) => "zlib error: Z_BUF_ERROR",
                };
                assert_eq!(
                    f.llvm_message(),
                    format!("Could not decompress embedded file contents: {want}"),
                    "{f}"
                );
            }
        }
    }

    #[test]
    fn lying_total_sizes() {
        let c0 = llvm_v3();
        let len = c0.len() as u64;
        let mut c = c0.clone();
        set_total(&mut c, len + 1);
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::TotalSizePastEnd {
                total: len + 1,
                available: len
            }
        );
        for small in [0, 31] {
            let mut c = c0.clone();
            set_total(&mut c, small);
            assert_eq!(
                fault_of(Ccob::parse(&c)),
                Fault::TotalSizeTooSmall {
                    total: small,
                    header: 32
                }
            );
        }
        // One byte short: the frame is cut (zstd's message), and in a single
        // file the last byte is left over.
        let mut c = c0.clone();
        set_total(&mut c, len - 1);
        let f = fault_of(decompress(&c, &ReadOptions::default()));
        assert_eq!(
            f,
            Fault::TrailingBytes {
                method: Method::ZSTD,
                at: len - 1,
                count: 1
            }
        );
        let f = fault_of(Ccob::parse(&c).unwrap().decompress(&ReadOptions::default()));
        assert_eq!(
            f.llvm_message(),
            "Could not decompress embedded file contents: Src size is incorrect"
        );
        // Exactly the header: nothing to decompress.
        let mut c = c0[..32].to_vec();
        set_total(&mut c, 32);
        assert!(matches!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::ImpossibleSize { .. }
        ));
    }

    #[test]
    fn trailing_bytes() {
        let mut c = llvm_v3();
        c.push(0);
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::TrailingBytes {
                method: Method::ZSTD,
                at: 178,
                count: 1
            }
        );
        // Zero padding after the last CCOB is fine when reading them all.
        assert_eq!(
            decompress_all(&c, &ReadOptions::default()).unwrap().len(),
            1
        );
        // Junk after a zlib stream but inside the total size: zlib (and so
        // LLVM) ignores it; it is an error here.
        let (mut z, _) = compress_to_vec(&llvm_bundle(), &zlib_opts(3)).unwrap();
        z.extend(b"junk");
        let total = z.len() as u64;
        set_total(&mut z, total);
        assert_eq!(
            fault_of(decompress(&z, &ReadOptions::default())),
            Fault::TrailingBytes {
                method: Method::ZLIB,
                at: total - 32 - 4,
                count: 4
            }
        );
    }

    #[test]
    fn hash_policies() {
        let mut c = llvm_v3();
        c[24] ^= 0xff;
        let stored = u64::from_le_bytes(c[24..32].try_into().unwrap());
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::HashMismatch {
                stored,
                computed: 0xb327_753c_1dff_9eb8
            }
        );
        let d = decompress(&c, &opts(HashCheck::Report)).unwrap();
        assert_eq!(d.hash_matches(), Some(false));
        let report = d.verbose_report(Duration::from_secs(1));
        assert!(report.ends_with(
            "Stored hash: 0xb327753c1dff9e47\n\
             Recalculated hash: 0xb327753c1dff9eb8\n\
             Hashes match: No\n"
        ));
        let d = decompress(&c, &opts(HashCheck::Skip)).unwrap();
        assert_eq!(d.computed_hash, None);
        assert_eq!(d.hash_matches(), None);
        assert!(
            d.verbose_report(Duration::from_secs(1))
                .ends_with("Hashes match: No\n")
        );
    }

    /// A hand-made v1 CCOB around `data`.
    fn v1(data: &[u8], method: Method) -> Vec<u8> {
        let o = CompressOptions {
            method,
            level: method.default_level(),
            ..CompressOptions::default()
        };
        let (c3, r) = compress_to_vec(data, &o).unwrap();
        let h = Header {
            version: 1,
            total_size: None,
            ..r.header
        };
        let mut c = h.to_bytes().unwrap();
        c.extend(&c3[32..]);
        c
    }

    #[test]
    fn reads_v1() {
        let u = llvm_bundle();
        for m in [Method::ZSTD, Method::ZLIB] {
            let c = v1(&u, m);
            let d = decompress(&c, &ReadOptions::default()).unwrap();
            assert_eq!(d.data, u);
            assert_eq!(d.header.total_size, None);
            let r = d.verbose_report(Duration::from_secs(1));
            assert!(r.starts_with(&format!(
                "Compressed bundle format version: 1\nDecompression method: {m}\n"
            )));
        }
    }

    #[test]
    fn back_to_back() {
        // Random bytes are stored verbatim by zstd, so "CCOB" written into
        // them shows up inside the compressed data.
        let mut tricky = noise(11, 5000);
        for at in [100, 2000, 4000] {
            tricky[at..at + 4].copy_from_slice(b"CCOB");
        }
        let a = text(1, 70_000);
        let b = text(2, 1234);
        let v1_data = text(4, 999);
        let mut all = Vec::new();
        let mut offsets = Vec::new();
        let parts: Vec<Vec<u8>> = vec![
            compress_to_vec(&a, &CompressOptions::default()).unwrap().0,
            compress_to_vec(&b, &zlib_opts(2)).unwrap().0,
            compress_to_vec(&tricky, &CompressOptions::default())
                .unwrap()
                .0,
            v1(&v1_data, Method::ZSTD),
            compress_to_vec(&a, &v3(2)).unwrap().0,
        ];
        assert!(memchr::memmem::find(&parts[2][32..], b"CCOB").is_some());
        for (i, p) in parts.iter().enumerate() {
            offsets.push(all.len() as u64);
            all.extend(p);
            if i == 1 {
                // Section alignment between two of them.
                all.resize(all.len().next_multiple_of(4096), 0);
            }
        }
        all.extend([0; 7]);
        let got = decompress_all(&all, &ReadOptions::default()).unwrap();
        let want = [&a, &b, &tricky, &v1_data, &a];
        assert_eq!(got.len(), want.len());
        for ((g, w), off) in got.iter().zip(want).zip(&offsets) {
            assert_eq!(&g.data, w);
            assert_eq!(g.offset, *off);
        }
        // A v1 zlib CCOB has no end but the data's: it must come last.
        let mut tail = all.clone();
        tail.extend(v1(&b, Method::ZLIB));
        assert_eq!(
            decompress_all(&tail, &ReadOptions::default())
                .unwrap()
                .len(),
            6
        );
        // Junk between them is an error that says where.
        let mut junk = parts[0].clone();
        junk.extend(b"\0\0junk");
        let e = decompress_all(&junk, &ReadOptions::default()).unwrap_err();
        assert!(matches!(
            e.kind(),
            ErrorKind::Ccob {
                fault: Fault::NotCompressed,
                offset
            } if *offset == parts[0].len() as u64 + 2
        ));
        // The sum of the sizes is bounded too.
        let small = ReadOptions {
            limits: Limits {
                max_uncompressed: 100_000,
            },
            ..ReadOptions::default()
        };
        // 70 000 + 1234 + 5000 + 999 read, then 70 000 more: 147 233.
        assert_eq!(
            fault_of(decompress_all(&all, &small)),
            Fault::TooLarge {
                declared: 147_233,
                limit: 100_000
            }
        );
        assert!(
            decompress_all(&[], &ReadOptions::default())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn bombs_are_refused_before_allocating() {
        let mut c = llvm_v3();
        set_uncompressed(&mut c, 1 << 40);
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::TooLarge {
                declared: 1 << 40,
                limit: 16 << 30
            }
        );
        set_uncompressed(&mut c, 1 << 30);
        assert_eq!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::ImpossibleSize {
                declared: 1 << 30,
                compressed: 146,
                method: Method::ZSTD
            }
        );
        // Within every bound, but the data is smaller than declared.
        set_uncompressed(&mut c, 1 << 20);
        assert!(matches!(
            fault_of(decompress(&c, &ReadOptions::default())),
            Fault::SizeMismatch { .. } | Fault::Decompress { .. }
        ));
    }

    #[test]
    fn inflating_past_the_declared_size_stops_there() {
        // A frame without a content size, so zstd cannot tell up front.
        let data = text(9, 100_000);
        let mut cctx = zstd_safe::CCtx::create();
        cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(false))
            .unwrap();
        let mut frame = Vec::with_capacity(200_000);
        cctx.compress2(&mut frame, &data).unwrap();
        let declared = 50_000u64;
        let c = zstd_ccob(&frame, declared, truncated_md5(&data));
        let f = fault_of(decompress(&c, &ReadOptions::default()));
        assert_eq!(
            f.llvm_message(),
            "Could not decompress embedded file contents: Destination buffer is too small"
        );
        // zlib: a stream of 100 000 bytes declared as 50 000.
        let (mut z, _) = compress_to_vec(&data, &zlib_opts(3)).unwrap();
        set_uncompressed(&mut z, declared);
        let f = fault_of(decompress(&z, &ReadOptions::default()));
        assert_eq!(
            f.llvm_message(),
            "Could not decompress embedded file contents: zlib error: Z_BUF_ERROR"
        );
        assert!(f.to_string().contains("more than the 50000 bytes"), "{f}");
    }

    #[test]
    fn hashing_while_decoding_spans_many_chunks() {
        // 20 MiB: three 8 MiB chunks go through the hashing thread.
        let data: Vec<u8> = (0..20u32 << 20)
            .map(|i| (i % 251).to_le_bytes()[0] ^ (i >> 13).to_le_bytes()[0])
            .collect();
        let (packed, _) = compress_to_vec(&data, &CompressOptions::default()).unwrap();
        let d = decompress(&packed, &ReadOptions::default()).unwrap();
        assert_eq!(d.data, data);
        assert_eq!(d.hash_matches(), Some(true));
        // A wrong stored hash is caught on this path too.
        let mut bad = packed.clone();
        bad[24] ^= 1;
        assert!(decompress(&bad, &ReadOptions::default()).is_err());
        // A truncated payload gives the same error with and without hashing.
        let cut = &packed[..packed.len() - 100];
        let skip = ReadOptions {
            hash: HashCheck::Skip,
            ..ReadOptions::default()
        };
        let (a, b) = (
            decompress(cut, &ReadOptions::default()),
            decompress(cut, &skip),
        );
        assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());
    }

    #[test]
    fn multi_frame_payloads() {
        // Frames back to back, as our worker threads write them, decode on
        // the hashing path (`Some`) exactly when they fill the declared
        // size and end with the payload.
        let data: Vec<u8> = (0..20u32 << 20)
            .map(|i| (i % 253).to_le_bytes()[0] ^ (i >> 11).to_le_bytes()[0])
            .collect();
        let frame = |part: &[u8]| zstd::bulk::compress(part, 3).unwrap();
        let cuts = [0, 5 << 20, (5 << 20) + 1, 13 << 20, 20 << 20];
        let mut payload = Vec::new();
        for w in cuts.windows(2) {
            payload.extend(frame(&data[w[0]..w[1]]));
        }
        let n = data.len() as u64;
        let (out, hash) = inflate_zstd_hashing(&payload, n).unwrap();
        assert!(out == data && hash == truncated_md5(&data));
        // An empty frame after the data, or a skippable one, changes nothing.
        let mut more = payload.clone();
        more.extend(frame(&[]));
        more.extend([0x50, 0x2a, 0x4d, 0x18, 2, 0, 0, 0, 9, 9]);
        assert!(inflate_zstd_hashing(&more, n).is_some());
        // Declared too small or too large by one byte.
        assert!(inflate_zstd_hashing(&payload, n - 1).is_none());
        assert!(inflate_zstd_hashing(&payload, n + 1).is_none());
        // A frame with data after the declared size is filled.
        let mut extra = payload.clone();
        extra.extend(frame(b"x"));
        assert!(inflate_zstd_hashing(&extra, n).is_none());
        // Cut inside the last frame, or junk after it.
        assert!(inflate_zstd_hashing(&payload[..payload.len() - 1], n).is_none());
        let mut junk = payload.clone();
        junk.push(0);
        assert!(inflate_zstd_hashing(&junk, n).is_none());
        // The public reader agrees with LLVM's one-shot call on all of them.
        let ccob =
            |payload: &[u8], declared: u64| zstd_ccob(payload, declared, truncated_md5(&data));
        assert_eq!(
            decompress(&ccob(&more, n), &ReadOptions::default())
                .unwrap()
                .data,
            data
        );
        for (p, d) in [(&extra, n), (&junk, n), (&payload, n + 1)] {
            let c = ccob(p, d);
            let skip = ReadOptions {
                hash: HashCheck::Skip,
                ..ReadOptions::default()
            };
            let (a, b) = (
                decompress(&c, &ReadOptions::default()),
                decompress(&c, &skip),
            );
            assert_eq!(a.unwrap_err().to_string(), b.unwrap_err().to_string());
        }
    }

    #[test]
    fn empty_payloads() {
        // LLVM decompresses an empty zstd payload to nothing; so do we when
        // the header agrees.
        let mut c = Header {
            version: 3,
            method: Method::ZSTD,
            total_size: Some(32),
            uncompressed_size: 0,
            hash: truncated_md5(b""),
        }
        .to_bytes()
        .unwrap();
        let d = decompress(&c, &ReadOptions::default()).unwrap();
        assert!(d.data.is_empty());
        // 0 / 0 is a NaN with its sign set on x86-64: glibc prints "-nan".
        assert_eq!(
            d.verbose_report(Duration::from_secs(1)),
            "Compressed bundle format version: 3\n\
             Total file size (from header): 32 bytes\n\
             Decompression method: zstd\n\
             Size before decompression: 0 bytes\n\
             Size after decompression: 0 bytes\n\
             Compression rate: -nan\n\
             Compression ratio: -nan%\n\
             Decompression speed: 0.00 MB/s\n\
             Stored hash: 0x4b2008fd98c1dd4\n\
             Recalculated hash: 0x4b2008fd98c1dd4\n\
             Hashes match: Yes\n"
        );
        c[6] = 0;
        let f = fault_of(decompress(&c, &ReadOptions::default()));
        assert_eq!(
            f.llvm_message(),
            "Could not decompress embedded file contents: zlib error: Z_DATA_ERROR"
        );
    }

    /// A zstd frame whose one block holds a sequence but no literals, its
    /// header saying it holds 0 bytes: libzstd 1.5.4 given it with an
    /// output buffer of capacity 0 writes through the (dangling) pointer.
    const SEQUENCE_WITHOUT_LITERALS: [u8; 15] = [
        0x28, 0xB5, 0x2F, 0xFD, // magic
        0x20, 0x00, // single segment, content size 0
        0x35, 0x00, 0x00, // last block, compressed, 6 bytes
        0x00, // raw literals, 0 of them
        0x01, 0x00, 0x00, 0x00, 0x02, // 1 sequence, predefined tables
    ];

    #[test]
    fn a_declared_size_of_zero_never_hands_zstd_an_empty_buffer() {
        let mut samples = Vec::new();
        for version in [1u16, 2, 3] {
            let total = (version > 1).then_some(0);
            let h = Header {
                version,
                method: Method::ZSTD,
                total_size: total,
                uncompressed_size: 0,
                hash: 0,
            };
            let mut c = h.to_bytes().unwrap();
            for _ in 0..2 {
                // The frame once, then twice.
                c.extend(SEQUENCE_WITHOUT_LITERALS);
                if version > 1 {
                    let n = len64(&c);
                    set_total(&mut c, n);
                }
                samples.push(c.clone());
            }
        }
        for c in &samples {
            for hash in [HashCheck::Enforce, HashCheck::Report, HashCheck::Skip] {
                // Before the fix, the process died with SIGSEGV here.
                assert!(decompress(c, &opts(hash)).is_err());
                assert!(decompress_all(c, &opts(hash)).is_err());
            }
        }
        let f = fault_of(decompress(&samples[0], &opts(HashCheck::Enforce)));
        assert_eq!(
            f.llvm_message(),
            "Could not decompress embedded file contents: Destination buffer is too small"
        );
        // A declared size that is filled exactly, then more sequences: the
        // hashing decoder's tail check gets a 1-byte buffer too.
        let u = b"abcabcabcabcabcabc".to_vec();
        let (mut c, _) = compress_to_vec(&u, &CompressOptions::default()).unwrap();
        c.extend(SEQUENCE_WITHOUT_LITERALS);
        let n = len64(&c);
        set_total(&mut c, n);
        for hash in [HashCheck::Enforce, HashCheck::Report, HashCheck::Skip] {
            assert!(decompress(&c, &opts(hash)).is_err());
        }
    }

    #[test]
    fn corrupt_payloads_fail_cleanly() {
        for base in [
            llvm_v3(),
            compress_to_vec(&llvm_bundle(), &zlib_opts(3)).unwrap().0,
        ] {
            for i in 32..base.len() {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut c = base.clone();
                    c[i] ^= flip;
                    // Mostly errors; never a panic, never more than declared.
                    if let Ok(d) = decompress(&c, &opts(HashCheck::Report)) {
                        assert_eq!(d.data.len() as u64, d.header.uncompressed_size);
                    }
                }
            }
        }
    }

    #[test]
    fn fuzz_body_on_samples() {
        let u = llvm_bundle();
        let mut samples = vec![
            llvm_v3(),
            llvm_v2(),
            v1(&u, Method::ZSTD),
            v1(&u, Method::ZLIB),
        ];
        samples.push(compress_to_vec(&u, &zlib_opts(3)).unwrap().0);
        let joined = samples.concat();
        samples.push(joined);
        for s in &samples {
            for cut in 0..=s.len() {
                crate::fuzz::ccob_read(&s[..cut]);
            }
            for i in 0..s.len().min(64) {
                let mut c = s.clone();
                c[i] ^= 0x5a;
                crate::fuzz::ccob_read(&c);
            }
        }
    }

    #[test]
    fn environment_rules() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            EnvSettings::from_lookup(move |k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            })
        };
        let s = env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_VERBOSE", "yes"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "-5"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "2"),
        ]);
        assert_eq!(
            s,
            EnvSettings {
                compress: Some(true),
                verbose: Some(false),
                level: Some(-5),
                version: Some(2),
                warnings: vec![],
            }
        );
        let s = env(&[
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1"),
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "abc"),
        ]);
        assert_eq!(s, EnvSettings::default());
        let s = env(&[
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "0"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "abc"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "1"),
        ]);
        assert_eq!(
            s.warnings,
            [
                "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: abc. Ignoring it.",
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: 1. Valid values are \
                 2 or 3. Using default version 3."
            ]
        );
        for bad in ["abc", "", "+2", " 2", "2 ", "0x2", "65538", "-2"] {
            assert_eq!(
                EnvSettings::from_lookup(
                    |k| (k == "COMPRESSED_BUNDLE_FORMAT_VERSION").then(|| bad.to_string())
                )
                .warnings,
                [format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {bad}. Using \
                     default version 3."
                )],
                "{bad:?}"
            );
        }
        for (v, want) in [
            ("3", Some(3)),
            ("002", Some(2)),
            ("0", None),
            ("65535", None),
        ] {
            let s = EnvSettings::from_lookup(|k| {
                (k == "COMPRESSED_BUNDLE_FORMAT_VERSION").then(|| v.to_string())
            });
            assert_eq!(s.version, want, "{v}");
        }
        for (v, want) in [
            ("100", Some(100)),
            ("-0", Some(0)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("2147483648", None),
            ("--1", None),
            ("-", None),
            ("1e3", None),
        ] {
            let s = EnvSettings::from_lookup(|k| {
                (k == "OFFLOAD_BUNDLER_COMPRESSION_LEVEL").then(|| v.to_string())
            });
            assert_eq!(s.level, want, "{v}");
            assert_eq!(s.warnings.len(), usize::from(want.is_none()));
        }
        // Flags win when given; the level alone does not compress.
        let s = env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "9"),
        ]);
        let r = s.resolve(Some(false), None, None, Method::ZSTD);
        assert!(!r.compress && !r.verbose);
        assert_eq!(r.options.level, 9);
        assert_eq!(r.options.version, 3);
        let r = s.resolve(None, Some(true), Some(1), Method::ZSTD);
        assert!(r.compress && r.verbose);
        assert_eq!(r.options.level, 1);
        let r = EnvSettings::default().resolve(None, None, None, Method::ZLIB);
        assert_eq!(r.options.level, 6);
        assert!(!r.compress);
    }

    #[test]
    fn number_formatting() {
        assert_eq!(with_commas(0), "0");
        assert_eq!(with_commas(999), "999");
        assert_eq!(with_commas(1000), "1,000");
        assert_eq!(with_commas(1_234_567), "1,234,567");
        assert_eq!(with_commas(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(hex_hash(0x7b73_8f23_2da0_7fa8), "0x7b738f232da07fa8");
        assert_eq!(hex_hash(0x0012_3456_78ab_cdef), "0x12345678abcdef");
        assert_eq!(hex_hash(0), "0x00000000000000");
        assert_eq!(printf_2f(1.125), "1.12");
        assert_eq!(printf_2f(f64::INFINITY), "inf");
        assert_eq!(printf_2f(f64::NAN), "-nan");
        // 150 B into 101 B (the spec's example): rate 1.49, ratio 67.33%.
        assert_eq!(printf_2f(150.0 / 101.0), "1.49");
        assert_eq!(printf_2f(100.0 / (150.0 / 101.0)), "67.33");
    }

    #[test]
    fn errors_carry_offsets_and_llvm_texts() {
        let e = decompress(b"CCOB\x07\0\x01\0", &ReadOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "compressed bundle at offset 0x0: unknown version 7 (1, 2 and 3 exist)"
        );
        assert_eq!(
            llvm_message(&e).as_deref(),
            Some("Compressed bundle header size too small")
        );
        assert_eq!(llvm_message(&Error::usage("x")), None);
    }
}
