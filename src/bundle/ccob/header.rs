//! Parsing and encoding CCOB headers, and the stored hash.

use md5::{Digest, Md5};
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, IntoBytes};

use super::Fault;
use super::raw::*;
use crate::bytes::le_at;
use crate::error::Result;
use crate::num::len64;

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

pub(super) fn parse_header(data: &[u8]) -> Result<Header, Fault> {
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

pub(super) fn header_bytes(h: &Header) -> Result<Vec<u8>, Fault> {
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
pub(super) fn truncated(md5: Md5) -> u64 {
    // An MD5 digest is 16 bytes: the first 8 are always there.
    le_at::<u64>(&md5.finalize(), 0).unwrap_or_default()
}
