//! What the wrapper needs to know about each CPU: the ELF machine and
//! `e_flags`, the relocation types for data pointers and `.eh_frame`, the
//! CIE, and how to encode a function that makes a list of calls, each with
//! one pointer argument.
//!
//! Every OpenMP constructor and destructor the wrapper writes has that one
//! shape (`f(&x); g(&y); …; return`), so one [`Cpu::function`] per
//! architecture is all the code generation OpenMP needs. The CUDA and HIP
//! registration code (a loop over the host entries) does not depend on the
//! input at all: [`Cpu::fatbin_code`] gives it whole, as llc lays it out.
//! Adding an architecture is one file that implements [`Cpu`] plus one arm
//! in [`for_triple`].
//!
//! Only position-independent code is written (PC-relative addresses, calls
//! through the PLT), because static-model code cannot link into a PIE
//! (wrapper-abi.md §3).

mod aarch64;
mod x86_64;

use gimli::write::{CallFrameInstruction, CommonInformationEntry};
use object::elf::RelocationType;

use super::relocatable::SymbolId;

use crate::error::{Error, Result};
use crate::llvm::triple::{ObjectFormat, Triple};

/// The pointer argument of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg {
    /// A data object: `symbol`, which lies at `offset` in the section whose
    /// section symbol is `section`. Architectures choose which to relocate
    /// against (LLVM uses the section symbol on x86-64).
    Data {
        /// The object's own symbol.
        #[expect(
            dead_code,
            reason = "for encoders that relocate against the symbol (riscv64)"
        )]
        symbol: SymbolId,
        /// The section symbol of the section it is in.
        section: SymbolId,
        /// Its offset in that section.
        offset: u64,
    },
    /// A function in the same code section, at this offset from the start
    /// of the section, whose section symbol is `section`.
    Code {
        /// The section symbol of the code section (relocated against on
        /// aarch64; x86-64 needs no relocation).
        section: SymbolId,
        /// The function's offset in it.
        offset: u64,
    },
}

/// One call with one pointer argument: `callee(arg)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    /// The function called (an undefined global).
    pub callee: SymbolId,
    /// Its argument.
    pub arg: Arg,
}

/// A relocation in encoded code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CodeReloc {
    /// Offset from the start of the function.
    pub offset: u64,
    /// ELF relocation type.
    pub r_type: RelocationType,
    /// Symbol relocated against.
    pub symbol: SymbolId,
    /// Addend (RELA).
    pub addend: i64,
}

/// An encoded function.
#[derive(Debug, Default)]
pub(crate) struct Function {
    /// Machine code.
    pub code: Vec<u8>,
    /// Relocations, offsets relative to the function.
    pub relocs: Vec<CodeReloc>,
    /// Unwind rules: (code offset, instruction), offsets ascending.
    pub cfi: Vec<(u32, CallFrameInstruction)>,
}

/// What a relocation in the CUDA/HIP registration code refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The fatbin wrapper (`.fatbin_wrapper`, at the start of its section).
    Wrapper,
    /// The handle variable (`.cuda.binary_handle`, at the start of `.bss`).
    Handle,
    /// The jump table of the entry loop (at the start of `.rodata`).
    JumpTable,
    /// `__start_llvm_offload_entries`.
    EntriesStart,
    /// `__stop_llvm_offload_entries`.
    EntriesStop,
    /// The code section itself (an address in it; the addend says where).
    Code,
    /// A runtime function.
    Runtime(&'static str),
}

/// A relocation in the CUDA/HIP registration code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TargetReloc {
    /// Offset in the code section.
    pub offset: u64,
    /// ELF relocation type.
    pub r_type: RelocationType,
    /// What it refers to.
    pub target: Target,
    /// Addend (RELA).
    pub addend: i64,
}

/// One function of a code section: where it is and its unwind rules
/// (offsets relative to the function).
#[derive(Debug, Default)]
pub(crate) struct Span {
    /// Offset in the code section.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// (code offset, rule) pairs.
    pub cfi: Vec<(u32, CallFrameInstruction)>,
}

/// The CUDA or HIP registration code: the whole code section.
#[derive(Debug, Default)]
pub(crate) struct FatbinCode {
    /// The code section's bytes.
    pub code: Vec<u8>,
    /// Its relocations.
    pub relocs: Vec<TargetReloc>,
    /// The constructor (`.cuda.fatbin_reg`).
    pub reg: Span,
    /// The `atexit` handler (`.cuda.fatbin_unreg`).
    pub unreg: Span,
    /// The entry loop (`.cuda.globals_reg`).
    pub globals: Span,
    /// Code offsets the jump table (`.rodata`) points at, in table order;
    /// empty when the loop needs no table.
    pub jump_table: Vec<u64>,
}

/// CUDA or HIP: which runtime the registration code calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fatbin {
    /// `__cuda*` (surfaces and textures are not registered).
    Cuda,
    /// `__hip*`.
    Hip,
}

/// One CPU's encodings and ELF conventions.
pub(crate) trait Cpu: Sync {
    /// `e_machine` of the ELF header.
    fn machine(&self) -> object::elf::Machine;
    /// `e_flags` of the ELF header.
    fn e_flags(&self) -> u32;
    /// Alignment of the code section.
    fn code_align(&self) -> u64;
    /// Alignment of the section that holds the descriptor and image array
    /// (what LLVM gives an array of that size).
    fn data_align(&self) -> u64;
    /// LLVM's preferred alignment of a byte array of 16 bytes or less (the
    /// data layout's for `i8`).
    fn byte_array_align(&self) -> u64;
    /// Relocation type for a 64-bit absolute pointer in data.
    fn abs64(&self) -> RelocationType;
    /// Relocation type for a 32-bit PC-relative field in `.eh_frame`
    /// (pointer encoding `DW_EH_PE_pcrel | DW_EH_PE_sdata4`).
    fn eh_pcrel32(&self) -> RelocationType;
    /// ELF section type of `.eh_frame`.
    fn eh_frame_type(&self) -> object::elf::SectionType;
    /// Whether objects carry the ELF mapping symbols `$x` and `$d` (code and
    /// data), as LLVM writes them for AArch64.
    fn mapping_symbols(&self) -> bool {
        false
    }
    /// The CIE every FDE uses.
    fn cie(&self) -> CommonInformationEntry;
    /// Encodes a function that makes `calls` in order and returns; `at` is
    /// its offset in the code section (for addresses in the same section).
    fn function(&self, at: u64, calls: &[Call]) -> Result<Function>;
    /// `len` bytes of no-op instructions, to pad between functions.
    fn padding(&self, len: usize) -> Vec<u8>;
    /// The CUDA or HIP registration code, as llc lays it out.
    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode>;
}

/// Architectures that are planned but have no encoder yet.
const PLANNED: &[&str] = &["powerpc64le", "riscv64", "s390x"];

/// Operating systems whose objects are not ELF.
const NOT_ELF: &[&str] = &[
    "windows", "win32", "mingw32", "cygwin", "darwin", "macos", "macosx", "ios", "tvos", "watchos",
    "aix", "uefi", "cuda", "amdhsa",
];

/// The CPU for a target triple (`x86_64-unknown-linux-gnu`), or an error
/// that says why the triple cannot be used.
pub(crate) fn for_triple(triple: &str) -> Result<&'static dyn Cpu> {
    let mut parts = triple.split('-');
    let arch = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    let unsupported = |why: &str| {
        Err(Error::usage(format!(
            "unsupported triple '{triple}': {why}"
        )))
    };
    if triple.is_empty() || arch.is_empty() {
        return unsupported("empty");
    }
    if let Some(os) = rest
        .iter()
        .find(|p| NOT_ELF.iter().any(|n| p.starts_with(n)))
    {
        return unsupported(&format!("'{os}' objects are not ELF; only ELF is written"));
    }
    let format = Triple::parse(triple).object_format();
    if format != ObjectFormat::Elf {
        return unsupported(&format!(
            "it makes {} objects; only ELF is written",
            format.name()
        ));
    }
    if rest
        .iter()
        .any(|p| p.ends_with("x32") || p.ends_with("ilp32"))
    {
        return unsupported("only 64-bit pointers are supported");
    }
    match arch {
        "x86_64" | "amd64" => Ok(&x86_64::X86_64),
        "aarch64" | "arm64" => Ok(&aarch64::AArch64),
        a if PLANNED.contains(&a) || a == "ppc64le" => unsupported(&format!(
            "{a} is not supported yet (supported: x86_64, aarch64)"
        )),
        a => unsupported(&format!(
            "unknown architecture '{a}' (supported: x86_64, aarch64)"
        )),
    }
}

/// A bug in a CPU's encoding of the registration code, not bad input.
pub(crate) fn internal(what: &str) -> Error {
    Error::write("registration code", format!("internal error: {what}"))
}

/// Converts a section offset or length to an addend.
pub(crate) fn addend(x: u64) -> Result<i64> {
    i64::try_from(x).map_err(|_| Error::usage("the wrapper object would be larger than 2^63 bytes"))
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
            assert_eq!(cpu.machine(), object::elf::EM_X86_64, "{t}");
        }
        for (t, want) in [
            ("", "empty"),
            (
                "powerpc64le-unknown-linux-gnu",
                "powerpc64le is not supported yet",
            ),
            ("riscv64-linux-gnu", "riscv64 is not supported yet"),
            ("x86_64-pc-windows-msvc", "not ELF"),
            ("x86_64-apple-darwin", "not ELF"),
            ("x86_64-linux-gnux32", "64-bit"),
            ("x86_64-unknown-linux-coff", "coff objects"),
            ("aarch64-unknown-none-macho", "macho objects"),
            ("sparc64-sun-solaris", "unknown architecture 'sparc64'"),
        ] {
            let e = for_triple(t).map(|c| c.e_flags()).unwrap_err().to_string();
            assert!(e.contains(want), "{t}: {e}");
            assert!(e.contains("unsupported triple"), "{t}: {e}");
        }
    }
}
