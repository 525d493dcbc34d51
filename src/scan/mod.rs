//! Finding every device image inside any file: executables, shared
//! libraries, relocatable objects, static archives, bare bundles and
//! OffloadBinaries, and files whose section headers were stripped.
//!
//! [`scan`] takes the bytes of a whole file (a mapped file, typically) and
//! returns a [`Report`]: the [`Container`]s found, nested to any depth
//! (an OffloadBinary holding a CUDA fatbin, a CCOB holding a bundle, …), the
//! [`Image`]s inside them, and the [`Problem`]s met on the way. Nothing here
//! does I/O, and nothing fails as a whole: a malformed or false candidate
//! becomes a problem (or is skipped), and the scan goes on.
//!
//! # How images are found
//!
//! 1. **Section headers first** ([`Mode::Auto`], [`Mode::Sections`]): an
//!    object file's section table names the sections that hold device code
//!    (see `sections.rs`), so only their headers are read; an archive is
//!    walked member by member.
//! 2. **Raw scan** ([`Mode::Raw`], and [`Mode::Auto`] for a file with no
//!    section table or that is not an object file): the whole file is
//!    searched for the magics of the four container formats with
//!    `memchr::memmem`; every candidate is validated by the
//!    format's own reader, and the scan skips to the end of each container
//!    it accepts, so the inside of a large container is never searched.
//! 3. **Recursion**: a container's images that start with a container magic
//!    are walked in turn, up to [`Options::max_depth`] levels.
//!
//! A file (or archive member) that is itself one device image — an ELF
//! file for `EM_CUDA` (a cubin) or `EM_AMDGPU` (a code object), PTX text,
//! SPIR-V, or LLVM bitcode whose triple is a GPU's — is told from its
//! header instead ([`Mode::Auto`] and [`Mode::Sections`]): it is reported
//! as a container of kind [`ContainerKind::ImageFile`] holding that one
//! image, so that every operation on reports treats it as any image in
//! a container. Such bytes inside another container are that container's
//! image, never a container of their own.
//!
//! # Memory and decompression
//!
//! Image bytes are borrowed from the input, never copied. Compressed data
//! is decompressed within [`Options::max_uncompressed`] (a budget for the
//! whole file) and streamed, not held: each image's first bytes (its kind)
//! and hash are taken as it passes, and the images a visitor wants go to
//! its [`Visit::sink`] as they come (or, for a visitor without sinks, to
//! [`Visit::image`] from a buffer of that image alone); a stream that
//! fails hands each sink back through [`Visit::streamed`] with the
//! failure, so that nothing of it is kept. Memory stays at the
//! decompressor's window and a few fixed buffers.
//!
//! - A CCOB is decompressed only as far as its bundle header (the entry
//!   IDs and sizes come first) unless [`Options::verify`] or
//!   [`Options::hash`] ask for the contents, or a [`Visit`] wants one of
//!   its images. Then a binary bundle inside is streamed, its stored hash
//!   checked over the stream. Other contents are decompressed whole.
//!   Images of a CCOB that was only partly decompressed have no hash and
//!   no nested containers.
//! - A compressed (version 3) OffloadBinary is streamed once to check it
//!   and take its images' first bytes and hashes, and once more when a
//!   visitor wants images. Its tables are read from the first bytes of the
//!   inflated binary (where LLVM writes them); one whose tables lie past
//!   the first 16 MiB is decompressed whole.
//! - A compressed CUDA fatbin entry (LZ4 or zstd) is decompressed, on its
//!   own, only when [`Options::verify`], [`Options::hash`] or a [`Visit`]
//!   asks for its bytes, or when it is PTX (whose text's size only its
//!   bytes tell), and streamed once through both; one that does not
//!   decompress is a [`Problem`], and, when a visitor wanted it, also its
//!   failure ([`Visit::streamed`] or [`Visit::unavailable`]).
//!
//! Under [`Options::verify`] every compressed thing is decoded to its end
//! and every stored hash checked (a CCOB's; the decoders check the
//! checksums a zlib or zstd stream carries): whatever fails is a
//! [`Problem`] of kind [`ProblemKind::Damage`], and a CCOB that fails its
//! hash hands none of its images to a visitor.
//!
//! The containers inside an image are found from its bytes in memory: a
//! CCOB or compressed OffloadBinary with an image that starts with a
//! container's magic (a bundle inside a bundle, an OffloadBinary inside an
//! OffloadBinary) is decompressed whole instead, within the same budget,
//! and its containers walked from there.
//!
//! # Operations on reports
//!
//! [`select()`] picks images by triple, architecture and kind (what
//! `extract` writes), [`check()`] judges reports against [`Requirements`]
//! (rules matched as the loaders match code to devices: [`Rule`]) and
//! returns an [`Outcome`], and [`size()`] sums a report's device code
//! per target and kind into a [`SizeReport`]. None of them prints.
//!
//! # JSON
//!
//! The report types implement [`serde::Serialize`]: a [`Report`] serializes
//! as one file of the `inspect --json` document, and [`JsonDocument`] is the
//! whole document (schema [`JSON_SCHEMA`]).
//!
//! # Content hashes
//!
//! [`HashAlgo::Xxh3_128`] (fast, ~10 GB/s; `xxhsum -H2` prints the same
//! hex) or [`HashAlgo::Md5`] (what `md5sum` prints, for comparing with
//! files on disk). Hashes are only computed on request: hashing reads every
//! byte, while listing reads headers.
//!
//! # Examples
//!
//! Scan a file's bytes (here an OffloadBinary made on the spot; a mapped
//! executable in practice), then ask CI's question: is there code for
//! gfx90a?
//!
//! ```
//! use offload_kit::offload_binary::{self, ImageKind, ImageSpec, OffloadKind, Version};
//! use offload_kit::scan::{self, Options, Requirements, Rule};
//!
//! let code = b"gfx90a code".to_vec();
//! let spec = ImageSpec {
//!     image_kind: ImageKind::IMG_Object,
//!     offload_kind: OffloadKind::OFK_HIP,
//!     strings: vec![
//!         (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
//!         (b"arch".to_vec(), b"gfx90a:xnack+".to_vec()),
//!     ],
//!     size: code.len() as u64,
//!     ..ImageSpec::default()
//! };
//! let mut file = Vec::new();
//! offload_binary::layout(&[spec], Version::V1)?.write_to(&mut file, &[&code])?;
//!
//! let report = scan::scan(&file, &Options::default());
//! assert!(report.problems.is_empty());
//! let image = &report.images[0];
//! assert_eq!((image.arch.as_str(), image.target_id.as_str()), ("gfx90a", "gfx90a:xnack+"));
//!
//! let mut req = Requirements::default();
//! req.require.push(Rule::parse("gfx90a")?);
//! req.forbid.push(Rule::parse("sm_80")?);
//! let outcome = scan::check([Ok(&report)], &req);
//! // gfx90a:xnack+ code does not run on a gfx90a with xnack off.
//! assert!(!outcome.passed());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod check;
pub(crate) mod json;
pub(crate) mod kinds;
pub(crate) mod magic;
mod model;
mod report;
pub(crate) mod rule;
mod sections;
pub(crate) mod select;
pub(crate) mod size;
pub(crate) mod sort;
mod tap;
mod unread;
mod visit;
mod walk;

pub use check::{Failure, Outcome, Requirements, RuleResult, Verdict, check};
pub use json::{Document as JsonDocument, File as JsonFile, SCHEMA as JSON_SCHEMA};
pub use kinds::{Content, Digest, HashAlgo, Offload, StoredHash};

pub use crate::error::unread::Unread;
pub(crate) use kinds::Hasher;
pub use model::{
    Compression, Container, ContainerKind, Image, Limit, Mode, Options, Parent, Problem,
    ProblemKind, WrapperInfo, default_max_uncompressed,
};
pub(crate) use model::{DEFAULT_MAX_CONTAINERS, DEFAULT_MAX_IMAGES, MAX_WHOLE, stand_in_image};
pub use report::Report;
pub use rule::{Coverage, Meets, Rule, RuleError};
pub use select::{Selection, select};
pub use size::{SizeReport, Tally, size};
pub use unread::{UNREAD_FORMATS, UNREAD_REACH, UnreadFormat, unread_format};
pub use visit::{ImageReader, ImageSink, NoVisit, SinkError, ThinMember, Visit};
pub(crate) use walk::{is_image_file, scan_of};
pub use walk::{scan, scan_with};

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) use model::stand_in_image as test_image;
