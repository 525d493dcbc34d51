//! The compressors: one writer ([`Encoder`]) for each method the decoders
//! read, made with the method's parameters by whoever writes a package
//! (prune's rewrites of a .deb's and a conda package's tars give the
//! levels their packages' tools use).
//!
//! The output depends only on the bytes compressed and the parameters,
//! never on the machine: gzip's header carries no time or name, zstd
//! runs on the caller's thread or on worker threads whose output does
//! not depend on how many there are, and xz is written in blocks of a
//! fixed size, whose output is the same on any number of threads.

use std::io::{self, Write};

use super::gzip;

/// The most memory the xz encoder's threads may take together (each
/// holds about three blocks and the match finder, some 180 MiB at preset
/// 6); fewer threads run where more would pass it.
const XZ_MEMORY: u64 = 1 << 30;

/// A writer that compresses what it is given into `W`.
pub(crate) enum Encoder<W: Write> {
    /// Not compressed.
    None(W),
    /// gzip.
    Gzip(gzip::Stream<W>),
    /// xz.
    Xz(liblzma::write::XzEncoder<W>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// bzip2.
    Bzip2(bzip2::write::BzEncoder<W>),
    /// LZMA (`.lzma`).
    Lzma(liblzma::write::XzEncoder<W>),
}

impl<W: Write> Encoder<W> {
    /// gzip at `level` (0 to 9) into `out`: one deflate stream
    /// ([`gzip::Stream`]).
    pub(crate) fn gzip(out: W, level: u32) -> io::Result<Encoder<W>> {
        Ok(Encoder::Gzip(gzip::Stream::new(out, level)?))
    }

    /// xz at `preset` into `out`, with CRC64 checks (as `xz` writes), in
    /// blocks of `block_size` bytes (0: liblzma's default for the preset)
    /// on `threads` threads, or as many as [`XZ_MEMORY`] allows.
    pub(crate) fn xz(out: W, preset: u32, threads: u32, block_size: u64) -> io::Result<Encoder<W>> {
        let stream = xz_stream(preset, threads, block_size)?;
        Ok(Encoder::Xz(liblzma::write::XzEncoder::new_stream(
            out, stream,
        )))
    }

    /// zstd at `level` into `out`: on the caller's thread when `workers`
    /// is 0, else on that many worker threads (whose output is the same
    /// for any number of them, but not that of the caller's thread).
    pub(crate) fn zstd(out: W, level: i32, workers: u32) -> io::Result<Encoder<W>> {
        let mut e = zstd::stream::write::Encoder::new(out, level)?;
        if workers > 0 {
            e.multithread(workers)?;
        }
        Ok(Encoder::Zstd(e))
    }

    /// bzip2 in blocks of `level` × 100 kB (1 to 9) into `out`.
    pub(crate) fn bzip2(out: W, level: u32) -> Encoder<W> {
        Encoder::Bzip2(bzip2::write::BzEncoder::new(
            out,
            bzip2::Compression::new(level.clamp(1, 9)),
        ))
    }

    /// LZMA (`.lzma`, LZMA Utils' format) at `preset` into `out`.
    pub(crate) fn lzma(out: W, preset: u32) -> io::Result<Encoder<W>> {
        let options = liblzma::stream::LzmaOptions::new_preset(preset).map_err(io::Error::other)?;
        let stream =
            liblzma::stream::Stream::new_lzma_encoder(&options).map_err(io::Error::other)?;
        Ok(Encoder::Lzma(liblzma::write::XzEncoder::new_stream(
            out, stream,
        )))
    }

    /// Ends the compressed stream; the writer.
    pub(crate) fn finish(self) -> io::Result<W> {
        match self {
            Encoder::None(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Xz(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
            Encoder::Bzip2(e) => e.finish(),
            Encoder::Lzma(e) => e.finish(),
        }
    }
}

/// The xz encoder: `preset`, CRC64 checks, blocks of `block_size` bytes
/// (0: liblzma's default), on `threads` threads or as many as
/// [`XZ_MEMORY`] allows.
pub(crate) fn xz_stream(
    preset: u32,
    threads: u32,
    block_size: u64,
) -> io::Result<liblzma::stream::Stream> {
    let mut builder = liblzma::stream::MtStreamBuilder::new();
    builder
        .preset(preset)
        .check(liblzma::stream::Check::Crc64)
        .block_size(block_size);
    let mut n = threads.max(1);
    while n > 1 && builder.threads(n).memusage() > XZ_MEMORY {
        n -= 1;
    }
    builder.threads(n).encoder().map_err(io::Error::other)
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::None(w) => w.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Xz(e) => e.write(buf),
            Encoder::Zstd(e) => e.write(buf),
            Encoder::Bzip2(e) => e.write(buf),
            Encoder::Lzma(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Encoder::None(w) => w.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Xz(e) => e.flush(),
            Encoder::Zstd(e) => e.flush(),
            Encoder::Bzip2(e) => e.flush(),
            Encoder::Lzma(e) => e.flush(),
        }
    }
}
