//! The squashfs compressors, each decoding one block held whole in memory
//! into at most a given number of bytes (a block's size: 8 KiB for the
//! metadata blocks, the filesystem's block size for data), so that no
//! block inflates further whatever it says. The crates are those the other
//! package readers use (flate2, liblzma, zstd) and lz4_flex's safe block
//! decoder; LZO is decoded by [`super::lzo`]. The same decoders serve
//! backhand (which reads the filesystem's tables through [`Codec`]) and
//! this module's reading of file data.

use std::io::Read;

use backhand::BackhandError;
use backhand::compression::{CompressionAction, Compressor};
use backhand::{FilesystemCompressor, SuperBlock};

/// The largest a metadata block decompresses to.
pub(super) const METADATA_BLOCK: usize = 8192;

/// The most memory an xz block's decoder may take: squashfs's xz
/// dictionaries are at most its block size (1 MiB at most).
const XZ_MEMLIMIT: u64 = 64 << 20;

/// A compression method, by the id the superblock gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Gzip,
    Lzo,
    Xz,
    Lz4,
    Zstd,
}

impl Method {
    /// The method of the superblock's id, or why it is not read.
    pub(super) fn of(id: u16) -> Result<Method, String> {
        Ok(match id {
            1 => Method::Gzip,
            3 => Method::Lzo,
            4 => Method::Xz,
            5 => Method::Lz4,
            6 => Method::Zstd,
            2 => return Err("it is compressed with LZMA (squashfs compressor 2), which offload-kit does not read".into()),
            n => return Err(format!("it names compressor {n}, which squashfs does not define")),
        })
    }

    /// The method's name, as `mksquashfs -comp` takes it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Method::Gzip => "gzip",
            Method::Lzo => "lzo",
            Method::Xz => "xz",
            Method::Lz4 => "lz4",
            Method::Zstd => "zstd",
        }
    }

    /// Decompresses the block `input`, which must give at most `cap`
    /// bytes, into `out` (emptied first).
    pub(super) fn decompress(
        self,
        input: &[u8],
        cap: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        out.clear();
        let bounded = |r: &mut dyn Read, out: &mut Vec<u8>| -> Result<(), String> {
            let cap64 = crate::num::u64_from(cap);
            r.take(cap64 + 1)
                .read_to_end(out)
                .map_err(|e| format!("its {} data is damaged: {e}", self.name()))?;
            Ok(())
        };
        match self {
            // squashfs's "gzip" blocks are zlib streams.
            Method::Gzip => bounded(&mut flate2::read::ZlibDecoder::new(input), out)?,
            Method::Xz => {
                let stream = liblzma::stream::Stream::new_stream_decoder(XZ_MEMLIMIT, 0)
                    .map_err(|e| format!("cannot start an xz decoder: {e}"))?;
                bounded(
                    &mut liblzma::read::XzDecoder::new_stream(input, stream),
                    out,
                )?;
            }
            Method::Zstd => {
                let mut d = zstd::stream::read::Decoder::with_buffer(input)
                    .map_err(|e| format!("cannot start a zstd decoder: {e}"))?;
                d.window_log_max(20)
                    .map_err(|e| format!("cannot start a zstd decoder: {e}"))?;
                bounded(&mut d, out)?;
            }
            Method::Lz4 => {
                out.resize(cap, 0);
                let n = lz4_flex::block::decompress_into(input, out)
                    .map_err(|e| format!("its lz4 data is damaged: {e}"))?;
                out.truncate(n);
            }
            Method::Lzo => {
                *out = super::lzo::decompress(input, cap)
                    .map_err(|e| format!("its lzo data is damaged: {e}"))?;
            }
        }
        if out.len() > cap {
            return Err(format!("a block decompresses to more than its {cap} bytes"));
        }
        Ok(())
    }
}

/// The decompressor backhand reads the filesystem's tables with: the
/// methods above, each block bounded to a metadata block's 8 KiB. It
/// writes nothing.
pub(super) struct Codec;

/// The one [`Codec`] (backhand takes a `'static` reference).
pub(super) static CODEC: Codec = Codec;

impl CompressionAction for Codec {
    type Error = BackhandError;
    type Compressor = Compressor;
    type FilesystemCompressor = FilesystemCompressor;
    type SuperBlock = SuperBlock;

    fn decompress(
        &self,
        bytes: &[u8],
        out: &mut Vec<u8>,
        c: Compressor,
    ) -> Result<(), BackhandError> {
        let method = Method::of(c as u16).map_err(BackhandError::UnsupportedCompression)?;
        method
            .decompress(bytes, METADATA_BLOCK, out)
            .map_err(BackhandError::UnsupportedCompression)
    }

    fn compress(
        &self,
        _: &[u8],
        _: FilesystemCompressor,
        _: u32,
    ) -> Result<Vec<u8>, BackhandError> {
        Err(BackhandError::UnsupportedCompression(
            "offload-kit only reads squashfs".into(),
        ))
    }
}

/// What a backhand error says, in words (its `Display` says nothing
/// without its `error-strings` feature).
pub(super) fn said(e: &BackhandError) -> String {
    match e {
        BackhandError::StdIo(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "a table reaches past the end of the filesystem".into()
        }
        BackhandError::StdIo(e) => e.to_string(),
        BackhandError::UnsupportedCompression(s) => s.clone(),
        BackhandError::UnsupportedSquashfsVersion(major, minor) => {
            format!("it is squashfs version {major}.{minor}; offload-kit reads version 4.0")
        }
        BackhandError::Deku(_) => "a table or inode does not parse".into(),
        BackhandError::StringUtf8(_) | BackhandError::StrUtf8(_) => {
            "a name or link is not UTF-8".into()
        }
        BackhandError::UnexpectedInode | BackhandError::UnsupportedInode => {
            "a directory entry names an inode of the wrong kind, or a directory inside itself"
                .into()
        }
        BackhandError::InvalidIdTable | BackhandError::IdNotFoundInTable => {
            "an inode's owner is not in the id table".into()
        }
        BackhandError::InvalidFilePath | BackhandError::UndefineFileName => {
            "an entry's name is not a file name".into()
        }
        BackhandError::DuplicatedFileName => "two entries of one directory have one name".into(),
        BackhandError::TryReserveError(_) => "a table asks for more memory than there is".into(),
        _ => "its tables are damaged".into(),
    }
}
