//! Compression methods: the `Compression` of a compressed tar or file,
//! told by its magic (bzip2 and LZMA by more than their first bytes), and
//! the reader that decompresses it; the writers that compress
//! ([`encode`], [`gzip`]) beside them, for whoever writes packages.

#[cfg(feature = "files")]
pub(crate) mod encode;
#[cfg(feature = "files")]
pub(crate) mod gzip;
mod lz4;

use std::io::{self, Read};

use crate::bytes::le;
use crate::num::usize_from;

/// How a tar archive is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (`.tar.gz`, `.tgz`).
    Gzip,
    /// xz (`.tar.xz`).
    Xz,
    /// zstd (`.tar.zst`).
    Zstd,
    /// bzip2 (`.tar.bz2`, conda's first package format).
    Bzip2,
    /// LZMA, the `.lzma` format of LZMA Utils (`.tar.lzma`): a 13-byte
    /// header, then one LZMA stream with no check.
    Lzma,
    /// LZ4 frames (`.tar.lz4`), as the `lz4` tool writes them by default;
    /// not its legacy format (`lz4 -l`).
    Lz4,
    /// lzip (`.tar.lz`): members of LZMA data, each with its CRC-32 and
    /// sizes.
    Lzip,
}

impl Compression {
    /// The method's name, as a file name's suffix spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Lzma => "LZMA",
            Compression::Lz4 => "LZ4",
            Compression::Lzip => "lzip",
        }
    }
}

/// The decompressing reader for bytes compressed by `c`.
pub(crate) fn decoder<'a>(bytes: &'a [u8], c: Compression) -> io::Result<Box<dyn Read + 'a>> {
    Ok(match c {
        Compression::None => Box::new(bytes),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(bytes)),
        Compression::Xz => Box::new(XzStreams::new(bytes)?),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(bytes)?),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(bytes)),
        Compression::Lzma => {
            let stream = liblzma::stream::Stream::new_lzma_decoder(crate::limits::LZMA_MEMORY)
                .map_err(io::Error::other)?;
            Box::new(liblzma::bufread::XzDecoder::new_stream(bytes, stream))
        }
        Compression::Lz4 => Box::new(lz4::decoder(bytes)?),
        Compression::Lzip => Box::new(Lzip::new(bytes)?),
    })
}

/// The members of lzip data, one after another (liblzma's lzip decoder,
/// which checks each member's CRC-32 and sizes); bytes after the last
/// member are an error where `lzip -d` would only warn, as nothing
/// reads them.
struct Lzip<'a> {
    bytes: &'a [u8],
    decoder: liblzma::bufread::XzDecoder<&'a [u8]>,
}

impl<'a> Lzip<'a> {
    fn new(bytes: &'a [u8]) -> io::Result<Lzip<'a>> {
        let stream = liblzma::stream::Stream::new_lzip_decoder(
            crate::limits::LZMA_MEMORY,
            liblzma::stream::CONCATENATED,
        )
        .map_err(io::Error::other)?;
        Ok(Lzip {
            bytes,
            decoder: liblzma::bufread::XzDecoder::new_stream(bytes, stream),
        })
    }
}

impl Read for Lzip<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.decoder.read(buf)?;
        if n == 0 && !buf.is_empty() && self.decoder.total_in() != self.bytes.len() as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} bytes after the lzip data",
                    self.bytes.len() as u64 - self.decoder.total_in().min(self.bytes.len() as u64)
                ),
            ));
        }
        Ok(n)
    }
}

/// Memory liblzma's threaded decoder may use for its threads' buffers
/// (each holds one block); past it, it decodes on one thread.
const XZ_THREADS_MEMORY: u64 = 192 << 20;

/// The xz streams of `bytes`, one after another, each decoded on every CPU
/// when it was written in several blocks (as `xz -T`, and so `dpkg-deb`,
/// write them), and the stream padding between them skipped.
struct XzStreams<'a> {
    bytes: &'a [u8],
    /// Where the current stream starts.
    at: usize,
    current: liblzma::bufread::XzDecoder<&'a [u8]>,
}

impl<'a> XzStreams<'a> {
    fn new(bytes: &'a [u8]) -> io::Result<XzStreams<'a>> {
        Ok(XzStreams {
            bytes,
            at: 0,
            current: Self::stream(bytes)?,
        })
    }

    /// A threaded decoder of the one stream `bytes` start with.
    fn stream(bytes: &'a [u8]) -> io::Result<liblzma::bufread::XzDecoder<&'a [u8]>> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stream = liblzma::stream::MtStreamBuilder::new()
            .threads(u32::try_from(threads).unwrap_or(1))
            .memlimit_threading(XZ_THREADS_MEMORY)
            .memlimit_stop(u64::MAX)
            .decoder()
            .map_err(io::Error::other)?;
        Ok(liblzma::bufread::XzDecoder::new_stream(bytes, stream))
    }
}

impl Read for XzStreams<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.current.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The stream has ended: another may follow, after padding
            // (zero bytes, a multiple of four).
            let end = self
                .at
                .saturating_add(usize_from(self.current.total_in()))
                .min(self.bytes.len());
            let rest = &self.bytes[end..];
            let pad = rest.iter().take_while(|&&b| b == 0).count();
            if pad == rest.len() {
                return Ok(0);
            }
            if pad % 4 != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "xz stream padding that is not a multiple of four bytes",
                ));
            }
            self.at = end + pad;
            self.current = Self::stream(&self.bytes[self.at..])?;
        }
    }
}

/// The compression whose magic `bytes` start with. bzip2 is known by its
/// stream header and the magic of a first block (or of the end of an
/// empty stream); LZMA, which has no magic, by a header whose properties,
/// dictionary size and length are ones `xz --format=lzma` and LZMA Utils
/// write, and the range coder's first byte, which is always zero. (With
/// no magic, LZMA data whose first block does not decode is taken for no
/// package at all by [`detect`](super::detect).)
pub(crate) fn compression_of(bytes: &[u8]) -> Option<Compression> {
    METHODS
        .iter()
        .find(|(_, starts)| starts(bytes))
        .map(|&(c, _)| c)
}

/// Whether bytes start data of one compression method.
pub(crate) type Starts = fn(&[u8]) -> bool;

/// Each compression method read, with the test of how its data starts:
/// what [`compression_of`] tells them by, and what `--help` lists.
pub(crate) const METHODS: [(Compression, Starts); 7] = [
    (Compression::Gzip, is_gzip),
    (Compression::Xz, is_xz),
    (Compression::Zstd, is_zstd),
    (Compression::Bzip2, is_bzip2),
    (Compression::Lzma, is_lzma_alone),
    (Compression::Lz4, |b| {
        past_skippable(b).starts_with(&lz4::FRAME_MAGIC)
    }),
    (Compression::Lzip, is_lzip),
];

/// Whether `bytes` start an lzip member: `LZIP`, then version 1.
fn is_lzip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"LZIP\x01")
}

/// Whether `bytes` start a gzip member.
fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Whether `bytes` start an xz stream.
fn is_xz(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0])
}

/// Whether `bytes` start a zstd frame, after any skippable frames (which
/// `pzstd` writes first).
fn is_zstd(bytes: &[u8]) -> bool {
    past_skippable(bytes).starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// `bytes` past the skippable frames they start with: frames of user
/// data that zstd and LZ4 share (magic 0x184D2A50 to 0x184D2A5F, then a
/// 32-bit size), which their decoders pass over.
fn past_skippable(mut bytes: &[u8]) -> &[u8] {
    while let [0x50..=0x5f, 0x2a, 0x4d, 0x18, a, b, c, d, rest @ ..] = bytes {
        match rest.get(usize_from(le::<u32>([*a, *b, *c, *d]).into())..) {
            Some(next) => bytes = next,
            None => break,
        }
    }
    bytes
}

/// Whether `bytes` start a bzip2 stream: `BZh`, the block size digit,
/// then a block's magic (π's digits) or the end of stream's (√π's).
fn is_bzip2(bytes: &[u8]) -> bool {
    const BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
    const END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
    bytes.len() >= 10
        && bytes.starts_with(b"BZh")
        && (b'1'..=b'9').contains(&bytes[3])
        && (bytes[4..10] == BLOCK || bytes[4..10] == END)
}

/// Whether `bytes` start an `.lzma` file: a properties byte below 225
/// whose literal context and position bits add up to at most 4 (as
/// liblzma's encoder allows), a dictionary size of 2^n or 2^n + 2^(n-1)
/// bytes from 4 KiB up (what the encoders write), a length that is unknown
/// (all ones) or from 1 to 2^48, and a first range coder byte of zero.
fn is_lzma_alone(bytes: &[u8]) -> bool {
    let Some(header) = bytes.get(..14) else {
        return false;
    };
    let props = header[0];
    if props >= 9 * 5 * 5 {
        return false;
    }
    let (lc, lp) = (props % 9, (props / 9) % 5);
    if lc + lp > 4 {
        return false;
    }
    let dict = le::<u32>([header[1], header[2], header[3], header[4]]);
    if dict < 4096 {
        return false;
    }
    let odd = dict >> dict.trailing_zeros();
    if odd != 1 && odd != 3 {
        return false;
    }
    let len = le::<u64>([
        header[5], header[6], header[7], header[8], header[9], header[10], header[11], header[12],
    ]);
    (len == u64::MAX || (len > 0 && len < 1 << 48)) && header[13] == 0
}
