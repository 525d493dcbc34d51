//! A package's tar archive compressed again with the method it came in:
//! none, gzip, xz or zstd, at the levels `dpkg-deb` uses by default (gzip
//! 9, xz 6, zstd 3), or bzip2 (blocks of 900 kB) and LZMA (preset 6),
//! which `dpkg-deb` still reads.
//!
//! The output depends only on the bytes compressed, never on the machine:
//! gzip's header carries no time or name, zstd runs on one thread, and
//! xz is written in blocks of a fixed size (liblzma's default for preset 6,
//! 24 MiB, as `xz -T` writes them), whose output is the same on any number
//! of threads.

use std::io::{self, Write};

use crate::package::Compression;

/// dpkg-deb's default gzip level.
const GZIP_LEVEL: u32 = 9;

/// dpkg-deb's default xz preset.
const XZ_PRESET: u32 = 6;

/// dpkg-deb's default zstd level.
const ZSTD_LEVEL: i32 = 3;

/// The most memory the xz encoder's threads may take together (each
/// holds about three blocks and the match finder, some 180 MiB at preset
/// 6); fewer threads run where more would pass it.
const XZ_MEMORY: u64 = 1 << 30;

/// A writer that compresses what it is given into `W`.
pub(crate) enum Encoder<W: Write> {
    /// Not compressed.
    None(W),
    /// gzip.
    Gzip(flate2::write::GzEncoder<W>),
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
    /// An encoder compressing with `method` into `out`, xz on up to
    /// `threads` threads.
    pub(crate) fn new(method: Compression, out: W, threads: u32) -> io::Result<Encoder<W>> {
        Ok(match method {
            Compression::None => Encoder::None(out),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(GZIP_LEVEL),
            )),
            Compression::Xz => Encoder::Xz(liblzma::write::XzEncoder::new_stream(
                out,
                xz_stream(threads, 0)?,
            )),
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?),
            Compression::Bzip2 => Encoder::Bzip2(bzip2::write::BzEncoder::new(
                out,
                bzip2::Compression::best(),
            )),
            Compression::Lzma => {
                let options = liblzma::stream::LzmaOptions::new_preset(XZ_PRESET)
                    .map_err(io::Error::other)?;
                let stream = liblzma::stream::Stream::new_lzma_encoder(&options)
                    .map_err(io::Error::other)?;
                Encoder::Lzma(liblzma::write::XzEncoder::new_stream(out, stream))
            }
        })
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

/// The xz encoder: preset 6, CRC64 checks (as `xz` writes), blocks of
/// `block_size` bytes (0: liblzma's default), on `threads` threads or as
/// many as [`XZ_MEMORY`] allows.
fn xz_stream(threads: u32, block_size: u64) -> io::Result<liblzma::stream::Stream> {
    let mut builder = liblzma::stream::MtStreamBuilder::new();
    builder
        .preset(XZ_PRESET)
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

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    fn compressed(method: Compression, data: &[u8], threads: u32) -> Vec<u8> {
        let mut e = Encoder::new(method, Vec::new(), threads).unwrap();
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn each_method_round_trips_and_is_recognized() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        for (method, magic) in [
            (Compression::Gzip, &[0x1f, 0x8b][..]),
            (Compression::Xz, b"\xfd7zXZ\0"),
            (Compression::Zstd, &[0x28, 0xb5, 0x2f, 0xfd]),
        ] {
            let c = compressed(method, &data, 2);
            assert!(c.starts_with(magic), "{method:?}");
            let mut back = Vec::new();
            crate::package::decoder(&c, method)
                .unwrap()
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "{method:?}");
        }
        assert_eq!(compressed(Compression::None, &data, 1), data);
    }

    #[test]
    fn the_same_bytes_on_any_number_of_threads() {
        // Blocks of 1 MiB (the program's are 24 MiB), so that threads have
        // several to share.
        let data: Vec<u8> = (0..3u32 << 20)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0] & 0x0f)
            .collect();
        let xz = |threads| {
            let s = xz_stream(threads, 1 << 20).unwrap();
            let mut e = liblzma::write::XzEncoder::new_stream(Vec::new(), s);
            e.write_all(&data).unwrap();
            e.finish().unwrap()
        };
        assert_eq!(xz(1), xz(3));
        for method in [Compression::Gzip, Compression::Zstd] {
            assert_eq!(
                compressed(method, &data[..1 << 20], 1),
                compressed(method, &data[..1 << 20], 4)
            );
        }
    }
}
