//! Reading OffloadBinaries: versions 1, 2 and 3, one after another in a buffer.
//!
//! Nothing here trusts a field: every offset and size is checked against the
//! binary it belongs to, the fixed tables (header, entries, string entries)
//! must not overlap each other or any image, images must not overlap each
//! other, and compressed (v3) data inflates to at most [`Limits::max_uncompressed`](crate::Limits::max_uncompressed)
//! bytes. Image bytes are borrowed from the input when it is not compressed,
//! so a caller holding a mapped file can copy them file to file.
//!
//! This file finds a binary and checks its header; `tables.rs` reads the
//! tables of an uncompressed (or inflated) binary, `compressed.rs` inflates
//! compressed ones, and `image.rs` holds what a read gives.

use zerocopy::FromBytes;

use super::raw::{
    ALIGN, ENTRY_SIZE, HEADER_SIZE, HEADER_V3_SIZE, Header, HeaderV3, MAGIC, align_up,
};
use crate::Limits;
use crate::error::{ErrorKind, Result};
use crate::num::{len64, usize_from};

mod compressed;
mod image;
mod tables;

pub(crate) use compressed::header_summary;
use compressed::read_compressed;
pub(super) use compressed::{body_reader, compressed_body, inflated_head, whole_header};
pub use image::{KeyValue, OffloadImage};
pub(super) use tables::{Described, Tables, read_tables};
use tables::{read_uncompressed, tail, truncated};

/// Whether `data` starts with the OffloadBinary magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Reads every OffloadBinary in `data`: they follow each other, each starting
/// at the next multiple of 8 after the previous one's `size` (newer LLVM
/// realigns like this; LLVM 22 does not, but everything it writes has sizes
/// that are multiples of 8, and compressed v3 binaries need it). Bytes after
/// the last binary that are not another binary are an error, as in LLVM.
pub fn read_all<'data>(data: &'data [u8], limits: &Limits) -> Result<Vec<OffloadImage<'data>>> {
    let mut out = Vec::new();
    let mut at = 0u64;
    while at < len64(data) {
        let size = read_binary(data, at, limits, &mut out)?;
        // `at + size` is within `data`, so neither step overflows.
        at = align_up(at + size, ALIGN).unwrap_or(u64::MAX);
    }
    Ok(out)
}

/// Reads the one OffloadBinary at `at` in `data`, appending its images to
/// `out`; returns its stored size.
pub fn read_binary<'data>(
    data: &'data [u8],
    at: u64,
    limits: &Limits,
    out: &mut Vec<OffloadImage<'data>>,
) -> Result<u64> {
    let Located {
        bin,
        header,
        compressed,
    } = locate(data, at)?;
    let size = len64(bin);
    if let Some(h3) = compressed {
        out.extend(read_compressed(bin, &h3, at, limits)?);
        return Ok(size);
    }
    read_uncompressed(bin, &header, at, size, false, out)?;
    Ok(size)
}

/// The OffloadBinary at some offset of a buffer, its header checked.
pub(super) struct Located<'data> {
    /// Its bytes, as stored.
    pub(super) bin: &'data [u8],
    pub(super) header: Header,
    /// The version 3 header of a compressed binary.
    pub(super) compressed: Option<HeaderV3>,
}

/// Finds the OffloadBinary at `at` in `data`: checks its magic, alignment,
/// version and size.
pub(super) fn locate(data: &[u8], at: u64) -> Result<Located<'_>> {
    let rest = tail(data, at);
    if !has_magic(rest) {
        return Err(ErrorKind::BadMagic {
            what: "OffloadBinary",
            offset: at,
            expected: "10 FF 10 AD",
        }
        .into());
    }
    if !at.is_multiple_of(ALIGN) {
        return Err(ErrorKind::Misaligned {
            what: "OffloadBinary",
            offset: at,
            align: ALIGN,
        }
        .into());
    }
    let Ok((hdr, _)) = Header::read_from_prefix(rest) else {
        return Err(truncated(
            "OffloadBinary header",
            at,
            HEADER_SIZE,
            len64(rest),
        ));
    };
    let version = hdr.version.get();
    if !(1..=3).contains(&version) {
        return Err(ErrorKind::UnsupportedVersion {
            what: "OffloadBinary",
            version: u64::from(version),
            offset: at,
        }
        .into());
    }
    // LLVM 22 wants room for a header and an entry before it looks further.
    if version < 3 && len64(rest) < HEADER_SIZE + ENTRY_SIZE {
        return Err(truncated(
            "OffloadBinary header",
            at,
            HEADER_SIZE + ENTRY_SIZE,
            len64(rest),
        ));
    }
    let size = hdr.size.get();
    if size > len64(rest) {
        return Err(ErrorKind::OutOfBounds {
            what: format!("OffloadBinary at {at:#x}"),
            offset: at,
            size,
            within: "input",
            limit: len64(data),
        }
        .into());
    }
    // `size <= rest.len()`, so it fits in usize.
    let bin = &rest[..usize_from(size)];
    let mut compressed = None;
    if version == 3 {
        let Ok((h3, _)) = HeaderV3::read_from_prefix(bin) else {
            return Err(truncated(
                "OffloadBinary v3 header",
                at,
                HEADER_V3_SIZE,
                len64(bin),
            ));
        };
        if h3.inflated_size.get() != 0 {
            compressed = Some(h3);
        }
    }
    Ok(Located {
        bin,
        header: hdr,
        compressed,
    })
}

#[cfg(test)]
mod tests;
