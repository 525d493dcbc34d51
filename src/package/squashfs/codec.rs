//! The squashfs compressors, each decoding one block held whole in memory
//! into at most a given number of bytes (a block's size: 8 KiB for the
//! metadata blocks, the filesystem's block size for data), so that no
//! block inflates further whatever it says. The crates are those the other
//! package readers use (flate2, liblzma, zstd) and lz4_flex's safe block
//! decoder; LZO is decoded by [`super::lzo`]. The same decoders serve
//! backhand (which reads the filesystem's tables through [`Codec`]) and
//! this module's reading of file data. A rewrite ([`super::rewrite`])
//! compresses with the same crates ([`compress`]), LZO with the `lzokay`
//! crate: backhand's own
//! compression features stay off, since turning on its gzip would switch
//! flate2's backend for the whole program.

use std::io::Read;

use backhand::BackhandError;
use std::cell::{Cell, RefCell};

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

/// The codec backhand reads the filesystem's tables with, and writes a
/// new one with ([`super::rewrite`]): the methods above, each block
/// bounded to a metadata block's 8 KiB while the tables are read, to the
/// block size once a rewrite reads file data ([`set_cap`]); blocks
/// compressed with the crates above and LZO by `lzokay` ([`compress`]).
pub(super) struct Codec;

/// The one [`Codec`] (backhand takes a `'static` reference).
pub(super) static CODEC: Codec = Codec;

thread_local! {
    /// What one block may decompress to on this thread.
    static CAP: Cell<usize> = const { Cell::new(METADATA_BLOCK) };
    /// How a rewrite on this thread compresses.
    static TUNING: RefCell<Option<Tuning>> = const { RefCell::new(None) };
}

/// How a rewritten filesystem is compressed: as its compression options
/// say, `mksquashfs`'s defaults where it has none.
#[derive(Debug, Clone)]
pub(super) struct Tuning {
    /// The compressor.
    pub(super) method: Method,
    /// The options block (its two-byte header and its bytes) as it was,
    /// written again after the new superblock.
    pub(super) block: Option<Vec<u8>>,
    /// The options' first number: gzip's and zstd's level, xz's
    /// dictionary size.
    pub(super) first: Option<u32>,
    /// xz's branch filters (bits: x86, PowerPC, IA-64, ARM, ARM Thumb,
    /// SPARC).
    pub(super) bcj: u32,
}

/// Sets what a block decompresses to at most on this thread, and how a
/// rewrite on it compresses.
pub(super) fn set_cap(cap: usize, tuning: Option<Tuning>) {
    CAP.with(|c| c.set(cap));
    TUNING.with(|t| *t.borrow_mut() = tuning);
}

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
        let cap = CAP.with(Cell::get);
        method
            .decompress(bytes, cap, out)
            .map_err(BackhandError::UnsupportedCompression)
    }

    fn compress(
        &self,
        bytes: &[u8],
        fc: FilesystemCompressor,
        block_size: u32,
    ) -> Result<Vec<u8>, BackhandError> {
        let _ = fc;
        let tuning = TUNING.with(|t| t.borrow().clone()).ok_or_else(|| {
            BackhandError::UnsupportedCompression("no squashfs rewrite on this thread".into())
        })?;
        compress(&tuning, bytes, block_size).map_err(|e| match e.kind() {
            std::io::ErrorKind::Unsupported => BackhandError::UnsupportedCompression(e.to_string()),
            _ => BackhandError::StdIo(e),
        })
    }

    fn compression_options(
        &self,
        superblock: &mut SuperBlock,
        _: &backhand::kind::Kind,
        _: FilesystemCompressor,
    ) -> Result<Option<Vec<u8>>, BackhandError> {
        let block = TUNING.with(|t| t.borrow().as_ref().and_then(|t| t.block.clone()));
        if block.is_some() {
            superblock.flags |= OPTIONS_PRESENT;
        }
        Ok(block)
    }
}

/// The superblock flag: a compression options block follows it.
pub(super) const OPTIONS_PRESENT: u16 = 0x0400;

/// The default levels of `mksquashfs`: gzip 9, xz's preset 6, zstd 15.
const GZIP_LEVEL: u32 = 9;
const XZ_PRESET: u32 = 6;
const ZSTD_LEVEL: u32 = 15;

/// `bytes` (one block) compressed with `method` as `t` says. An xz block
/// is one xz stream with a CRC32 check (what the kernel reads): the first
/// branch filter the options name, then LZMA2 (preset 6) with their
/// dictionary (the block size without them). An LZ4 block is a raw LZ4
/// block: lz4_flex has no high-compression mode, so a filesystem made with
/// `-Xhc` is written with plain LZ4, which the same decoders read.
pub(super) fn compress(t: &Tuning, bytes: &[u8], block_size: u32) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    match t.method {
        Method::Gzip => {
            let level = t.first.unwrap_or(GZIP_LEVEL).clamp(1, 9);
            let out = Vec::with_capacity(bytes.len() / 2);
            let mut z = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(level));
            z.write_all(bytes)?;
            z.finish()
        }
        Method::Xz => {
            use liblzma::stream::{Check, Filters, LzmaOptions, Stream};
            let mut lz = LzmaOptions::new_preset(XZ_PRESET).map_err(std::io::Error::other)?;
            lz.dict_size(t.first.unwrap_or(block_size).max(4096));
            let mut filters = Filters::new();
            let each: [fn(&mut Filters) -> &mut Filters; 6] = [
                Filters::x86,
                Filters::powerpc,
                Filters::ia64,
                Filters::arm,
                Filters::arm_thumb,
                Filters::sparc,
            ];
            if let Some(add) = (0..6).find(|i| t.bcj & (1 << i) != 0) {
                each[add](&mut filters);
            }
            filters.lzma2(&lz);
            let stream = Stream::new_stream_encoder(&filters, Check::Crc32)
                .map_err(std::io::Error::other)?;
            let mut out = Vec::with_capacity(bytes.len() / 2);
            liblzma::read::XzEncoder::new_stream(bytes, stream).read_to_end(&mut out)?;
            Ok(out)
        }
        Method::Zstd => {
            let level = t.first.unwrap_or(ZSTD_LEVEL).clamp(1, 22);
            zstd::bulk::compress(bytes, i32::try_from(level).unwrap_or(3))
        }
        Method::Lz4 => Ok(lz4_flex::block::compress(bytes)),
        Method::Lzo => lzo(bytes),
    }
}

/// `bytes` as one LZO1X block (`lzokay`'s compressor, whose dictionary,
/// about 180 KiB, each thread makes once).
fn lzo(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static DICT: std::cell::RefCell<Box<lzokay::compress::Dict>> =
            std::cell::RefCell::new(lzokay::compress::Dict::new());
    }
    DICT.with_borrow_mut(|dict| lzokay::compress::compress_with_dict(bytes, dict))
        .map_err(|e| std::io::Error::other(format!("LZO: {e:?}")))
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
