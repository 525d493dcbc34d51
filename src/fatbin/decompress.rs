//! A compressed entry's [`Method`], and decompressing its payload: as a stream
//! ([`decoder`], what the scanner hashes and extracts from, in constant
//! memory) or into memory ([`decompress`]), the two failing alike.

use std::io::Read;

use super::lz4::{self, BlockDecoder};
use crate::decoded::{self, Exact};
use crate::error::{Error, ErrorKind, Result};
use crate::num::len64;

/// How a compressed entry's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One raw LZ4 block (flag 0x2000).
    Lz4,
    /// One zstd frame (flag 0x8000).
    Zstd,
}

impl Method {
    /// `lz4` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Lz4 => "lz4",
            Method::Zstd => "zstd",
        }
    }
}

/// Most bytes one byte of an LZ4 block can stand for: a match length byte
/// of 255 adds 255 bytes of output.
const LZ4_MAX_RATIO: u64 = 255;

/// How a size mismatch is told.
fn entry_says(got: Option<u64>, declared: u64) -> String {
    match got {
        None => lz4::too_long(declared),
        Some(n) => lz4::too_short(n, declared),
    }
}

fn what(method: Method) -> &'static str {
    match method {
        Method::Lz4 => "LZ4 data",
        Method::Zstd => "zstd data",
    }
}

/// The image a compressed entry's `data` holds, as a stream of exactly
/// `size` bytes (the entry's declared decompressed size): data that ends
/// early, decodes further or is corrupt fails the read with
/// [`ErrorKind::Decompress`] inside the `io::Error`. A size over `limit`
/// is refused before anything is decoded ([`ErrorKind::LimitExceeded`]),
/// and so is an LZ4 size no block that short can hold. Memory stays at
/// the decoder's window: 64 KiB of history for LZ4 (its match offsets are
/// 16 bits), the frame's window for zstd.
pub fn decoder<'d>(
    method: Method,
    data: &'d [u8],
    size: u64,
    limit: u64,
) -> Result<Box<dyn Read + 'd>> {
    let bad = |detail: String| -> Error {
        ErrorKind::Decompress {
            what: what(method),
            detail,
        }
        .into()
    };
    // An LZ4 block cannot grow more than 255-fold: a larger size is a lie
    // (damage, whatever the limit), refused before decoding.
    if method == Method::Lz4 && size > len64(data).saturating_mul(LZ4_MAX_RATIO) {
        return Err(bad(format!(
            "{} bytes of LZ4 data cannot hold the {size} bytes the entry declares",
            data.len()
        )));
    }
    if size > limit {
        return Err(ErrorKind::LimitExceeded {
            what: format!("the declared decompressed size {size}"),
            limit,
        }
        .into());
    }
    Ok(match method {
        Method::Lz4 => Box::new(Exact::new(
            BlockDecoder::new(data, size),
            what(method),
            size,
            entry_says,
        )),
        Method::Zstd => {
            let dec =
                zstd::stream::read::Decoder::with_buffer(data).map_err(|e| bad(e.to_string()))?;
            Box::new(Exact::new(dec, what(method), size, entry_says))
        }
    })
}

/// Decompresses the `data` of a compressed entry to exactly `size` bytes
/// in memory: [`decoder`], read to its end. Data that ends early, decodes
/// to another size or is corrupt is an error ([`ErrorKind::Decompress`]); a
/// size over `limit` is [`ErrorKind::LimitExceeded`].
pub fn decompress(method: Method, data: &[u8], size: u64, limit: u64) -> Result<Vec<u8>> {
    let r = decoder(method, data, size, limit)?;
    if usize::try_from(size).is_err() {
        return Err(ErrorKind::Decompress {
            what: what(method),
            detail: format!("{size} bytes do not fit in memory"),
        }
        .into());
    }
    decoded::read_all(r, size)
}
