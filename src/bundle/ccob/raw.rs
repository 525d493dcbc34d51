//! The fixed part of the CCOB format: magic, versions, methods and the
//! header layouts (see the table in the module docs).

use std::fmt;

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

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
    pub(super) fn max_expansion(self) -> u64 {
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
/// uncompressed, and verbose mode prints [`VERBOSE_UNCOMPRESSED`](super::VERBOSE_UNCOMPRESSED).
pub fn llvm_treats_as_compressed(data: &[u8]) -> bool {
    data.len() >= size_of::<CommonHeader>() && has_magic(data)
}

/// A hash as LLVM's `format_hex(h, 16)`: `0x` and at least 14 lowercase
/// digits.
pub fn hex_hash(h: u64) -> String {
    format!("{h:#016x}")
}
