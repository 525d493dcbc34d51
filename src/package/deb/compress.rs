//! A package's tar archive compressed again with the method it came in:
//! none, gzip, xz or zstd, at the levels `dpkg-deb` uses by default (gzip
//! 9, xz 6, zstd 3), or bzip2 (blocks of 900 kB) and LZMA (preset 6),
//! which `dpkg-deb` still reads. The compressors are the package layer's
//! ([`Encoder`]); this picks their parameters.
//!
//! The output depends only on the bytes compressed, never on the machine:
//! gzip's header carries no time or name, zstd runs on one thread, and
//! xz is written in blocks of a fixed size (liblzma's default for preset 6,
//! 24 MiB, as `xz -T` writes them), whose output is the same on any number
//! of threads.

use std::io::{self, Write};

use crate::package::Compression;
use crate::package::compression::encode::Encoder;

/// dpkg-deb's default gzip level.
const GZIP_LEVEL: u32 = 9;

/// dpkg-deb's default xz preset.
const XZ_PRESET: u32 = 6;

/// dpkg-deb's default zstd level.
const ZSTD_LEVEL: i32 = 3;

/// bzip2's largest blocks (900 kB), `bzip2`'s default.
const BZIP2_LEVEL: u32 = 9;

/// An encoder compressing with `method` into `out` at dpkg-deb's levels,
/// xz on up to `threads` threads.
pub(crate) fn encoder<W: Write>(
    method: Compression,
    out: W,
    threads: u32,
) -> io::Result<Encoder<W>> {
    match method {
        Compression::None => Ok(Encoder::None(out)),
        Compression::Gzip => Encoder::gzip(out, GZIP_LEVEL),
        Compression::Xz => Encoder::xz(out, XZ_PRESET, threads, 0),
        // On the caller's thread.
        Compression::Zstd => Encoder::zstd(out, ZSTD_LEVEL, 0),
        Compression::Bzip2 => Ok(Encoder::bzip2(out, BZIP2_LEVEL)),
        Compression::Lzma => Encoder::lzma(out, XZ_PRESET),
        Compression::Lz4 | Compression::Lzip => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "dpkg-deb does not write a {}-compressed data.tar",
                method.name()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;
    use crate::package::compression::encode::xz_stream;

    fn compressed(method: Compression, data: &[u8], threads: u32) -> Vec<u8> {
        let mut e = encoder(method, Vec::new(), threads).unwrap();
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
            let s = xz_stream(XZ_PRESET, threads, 1 << 20).unwrap();
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
