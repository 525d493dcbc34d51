//! Compressed (version 3) OffloadBinaries: where the compressed data
//! starts and what it inflates to, checked against the limits; inflating a
//! binary whole; the zstd or zlib stream of its body; and the header
//! summary reports show.

use std::io::Read;

use zerocopy::FromBytes;

use super::image::OffloadImage;
use super::tables::{read_uncompressed, tail};
use crate::Limits;
use crate::decoded::Exact;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, usize_from};
use crate::offload_binary::raw::{HEADER_V3_SIZE, Header, HeaderV3};

pub(super) fn read_compressed(
    bin: &[u8],
    h3: &HeaderV3,
    at: u64,
    limits: &Limits,
) -> Result<Vec<OffloadImage<'static>>> {
    let (body_at, inflated) = compressed_body(bin, h3, at, limits)?;
    // The uncompressed binary, in one buffer of its exact size: its header
    // and what lies before the compressed data, then the body inflated
    // straight after them (never a second copy).
    let whole = inflate_whole(bin, h3, body_at, inflated)?;
    let mut images = Vec::new();
    let hdr = whole_header(h3);
    read_uncompressed(&whole, &hdr, at, len64(bin), true, &mut images)?;
    Ok(images.into_iter().map(OffloadImage::into_owned).collect())
}

/// The compressed binary `bin` (header `h3`, data from `body_at`) inflated
/// whole into one buffer of exactly `inflated` bytes, allocated once:
/// [`inflated_head`], then [`body_reader`] read to its end. `inflated` is
/// checked against the caller's limit before this is called.
///
/// [`read_all`](super::read_all) and [`read_binary`](super::read_binary) inflate a compressed version 3 binary
/// whole: it is a complete OffloadBinary whose entry table and string
/// table give offsets anywhere in it. The scanner and the commands stream
/// it instead where the tables come first, as LLVM writes them
/// ([`read_inflating`](crate::offload_binary::read_inflating),
/// [`find_images_streamed`](crate::offload_binary::find_images_streamed)).
fn inflate_whole(bin: &[u8], h3: &HeaderV3, body_at: u64, inflated: u64) -> Result<Vec<u8>> {
    let Ok(cap) = usize::try_from(inflated) else {
        return Err(ErrorKind::LimitExceeded {
            what: "inflated size".into(),
            limit: usize::MAX as u64,
        }
        .into());
    };
    let head = inflated_head(bin, h3, body_at);
    let mut whole = Vec::new();
    whole.try_reserve_exact(cap).map_err(|_| {
        Error::from(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("no memory for the {inflated} bytes a compressed OffloadBinary inflates to"),
        ))
    })?;
    whole.extend_from_slice(&head);
    let mut body = body_reader(tail(bin, body_at), inflated - body_at)?;
    // The vector is exactly as large as the data: `read_to_end` probes for
    // the end with a small read on the stack, never growing it.
    body.read_to_end(&mut whole).map_err(Error::from_io)?;
    Ok(whole)
}

/// The header of a compressed binary `h3` once inflated: its size the
/// inflated size, and no inflated size.
pub(crate) fn whole_header(h3: &HeaderV3) -> Header {
    let mut hdr = h3.base;
    hdr.size.set(h3.inflated_size.get());
    hdr
}

/// The first `body_at` bytes of the compressed binary `bin` (header `h3`)
/// once inflated: the header as the uncompressed binary has it (size =
/// inflated size, no inflated size), then the bytes before the
/// compressed data.
pub(crate) fn inflated_head(bin: &[u8], h3: &HeaderV3, body_at: u64) -> Vec<u8> {
    let mut hdr = *h3;
    hdr.base = whole_header(h3);
    hdr.inflated_size.set(0);
    let mut head = zerocopy::IntoBytes::as_bytes(&hdr).to_vec();
    head.extend_from_slice(&bin[usize_from(HEADER_V3_SIZE)..usize_from(body_at)]);
    head
}

/// Checks where a compressed binary's data starts (`body_at`, returned)
/// and the size it inflates to (returned), against the binary and
/// `limits`.
pub(crate) fn compressed_body(
    bin: &[u8],
    h3: &HeaderV3,
    at: u64,
    limits: &Limits,
) -> Result<(u64, u64)> {
    let size = len64(bin);
    let body_at = h3.base.entry_offset.get();
    let inflated = h3.inflated_size.get();
    if body_at < HEADER_V3_SIZE || body_at > size {
        return Err(ErrorKind::OutOfBounds {
            what: "compressed data".into(),
            offset: body_at,
            size: size.saturating_sub(body_at),
            within: "binary",
            limit: size,
        }
        .into());
    }
    if inflated < body_at {
        return Err(Error::invalid(
            "inflated size",
            format!("{inflated} is smaller than the header ({body_at} bytes)"),
        ));
    }
    if inflated > limits.max_uncompressed() {
        return Err(ErrorKind::LimitExceeded {
            what: format!("compressed OffloadBinary at {at:#x} (inflated size {inflated})"),
            limit: limits.max_uncompressed(),
        }
        .into());
    }
    Ok((body_at, inflated))
}

/// What the header of an OffloadBinary says about its form, for reports:
/// its version and, for a compressed version 3 binary, how it is
/// compressed. Only meaningful for a binary [`read_binary`](super::read_binary)
/// accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderSummary {
    /// The format version.
    pub version: u32,
    /// For a compressed binary: the method, `zstd` or `zlib`.
    pub method: Option<&'static str>,
    /// For a compressed binary: offset of the compressed data (the header
    /// and entry table before it stay uncompressed).
    pub body_offset: u64,
    /// For a compressed binary: the size of the whole binary once inflated.
    pub inflated_size: u64,
}

/// Reads the header of the OffloadBinary that starts `bin` (see
/// [`HeaderSummary`]); `None` when it is too short for a header.
pub fn header_summary(bin: &[u8]) -> Option<HeaderSummary> {
    let (hdr, _) = Header::read_from_prefix(bin).ok()?;
    let version = hdr.version.get();
    let inflated = match HeaderV3::read_from_prefix(bin) {
        Ok((h3, _)) if version == 3 => h3.inflated_size.get(),
        _ => 0,
    };
    let body_offset = hdr.entry_offset.get();
    let method = (inflated != 0).then(|| {
        let body = bin.get(usize_from(body_offset)..).unwrap_or_default();
        if is_zstd(body) { "zstd" } else { "zlib" }
    });
    Some(HeaderSummary {
        version,
        method,
        body_offset,
        inflated_size: inflated,
    })
}

/// Whether compressed data starts with a zstd frame's magic (else zlib).
fn is_zstd(compressed: &[u8]) -> bool {
    crate::package::compression_of(compressed) == Some(crate::package::Compression::Zstd)
}

/// The zstd (by magic) or zlib data of a compressed binary as a stream of
/// exactly `want` bytes; data that ends early, inflates further or is
/// corrupt fails the read ([`ErrorKind::Decompress`] inside the
/// `io::Error`).
pub(crate) fn body_reader(compressed: &[u8], want: u64) -> Result<Box<dyn Read + '_>> {
    fn says(got: Option<u64>, want: u64) -> String {
        let got = got.map_or_else(|| format!("more than {want}"), |n| n.to_string());
        format!("inflates to {got} bytes, the header says {want}")
    }
    if is_zstd(compressed) {
        let what = "zstd data";
        let dec = zstd::stream::read::Decoder::with_buffer(compressed).map_err(|e| {
            ErrorKind::Decompress {
                what,
                detail: e.to_string(),
            }
        })?;
        Ok(Box::new(Exact::new(dec, what, want, says)))
    } else {
        let dec = ZlibToEnd(flate2::bufread::ZlibDecoder::new(compressed));
        Ok(Box::new(Exact::new(dec, "zlib data", want, says)))
    }
}

/// A zlib stream that must fill its compressed data: bytes after the end
/// of the stream are an error when it ends, as zstd refuses bytes after
/// its last frame.
struct ZlibToEnd<'a>(flate2::bufread::ZlibDecoder<&'a [u8]>);

impl Read for ZlibToEnd<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        // What the decoder has not consumed when the stream has ended.
        let rest = self.0.get_ref().len();
        if n == 0 && !buf.is_empty() && rest != 0 {
            return Err(std::io::Error::other(format!(
                "{rest} bytes after the end of the zlib stream"
            )));
        }
        Ok(n)
    }
}
