//! The types a scan reports and is asked with: [`Options`] and its
//! [`Mode`], the [`Container`]s and [`Image`]s found, the [`Problem`]s met
//! and the [`Limit`] that stopped a scan; the walk fills them in, and every
//! operation on reports reads them.

use std::fmt;

use serde::Serialize;

use super::Unread;
use super::kinds::{Content, Digest, HashAlgo, Offload, StoredHash};

/// How images are found in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Section headers and archive members where the file has them, a raw
    /// scan of the whole file otherwise.
    #[default]
    Auto,
    /// Only section headers and archive members; never a raw scan (a file
    /// that is not an object or archive is still read when it starts with a
    /// container magic).
    Sections,
    /// A raw scan of the whole file, ignoring its structure.
    Raw,
}

/// The default of [`Options::max_images`]: ten times the 200,000 entries
/// of the largest fatbins seen, about 200 MiB of report at most.
pub(crate) const DEFAULT_MAX_IMAGES: usize = 500_000;

/// The most decompressed bytes a scan holds in memory at once: compressed
/// data that cannot be streamed (see [`Limit::Whole`]) and declares more
/// stops the scan. Everything else is streamed, whatever its size.
pub(crate) const MAX_WHOLE: u64 = 128 << 20;

/// The default of [`Options::max_containers`].
pub(crate) const DEFAULT_MAX_CONTAINERS: usize = 200_000;

/// A decompression budget for a file of `size` bytes, where none is
/// given: 1024 times its size, at least 128 MiB and at most 16 GiB. Real
/// device code compresses 3 to 20 times, so real files never reach it,
/// while a small crafted file can never make more than 128 MiB of
/// decompression (which some containers need in memory).
pub fn default_max_uncompressed(size: u64) -> u64 {
    crate::limits::uncompressed_for(size)
}

/// What to do, and the bounds. Start from [`Options::default`] and set
/// fields: more may be added.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// How images are found.
    pub mode: Mode,
    /// How many containers may nest (a file's own container is level 1).
    pub max_depth: u32,
    /// Bytes all decompression of one file may produce together (every
    /// stream at every depth counts; a second pass over the same stream,
    /// for a visitor, does not count again). Past it the scan stops
    /// ([`Report::stopped`](super::Report::stopped)).
    pub max_uncompressed: u64,
    /// Images one file may hold, at every depth together. Past it the scan
    /// stops ([`Report::stopped`](super::Report::stopped)).
    pub max_images: usize,
    /// Containers one file may hold, at every depth together (fatbin
    /// wrappers included). Past it the scan stops ([`Report::stopped`](super::Report::stopped)).
    pub max_containers: usize,
    /// Decompress every compressed container and compressed CUDA fatbin
    /// entry to its end and check every stored hash: whatever fails is a
    /// [`Problem`] of kind [`ProblemKind::Damage`].
    pub verify: bool,
    /// Hash every image whose bytes are available, as its loader sees it:
    /// decompressed (compressed CUDA fatbin entries are decompressed for
    /// it).
    pub hash: Option<HashAlgo>,
    /// Report raw-scan candidates that turned out not to be containers
    /// (they are always reported inside sections that should hold
    /// containers).
    pub report_rejects: bool,
    /// Threads that decode a CUDA fatbin's compressed entries together
    /// (1 or 0: the calling thread alone). The report is the same
    /// whatever the number; a [`Visit`](super::Visit)'s sinks are then written from
    /// those threads.
    pub threads: usize,
    /// Decode compressed PTX entries of CUDA fatbins to measure their text
    /// (up to the first NUL, what `cuobjdump -xptx` writes): their
    /// [`Image::uncompressed_size`]. On by default; without it, and
    /// without [`verify`](Options::verify), a hash or a visitor that wants
    /// the entry, a compressed PTX entry is not decoded and its
    /// uncompressed size is the one its header declares (`prune`, which
    /// copies entries as stored, needs no more).
    pub ptx_text: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mode: Mode::Auto,
            max_depth: 8,
            max_uncompressed: crate::limits::MAX_UNCOMPRESSED,
            max_images: DEFAULT_MAX_IMAGES,
            max_containers: DEFAULT_MAX_CONTAINERS,
            verify: false,
            hash: None,
            report_rejects: false,
            threads: 1,
            ptx_text: true,
        }
    }
}

/// The kind of a container. Serializes as its [name](ContainerKind::name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContainerKind {
    /// An OffloadBinary (`10 FF 10 AD`), versions 1–3.
    OffloadBinary,
    /// A binary clang offload bundle.
    Bundle,
    /// A text clang offload bundle.
    TextBundle,
    /// The `__CLANG_OFFLOAD_BUNDLE__<ID>` sections of a bundled host object.
    ObjectBundle,
    /// A compressed bundle (CCOB), versions 1–3.
    Ccob,
    /// A CUDA fatbin container.
    CudaFatbin,
    /// A CUDA or HIP fatbin wrapper (holds no images; points at a fatbin).
    FatbinWrapper,
    /// A whole file (or archive member) that is itself one device image:
    /// a cubin, an AMDGPU code object, PTX text, SPIR-V, or bitcode for a
    /// GPU. It holds that one image, from its first byte to its last.
    ImageFile,
}

impl ContainerKind {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            ContainerKind::OffloadBinary => "offload-binary",
            ContainerKind::Bundle => "bundle",
            ContainerKind::TextBundle => "text-bundle",
            ContainerKind::ObjectBundle => "object-bundle",
            ContainerKind::Ccob => "ccob",
            ContainerKind::CudaFatbin => "cuda-fatbin",
            ContainerKind::FatbinWrapper => "fatbin-wrapper",
            ContainerKind::ImageFile => "image-file",
        }
    }
}

impl fmt::Display for ContainerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for ContainerKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a container lies in. Serializes as `{"image": n}` or
/// `{"container": n}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Parent {
    /// The bytes of this image.
    Image(usize),
    /// The decompressed contents of this (CCOB or compressed OffloadBinary)
    /// container.
    Container(usize),
}

/// How a container is compressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Compression {
    /// `zstd` or `zlib`.
    pub method: String,
    /// Bytes of compressed data (the header excluded).
    pub compressed_size: u64,
    /// Bytes it decompresses to, as declared.
    pub uncompressed_size: u64,
    /// The stored hash (CCOB: the first 8 bytes of the MD5 of the contents,
    /// displayed as `0x`-prefixed LE64, as LLVM prints it).
    pub stored_hash: Option<StoredHash>,
    /// Whether the contents were decompressed to their end (streamed or
    /// whole).
    pub decompressed: bool,
    /// Whether the stored hash matches the contents (when decompressed).
    pub hash_ok: Option<bool>,
}

/// A fatbin wrapper's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct WrapperInfo {
    /// `cuda`, `hip` or `hipk` (rocm-kpack: device code moved out).
    pub flavor: &'static str,
    /// The magic.
    pub magic: u32,
    /// The version field.
    pub version: u32,
    /// The file offset its data pointer resolves to, if it does (for an
    /// archive member, in the archive, as [`Container::offset`] is; for a
    /// thin archive's member, in the member's file).
    pub target: Option<u64>,
    /// The container found at that offset, if any.
    pub target_container: Option<usize>,
}

/// One container found in the file. Serializes as an element of
/// `containers` in the `inspect --json` schema ([`JsonDocument`](super::JsonDocument)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Container {
    /// Its index in [`Report::containers`](super::Report::containers).
    pub id: usize,
    /// Its kind.
    pub kind: ContainerKind,
    /// Its format version, where the format has one.
    pub version: Option<u32>,
    /// What it lies in (`None`: the file, a section or an archive member).
    pub parent: Option<Parent>,
    /// The archive member it lies in (`lib.a(x.o)`; nested archives as
    /// `outer(inner)`).
    pub member: Option<String>,
    /// The section it lies in.
    pub section: Option<String>,
    /// Its offset in the file, when it is not inside decompressed data.
    pub offset: Option<u64>,
    /// Its offset in what it lies in: its parent's bytes, else its section,
    /// member or file.
    pub relative_offset: u64,
    /// Bytes it occupies.
    pub size: u64,
    /// How many images it holds directly.
    pub images: usize,
    /// For compressed containers.
    pub compression: Option<Compression>,
    /// For fatbin wrappers.
    pub wrapper: Option<WrapperInfo>,
}

/// One device image (or bundle entry). Serializes as an element of
/// `images` in the `inspect --json` schema ([`JsonDocument`](super::JsonDocument)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Image {
    /// Its index in [`Report::images`](super::Report::images).
    pub id: usize,
    /// The container it is an entry of.
    pub container: usize,
    /// Its position in that container.
    pub index: usize,
    /// The bundle-entry ID, for bundle entries.
    pub bundle_id: Option<String>,
    /// Offload kind (a bundle ID's `hipv4` is HIP).
    pub offload_kind: Offload,
    /// What the bytes are: the kind its container declares, or, for bundle
    /// entries, what the bytes show (`None` when they were not read).
    pub image_kind: Option<Content>,
    /// Target triple (without a trailing `-`).
    pub triple: String,
    /// Processor (`gfx90a`, `sm_80`), without features.
    pub arch: String,
    /// Target ID: the processor and its features (`gfx90a:xnack+`).
    pub target_id: String,
    /// The features of the target ID (`xnack+`).
    pub features: Vec<String>,
    /// For a CUDA fatbin entry, the architecture its code is built for as
    /// the compilers' `-arch` names it, with `sm_`: `sm_90`, `sm_90a`
    /// (arch-specific), `sm_100f` (family). [`Image::arch`] is
    /// `cuobjdump`'s name, the same but for a family cubin, which
    /// `cuobjdump` calls `sm_100`. `None` for other images.
    pub cuda_arch: Option<String>,
    /// Other metadata, in file order (OffloadBinary strings other than
    /// `triple` and `arch`; fatbin entry name and code version). Serialized
    /// as `{"key": …, "value": …}` objects.
    #[serde(serialize_with = "super::json::key_values")]
    pub strings: Vec<(String, String)>,
    /// The section it lies in.
    pub section: Option<String>,
    /// The archive member it lies in.
    pub member: Option<String>,
    /// Its offset in the file, when it is not inside decompressed data.
    pub offset: Option<u64>,
    /// Its offset in its container.
    pub relative_offset: u64,
    /// Its size in bytes: what lies at its offset, and what `extract`
    /// writes unless the image is itself compressed. A CUDA fatbin's PTX
    /// entry is its text, as `cuobjdump -xptx` writes it: the bytes before
    /// the first NUL (the NUL that ends the text and the padding after it
    /// are left out, of the size, the hash and the bytes a [`Visit`](super::Visit) gets).
    pub size: u64,
    /// For an image that is itself compressed (CUDA fatbin entries, LZ4 or
    /// zstd): the size it decompresses to, as its header declares; for PTX,
    /// the size of its text (up to the first NUL) once decompressed, which
    /// a scan always does for compressed PTX entries (the declared size
    /// when that fails). Its hash, and the bytes a [`Visit`](super::Visit) gets, are of
    /// the decompressed image.
    pub uncompressed_size: Option<u64>,
    /// Whether it lies inside compressed data.
    pub in_compressed: bool,
    /// Its content hash, when asked for and the bytes were available.
    pub hash: Option<Digest>,
    /// The container found inside its bytes, if any.
    pub nested: Option<usize>,
    /// For an entry whose bytes overlap an earlier entry's of the same
    /// container (damage, reported as a [`Problem`]): that entry's index.
    /// Such an entry is not read (no hash, no containers inside, never
    /// handed to a [`Visit`](super::Visit)) and counts nowhere.
    pub overlaps: Option<usize>,
}

impl Image {
    /// What reports name its target by: its target ID, or, for an image
    /// that has none, its triple (SYCL's `spir64`, a bare SPIR-V file's
    /// `spirv`).
    pub(crate) fn target_or_triple(&self) -> &str {
        if self.target_id.is_empty() {
            &self.triple
        } else {
            &self.target_id
        }
    }

    /// The architecture its code is built for: [`Image::cuda_arch`] where
    /// there is one (a family cubin's `sm_100f`), else [`Image::arch`].
    pub fn code_arch(&self) -> &str {
        self.cuda_arch.as_deref().unwrap_or(&self.arch)
    }

    /// Whether some container was found inside it (its bytes are counted
    /// again in that container's images).
    pub fn is_leaf(&self) -> bool {
        self.nested.is_none()
    }

    /// Whether its bytes were read: not an entry that overlaps an earlier
    /// one ([`Image::overlaps`]).
    pub fn is_read(&self) -> bool {
        self.overlaps.is_none()
    }
}

/// Something wrong found during the scan. Never fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Problem {
    /// Where, in the file (when it is not inside decompressed data).
    pub offset: Option<u64>,
    /// The section, if any.
    pub section: Option<String>,
    /// The archive member, if any.
    pub member: Option<String>,
    /// The container it concerns, if any.
    pub container: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// Damaged data, or a raw-scan candidate that was no container.
    pub kind: ProblemKind,
    /// What the bytes it concerns lie in, when that is not the file, a
    /// section or an archive member (the `inspect --json` document leaves
    /// it out).
    #[serde(skip)]
    pub within: Option<Parent>,
    /// The headers of the file (or archive member) it concerns cannot be
    /// believed (a PE image's or COFF object's tables lie outside it):
    /// every image found in it lies in damaged data.
    #[serde(skip)]
    pub(crate) whole_file: bool,
}

/// What a [`Problem`] is. Serializes as `damage` or `rejected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// Something that should be a container, or hold one, is damaged or
    /// cannot be read (a malformed container, overlapping entries,
    /// compressed data that does not decompress, a hash that does not
    /// match, a thin archive's member that cannot be read).
    Damage,
    /// A raw-scan candidate that is no container
    /// ([`Options::report_rejects`]): noise, not damage.
    Rejected,
}

/// A limit of [`Options`] that stopped a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// [`Options::max_images`].
    Images(usize),
    /// [`Options::max_containers`].
    Containers(usize),
    /// Compressed data that is only read whole (contents that are not a
    /// binary bundle, images that hold containers of their own, a
    /// compressed OffloadBinary whose tables lie past its first 16 MiB)
    /// declaring more than 128 MiB: what it declares.
    Whole(u64),
    /// [`Options::max_uncompressed`]: the bytes a stream declared, and
    /// what was left of the budget.
    Uncompressed {
        /// The whole budget.
        limit: u64,
        /// What the stream that did not fit declared.
        declared: u64,
    },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Images(n) => write!(f, "it holds more than {n} images (--max-images)"),
            Limit::Containers(n) => {
                write!(f, "it holds more than {n} containers (--max-containers)")
            }
            Limit::Whole(n) => write!(
                f,
                "compressed data that can only be read whole would need {n} bytes in memory \
                 (the scan holds at most {MAX_WHOLE} at once)"
            ),
            Limit::Uncompressed { limit, declared } => write!(
                f,
                "its compressed data would decompress to more than {limit} bytes in all \
                 (--max-uncompressed; the stream that did not fit declares {declared})"
            ),
        }
    }
}

/// What an image the scan stopped before handing over could not be read
/// for: `the scan stopped: ` and the limit.
impl From<Limit> for Unread {
    fn from(limit: Limit) -> Unread {
        Unread::new(format!("the scan stopped: {limit}"))
    }
}

/// An image made up to stand for code of `triple` and `target_id` (its
/// processor and features split off), offload kind `offload` and image
/// kind `content`, every other field empty: what a rule is judged
/// against when there is no image to read (a per-GPU file known by its
/// name), and the unit tests' image.
pub(crate) fn stand_in_image(
    triple: &str,
    target_id: &str,
    offload: Offload,
    content: Option<Content>,
) -> Image {
    let mut parts = target_id.split(':');
    Image {
        id: 0,
        container: 0,
        index: 0,
        bundle_id: None,
        offload_kind: offload,
        image_kind: content,
        triple: triple.into(),
        arch: parts.next().unwrap_or_default().into(),
        target_id: target_id.into(),
        features: parts.map(str::to_string).collect(),
        cuda_arch: None,
        strings: Vec::new(),
        section: None,
        member: None,
        offset: None,
        relative_offset: 0,
        size: 1,
        uncompressed_size: None,
        in_compressed: false,
        hash: None,
        nested: None,
        overlaps: None,
    }
}
