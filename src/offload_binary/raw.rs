//! Fixed-size on-disk structures of the OffloadBinary format.
//!
//! All integers are little-endian; every struct has alignment 1 (zerocopy
//! unaligned integer types), so they can be read at any offset.

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The four magic bytes that start every OffloadBinary.
pub const MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];

/// Alignment of an OffloadBinary, of its image data, and of its total size.
pub const ALIGN: u64 = 8;

/// Header of versions 1 and 2 (32 bytes).
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 4 | magic `10 FF 10 AD` |
/// | 4 | 4 | version |
/// | 8 | 8 | size of the whole binary |
/// | 16 | 8 | offset of the entry table |
/// | 24 | 8 | v1: size of the entry; v2+: number of entries |
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Header {
    /// Magic bytes.
    pub magic: [u8; 4],
    /// Format version (1, 2 or 3).
    pub version: U32,
    /// Size in bytes of this binary, header included.
    pub size: U64,
    /// Offset of the first entry from the start of the binary.
    pub entry_offset: U64,
    /// Version 1: size of the single entry. Versions 2 and 3: entry count.
    pub entry_size_or_count: U64,
}
const _: () = assert!(size_of::<Header>() == 32);

/// Version 3 adds the inflated size after the 32-byte header (40 bytes in all).
/// Non-zero means everything after `entry_offset` is zlib or zstd data that
/// inflates to a binary of this total size.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct HeaderV3 {
    /// The version 1/2 fields.
    pub base: Header,
    /// Size of the whole binary once decompressed, or 0 if not compressed.
    pub inflated_size: U64,
}
const _: () = assert!(size_of::<HeaderV3>() == 40);

/// One image entry (40 bytes).
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 2 | image kind |
/// | 2 | 2 | offload kind |
/// | 4 | 4 | flags |
/// | 8 | 8 | offset of the string entries |
/// | 16 | 8 | number of string entries |
/// | 24 | 8 | offset of the image |
/// | 32 | 8 | size of the image |
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct Entry {
    /// Image kind (`IMG_*`).
    pub image_kind: U16,
    /// Offload kind (`OFK_*`).
    pub offload_kind: U16,
    /// Flags (0 from every LLVM 22 producer).
    pub flags: U32,
    /// Offset of the string entries from the start of the binary.
    pub string_offset: U64,
    /// Number of string entries.
    pub num_strings: U64,
    /// Offset of the image from the start of the binary.
    pub image_offset: U64,
    /// Size of the image in bytes.
    pub image_size: U64,
}
const _: () = assert!(size_of::<Entry>() == 40);

/// A version 1 string entry: two offsets of NUL-terminated strings (16 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct StringEntryV1 {
    /// Offset of the key.
    pub key_offset: U64,
    /// Offset of the value.
    pub value_offset: U64,
}
const _: () = assert!(size_of::<StringEntryV1>() == 16);

/// A version 2+ string entry: the value carries an explicit size (24 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct StringEntryV2 {
    /// Offset of the NUL-terminated key.
    pub key_offset: U64,
    /// Offset of the value bytes.
    pub value_offset: U64,
    /// Size of the value in bytes.
    pub value_size: U64,
}
const _: () = assert!(size_of::<StringEntryV2>() == 24);

/// Size of the v1/v2 header.
pub const HEADER_SIZE: u64 = size_of::<Header>() as u64;
/// Size of the v3 header.
pub const HEADER_V3_SIZE: u64 = size_of::<HeaderV3>() as u64;
/// Size of an entry.
pub const ENTRY_SIZE: u64 = size_of::<Entry>() as u64;
/// Size of a v1 string entry.
pub const STRING_ENTRY_V1_SIZE: u64 = size_of::<StringEntryV1>() as u64;
/// Size of a v2+ string entry.
pub const STRING_ENTRY_V2_SIZE: u64 = size_of::<StringEntryV2>() as u64;

/// Rounds `x` up to a multiple of `align`, or `None` on overflow.
pub fn align_up(x: u64, align: u64) -> Option<u64> {
    x.checked_add(align - 1).map(|v| v / align * align)
}
