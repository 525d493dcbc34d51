//! Compressed offload bundles (CCOB), as `clang-offload-bundler -compress`
//! writes them and LLVM 22 reads them.
//!
//! A CCOB wraps one whole uncompressed bundle (binary or text layout). All
//! integers are little-endian:
//!
//! | field | v1 (20 B) | v2 (24 B) | v3 (32 B) |
//! |---|---|---|---|
//! | magic `"CCOB"` | 0..4 | 0..4 | 0..4 |
//! | version (u16) | 4 | 4 | 4 |
//! | method (u16): 0 zlib, 1 zstd | 6 | 6 | 6 |
//! | total size, header included | – | u32 @ 8 | u64 @ 8 |
//! | uncompressed size | u32 @ 8 | u32 @ 12 | u64 @ 16 |
//! | hash: first 8 bytes of the MD5 of the uncompressed bundle | u64 @ 12 | u64 @ 16 | u64 @ 24 |
//! | compressed data: one zlib stream, or zstd frames (LLVM writes one) | @ 20 | @ 24 | @ 32 |
//!
//! # Writing
//!
//! [`compress`] writes version 3 (LLVM 22's default) or 2, byte-identical to
//! LLVM 22 when it uses zstd, which is what Debian's LLVM does. LLVM calls
//! `ZSTD_compress2` on a context where it set exactly two parameters,
//! `ZSTD_c_enableLongDistanceMatching = 1` and `ZSTD_c_compressionLevel =
//! level` (3 by default); everything else stays at zstd's defaults: the
//! window log becomes 27 because long-distance matching is on, and is then
//! shrunk to fit the input; the frame carries the content size; no checksum;
//! one thread. This equals `zstd -<level> --long=27 --no-check`. We make the
//! same call with the same libzstd (1.5.4, linked from the system), on the
//! whole bundle in one buffer, into an output buffer of
//! `ZSTD_compressBound` bytes of which only the compressed size is
//! touched. Byte identity depends on the libzstd version: another version
//! may pick different matches, and any version decompresses the result.
//! It also needs the one call on one buffer: zstd's streaming calls copy
//! their input into a window buffer of their own, and once the input
//! passes the window (128 MiB) that buffer wraps and the frame differs.
//!
//! [`compress`] writes to any `Write + Seek` ([`compress_to_vec`] to
//! memory). Written to a file (`tools::bundler::compressed`, with the
//! `files` feature, for both bundler front ends), the CCOB goes into a mapped output of the
//! largest size it can have, with the hash from its own function, so that
//! neither the bundle nor the CCOB is kept in memory (`compress_into`).
//!
//! With [`CompressOptions::threads`] > 0 the input is cut into frames
//! (32 MiB at most, their number a multiple of the workers) that are
//! compressed independently at the same level, with long-distance
//! matching, on that many threads and written one after another. LLVM 22
//! reads such a payload (its zstd call decodes every frame in turn); it
//! is about 3 % larger than LLVM's single frame and, on two cores, about
//! 2.7 times as fast. Inputs of 1 MiB or less stay one frame, identical to
//! LLVM's. See `frames.rs`. The file writer (`compress_pieces`) does this (or zlib) from
//! the bundle's pieces where they lie, never assembling it, and tells the
//! caller which bytes it is done with.
//!
//! zlib (method 0) is only what an LLVM built without zstd writes, at zlib's
//! level 6. We write a valid zlib stream with `flate2`'s Rust backend, which
//! is not byte-identical to zlib's `compress2`.
//!
//! # Reading, and where we are stricter than LLVM 22
//!
//! LLVM 22 hands *everything* after the header to the decompressor, uses the
//! uncompressed-size field only as the output buffer size, and never checks
//! the hash. We read more carefully, and reject files LLVM would accept when
//! they can only be corrupt:
//!
//! | situation | LLVM 22 | here |
//! |---|---|---|
//! | v2/v3 total size smaller than the header, or past the end | ignored | error |
//! | bytes after the total size | decompression error (zstd) | the next CCOB, in [`decompress_all`] (zero padding is skipped); an error in [`decompress`] |
//! | uncompressed size larger than the data | accepted, output truncated | error ([`Fault::SizeMismatch`]) |
//! | uncompressed size smaller than the data | error | error (LLVM's message) |
//! | bytes after the end of a zlib stream | ignored | error |
//! | hash mismatch | only `Hashes match: No` in verbose mode | error by default; [`HashCheck::Report`] only reports it, [`HashCheck::Skip`] does not compute it (LLVM's speed; the `clang-offload-bundler` drop-in computes it only for `-verbose`, as LLVM does) |
//! | uncompressed size above the caller's limit | allocates it | error before allocating ([`Limits`](crate::Limits)) |
//!
//! Decompression never writes more than the declared size: zstd decodes into
//! a buffer of exactly the declared size and fails if it would write one byte
//! more (LLVM's own call, so its error texts are LLVM's); zlib inflates into
//! a buffer of the declared size plus one byte, and filling that last byte is
//! the error. A declared size that the compressed bytes cannot possibly
//! produce (zstd expands at most 32768:1, deflate 1032:1) is rejected before
//! anything is allocated.
//!
//! A v1 CCOB has no total size: it ends where its zstd frame ends (frames are
//! self-delimiting), or, for zlib, at the end of the data.
//!
//! # Streaming
//!
//! [`Ccob::stream_to`] (or [`Ccob::stream_from`], reading the compressed
//! bytes from a file rather than its mapping) decompresses the contents
//! chunk by chunk and writes wanted byte ranges to writers as they come:
//! memory is the decoder's window (a zstd frame's, 128 MiB for LLVM's
//! 1 GiB bundles, less for smaller ones; zlib's 32 KiB) plus a few 2 MiB
//! buffers, whatever the size. The MD5, when asked for, is computed over
//! the stream on another thread, and then every byte is decompressed and
//! must come to exactly the declared size, as above. Without the hash,
//! decompression stops after the last wanted byte, but only when the zstd
//! frame headers (walked without decoding) add up to the declared size; a
//! damaged block past that byte then goes unnoticed, where LLVM, which
//! decompresses everything, fails. When the stream fails, the payload is
//! decompressed again the whole-buffer way, only to name the fault as LLVM
//! does (so on that error path memory is the declared size, within
//! [`Limits`](crate::Limits)).
//!
//! [`Ccob::stream_parallel`] does the same on several threads: a payload of
//! several zstd frames (ours, from [`CompressOptions::threads`]) is decoded
//! a frame per worker, in one call each, and written in order while
//! another thread hashes it; memory is a few frames (32 MiB each from our
//! writer, at most 64 MiB) instead of a window. A single frame
//! (LLVM's) or zlib streams as above. See `parallel.rs`.
//!
//! [`Ccob::bundle_records`] decompresses only as far as the bundle header,
//! which tells the caller which ranges to ask for. Text and object bundles
//! inside a CCOB are read from the whole contents (their entries can only
//! be found by searching them), within [`Limits`](crate::Limits).
//!
//! Every error is an [`ErrorKind::Ccob`] carrying a [`Fault`];
//! [`Fault::llvm_message`] gives the text LLVM 22 prints for it (after
//! `error: Failed to decompress input: `).
//!
//! # Verbose reports and environment variables
//!
//! [`CompressReport`] and [`Decompressed`] carry every fact LLVM 22's
//! `-verbose` lines print (sizes, level, stored and computed hash); the
//! lines themselves, and LLVM's `OFFLOAD_BUNDLER_*` and
//! `COMPRESSED_BUNDLE_FORMAT_VERSION` environment variables, belong to the
//! `clang-offload-bundler` job (`tools::bundler::job`, crate-visible).
//!
//! # Examples
//!
//! Compress a bundle as `clang-offload-bundler -compress` does (version 3,
//! zstd level 3) and read it back, the stored hash checked:
//!
//! ```
//! use offload_kit::bundle::ccob::{self, CompressOptions, ReadOptions};
//!
//! let bundle = b"__CLANG_OFFLOAD_BUNDLE__ and the rest of a bundle".repeat(100);
//! let (compressed, report) = ccob::compress_to_vec(&bundle, &CompressOptions::default())?;
//! assert!(ccob::has_magic(&compressed));
//! assert_eq!(report.header.version, 3);
//! assert_eq!(report.header.uncompressed_size, bundle.len() as u64);
//!
//! let back = ccob::decompress(&compressed, &ReadOptions::default())?;
//! assert_eq!(back.data, bundle);
//! assert_eq!(back.hash_matches(), Some(true));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Sources: `llvm/lib/Object/OffloadBundle.cpp`,
//! `clang/lib/Driver/OffloadBundler.cpp`, `llvm/lib/Support/Compression.cpp`
//! (LLVM 22), and experiments with the installed LLVM 22.1.8 tools
//! (docs/formats/bundles.md §4).

mod frames;
mod header;
mod options;
mod parallel;
mod peek;
mod pool;
mod raw;
mod read;
mod stream;
#[cfg(test)]
mod tests;
mod write;

pub use crate::error::ccob::Fault;
pub use header::Header;
pub use options::CompressOptions;
pub use raw::{Method, has_magic};
pub use read::{Ccob, Decompressed, HashCheck, ReadOptions, decompress, decompress_all};
pub use stream::{StreamEnd, Streamed, Wanted};
pub use write::{CompressReport, compress, compress_to_vec};

// What the rest of the crate (the scanner, the command line) uses besides.
pub(crate) use header::truncated_md5;
pub(crate) use parallel::default_threads;
pub(crate) use peek::{PEEK_FLOOR, PEEK_RATIO};
pub(crate) use raw::{
    DEFAULT_VERSION, MAGIC, ZLIB_DEFAULT_LEVEL, ZSTD_DEFAULT_LEVEL, hex_hash,
    llvm_treats_as_compressed,
};
pub(crate) use stream::write_wanted;
pub(crate) use write::{BundleHasher, compress_into, compress_pieces, compressed_bound};

use crate::error::{Error, ErrorKind};

/// The CCOB fault inside `err`, if it is one.
pub(crate) fn fault(err: &Error) -> Option<&Fault> {
    match err.kind() {
        ErrorKind::Ccob { fault, .. } => Some(fault),
        _ => None,
    }
}

/// LLVM 22's message for `err` if it is a CCOB error (see
/// [`Fault::llvm_message`]).
pub(crate) fn llvm_message(err: &Error) -> Option<String> {
    fault(err).map(Fault::llvm_message)
}

impl Fault {
    /// This fault as the crate's error, at `offset` in the input.
    pub(crate) fn at(self, offset: u64) -> Error {
        ErrorKind::Ccob {
            offset,
            fault: self,
        }
        .into()
    }
}
