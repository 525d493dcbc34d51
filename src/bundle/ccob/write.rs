//! Compressing bundles into CCOBs.

use std::io::{self, Seek, SeekFrom, Write};

use md5::{Digest, Md5};
use zstd::zstd_safe;

use super::Fault;
use super::frames;
use super::header::*;
use super::options::{CompressOptions, zstd_context, zstd_error};
use super::raw::*;
use super::read::buffer;
use crate::error::{Error, Result};
use crate::num::{len64, u64_from, usize_from};

// ---------------------------------------------------------------------------
// Writing

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
    let mut header = new_header(opts, uncompressed_size)?;
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

/// The header for `uncompressed_size` bytes compressed with `opts`, its
/// total size and hash still blank; fails for what cannot be written
/// (versions other than 2 and 3, unknown methods, v2's 32-bit limit, zlib
/// levels zlib does not have).
fn new_header(opts: &CompressOptions, uncompressed_size: u64) -> Result<Header> {
    let version = opts.version;
    if version != 2 && version != 3 {
        return Err(Fault::UnsupportedWriteVersion(version).at(0));
    }
    if opts.method.name().is_none() {
        return Err(Fault::UnsupportedWriteMethod(opts.method.0).at(0));
    }
    if opts.method == Method::ZLIB && !(-1..=9).contains(&opts.level) {
        return Err(Fault::InvalidLevel(opts.level).at(0));
    }
    if version == 2 && u32::try_from(uncompressed_size).is_err() {
        return Err(Fault::UncompressedSizeLimit(2).at(0));
    }
    Ok(Header {
        version,
        method: opts.method,
        total_size: Some(0),
        uncompressed_size,
        hash: 0,
    })
}

/// [`compress`] into a new vector.
pub fn compress_to_vec(data: &[u8], opts: &CompressOptions) -> Result<(Vec<u8>, CompressReport)> {
    let mut cur = io::Cursor::new(Vec::new());
    let report = compress(data, opts, &mut cur)?;
    Ok((cur.into_inner(), report))
}

/// The most bytes [`compress_into`] may need for a CCOB of
/// `uncompressed_size` bytes: the header and the compressor's bound
/// (`ZSTD_compressBound`, the buffer LLVM hands zstd; for zlib, enough for
/// stored blocks). Fails as [`compress`] would for options it cannot write.
pub fn compressed_bound(uncompressed_size: u64, opts: &CompressOptions) -> Result<u64> {
    let header = new_header(opts, uncompressed_size)?;
    let too_large = || Fault::UncompressedSizeLimit(header.version).at(0);
    let payload = if opts.method == Method::ZSTD {
        let n = usize::try_from(uncompressed_size).map_err(|_| too_large())?;
        let bound = zstd_safe::compress_bound(n);
        // zstd's macro gives 0 past its largest input (about 2^64 / 256).
        if bound < n {
            return Err(too_large());
        }
        u64_from(bound)
    } else {
        // Stored blocks cost 5 bytes per 65,535 and the stream 6; this
        // leaves a wide margin over that.
        uncompressed_size
            .checked_add(uncompressed_size / 8192 + 64)
            .ok_or_else(too_large)?
    };
    payload.checked_add(header.size()).ok_or_else(too_large)
}

/// Compresses the uncompressed bundle `data` into a CCOB at the start of
/// `out`, a buffer of at least [`compressed_bound`] bytes (a mapped file,
/// say), and returns what it wrote (the CCOB is the first
/// `report.header.total_size` bytes). The bytes are [`compress`]'s: on one
/// thread, LLVM's one `ZSTD_compress2` call, into `out` directly.
///
/// `hash` gives the stored hash (the [`truncated_md5`] of `data`, which a
/// [`BundleHasher`] computes piece by piece); it runs on its own thread
/// while the data compresses, so it may read a copy of `data` elsewhere
/// (a file) instead of touching `data` itself.
pub fn compress_into<H>(
    data: &[u8],
    opts: &CompressOptions,
    out: &mut [u8],
    hash: H,
) -> Result<CompressReport>
where
    H: FnOnce() -> Result<u64> + Send,
{
    let mut header = new_header(opts, len64(data))?;
    let bound = compressed_bound(len64(data), opts)?;
    if len64(out) < bound {
        return Err(Fault::Compress {
            method: opts.method,
            detail: format!(
                "an output buffer of {} bytes, fewer than the {bound} it may need",
                out.len()
            ),
        }
        .at(0));
    }
    let hsize = usize_from(header.size());
    let (head, rest) = out.split_at_mut(hsize);
    // Exactly LLVM's capacity: zstd's choices do not depend on it beyond
    // the bound, but there is no reason to find out.
    let payload = &mut rest[..usize_from(bound) - hsize];
    let (compressed, hash) = std::thread::scope(|scope| {
        let hasher = std::thread::Builder::new()
            .name("ccob-md5".into())
            .spawn_scoped(scope, hash)
            .map_err(|e| {
                Fault::Compress {
                    method: opts.method,
                    detail: format!("cannot start the hashing thread: {e}"),
                }
                .at(0)
            })?;
        let compressed = if opts.method == Method::ZSTD && opts.threads == 0 {
            let mut cctx = zstd_context(opts)?;
            cctx.compress2(payload, data).map_err(zstd_error)
        } else {
            let mut cursor = io::Cursor::new(payload);
            if opts.method == Method::ZSTD {
                frames::compress(&[data], opts, &mut cursor, &|_| {})
            } else {
                zlib_stream(data, opts.level, &mut cursor)
            }
            .map(|()| usize_from(cursor.position()))
        };
        let hash = hasher.join().map_err(|_| {
            Fault::Compress {
                method: opts.method,
                detail: "the hashing thread failed".into(),
            }
            .at(0)
        });
        Ok::<_, Error>((compressed?, hash??))
    })?;
    header.hash = hash;
    let total = header.size() + u64_from(compressed);
    if header.version == 2 && u32::try_from(total).is_err() {
        return Err(Fault::TotalSizeLimit(2).at(0));
    }
    header.total_size = Some(total);
    head.copy_from_slice(&header_bytes(&header).map_err(|f| f.at(0))?);
    Ok(CompressReport {
        header,
        level: opts.level,
        compressed_size: u64_from(compressed),
    })
}

/// The stored hash of a bundle fed to it in order, piece by piece (an
/// [`io::Write`]): the [`truncated_md5`] of all the bytes.
#[derive(Default)]
pub struct BundleHasher(Md5);

impl BundleHasher {
    /// A hasher that has seen nothing.
    pub fn new() -> BundleHasher {
        BundleHasher::default()
    }

    /// Feeds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The hash of everything fed.
    pub fn finish(self) -> u64 {
        truncated(self.0)
    }
}

impl Write for BundleHasher {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How much the hashing thread of [`compress_pieces`] reads before it
/// gives the bytes back.
const HASH_CHUNK: usize = 4 << 20;

/// Compresses a bundle given as consecutive pieces (headers made in memory
/// and entry data mapped from their files) without ever holding the whole
/// bundle: zstd on `opts.threads` workers (at least one), each compressing
/// frames straight from the pieces, or zlib streaming through them, while
/// another thread hashes the same pieces. The zstd payload is not
/// byte-identical to LLVM's single frame (LLVM reads it to the same
/// bundle); LLVM's own bytes need the whole bundle in one buffer
/// ([`compress_into`]). Writes the CCOB at `out`'s position, like
/// [`compress`].
///
/// `release` is called with each stretch of a piece once this call is done
/// with it (hashed, or compressed; a stretch may come twice, once for
/// each): a caller that mapped the pieces from files can give the pages
/// back, so that memory stays at the frames in flight whatever the size.
pub fn compress_pieces<W: Write + Seek>(
    pieces: &[&[u8]],
    opts: &CompressOptions,
    out: &mut W,
    release: &(dyn Fn(&[u8]) + Sync),
) -> Result<CompressReport> {
    if opts.method == Method::ZSTD && opts.threads == 0 {
        return Err(Fault::Compress {
            method: opts.method,
            detail: "zstd on the calling thread needs the whole bundle in one buffer".into(),
        }
        .at(0));
    }
    let uncompressed_size: u64 = pieces.iter().map(|p| len64(p)).sum();
    write_framed(opts, uncompressed_size, out, |counter| {
        std::thread::scope(|scope| {
            let hasher = scope.spawn(|| {
                let mut md5 = BundleHasher::new();
                for chunk in pieces.iter().flat_map(|p| p.chunks(HASH_CHUNK)) {
                    md5.update(chunk);
                    release(chunk);
                }
                md5.finish()
            });
            if opts.method == Method::ZSTD {
                frames::compress(pieces, opts, counter, release)?;
            } else {
                zlib_pieces(pieces, opts.level, counter, release)?;
            }
            hasher.join().map_err(|_| {
                Fault::Compress {
                    method: opts.method,
                    detail: "the hashing thread failed".into(),
                }
                .at(0)
            })
        })
    })
}

/// How much zlib takes from a piece between releases.
const ZLIB_CHUNK: usize = 1 << 20;

/// One zlib stream of `pieces`, in order, each stretch released once
/// compressed.
fn zlib_pieces<W: Write>(
    pieces: &[&[u8]],
    level: i32,
    out: &mut W,
    release: &(dyn Fn(&[u8]) + Sync),
) -> Result<()> {
    let level = u32::try_from(level).unwrap_or(6);
    let mut enc = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(level));
    for chunk in pieces.iter().flat_map(|p| p.chunks(ZLIB_CHUNK)) {
        enc.write_all(chunk)?;
        release(chunk);
    }
    enc.finish()?;
    Ok(())
}

/// Counts bytes on their way out, failing past `limit`.
pub(super) struct Counter<'a, W: Write> {
    pub(super) inner: &'a mut W,
    pub(super) count: u64,
    pub(super) limit: u64,
    pub(super) over: bool,
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

/// One zstd frame. On one thread, exactly LLVM's call: `ZSTD_compress2` on
/// a context with long-distance matching and the level set, all else
/// default. Its output buffer is reserved at `ZSTD_compressBound` but only
/// the compressed size is ever touched. (Streaming it instead, with the
/// whole input and `ZSTD_e_end`, gives the same bytes up to 128 MiB of
/// input, but zstd then copies the input into its own window buffer, which
/// costs more memory than the output does, and past 128 MiB that buffer
/// wraps and the frame differs.) With workers, zstd streams the frame out
/// in chunks.
pub(super) fn zstd_compress<W: Write>(
    data: &[u8],
    opts: &CompressOptions,
    out: &mut W,
) -> Result<()> {
    if opts.threads > 0 {
        return frames::compress(&[data], opts, out, &|_| {});
    }
    let mut cctx = zstd_context(opts)?;
    let bound = zstd_safe::compress_bound(data.len());
    let mut buf = buffer(bound as u64).map_err(|f| f.at(0))?;
    cctx.compress2(&mut buf, data).map_err(zstd_error)?;
    out.write_all(&buf)?;
    Ok(())
}

pub(super) fn zlib_stream<W: Write>(data: &[u8], level: i32, out: &mut W) -> Result<()> {
    let level = u32::try_from(level).unwrap_or(6);
    let mut enc = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(level));
    enc.write_all(data)?;
    enc.finish()?;
    Ok(())
}
