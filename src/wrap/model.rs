//! What the wrapper writes and from what: the options ([`Kind`], [`Abi`],
//! [`Options`]), the inputs ([`Image`], [`InputShape`]), and the sizes and
//! alignments of the objects' parts.

use std::borrow::Cow;
use std::ops::Range;

use super::arch::CpuInfo;
use crate::Limits;
use crate::error::{Error, Result};
use crate::llvm::jam_crc::JamCrc;
use crate::llvm::triple::Triple;
use crate::num::len64;
use crate::offload_binary;

/// Size of `__tgt_device_image`, `__tgt_bin_desc` and `__tgt_image_info` on
/// LP64 targets.
pub(super) const STRUCT_SIZE: u64 = 32;

/// Alignment of each image in `.llvm.offloading`.
pub(super) const IMAGE_ALIGN: u64 = 8;

/// Alignment of the CUDA/HIP fatbin section: llc's for an array of more
/// than 16 bytes (a smaller one gets its bytes' preferred alignment).
const FATBIN_ALIGN: u64 = 16;

/// The fatbin section's alignment for a fatbin of `len` bytes.
pub(super) fn fatbin_align(cpu: &CpuInfo, len: u64) -> u64 {
    byte_array_align(cpu, len)
}

/// llc's alignment for an internal constant byte array of `len` bytes
/// without an explicit alignment (a fatbin, a ROCm target ID): 16 for more
/// than 16 bytes, else the data layout's preferred alignment for `i8`.
pub(super) fn byte_array_align(cpu: &CpuInfo, len: u64) -> u64 {
    if len > 16 {
        FATBIN_ALIGN
    } else {
        cpu.byte_array_align
    }
}

/// Where in the file a large image section starts: a multiple of this, so
/// that the first image (copied from offset 0 of its file) lies at the same
/// offset modulo 64 KiB in both files (later ones only by chance). The kernel then copies whole runs of
/// pages instead of splitting each page in two, about 15 % faster on ext4;
/// and filesystems that share blocks between files (XFS, btrfs) can share
/// the image's blocks instead of copying them. Only the file offset
/// changes; `sh_addralign` stays `IMAGE_ALIGN` (8).
pub(crate) const IMAGE_FILE_ALIGN: u64 = 64 << 10;

/// Image sections at least this large get [`IMAGE_FILE_ALIGN`]; smaller
/// objects stay compact.
pub(crate) const IMAGE_FILE_ALIGN_FROM: u64 = 1 << 20;

/// The offloading model whose runtime registers the images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// OpenMP offloading (libomptarget).
    OpenMp,
    /// CUDA: one NVIDIA fatbin, registered with the CUDA runtime.
    Cuda,
    /// HIP: one offload bundle, registered with the HIP runtime.
    Hip,
}

impl Kind {
    /// Parses a `--kind` value as `llvm-offload-wrapper` spells it.
    pub fn parse(s: &str) -> Result<Kind> {
        match s {
            "openmp" => Ok(Kind::OpenMp),
            "cuda" => Ok(Kind::Cuda),
            "hip" => Ok(Kind::Hip),
            _ => Err(Error::usage(format!(
                "unknown offload kind '{s}' (expected openmp, cuda or hip)"
            ))),
        }
    }
}

/// Which runtime interface the object is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Abi {
    /// LLVM 20 and later (checked against 22): `llvm_offload_entries`,
    /// constructor priority 101, unregistration through `atexit`.
    #[default]
    Llvm,
    /// LLVM 19 and earlier: `omp_offloading_entries`, constructor and
    /// destructor of priority 1.
    Legacy,
    /// The AMD ROCm flavour of the legacy ABI, with `__tgt_image_info` and
    /// `.offload_arch_list`.
    Rocm,
}

impl Abi {
    /// Parses an `--abi` value: `llvm`, `legacy` or `rocm`.
    pub fn parse(s: &str) -> Result<Abi> {
        match s {
            "llvm" => Ok(Abi::Llvm),
            "legacy" => Ok(Abi::Legacy),
            "rocm" => Ok(Abi::Rocm),
            _ => Err(Error::usage(format!(
                "unknown ABI '{s}' (expected llvm, legacy or rocm)"
            ))),
        }
    }
}

/// What to write.
#[derive(Debug, Clone)]
pub struct Options {
    /// Offloading model.
    pub kind: Kind,
    /// Runtime interface.
    pub abi: Abi,
    /// Host target triple (decides the CPU; an ELF target, or x86-64 or
    /// ARM64 Windows for a COFF object).
    pub triple: Triple,
    /// Place the image section right after the sections before it, as llc
    /// does, whatever its size: the object is then byte-identical to
    /// `llvm-offload-wrapper` + `llc -relocation-model=pic` for every
    /// input. Otherwise an image section of 1 MiB or more starts at a
    /// multiple of 64 KiB in the file
    /// (faster to write, and shareable by reflink-capable filesystems).
    pub llc_layout: bool,
    /// For a relocatable link (`clang -r`, OpenMP only): the images go to
    /// `.llvm.offloading.relocatable`, as LLVM's wrapper puts them then
    /// (a later link does not extract them again).
    pub relocatable: bool,
}

impl Options {
    /// Checks that the options go together (the ABI choice is OpenMP's).
    pub fn check(&self) -> Result<()> {
        if self.kind != Kind::OpenMp && self.abi != Abi::Llvm {
            return Err(Error::usage(
                "--abi=legacy and --abi=rocm are only for --kind=openmp",
            ));
        }
        Ok(())
    }
}

/// One input: the bytes embedded in the object, and which of them the
/// runtime gets as the device image.
#[derive(Debug, Clone)]
pub struct Image<'data> {
    /// The whole input, embedded unchanged.
    pub bytes: &'data [u8],
    /// The device image within `bytes` (ImageStart..ImageEnd).
    pub image: Range<u64>,
    /// The target ID (`gfx90a:xnack+`), for [`Abi::Rocm`]: the `arch` string
    /// of an OffloadBinary, or set by the caller.
    pub arch: Option<String>,
}

impl<'data> Image<'data> {
    /// An input taken as it is, whatever it holds: how CUDA fatbins and HIP
    /// bundles are embedded.
    pub fn raw(bytes: &'data [u8]) -> Image<'data> {
        Image {
            bytes,
            image: 0..len64(bytes),
            arch: None,
        }
    }

    /// Reads an input as LLVM 22's wrapper does: an OffloadBinary hands its
    /// first image to the runtime; anything else is the image itself.
    /// Unlike LLVM, the OffloadBinary is checked, so a damaged one is an
    /// error instead of a wrong range.
    pub fn new(bytes: &'data [u8]) -> Result<Image<'data>> {
        let whole = Image::raw(bytes);
        if !offload_binary::has_magic(bytes) {
            return Ok(whole);
        }
        // A compressed binary is refused from its header: inflating it only
        // to refuse it would cost what it inflates to.
        if offload_binary::header_summary(bytes).is_some_and(|h| h.method.is_some()) {
            return Err(Error::unsupported(COMPRESSED));
        }
        let mut found = Vec::new();
        offload_binary::read_binary(bytes, 0, &Limits::default(), &mut found)?;
        let Some(first) = found.into_iter().next() else {
            return Err(Error::invalid("OffloadBinary", "it holds no image"));
        };
        let Cow::Borrowed(inner) = first.image else {
            return Err(Error::unsupported(COMPRESSED));
        };
        // The reader checked that the image lies within the binary.
        let start = first.binary_offset + first.image_offset;
        let arch = String::from_utf8_lossy(first.arch()).into_owned();
        Ok(Image {
            image: start..start + len64(inner),
            arch: (!arch.is_empty()).then_some(arch),
            ..whole
        })
    }
}

/// Why a compressed OffloadBinary cannot be wrapped.
const COMPRESSED: &str = "the OffloadBinary is compressed; the runtime needs the image \
     uncompressed in place (unpack it first)";

impl Image<'_> {
    /// What the writer needs of this input
    /// ([`layout_shapes`](super::layout_shapes)).
    pub(crate) fn shape(&self) -> InputShape {
        InputShape {
            size: len64(self.bytes),
            image: self.image.clone(),
            arch: self.arch.clone(),
            crc: None,
        }
    }
}

/// What the object writer needs to know of one input, without its bytes:
/// its size, where the device image lies in it, and its target ID. A
/// caller that assembles an input from pieces (an OffloadBinary header it
/// built and an image file) describes it this way and splices the pieces
/// into the layout
/// ([`Layout::splice`](crate::layout::Layout::splice)), so the input is never written out
/// on its own first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct InputShape {
    /// The input's size in bytes (all of it is embedded).
    pub size: u64,
    /// The device image within the input.
    pub image: Range<u64>,
    /// The target ID, as [`Image::arch`].
    pub arch: Option<String>,
    /// The checksum of the input's bytes, which COFF objects carry
    /// ([`InputShape::with_crc`]); unused for ELF.
    pub crc: Option<JamCrc>,
}

impl InputShape {
    /// An input of `size` bytes whose device image is `image`.
    pub fn new(size: u64, image: Range<u64>, arch: Option<String>) -> InputShape {
        InputShape {
            size,
            image,
            arch,
            crc: None,
        }
    }

    /// This shape with the checksum of the input's bytes.
    pub fn with_crc(self, crc: JamCrc) -> InputShape {
        InputShape {
            crc: Some(crc),
            ..self
        }
    }
}

pub(super) fn align_up(x: u64, a: u64) -> Result<u64> {
    x.checked_next_multiple_of(a)
        .ok_or_else(|| Error::too_large("the wrapper object"))
}
