//! What the wrapper needs to know about each CPU, in two parts: the facts
//! that are data (ELF machine and `e_flags`, byte order, alignments,
//! relocation types, the CIE), one [`CpuInfo`] row per CPU in [`CPUS`];
//! and what is really code, the [`Cpu`] trait: how to encode a function
//! that makes a list of calls, each with one pointer argument, the CUDA and
//! HIP registration code, and padding.
//!
//! Every OpenMP constructor and destructor the wrapper writes has that one
//! shape (`f(&x); g(&y); …; return`), so one [`Cpu::function`] per
//! architecture is all the code generation OpenMP needs. The CUDA and HIP
//! registration code (a loop over the host entries) does not depend on the
//! input at all: [`Cpu::fatbin_code`] gives it whole, as llc lays it out.
//! Both are written through the shared assembler core ([`asm`]: labels,
//! fixups, relocations, CFA tracking, spans), with the CPU's instruction
//! encodings on top.
//!
//! Adding an architecture is one row in [`CPUS`], one file that implements
//! [`Cpu`] (its `mod` line here), and one line in `HOSTS` of
//! `linker-tests/wrap.rs`.
//!
//! Only position-independent code is written (PC-relative addresses, calls
//! through the PLT), because static-model code cannot link into a PIE
//! (docs/formats/wrapper-objects.md).

pub(super) mod aarch64;
pub(super) mod asm;
mod code;
mod ppc64;
mod riscv64;
mod s390x;
pub(super) mod x86_64;

use gimli::write::{CallFrameInstruction, CommonInformationEntry};
use gimli::{DW_EH_PE_pcrel, DW_EH_PE_sdata4, Encoding, Format};
use object::Endianness;
use object::elf::{self, RelocationType};

use crate::error::{ErrorKind, Result};
use crate::llvm::triple::{Arch, CanonicalForm, Environment, ObjectFormat, Os, Triple, normalize};

pub(crate) use code::{
    Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, addend, internal,
};

/// The unwind facts of a CPU's one CIE (`.eh_frame`).
#[derive(Debug)]
pub(crate) struct Cie {
    /// Code alignment factor.
    pub code_align: u8,
    /// Data alignment factor.
    pub data_align: i8,
    /// The return address column.
    pub ra: gimli::Register,
    /// The rules on entry to every function.
    pub initial: &'static [CallFrameInstruction],
}

/// What the wrapper needs to know about a CPU that is data, not code: one
/// row of [`CPUS`].
#[derive(Debug)]
pub(crate) struct CpuInfo {
    /// The architecture LLVM parses from the triple.
    pub arch: Arch,
    /// The spellings of the triple's architecture this row serves, first
    /// the one named in messages. (LLVM maps others to the same
    /// architecture, such as `x86_64h` and `arm64e`, with a different CPU
    /// or ABI, whose code has not been compared with llc's.)
    pub names: &'static [&'static str],
    /// `e_machine` of the ELF header.
    pub machine: elf::Machine,
    /// `e_flags` of the ELF header.
    pub e_flags: u32,
    /// Byte order of the object's headers and data.
    pub endian: Endianness,
    /// Alignment of the code section.
    pub code_align: u64,
    /// Alignment of the section that holds the descriptor and image array
    /// (what LLVM gives an array of that size).
    pub data_align: u64,
    /// LLVM's preferred alignment of a byte array of 16 bytes or less (the
    /// data layout's for `i8`).
    pub byte_array_align: u64,
    /// Relocation type for a 64-bit absolute pointer in data.
    pub abs64: RelocationType,
    /// Relocation type for a 32-bit PC-relative field in `.eh_frame` and in
    /// jump tables (pointer encoding `DW_EH_PE_pcrel | DW_EH_PE_sdata4`).
    pub eh_pcrel32: RelocationType,
    /// ELF section type of `.eh_frame`.
    pub eh_frame_type: elf::SectionType,
    /// Whether objects carry the ELF mapping symbols `$x` and `$d` (code and
    /// data), as LLVM writes them for AArch64.
    pub mapping_symbols: bool,
    /// The CIE every FDE uses.
    pub cie: Cie,
    /// `st_other` of the functions' symbols besides the visibility: on
    /// powerpc64le (ELFv2) the offset of the local entry point (0x60: 8
    /// bytes after the global entry); 0 elsewhere.
    pub function_other: u8,
    /// LLVM's GlobalMerge limit for constants on this CPU (`MaxOffset`),
    /// if llc merges every small internal constant of a section into one
    /// global (powerpc64le: 0x7fff); see [`super::merge`].
    pub merge_constants: Option<u64>,
    /// The undefined symbol every function's global entry refers to
    /// (powerpc64le: `.TOC.`), listed before the runtime's functions.
    pub toc_symbol: Option<&'static str>,
    /// Whether llc relocates against the symbols themselves, never
    /// against section symbols (riscv64, where the linker may relax code):
    /// the object then has no section symbols, each function a `.L0 `
    /// label at its start for `.eh_frame`, and `.Lpcrel_hiN` labels.
    pub symbol_relocs: bool,
    /// The encoder of the CPU's code.
    pub code: &'static dyn Cpu,
}

impl CpuInfo {
    /// The CIE every FDE uses, for gimli.
    pub(crate) fn cie(&self) -> CommonInformationEntry {
        let encoding = Encoding {
            format: Format::Dwarf32,
            // .eh_frame CIEs are version 1.
            version: 1,
            // gimli pads each CIE and FDE to this many bytes; LLVM pads
            // .eh_frame records to 4 on every CPU here (pointers are 4-byte
            // PC-relative, so nothing else depends on it).
            address_size: 4,
        };
        let c = &self.cie;
        let mut cie = CommonInformationEntry::new(encoding, c.code_align, c.data_align, c.ra);
        cie.fde_address_encoding = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
        for insn in c.initial {
            cie.add_instruction(insn.clone());
        }
        cie
    }
}

/// Every CPU the wrapper writes objects for.
pub(crate) static CPUS: &[CpuInfo] = &[
    // x86-64 System V psABI (LP64).
    CpuInfo {
        arch: Arch::X86_64,
        names: &["x86_64", "amd64"],
        machine: elf::EM_X86_64,
        // The psABI defines no flags.
        e_flags: 0,
        endian: Endianness::Little,
        code_align: 16,
        // LLVM aligns global arrays of 16 bytes or more to 16 on x86-64.
        data_align: 16,
        // i8 is byte-aligned.
        byte_array_align: 1,
        abs64: elf::R_X86_64_64,
        eh_pcrel32: elf::R_X86_64_PC32,
        eh_frame_type: elf::SHT_X86_64_UNWIND,
        mapping_symbols: false,
        // Code alignment 1: x86 instructions are byte-aligned. Data
        // alignment -8: saved registers sit in 8-byte slots below the CFA.
        // On entry the CFA is rsp + 8 and the return address is at CFA - 8.
        cie: Cie {
            code_align: 1,
            data_align: -8,
            ra: gimli::X86_64::RA,
            initial: &[
                CallFrameInstruction::Cfa(gimli::X86_64::RSP, 8),
                CallFrameInstruction::Offset(gimli::X86_64::RA, -8),
            ],
        },
        function_other: 0,
        merge_constants: None,
        toc_symbol: None,
        symbol_relocs: false,
        code: &x86_64::X86_64,
    },
    // AArch64 AAPCS64 (LP64, little-endian).
    CpuInfo {
        arch: Arch::Aarch64,
        names: &["aarch64", "arm64"],
        machine: elf::EM_AARCH64,
        e_flags: 0,
        endian: Endianness::Little,
        code_align: 4,
        // As on x86-64, LLVM aligns arrays of 16 bytes or more to 16.
        data_align: 16,
        // The data layout prefers 32-bit alignment for i8 (`i8:8:32`).
        byte_array_align: 4,
        abs64: elf::R_AARCH64_ABS64,
        eh_pcrel32: elf::R_AARCH64_PREL32,
        eh_frame_type: elf::SHT_PROGBITS,
        mapping_symbols: true,
        // Code alignment 1 (LLVM's choice, though instructions are 4
        // bytes), data alignment -4; on entry the CFA is sp + 0.
        cie: Cie {
            code_align: 1,
            data_align: -4,
            ra: gimli::AArch64::X30,
            initial: &[CallFrameInstruction::Cfa(gimli::AArch64::SP, 0)],
        },
        function_other: 0,
        merge_constants: None,
        toc_symbol: None,
        symbol_relocs: false,
        code: &aarch64::AArch64,
    },
    // 64-bit PowerPC, little-endian, ELFv2 ABI.
    CpuInfo {
        arch: Arch::Ppc64le,
        names: &["powerpc64le", "ppc64le"],
        machine: elf::EM_PPC64,
        // EF_PPC64_ABI = 2: the ELFv2 ABI.
        e_flags: 2,
        endian: Endianness::Little,
        code_align: 16,
        data_align: 16,
        byte_array_align: 1,
        abs64: elf::R_PPC64_ADDR64,
        eh_pcrel32: elf::R_PPC64_REL32,
        eh_frame_type: elf::SHT_PROGBITS,
        mapping_symbols: false,
        // Code alignment 4 (instructions are words), data alignment -8;
        // on entry the CFA is r1 + 0 and the return address is in LR
        // (column 65).
        cie: Cie {
            code_align: 4,
            data_align: -8,
            ra: gimli::PowerPc64::LR,
            initial: &[CallFrameInstruction::Cfa(gimli::PowerPc64::R1, 0)],
        },
        function_other: 0x60,
        // PPCTargetMachine's GlobalMerge: every constant, offsets up to
        // 0x7fff (a signed 16-bit displacement).
        merge_constants: Some(0x7fff),
        toc_symbol: Some(".TOC."),
        symbol_relocs: false,
        code: &ppc64::Ppc64,
    },
    // IBM Z, 64-bit, big-endian (s390x ELF ABI).
    CpuInfo {
        arch: Arch::Systemz,
        names: &["s390x", "systemz"],
        machine: elf::EM_S390,
        e_flags: 0,
        endian: Endianness::Big,
        code_align: 16,
        data_align: 16,
        // The data layout prefers 16-bit alignment for i8 (`i8:8:16`).
        byte_array_align: 2,
        abs64: elf::R_390_64,
        eh_pcrel32: elf::R_390_PC32,
        eh_frame_type: elf::SHT_PROGBITS,
        mapping_symbols: false,
        // Code alignment 1 (instructions are 2, 4 or 6 bytes), data
        // alignment -8; on entry the CFA is r15 + 160 (the caller's
        // register save area) and the return address is in r14.
        cie: Cie {
            code_align: 1,
            data_align: -8,
            ra: gimli::Register(14),
            initial: &[CallFrameInstruction::Cfa(gimli::Register(15), 160)],
        },
        function_other: 0,
        merge_constants: None,
        toc_symbol: None,
        symbol_relocs: false,
        code: &s390x::S390x,
    },
    // RISC-V 64, LP64D with the C extension (Debian's and clang's ABI).
    CpuInfo {
        arch: Arch::Riscv64,
        names: &["riscv64"],
        machine: elf::EM_RISCV,
        // EF_RISCV_RVC | EF_RISCV_FLOAT_ABI_DOUBLE: objects of another
        // float ABI do not link with the system's.
        e_flags: 0x5,
        endian: Endianness::Little,
        // Compressed instructions: functions are 2-aligned.
        code_align: 2,
        data_align: 16,
        byte_array_align: 1,
        abs64: elf::R_RISCV_64,
        eh_pcrel32: elf::R_RISCV_32_PCREL,
        eh_frame_type: elf::SHT_PROGBITS,
        mapping_symbols: true,
        // Code alignment 1, data alignment -8; on entry the CFA is sp + 0
        // and the return address is in ra (x1).
        cie: Cie {
            code_align: 1,
            data_align: -8,
            ra: gimli::RiscV::RA,
            initial: &[CallFrameInstruction::Cfa(gimli::RiscV::SP, 0)],
        },
        function_other: 0,
        merge_constants: None,
        toc_symbol: None,
        symbol_relocs: true,
        code: &riscv64::Riscv64,
    },
];

/// Architectures that are planned but have no row yet.
const PLANNED: &[Arch] = &[];

/// Operating systems whose objects are not ELF.
const NOT_ELF: &[Os] = &[
    Os::Win32,
    Os::Darwin,
    Os::MacOsx,
    Os::Ios,
    Os::TvOs,
    Os::WatchOs,
    Os::Aix,
    Os::Uefi,
    Os::Cuda,
    Os::AmdHsa,
];

/// Environments of 32-bit pointers on a 64-bit CPU.
const ILP32: &[Environment] = &[
    Environment::GnuX32,
    Environment::MuslX32,
    Environment::GnuIlp32,
];

/// The CPU for a target triple (`x86_64-unknown-linux-gnu`), or an error
/// that says why the triple cannot be used.
pub(crate) fn for_triple(text: &str) -> Result<&'static CpuInfo> {
    let triple = Triple::parse(text);
    // LLVM's normal form puts components given out of place where they
    // belong (`x86_64-linux-gnux32`), and names the OS of `mingw32` and
    // `cygwin` (`windows`). The architecture and the object format are
    // taken as written, as llc takes them.
    let normal = Triple::parse(&normalize(text, CanonicalForm::Any));
    let unsupported = |why: &str| {
        Err(ErrorKind::UnsupportedTriple {
            triple: text.to_string(),
            detail: why.to_string(),
        }
        .into())
    };
    let arch = triple.arch_name();
    if arch.is_empty() {
        return unsupported("empty");
    }
    if NOT_ELF.contains(&normal.os()) {
        // Named as written, unless only the normal form names it.
        let os = if triple.os() == normal.os() {
            triple.os_name()
        } else {
            normal.os_name()
        };
        return unsupported(&format!("'{os}' objects are not ELF; only ELF is written"));
    }
    let format = triple.object_format();
    if format != ObjectFormat::Elf {
        return unsupported(&format!(
            "it makes {} objects; only ELF is written",
            format.name()
        ));
    }
    if ILP32.contains(&normal.environment()) {
        return unsupported("only 64-bit pointers are supported");
    }
    let supported = CPUS
        .iter()
        .map(|c| c.names[0])
        .collect::<Vec<_>>()
        .join(", ");
    match CPUS
        .iter()
        .find(|c| c.arch == triple.arch() && c.names.contains(&arch))
    {
        Some(cpu) => Ok(cpu),
        None if PLANNED.contains(&triple.arch()) => unsupported(&format!(
            "{arch} is not supported yet (supported: {supported})"
        )),
        None => unsupported(&format!(
            "unknown architecture '{arch}' (supported: {supported})"
        )),
    }
}

/// The calls of an OpenMP constructor, as the CPU tests give them:
/// register the descriptor at `data + desc` (relocated against `data`;
/// in a merged global on CPUs that merge constants), then `atexit` of the
/// handler at `text + handler`.
#[cfg(test)]
pub(crate) fn register_calls(
    (register, atexit): (super::relocatable::SymbolId, super::relocatable::SymbolId),
    (data, desc): (super::relocatable::SymbolId, u64),
    (text, handler): (super::relocatable::SymbolId, u64),
) -> [Call; 2] {
    [
        Call {
            callee: register,
            arg: Arg::Data {
                symbol: data,
                section: data,
                offset: desc,
                merged: true,
            },
        },
        Call {
            callee: atexit,
            arg: Arg::Code {
                section: text,
                offset: handler,
            },
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples() {
        for t in [
            "x86_64-unknown-linux-gnu",
            "x86_64-pc-linux-gnu",
            "x86_64-linux-gnu",
            "x86_64",
            "amd64-unknown-freebsd",
        ] {
            let cpu = for_triple(t).unwrap();
            assert_eq!(cpu.machine, object::elf::EM_X86_64, "{t}");
        }
        // Every row, by each of its spellings.
        for cpu in CPUS {
            for name in cpu.names {
                let t = format!("{name}-unknown-linux-gnu");
                assert!(std::ptr::eq(for_triple(&t).unwrap(), cpu), "{t}");
            }
        }
        for (t, want) in [
            ("", "empty"),
            ("riscv32-linux-gnu", "unknown architecture 'riscv32'"),
            ("x86_64-pc-windows-msvc", "not ELF"),
            ("x86_64-apple-darwin", "not ELF"),
            ("x86_64-linux-gnux32", "64-bit"),
            ("x86_64-unknown-linux-coff", "coff objects"),
            ("aarch64-unknown-none-macho", "macho objects"),
            ("sparc64-sun-solaris", "unknown architecture 'sparc64'"),
        ] {
            let e = for_triple(t).map(|c| c.e_flags).unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
            assert!(e.contains("unsupported triple"), "{t}: {e}");
        }
    }
}
