//! The host-side "wrapper" object: an ELF relocatable that carries device
//! images and registers them with the offloading runtime at program start,
//! written directly (what `llvm-offload-wrapper` + `llc -relocation-model=pic`
//! produce with LLVM 22, without LLVM). For x86-64 and ARM64 Windows hosts
//! (`-windows-msvc`, MinGW's `-windows-gnu`) the object is COFF, as llc
//! writes it there; the private `coff` module has its layout.
//!
//! For `--kind=openmp` and the default ABI ([`Abi::Llvm`], LLVM 20–22
//! runtimes), with N inputs (docs/formats/wrapper-objects.md):
//!
//! | section | type, flags, align | contents |
//! |---|---|---|
//! | `.text` | PROGBITS AX 4 | empty |
//! | `.text.startup` | PROGBITS AX 16 | `.omp_offloading.descriptor_reg` at 0, `.omp_offloading.descriptor_unreg` at the next 16 |
//! | `llvm_offload_entries` | PROGBITS A 8 | `__dummy.llvm_offload_entries` (0 bytes), so the bounds exist |
//! | `.llvm.offloading` | `SHT_LLVM_OFFLOADING` (0x6fff4c0b) A 8 | each input file unchanged (`.omp_offloading.device_image`, `.1`, …), 8-aligned |
//! | `.data.rel.ro` | PROGBITS WA 16 | N × `__tgt_device_image` (32 bytes), then `__tgt_bin_desc` (32 bytes) |
//! | `.init_array.101` | INIT_ARRAY WA 8 | pointer to the constructor |
//! | `.note.GNU-stack` | PROGBITS, no flags | empty: the stack is not executable |
//! | `.eh_frame` | unwind, A 8 | one CIE, one FDE per function |
//!
//! `__tgt_device_image` = {ImageStart, ImageEnd, EntriesBegin, EntriesEnd};
//! `__tgt_bin_desc` = {i32 NumDeviceImages, 4 bytes padding, DeviceImages,
//! HostEntriesBegin, HostEntriesEnd}. ImageStart/End point at the device
//! image *inside* the input when the input is an OffloadBinary (its first
//! entry), else at the whole input. The entry bounds are the linker-defined,
//! hidden `__start_llvm_offload_entries` / `__stop_llvm_offload_entries`.
//! The constructor calls `__tgt_register_lib(&desc)` and then
//! `atexit(unreg)`; `unreg` calls `__tgt_unregister_lib(&desc)`.
//!
//! [`Abi::Legacy`] (LLVM ≤ 19 runtimes, §7) takes the bounds of
//! `omp_offloading_entries` (32-byte entries), defines a global hidden
//! `__dummy.omp_offloading.entry` there, registers from `.init_array.1` and
//! unregisters from `.fini_array.1`. [`Abi::Rocm`] is the legacy ABI plus, per
//! image, its target ID in `.offload_arch_list` and a `__tgt_image_info`
//! passed to `__tgt_register_image_info` before `__tgt_register_lib` (§7.3).
//!
//! `--kind=cuda` and `--kind=hip` (§5) embed their one input unchanged as
//! `.fatbin_image` (`.nv_fatbin` / `.hip_fatbin`, 16-aligned unless tiny), point a
//! `__fatBinC_Wrapper_t`-shaped `.fatbin_wrapper` at it, keep the handle in
//! `.bss`, and register from `.init_array.101`: register the fatbin, walk the
//! host entries between the `llvm_offload_entries` bounds registering each
//! kernel, variable and managed variable of the kind (and, for HIP, surface
//! and texture), end the registration (CUDA), and `atexit` the
//! unregistration. That code does not depend on the input, so it is one
//! fixed sequence per CPU (`arch::Cpu::fatbin_code`).
//!
//! The file is written as llc lays it out (see the private `relocatable` module): for the same
//! inputs it is byte-identical to `llvm-offload-wrapper` + `llc
//! -relocation-model=pic`, except that by default an image section of 1 MiB
//! or more starts at a multiple of 64 KiB in the file ([`Options::llc_layout`]
//! turns that off). One other difference: llc puts an OpenMP image of exactly
//! 4, 8, 16 or 32 bytes, or one whose only zero byte is its last, in a
//! mergeable `.llvm.offloading` section of its own (flags `AM` / `AMS`),
//! which a linker may merge with equal constants; every image here stays in
//! the one plain section (real OffloadBinaries are never like that). Image
//! bytes are never copied: the object is described as a [`Layout`] whose
//! image pieces the caller copies file to file.
//!
//! # Examples
//!
//! The object that registers a CUDA fatbin with the CUDA runtime, for an
//! x86-64 host (link it into the host program); [`layout`] describes the
//! same object without copying the fatbin, for large ones:
//!
//! ```
//! use offload_kit::wrap::{self, Abi, Image, Kind, Options};
//!
//! let fatbin = b"a CUDA fatbin".to_vec();
//! let opts = Options {
//!     kind: Kind::Cuda,
//!     abi: Abi::Llvm,
//!     triple: "x86_64-unknown-linux-gnu".into(),
//!     llc_layout: true,
//!     relocatable: false,
//! };
//! let object = wrap::to_vec(&opts, &[Image::raw(&fatbin)])?;
//! assert_eq!(&object[..4], b"\x7fELF");
//! // An unknown host is an error of its own kind.
//! let arm = Options { triple: "armv7-apple-ios".into(), ..opts };
//! let e = wrap::to_vec(&arm, &[Image::raw(&fatbin)]).unwrap_err();
//! assert!(matches!(e.kind(), offload_kit::ErrorKind::UnsupportedTriple { .. }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arch;
mod coff;
mod eh_frame;
mod fatbin;
mod merge;
mod openmp;
mod relocatable;
mod sycl;

use std::borrow::Cow;
use std::ops::Range;

use object::elf;

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::llvm::jam_crc::JamCrc;
use crate::num::len64;
use crate::offload_binary::{self, Limits};
use arch::{CpuInfo, Fatbin};
use relocatable::{Place, Reloc, Relocatable, SectionId, SymbolId};

pub(crate) use crate::offload_binary::container::SHT_LLVM_OFFLOADING;
pub use sycl::{SyclImage, sycl_layout};

/// Size of `__tgt_device_image`, `__tgt_bin_desc` and `__tgt_image_info` on
/// LP64 targets.
const STRUCT_SIZE: u64 = 32;

/// Alignment of each image in `.llvm.offloading`.
const IMAGE_ALIGN: u64 = 8;

/// Alignment of the CUDA/HIP fatbin section: llc's for an array of more
/// than 16 bytes (a smaller one gets its bytes' preferred alignment).
const FATBIN_ALIGN: u64 = 16;

/// The fatbin section's alignment for a fatbin of `len` bytes.
fn fatbin_align(cpu: &CpuInfo, len: u64) -> u64 {
    byte_array_align(cpu, len)
}

/// llc's alignment for an internal constant byte array of `len` bytes
/// without an explicit alignment (a fatbin, a ROCm target ID): 16 for more
/// than 16 bytes, else the data layout's preferred alignment for `i8`.
fn byte_array_align(cpu: &CpuInfo, len: u64) -> u64 {
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
    pub triple: String,
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
    /// What the writer needs of this input ([`layout_shapes`]).
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
/// into the layout ([`Layout::splice`]), so the input is never written out
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

/// Whether objects are written for `triple` as a Windows host (COFF).
pub(crate) fn is_coff_host(triple: &str) -> bool {
    matches!(coff::host(triple), Ok(Some(_)))
}

/// Whether the object for `triple` is COFF, whose section symbols carry
/// checksums of the inputs ([`InputShape::crc`]). An unsupported Windows
/// triple counts as COFF: its error comes when the object is laid out.
pub(crate) fn needs_checksums(triple: &str) -> bool {
    !matches!(coff::host(triple), Ok(None))
}

fn align_up(x: u64, a: u64) -> Result<u64> {
    x.checked_next_multiple_of(a)
        .ok_or_else(|| Error::too_large("the wrapper object"))
}

/// Writes the wrapper object for `images` (in memory; for tests and small
/// images — large ones go through [`layout`]).
pub fn to_vec(opts: &Options, images: &[Image<'_>]) -> Result<Vec<u8>> {
    let layout = layout(opts, images)?;
    let mut out = Vec::new();
    let bytes: Vec<&[u8]> = images.iter().map(|i| i.bytes).collect();
    layout.write_to(&mut out, &bytes)?;
    Ok(out)
}

/// Describes the wrapper object for `images`: everything but the image
/// bytes as built pieces, and [`Piece::Image`](crate::layout::Piece::Image)`(i)` where input `i` goes.
pub fn layout(opts: &Options, images: &[Image<'_>]) -> Result<Layout> {
    let checksums = needs_checksums(&opts.triple);
    let shapes: Vec<InputShape> = images
        .iter()
        .map(|i| {
            let shape = i.shape();
            if checksums {
                let mut crc = JamCrc::new();
                crc.update(i.bytes);
                shape.with_crc(crc)
            } else {
                shape
            }
        })
        .collect();
    layout_shapes(opts, &shapes)
}

/// [`layout`] for inputs known by their [`InputShape`] alone:
/// [`Piece::Image`](crate::layout::Piece::Image)`(i)` is where input `i`
/// goes.
pub(crate) fn layout_shapes(opts: &Options, images: &[InputShape]) -> Result<Layout> {
    if let Some(host) = coff::host(&opts.triple)? {
        if images.is_empty() {
            return Err(Error::usage("no input images"));
        }
        opts.check()?;
        return coff::layout(host, opts, images);
    }
    let cpu = arch::for_triple(&opts.triple)?;
    let os = HostOs::of(&opts.triple);
    if images.is_empty() {
        return Err(Error::usage("no input images"));
    }
    let fatbin = match opts.kind {
        Kind::OpenMp => None,
        Kind::Cuda => Some(Fatbin::Cuda),
        Kind::Hip => Some(Fatbin::Hip),
    };
    opts.check()?;
    if let Some(which) = fatbin {
        let [image] = images else {
            return Err(Error::usage(
                "CUDA / HIP offloading uses a single fatbinary or offload bundle",
            ));
        };
        let len = image.size;
        let file_align = if len >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
            IMAGE_FILE_ALIGN
        } else {
            fatbin_align(cpu, len)
        };
        return fatbin::build(which, cpu, os, len, file_align)?.write();
    }
    // Where each input goes in `.llvm.offloading`.
    let placement = openmp::place(cpu, images)?;
    let file_align = if placement.end >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
        IMAGE_FILE_ALIGN
    } else {
        IMAGE_ALIGN
    };
    openmp::build(
        opts.abi,
        opts.relocatable,
        cpu,
        os,
        images,
        placement,
        file_align,
    )?
    .write()
}

/// What the host's OS changes in the object, as LLVM decides it: `EI_OSABI`
/// (`MCELFObjectTargetWriter::getOSABI`), whether the object carries
/// `.note.GNU-stack` (every ELF OS but Solaris), and whether `.eh_frame` is
/// writable (Solaris, on every CPU but x86-64).
#[derive(Debug, Clone, Copy)]
struct HostOs {
    os_abi: elf::OsAbi,
    stack_note: bool,
    solaris: bool,
}

impl HostOs {
    fn of(triple: &str) -> HostOs {
        use crate::llvm::triple::{Os, Triple};
        let os = Triple::parse(triple).os();
        let os_abi = match os {
            Os::FreeBsd | Os::Ps4 => elf::ELFOSABI_FREEBSD,
            Os::OpenBsd => elf::ELFOSABI_OPENBSD,
            Os::Solaris => elf::ELFOSABI_SOLARIS,
            Os::HermitCore => elf::ELFOSABI_STANDALONE,
            _ => elf::ELFOSABI_NONE,
        };
        HostOs {
            os_abi,
            stack_note: os != Os::Solaris,
            solaris: os == Os::Solaris,
        }
    }
}

/// Names and placement that differ between the ABIs.
struct Flavour {
    /// The section of the images.
    images: &'static str,
    /// STT_FILE symbol (LLVM's module id).
    file: &'static [u8],
    /// Section of the host entry table, whose bounds the linker defines.
    entries: &'static str,
    /// The zero-size object defined in `entries`.
    dummy: &'static [u8],
    /// Whether that object is global hidden (legacy) or local.
    dummy_global: bool,
    /// Section of the constructor pointer.
    ctor: &'static [u8],
    /// Section of the destructor pointer; `None`: `atexit` from the ctor.
    dtor: Option<&'static [u8]>,
    /// Whether to emit `__tgt_image_info` and `.offload_arch_list`.
    image_info: bool,
}

impl Flavour {
    fn of(abi: Abi) -> Flavour {
        let legacy = Flavour {
            images: crate::offload_binary::container::SECTION,
            file: b"offload.wrapper.object",
            entries: "omp_offloading_entries",
            dummy: b"__dummy.omp_offloading.entry",
            dummy_global: true,
            ctor: b".init_array.1",
            dtor: Some(b".fini_array.1"),
            image_info: false,
        };
        match abi {
            Abi::Llvm => Flavour {
                images: crate::offload_binary::container::SECTION,
                file: b"offload.wrapper.module",
                entries: "llvm_offload_entries",
                dummy: b"__dummy.llvm_offload_entries",
                dummy_global: false,
                ctor: b".init_array.101",
                dtor: None,
                image_info: false,
            },
            Abi::Legacy => legacy,
            Abi::Rocm => Flavour {
                image_info: true,
                ..legacy
            },
        }
    }
}

fn local_info(kind: elf::SymbolType) -> (elf::SymbolInfo, elf::SymbolOther) {
    (
        elf::SymbolInfo::new(elf::STB_LOCAL, kind),
        elf::SymbolOther::from(elf::STV_DEFAULT),
    )
}

/// A local `STT_FUNC` or `STT_OBJECT` defined in `section`; value and size
/// may be set later.
fn local(
    obj: &mut Relocatable,
    name: &[u8],
    section: SectionId,
    value: u64,
    size: u64,
    st_type: elf::SymbolType,
) -> SymbolId {
    let (info, other) = local_info(st_type);
    obj.add_symbol(name, info, other, Place::Section(section), value, size)
}

/// A local `STT_FUNC` defined in `section`, with the CPU's `st_other`
/// (the ELFv2 local entry offset on powerpc64le).
fn function(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    name: &[u8],
    section: SectionId,
    value: u64,
    size: u64,
) -> SymbolId {
    let info = elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_FUNC);
    let other = elf::SymbolOther(elf::STV_DEFAULT.0 | cpu.function_other);
    obj.add_symbol(name, info, other, Place::Section(section), value, size)
}

/// An undefined global, NOTYPE, with default or hidden visibility.
fn undefined(obj: &mut Relocatable, name: &[u8], hidden: bool) -> SymbolId {
    let vis = if hidden {
        elf::STV_HIDDEN
    } else {
        elf::STV_DEFAULT
    };
    obj.add_symbol(
        name,
        elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_NOTYPE),
        elf::SymbolOther::from(vis),
        Place::Undefined,
        0,
        0,
    )
}

/// A new object for `cpu` on `os` with the first sections LLVM writes:
/// `.text` (empty) and `.text.startup`, which it returns.
fn new_object(cpu: &CpuInfo, os: HostOs) -> (Relocatable, SectionId) {
    let mut obj = Relocatable::new(cpu.machine, cpu.e_flags, cpu.endian);
    obj.set_os_abi(os.os_abi);
    let ax = elf::SHF_ALLOC | elf::SHF_EXECINSTR;
    // 4, or the code's alignment if smaller (2 with RISC-V's compressed
    // instructions), as llc aligns the empty `.text`.
    obj.add_section(b".text", elf::SHT_PROGBITS, ax, cpu.code_align.min(4));
    let startup = obj.add_section(b".text.startup", elf::SHT_PROGBITS, ax, cpu.code_align);
    (obj, startup)
}

/// The last sections LLVM writes: `.note.GNU-stack` (where the OS has it),
/// the CPU's attributes section (riscv64: `.riscv.attributes`) and
/// `.eh_frame` for the functions `fdes` of the code section whose section
/// symbol is `code` (or their anchors); then, on CPUs with mapping
/// symbols, a `$d` for each of `data` (data sections without symbols of
/// their own, in section order), for the attributes and for `.eh_frame`,
/// listed with the other local symbols.
fn finish_object(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    os: HostOs,
    code: SymbolId,
    fdes: &[eh_frame::Fde<'_>],
    data: &[SectionId],
) -> Result<()> {
    if os.stack_note {
        obj.add_section(
            b".note.GNU-stack",
            elf::SHT_PROGBITS,
            elf::SectionFlags(0),
            1,
        );
    }
    let attributes = cpu.code.attributes().map(|(name, sh_type, bytes)| {
        let id = obj.add_section(name, sh_type, elf::SectionFlags(0), 1);
        obj.set_bytes(id, bytes);
        id
    });
    // LLVM's ELF object file info: Solaris wants `.eh_frame` writable,
    // except on x86-64 (whose section has its own type).
    let writable = os.solaris && cpu.arch != crate::llvm::triple::Arch::X86_64;
    let eh = eh_frame::add(obj, cpu, code, fdes, writable)?;
    if cpu.mapping_symbols {
        for &s in data.iter().chain(&attributes).chain([&eh]) {
            mapping(obj, b"$d", s);
        }
    }
    Ok(())
}

/// An ELF mapping symbol (`$x` code, `$d` data) at the start of `section`.
fn mapping(obj: &mut Relocatable, name: &[u8], section: SectionId) {
    obj.add_symbol(
        name,
        elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_NOTYPE),
        elf::SymbolOther::from(elf::STV_DEFAULT),
        Place::Section(section),
        0,
        0,
    );
}

fn reloc(
    obj: &mut Relocatable,
    section: SectionId,
    offset: u64,
    symbol: SymbolId,
    addend: i64,
    r_type: elf::RelocationType,
) {
    obj.add_reloc(
        section,
        Reloc {
            offset,
            symbol,
            r_type,
            addend,
        },
    );
}

fn write_error(detail: &str) -> Error {
    Error::write("ELF object", detail)
}

#[cfg(test)]
mod tests;
