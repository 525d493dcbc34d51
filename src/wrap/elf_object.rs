//! What every ELF wrapper object shares: what the host's OS and the ABI
//! change ([`HostOs`], [`Flavour`]), its symbols and relocations, and its
//! first and last sections as LLVM writes them.

use object::elf;

use super::arch::CpuInfo;
use super::eh_frame;
use super::model::Abi;
use super::relocatable::{Place, Reloc, Relocatable, SectionId, SymbolId};
use crate::error::{Error, Result};

/// What the host's OS changes in the object, as LLVM decides it: `EI_OSABI`
/// (`MCELFObjectTargetWriter::getOSABI`), whether the object carries
/// `.note.GNU-stack` (every ELF OS but Solaris), and whether `.eh_frame` is
/// writable (Solaris, on every CPU but x86-64).
#[derive(Debug, Clone, Copy)]
pub(super) struct HostOs {
    os_abi: elf::OsAbi,
    stack_note: bool,
    solaris: bool,
}

impl HostOs {
    pub(super) fn of(triple: &str) -> HostOs {
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
pub(super) struct Flavour {
    /// The section of the images.
    pub(super) images: &'static str,
    /// STT_FILE symbol (LLVM's module id).
    pub(super) file: &'static [u8],
    /// Section of the host entry table, whose bounds the linker defines.
    pub(super) entries: &'static str,
    /// The zero-size object defined in `entries`.
    pub(super) dummy: &'static [u8],
    /// Whether that object is global hidden (legacy) or local.
    pub(super) dummy_global: bool,
    /// Section of the constructor pointer.
    pub(super) ctor: &'static [u8],
    /// Section of the destructor pointer; `None`: `atexit` from the ctor.
    pub(super) dtor: Option<&'static [u8]>,
    /// Whether to emit `__tgt_image_info` and `.offload_arch_list`.
    pub(super) image_info: bool,
}

impl Flavour {
    pub(super) fn of(abi: Abi) -> Flavour {
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
pub(super) fn local(
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
pub(super) fn function(
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
pub(super) fn undefined(obj: &mut Relocatable, name: &[u8], hidden: bool) -> SymbolId {
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
pub(super) fn new_object(cpu: &CpuInfo, os: HostOs) -> (Relocatable, SectionId) {
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
pub(super) fn finish_object(
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
pub(super) fn mapping(obj: &mut Relocatable, name: &[u8], section: SectionId) {
    obj.add_symbol(
        name,
        elf::SymbolInfo::new(elf::STB_LOCAL, elf::STT_NOTYPE),
        elf::SymbolOther::from(elf::STV_DEFAULT),
        Place::Section(section),
        0,
        0,
    );
}

pub(super) fn reloc(
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

pub(super) fn write_error(detail: &str) -> Error {
    Error::write("ELF object", detail)
}
