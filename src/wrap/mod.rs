//! The host-side "wrapper" object: an ELF relocatable that carries device
//! images and registers them with the offloading runtime at program start,
//! written directly (what `llvm-offload-wrapper` + `llc -relocation-model=pic`
//! produce with LLVM 22, without LLVM).
//!
//! For `--kind=openmp` and the default ABI ([`Abi::Llvm`], LLVM 20–22
//! runtimes), with N inputs (wrapper-abi.md §4 and Appendix A):
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
//! fixed sequence per CPU ([`arch::Cpu::fatbin_code`]).
//!
//! The file is written as llc lays it out (see [`relocatable`]): for the same
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

mod arch;
mod eh_frame;
mod relocatable;

use std::borrow::Cow;
use std::ops::Range;

use object::elf;

use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::offload_binary::{self, Limits};
use arch::{Arg, Call, CpuInfo, Fatbin, Target};
use relocatable::{Place, Reloc, Relocatable, SectionId, SymbolId};

/// `sh_type` of sections holding offloading data (LLVM `SHT_LLVM_OFFLOADING`).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

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
    if len > 16 {
        FATBIN_ALIGN
    } else {
        cpu.byte_array_align
    }
}

/// `__fatBinC_Wrapper_t` magic numbers (wrapper-abi.md §5.1).
const CUDA_FATBIN_MAGIC: u32 = 0x4662_43b1;
const HIP_FATBIN_MAGIC: u32 = 0x4849_5046;

/// Where in the file a large image section starts: a multiple of this, so
/// that the first image (copied from offset 0 of its file) lies at the same
/// offset modulo 64 KiB in both files (later ones only by chance). The kernel then copies whole runs of
/// pages instead of splitting each page in two, about 15 % faster on ext4;
/// and filesystems that share blocks between files (XFS, btrfs) can share
/// the image's blocks instead of copying them. Only the file offset
/// changes; `sh_addralign` stays [`IMAGE_ALIGN`].
pub const IMAGE_FILE_ALIGN: u64 = 64 << 10;

/// Image sections at least this large get [`IMAGE_FILE_ALIGN`]; smaller
/// objects stay compact.
pub const IMAGE_FILE_ALIGN_FROM: u64 = 1 << 20;

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
    /// Host target triple (decides the CPU; must be an ELF target).
    pub triple: String,
    /// Place the image section right after the sections before it, as llc
    /// does, whatever its size: the object is then byte-identical to
    /// `llvm-offload-wrapper` + `llc -relocation-model=pic` for every
    /// input. Otherwise an image section of [`IMAGE_FILE_ALIGN_FROM`] bytes
    /// or more starts at a multiple of [`IMAGE_FILE_ALIGN`] in the file
    /// (faster to write, and shareable by reflink-capable filesystems).
    pub llc_layout: bool,
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
        let mut found = Vec::new();
        offload_binary::read_binary(bytes, 0, &Limits::default(), &mut found)?;
        let Some(first) = found.into_iter().next() else {
            return Err(Error::invalid("OffloadBinary", "it holds no image"));
        };
        let Cow::Borrowed(inner) = first.image else {
            return Err(Error::usage(
                "the OffloadBinary is compressed; the runtime needs the image \
                 uncompressed in place (unpack it first)",
            ));
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

fn len64(b: &[u8]) -> u64 {
    u64::try_from(b.len()).unwrap_or(u64::MAX)
}

fn align_up(x: u64, a: u64) -> Result<u64> {
    x.checked_next_multiple_of(a)
        .ok_or_else(|| Error::usage("the wrapper object would be larger than 2^64 bytes"))
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
/// bytes as built pieces, and [`Piece::Image`]`(i)` where input `i` goes.
pub fn layout(opts: &Options, images: &[Image<'_>]) -> Result<Layout> {
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
        let len = len64(image.bytes);
        let file_align = if len >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
            IMAGE_FILE_ALIGN
        } else {
            fatbin_align(cpu, len)
        };
        return build_fatbin(which, cpu, os, len, file_align)?.write();
    }
    // Where each input goes in `.llvm.offloading`.
    let mut at = 0u64;
    let mut placed = Vec::with_capacity(images.len());
    for img in images {
        let off = align_up(at, IMAGE_ALIGN)?;
        let len = len64(img.bytes);
        placed.push((off, len));
        at = off
            .checked_add(len)
            .ok_or_else(|| Error::usage("the images are larger than 2^64 bytes"))?;
    }
    let file_align = if at >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout {
        IMAGE_FILE_ALIGN
    } else {
        IMAGE_ALIGN
    };
    build(opts.abi, cpu, os, images, placed, file_align)?.write()
}

/// What the host's OS changes in the object, as LLVM decides it: `EI_OSABI`
/// (`MCELFObjectTargetWriter::getOSABI`) and whether the object carries
/// `.note.GNU-stack` (every ELF OS but Solaris).
#[derive(Debug, Clone, Copy)]
struct HostOs {
    os_abi: elf::OsAbi,
    stack_note: bool,
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
        }
    }
}

/// Names and placement that differ between the ABIs.
struct Flavour {
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
    obj.add_section(b".text", elf::SHT_PROGBITS, ax, 4);
    let startup = obj.add_section(b".text.startup", elf::SHT_PROGBITS, ax, cpu.code_align);
    (obj, startup)
}

/// The last sections LLVM writes: `.note.GNU-stack` (where the OS has it)
/// and `.eh_frame` for the functions `fdes` of the code section whose
/// section symbol is `code`; then, on CPUs with mapping symbols, a `$d` for
/// each of `data` (data sections without symbols of their own, in section
/// order) and for `.eh_frame`, listed with the other local symbols.
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
    let eh = eh_frame::add(obj, cpu, code, fdes)?;
    if cpu.mapping_symbols {
        for &s in data.iter().chain([&eh]) {
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

/// Builds the object. `placed[i]` is (offset, length) of input `i` in the
/// image section, which starts at a multiple of `file_align` in the file.
fn build(
    abi: Abi,
    cpu: &'static CpuInfo,
    os: HostOs,
    images: &[Image<'_>],
    placed: Vec<(u64, u64)>,
    file_align: u64,
) -> Result<Relocatable> {
    use arch::addend;
    let fl = Flavour::of(abi);
    let n = u64::try_from(images.len()).map_err(|_| Error::usage("too many images"))?;
    let n_i32 = i32::try_from(n).map_err(|_| Error::usage("too many images"))?;

    // Sections, in LLVM's order.
    let (mut obj, startup) = new_object(cpu, os);
    let a = elf::SHF_ALLOC;
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let progbits = elf::SHT_PROGBITS;
    let entries = obj.add_section(fl.entries.as_bytes(), progbits, a, 8);
    let offloading = obj.add_section(
        b".llvm.offloading",
        elf::SectionType(SHT_LLVM_OFFLOADING),
        a,
        IMAGE_ALIGN,
    );
    obj.set_images(offloading, placed.clone(), file_align);
    let data = obj.add_section(b".data.rel.ro", progbits, wa, cpu.data_align);
    let arch_list = fl
        .image_info
        .then(|| obj.add_section(b".offload_arch_list", progbits, a, 1));
    let ctor = obj.add_section(fl.ctor, elf::SHT_INIT_ARRAY, wa, 8);
    let dtor = fl
        .dtor
        .map(|name| obj.add_section(name, elf::SHT_FINI_ARRAY, wa, 8));

    // `.data.rel.ro`: the image array, the descriptor, then (ROCm) the
    // image infos.
    let desc_off = STRUCT_SIZE * n;
    let info_off = desc_off + STRUCT_SIZE;
    let data_len = if fl.image_info {
        info_off + STRUCT_SIZE * n
    } else {
        info_off
    };

    // Symbols, in the order LLVM's object writer lists them.
    obj.add_file_symbol(fl.file);
    let startup_sym = obj.section_symbol(startup);
    let reg = local(
        &mut obj,
        b".omp_offloading.descriptor_reg",
        startup,
        0,
        0,
        elf::STT_FUNC,
    );
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(&mut obj, b"$x", startup);
    }
    let desc = local(
        &mut obj,
        b".omp_offloading.descriptor",
        data,
        desc_off,
        STRUCT_SIZE,
        elf::STT_OBJECT,
    );
    let unreg = local(
        &mut obj,
        b".omp_offloading.descriptor_unreg",
        startup,
        0,
        0,
        elf::STT_FUNC,
    );
    if !fl.dummy_global {
        local(&mut obj, fl.dummy, entries, 0, 0, elf::STT_OBJECT);
    }
    let mut offloading_sym = None;
    let mut data_mapped = false;
    for (i, &(off, len)) in placed.iter().enumerate() {
        let name = match i {
            0 => b".omp_offloading.device_image".to_vec(),
            _ => format!(".omp_offloading.device_image.{i}").into_bytes(),
        };
        local(&mut obj, &name, offloading, off, len, elf::STT_OBJECT);
        if offloading_sym.is_none() {
            offloading_sym = Some(obj.section_symbol(offloading));
        }
        // LLVM marks data where the first byte of it is emitted.
        if maps && !data_mapped && len > 0 {
            mapping(&mut obj, b"$d", offloading);
            data_mapped = true;
        }
    }
    let offloading_sym = offloading_sym.unwrap_or_else(|| obj.section_symbol(offloading));
    local(
        &mut obj,
        b".omp_offloading.device_images",
        data,
        0,
        desc_off,
        elf::STT_OBJECT,
    );
    let data_sym = obj.section_symbol(data);
    if maps {
        mapping(&mut obj, b"$d", data);
    }

    // ROCm: the target IDs and the image infos.
    let mut infos = Vec::new();
    if let Some(list) = arch_list {
        let mut strings = Vec::new();
        let mut arch_syms = Vec::new();
        for (i, img) in images.iter().enumerate() {
            let Some(arch) = &img.arch else {
                return Err(Error::usage(format!(
                    "image {i} has no offload arch (--abi=rocm needs one per image)"
                )));
            };
            let off = len64(&strings);
            strings.extend_from_slice(arch.as_bytes());
            strings.push(0);
            let size = len64(arch.as_bytes()) + 1;
            let name = format!("__offload_arch_{i}");
            arch_syms.push((
                local(&mut obj, name.as_bytes(), list, off, size, elf::STT_OBJECT),
                off,
            ));
        }
        obj.set_bytes(list, strings);
        let list_sym = obj.section_symbol(list);
        if maps {
            mapping(&mut obj, b"$d", list);
        }
        for (i, (_, arch_off)) in arch_syms.iter().enumerate() {
            let i64_ = u64::try_from(i).map_err(|_| Error::usage("too many images"))?;
            let off = info_off + STRUCT_SIZE * i64_;
            let name = format!(".offload_image_info_{i}");
            let sym = local(
                &mut obj,
                name.as_bytes(),
                data,
                off,
                STRUCT_SIZE,
                elf::STT_OBJECT,
            );
            infos.push((sym, off, list_sym, *arch_off));
        }
    }

    // Globals.
    let register_info = fl
        .image_info
        .then(|| undefined(&mut obj, b"__tgt_register_image_info", false));
    let register = undefined(&mut obj, b"__tgt_register_lib", false);
    let atexit = fl
        .dtor
        .is_none()
        .then(|| undefined(&mut obj, b"atexit", false));
    let unregister = undefined(&mut obj, b"__tgt_unregister_lib", false);
    if fl.dummy_global {
        obj.add_symbol(
            fl.dummy,
            elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_OBJECT),
            elf::SymbolOther::from(elf::STV_HIDDEN),
            Place::Section(entries),
            0,
            0,
        );
    }
    let start = undefined(&mut obj, format!("__start_{}", fl.entries).as_bytes(), true);
    let stop = undefined(&mut obj, format!("__stop_{}", fl.entries).as_bytes(), true);

    // `.data.rel.ro` contents and relocations.
    let mut bytes =
        vec![0u8; usize::try_from(data_len).map_err(|_| Error::usage("too many images"))?];
    let at = |off: u64| usize::try_from(off).unwrap_or(usize::MAX);
    let abs = cpu.abs64;
    for (i, (img, &(off, _))) in images.iter().zip(&placed).enumerate() {
        let base = STRUCT_SIZE * u64::try_from(i).map_err(|_| Error::usage("too many images"))?;
        reloc(
            &mut obj,
            data,
            base,
            offloading_sym,
            addend(off + img.image.start)?,
            abs,
        );
        reloc(
            &mut obj,
            data,
            base + 8,
            offloading_sym,
            addend(off + img.image.end)?,
            abs,
        );
        reloc(&mut obj, data, base + 16, start, 0, abs);
        reloc(&mut obj, data, base + 24, stop, 0, abs);
    }
    bytes[at(desc_off)..at(desc_off) + 4].copy_from_slice(&n_i32.to_le_bytes());
    reloc(&mut obj, data, desc_off + 8, data_sym, 0, abs);
    reloc(&mut obj, data, desc_off + 16, start, 0, abs);
    reloc(&mut obj, data, desc_off + 24, stop, 0, abs);
    for (i, &(_, off, list_sym, arch_off)) in infos.iter().enumerate() {
        let number = i32::try_from(i).map_err(|_| Error::usage("too many images"))?;
        // __tgt_image_info: version 1, image number, image count, padding,
        // offload_arch, compile_opts (null).
        bytes[at(off)..at(off) + 4].copy_from_slice(&1i32.to_le_bytes());
        bytes[at(off) + 4..at(off) + 8].copy_from_slice(&number.to_le_bytes());
        bytes[at(off) + 8..at(off) + 12].copy_from_slice(&n_i32.to_le_bytes());
        reloc(&mut obj, data, off + 16, list_sym, addend(arch_off)?, abs);
    }
    obj.set_bytes(data, bytes);

    // The constructor and destructor.
    let desc_arg = Arg::Data {
        symbol: desc,
        section: data_sym,
        offset: desc_off,
    };
    let mut reg_calls: Vec<Call> = infos
        .iter()
        .filter_map(|&(sym, off, _, _)| {
            Some(Call {
                callee: register_info?,
                arg: Arg::Data {
                    symbol: sym,
                    section: data_sym,
                    offset: off,
                },
            })
        })
        .collect();
    reg_calls.push(Call {
        callee: register,
        arg: desc_arg,
    });
    let unreg_calls = [Call {
        callee: unregister,
        arg: desc_arg,
    }];
    // The constructor's size does not depend on where `unreg` lands, so
    // encode it once to learn its size, then again with the real offset.
    let with_atexit = |unreg_off: u64| {
        let mut calls = reg_calls.clone();
        if let Some(atexit) = atexit {
            calls.push(Call {
                callee: atexit,
                arg: Arg::Code {
                    section: startup_sym,
                    offset: unreg_off,
                },
            });
        }
        calls
    };
    let probe = cpu.code.function(0, &with_atexit(0))?;
    let unreg_off = align_up(len64(&probe.code), cpu.code_align)?;
    let reg_fn = cpu.code.function(0, &with_atexit(unreg_off))?;
    let unreg_fn = cpu.code.function(unreg_off, &unreg_calls)?;
    debug_assert_eq!(reg_fn.code.len(), probe.code.len());

    let mut code = reg_fn.code.clone();
    let pad = usize::try_from(unreg_off - len64(&code)).unwrap_or(0);
    code.extend(cpu.code.padding(pad));
    code.extend_from_slice(&unreg_fn.code);
    obj.set_bytes(startup, code);
    for (f, base) in [(&reg_fn, 0), (&unreg_fn, unreg_off)] {
        for r in &f.relocs {
            reloc(
                &mut obj,
                startup,
                base + r.offset,
                r.symbol,
                r.addend,
                r.r_type,
            );
        }
    }
    for (sym, off, len) in [
        (reg, 0, len64(&reg_fn.code)),
        (unreg, unreg_off, len64(&unreg_fn.code)),
    ] {
        obj.set_extent(sym, off, len);
    }

    // Constructor (and destructor) pointers.
    obj.set_bytes(ctor, vec![0; 8]);
    reloc(&mut obj, ctor, 0, startup_sym, 0, abs);
    if let Some(dtor) = dtor {
        obj.set_bytes(dtor, vec![0; 8]);
        reloc(&mut obj, dtor, 0, startup_sym, addend(unreg_off)?, abs);
    }

    let data: Vec<SectionId> = [Some(ctor), dtor].into_iter().flatten().collect();
    finish_object(
        &mut obj,
        cpu,
        os,
        startup_sym,
        &[
            eh_frame::Fde {
                offset: 0,
                len: len64(&reg_fn.code),
                cfi: &reg_fn.cfi,
            },
            eh_frame::Fde {
                offset: unreg_off,
                len: len64(&unreg_fn.code),
                cfi: &unreg_fn.cfi,
            },
        ],
        &data,
    )?;
    Ok(obj)
}

/// Builds the CUDA or HIP object for one fatbin of `len` bytes, whose
/// section starts at a multiple of `file_align` in the file (wrapper-abi.md
/// §5): the fatbin, its wrapper struct, the handle, and the constructor,
/// the `atexit` handler and the entry loop, with everything in llc's order.
fn build_fatbin(
    which: Fatbin,
    cpu: &'static CpuInfo,
    os: HostOs,
    len: u64,
    file_align: u64,
) -> Result<Relocatable> {
    let code = cpu.code.fatbin_code(which)?;
    let (p, image_name, wrapper_name, magic): (&str, &[u8], &[u8], u32) = match which {
        Fatbin::Cuda => (
            "cuda",
            b".nv_fatbin",
            b".nvFatBinSegment",
            CUDA_FATBIN_MAGIC,
        ),
        Fatbin::Hip => (
            "hip",
            b".hip_fatbin",
            b".hipFatBinSegment",
            HIP_FATBIN_MAGIC,
        ),
    };
    let (mut obj, startup) = new_object(cpu, os);
    let a = elf::SHF_ALLOC;
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let progbits = elf::SHT_PROGBITS;
    obj.set_bytes(startup, code.code.clone());
    let rodata = (!code.jump_table.is_empty()).then(|| obj.add_section(b".rodata", progbits, a, 4));
    let entries = obj.add_section(b"llvm_offload_entries", progbits, a, 8);
    let image = obj.add_section(image_name, progbits, a, fatbin_align(cpu, len));
    obj.set_images(image, vec![(0, len)], file_align);
    let wrapper = obj.add_section(wrapper_name, progbits, wa, 8);
    let mut wrapper_bytes = Vec::with_capacity(24);
    wrapper_bytes.extend_from_slice(&magic.to_le_bytes());
    wrapper_bytes.extend_from_slice(&1u32.to_le_bytes());
    wrapper_bytes.extend_from_slice(&[0; 16]);
    obj.set_bytes(wrapper, wrapper_bytes);
    let bss = obj.add_section(b".bss", elf::SHT_NOBITS, wa, 8);
    obj.set_nobits(bss, 8);
    let ctor = obj.add_section(b".init_array.101", elf::SHT_INIT_ARRAY, wa, 8);
    obj.set_bytes(ctor, vec![0; 8]);

    // Symbols, in the order LLVM's object writer lists them.
    obj.add_file_symbol(b"offload.wrapper.module");
    let startup_sym = obj.section_symbol(startup);
    let func = |obj: &mut Relocatable, name: &str, span: &arch::Span| {
        local(
            obj,
            name.as_bytes(),
            startup,
            span.offset,
            span.len,
            elf::STT_FUNC,
        )
    };
    func(&mut obj, &format!(".{p}.fatbin_reg"), &code.reg);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(&mut obj, b"$x", startup);
    }
    local(
        &mut obj,
        b".fatbin_wrapper",
        wrapper,
        0,
        24,
        elf::STT_OBJECT,
    );
    let handle_name = format!(".{p}.binary_handle");
    local(&mut obj, handle_name.as_bytes(), bss, 0, 8, elf::STT_OBJECT);
    func(&mut obj, &format!(".{p}.globals_reg"), &code.globals);
    func(&mut obj, &format!(".{p}.fatbin_unreg"), &code.unreg);
    let rodata_sym = rodata.map(|r| obj.section_symbol(r));
    local(
        &mut obj,
        b"__dummy.llvm_offload_entries",
        entries,
        0,
        0,
        elf::STT_OBJECT,
    );
    local(&mut obj, b".fatbin_image", image, 0, len, elf::STT_OBJECT);
    let section_sym = |obj: &mut Relocatable, s: SectionId| {
        let sym = obj.section_symbol(s);
        if maps {
            mapping(obj, b"$d", s);
        }
        sym
    };
    // (An empty fatbin emits no data, so it gets no `$d`.)
    let image_sym = if len > 0 {
        section_sym(&mut obj, image)
    } else {
        obj.section_symbol(image)
    };
    let wrapper_sym = section_sym(&mut obj, wrapper);
    let bss_sym = section_sym(&mut obj, bss);
    // The undefined globals, in the order the code first refers to them.
    let mut globals: Vec<(Target, SymbolId)> = Vec::new();
    for r in &code.relocs {
        let (name, hidden) = match r.target {
            Target::Runtime(name) => (name.to_string(), false),
            Target::EntriesStart => ("__start_llvm_offload_entries".to_string(), true),
            Target::EntriesStop => ("__stop_llvm_offload_entries".to_string(), true),
            Target::Wrapper
            | Target::Handle
            | Target::JumpTable
            | Target::Code
            | Target::Symbol(_) => continue,
        };
        if !globals.iter().any(|(t, _)| *t == r.target) {
            let sym = undefined(&mut obj, name.as_bytes(), hidden);
            globals.push((r.target, sym));
        }
    }
    for r in &code.relocs {
        let symbol = match r.target {
            Target::Wrapper => wrapper_sym,
            Target::Handle => bss_sym,
            Target::Code => startup_sym,
            Target::Symbol(s) => s,
            Target::JumpTable => rodata_sym
                .ok_or_else(|| write_error("the code refers to a jump table it does not have"))?,
            t => globals
                .iter()
                .find(|(g, _)| *g == t)
                .map(|&(_, s)| s)
                .ok_or_else(|| write_error("a symbol of the code is missing"))?,
        };
        reloc(&mut obj, startup, r.offset, symbol, r.addend, r.r_type);
    }

    // The jump table: 32-bit offsets of the cases from the table's start.
    if let Some(table) = rodata {
        let mut at = 0u64;
        for &case in &code.jump_table {
            reloc(
                &mut obj,
                table,
                at,
                startup_sym,
                arch::addend(case + at)?,
                cpu.eh_pcrel32,
            );
            at += 4;
        }
        obj.set_bytes(table, vec![0; usize::try_from(at).unwrap_or(0)]);
    }
    let abs = cpu.abs64;
    reloc(&mut obj, wrapper, 8, image_sym, 0, abs);
    reloc(
        &mut obj,
        ctor,
        0,
        startup_sym,
        arch::addend(code.reg.offset)?,
        abs,
    );

    fn fde(s: &arch::Span) -> eh_frame::Fde<'_> {
        eh_frame::Fde {
            offset: s.offset,
            len: s.len,
            cfi: &s.cfi,
        }
    }
    finish_object(
        &mut obj,
        cpu,
        os,
        startup_sym,
        &[fde(&code.reg), fde(&code.unreg), fde(&code.globals)],
        &[ctor],
    )?;
    Ok(obj)
}

fn write_error(detail: &str) -> Error {
    Error::write("ELF object", detail)
}

#[cfg(test)]
mod tests;
