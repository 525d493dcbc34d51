//! A conda package's inner tar archives compressed again as they came:
//! a `.conda`'s two with zstd, a `.tar.bz2` with bzip2, by the package
//! layer's compressors ([`Encoder`]) at the parameters picked here.
//!
//! A bzip2 stream says its block size in its header (`BZh1` to `BZh9`:
//! 100 to 900 kB), which is kept. A zstd frame does not say the level it
//! was made at, so [`ZSTD_LEVEL`] is used: 19, what conda-build and
//! conda-package-handling write by default. zstd runs on its own worker
//! threads, whose output does not depend on how many there are (at least
//! one), so the same package gives the same bytes on any machine.

use std::io::{self, Write};

use crate::package::compression::encode::Encoder;

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

/// zstd at [`ZSTD_LEVEL`] into `out`, on `threads` worker threads (at
/// least one: the output is then the same for any number).
pub(crate) fn zstd<W: Write>(out: W, threads: u32) -> io::Result<Encoder<W>> {
    Encoder::zstd(out, ZSTD_LEVEL, threads.max(1))
}

/// bzip2 in blocks of `level` × 100 kB into `out`.
pub(crate) fn bzip2<W: Write>(out: W, level: u32) -> Encoder<W> {
    Encoder::bzip2(out, level)
}
