//! The fixed part of the CCOB format: magic, versions, methods and the
//! header layouts (see the table in the module docs).

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

// The method, its levels and the hash's text live with the faults that name
// them, in the leaf `error` module.
pub use crate::error::ccob::{Method, ZLIB_DEFAULT_LEVEL, ZSTD_DEFAULT_LEVEL, hex_hash};

/// The four bytes that start every CCOB.
pub const MAGIC: [u8; 4] = *b"CCOB";

/// The version LLVM 22 writes unless told otherwise.
pub const DEFAULT_VERSION: u16 = 3;

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
