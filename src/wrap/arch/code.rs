//! What a CPU's code is made of and what makes it: the calls of a
//! function, the functions and the registration code encoded with their
//! relocations and spans, and the [`Cpu`] trait each architecture's file
//! implements.

use gimli::write::CallFrameInstruction;
use object::elf::{self, RelocationType};

use crate::error::{Error, ErrorKind, Result};
use crate::wrap::relocatable::SymbolId;

/// The pointer argument of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg {
    /// A data object: `symbol`, which lies at `offset` in the section whose
    /// section symbol is `section`. Architectures choose which to relocate
    /// against (LLVM uses the section symbol on x86-64).
    Data {
        /// The object's own symbol (what riscv64 relocates against).
        symbol: SymbolId,
        /// The section symbol of the section it is in.
        section: SymbolId,
        /// Its offset in that section.
        offset: u64,
        /// Whether it lies in a global of several that LLVM's GlobalMerge
        /// made, at the start of the section (powerpc64le): addressed
        /// from the section's start, then its offset added.
        merged: bool,
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
    /// What it refers to: [`Target::Symbol`], or an undefined symbol by
    /// name ([`Target::Runtime`], such as `.TOC.`).
    pub target: Target,
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
    /// The entry loop's function symbol (`.cuda.globals_reg`), for CPUs
    /// whose calls to it are relocated against the symbol (powerpc64le:
    /// the linker adds the local entry offset).
    Globals,
    /// `__start_llvm_offload_entries`.
    EntriesStart,
    /// `__stop_llvm_offload_entries`.
    EntriesStop,
    /// The code section itself (an address in it; the addend says where).
    Code,
    /// A runtime function.
    Runtime(&'static str),
    /// A symbol of the object (the OpenMP functions' callees and
    /// arguments).
    Symbol(SymbolId),
    /// A local label at this offset (of the function, or of the CUDA/HIP
    /// code section) with llc's number for it (riscv64: the `auipc` a
    /// `%pcrel_lo` relocation pairs with, which llc names `.Lpcrel_hiN`;
    /// llc numbers every `auipc` of an address, listed or not).
    Label(u64, u32),
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

/// What differs between CPUs in code, not data.
pub(crate) trait Cpu: Sync + std::fmt::Debug {
    /// Encodes a function that makes `calls` in order and returns; `at` is
    /// its offset in the code section (for addresses in the same section).
    fn function(&self, at: u64, calls: &[Call]) -> Result<Function>;
    /// `len` bytes of no-op instructions, to pad between functions.
    fn padding(&self, len: usize) -> Vec<u8>;
    /// The CUDA or HIP registration code, as llc lays it out.
    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode>;
    /// The CPU's attributes section, if llc writes one: its name, type
    /// and contents (riscv64: `.riscv.attributes`).
    fn attributes(&self) -> Option<(&'static [u8], elf::SectionType, Vec<u8>)> {
        None
    }
}

/// A bug in a CPU's encoding of the registration code, not bad input.
pub(crate) fn internal(what: &str) -> Error {
    Error::write("registration code", format!("internal error: {what}"))
}

/// Converts a section offset or length to an addend.
pub(crate) fn addend(x: u64) -> Result<i64> {
    i64::try_from(x).map_err(|_| {
        ErrorKind::TooLarge {
            what: "the wrapper object",
            limit: "2^63 bytes",
        }
        .into()
    })
}
