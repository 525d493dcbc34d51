//! A conda package's inner tar archives compressed again as they came:
//! a `.conda`'s two with zstd, a `.tar.bz2` with bzip2.
//!
//! A bzip2 stream says its block size in its header (`BZh1` to `BZh9`:
//! 100 to 900 kB), which is kept. A zstd frame does not say the level it
//! was made at, so [`ZSTD_LEVEL`] is used: 19, what conda-build and
//! conda-package-handling write by default. zstd runs on its own worker
//! threads, whose output does not depend on how many there are (at least
//! one), so the same package gives the same bytes on any machine.

use std::io::{self, Write};

/// The zstd level a `.conda`'s tars are written at: conda-build's and
/// `cph create`'s default.
pub(crate) const ZSTD_LEVEL: i32 = 19;

/// The bzip2 block size (in units of 100 kB, 1 to 9) a stream's header
/// gives: `BZh` then the digit.
pub(crate) fn bzip2_level(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [b'B', b'Z', b'h', d @ b'1'..=b'9', ..] => Some(u32::from(d - b'0')),
        _ => None,
    }
}

/// A writer compressing what it is given into `W`.
pub(crate) enum Packer<W: Write> {
    /// zstd at [`ZSTD_LEVEL`].
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// bzip2, at a block size.
    Bzip2(bzip2::write::BzEncoder<W>),
}

impl<W: Write> Packer<W> {
    /// zstd at [`ZSTD_LEVEL`] into `out`, on `threads` worker threads (at
    /// least one: the output is then the same for any number).
    pub(crate) fn zstd(out: W, threads: u32) -> io::Result<Packer<W>> {
        let mut e = zstd::stream::write::Encoder::new(out, ZSTD_LEVEL)?;
        e.multithread(threads.max(1))?;
        Ok(Packer::Zstd(e))
    }

    /// bzip2 in blocks of `level` × 100 kB into `out`.
    pub(crate) fn bzip2(out: W, level: u32) -> Packer<W> {
        Packer::Bzip2(bzip2::write::BzEncoder::new(
            out,
            bzip2::Compression::new(level.clamp(1, 9)),
        ))
    }

    /// Ends the compressed stream; the writer.
    pub(crate) fn finish(self) -> io::Result<W> {
        match self {
            Packer::Zstd(e) => e.finish(),
            Packer::Bzip2(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for Packer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Packer::Zstd(e) => e.write(buf),
            Packer::Bzip2(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Packer::Zstd(e) => e.flush(),
            Packer::Bzip2(e) => e.flush(),
        }
    }
}
